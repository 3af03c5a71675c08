"""Dual-chromosome fill-drain plans scored like the plans that run.

A dual plan gives each stage its forward microbatch sizes ``X[s]`` and, independently, its
backward microbatch sizes ``Y[s]`` (taken from the back of the minibatch, as in
:mod:`..costmodel`). The runtime cannot execute one (a stage back-propagates only through the
graphs its own forward microbatches built), so such a plan exists only in the model; but to
say what the independent backward plan would buy, it must be scored by the same evaluator as
the executable plans: :func:`..orders.expected_makespan`, which for CPU-quota stages runs
every op through the stage's CFS budget (the fluid recurrence DGAP optimises does not model
that budget: on five profiles of an outside test it predicted 1.2-2.9x the simulation's
time for the same plan).

:func:`expected_makespan` is that evaluator for fill-drain plans with independent backward
rows: the same per-op durations, links, sample dependencies, tails, phase draws and
steady-state iteration as :mod:`..orders`. For ``Y = mirror(X)`` it gives exactly
``orders.expected_makespan(costs, X, fill_drain_orders(X))`` (tested), and without CPU quotas
it is the fluid recurrence (:func:`..costmodel.makespan`).
"""

from __future__ import annotations

from typing import Sequence

from ..costmodel import PipelineCosts
from ..orders import PHASE_DRAWS, PRECISION, CpuBandwidth, check_rows, steady_state_mean


class _Plan:
    """Per-op durations (fluid seconds, as in :class:`..orders._Plan`) of a dual plan."""

    def __init__(self, costs: PipelineCosts, X, Y):
        self.xr, self.yr = check_rows(costs, X, "forward"), check_rows(costs, Y, "backward")
        S = self.S = costs.S
        fa, fb, ba, bb, kn = (list(map(float, x)) for x in (costs.f_alpha, costs.f_beta, costs.b_alpha,
                                                                 costs.b_beta, costs.knee))
        sl, sb, gl, gb = (list(map(float, x)) for x in (costs.send_lat, costs.send_beta, costs.grad_lat,
                                                        costs.grad_beta))
        self.tf = [[fa[s] + fb[s] * max(b, kn[s]) for b in self.xr[s]] for s in range(S)]
        self.tb = [[ba[s] + bb[s] * max(b, kn[s]) for b in self.yr[s]] for s in range(S)]
        self.cf = [[sl[s] + sb[s] * b if s < S - 1 else 0.0 for b in self.xr[s]] for s in range(S)]
        self.cb = [[gl[s] + gb[s] * b if s > 0 else 0.0 for b in self.yr[s]] for s in range(S)]
        self.tail = [float(t) for t in costs.tail]
        self.bw = CpuBandwidth.of(costs)


def _iteration(pl: _Plan, budgets=None, offset: float = 0.0) -> float:
    """One fill-drain iteration from time 0 (budgets keep absolute times ``offset`` + t, as in
    :func:`..orders._run`). Each stage's ops run in its fixed order (forwards, then backwards,
    then the tail), so stages can be simulated one after the other: a stage's budget sees its
    own ops in the order and at the times the event simulation would give them."""
    S = pl.S
    cpu = [1.0] * S
    run: list = [None] * S
    if pl.bw is not None and budgets is not None:
        def shifted(b):
            return lambda t, c: b.run(t + offset, c) - offset
        run = [None if b is None else shifted(b) for b in budgets]
        cpu = [1.0 if q is None else q for q in pl.bw.quota]  # fluid seconds -> CPU seconds

    def op(s: int, t0: float, dur: float) -> float:
        return t0 + dur if run[s] is None else run[s](t0, dur * cpu[s])

    flast = [0.0] * S
    prev_c: list[float] = []
    prev_p: list[int] = []
    for s in range(S):  # forwards: microbatch j waits for the upstream microbatches holding its samples
        free = link = 0.0
        cs, ps = [], []
        pre = k = 0
        for j, x in enumerate(pl.xr[s]):
            pre += x
            ps.append(pre)
            r = 0.0
            if s > 0:
                while prev_p[k] < pre:
                    k += 1
                r = prev_c[k]  # the outgoing link is serialised: its last needed send arrives last
            free = op(s, max(free, r), pl.tf[s][j])
            if s < S - 1:
                link = max(link, free) + pl.cf[s][j]
                cs.append(link)
        flast[s] = free
        prev_c, prev_p = cs, ps
    ends = [0.0] * S
    prev_c, prev_p = [], []
    for s in range(S - 1, -1, -1):  # backwards from the back of the minibatch
        free = flast[s]
        link = 0.0
        cs, qs = [], []
        pre = k = 0
        for j, y in enumerate(pl.yr[s]):
            pre += y
            qs.append(pre)
            r = flast[s]
            if s < S - 1:
                while prev_p[k] < pre:
                    k += 1
                r = max(r, prev_c[k])
            free = op(s, max(free, r), pl.tb[s][j])
            if s > 0:
                link = max(link, free) + pl.cb[s][j]
                cs.append(link)
        ends[s] = op(s, free, pl.tail[s])
        prev_c, prev_p = cs, qs
    return max(ends)


def expected_makespan(costs: PipelineCosts, X, Y, draws: int = PHASE_DRAWS, first_draw: int = 0,
                      precision: float | None = PRECISION) -> float:
    """Predicted iteration time of the fill-drain plan with forward rows ``X`` and backward rows
    ``Y`` (``[S, Mmax]`` zero-padded or lists of rows), by the rules of
    :func:`..orders.expected_makespan`: for CPU-quota stages the mean over period-phase draws
    of a steady-state iteration (the second of two back to back, a barrier apart), more draws
    while the mean's standard error is above ``precision`` of it."""
    pl = _Plan(costs, X, Y)
    if pl.bw is None:
        return _iteration(pl)
    gap = 2 * max(max(pl.cf[s][0] for s in range(pl.S)), 0.0)  # the barrier between iterations
    return steady_state_mean(pl.bw, lambda bud, off: _iteration(pl, bud, offset=off), gap, draws, first_draw,
                             precision)


def rows_of(M: Sequence) -> list[list[int]]:
    """Rows without their zero padding, from an ``[S, Mmax]`` array or a list of rows."""
    return [[int(v) for v in r if int(v) > 0] for r in M]
