"""Helpers shared by the SA-ATP tests."""
import numpy as np


def rand_qs(rng, n, elems, lim=1 << 20):
    return [rng.integers(-lim, lim, size=elems, dtype=np.int32) for _ in range(n)]


def exact(qs):
    s = np.sum(np.stack(qs).astype(np.int64), axis=0)
    return np.clip(s, -(1 << 31), (1 << 31) - 1)
