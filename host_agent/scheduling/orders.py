"""Per-stage op orders for unequal-microbatch pipelines, and their predicted time and memory.

A pipeline plan gives each stage ``s`` its own forward microbatch sizes ``rows[s]`` (summing to
B; microbatch j of stage s holds samples ``[P[s,j-1], P[s,j])``) and an op order: a list of
``("F", j)`` / ``("B", j)``. The backward of microbatch j retraces forward microbatch j (the same
samples), so a stage only ever back-propagates through graphs it built. Between stages the
samples are re-chunked: F(s, j) waits until stage s-1 has sent every sample of its range, and
B(s, j) until stage s+1 has sent the input gradients of every sample of its range.

Two order families:

* ``fill-drain`` (GPipe): all forwards in order, then all backwards from the last microbatch;
  the whole minibatch is stashed at the peak.
* ``1f1b``: backwards in forward order, as early as possible, and a stage starts a new
  forward only while fewer than ``cap[s]`` microbatches are in flight (default ``S - s``,
  PipeDream-Flush's warm-up). With equal microbatches this is 1F1B. With unequal chunking a
  strict cap can deadlock (stage s+1 may need samples that stage s has not released yet); the
  order generator then lets the stuck upstream stage run one more forward, so every generated
  order is executable. The orders are found by an event simulation on the cost model; the
  runtime replays them verbatim (any order that completed in the simulation cannot deadlock
  with blocking receives and non-blocking sends).

``schedule(costs, rows, kind, cap)`` returns an :class:`OrderResult`: the orders, the predicted
iteration time (the same link model as :mod:`.costmodel`: each link direction serialised, a
stage's tail after its last op) and each stage's peak of stashed samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .costmodel import PipelineCosts

KINDS = ("fill-drain", "1f1b")


@dataclass
class OrderResult:
    makespan: float
    orders: list[list[tuple[str, int]]]
    peak_samples: list[int]  # per stage: max samples whose activations are stashed at once
    stage_end: list[float]
    events: list[tuple[int, str, int, float, float, int]] = field(default_factory=list)


def _check_rows(costs: PipelineCosts, rows: Sequence[Sequence[int]]) -> list[list[int]]:
    rows = [[int(v) for v in r if int(v) > 0] for r in rows]
    if len(rows) != costs.S:
        raise ValueError(f"plan has {len(rows)} stages, the cost model {costs.S}")
    for s, r in enumerate(rows):
        if sum(r) != costs.B:
            raise ValueError(f"stage {s}: microbatch sizes {r} sum to {sum(r)}, expected B={costs.B}")
    return rows


def fill_drain_orders(rows: Sequence[Sequence[int]]) -> list[list[tuple[str, int]]]:
    return [[("F", j) for j in range(len(r))] + [("B", j) for j in reversed(range(len(r)))] for r in rows]


def schedule(costs: PipelineCosts, rows: Sequence[Sequence[int]], kind: str = "fill-drain",
             cap: Sequence[int] | None = None, orders: Sequence[Sequence[tuple[str, int]]] | None = None,
             record: bool = False) -> OrderResult:
    """Simulate a plan. With ``orders`` the given per-stage orders are replayed (ValueError on
    a deadlock); otherwise ``kind`` generates them (``cap`` only for ``1f1b``)."""
    rows = _check_rows(costs, rows)
    S, B = costs.S, costs.B
    M = [len(r) for r in rows]
    starts = [[sum(r[:j]) for j in range(len(r) + 1)] for r in rows]
    if orders is None:
        if kind == "fill-drain":
            orders = fill_drain_orders(rows)
        elif kind != "1f1b":
            raise ValueError(f"unknown order kind {kind!r}; use one of {KINDS}")
    else:
        orders = [list(o) for o in orders]
        if len(orders) != S:
            raise ValueError(f"need {S} op orders")
        for s, o in enumerate(orders):
            if sorted(o) != sorted([("F", j) for j in range(M[s])] + [("B", j) for j in range(M[s])]):
                raise ValueError(f"stage {s}: the order must hold F and B of each of its {M[s]} microbatches once")
    fixed = orders is not None
    caps = [S - s for s in range(S)] if cap is None else [max(1, int(c)) for c in cap]
    if len(caps) != S:
        raise ValueError(f"cap needs {S} entries")
    tf = [[float(costs.tf(s, b)) for b in rows[s]] for s in range(S)]
    tb = [[float(costs.tb(s, b)) for b in rows[s]] for s in range(S)]
    cf = [[float(costs.cf(s, b)) for b in rows[s]] for s in range(S)]
    cb = [[float(costs.cb(s, b)) for b in rows[s]] for s in range(S)]
    act = [[None] * B for _ in range(S)]  # arrival time of sample i's activations at stage s
    grad = [[None] * B for _ in range(S)]  # arrival of sample i's output gradient at stage s
    act[0] = [0.0] * B
    fend = [[None] * M[s] for s in range(S)]
    bdone = [[False] * M[s] for s in range(S)]
    free = [0.0] * S
    linkf = [0.0] * S
    linkb = [0.0] * S
    nf = [0] * S  # next forward (forwards run in order in both families)
    ptr = [0] * S  # fixed orders: position
    border = [list(range(M[s])) for s in range(S)]  # 1f1b: backwards in forward order
    nb = [0] * S
    inflight = [0] * S
    stashed = [0] * S
    peak = [0] * S
    out_orders: list[list[tuple[str, int]]] = [[] for _ in range(S)]
    ev: list[tuple] = []
    left = 2 * sum(M)

    def ready_f(s: int, j: int):
        a, b = starts[s][j], starts[s][j + 1]
        ts = act[s][a:b]
        return None if any(t is None for t in ts) else max(ts)

    def ready_b(s: int, j: int):
        if fend[s][j] is None:
            return None
        if s == S - 1:
            return fend[s][j]
        a, b = starts[s][j], starts[s][j + 1]
        ts = grad[s][a:b]
        return None if any(t is None for t in ts) else max(max(ts), fend[s][j])

    while left:
        best = None  # (time, prefer, s, op)
        blocked_f = []
        for s in range(S):
            if fixed:
                if ptr[s] >= len(orders[s]):
                    continue
                k, j = orders[s][ptr[s]]
                r = ready_f(s, j) if k == "F" else ready_b(s, j)
                if r is None:
                    continue
                cand = (max(free[s], r), 0, s, (k, j))
            else:
                rb = ready_b(s, border[s][nb[s]]) if nb[s] < M[s] else None
                rf = ready_f(s, nf[s]) if nf[s] < M[s] else None
                if rf is not None and inflight[s] >= caps[s]:
                    blocked_f.append((max(free[s], rf), s))
                    rf = None
                t = free[s]
                if rb is not None and rb <= t:
                    cand = (t, 0, s, ("B", border[s][nb[s]]))
                elif rf is not None and rf <= t:
                    cand = (t, 1, s, ("F", nf[s]))
                elif rb is not None and (rf is None or rb <= rf):
                    cand = (rb, 0, s, ("B", border[s][nb[s]]))
                elif rf is not None:
                    cand = (rf, 1, s, ("F", nf[s]))
                else:
                    continue
            if best is None or cand[:3] < best[:3]:
                best = cand
        if best is None:
            if not fixed and blocked_f:
                s = min(blocked_f)[1]
                caps[s] += 1  # the stuck upstream stage releases one more microbatch
                continue
            raise ValueError("schedule deadlocks: " + ", ".join(
                f"stage {s} waits at {orders[s][ptr[s]]}" for s in range(S) if ptr[s] < len(orders[s])))
        t0, _, s, (k, j) = best
        a, b = starts[s][j], starts[s][j + 1]
        if k == "F":
            if j != nf[s]:
                raise ValueError(f"stage {s}: forwards must run in order (F{j} before F{nf[s]})")
            end = t0 + tf[s][j]
            fend[s][j] = end
            nf[s] += 1
            inflight[s] += 1
            stashed[s] += b - a
            peak[s] = max(peak[s], stashed[s])
            if record:
                ev.append((s, "F", j, t0, end, b - a))
            if s < S - 1:
                cst = max(linkf[s], end)
                linkf[s] = cst + cf[s][j]
                for i in range(a, b):
                    act[s + 1][i] = linkf[s]
                if record:
                    ev.append((s, "sendF", j, cst, linkf[s], b - a))
        else:
            end = t0 + tb[s][j]
            bdone[s][j] = True
            inflight[s] -= 1
            stashed[s] -= b - a
            if not fixed:
                nb[s] += 1
            if record:
                ev.append((s, "B", j, t0, end, b - a))
            if s > 0:
                cst = max(linkb[s], end)
                linkb[s] = cst + cb[s][j]
                for i in range(a, b):
                    grad[s - 1][i] = linkb[s]
                if record:
                    ev.append((s, "sendB", j, cst, linkb[s], b - a))
        free[s] = end
        out_orders[s].append((k, j))
        if fixed:
            ptr[s] += 1
        left -= 1
    ends = [free[s] + float(costs.tail[s]) for s in range(S)]
    return OrderResult(max(ends), out_orders, peak, ends, ev)


def predict(costs: PipelineCosts, rows, orders) -> float:
    """Predicted iteration time of a plan whose orders are given."""
    return schedule(costs, rows, orders=orders).makespan
