"""Profile file -> layer cuts and a :class:`PipelineCosts` for given stage CPU quotas.

Profile JSON (written by :mod:`.cli`)::

    {"model": ..., "format": 2, "sizes": [b...], "threads": 1, "machine": {...},
     "cfs_period_s": 0.01,
     "cpu": {"overhead": s,
             "layers": [{"name", "fwd": {b: s}, "bwd": {b: s}, "opt": s, "param_bytes",
                         "trainable_bytes", "buffer_bytes",
                         "out_bytes_per_sample", "stash_bytes_per_sample",
                         "fit_fwd": {alpha, beta, knee, max_rel_err}, "fit_bwd": {...}}]},
     "link": {"latency": s, "per_byte": s, "points": [[bytes, s], ...]},
     "stage_quotas": [q or null per stage],
     "calibration": {"B", "cuts", "quotas", "stages": [{"fwd": fit, "bwd": fit, "tail": s, ...}],
                     "points": [...], ...}}

All compute times are **CPU seconds** (the work an op needs; a stage's CPU quota decides how
fast it gets done, see :mod:`..orders`).

A stage's op of b samples costs ``alpha + beta * max(b, knee)`` CPU seconds:

* calibrated (the profile's calibration ran on the same cuts): the fit of the op CPU seconds
  measured *inside* running pipelines, per stage and direction, plus the stage's other CPU
  per op (communication threads); the tail is the measured CPU per iteration outside the ops
  (optimizer step, bookkeeping);
* otherwise: the sum of its layers' fits plus the profiled per-microbatch overhead, and the
  layers' optimizer steps as the tail. This misses most of the per-op cost of a running
  stage (about 1 ms of CPU on the profiled host, against ~0.1 ms in a tight loop).

torch's schedules (``ScheduleGPipe``, ``Schedule1F1B``) are predicted with the same curves:
the calibration's check runs of them (``calibrate.torch_runs``) show how well. A model fitted
to torch's own runs was tried (2026-11-28) and was worse on 40 measurements (see
docs/pipeline-runtime.md).

The cost model holds *fluid* times (CPU seconds / quota) so that every evaluator works;
``info["cfs"]`` carries the quotas and the period for the simulation of the CFS budget.
Links are ``latency + per_byte * bytes``.
"""

from __future__ import annotations

import json
import math
import os
from typing import Sequence

import numpy as np

from ..costmodel import PipelineCosts
from .fit import eval_knee, fit_knee

DEFAULT_PERIOD_S = 0.01


def quota_key(q: float | None) -> str:
    return "none" if q is None else f"{float(q):g}"


