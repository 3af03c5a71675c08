"""Calibrate the profile inside running pipelines.

A layer timed in a tight loop misses most of what a stage pays per microbatch in a running
pipeline: the runtime's slicing, autograd set-up and message handling, and cold caches after
the CPU quota throttled the process and other processes ran. On the profiled host a stage op
costs about 1 ms of CPU beyond its layers' tight-loop time, ten times the profiled
per-microbatch overhead.

``calibrate`` runs short GPipe and 1F1B sessions with several equal microbatch counts on the
real stage processes (same quotas, same split) with op tracing on, and fits, per stage, from
**CPU seconds** measured there (not from iteration times):

* the CPU seconds of a forward / backward op of b samples (``alpha + beta * max(b, knee)``,
  one knee per stage, on the median per size);
* the stage's other CPU per op (communication threads: process CPU minus the ops' thread
  CPU, regressed on the op count), added to every op, and per iteration (the optimizer step
  and bookkeeping: the tail);
* the message latency: the median time from a sender's op end to the start of the receiver's
  op that was blocked waiting for it (the ping-pong of :mod:`.link` on a loaded host measures
  scheduling delays the pipeline's stages, with their high ``cpu.shares``, mostly avoid).

The same session runs torch's ``ScheduleGPipe`` and ``Schedule1F1B`` once each (at two
counts torch can run, :func:`torch_runs`): their points check how well these curves, our
runtime's, predict torch's schedules (``saatp train pipeline`` predicts them so). A model
fitted to torch's own traced runs was tried on 2026-11-28 and was worse on 40 measurements
(median error +6.5 % against -2.0 %, median absolute 7.1 % against 5.3 %), so the runs only
check.

CPU seconds hardly depend on the host's load, so this fit is stable on a busy machine. The
iteration times are then *predicted* (CFS simulation, :mod:`..orders`) and every
(measured, predicted-uncalibrated, predicted-calibrated) point is stored in the profile: the
calibration runs double as a check of the model, nothing is fitted to them.
"""

from __future__ import annotations

import statistics
from typing import Sequence

import numpy as np

from ..costmodel import PipelineCosts, equal_sizes
from ..orders import expected_makespan, schedule
from ..pipeline import launch
from ..pipeline.torch_schedules import TORCH_SCHEDULES, can_run
from ..pipeline.worker import StageConfig
from ..progress import DEFAULT_STALL_S
from .fit import fit_knee


def _runs(costs: PipelineCosts, Ms: Sequence[int]) -> list[dict]:
    runs = []
    for kind in ("fill-drain", "1f1b"):
        for M in Ms:
            if M > costs.B:
                continue
            rows = [equal_sizes(costs.B, M)] * costs.S
            runs.append(dict(schedule="ours", kind=kind, rows=rows, orders=schedule(costs, rows, kind).orders,
                             label=f"{'gpipe' if kind == 'fill-drain' else '1f1b'} M={M}"))
    return runs


TORCH_CHECK_M = (2, 8)  # torch's GPipe at the least count from 2 up, its 1F1B at the most up to 8 (check runs)


