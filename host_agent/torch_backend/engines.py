"""Allreduce engines: the seam between the torch backend and whatever sums the gradients.

``AllreduceEngine.allreduce(x: np.ndarray[float32], op) -> np.ndarray[float32]`` is called on every
rank of a group in the same order (from the group's single collective thread). ``op`` is ``"sum"``
or ``"avg"``. ``error_bound(values, world)`` states, per element, how far the engine's result may
be from the exact real-number sum; tests assert exactly that bound.

* :class:`HostRingEngine` -- ring reduce-scatter + all-gather over the host TCP mesh. Exact up to
  float32 rounding. It is also the "host-only ring" baseline of the evaluation.
* :class:`SwitchEngine` -- SA-ATP in-network aggregation. The engine itself lives in
  ``host_agent.sa_atp_engine`` (written beside this package); this class only loads it and
  checks that it keeps the protocol documented in docs/torch-backend.md. If the module is
  missing, constructing a SwitchEngine raises :class:`SwitchEngineUnavailable` naming it.
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

log = logging.getLogger("saatp.torch_backend")

SWITCH_MODULE = "host_agent.sa_atp_engine"
OPS = ("sum", "avg")
_EPS32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff u of float32


def _check_op(op: str) -> str:
    if op not in OPS:
        raise ValueError(f"allreduce engine: op must be one of {OPS}, got {op!r}")
    return op


def _abs_sum(values, world: int) -> np.ndarray:
    """Per-element sum of |contribution| from ``values``: shape (world, N) contributions, or (N,)
    already holding sum_r |x_r|."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 2:
        if v.shape[0] != world:
            raise ValueError(f"error_bound: values has {v.shape[0]} rows, expected world={world}")
        return np.abs(v).sum(axis=0)
    return np.abs(v)


class AllreduceEngine:
    """Interface. Subclasses implement :meth:`_sum` (or override :meth:`allreduce`)."""

    name = "abstract"

    def __init__(self, world: int):
        self.world = world

    def allreduce(self, x: np.ndarray, op: str = "sum") -> np.ndarray:
        _check_op(op)
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        out = self._sum(x)
        if op == "avg":
            out = out / np.float32(self.world)
        return out

    def _sum(self, x: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def error_bound(self, values, world: int | None = None, op: str = "sum") -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name

    def abort(self) -> None:
        """The group failed: give up any operation in flight (called from another thread)."""

    def close(self) -> None:
        pass


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
        bound = gamma * _abs_sum(values, world)
        if _check_op(op) == "avg":
            # the division adds one more rounding of a value of size <= (1+gamma) sum|x| / n
            bound = (bound + 2 * _EPS32 * _abs_sum(values, world)) / world
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


# ---------------------------------------------------------------------------------------------
# Switch engine seam
# ---------------------------------------------------------------------------------------------
class SwitchEngineUnavailable(ImportError):
    pass


@dataclass
class EngineContext:
    """What the backend hands to ``host_agent.sa_atp_engine`` (see docs/torch-backend.md)."""

    rank: int
    world_size: int
    timeout_s: float
    job_id: int
    switch_addr: str | None  # "host:port", or None before the switch is known
    options: Any  # SAATPOptions (resolved)
    global_ranks: list[int] = field(default_factory=list)
    store_set: Callable[[str, bytes], None] | None = None  # keys are namespaced per group
    store_get: Callable[[str], bytes] | None = None  # blocks until the key exists or timeout
    host: str = "127.0.0.1"
    # monotonic deadline of the collective now running (from the group timeout); an engine's
    # allreduce must return or raise by then
    deadline: Callable[[], float | None] = lambda: None

    def allgather_bytes(self, name: str, value: bytes) -> list[bytes]:
        """Publish ``value`` under ``name`` for this rank and return every rank's value, in rank
        order (e.g. each worker's UDP address). Blocks up to the group timeout."""
        if self.store_set is None or self.store_get is None:
            raise RuntimeError("EngineContext has no store")
        self.store_set(f"{name}/{self.rank}", bytes(value))
        return [self.store_get(f"{name}/{r}") for r in range(self.world_size)]


def load_switch_module():
    """Import ``host_agent.sa_atp_engine`` or raise :class:`SwitchEngineUnavailable` saying why."""
    try:
        mod = importlib.import_module(SWITCH_MODULE)
    except ImportError as e:
        raise SwitchEngineUnavailable(
            f"saatp: the switch allreduce engine needs module {SWITCH_MODULE!r}, which could not be "
            f"imported ({type(e).__name__}: {e}). Use engine='ring' (SAATP_ENGINE=ring) for the "
            f"host-only ring, or install/finish {SWITCH_MODULE}."
        ) from e
    if not callable(getattr(mod, "create_engine", None)):
        raise SwitchEngineUnavailable(
            f"saatp: module {SWITCH_MODULE!r} was imported but has no create_engine(ctx) function; "
            f"see docs/torch-backend.md for the engine protocol"
        )
    return mod


def switch_available() -> tuple[bool, str]:
    try:
        load_switch_module()
        return True, ""
    except SwitchEngineUnavailable as e:
        return False, str(e.__cause__ or e)
    except Exception as e:  # a broken module must not break the backend in auto mode
        return False, f"{type(e).__name__}: {e}"


class SwitchEngine(AllreduceEngine):
    """SA-ATP switch-aggregated allreduce, delegated to ``host_agent.sa_atp_engine.create_engine``.

    The delegate must provide ``allreduce(x: float32 ndarray, op: "sum"|"avg") -> ndarray`` and
    ``error_bound(values, world, op="sum") -> ndarray``; ``close()`` is optional.
    """

    name = "switch"

    def __init__(self, ctx: EngineContext):
        super().__init__(ctx.world_size)
        mod = load_switch_module()
        self.ctx = ctx
        self.impl = mod.create_engine(ctx)
        for meth in ("allreduce", "error_bound"):
            if not callable(getattr(self.impl, meth, None)):
                raise SwitchEngineUnavailable(
                    f"saatp: {SWITCH_MODULE}.create_engine returned {type(self.impl).__name__}, "
                    f"which lacks {meth}(); see docs/torch-backend.md"
                )

    def allreduce(self, x: np.ndarray, op: str = "sum") -> np.ndarray:
        _check_op(op)
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        out = np.asarray(self.impl.allreduce(x, op), dtype=np.float32).reshape(-1)
        if out.shape != x.shape:
            raise RuntimeError(f"saatp: switch engine returned {out.shape[0]} elements for an input of {x.shape[0]}")
        return out

    def error_bound(self, values, world: int | None = None, op: str = "sum") -> np.ndarray:
        return np.asarray(self.impl.error_bound(values, self.world if world is None else world, op))

    def describe(self) -> str:
        return f"switch ({self.ctx.switch_addr or 'embedded'}, job {self.ctx.job_id})"

    def abort(self) -> None:
        abort = getattr(self.impl, "abort", None)
        if callable(abort):
            abort()

    def close(self) -> None:
        close = getattr(self.impl, "close", None)
        if callable(close):
            close()
