"""The allreduce engine interface: the seam between the torch backend and whatever sums the gradients.

``AllreduceEngine.allreduce(x: np.ndarray[float32], op) -> np.ndarray[float32]`` is called on every
rank of a group in the same order (from the group's single collective thread). ``op`` is ``"sum"``
or ``"avg"``. ``error_bound(values, world)`` states, per element, how far the engine's result may
be from the exact real-number sum; tests assert exactly that bound.

* :class:`~host_agent.torch_backend.ring_engine.HostRingEngine` -- ring reduce-scatter + all-gather
  over the host TCP mesh; also the "host-only ring" baseline of the evaluation.
* :class:`~host_agent.torch_backend.switch_engine.SwitchAllreduceEngine` -- SA-ATP in-network
  aggregation through a switch.

:mod:`.engine_choice` picks one per group.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

log = logging.getLogger("saatp.torch_backend")

OPS = ("sum", "avg")
_EPS32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff u of float32


def check_op(op: str) -> str:
    if op not in OPS:
        raise ValueError(f"allreduce engine: op must be one of {OPS}, got {op!r}")
    return op


def abs_sum(values, world: int) -> np.ndarray:
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
        check_op(op)
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

    # set by the process group: an engine that finds its group broken outside a collective (the
    # switch died) reports it here, and the group fails every pending and later operation
    on_failure: Callable[[str], None] | None = None

    def abort(self, why: str = "the process group failed") -> None:
        """The group failed: give up any operation in flight (called from another thread)."""

    def close(self) -> None:
        pass


class SwitchEngineUnavailable(ImportError):
    """The switch engine cannot be used here (its command or program is missing)."""


class SwitchEngineError(RuntimeError):
    """The switch engine could not do its job (set-up, switch gone, bad data)."""


@dataclass
class EngineContext:
    """What the backend hands to an engine that needs more than the host mesh (see docs/torch-backend.md)."""

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
    store: Any = None  # the group's c10d store (the root store under it is shared by all groups)
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