def load(path: str) -> dict:
    try:
        with open(path) as f:
            prof = json.load(f)
    except OSError as e:
        raise ValueError(f"{path}: cannot read the profile ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}:{e.colno}: not a saatp profile (invalid JSON: {e.msg})") from None
    if not isinstance(prof, dict):
        raise ValueError(f"{path}: not a saatp profile (a JSON {type(prof).__name__}, not an object)")
    for k in ("link", "model"):
        if k not in prof:
            # a plan or a run's result given as the profile was "not a saatp profile (no 'link')"
            # until 2026-11-28, not saying what the file was
            made_by = ("saatp plan umpipe --json" if "umpipe" in prof and "baselines" in prof else
                       "saatp train pipeline --json" if "summary" in prof and "plan" in prof else None)
            raise ValueError(f"{path}: not a saatp profile (no {k!r}"
                             + (f"; it looks like the result of {made_by}: --profile takes what saatp profile "
                                f"--out writes)" if made_by else ")"))
    if "cpu" not in prof:
        raise ValueError(f"{path}: a profile in the old per-quota wall-time format; rerun saatp profile")
    quotas = prof.get("stage_quotas")
    for i, q in enumerate(quotas if isinstance(quotas, list) else []):
        # until 2026-11-28 a hand-edited quota failed later as "f_alpha must be >= 0" (negative),
        # "cuts [0] do not split ..." (0, nan) or "could not convert string to float"
        if q is not None and (isinstance(q, bool) or not isinstance(q, (int, float)) or not math.isfinite(q) or q <= 0):
            raise ValueError(f"{path}: stage_quotas[{i}] is {q!r}: a stage's quota is a positive number of CPUs, "
                             "or null for none")
    # the numbers every plan reads, edited by hand: until 2026-11-28 a cfs_period_s of 0 failed
    # with a ZeroDivisionError's traceback, a negative one hung plan umpipe, a calibration B of
    # -4 was blamed on "--batch -4", a string failed as "could not convert string to float"
    cal = prof.get("calibration")
    layers = (prof["cpu"] or {}).get("layers") if isinstance(prof["cpu"], dict) else None
    # a layer's parameter bytes (train pipeline compares them with the model's: a string failed
    # there with "invalid literal for int() with base 10: 'x'", naming neither file nor key)
    sized = [(f"cpu.layers[{i}].{key}", L.get(key), 0, True)
             for i, L in enumerate(layers if isinstance(layers, list) else []) if isinstance(L, dict)
             for key in ("param_bytes", "trainable_bytes", "buffer_bytes")]
    # the fits every plan evaluates and the bytes it sends and stashes: until 2026-11-28 a NaN
    # edited into a layer's fit failed as "cuts [0, 0] do not split 13 layers into 3 stages", a
    # NaN in a calibration stage's fit as "f_alpha must be finite", naming neither file nor key
    fits = [(f"cpu.layers[{i}].{key}.{k}", L[key].get(k), None, False)
            for i, L in enumerate(layers if isinstance(layers, list) else []) if isinstance(L, dict)
            for key in ("fit_fwd", "fit_bwd") if isinstance(L.get(key), dict) for k in ("alpha", "beta", "knee")]
    fits += [(f"cpu.layers[{i}].{key}", L.get(key), None, False)
             for i, L in enumerate(layers if isinstance(layers, list) else []) if isinstance(L, dict)
             for key in ("out_bytes_per_sample", "stash_bytes_per_sample")]
    stages = cal.get("stages") if isinstance(cal, dict) else None
    for s, st in enumerate(stages if isinstance(stages, list) else []):
        if isinstance(st, dict):
            fits += [(f"calibration.stages[{s}].{key}.{k}", st[key].get(k), None, False)
                     for key in ("fwd", "bwd") if isinstance(st.get(key), dict) for k in ("alpha", "beta", "knee")]
            fits.append((f"calibration.stages[{s}].tail", st.get("tail"), None, False))
    for where, v, least, whole in (*sized, *fits,
            ("cfs_period_s", prof.get("cfs_period_s"), 0.0, False),
            ("min_microbatch", prof.get("min_microbatch"), 1, True),
            ("cpu.min_microbatch", (prof["cpu"] or {}).get("min_microbatch") if isinstance(prof["cpu"], dict)
             else None, 1, True),
            ("link.latency", prof["link"].get("latency") if isinstance(prof["link"], dict) else None, None, False),
            ("link.per_byte", prof["link"].get("per_byte") if isinstance(prof["link"], dict) else None, None, False),
            ("calibration.B", cal.get("B") if isinstance(cal, dict) else None, 1, True)):
        if v is None:
            continue
        bad = isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (
            whole and v != int(v)) or (v < least if whole else v <= least if least is not None else v < 0)
        if bad:
            what = (f"a whole number of at least {least}" if whole else "a positive number of seconds" if least is not None
                    else "a number of bytes of at least 0" if where.endswith("_per_sample") else
                    "a number of at least 0" if where.endswith("knee") else "a number of seconds of at least 0")
            raise ValueError(f"{path}: {where} is {v!r}: it is {what}; rerun saatp profile")
    return prof