def torch_runs(costs: PipelineCosts, Ms: Sequence[int]) -> list[dict]:
    """torch's two schedules, one run each, at two counts torch can run (M dividing B; 1F1B
    also M >= S) up to the largest of ``Ms`` whose microbatches hold the model's least
    (``costs.info["min_microbatch"]``): GPipe at the least from 2 up, 1F1B at the most up to 8
    (:data:`TORCH_CHECK_M`), around the counts that win; none when no two such counts exist.
    Until 2026-11-28 only the counts of ``Ms`` (1, 2, 4, 8, 16) were taken, and at B = 18 or
    30 on 3-5 stages torch's 1F1B had none: no check run. ``rows``/``orders`` describe the run
    for the model (torch's 1F1B runs our 1F1B order: ``S - s`` forwards in flight)."""
    B, S = costs.B, costs.S
    least = int(costs.info.get("min_microbatch", 1))
    counts = [m for m in range(1, min(B, max(Ms, default=0)) + 1) if B // m >= least]
    ok = {sch: [m for m in counts if can_run(sch, m, B, S)] for sch in TORCH_SCHEDULES}
    if not ok["torch-gpipe"] or not ok["torch-1f1b"]:
        return []
    lo, hi = TORCH_CHECK_M
    picks = {"torch-gpipe": min([m for m in ok["torch-gpipe"] if m >= lo] or ok["torch-gpipe"]),
             "torch-1f1b": max([m for m in ok["torch-1f1b"] if m <= hi] or ok["torch-1f1b"][:1])}
    if picks["torch-gpipe"] == picks["torch-1f1b"]:
        return []
    runs = []
    for sch, M in picks.items():
        kind = "fill-drain" if sch == "torch-gpipe" else "1f1b"
        rows = [equal_sizes(B, M)] * S
        runs.append(dict(schedule=sch, M=M, kind=kind, rows=rows, orders=schedule(costs, rows, kind).orders,
                         label=f"{sch} M={M}"))
    return runs


def fit_stages(runs: list[dict], measured: list[dict], S: int) -> list[dict]:
    """Per-stage CPU curves from traced runs (``measured[i]["traces"][rank][step]`` as
    :func:`..pipeline.launch.run` returns them with ``trace=True``)."""
    stages = []
    for s in range(S):
        pts = {"F": {}, "B": {}}
        other = []  # (ops in the iteration, process CPU outside the ops' compute)
        for run, m in zip(runs, measured):
            rows = run["rows"][s]
            for it in m["traces"][s]:
                for k, j, _tw, _t0, _t1, cpu in it["ops"]:
                    pts[k].setdefault(int(rows[j]), []).append(float(cpu))
                other.append((len(it["ops"]), float(it["cpu_s"]) - sum(o[5] for o in it["ops"])))
        o = np.asarray(other, dtype=float)
        if len({n for n, _ in other}) >= 2:
            per_op, per_it = np.polyfit(o[:, 0], o[:, 1], 1)
        else:
            per_op, per_it = 0.0, float(np.mean(o[:, 1]))
        per_op, per_it = max(float(per_op), 0.0), max(float(per_it), 0.0)
        sizes = sorted(pts["F"])
        f_med = [statistics.median(pts["F"][b]) + per_op for b in sizes]
        b_med = [statistics.median(pts["B"][b]) + per_op for b in sizes]
        ff = fit_knee(sizes, f_med)
        z = np.maximum(np.asarray(sizes, dtype=float), ff["knee"])
        if len(sizes) >= 2:
            c1, c0 = np.polyfit(z, b_med, 1)
        else:
            c1, c0 = 0.0, b_med[0]
        stages.append(dict(fwd=ff, bwd=dict(alpha=max(float(c0), 0.0), beta=max(float(c1), 0.0), knee=ff["knee"]),
                           tail=per_it, other_per_op=per_op,
                           measured=dict(sizes=sizes, fwd=f_med, bwd=b_med)))
    return stages


def link_latency(runs: list[dict], measured: list[dict], S: int, min_wait: float = 5e-5) -> tuple[float | None, int]:
    """Message latency inside the pipeline: for every op that waited for its input (it was
    blocked when the data came), the time from the end of the sender's last op it needed to
    the op's start. Returns (median, number of samples) -- (None, 0) without samples."""
    lat = []
    for run, m in zip(runs, measured):
        rows = run["rows"]
        starts = [[sum(r[:j]) for j in range(len(r) + 1)] for r in rows]

        def need(s: int, j: int, t: int) -> list[int]:  # microbatches of stage t holding stage s's mb j
            a, b = starts[s][j], starts[s][j + 1]
            return [k for k in range(len(rows[t])) if starts[t][k] < b and starts[t][k + 1] > a]

        tr = m["traces"]
        for step in range(len(tr[0])):
            end = [{(k, j): t1 for k, j, _tw, _t0, t1, _c in tr[s][step]["ops"]} for s in range(S)]
            for s in range(S):
                for k, j, tw, t0, _t1, _c in tr[s][step]["ops"]:
                    if t0 - tw < min_wait:
                        continue
                    if k == "F" and s > 0:
                        sent = max(end[s - 1][("F", i)] for i in need(s, j, s - 1))
                    elif k == "B" and s < S - 1:
                        sent = max(end[s + 1][("B", i)] for i in need(s, j, s + 1))
                    else:
                        continue
                    if t0 >= sent:
                        lat.append(t0 - sent)
    return (statistics.median(lat), len(lat)) if lat else (None, 0)


def check_calibration_batch(B: int, least: int = 1) -> None:
    """ValueError naming ``--batch`` unless a minibatch of ``B`` splits into two microbatch
    counts (1 and 2) whose microbatches hold ``least`` samples or more (the model's least), as
    the calibration's fits need. Until 2026-11-28 ``saatp profile --batch 1`` (and ``saatp train
    pipeline --batch 1`` without ``--profile``) timed the layers and the link first, then failed
    with "the calibration needs two microbatch counts whose microbatches hold >= 1 samples (B =
    1)", naming neither the option nor a way out."""
    if B // 2 < least:
        raise ValueError(f"--batch {B}: the calibration runs need two microbatch counts of at least {least} "
                         f"sample{'s' if least > 1 else ''} each (1 and 2 microbatches), so B >= {2 * least}; give "
                         f"--batch {2 * least} or more, or take the profile with saatp profile --no-calibrate (its "
                         f"plans are then uncalibrated) and pass it as --profile with --batch {B}")


def calibrate(costs: PipelineCosts, model: str, quotas: Sequence[float | None], Ms=(1, 2, 4, 8, 16),
              steps: int = 3, backend: str = "gloo", prof: dict | None = None,
              stall_s: float | None = DEFAULT_STALL_S) -> dict:
    """Run the calibration sessions on ``costs``' split; returns the profile's calibration
    entry. With ``prof`` the points also get the calibrated model's predictions. ``stall_s``:
    :func:`..pipeline.launch.run`'s stall limit."""
    least = int(costs.info.get("min_microbatch", 1))
    check_calibration_batch(costs.B, least)
    Ms = [m for m in Ms if m <= costs.B and min(equal_sizes(costs.B, m)) >= least]
    ours, theirs = _runs(costs, Ms), torch_runs(costs, Ms)
    runs = ours + theirs
    # the regime of saatp train pipeline: each timed iteration right after an untimed one of
    # the same plan (its own steady state), the order of the plans rotating from step to step
    cfg = StageConfig(model=model, cuts=list(costs.info["cuts"]), B=costs.B, steps=steps, warmup=1,
                      schedule="ours", backend=backend, trace=True, lead=1, rotate=True,
                      runs=[{k: r[k] for k in ("schedule", "rows", "orders", "label", "M") if k in r} for r in runs])
    res = launch.run(cfg, quotas=list(quotas), timeout_s=1800.0, stall_s=stall_s)
    mine = res["runs"][:len(ours)]
    lat, n_lat = link_latency(ours, mine, costs.S)
    out = dict(B=costs.B, cuts=list(costs.info["cuts"]), quotas=list(quotas), stages=fit_stages(ours, mine, costs.S),
               steps=steps, link_latency=lat, link_latency_samples=n_lat)
    after = None
    if prof is not None:
        from . import costs as profile_costs

        after = profile_costs.build(dict(prof, calibration=out), costs.B, quotas, costs.info["cuts"])
    pts = []
    for r, m in zip(runs, res["runs"]):
        p = dict(label=r["label"], measured_s=m["median_s"], iterations_s=m["iteration_s"],
                 before_s=expected_makespan(costs, r["rows"], r["orders"]))
        if after is not None:  # torch's check runs too: predicted with our runtime's curves
            p["after_s"] = expected_makespan(after, r["rows"], r["orders"])
        pts.append(p)
    out["points"] = pts
    if after is not None:
        err = np.array([(p["after_s"] - p["measured_s"]) / p["measured_s"] for p in pts])
        out["rms_rel_err"] = float(np.sqrt(np.mean(err ** 2)))
        out["max_abs_rel_err"] = float(np.max(np.abs(err)))
    return out


def calibrate_split(prof: dict, model: str, quotas: Sequence[float | None], B: int,
                    cuts: Sequence[int] | None = None, steps: int = 3, backend: str = "gloo", log=print,
                    stall_s: float | None = DEFAULT_STALL_S) -> dict:
    """The profile's calibration entry: :func:`calibrate` on ``cuts``, or without them on the
    split :func:`.costs.choose_cuts` makes from the layers' tight-loop times and the default
    fixed CPU per op; when the calibrated costs split the layers differently, once more on
    that split (the first split's points are kept under ``first_split``). The default fixed
    cost (1 ms per op, measured on the benchmark models) outweighs a small model's layers:
    an outside test's 9-layer CNN got its six convolutions on one stage, which ran 1.8x
    slower than the split its calibration implied."""
    from . import costs as profile_costs

    cal = calibrate(profile_costs.build(prof, B, quotas, cuts), model, quotas, steps=steps, backend=backend,
                    prof=prof, stall_s=stall_s)
    if cuts is not None:
        return cal
    better = profile_costs.choose_cuts(dict(prof, calibration=cal), quotas, B)
    if better == list(cal["cuts"]):
        return cal
    log(f"the calibrated costs split the layers at {better}, not {list(cal['cuts'])}: calibrating on that split")
    again = calibrate(profile_costs.build(prof, B, quotas, better), model, quotas, steps=steps, backend=backend,
                      prof=prof, stall_s=stall_s)
    again["first_split"] = {k: cal[k] for k in ("cuts", "points", "stages") if k in cal}
    return again
