"""Server-side policies of CGP: staleness damping and the bounded-staleness (SSP) gate.

* Damping: a group update computed on version ``v_b`` and applied at ``v_now`` has staleness
  ``s = v_now - v_b`` and is scaled by ``h(s) = 1 / (1 + s)`` (DynSGD-style, ``inverse``;
  ``h = 1`` for plain ASP). The simulator's default is ``excess``, which damps only the
  staleness beyond what the grouping predicted for the group: in our runs damping the
  steady-state staleness of every update slowed convergence (see docs).
* Gate: an update may be applied only if, afterwards, every other in-flight update (one that
  is being computed or waits at the server) still has staleness ``<= s_max``. When every
  in-flight update waits and none may go alone, they are applied together as one version
  (a merged step), which keeps the bound and cannot deadlock.
"""

from __future__ import annotations

import numpy as np


def damping(s: int, kind: str = "inverse", expected: float = 0.0) -> float:
    """``h(s)``. ``excess`` damps only staleness beyond the grouping's prediction for the
    group (``1 / (1 + max(0, s - ceil(expected) - 1))``, one version of slack): the staleness every group sees in steady
    state is not penalised, unexpected staleness (a transient straggler) is."""
    if s < 0:
        raise ValueError(f"staleness must be >= 0, got {s}")
    if kind == "excess":
        # one version of slack on top of the prediction (PS queueing, jitter)
        return 1.0 / (1.0 + max(0.0, s - float(np.ceil(expected - 1e-9)) - 1.0))
    if kind == "none":
        return 1.0
    if kind == "inverse":
        return 1.0 / (1.0 + s)
    if kind == "sqrt":
        return (1.0 + s) ** -0.5
    raise ValueError(f"unknown damping {kind!r} (none, inverse, sqrt, excess)")


def gate_allows(v_now: int, group: int, in_flight: dict[int, int], s_max: int) -> bool:
    """May ``group``'s update be applied now? ``in_flight`` maps group -> base version of
    every update not yet applied (including ``group``'s own)."""
    return all(v_now + 1 - vb <= s_max for g, vb in in_flight.items() if g != group)
