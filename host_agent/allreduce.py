"""Float all-reduce on top of the int32 protocol: agreed adaptive scale, overflow retry.

Every worker quantizes with the same exponent ``f`` (from :class:`AdaptiveScale`, which
each worker updates identically from the shared result).  If any chunk comes back with
OVERFLOW, every worker sees it (the flag travels with the result), lowers ``f`` the same
way and the iteration is redone, so the caller always gets an unclipped sum.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .quantize import AdaptiveScale, dequantize, quantize


@dataclass
class FloatResult:
    sums: list[np.ndarray]          # per worker, float32
    f: int                          # exponent used by the successful attempt
    attempts: int
    time: float                     # virtual seconds over all attempts
    overflowed: list[int] = field(default_factory=list)   # f values that overflowed


def allreduce_float(job, xs: list[np.ndarray], scale: AdaptiveScale, delays=None,
                    max_attempts: int = 4, max_time: float = 120.0) -> FloatResult:
    """All-reduce one float vector per worker of ``job`` (a harness Job)."""
    total = 0.0
    bad: list[int] = []
    for attempt in range(1, max_attempts + 1):
        f = scale.f
        qs = [quantize(x, f)[0] for x in xs]   # a clipped input shows up as OVERFLOW too
        clipped = any(quantize(x, f)[1] for x in xs)
        r = job.run_iteration(qs, f, delays if attempt == 1 else None, max_time=max_time)
        total += r.time
        if not r.ok:
            raise TimeoutError(f"iteration {r.it} did not finish within {max_time} s")
        if any(r.overflow) or clipped:
            bad.append(f)
            scale.on_overflow()
            continue
        sums = [dequantize(s, f) for s in r.sums]
        scale.after_result(float(np.max(np.abs(sums[0]))) if len(sums[0]) else 0.0)
        return FloatResult(sums, f, attempt, total, bad)
    raise OverflowError(f"still overflowing after {max_attempts} attempts (f={scale.f})")
