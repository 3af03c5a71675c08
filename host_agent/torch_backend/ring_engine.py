"""Ring all-reduce over the host TCP mesh: reduce-scatter then all-gather, 2(n-1) steps.

Exact up to float32 rounding; also the "host-only ring" baseline of the evaluation.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .engines import _EPS32, AllreduceEngine, abs_sum, check_op


class HostRingEngine(AllreduceEngine):
    """Ring all-reduce over the host mesh (reduce-scatter then all-gather, 2(n-1) steps)."""

    name = "ring"

    def __init__(self, mesh, deadline_fn: Callable[[], float | None] = lambda: None):
        super().__init__(mesh.world)
        self.mesh = mesh
        self.deadline_fn = deadline_fn
        self._calls = 0

    def _sum(self, x: np.ndarray) -> np.ndarray:
        self._calls += 1
        return ring_allreduce(self.mesh, b"ring:%d" % self._calls, x, np.add, self.deadline_fn(), "allreduce")

    def error_bound(self, values, world: int | None = None, op: str = "sum") -> np.ndarray:
        # Recursive summation of n float32 terms: |err| <= gamma_{n-1} * sum|x_i|, gamma_k = k u/(1-k u)
        # (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., sec. 4.2); plus one
        # rounding of the final division for "avg".
        world = self.world if world is None else world
        k = max(world - 1, 0)
        gamma = k * _EPS32 / (1 - k * _EPS32)
        bound = gamma * abs_sum(values, world)
        if check_op(op) == "avg":
            # the division adds one more rounding of a value of size <= (1+gamma) sum|x| / n
            bound = (bound + 2 * _EPS32 * abs_sum(values, world)) / world
        # result is a float32: allow the tiny absolute rounding near zero, too
        return bound + float(np.finfo(np.float32).tiny)


def ring_allreduce(mesh, tag: bytes, x: np.ndarray, ufunc, deadline: float | None, what: str) -> np.ndarray:
    """Ring all-reduce of a 1-D numpy array with an element-wise ``ufunc`` (np.add, np.maximum...).

    After the reduce-scatter phase rank r holds the reduced chunk (r+1) mod n; the all-gather phase
    passes the reduced chunks around the ring. The result is identical on every rank.
    """
    n, r = mesh.world, mesh.rank
    buf = np.array(x, copy=True).reshape(-1)
    if n == 1 or buf.size == 0:
        return buf
    bounds = np.linspace(0, buf.size, n + 1).astype(np.int64)
    right, left = (r + 1) % n, (r - 1) % n
    for step in range(n - 1):  # reduce-scatter
        s, d = (r - step) % n, (r - step - 1) % n
        mesh.send(right, tag + b":rs:%d" % step, np.ascontiguousarray(buf[bounds[s]:bounds[s + 1]]), what)
        got = _as_array(mesh.recv(left, tag + b":rs:%d" % step, deadline, what), buf.dtype,
                        bounds[d + 1] - bounds[d], left, what)
        seg = buf[bounds[d]:bounds[d + 1]]
        ufunc(seg, got, out=seg)
    for step in range(n - 1):  # all-gather
        s, d = (r + 1 - step) % n, (r - step) % n
        mesh.send(right, tag + b":ag:%d" % step, np.ascontiguousarray(buf[bounds[s]:bounds[s + 1]]), what)
        got = _as_array(mesh.recv(left, tag + b":ag:%d" % step, deadline, what), buf.dtype,
                        bounds[d + 1] - bounds[d], left, what)
        buf[bounds[d]:bounds[d + 1]] = got
    return buf


class ShapeMismatch(RuntimeError):
    pass


def _as_array(data, dtype, count: int, peer: int, what: str) -> np.ndarray:
    want = int(count) * np.dtype(dtype).itemsize
    if len(data) != want:
        raise ShapeMismatch(
            f"{what}: rank {peer} sent {len(data)} bytes where {want} ({count} x {np.dtype(dtype).name}) "
            f"were expected: tensor sizes or dtypes differ between ranks")
    return np.frombuffer(data, dtype=dtype)
