"""``saatp train pipeline``: real pipeline training on one process per stage, each in its own
CPU-quota cgroup, with the measured iteration time next to the cost model's prediction.

    saatp train pipeline --model vgg-mini --stages 4 --slow 2:0.25 --schedule all --steps 15 --json out.json

Schedules: ``umpipe`` (the plan family: unequal microbatches per stage, fill-drain or 1F1B
order), ``gpipe`` / ``1f1b`` (our runtime, M equal microbatches), ``torch-gpipe`` /
``torch-1f1b`` (torch.distributed.pipelining's ScheduleGPipe / Schedule1F1B), or ``all``.
All schedules run in the same processes on the same stage split, each from the same initial
weights, interleaved step by step (the order rotating), each timed iteration right after an
untimed one of the same schedule (``--lead``).

The same budget for every method (``--candidates K``, default 3): each method measures K
candidates *chosen by the cost model* -- GPipe and 1F1B K of their best M (torch's schedules:
among the M that divide B), UMPIPE K of its best distinct plans, in each case the fastest and
then the fastest whose microbatch counts are 1.5x apart (:func:`spread_by_count`; UMPIPE keeps
its best equal split beside an unequal best, :func:`umpipe_candidates`) -- for
``--tune-steps`` iterations; a method's candidates within 10 % of its fastest are measured
again for as many iterations in a run-off (:func:`runoff_picks`), and it keeps its best
median over both sessions. The winners are then measured
again in a fresh session for ``--steps`` iterations: those are the reported figures, so
picking the minimum of noisy tuning measurements favours no method. UMPIPE's family holds the
equal splits, so its tuning also measures, in our runtime, the equal split at every order and
count the baselines would measure, whichever of them the session runs
(:func:`_with_baseline_splits`): it tunes over more configurations than a baseline, and never
misses the one a baseline keeps. ``--candidates 1`` takes every
method's model choice.
The cost model comes from ``--profile FILE`` (``saatp profile``) or, without it, from a
profile measured first.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import time

from ..costmodel import equal_sizes
from ..interrupts import exit_143
from ..profile import cli as profile_cli
from ..profile import costs as profile_costs
from ..pipeline import cgroups, launch
from ..pipeline.models import build_layers, check_batch, load_model
from ..pipeline.torch_schedules import TORCH_SCHEDULES, can_run
from ..pipeline.worker import StageConfig
from ..progress import add_stall_option, check_stall_timeout
from ..rank_processes import BACKENDS
from ..result_files import check_result_files, keep_interrupted, write_json
from ..umpipe import family

SCHEDULES = ("umpipe", "gpipe", "1f1b", "torch-gpipe", "torch-1f1b")
BASELINES = SCHEDULES[1:]


SPREAD = 1.5  # candidates of one method: microbatch counts at least this factor apart (see spread_by_count)


def spread_by_count(cands: list, k: int, count) -> list:
    """``k`` of ``cands`` (fastest by the model first): the fastest, then the fastest whose
    microbatch count is at least :data:`SPREAD` times away from every one kept (filled up in
    model order if there are too few). The model's errors are alike for neighbouring counts
    (M = 13, 14, 15 shared one 20 % error on gpt-mini), so measuring them buys little; torch's
    schedules, whose M must divide B, get spread candidates anyway."""
    n = [count(c) for c in cands]
    keep: list[int] = []
    for i in range(len(cands)):
        if len(keep) == k:
            break
        if all(max(n[i], n[j]) >= SPREAD * min(n[i], n[j]) for j in keep):
            keep.append(i)
    keep += [i for i in range(len(cands)) if i not in keep][:k - len(keep)]
    return [cands[i] for i in sorted(keep)]


def umpipe_candidates(costs, fam: family.PlanFamily, k: int) -> list:
    """UMPIPE's ``k`` candidates: :func:`spread_by_count` of its plan pool, except that when
    its fastest plan is unequal, the family's best equal split (:func:`family.safe_plan`) takes
    the last place if the spread left it out. The model is ~1 point more optimistic for unequal
    plans than for equal ones, and its predicted gains are mostly within that, so the measured
    choice needs the equal plan beside them; the spread rule, which compares counts only, left
    it out whenever the unequal plan had as many microbatches (11,9,7,5 against 8,8,8,8).
    Until 2026-11-28 :func:`family.plan` kept it in ``fam.top`` but the spread then dropped it.

    The family's best (``fam.best``, what ``plan umpipe`` reports: of near-ties the plan with
    the fewest microbatches) is always one of them, and the one of ``--candidates 1``; until
    2026-11-28 the spread started from the pool's fastest prediction instead, and a near-tie
    with more microbatches left UMPIPE's reported plan unmeasured (vgg-mini, 3 stages: 5,7 | 5,7
    | 12 reported, 6,6 and 12 measured). Fastest predicted first."""
    pool = family.candidate_pool(costs, fam)
    if fam.best is not None:
        pool = [fam.best] + [c for c in pool if not family.same_plan(c, fam.best)]
    out = spread_by_count(pool, k, lambda c: max(map(len, c.rows))) or [fam.best]
    safe = family.safe_plan(costs, fam)
    if (k >= 2 and safe is not None and not family.is_equal_split(out[0].rows)
            and not any(family.same_plan(c, safe) for c in out)):
        same = [c for c in pool if family.same_plan(c, safe)]  # the pool's copy, named as UMPIPE's
        out = out[:k - 1] + [same[0] if same else safe]
    return sorted(out, key=lambda c: c.predicted_s)


def candidate_runs(costs, fam: family.PlanFamily, schedules: list[str], k: int, mmax: int,
                   M: int | None = None, limit=None) -> list[dict]:
    """Each method's ``k`` candidates by the cost model (:func:`spread_by_count` of its fastest
    plans), each with its predicted time and memory. With ``M`` the baselines run that
    microbatch count only. UMPIPE's are followed by the equal splits every baseline would
    measure (:func:`_with_baseline_splits`), whichever baselines the session runs."""
    runs = _candidates(costs, fam, schedules, k, mmax, M, limit)
    if "umpipe" in schedules and k >= 2:
        every = [r for r in runs if r["family"] in BASELINES]
        for sch in BASELINES:  # what each baseline would measure, run or not
            if sch in schedules:
                continue
            try:
                every += _candidates(costs, fam, [sch], k, mmax, M, limit)
            except ValueError:  # a count --microbatches names that this schedule cannot run
                continue
        runs = _with_baseline_splits(costs, runs, every, limit)
    return runs


def _candidates(costs, fam: family.PlanFamily, schedules: list[str], k: int, mmax: int,
                M: int | None = None, limit=None) -> list[dict]:
    B, S = costs.B, costs.S
    runs = []
    for sch in schedules:
        if sch == "umpipe":
            if fam.best is None:
                raise ValueError(family.no_fit_message(costs, limit[0] / 2**20, mmax) if limit else
                                 "no UMPIPE plan is feasible")
            for i, c in enumerate(umpipe_candidates(costs, fam, k)):
                runs.append(dict(schedule="ours", label=f"umpipe #{i + 1} {c.kind}", family="umpipe", kind=c.kind,
                                 rows=c.rows, orders=c.orders, predicted_s=c.predicted_s,
                                 peak_samples=c.peak_samples, memory_bytes=c.memory_bytes,
                                 equal=family.is_equal_split(c.rows)))
            continue
        kind = "fill-drain" if sch in ("gpipe", "torch-gpipe") else "1f1b"
        if M:
            ms = [M]
        else:
            ms = [m for m in range(1, min(B, mmax) + 1) if sch not in TORCH_SCHEDULES or can_run(sch, m, B, S)]
        cands = []
        for m in ms:
            if sch in TORCH_SCHEDULES and B % m:
                raise ValueError(f"{sch}: M={m} must divide B={B}")
            if sch == "torch-1f1b" and m < S:
                raise ValueError(f"torch-1f1b needs M >= stages ({S}), got M={m}")
            rows = [equal_sizes(B, m)] * S
            cand = family.evaluate(costs, rows, kind, limit=limit)
            if cand.fits:
                cands.append((cand.predicted_s, m, rows, cand))
        cands.sort(key=lambda x: x[0])
        for pred, m, rows, cand in spread_by_count(cands, k, lambda x: x[1]):
            run = dict(label=f"{sch} M={m}", family=sch, kind=kind, M=m, predicted_s=pred,
                       peak_samples=cand.peak_samples, memory_bytes=cand.memory_bytes)
            if sch in TORCH_SCHEDULES:
                run["schedule"] = sch
            else:
                run.update(schedule="ours", rows=rows, orders=cand.orders)
            runs.append(run)
    return runs


def _with_baseline_splits(costs, runs: list[dict], baselines: list[dict], limit) -> list[dict]:
    """UMPIPE's candidates plus, in our runtime, the equal split at every (order, count) of
    ``baselines`` (every baseline's candidates, whether the session runs it or not: ``1f1b
    M=4`` and ``torch-1f1b M=4`` are 1F1B on four equal microbatches), after its own. Those are
    members of its family, so its tuning measures every configuration a baseline can keep
    (also when ``--schedule umpipe`` runs alone), and its kept plan is the fastest of them
    unless an unequal plan passes :func:`keep_tuned`'s test. The ones our GPipe/1F1B measure
    in the same session cost nothing (:func:`_session` measures a configuration once); the
    others one tuning run each. Until 2026-11-28 UMPIPE measured only its own model-chosen plans, and
    the count torch's tuning found best could be missing from them: gpt-mini on 3 stages at
    0.45/0.2/0.3 CPU, B=24 measured 3, 5 and an unequal 3, lost to torch's 1F1B at M = 4 by
    5.4 %, and our 1F1B at M = 4 ran as fast as torch's (123.7 against 124.0 ms, 40 paired
    steps)."""
    ours = [r for r in runs if r["family"] == "umpipe"]
    have = {(r["kind"], json.dumps(r["rows"])) for r in ours}
    extra = []
    for r in baselines:
        if not r.get("M"):
            continue
        rows = [equal_sizes(costs.B, int(r["M"]))] * costs.S
        if (r["kind"], json.dumps(rows)) in have:
            continue
        cand = family.evaluate(costs, rows, r["kind"], limit=limit)
        if not cand.fits:
            continue
        have.add((r["kind"], json.dumps(rows)))
        extra.append(dict(schedule="ours", label=f"umpipe #{len(ours) + len(extra) + 1} {r['kind']} M={r['M']}",
                          family="umpipe", kind=r["kind"], rows=rows, orders=cand.orders,
                          predicted_s=cand.predicted_s, peak_samples=cand.peak_samples,
                          memory_bytes=cand.memory_bytes, equal=True, as_baseline=r["label"]))
    at = max(i for i, r in enumerate(runs) if r["family"] == "umpipe") + 1
    return runs[:at] + extra + runs[at:]


SIGN_TEST_P = 0.05  # an unequal plan must beat UMPIPE's equal split at this level (one-sided sign test)


def sign_test_p(wins: int, n: int) -> float:
    """One-sided sign test: the chance of ``wins`` or more wins in ``n`` paired steps between
    two equally fast plans."""
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n if n else 1.0


def sign_test_steps() -> int:
    """The fewest paired steps in which an unequal plan can pass the sign test (winning all):
    with fewer, UMPIPE keeps its equal split whatever it measures (5)."""
    n = 1
    while sign_test_p(n, n) > SIGN_TEST_P:
        n += 1
    return n


def keep_tuned(runs: list[dict], measured: list[dict]) -> tuple[list[dict], dict | None]:
    """Each method's kept candidate after the tuning session (``measured``: :func:`summarize`'s
    rows, in the order of ``runs``): its fastest median -- except that UMPIPE keeps its
    fastest-measured equal split (:func:`umpipe_candidates`) over a faster unequal plan unless the unequal
    plan won enough paired steps (the same step, the same moment of the host's load) to pass
    a one-sided sign test at :data:`SIGN_TEST_P` (5 of 5 steps, 9 of 10). The model favours
    unequal plans by about a point, and 5 iterations cannot separate plans a few per cent
    apart: on gpt-mini (2026-11-28) UMPIPE kept ``11,9,7,5`` for a tuning median 1.4 % below
    ``8,8,8,8`` (4 of 5 steps won, p = 0.19) and then ran 8.6 % slower than that split in the
    final session. Returns the kept runs (in method order) and, when UMPIPE had both kinds,
    what it compared."""
    best: dict[str, tuple[dict, dict]] = {}
    for r, t in zip(runs, measured):
        if r["family"] not in best or t["measured_s"] < best[r["family"]][1]["measured_s"]:
            best[r["family"]] = (r, t)
    choice = None
    u = best.get("umpipe")
    # its fastest-measured equal split (it may have several: the count spread's and the hedge)
    safe = sorted(((r, t) for r, t in zip(runs, measured) if r["family"] == "umpipe" and r.get("equal")),
                  key=lambda rt: rt[1]["measured_s"])
    if u is not None and not u[0].get("equal") and safe:
        (er, et), (ur, ut) = safe[0], u
        pairs = list(zip(ut["iterations_s"], et["iterations_s"]))
        wins = sum(a < b for a, b in pairs)
        p = sign_test_p(wins, len(pairs))
        enough = p <= SIGN_TEST_P
        choice = dict(unequal=ur["label"], equal=er["label"], unequal_s=ut["measured_s"], equal_s=et["measured_s"],
                      unequal_steps_won=wins, steps=len(pairs), sign_test_p=p, kept="unequal" if enough else "equal")
        if not enough:
            best["umpipe"] = safe[0]
    return [best[f][0] for f in dict.fromkeys(r["family"] for r in runs)], choice


RUNOFF_WITHIN = 0.10  # a method's candidates this close to its fastest in tuning go to the run-off
RUNOFF_MOST = 3  # at most this many a method (UMPIPE: and its fastest equal split, for the sign test)


def runoff_picks(runs: list[dict], measured: list[dict]) -> list[int]:
    """Which of ``runs`` (``measured``: the tuning session's :func:`summarize` rows) the run-off
    measures again: per method, its candidates whose tuning median is within
    :data:`RUNOFF_WITHIN` of its fastest, the fastest :data:`RUNOFF_MOST`; when UMPIPE's fastest
    is an unequal plan in a run-off, also its fastest equal split (the sign test pairs the two
    step by step). A method with one such candidate has chosen: it is not measured again. The minimum
    of noisy medians is biased low, the more so the more candidates a method has (UMPIPE
    tunes over its plans and every baseline's equal splits): on vgg-mini, 3 stages at
    0.4/0.15/0.25 CPU (2026-11-28), five of UMPIPE's candidates measured within 8 % of each
    other over 5 iterations, it kept fill-drain M=2 on a lucky 152 ms (model 175 ms), ran it at
    174 ms in the final session and lost to torch's 1F1B at 162 ms."""
    by: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        by.setdefault(r["family"], []).append(i)

    def config(i: int) -> str:  # candidates with one key run the same ops: measured once, as one
        return run_key(runs[i]) if "schedule" in runs[i] else runs[i]["label"]

    out: list[int] = []
    for f, idx in by.items():
        idx = sorted(idx, key=lambda i: measured[i]["measured_s"])
        best = measured[idx[0]]["measured_s"]
        # distinct configurations: until 2026-11-28 UMPIPE's fill-drain and 1F1B plans of one
        # microbatch each (the same ops) were two finalists, and a run-off session ran that one
        # configuration against itself
        keys = list(dict.fromkeys(config(i) for i in idx
                                  if measured[i]["measured_s"] <= best * (1 + RUNOFF_WITHIN)))[:RUNOFF_MOST]
        if f == "umpipe" and len(keys) > 1 and not runs[idx[0]].get("equal"):
            eq = next((i for i in idx if runs[i].get("equal")), None)
            if eq is not None and config(eq) not in keys:
                keys.append(config(eq))
        if len(keys) > 1:
            out.extend(keys)
    # every candidate of a finalist configuration, of any method (measured once, so its copies
    # read the same: until 2026-11-28 UMPIPE's one-microbatch plan read 43.2 ms after the
    # run-off and gpipe M=1, the same configuration, 47.1 ms from the first round alone)
    return [i for i in range(len(runs)) if config(i) in set(out)]


def merge_runoff(measured: list[dict], picks: list[int], again: list[dict]) -> list[dict]:
    """The tuning session's measurements (``_session``'s, one per run) with the run-off's
    (``again``, one per pick) appended: each finalist's iterations of both sessions, in
    order, so the i-th iterations of two finalists are still the same step's."""
    out = list(measured)
    for i, m in zip(picks, again):
        out[i] = dict(measured[i], iteration_s=list(measured[i]["iteration_s"]) + list(m["iteration_s"]),
                      losses=list(measured[i].get("losses") or []) + list(m.get("losses") or []))
    return out


def _spread(xs: list[float]) -> dict:
    s = sorted(xs)
    # inclusive: quartiles between the least and the most time measured; the default
    # ("exclusive") extrapolates on few iterations, and until 2026-11-28 --steps 2 reported
    # q1..q3 of "-3.5..42.6" ms for iterations of 5.3 and 34 ms
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) >= 2 else [s[0]] * 3
    return dict(median_s=statistics.median(s), q1_s=q[0], q3_s=q[2], min_s=s[0], max_s=s[-1], n=len(s))


def summarize(runs: list[dict], measured: list[dict]) -> dict:
    rows = []
    for r, m in zip(runs, measured):
        sp = _spread(m["iteration_s"])
        rows.append(dict(label=r["label"], family=r["family"], measured_s=sp["median_s"], spread=sp,
                         iterations_s=m["iteration_s"], predicted_s=r["predicted_s"],
                         error_pct=(r["predicted_s"] - sp["median_s"]) / sp["median_s"] * 100,
                         **({"predicted_profile_s": r["predicted_profile_s"],
                             "error_profile_pct": (r["predicted_profile_s"] - sp["median_s"]) / sp["median_s"] * 100}
                            if "predicted_profile_s" in r else {}),
                         loss=m["losses"][-1] if m["losses"] else None, rows=r.get("rows"), M=r.get("M"),
                         kind=r.get("kind"), equal=r.get("equal"),
                         # what it executed: runs with one config ran the same ops, measured once
                         **({"config": run_key(r)} if "schedule" in r else {}),
                         **({"as_baseline": r["as_baseline"]} if r.get("as_baseline") else {})))
    best, key = {}, {}
    for r, run in zip(rows, runs):
        f = r["family"]
        if f not in best or r["measured_s"] < best[f]["measured_s"]:
            best[f], key[f] = r, run_key(run)
    out = dict(runs=rows, best_by_schedule={k: dict(label=v["label"], measured_s=v["measured_s"], spread=v["spread"],
                                                     predicted_s=v["predicted_s"], error_pct=v["error_pct"],
                                                     M=v["M"], rows=v["rows"], equal=v.get("equal"))
                                            for k, v in best.items()})
    if "umpipe" in best and len(best) > 1:
        u = best["umpipe"]
        bf = min((k for k in best if k != "umpipe"), key=lambda k: best[k]["measured_s"])
        b = best[bf]
        paired = [bi / ui for bi, ui in zip(b["iterations_s"], u["iterations_s"])]
        out["umpipe_vs_best_baseline"] = dict(
            baseline=b["label"], baseline_s=b["measured_s"], umpipe_s=u["measured_s"], umpipe_label=u["label"],
            umpipe_equal=u.get("equal"), same_configuration=key["umpipe"] == key[bf],
            speedup_pct=(b["measured_s"] / u["measured_s"] - 1) * 100,
            paired_median_pct=(statistics.median(paired) - 1) * 100,
            steps_won=sum(p > 1 for p in paired), steps=len(paired))
    return out


DRIFT_PCT = 10.0  # the host's change of speed since the profile beyond which it is stale


def host_drift(prof: dict, B: int, cuts, rows: list[dict], *, quotas, backend: str) -> dict | None:
    """How much faster (< 0) or slower this session ran the configurations the profile's
    calibration measured (:func:`calibration_label`: our GPipe/1F1B, UMPIPE's equal splits and
    torch's schedules at the same B, split, M, CPU quotas and backend; until
    2026-11-28 other quotas or another backend counted too, and a run at 0.3 CPU on a profile
    taken at 0.5 was told the host ran 68 % slower and to profile again): the median of measured
    over measured, no model involved. A profile describes the host when it was taken: on this
    VM a stage's 16-sample ops needed 14-23 % less CPU than a profile taken 10 hours earlier
    said (its 4-sample ops -17..+6 %), and that stale profile ranked microbatch counts wrongly
    (docs/pipeline-runtime.md). None when no configuration matches.

    ``stale``: most of the compared measurements moved the same way, each outside every
    iteration time the calibration measured for its configuration and by more than
    :data:`DRIFT_PCT`, and their median by more than that too. The calibration times each
    configuration 3 times: a model of a few milliseconds per iteration runs some iterations
    at full speed and some throttled (4 and 34 ms for one configuration), and comparing
    medians alone called a fresh profile 38-60 % off."""
    cal = prof.get("calibration") or {}
    if (not cal.get("points") or int(cal.get("B", -1)) != int(B) or list(cal.get("cuts") or []) != list(cuts)
            or cal.get("quotas") != list(quotas) or prof.get("backend", "gloo") != backend):
        return None
    then = {p["label"]: p for p in cal["points"]}
    pairs = []
    seen = set()
    for r in rows:
        label = calibration_label(r, B)
        p = then.get(label)
        # one measurement once: a session measures a configuration once for every row that runs
        # it (UMPIPE's equal split and the baseline's M, :func:`_session`), and until 2026-11-28
        # each row counted again in the median and the majority (a 5-stage MLP's tuning: 4
        # measurements counted as "8 of 8 outside the calibration's range")
        key = measurement_key(r, label)
        if p is None or key in seen:
            continue
        seen.add(key)
        its = p.get("iterations_s") or [p["measured_s"]]
        rel = r["measured_s"] / p["measured_s"] - 1
        out = r["measured_s"] < min(its) or r["measured_s"] > max(its)
        pairs.append((label, rel, (1 if rel > 0 else -1) if out and abs(rel) * 100 > DRIFT_PCT else 0))
    if not pairs:
        return None
    med = statistics.median(x for _, x, _ in pairs) * 100
    moved = [m for *_, m in pairs]
    way = 1 if med > 0 else -1
    return dict(median_pct=med, configurations=list(dict.fromkeys(lb for lb, *_ in pairs)),
                compared=len(pairs), moved=sum(1 for m in moved if m == way),
                stale=abs(med) > DRIFT_PCT and sum(1 for m in moved if m == way) > len(pairs) / 2)


def rescale_for_drift(runs: list[dict], drift: dict | None, tuned: list[dict] | None = None,
                      B: int = 0) -> dict | None:
    """When the tuning session found the profile stale (:func:`host_drift`: the host ran the
    calibration's own configurations more than :data:`DRIFT_PCT` faster or slower, most of
    them outside the calibration's range), the final session's predictions are the model's
    times scaled by the model's error on those configurations in the tuning session (``tuned``,
    :func:`summarize`'s rows: the median of measured over predicted, each measurement once);
    ``predicted_profile_s`` keeps the model's own. The layers' curves stay the profile's, the
    host's speed is the one measured minutes before; the final session's measurements are not
    used. On 2026-11-28 a profile of gpt-mini, taken a minute before, predicted 1F1B at M = 4
    at 140.5 ms, which the calibration had measured at 139.3 (three iterations: 139-159 ms) and
    the training session at 118-121 ms (+16.5 %). The factor was first the drift itself
    (measured now over measured by the calibration); a digits MLP profiled under a load of 6,
    whose model stood within 1 % of the session while its calibration runs had been slow, was
    then scaled by 0.72 to a 28 % error. Without ``tuned`` rows of those configurations the
    drift is the factor. Returns what was done (None: not stale, nothing changed)."""
    if not drift or not drift.get("stale"):
        return None
    seen, errs = set(), []
    for r in tuned or []:
        label = calibration_label(r, B)
        key = measurement_key(r, label)
        if label in drift["configurations"] and key not in seen and r.get("predicted_s"):
            seen.add(key)
            errs.append(r["measured_s"] / r["predicted_s"])
    factor = statistics.median(errs) if errs else 1 + drift["median_pct"] / 100
    for r in runs:
        r["predicted_profile_s"] = r["predicted_s"]
        r["predicted_s"] = r["predicted_s"] * factor
    return dict(factor=factor, median_pct=drift["median_pct"], configurations=drift["configurations"],
                compared=drift["compared"], moved=drift["moved"], from_model_error=bool(errs))


def measurement_key(r: dict, label: str | None) -> tuple:
    """One measurement of a session, whichever rows share it (:func:`_session` measures a
    configuration once for every row that runs it)."""
    return label, r["measured_s"], tuple(r.get("iterations_s") or ())


def calibration_label(r: dict, B: int) -> str | None:
    """The label the calibration gives the configuration a measured row ran (``1f1b M=4``,
    ``torch-gpipe M=2``): a baseline's own, or an equal split UMPIPE measured (until 2026-11-28
    only our GPipe's and 1F1B's rows were compared, and a session of UMPIPE against torch's
    schedules, which ran 15 % faster than the profile's calibration a minute before, was not
    told)."""
    if r["family"] in BASELINES:
        return r["label"] if r["label"].startswith(r["family"] + " M=") else None
    rows = r.get("rows")
    if r["family"] == "umpipe" and rows and all(list(x) == equal_sizes(B, len(rows[0])) for x in rows):
        return f"{'gpipe' if r.get('kind') == 'fill-drain' else '1f1b'} M={len(rows[0])}"
    return None


def whole_number(option: str, text: str, alternative: str = "") -> int:
    """``text`` as a whole number >= 1; ValueError naming ``option`` otherwise (``--microbatches
    0`` meant ``best`` without a word until 2026-11-28)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{option} {text}: expected a whole number >= 1{' ' + alternative if alternative else ''}")
    return n


DEFAULT_BATCH = 64  # --batch without a profile's calibration B
DEFAULT_STAGES = 4  # --stages without a profile


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="vgg-mini", help="vgg-mini, gpt-mini or MODULE:FN (default vgg-mini)")
    p.add_argument("--stages", type=int, default=None,
                   help=f"pipeline stages (default: the --profile's, else {DEFAULT_STAGES})")
    p.add_argument("--schedule", action="append", choices=SCHEDULES + ("all",), default=None,
                   help="repeatable; default umpipe")
    p.add_argument("--quota", default=None,
                   help="CPUs per stage (cgroup v1 quota); 'auto' = 60%% of the cores / stages, 'none' = no cgroups "
                        "(default: the --profile's quotas, else auto)")
    p.add_argument("--slow", action="append", default=[], metavar="STAGE:QUOTA",
                   help="give one stage a different CPU quota, e.g. 2:0.2 (repeatable)")
    p.add_argument("--batch", type=int, default=None,
                   help=f"minibatch size B (default: the --profile's calibration B, what saatp plan umpipe "
                        f"--profile plans for; else {DEFAULT_BATCH})")
    p.add_argument("--steps", type=int, default=15, help="timed iterations per schedule, reported (default 15)")
    p.add_argument("--candidates", type=int, default=3,
                   help="candidates per method, the model's best, measured in a tuning session (default 3; "
                        "1 = every method takes its model choice, no tuning session)")
    p.add_argument("--tune-steps", type=int, default=5, help="timed iterations per candidate when tuning (default 5)")
    p.add_argument("--lead", type=int, default=1,
                   help="untimed iterations of a schedule right before each timed one (default 1)")
    p.add_argument("--warmup", type=int, default=1, help="untimed iterations first (default 1)")
    p.add_argument("--microbatches", default="best", help="M for the baselines, or 'best' (tuned as above)")
    p.add_argument("--mmax", type=int, default=16, help="most microbatches per stage (default 16)")
    p.add_argument("--profile", metavar="FILE", help="profile from saatp profile (default: profile now)")
    p.add_argument("--cuts", help="layer cuts, comma-separated (default: the calibration's, else chain DP)")
    p.add_argument("--memory-limit", type=float, metavar="MB", help="per-stage memory limit for plans")
    p.add_argument("--backend", default="gloo", choices=BACKENDS, help="torch.distributed backend (default gloo)")
    p.add_argument("--seed", type=int, default=0)
    add_stall_option(p, "stage")
    p.add_argument("--json", metavar="OUT", help="write everything as JSON")


def _print(out: dict) -> None:
    print(f"{out['model']}: {out['stages']} stages, B={out['B']}, cuts {out['cuts']}, CPU quotas "
          f"{['none' if q is None else q for q in out['quotas']]}, load average {out['load_average']}")
    if out.get("tuning"):
        ro = set(out["tuning"].get("runoff") or [])
        print(f"tuning ({out['candidates']} candidates per method, {out['tune_steps']} iterations each"
              + (f"; * = in the run-off, {2 * out['tune_steps']} iterations" if ro else "") + "):")
        w = max([22] + [len(r["label"]) for r in out["tuning"]["runs"]])  # "umpipe #4 fill-drain M=13" is 25
        for r in out["tuning"]["runs"]:
            print(f"  {r['label']:{w}s}{'*' if r['label'] in ro else ' '}{r['measured_s'] * 1e3:8.1f} ms  "
                  f"(model {r['predicted_s'] * 1e3:7.1f}, {r['error_pct']:+5.1f}%)")
        c = out["tuning"].get("umpipe_choice")
        if c:
            print(f"  UMPIPE kept {c[c['kept']]}: {c['unequal']} was faster than its equal split {c['equal']} in "
                  f"{c['unequal_steps_won']}/{c['steps']} paired steps (sign test p = {c['sign_test_p']:.3g}; "
                  f"an unequal plan needs p <= {SIGN_TEST_P}"
                  + (f"; with {c['steps']} paired steps none can pass: --tune-steps {sign_test_steps()} or more"
                     if sign_test_p(c['steps'], c['steps']) > SIGN_TEST_P else "") + ")")
    k = (out.get("tuning") or {}).get("rescaled")
    if k:
        print(f"  the profile is stale: the tuning session ran its calibration configurations "
              f"{abs(k['median_pct']):.1f}% {'faster' if k['median_pct'] < 0 else 'slower'} (median; {k['moved']} of "
              f"{k['compared']} outside the calibration's range); the predictions below are the model's x "
              f"{k['factor']:.3f}, " + ("its error on those configurations in the tuning session" if
                                       k.get("from_model_error") else "the drift")
              + " (the model's own: predicted_profile_s in the JSON)")
    print(f"{'schedule':22s} {'measured ms':>12s} {'q1..q3':>15s} {'predicted ms':>13s} {'error':>7s}  microbatches")
    for r in out["summary"]["runs"]:
        mb = " | ".join(",".join(map(str, x)) for x in r["rows"]) if r["rows"] else f"{r['M']} equal"
        sp = r["spread"]
        print(f"{r['label']:22s} {r['measured_s'] * 1e3:12.1f} {sp['q1_s'] * 1e3:7.1f}..{sp['q3_s'] * 1e3:<7.1f} "
              f"{r['predicted_s'] * 1e3:13.1f} {r['error_pct']:+6.1f}%  {mb}")
    d = out.get("host_drift")
    if d and d.get("stale", abs(d["median_pct"]) > DRIFT_PCT):
        print(f"warning: this host ran the profile's calibration configurations "
              f"({', '.join(dict.fromkeys(d['configurations']))}) "
              f"{abs(d['median_pct']):.1f}% {'faster' if d['median_pct'] < 0 else 'slower'} (median"
              + (f"; {d['moved']} of {d['compared']} measurements outside the calibration's range"
                 if "compared" in d else "")
              + f") than when {out.get('profile') or 'the profile'} was taken: the cost model's microbatch "
              f"choices may be wrong; run saatp profile again")
    v = out["summary"].get("umpipe_vs_best_baseline")
    if v:
        print(f"UMPIPE {v['umpipe_s'] * 1e3:.1f} ms vs best baseline {v['baseline']} {v['baseline_s'] * 1e3:.1f} ms: "
              f"{v['speedup_pct']:+.1f}% (paired per step: median {v['paired_median_pct']:+.1f}%, faster in "
              f"{v['steps_won']}/{v['steps']} steps)"
              + (f" -- UMPIPE's plan is {v['baseline']}'s configuration, measured once: a tie"
                 if v.get("same_configuration")
                 else " -- UMPIPE's plan is an equal split" if v.get("umpipe_equal") else ""))


def run_key(r: dict) -> str:
    """What a run executes: runs with the same key run the same ops in the same order (UMPIPE's
    plan may be an equal split that is also a baseline's configuration)."""
    if r["schedule"] == "ours":
        return json.dumps(["ours", r["rows"], r["orders"]])
    return json.dumps([r["schedule"], r["M"]])


def _session(costs, args, runs: list[dict], steps: int, quotas) -> list[dict]:
    """Measure ``runs`` in one interleaved session. Runs with the same :func:`run_key` are
    measured once and share the measurement: two measurements of one configuration differed
    by up to 5 % in one session here, and reporting that as one method beating the other
    would be noise."""
    keys = [run_key(r) for r in runs]
    unique = list(dict.fromkeys(keys))
    first = {k: next(r for r, kr in zip(runs, keys) if kr == k) for k in unique}
    cfg = StageConfig(model=args.model, cuts=costs.info["cuts"], B=args.batch, steps=steps,
                      warmup=args.warmup, schedule="ours", backend=args.backend, seed=args.seed,
                      lead=args.lead, rotate=True,
                      runs=[{k: v for k, v in first[key].items() if k in ("schedule", "rows", "orders", "M", "label")}
                            for key in unique])
    n = len(unique) * (args.warmup + steps * (1 + args.lead))
    shared = f" ({len(runs) - len(unique)} identical to another, measured once)" if len(unique) < len(runs) else ""
    print(f"running {len(unique)} schedule(s){shared} x ({args.warmup} + {steps} x {1 + args.lead}) iterations ...",
          flush=True)
    got = dict(zip(unique, launch.run(cfg, quotas=list(quotas), timeout_s=max(600.0, 3.0 * n),
                                       stall_s=args.stall_timeout)["runs"]))
    return [got[k] for k in keys]


def _keep_tuning(args: argparse.Namespace, e: BaseException, part: dict, phase: str = "final session") -> None:
    """The final session or the run-off (``phase``) was interrupted (Ctrl-C, SIGTERM) or failed
    (a stage exited or hung): write what the tuning session measured to ``--json``, marked
    ``interrupted`` or ``failed`` (with ``error``, the message's first line), and say so."""
    what = "the tuning session's measurements"
    if isinstance(e, RuntimeError):
        part.update(failed=phase, error=(str(e).splitlines() or [""])[0])
        keep_interrupted("saatp train pipeline", args.json, part, "", what, happened=f"the {phase} failed")
    else:
        part.update(interrupted=phase)
        keep_interrupted("saatp train pipeline", args.json, part, f" during the {phase}", what)


def run_quotas(args: argparse.Namespace) -> list[float | None]:
    """The stages' CPU quotas, and ``args.stages`` set when not given: with ``--profile`` and
    neither given, the profile's stage count and quotas (``--slow`` overriding stages), what
    ``plan umpipe --profile`` plans for; else ``--stages`` (default 4) and ``--quota`` (default
    auto). Until 2026-11-28 a run on a 3-stage profile at 0.4/0.2/0.4 CPU without ``--stages``
    and ``--quota`` ran 4 stages at ``auto`` quotas, with a note."""
    prof_q = None
    if args.profile and (args.stages is None or args.quota is None):
        got = profile_costs.load(args.profile).get("stage_quotas")
        prof_q = list(got) if isinstance(got, list) and got else None
    if args.stages is None:
        args.stages = len(prof_q) if prof_q else DEFAULT_STAGES
    if args.quota is None and prof_q and len(prof_q) == args.stages:
        given = cgroups.stage_quotas(args.stages, None, args.slow)
        return [q if q is not None else b for q, b in zip(given, prof_q)]
    quota = "auto" if args.quota is None else args.quota
    return cgroups.stage_quotas(args.stages, profile_cli.parse_quota(quota, args.stages), args.slow)


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, exit_143)  # run finally blocks: remove our cgroups
    try:
        spec = load_model(args.model)
        quotas = run_quotas(args)
        cgroups.check_settable(quotas)  # below 0.1 CPU was raised to it without a word
        note = cgroups.oversubscribed(quotas)
        if note:
            print(note, flush=True)
        schedules = list(dict.fromkeys(s for x in (args.schedule or ["umpipe"])
                                       for s in (SCHEDULES if x == "all" else (x,))))
        M = None if args.microbatches == "best" else whole_number("--microbatches", args.microbatches, "or best")
        if M is not None and schedules == ["umpipe"]:
            # it sets the baselines' M; until 2026-11-28 it was dropped without a word when none ran
            print(f"note: --microbatches {M} sets the baselines' count; --schedule umpipe alone runs none "
                  "(UMPIPE's plans choose their own microbatches)", flush=True)
        if args.batch is None:
            # the profile's B, as plan umpipe --profile takes it: until 2026-11-28 a run on a
            # profile of B = 10 trained B = 64 without a word while plan umpipe planned for 10
            cal = (profile_costs.load(args.profile).get("calibration") or {}) if args.profile else {}
            B = cal.get("B") if isinstance(cal, dict) else None
            args.batch = B if isinstance(B, int) and B >= 1 else DEFAULT_BATCH
        if min(args.steps, args.batch, args.mmax, args.candidates, args.tune_steps) < 1 or min(args.lead,
                                                                                             args.warmup) < 0:
            raise ValueError("--steps, --batch, --mmax, --candidates and --tune-steps must be >= 1, --lead and "
                             "--warmup >= 0")
        check_stall_timeout(args.stall_timeout)
        family.check_memory_limit(args.memory_limit)
        cuts = profile_cli.parse_cuts(args.cuts) if args.cuts else None
        check_result_files(args.json, None)  # a missing directory lost the result with a traceback
        profile_costs.check_not_the_profile(args.profile, json=args.json)
        check_batch(spec, args.batch)
        if args.profile:
            prof = profile_costs.load(args.profile)
            if prof["model"] != args.model:
                raise ValueError(f"{args.profile} profiles {prof['model']}, not {args.model}")
            layers = build_layers(spec)
            n_prof = len(prof["cpu"].get("layers") or [])
            if n_prof != len(layers):
                raise ValueError(f"{args.profile} profiles {n_prof} layers of {prof['model']}, "
                                 f"the model has {len(layers)} now: run saatp profile again")
            changed = profile_costs.changed_layers(prof, layers)
            if changed:
                print(f"note: {args.profile} profiled another {args.model} ({'; '.join(changed[:3])}"
                      f"{'; ...' if len(changed) > 3 else ''}): its times are not this model's; run saatp profile "
                      f"again", flush=True)
        else:
            # calibrated on the run's own split (--cuts): a calibration on another split is not
            # used, and until 2026-11-27 (22:00 UTC) it silently left the predictions uncalibrated
            prof = profile_cli.run_profile(args.model, quotas, B=args.batch, cuts=cuts, stall_s=args.stall_timeout,
                                           backend=args.backend)
        least = profile_costs.least_microbatch(prof, args.batch)
        try:
            # a split whose stage cannot fit the memory limit whatever the plan is not taken
            costs = profile_costs.build(prof, args.batch, quotas, cuts,
                                        limit_bytes=args.memory_limit * 2**20 if args.memory_limit else None,
                                        mmax=args.mmax)
        except (KeyError, TypeError, IndexError, AttributeError) as e:
            if not args.profile:
                raise
            raise ValueError(f"{args.profile}: not a complete saatp profile ({type(e).__name__}: {e})") from None
        cal = prof.get("calibration")
        if (args.profile or cal) and not costs.info.get("calibrated"):
            what = args.profile or "the profile"
            why = ("has no calibration" if not cal else
                   f"was calibrated on {len(cal.get('stages', []))} stages split at {cal.get('cuts')}, this run has "
                   f"{args.stages} split at {costs.info['cuts']}"
                   + (" (a stage of that split cannot fit --memory-limit)" if cuts is None and args.memory_limit
                      and not profile_costs.fits_at_all(prof, cal.get("cuts", []), args.stages, args.batch,
                                                        args.memory_limit * 2**20, args.mmax) else ""))
            print(f"note: {what} {why}: the predictions use the layers' tight-loop times (uncalibrated, "
                  f"errors of tens of per cent); saatp profile with these stages calibrates them"
                  + (f" (--cuts {','.join(map(str, costs.info['cuts']))})" if cuts is None and args.memory_limit
                     else ""), flush=True)
        if args.profile and prof.get("backend", "gloo") != args.backend:
            print(f"note: {args.profile} measured its link and calibration runs with {prof.get('backend', 'gloo')}, "
                  f"this run uses {args.backend}: saatp profile --backend {args.backend} measures them as this run "
                  f"sends", flush=True)
        if args.profile and prof.get("stage_quotas") is not None and list(prof["stage_quotas"]) != list(quotas):
            # plan umpipe --profile plans for the profile's quotas: a run that left out --quota or
            # --slow ran other quotas than the plan's without a word (until 2026-11-28)
            print(f"note: this run's CPU quotas {quotas} are not those {args.profile} was measured with "
                  f"({prof['stage_quotas']}, what saatp plan umpipe --profile plans for); --quota and --slow set "
                  f"them", flush=True)
        limit = [args.memory_limit * 2**20] * args.stages if args.memory_limit else None
        t0 = time.time()
        fam = family.plan(costs, mmax=args.mmax, limit=limit, seed=args.seed, dual_check=False,
                          top=4 * max(args.candidates, 1))  # spread_by_count picks from these
        plan_s = time.time() - t0
        runs = candidate_runs(costs, fam, schedules, args.candidates, args.mmax, M, limit)
        if not runs:
            raise ValueError("no schedule fits the memory limits" if limit else "no schedule has a feasible plan")
        left = [s for s in schedules if s not in {r["family"] for r in runs}]
        why = []
        if left:
            # the model's least microbatch was not named: B=5 on 3 stages with a BatchNorm left
            # torch-1f1b out (M=5 is its only count) "as torch-1f1b needs M >= the stage count"
            why = ([f"torch's schedules need M dividing B and at most --mmax {args.mmax}, torch-1f1b also "
                    f"M >= the stage count"] if set(left) & set(TORCH_SCHEDULES) else []) + (
                [f"microbatches of at least {least} samples (the model's least)"] if least > 1 else []) + (
                ["the memory limits"] if limit else [])
            print(f"note: left out {', '.join(left)}: no microbatch count fits ({'; '.join(why)})", flush=True)
        load = [round(x, 2) for x in os.getloadavg()]
        tuning, phase = None, "final session"
        try:
            if len({r["family"] for r in runs}) < len(runs):  # some method has several candidates: tune
                tuned = _session(costs, args, runs, args.tune_steps, quotas)
                tuning = first = summarize(runs, tuned)  # what an interrupted run-off keeps
                picks = runoff_picks(runs, first["runs"])
                if picks:  # the run-off: a method's near-equal finalists measured again, all methods alike
                    print(f"run-off: {len(picks)} finalists within {RUNOFF_WITHIN:.0%} of their method's fastest, "
                          f"{args.tune_steps} iterations more each", flush=True)
                    phase = "run-off"
                    tuned = merge_runoff(tuned, picks, _session(costs, args, [runs[i] for i in picks],
                                                                args.tune_steps, quotas))
                    phase = "final session"
                tuning = summarize(runs, tuned)
                tuning["runoff"] = [runs[i]["label"] for i in picks]
                tuning["first_round_s"] = {r["label"]: r["measured_s"] for r in first["runs"]}
                runs, tuning["umpipe_choice"] = keep_tuned(runs, tuning["runs"])
                if args.profile:
                    tuning["rescaled"] = rescale_for_drift(runs, host_drift(
                        prof, args.batch, costs.info["cuts"], tuning["runs"], quotas=quotas, backend=args.backend),
                        tuning["runs"], args.batch)
            final = _session(costs, args, runs, args.steps, quotas)
        except (KeyboardInterrupt, SystemExit, RuntimeError) as e:
            # keep the tuning session's measurements (minutes of them): until 2026-11-28 a Ctrl-C
            # or a failed stage in the final session lost them
            if tuning is not None and args.json:
                _keep_tuning(args, e, dict(model=args.model, stages=args.stages, B=args.batch, quotas=quotas,
                                           cuts=costs.info["cuts"], backend=args.backend, candidates=args.candidates,
                                           tune_steps=args.tune_steps, profile=args.profile, plan=fam.public(),
                                           tuning=tuning, summary=None, left_out=left, seed=args.seed), phase)
            raise
        load.extend(round(x, 2) for x in os.getloadavg())
    except (ValueError, RuntimeError) as e:
        print(f"saatp train pipeline: {e}", file=sys.stderr)
        return 2
    out = dict(model=args.model, stages=args.stages, B=args.batch, quotas=quotas, cuts=costs.info["cuts"],
               backend=args.backend, steps=args.steps, warmup=args.warmup, lead=args.lead,
               candidates=args.candidates, tune_steps=args.tune_steps, machine=prof.get("machine"),
               calibrated=costs.info.get("calibrated"), profile=args.profile, plan_seconds=plan_s,
               load_average=dict(before_1_5_15=load[:3], after_1_5_15=load[3:]),
               plan=fam.public(), tuning=tuning, summary=summarize(runs, final), left_out=left,
               # what chose the candidates and left schedules out (until 2026-11-28 the JSON said
               # which were left out, not why, and nothing of a memory limit)
               left_out_because=why, memory_limit_mb=args.memory_limit, mmax=args.mmax, microbatches=M,
               seed=args.seed)
    if args.profile:  # a profile made now is not stale
        out["host_drift"] = host_drift(prof, args.batch, costs.info["cuts"],
                                       (tuning or {}).get("runs", []) + out["summary"]["runs"], quotas=quotas,
                                       backend=args.backend)
    _print(out)
    if args.json:
        write_json(args.json, out)
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp train pipeline", description=__doc__.split("\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