def changed_layers(prof: dict, layers) -> list[str]:
    """The layers (``nn.Module`` children, as many as the profile's) whose parameter bytes, or
    trainable parameter bytes, differ from what the profile recorded, each as "layer i (Name): N
    parameter bytes, the profile M": a model changed since it was profiled (a wider layer, a
    layer frozen) keeps its layer count, and its profile's times then describe another model
    (until 2026-11-28 nothing said so; a layer frozen since was not noticed until 2026-11-28,
    when profiles began to record ``trainable_bytes``)."""
    out = []
    for i, (layer, rec) in enumerate(zip(layers, prof["cpu"]["layers"])):
        have = sum(p.numel() * p.element_size() for p in layer.parameters())
        if "param_bytes" in rec and int(rec["param_bytes"]) != have:
            out.append(f"layer {i} ({type(layer).__name__}): {have} parameter bytes, the profile {int(rec['param_bytes'])}")
            continue
        # a layer frozen (or unfrozen) since: its backward and optimizer step are not the profile's
        trainable = sum(p.numel() * p.element_size() for p in layer.parameters() if p.requires_grad)
        if "trainable_bytes" in rec and int(rec["trainable_bytes"]) != trainable:
            out.append(f"layer {i} ({type(layer).__name__}): {trainable} trainable parameter bytes (requires_grad), "
                       f"the profile {int(rec['trainable_bytes'])}")
    return out


def check_not_the_profile(profile: str | None, **outputs: str | None) -> None:
    """ValueError when an output file (``json=PATH``: option ``--json``) is the ``--profile``
    file, which the command would overwrite with its result (until 2026-11-28 it did)."""
    if not profile:
        return
    for name, path in outputs.items():
        if path and os.path.realpath(path) == os.path.realpath(profile):
            raise ValueError(f"--{name} {path} is the --profile file: the result would overwrite the profile")


def _speed(q: float | None) -> float:
    """CPUs a stage gets while busy: its quota (at most one core), 1 without a quota."""
    return 1.0 if q is None else min(float(q), 1.0)


def layer_time(layers: list[dict], i: int, b, kind: str = "both") -> np.ndarray:
    """CPU seconds of layer i's forward / backward / both for microbatch size(s) b."""
    L = layers[i]
    f = eval_knee(L["fit_fwd"], b)
    g = eval_knee(L["fit_bwd"], b)
    return f if kind == "fwd" else g if kind == "bwd" else f + g


DEFAULT_OP_CPU_S = 1e-3  # CPU seconds a stage op costs beyond its layers inside a running pipeline


def op_cpu(prof: dict) -> float:
    """CPU seconds per op beyond the layers: the calibration's mean fixed cost per op, else
    :data:`DEFAULT_OP_CPU_S` (what the calibration measured on the profiled host)."""
    cal = prof.get("calibration") or {}
    st = cal.get("stages") or []
    if st:
        return float(sum(x["fwd"]["alpha"] + x["bwd"]["alpha"] for x in st) / (2 * len(st)))
    return DEFAULT_OP_CPU_S


def choose_cuts(prof: dict, quotas: Sequence[float | None], B: int, m_ref: int = 4,
                limit_bytes: float | None = None, optimizer_state_factor: float = 3.0, mmax: int = 16) -> list[int]:
    """Contiguous split of the layers over the stages (in order) minimising the slowest stage's
    time for the whole minibatch at its quota (chain DP): its layers' forward + backward CPU
    plus the fixed CPU of ``m_ref`` forward and backward ops (:func:`op_cpu`), so that a slow
    stage is not left with a pooling layer alone whose ops still cost their fixed part.

    Among the splits whose slowest stage is within :data:`TIE_REL` of the least, the one with
    the least sum of squared stage times (a second chain DP): the other stages' times are the
    pipeline's fill and drain, and within that margin the model cannot tell the slowest
    stages apart (its fixed CPU per op is one figure for every op). With the slowest stage
    alone, a small model whose fixed op costs outweigh its layers left every split tied
    behind the slow-quota stage: an outside test's CNN got its six convolutions on one stage
    (1.8x slower than a balanced split), a held-out MLP 8 | 1 | 1 | 11 layers because the
    slow stage's LayerNorm was 0.01 ms lighter than another (0.2 % of that stage), and
    vgg-mini 129 and 215 ms on its last two stages where 170 and 174 were possible (measured
    10-17 % faster under 1F1B, M = 4).

    With ``limit_bytes`` (a stage's memory limit) a stage that cannot fit the plan of least
    memory is never formed (:func:`stage_least_bytes`: its parameters, gradients and optimizer
    state, ``optimizer_state_factor`` x parameter bytes, and what it stashes under 1F1B with the
    most microbatches ``mmax`` allows, as ``plan umpipe``'s "nothing fits" reckons); when every
    split has such a stage, the split for time alone. Until 2026-11-28 the split ignored the limit: an 18-layer MLP at 0.45/0.2/0.3
    CPU had 16 layers on stage 0, and under a 4 MB limit every command said no plan fits
    (4.1 MB needed on that stage) when other splits needed ~1.5 MB."""
    S = len(quotas)
    layers = prof["cpu"]["layers"]
    L = len(layers)
    if not 1 <= S <= L:
        raise ValueError(f"cannot split {L} layers into {S} stages")
    per = np.concatenate([[0.0], np.cumsum([float(layer_time(layers, i, B)) for i in range(L)])])
    fixed = 2 * m_ref * op_cpu(prof)
    speed = [_speed(q) for q in quotas]

    def stage(s: int, i: int, j: int) -> float:  # stage s (1-based) holding layers [i, j)
        if limit_bytes is not None and stage_least_bytes(prof, i, j, s - 1, S, B, mmax,
                                                         optimizer_state_factor) > limit_bytes:
            return float("inf")  # cannot fit the plan of least memory
        return (per[j] - per[i] + fixed) / speed[s - 1]

    slowest, cuts = chain_split(L, S, stage, max)
    if not np.isfinite(slowest):  # no split fits the limit: the split for time (the plans say none fits)
        return choose_cuts(prof, quotas, B, m_ref)
    return chain_split(L, S, stage, lambda acc, t: acc + t * t, cap=slowest * (1 + TIE_REL))[1]


