"""int32 fixed-point quantization with overflow detection and an adaptive, agreed scale.

A value ``x`` is sent as ``q = round(x * 2**f)`` in int32 (two's complement).  All workers
of a job must use the same exponent ``f`` in an iteration, or the switch's integer sum is
meaningless.  :class:`AdaptiveScale` derives ``f`` only from data every worker shares (the
previous iteration's *aggregated* result and the OVERFLOW flags that came back with it), so
every worker computes the same ``f`` without exchanging a message:

* iteration 1 uses the configured ``f0``;
* after an iteration whose result had max magnitude ``R``, the next exponent leaves room
  for ``n`` contributions of up to ``headroom * R`` each (SwitchML's INT32_MAX / (n * 2**e)
  rule, with ``R`` as the estimate of the per-worker maximum);
* an iteration that came back with OVERFLOW is redone with ``f`` lowered by
  ``ceil(log2 n) + 1`` bits (:meth:`AdaptiveScale.on_overflow`).

Rounding is round-half-to-even (``numpy.rint``).  The exponent travels in the header's
signed ``exp`` byte so helpers can reject a contribution made with another scale.

A scale agreed *before* the data instead of after it (the torch switch engine) starts from each
worker's largest magnitude: :func:`amax_exponent` gives its binary exponent E (with codes for
"all zero" and "not finite"), the workers agree on the largest E, and :func:`frac_bits` turns
it into ``f`` for ``n`` contributions; :func:`quant_step_error` is the rounding bound per value.
This module is the one float <-> int32 layer of the project.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
EXP_MIN, EXP_MAX = -100, 100  # the header's exp byte is int8; keep a margin


# amax_exponent's codes (the exponent of a finite non-zero float32 is in -148..128)
E_ZERO = -(1 << 20)       # every element is 0
E_NONFINITE = 1 << 20     # some element is inf or nan


def quantize(x: np.ndarray, f: int) -> tuple[np.ndarray, bool]:
    """``(q, clipped)``: ``q = clip(rint(x * 2**f))`` as int32; ``clipped`` if any lane was
    outside int32 (or not finite)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.rint(np.ldexp(x, f))
    bad = ~np.isfinite(y)
    clipped = bool(bad.any()) or bool((y > INT32_MAX).any()) or bool((y < INT32_MIN).any())
    if clipped:
        y = np.where(bad, 0.0, y)
        y = np.clip(y, INT32_MIN, INT32_MAX)
    return y.astype(np.int32), clipped


def dequantize(q: np.ndarray, f: int, dtype=np.float32) -> np.ndarray:
    return np.ldexp(np.asarray(q, dtype=np.float64), -f).astype(dtype)


def sat_add(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
    """Saturating int32 add, as the switch does it: ``(sum, clipped)``."""
    s = a.astype(np.int64) + b.astype(np.int64)
    clipped = bool((s > INT32_MAX).any() or (s < INT32_MIN).any())
    if clipped:
        s = np.clip(s, INT32_MIN, INT32_MAX)
    return s.astype(np.int32), clipped


def sat32(acc: np.ndarray) -> tuple[np.ndarray, bool]:
    """Clip an int64 accumulator to int32: ``(values, clipped)``."""
    clipped = bool((acc > INT32_MAX).any() or (acc < INT32_MIN).any())
    if clipped:
        acc = np.clip(acc, INT32_MIN, INT32_MAX)
    return acc.astype(np.int32), clipped


def exp_for(amax: float, n: int, headroom: float = 1.0) -> int:
    """Largest ``f`` such that ``n * headroom * amax * 2**f`` stays below 2**31."""
    m = float(amax) * headroom * max(1, n)
    if not math.isfinite(m):
        return EXP_MIN
    if m <= 0.0:
        return EXP_MAX
    f = math.floor(31 - math.log2(m)) - 1   # one bit of margin for rounding
    return max(EXP_MIN, min(EXP_MAX, f))


@dataclass
class AdaptiveScale:
    """The job-wide exponent, updated identically on every worker."""
    n: int
    f: int = 16
    headroom: float = 4.0
    adapt: bool = True
    overflows: int = 0

    def after_result(self, result_amax: float) -> int:
        """Update ``f`` from the magnitude of an aggregated result; returns the new ``f``."""
        if self.adapt and result_amax > 0 and math.isfinite(result_amax):
            self.f = exp_for(result_amax, self.n, self.headroom)
        return self.f

    def on_overflow(self) -> int:
        """Lower ``f`` after an iteration that overflowed; returns the new ``f``."""
        self.overflows += 1
        self.f = max(EXP_MIN, self.f - (math.ceil(math.log2(max(2, self.n))) + 1))
        return self.f


def amax_exponent(amax: float) -> int:
    """E with ``amax <= 2**E`` (frexp: amax = m * 2**E, 0.5 <= m < 1); :data:`E_ZERO` for 0 and
    :data:`E_NONFINITE` for inf/nan."""
    if not math.isfinite(amax):
        return E_NONFINITE
    if amax == 0.0:
        return E_ZERO
    return int(math.frexp(amax)[1])


def frac_bits(e_max: int, n: int, fixed: int | None = None) -> int:
    """The exponent ``f`` for ``n`` contributions bounded by ``2**e_max``: :func:`exp_for`
    (neither a contribution nor the switch's sum can clip), or ``fixed`` when configured."""
    if fixed is not None:
        return int(fixed)
    if e_max == E_ZERO:
        return EXP_MAX
    return exp_for(math.ldexp(1.0, e_max), n, headroom=1.0)


def quant_step_error(f: int) -> float:
    """Largest ``|rint(x * 2**f) / 2**f - x|`` of one quantized value: half a unit of 2**-f."""
    return math.ldexp(0.5, -f)
