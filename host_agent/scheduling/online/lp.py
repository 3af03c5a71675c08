"""The "linear solving" step of the online planner: the uneven data split.

For a fixed structure every group's batch time is (after relaxing the ceiling on the
number of microbatches) affine in its share of the batch, ``T_g(b) = alpha_g + gamma_g * b``.
The split that minimises the slowest group is the LP

    min tau  s.t.  tau >= alpha_g + gamma_g b_g,  sum_g b_g = B,  0 <= b_g <= u_g

whose solution is water-filling: every group that gets data finishes at the same ``tau``.
Without caps and with all groups active the closed form is

    tau* = (B + sum alpha_g/gamma_g) / sum 1/gamma_g,   b_g = (tau* - alpha_g) / gamma_g.

:func:`waterfill` solves the general case (groups dropped when ``b_g`` would be negative,
memory caps ``u_g``) exactly by walking the breakpoints of the piecewise-linear, monotone
function ``f(tau) = sum_g clip((tau - alpha_g)/gamma_g, 0, u_g)``.
"""

from __future__ import annotations

import math

import numpy as np


def waterfill_closed_form(alpha, gamma, B: float) -> tuple[float, np.ndarray]:
    """The textbook closed form (all groups active, no caps); may return negative shares."""
    a = np.asarray(alpha, dtype=float)
    g = np.asarray(gamma, dtype=float)
    tau = (B + np.sum(a / g)) / np.sum(1.0 / g)
    return float(tau), (tau - a) / g


def waterfill(alpha, gamma, B: float, upper=None) -> tuple[float, np.ndarray]:
    """Exact solution of the min-max split LP. Returns ``(tau, b)`` with ``sum(b) == B``.

    ``alpha >= 0`` and ``gamma > 0`` per group; ``upper`` (optional) caps each share.
    Raises ``ValueError`` if the caps cannot hold ``B`` or the input is malformed.
    """
    a = np.asarray(alpha, dtype=float).ravel()
    g = np.asarray(gamma, dtype=float).ravel()
    if a.size == 0 or a.shape != g.shape:
        raise ValueError("waterfill: alpha and gamma must be non-empty and of equal length")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(g)) and np.all(g > 0)):
        raise ValueError("waterfill: alpha must be finite and gamma finite and > 0")
    if not (B >= 0 and math.isfinite(B)):
        raise ValueError(f"waterfill: B must be finite and >= 0, got {B}")
    u = np.full_like(a, np.inf) if upper is None else np.asarray(upper, dtype=float).ravel()
    if u.shape != a.shape or np.any(u < 0):
        raise ValueError("waterfill: upper must be >= 0 and match alpha")
    if np.sum(u) < B * (1 - 1e-12):
        raise ValueError(f"waterfill: caps sum to {np.sum(u):g} < B = {B:g}")
    if B == 0:
        return float(np.min(a)), np.zeros_like(a)

    def f(tau):
        return np.sum(np.clip((tau - a) / g, 0.0, u))

    # breakpoints: where a group starts receiving data and where it hits its cap
    ends = a + g * u
    bps = np.unique(np.concatenate([a, ends[np.isfinite(ends)]]))
    vals = np.array([f(t) for t in bps])
    k = int(np.searchsorted(vals, B, side="left"))
    if k < len(bps) and vals[k] == B:
        tau = float(bps[k])
    else:
        # f is linear on [bps[k-1], bps[k]] (or beyond the last breakpoint); slope = sum 1/gamma of
        # groups strictly between start and cap on that segment
        lo = bps[k - 1] if k > 0 else bps[0]
        mid = lo + (1.0 if k >= len(bps) else 0.5 * (bps[k] - lo))
        active = (a < mid) & (mid < ends)
        slope = np.sum(1.0 / g[active])
        tau = float(lo + (B - f(lo)) / slope)
    b = np.clip((tau - a) / g, 0.0, u)
    # remove floating-point drift so that the shares sum to B exactly
    free = (b > 0) & (b < u)
    if np.any(free):
        b[free] += (B - b.sum()) * (1.0 / g[free]) / np.sum(1.0 / g[free])
    return tau, b


def waterfill_bisect(alpha, gamma, B: float, upper=None, iters: int = 100) -> float:
    """Independent check of :func:`waterfill`: bisection on ``tau`` (returns tau only)."""
    a = np.asarray(alpha, dtype=float)
    g = np.asarray(gamma, dtype=float)
    u = np.full_like(a, np.inf) if upper is None else np.asarray(upper, dtype=float)
    lo, hi = float(np.min(a)), float(np.max(a + g * np.minimum(u, B)) + 1.0)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if np.sum(np.clip((mid - a) / g, 0, u)) >= B:
            hi = mid
        else:
            lo = mid
    return hi


def round_shares(b, B: int, upper=None) -> np.ndarray:
    """Largest-remainder rounding of fractional shares to integers summing to ``B``,
    never above ``floor(upper)``."""
    b = np.asarray(b, dtype=float)
    u = np.full(b.shape, np.inf) if upper is None else np.floor(np.asarray(upper, dtype=float) + 1e-9)
    base = np.minimum(np.floor(b + 1e-9), u)
    rest = int(B - base.sum())
    if rest < 0:  # can only happen through the caps' floor; take from the largest
        for i in np.argsort(-base):
            take = min(int(base[i]), -rest)
            base[i] -= take
            rest += take
            if rest == 0:
                break
    frac = b - base
    order = np.argsort(-frac, kind="stable")
    i = 0
    guard = 0
    while rest > 0:
        j = order[i % len(order)]
        if base[j] + 1 <= u[j]:
            base[j] += 1
            rest -= 1
        i += 1
        guard += 1
        if guard > 10 * (len(order) + B):
            raise ValueError("round_shares: caps leave no room for B samples")
    return base.astype(int)
