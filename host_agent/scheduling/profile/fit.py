"""Fits of measured times: ``t(b) = alpha + beta * max(b, knee)`` and ``t(n) = lat + n * per``."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def fit_knee(sizes: Sequence[float], times: Sequence[float]) -> dict:
    """Least squares (relative error) over knee in {0} + sizes; alpha, beta >= 0."""
    b = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if b.shape != t.shape or b.size < 2:
        raise ValueError("need at least two (size, time) points")
    w = 1.0 / np.maximum(t, 1e-9)  # relative error: small microbatches matter as much as large
    best = None
    for knee in [0.0, *sorted(set(b.tolist()))]:
        z = np.maximum(b, knee)
        A = np.stack([np.ones_like(z), z], axis=1) * w[:, None]
        coef, *_ = np.linalg.lstsq(A, t * w, rcond=None)
        a, be = float(coef[0]), float(coef[1])
        if a < 0 or be < 0:  # clamp, refit the other
            if be < 0:
                a, be = float(np.sum(t * w * w) / np.sum(w * w)), 0.0
            else:
                a, be = 0.0, float(np.sum(z * t * w * w) / np.sum(z * z * w * w))
        pred = a + be * np.maximum(b, knee)
        err = float(np.sum(((pred - t) * w) ** 2))
        if best is None or err < best[0] - 1e-12:
            best = (err, a, be, knee)
    _, a, be, knee = best
    pred = a + be * np.maximum(b, knee)
    return dict(alpha=a, beta=be, knee=knee, max_rel_err=float(np.max(np.abs(pred - t) / np.maximum(t, 1e-12))))


def eval_knee(f: dict, b) -> np.ndarray:
    b = np.asarray(b, dtype=float)
    return np.where(b > 0, f["alpha"] + f["beta"] * np.maximum(b, f["knee"]), 0.0)


def fit_line(x: Sequence[float], t: Sequence[float]) -> tuple[float, float]:
    """``t = c0 + c1 * x`` by least squares, both clamped at >= 0."""
    x = np.asarray(x, dtype=float)
    t = np.asarray(t, dtype=float)
    c1, c0 = np.polyfit(x, t, 1) if x.size >= 2 else (0.0, float(t.mean()))
    return max(float(c0), 0.0), max(float(c1), 0.0)
