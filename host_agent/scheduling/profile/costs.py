"""Profile file -> layer cuts and a :class:`PipelineCosts` for given stage CPU quotas.

Profile JSON (written by :mod:`.cli`)::

    {"model": ..., "sizes": [b...], "threads": 1, "machine": {...},
     "devices": {"<quota or 'none'>": {"overhead": s,
                  "layers": [{"name", "fwd": {b: s}, "bwd": {b: s}, "opt": s, "param_bytes",
                              "out_bytes_per_sample", "stash_bytes_per_sample",
                              "fit_fwd": {alpha, beta, knee, max_rel_err}, "fit_bwd": {...}}]}},
     "link": {"latency": s, "per_byte": s, "points": [[bytes, s], ...]},
     "stage_quotas": [q or null per stage]}

Stage s's forward time of b samples is ``overhead + sum over its layers of fit_fwd(b)`` on the
device (quota) it runs on, refitted to the cost model's ``alpha + beta * max(b, knee)`` over
b = 1..B; links are ``latency + per_byte * bytes``; the tail is the layers' optimizer steps.
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from ..costmodel import PipelineCosts
from .fit import eval_knee, fit_knee


def quota_key(q: float | None) -> str:
    return "none" if q is None else f"{float(q):g}"


def load(path: str) -> dict:
    with open(path) as f:
        prof = json.load(f)
    for k in ("devices", "link", "model"):
        if k not in prof:
            raise ValueError(f"{path}: not a saatp profile (no {k!r})")
    return prof


def _device(prof: dict, q: float | None) -> dict:
    k = quota_key(q)
    if k not in prof["devices"]:
        have = ", ".join(prof["devices"])
        raise ValueError(f"the profile has no measurements for CPU quota {k} (it has {have}); "
                         f"rerun saatp profile with the same --stages/--slow/--quota")
    return prof["devices"][k]


def layer_time(dev: dict, i: int, b, kind: str = "both") -> np.ndarray:
    L = dev["layers"][i]
    f = eval_knee(L["fit_fwd"], b)
    g = eval_knee(L["fit_bwd"], b)
    return f if kind == "fwd" else g if kind == "bwd" else f + g


def choose_cuts(prof: dict, quotas: Sequence[float | None], B: int) -> list[int]:
    """Contiguous split of the layers over the stages (in order) minimising the slowest stage's
    forward + backward time of the whole minibatch (chain DP)."""
    S = len(quotas)
    L = len(prof["devices"][next(iter(prof["devices"]))]["layers"])
    if not 1 <= S <= L:
        raise ValueError(f"cannot split {L} layers into {S} stages")
    cost = np.zeros((S, L + 1))  # prefix sums of per-layer time on stage s's device
    for s, q in enumerate(quotas):
        dev = _device(prof, q)
        cost[s, 1:] = np.cumsum([float(layer_time(dev, i, B)) for i in range(L)])
    INF = float("inf")
    best = np.full((S + 1, L + 1), INF)
    arg = np.zeros((S + 1, L + 1), dtype=int)
    best[0, 0] = 0.0
    for s in range(1, S + 1):
        for j in range(s, L - (S - s) + 1):
            for i in range(s - 1, j):
                v = max(best[s - 1, i], cost[s - 1, j] - cost[s - 1, i])
                if v < best[s, j]:
                    best[s, j], arg[s, j] = v, i
    cuts, j = [], L
    for s in range(S, 1, -1):
        j = int(arg[s, j])
        cuts.append(j)
    return cuts[::-1]


def build(prof: dict, B: int, quotas: Sequence[float | None], cuts: Sequence[int] | None = None,
          optimizer_state_factor: float = 3.0, calibrated: bool = True) -> PipelineCosts:
    """Cost model for stages on the given quotas (``cuts`` chosen by :func:`choose_cuts` if
    None). ``info`` records cuts, quotas, per-stage static memory (parameters, gradients and
    the optimizer's momentum: ``optimizer_state_factor`` x parameter bytes) and stashed bytes
    per sample, for memory limits."""
    S = len(quotas)
    cal = prof.get("calibration")
    if cuts is None and cal and cal.get("B") == B and cal.get("quotas") == list(quotas):
        cuts = cal["cuts"]  # the split the calibration ran on
    cuts = list(choose_cuts(prof, quotas, B) if cuts is None else cuts)
    L = len(prof["devices"][next(iter(prof["devices"]))]["layers"])
    bounds = [0, *cuts, L]
    if len(bounds) != S + 1 or any(b <= a for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"cuts {cuts} do not split {L} layers into {S} stages")
    bs = np.arange(1, B + 1)
    lat, per = float(prof["link"]["latency"]), float(prof["link"]["per_byte"])
    fa, fb, ba, bb, kn, sl, sb, tail, static, stash, names = ([] for _ in range(11))
    for s, q in enumerate(quotas):
        dev = _device(prof, q)
        lo, hi = bounds[s], bounds[s + 1]
        layers = dev["layers"][lo:hi]
        over = float(dev["overhead"])
        tf = over / 2 + sum(layer_time(dev, i, bs, "fwd") for i in range(lo, hi))
        tb = over / 2 + sum(layer_time(dev, i, bs, "bwd") for i in range(lo, hi))
        ff, fbw = fit_knee(bs, tf), fit_knee(bs, tb)
        # one knee per stage in the cost model: refit backward with forward's knee
        z = np.maximum(bs, ff["knee"])
        c1, c0 = np.polyfit(z, tb, 1)
        fa.append(ff["alpha"])
        fb.append(ff["beta"])
        ba.append(max(float(c0), 0.0))
        bb.append(max(float(c1), 0.0))
        kn.append(ff["knee"])
        out_b = float(layers[-1]["out_bytes_per_sample"])
        sl.append(lat)
        sb.append(per * out_b)
        tail.append(sum(float(l["opt"]) for l in layers))
        static.append(optimizer_state_factor * sum(float(l["param_bytes"]) for l in layers))
        stash.append(sum(float(l["stash_bytes_per_sample"]) for l in layers))
        names.append(f"q{quota_key(q)}[{lo}:{hi}]")
        del fbw
    cal = prof.get("calibration") if calibrated else None
    if cal:  # compute factor, extra per-microbatch overhead and link latency fitted on real runs
        k, x = cal.get("compute_scale", 1.0), cal["overhead_extra"]
        fa, fb = [a * k + x for a in fa], [b * k for b in fb]
        ba, bb = [a * k + x for a in ba], [b * k for b in bb]
        tail = [t * k for t in tail]
        sl = [cal["link_latency"]] * S
    info = dict(workload=prof["model"], cuts=cuts, quotas=list(quotas), static_bytes=static,
                stash_bytes_per_sample=stash, profile=True, calibrated=bool(cal))
    return PipelineCosts.from_arrays(B, fa, fb, ba, bb, kn, sl, sb, None, None, tail, names=names, info=info)


def memory_bytes(costs: PipelineCosts, peak_samples: Sequence[int]) -> list[float]:
    """Per-stage memory of a plan: static bytes + peak stashed samples x bytes per sample."""
    st = costs.info.get("static_bytes")
    sp = costs.info.get("stash_bytes_per_sample")
    if st is None or sp is None:
        raise ValueError("this cost model has no memory figures (build it from a profile)")
    return [float(a + p * b) for a, b, p in zip(st, sp, peak_samples)]
