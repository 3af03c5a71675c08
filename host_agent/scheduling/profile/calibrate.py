"""Calibrate the profile against real pipeline runs.

Layer timings in a lone process miss what a stage process pays per microbatch in a running
pipeline: message handling, wake-ups after blocking receives, and the CPU quota's throttling
slices. ``calibrate`` runs short GPipe and 1F1B sessions with several equal microbatch counts
on the real stage processes (same quotas, same split) and fits three numbers by grid search: a
factor on the profiled compute times, an extra per-microbatch overhead added to every forward
and backward, and the link latency; the objective is the mean squared relative error of the
predicted iteration times. The fitted
values and every (measured, predicted-before, predicted-after) point go into the profile.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..costmodel import PipelineCosts, equal_sizes
from ..orders import schedule
from ..pipeline import launch
from ..pipeline.worker import StageConfig


def with_calibration(c: PipelineCosts, extra: float, latency: float, scale: float = 1.0) -> PipelineCosts:
    """``c`` with compute times (and tails) x ``scale``, ``extra`` seconds added to every
    forward and backward microbatch, and link latency ``latency``."""
    S = c.S
    sl = np.full(S, latency)
    sl[-1] = 0.0
    gl = np.full(S, latency)
    gl[0] = 0.0
    return PipelineCosts(c.B, c.f_alpha * scale + extra, c.f_beta * scale, c.b_alpha * scale + extra,
                         c.b_beta * scale, c.knee, sl, c.send_beta, gl, c.grad_beta, c.tail * scale, c.bmax, c.names,
                         dict(c.info))


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


def fit(costs: PipelineCosts, runs: list[dict], measured: Sequence[float],
        extras=None, latencies=None, scales=None) -> tuple[float, float, float, float]:
    """Grid search; returns (extra, latency, scale, rms relative error)."""
    extras = np.linspace(0.0, 0.008, 17) if extras is None else extras
    latencies = np.linspace(0.0, 0.006, 7) if latencies is None else latencies
    scales = np.linspace(0.6, 1.4, 17) if scales is None else scales
    m = np.asarray(measured, dtype=float)
    best = None
    for k in scales:
        for x in extras:
            for lat in latencies:
                c = with_calibration(costs, float(x), float(lat), float(k))
                p = np.array([schedule(c, r["rows"], orders=r["orders"]).makespan for r in runs])
                e = float(np.sqrt(np.mean(((p - m) / m) ** 2)))
                if best is None or e < best[3]:
                    best = (float(x), float(lat), float(k), e)
    return best


def calibrate(costs: PipelineCosts, model: str, quotas: Sequence[float | None], Ms=(1, 2, 4, 8, 16),
              steps: int = 3, backend: str = "gloo") -> dict:
    runs = _runs(costs, Ms)
    cfg = StageConfig(model=model, cuts=list(costs.info["cuts"]), B=costs.B, steps=steps, warmup=1,
                      schedule="ours", backend=backend,
                      runs=[{k: r[k] for k in ("schedule", "rows", "orders", "label")} for r in runs])
    res = launch.run(cfg, quotas=list(quotas))
    measured = [r["median_s"] for r in res["runs"]]
    extra, lat, scale, err = fit(costs, runs, measured)
    after = with_calibration(costs, extra, lat, scale)
    pts = [dict(label=r["label"], measured_s=m, before_s=schedule(costs, r["rows"], orders=r["orders"]).makespan,
                after_s=schedule(after, r["rows"], orders=r["orders"]).makespan) for r, m in zip(runs, measured)]
    return dict(overhead_extra=extra, link_latency=lat, compute_scale=scale, rms_rel_err=err, B=costs.B, cuts=list(costs.info["cuts"]),
                quotas=list(quotas), points=pts)
