"""The candidates each method of ``saatp train pipeline`` measures, chosen by the cost model:
GPipe and 1F1B (ours and torch's) their best microbatch counts, spread apart; UMPIPE its best
distinct plans, its best equal split beside an unequal best, and every baseline's equal split
in our runtime (its family holds them)."""

from __future__ import annotations

import json

from ..costmodel import equal_sizes
from ..pipeline.torch_schedules import TORCH_SCHEDULES, can_run
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
                equal = family.is_equal_split(c.rows)
                # an equal split is labelled with its count, as the ones measured beside a baseline
                # are: until 2026-11-28 "umpipe #2 1f1b" (6,6 on every stage) stood beside
                # "umpipe #3 fill-drain M=2" in the tuning list, which shows no microbatches
                runs.append(dict(schedule="ours", label=f"umpipe #{i + 1} {c.kind}" + (f" M={len(c.rows[0])}" if equal
                                                                                     else ""),
                                 family="umpipe", kind=c.kind, rows=c.rows, orders=c.orders,
                                 predicted_s=c.predicted_s, peak_samples=c.peak_samples,
                                 memory_bytes=c.memory_bytes, equal=equal))
            continue
        kind = "fill-drain" if sch in ("gpipe", "torch-gpipe") else "1f1b"
        if M:
            ms = [M]
        else:
            ms = [m for m in range(1, min(B, mmax) + 1) if sch not in TORCH_SCHEDULES or can_run(sch, m, B, S)]
        cands = []
        for m in ms:
            if sch in TORCH_SCHEDULES:  # only a count --microbatches names gets here
                check_microbatches(m, [sch], B, S)
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


def check_microbatches(M: int, schedules: list[str], B: int, S: int) -> None:
    """ValueError naming ``--microbatches`` when one of the baselines ``schedules`` cannot run
    ``M`` microbatches of a minibatch of ``B`` on ``S`` stages (M at most B; torch's M must
    divide B, its 1F1B also M >= S). Until 2026-11-28 the message named neither option ("torch-gpipe: M=4 must divide
    B=10"), and without ``--profile`` it came after the profiling."""
    if M > B and schedules:  # "need 1 <= M <= B, got M=20, B=10" until 2026-11-28
        raise ValueError(f"--microbatches {M}: more microbatches than the minibatch's B={B} samples (--batch)")
    for sch in schedules:
        if sch not in TORCH_SCHEDULES:
            continue
        if B % M:
            raise ValueError(f"--microbatches {M}: {sch} splits the minibatch into M equal microbatches, so M "
                             f"must divide B={B} (--batch); leave out --microbatches to take each schedule's "
                             f"best count")
        if sch == "torch-1f1b" and M < S:
            raise ValueError(f"--microbatches {M}: torch-1f1b needs M >= the {S} stages; leave out "
                             f"--microbatches to take each schedule's best count")


def _with_baseline_splits(costs, runs: list[dict], baselines: list[dict], limit) -> list[dict]:
    """UMPIPE's candidates plus, in our runtime, the equal split at every (order, count) of
    ``baselines`` (every baseline's candidates, whether the session runs it or not: ``1f1b
    M=4`` and ``torch-1f1b M=4`` are 1F1B on four equal microbatches), after its own. Those are
    members of its family, so its tuning measures every configuration a baseline can keep
    (also when ``--schedule umpipe`` runs alone), and its kept plan is the fastest of them
    unless an unequal plan passes :func:`.tuning.keep_tuned`'s test. The ones our GPipe/1F1B measure
    in the same session cost nothing (:func:`.cli._session` measures a configuration once); the
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