def chain_split(L: int, S: int, stage, combine, cap: float = float("inf")) -> tuple[float, list[int]]:
    """The contiguous split of ``L`` layers into ``S`` stages (in order) that minimises the
    stages' costs combined by ``combine(acc, t)`` (``max``: the largest; a sum), where
    ``stage(s, i, j)`` is the cost of stage ``s`` (1-based) holding layers [i, j) and no stage may
    cost more than ``cap`` (chain DP); returns (that least, the cuts)."""
    INF = float("inf")
    best = np.full((S + 1, L + 1), INF)
    arg = np.zeros((S + 1, L + 1), dtype=int)
    best[0, 0] = 0.0
    for s in range(1, S + 1):
        for j in range(s, L - (S - s) + 1):
            for i in range(s - 1, j):
                if best[s - 1, i] == INF:
                    continue
                t = stage(s, i, j)
                if t > cap:
                    continue
                c = combine(best[s - 1, i], t)
                if c < best[s, j]:
                    best[s, j], arg[s, j] = c, i
    cuts, j = [], L
    for s in range(S, 1, -1):
        j = int(arg[s, j])
        cuts.append(j)
    return float(best[S, L]), cuts[::-1]


def stage_least_bytes(prof: dict, lo: int, hi: int, s: int, S: int, B: int, mmax: int = 16,
                      optimizer_state_factor: float = 3.0) -> float:
    """Memory of stage ``s`` (0-based, of ``S``) holding layers [lo, hi) under the plan of least
    memory as ``family.least_memory`` reckons it: 1F1B with M = the most microbatches (at most
    ``mmax``, of at least the model's least size), stage s holding min(S - s, M) of the
    largest of them at once, and its static bytes."""
    layers = prof["cpu"]["layers"][lo:hi]
    least = max(1, int(prof.get("min_microbatch", 1)))
    M = max(1, min(int(mmax), B // least))
    held = min(S - s, M) * -(-B // M)  # equal_sizes puts the larger microbatches first
    return sum(static_bytes(x, optimizer_state_factor) + held * float(x["stash_bytes_per_sample"]) for x in layers)


def static_bytes(layer: dict, optimizer_state_factor: float = 3.0) -> float:
    """A profiled layer's bytes whatever the plan: its parameters, the gradients and optimizer
    state of the trainable ones (``optimizer_state_factor - 1`` copies: SGD's gradient and
    momentum), and its buffers. A profile without ``trainable_bytes`` (before 2026-11-28) counts
    every parameter as trainable; until then frozen parameters counted three times (a model
    whose frozen stage was its fullest was told no plan fits at 3x its weights) and buffers
    not at all."""
    p = float(layer["param_bytes"])
    return (p + float(layer.get("buffer_bytes", 0.0))
            + (optimizer_state_factor - 1) * float(layer.get("trainable_bytes", p)))


def fits_at_all(prof: dict, cuts: Sequence[int], S: int, B: int, limit_bytes: float | None, mmax: int = 16,
                optimizer_state_factor: float = 3.0) -> bool:
    """Whether every stage of the split ``cuts`` fits ``limit_bytes`` under the plan of least
    memory (:func:`stage_least_bytes`)."""
    if limit_bytes is None:
        return True
    bounds = [0, *cuts, len(prof["cpu"]["layers"])]
    return all(stage_least_bytes(prof, a, b, s, S, B, mmax, optimizer_state_factor) <= limit_bytes
               for s, (a, b) in enumerate(zip(bounds, bounds[1:])))


def least_bytes_of_any_split(prof: dict, S: int, B: int, mmax: int = 16,
                             optimizer_state_factor: float = 3.0) -> tuple[float, list[int]]:
    """The least memory on the fullest stage over every split of the layers into ``S`` stages
    (:func:`stage_least_bytes`, a min-max chain DP), and that split's cuts: what a memory limit
    must allow for any plan to fit, whichever the split."""
    return chain_split(len(prof["cpu"]["layers"]), S,
                       lambda s, i, j: stage_least_bytes(prof, i, j, s - 1, S, B, mmax, optimizer_state_factor), max)


TIE_REL = 0.02  # splits whose slowest stages are this close are told apart by the other stages


def layer_stage_cpu(prof: dict, lo: int, hi: int, B: int) -> dict:
    """Uncalibrated CPU curves of a stage holding layers [lo, hi): the sum of the layers' fits
    plus the profiled per-microbatch overhead, refitted to ``alpha + beta * max(b, knee)`` over
    b = 1..B (one knee for both directions; b = 1, 2 for B = 1: a fit needs two points, and a
    minibatch of one sample failed every command with "need at least two (size, time) points"
    until 2026-11-28), and the layers' optimizer steps as the tail."""
    layers = prof["cpu"]["layers"]
    bs = np.arange(1, max(int(B), 2) + 1)
    over = float(prof["cpu"].get("overhead", 0.0))
    tf = over / 2 + sum(layer_time(layers, i, bs, "fwd") for i in range(lo, hi))
    tb = over / 2 + sum(layer_time(layers, i, bs, "bwd") for i in range(lo, hi))
    ff = fit_knee(bs, tf)
    z = np.maximum(bs, ff["knee"])
    c1, c0 = np.polyfit(z, tb, 1)
    fb = dict(alpha=max(float(c0), 0.0), beta=max(float(c1), 0.0), knee=ff["knee"])
    return dict(fwd=ff, bwd=fb, tail=sum(float(layers[i]["opt"]) for i in range(lo, hi)))


def least_microbatch(prof: dict, B: int) -> int:
    """The fewest samples a microbatch of the profiled model may have (``min_microbatch``: 2 for
    a BatchNorm, found by the profiler); ValueError when the minibatch ``B`` is below it (every
    plan was "(nothing fits)" without a reason until 2026-11-28)."""
    least = int(prof.get("min_microbatch", 1))
    if B < least:
        raise ValueError(f"--batch {B}: {prof['model']} trains only on microbatches of {least} samples or more "
                         f"(the profiler found it, e.g. a BatchNorm refuses one sample)")
    return least


def build(prof: dict, B: int, quotas: Sequence[float | None], cuts: Sequence[int] | None = None,
          optimizer_state_factor: float = 3.0, calibrated: bool = True,
          limit_bytes: float | None = None, mmax: int = 16) -> PipelineCosts:
    """Cost model for stages on the given quotas (``cuts`` chosen by :func:`choose_cuts` if
    None: the calibration's split unless a stage of it cannot fit ``limit_bytes``). ``info``
    records cuts, quotas, the CFS budget, per-stage static memory (parameters,
    gradients and the optimizer's momentum: ``optimizer_state_factor`` x parameter bytes) and
    stashed bytes per sample, for memory limits."""
    S = len(quotas)
    quotas = list(quotas)
    chosen = cuts is None
    cal = prof.get("calibration") if calibrated else None
    if (cuts is None and cal and len(cal.get("cuts", [])) == S - 1
            and fits_at_all(prof, cal["cuts"], S, B, limit_bytes, mmax, optimizer_state_factor)):
        cuts = cal["cuts"]  # the split the calibration ran on
    cuts = list(choose_cuts(prof, quotas, B, limit_bytes=limit_bytes, optimizer_state_factor=optimizer_state_factor,
                            mmax=mmax) if cuts is None else cuts)
    layers = prof["cpu"]["layers"]
    L = len(layers)
    bounds = [0, *cuts, L]
    if len(bounds) != S + 1 or any(b <= a for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"cuts {cuts} do not split {L} layers into {S} stages")
    use_cal = bool(cal) and list(cal.get("cuts", [])) == cuts and len(cal.get("stages", [])) == S
    lat, per = float(prof["link"]["latency"]), float(prof["link"]["per_byte"])
    fa, fb, ba, bb, kn, sl, sb, tail, static, stash, names = ([] for _ in range(11))
    for s, q in enumerate(quotas):
        lo, hi = bounds[s], bounds[s + 1]
        st = cal["stages"][s] if use_cal else layer_stage_cpu(prof, lo, hi, B)
        v = _speed(q)
        knee = float(st["fwd"]["knee"])
        fa.append(float(st["fwd"]["alpha"]) / v)
        fb.append(float(st["fwd"]["beta"]) / v)
        # the cost model has one knee per stage: backward is evaluated with forward's knee
        ba.append(float(st["bwd"]["alpha"]) / v)
        bb.append(float(st["bwd"]["beta"]) / v)
        kn.append(knee)
        tail.append(float(st["tail"]) / v)
        out_b = float(layers[hi - 1]["out_bytes_per_sample"])
        sl.append(lat)
        sb.append(per * out_b)
        static.append(sum(static_bytes(x, optimizer_state_factor) for x in layers[lo:hi]))
        stash.append(sum(float(l["stash_bytes_per_sample"]) for l in layers[lo:hi]))
        names.append(f"q{quota_key(q)}[{lo}:{hi}]")
    if use_cal and cal.get("link_latency") is not None:
        sl = [float(cal["link_latency"])] * S
    info = dict(workload=prof["model"], cuts=cuts, quotas=quotas, static_bytes=static,
                stash_bytes_per_sample=stash, profile=True, calibrated=use_cal)
    # the smallest microbatch the model trains on at all (BatchNorm needs 2): no plan may use less
    least = int(prof.get("min_microbatch", 1))
    if least > 1:
        info["min_microbatch"] = least
    if use_cal:
        # the smallest microbatch the calibration measured: below it the in-situ fit is an
        # extrapolation (it made plans with 1- and 2-sample microbatches look faster than they ran)
        sizes = [min(st["measured"]["sizes"]) for st in cal["stages"] if st.get("measured")]
        if sizes:
            info["bmin"] = max(int(min(sizes)), least)
    elif least > 1:
        info["bmin"] = least
    if chosen and limit_bytes is not None and not fits_at_all(prof, cuts, S, B, limit_bytes, mmax,
                                                              optimizer_state_factor):
        # no split fits (choose_cuts then takes the split for time): what "no plan fits" says a plan
        # needs is the least of any split, not of this one (until 2026-11-28 a CNN under 0.2 MB was
        # told 0.604 MB, the time split's, where another split needs 0.298)
        info["least_any_split"] = least_bytes_of_any_split(prof, S, B, mmax, optimizer_state_factor)
    if any(q is not None and q < 1.0 for q in quotas):
        info["cfs"] = dict(quota=quotas, period_s=float(prof.get("cfs_period_s", DEFAULT_PERIOD_S)))
    return PipelineCosts.from_arrays(B, fa, fb, ba, bb, kn, sl, sb, None, None, tail, names=names, info=info)


def memory_bytes(costs: PipelineCosts, peak_samples: Sequence[int]) -> list[float]:
    """Per-stage memory of a plan: static bytes + peak stashed samples x bytes per sample."""
    st = costs.info.get("static_bytes")
    sp = costs.info.get("stash_bytes_per_sample")
    if st is None or sp is None:
        raise ValueError("this cost model has no memory figures (build it from a profile)")
    return [float(a + p * b) for a, b, p in zip(st, sp, peak_samples)]
