"""Choosing among measured candidates in ``saatp train pipeline``: the run-off of near-equal
candidates, the sign test an unequal UMPIPE plan must pass against its equal split, and the
summary of a session's measurements (median, quartiles, the model's error, UMPIPE against the
best baseline)."""

from __future__ import annotations

import json
import math
import statistics

def run_key(r: dict) -> str:
    """What a run executes: runs with the same key run the same ops in the same order (UMPIPE's
    plan may be an equal split that is also a baseline's configuration)."""
    if r["schedule"] == "ours":
        return json.dumps(["ours", r["rows"], r["orders"]])
    return json.dumps([r["schedule"], r["M"]])


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


def keep_tuned(runs: list[dict], measured: list[dict],
               contenders: dict[str, list[int]] | None = None) -> tuple[list[dict], dict | None]:
    """Each method's kept candidate after the tuning session (``measured``: :func:`summarize`'s
    rows, in the order of ``runs``): its fastest median -- except that UMPIPE keeps its
    fastest-measured equal split (:func:`.candidates.umpipe_candidates`) over a faster unequal plan unless the unequal
    plan won enough paired steps (the same step, the same moment of the host's load) to pass
    a one-sided sign test at :data:`SIGN_TEST_P` (5 of 5 steps, 9 of 10). The model favours
    unequal plans by about a point, and 5 iterations cannot separate plans a few per cent
    apart: on gpt-mini (2026-11-28) UMPIPE kept ``11,9,7,5`` for a tuning median 1.4 % below
    ``8,8,8,8`` (4 of 5 steps won, p = 0.19) and then ran 8.6 % slower than that split in the
    final session. Returns the kept runs (in method order) and, when UMPIPE had both kinds,
    what it compared.

    ``contenders`` (:func:`runoff_contenders` of the first round): a method that held a
    run-off chooses among its finalists only, the others having lost the first round. Until
    2026-11-28 any candidate could be kept: on gpt-mini (4 stages at 0.2/0.3/0.15/0.3 CPU) a
    UMPIPE equal split that was not a finalist kept its first-round median, slightly below the
    finalists' medians over both sessions, and the sign test paired the unequal finalist with
    it over 5 steps instead of 10."""
    contenders = contenders or {}
    best: dict[str, tuple[dict, dict]] = {}
    for i, (r, t) in enumerate(zip(runs, measured)):
        f = r["family"]
        if f in contenders and i not in contenders[f]:
            continue
        if f not in best or t["measured_s"] < best[f][1]["measured_s"]:
            best[f] = (r, t)
    choice = None
    u = best.get("umpipe")
    # its fastest-measured equal split (it may have several: the count spread's and the hedge)
    safe = sorted(((r, t) for i, (r, t) in enumerate(zip(runs, measured))
                   if r["family"] == "umpipe" and r.get("equal")
                   and ("umpipe" not in contenders or i in contenders["umpipe"])),
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


def runoff_contenders(runs: list[dict], measured: list[dict]) -> dict[str, list[int]]:
    """Per method that holds a run-off, its finalists (indices into ``runs``; ``measured``: the
    tuning session's :func:`summarize` rows): its candidates whose tuning median is within
    :data:`RUNOFF_WITHIN` of its fastest, of the fastest :data:`RUNOFF_MOST` distinct
    configurations; when UMPIPE's fastest is an unequal plan, also its fastest equal split
    (the sign test pairs the two step by step). A method with one such configuration has
    chosen: it holds no run-off. The minimum of noisy medians is biased low, the more so the
    more candidates a method has (UMPIPE tunes over its plans and every baseline's equal
    splits): on vgg-mini, 3 stages at 0.4/0.15/0.25 CPU (2026-11-28), five of UMPIPE's
    candidates measured within 8 % of each other over 5 iterations, it kept fill-drain M=2 on
    a lucky 152 ms (model 175 ms), ran it at 174 ms in the final session and lost to torch's
    1F1B at 162 ms."""
    by: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        by.setdefault(r["family"], []).append(i)
    out: dict[str, list[int]] = {}
    for f, idx in by.items():
        idx = sorted(idx, key=lambda i: measured[i]["measured_s"])
        best = measured[idx[0]]["measured_s"]
        # distinct configurations: until 2026-11-28 UMPIPE's fill-drain and 1F1B plans of one
        # microbatch each (the same ops) were two finalists, and a run-off session ran that one
        # configuration against itself
        keys = list(dict.fromkeys(config_of(runs[i]) for i in idx
                                  if measured[i]["measured_s"] <= best * (1 + RUNOFF_WITHIN)))[:RUNOFF_MOST]
        if f == "umpipe" and len(keys) > 1 and not runs[idx[0]].get("equal"):
            eq = next((i for i in idx if runs[i].get("equal")), None)
            if eq is not None and config_of(runs[eq]) not in keys:
                keys.append(config_of(runs[eq]))
        if len(keys) > 1:
            out[f] = [i for i in idx if config_of(runs[i]) in keys]
    return out


def runoff_picks(runs: list[dict], measured: list[dict]) -> list[int]:
    """Which of ``runs`` the run-off measures again: every method's
    :func:`runoff_contenders`, and every candidate of a finalist configuration, of any method
    (measured once, so its copies read the same: until 2026-11-28 UMPIPE's one-microbatch plan
    read 43.2 ms after the run-off and gpipe M=1, the same configuration, 47.1 ms from the
    first round alone)."""
    return finalist_candidates(runs, runoff_contenders(runs, measured))


def finalist_candidates(runs: list[dict], contenders: dict[str, list[int]]) -> list[int]:
    """Every candidate, of any method, that runs a configuration of ``contenders``."""
    keys = {config_of(runs[i]) for idx in contenders.values() for i in idx}
    return [i for i in range(len(runs)) if config_of(runs[i]) in keys]


def runoff_line(runs: list[dict], picks: list[int]) -> str:
    """How many finalists the run-off measures: distinct configurations, and the candidates
    that run them when more (until 2026-11-28 "3 finalists" counted two copies of one
    configuration, which the docs call one finalist)."""
    n = len({config_of(runs[i]) for i in picks})
    return f"{n} finalist{'s' if n != 1 else ''}" + (f" ({len(picks)} candidates)" if len(picks) > n else "")


def config_of(r: dict) -> str:
    """What a candidate runs: candidates with one config run the same ops, measured once."""
    return run_key(r) if "schedule" in r else r["label"]


def merge_runoff(measured: list[dict], picks: list[int], again: list[dict]) -> list[dict]:
    """The tuning session's measurements (``_session``'s, one per run) with the run-off's
    (``again``, one per pick) appended: each finalist's iterations of both sessions, in
    order, so the i-th iterations of two finalists are still the same step's."""
    out = list(measured)
    for i, m in zip(picks, again):
        out[i] = dict(measured[i], iteration_s=list(measured[i]["iteration_s"]) + list(m["iteration_s"]),
                      losses=list(measured[i].get("losses") or []) + list(m.get("losses") or []))
    return out


def spread_of(xs: list[float]) -> dict:
    s = sorted(xs)
    # inclusive: quartiles between the least and the most time measured; the default
    # ("exclusive") extrapolates on few iterations, and until 2026-11-28 --steps 2 reported
    # q1..q3 of "-3.5..42.6" ms for iterations of 5.3 and 34 ms
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) >= 2 else [s[0]] * 3
    return dict(median_s=statistics.median(s), q1_s=q[0], q3_s=q[2], min_s=s[0], max_s=s[-1], n=len(s))


def paired_median(ratios: list[float]) -> float:
    """The median of per-step time ratios (baseline over UMPIPE), taken on their logarithms: an
    even count's middle two give their geometric mean, so a step twice as fast and one half as
    fast give 1 (a tie). ``statistics.median`` gave their arithmetic mean, which leans toward
    the larger ratio: with ``--steps 2`` (iterations 28.4 and 5.2 ms against 21.5 and 17.6) it
    printed "paired per step: median +107.5%" beside a measured +16.4 % (until 2026-11-28)."""
    return math.exp(statistics.median(math.log(r) for r in ratios))


def summarize(runs: list[dict], measured: list[dict]) -> dict:
    rows = []
    for r, m in zip(runs, measured):
        sp = spread_of(m["iteration_s"])
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
            paired_median_pct=(paired_median(paired) - 1) * 100,
            steps_won=sum(p > 1 for p in paired), steps=len(paired))
    return out
