"""Baselines for UMPIPE: GPipe, PipeDream(-Flush), local greedy, global greedy DP, and
PipeDream's layer-partitioning DP.

All microbatch baselines work on one :class:`PipelineCosts` (a fixed layer->stage split) and
return a :class:`Plan` with the iteration time under the same cost model, so their numbers
are directly comparable with DGAP's.

* ``gpipe(costs, M)``: M near-equal microbatches at every stage, fill-drain (GPipe's
  default in the paper's experiments is small; we report M=4 and the best M).
* ``gpipe_best(costs, mmax)``: the best M in 1..mmax.
* ``pipedream_flush(costs, M)`` / ``pipedream_flush_best``: 1F1B with a flush at the end
  (PipeDream-Flush, Narayanan et al. 2021), simulated by the list scheduler.
* ``pipedream_async(costs, M)`` / best: steady-state time per minibatch of asynchronous
  PipeDream (no flush, weight stashing). Not a synchronous iteration time: reported only.
* ``local_greedy(costs, mmax)``: front to back, stage s picks its equal microbatch count
  minimising its forward finish time given the upstream choices; then back to front, stage
  s picks its backward count minimising its backward finish time given the downstream ones.
* ``global_greedy_dp(costs, mmax, beam)``: stage-by-stage DP/beam search over equal
  per-stage microbatch counts; the value of a state is the full (fwd+bwd) makespan of the
  sub-pipeline of the stages chosen so far; keeps the ``beam`` best states per stage.
* ``chain_partition(wl, devices, links, ...)``: PipeDream's DP for an ordered chain of
  heterogeneous devices: A[j][s] = min_i max(A[i][s-1], comm(i), T_s(i..j)), the slowest
  stage or link per sample; ``pipedream_dp(wl, n, ...)``: the original recursion over
  homogeneous machines with replication, A(j, m) = min_{i<j} min_{m'<m}
  max(A(i, m-m'), 2 C_i, T(i+1..j, m')) where T includes the all-reduce of replicated
  weights (Narayanan et al., SOSP'19, sec. 3.1). Both are our own implementations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..costmodel import (PipelineCosts, equal_plan, equal_sizes, list_schedule, makespan, mirror,
                         one_f_one_b_order, pipedream_async_time)
from ..workloads import Device, Link, Workload


@dataclass
class Plan:
    name: str
    makespan: float
    X: np.ndarray | None = None  # [S, Mmax] forward sizes (None for list-scheduled baselines)
    Y: np.ndarray | None = None
    M: int | None = None  # equal microbatch count, when there is one
    note: str = ""

    def describe(self) -> str:
        if self.X is None:
            return f"M={self.M}" + (f" ({self.note})" if self.note else "")
        return describe_counts(self.X, self.Y) + (f" ({self.note})" if self.note else "")


def describe_counts(X, Y=None) -> str:
    """Microbatch counts per stage, e.g. 'M=8,8,16,4' or 'F 8,8,11,4 / B 10,8,10,4'."""
    f = ",".join(str(int((np.asarray(r) > 0).sum())) for r in X)
    if Y is None:
        return f"M={f}"
    b = ",".join(str(int((np.asarray(r) > 0).sum())) for r in Y)
    return f"M={f}" if f == b else f"F {f} / B {b}"


def feasible_counts(costs: PipelineCosts, mmax: int, stage: int | None = None) -> list[int]:
    """Equal microbatch counts M <= mmax whose sizes fit the cap of ``stage`` (all stages)."""
    cap = int(costs.bmax.min() if stage is None else costs.bmax[stage])
    return [M for M in range(1, min(costs.B, mmax) + 1) if math.ceil(costs.B / M) <= cap]


def gpipe(costs: PipelineCosts, M: int) -> Plan:
    ok = feasible_counts(costs, costs.B)
    if M not in ok:
        raise ValueError(f"GPipe with M={M} is infeasible (B={costs.B}, caps {costs.bmax.tolist()})")
    X = equal_plan(costs.S, costs.B, M)
    return Plan(f"GPipe (M={M})", float(makespan(costs, X)), X, mirror(X), M)


def gpipe_best(costs: PipelineCosts, mmax: int) -> Plan:
    Ms = feasible_counts(costs, mmax)
    if not Ms:
        raise ValueError("no feasible equal microbatch count")
    plans = np.stack([equal_plan(costs.S, costs.B, M, max(Ms)) for M in Ms])
    t = makespan(costs, plans)
    i = int(np.argmin(t))
    return Plan(f"GPipe (best M={Ms[i]})", float(t[i]), plans[i], mirror(plans[i]), Ms[i])


def pipedream_flush(costs: PipelineCosts, M: int) -> Plan:
    if M not in feasible_counts(costs, costs.B):
        raise ValueError(f"1F1B with M={M} is infeasible")
    tl = list_schedule(costs, one_f_one_b_order(costs.S, M), equal_sizes(costs.B, M))
    return Plan(f"PipeDream-Flush 1F1B (M={M})", tl.makespan, M=M)


def pipedream_flush_best(costs: PipelineCosts, mmax: int) -> Plan:
    best = min((pipedream_flush(costs, M) for M in feasible_counts(costs, mmax)), key=lambda p: p.makespan)
    best.name = f"PipeDream-Flush 1F1B (best M={best.M})"
    return best


def pipedream_async(costs: PipelineCosts, mmax: int) -> Plan:
    Ms = feasible_counts(costs, mmax)
    t = [pipedream_async_time(costs, M) for M in Ms]
    i = int(np.argmin(t))
    return Plan(f"PipeDream async (best M={Ms[i]})", t[i], M=Ms[i],
                note="steady state, no flush; per-minibatch time")


def _row(B: int, M: int, mmax: int) -> np.ndarray:
    r = np.zeros(mmax, dtype=np.int64)
    r[:M] = equal_sizes(B, M)
    return r


def local_greedy(costs: PipelineCosts, mmax: int) -> Plan:
    """Stage-by-stage greedy over equal per-stage microbatch counts. Forward sweep, front to
    back: stage s tries every feasible count M (the stages after it provisionally use the
    same M) and keeps the one with the smallest iteration time given the upstream choices.
    Backward sweep, back to front, the same for the backward chromosome (keeping the current
    rows is a candidate too). Each stage decides once and never revisits (hence local). The
    first forward step tries every all-equal plan, so the result is never worse than
    ``gpipe_best``."""
    S, B = costs.S, costs.B
    X = np.zeros((S, mmax), dtype=np.int64)
    for s in range(S):
        cands = feasible_counts(costs, mmax, s)
        pop = np.repeat(X[None], len(cands), axis=0)
        for k, M in enumerate(cands):
            pop[k, s:] = _row(B, M, mmax)
        X = pop[int(np.argmin(makespan(costs, pop)))]
    Y = mirror(X)
    for s in range(S - 1, -1, -1):
        cands = feasible_counts(costs, mmax, s)
        popY = np.repeat(Y[None], len(cands) + 1, axis=0)  # the last candidate keeps Y as is
        for k, M in enumerate(cands):
            popY[k, :s + 1] = mirror(_row(B, M, mmax)[None])[0]
        t = makespan(costs, X[None], popY)
        Y = popY[int(np.argmin(t))] if t.min() < t[-1] else Y
    return Plan("Local greedy", float(makespan(costs, X, Y)), X, Y)


def global_greedy_dp(costs: PipelineCosts, mmax: int, beam: int = 8) -> Plan:
    S, B = costs.S, costs.B
    states: list[tuple[int, ...]] = [()]
    for s in range(S):
        sub = costs.stages(0, s + 1)
        cand = [st + (M,) for st in states for M in feasible_counts(costs, mmax, s)]
        pop = np.stack([np.stack([_row(B, M, mmax) for M in c]) for c in cand])
        t = makespan(sub, pop)
        order = np.argsort(t, kind="stable")[:beam]
        states = [cand[i] for i in order]
    X = np.stack([_row(B, M, mmax) for M in states[0]])
    return Plan(f"Global greedy DP (beam {beam})", float(makespan(costs, X)), X, mirror(X))


# --------------------------------------------------------------------------------------
# layer partitioning


def chain_bottleneck(wl: Workload, devices: Sequence[Device], links: Sequence[Link],
                     cuts: Sequence[int]) -> float:
    """Per-sample time of the slowest stage or link of a split (what chain_partition minimises)."""
    segs = wl.segments(cuts)
    t = [(g.fwd_flops + g.bwd_flops) / d.speed for g, d in zip(segs, devices)]
    t += [2 * (lk.latency + g.act_out / lk.bandwidth) for g, lk in zip(segs, links)]
    return max(t)


def ordered_partition(wl: Workload, devices: Sequence[Device], bandwidth, latency,
                      max_permute: int = 6) -> tuple[list[int], list[int]]:
    """Choose the device order and the split together: every order of the devices when there
    are at most ``max_permute`` of them (else the given order and its reverse), each split by
    :func:`chain_partition`; returns (order, cuts) of the smallest bottleneck (ties: first)."""
    import itertools

    n = len(devices)
    bw = np.asarray(bandwidth, dtype=float)
    lat = np.asarray(latency, dtype=float)
    orders = itertools.permutations(range(n)) if n <= max_permute else [tuple(range(n)), tuple(reversed(range(n)))]
    best = None
    seen = set()
    for order in orders:
        key = tuple(devices[i] for i in order)  # identical devices: skip equivalent orders
        if key in seen:
            continue
        seen.add(key)
        devs = [devices[i] for i in order]
        links = [Link(float(bw[order[i], order[i + 1]]), float(lat[order[i], order[i + 1]])) for i in range(n - 1)]
        cuts = chain_partition(wl, devs, links)
        v = chain_bottleneck(wl, devs, links, cuts)
        if best is None or v < best[0] - 1e-15:
            best = (v, list(order), cuts)
    return best[1], best[2]


def chain_partition(wl: Workload, devices: Sequence[Device], links: Sequence[Link],
                    B: int | None = None, M: int | None = None) -> list[int]:
    """PipeDream-style DP for an ordered heterogeneous chain: cut ``wl`` into len(devices)
    contiguous stages minimising the slowest stage or link. Stage time per microbatch of
    size b = B/M (default: per sample, b=1, no knee/overhead):
    overhead*2 + (fwd+bwd) * max(b, knee)/speed; link time: 2 * (latency + act*b/bw)."""
    n, S = wl.n, len(devices)
    if not 1 <= S <= n:
        raise ValueError(f"cannot split {n} layers into {S} stages")
    if len(links) != S - 1:
        raise ValueError(f"{S} stages need {S - 1} links")
    b = 1.0 if not (B and M) else B / M
    cum = np.concatenate([[0.0], np.cumsum(wl.fwd + wl.bwd)])
    act = wl.act_out
    INF = math.inf

    def stage_t(s: int, i: int, j: int) -> float:  # layers [i, j) on device s
        d = devices[s]
        eff = max(b, d.knee) if (B and M) else b
        return (2 * d.overhead if (B and M) else 0.0) + (cum[j] - cum[i]) * eff / d.speed

    A = [[INF] * (n + 1) for _ in range(S)]
    arg = [[-1] * (n + 1) for _ in range(S)]
    for j in range(1, n + 1):
        A[0][j] = stage_t(0, 0, j)
    for s in range(1, S):
        lk = links[s - 1]
        for j in range(s + 1, n + 1):
            for i in range(s, j):
                comm = 2 * (lk.latency + act[i - 1] * b / lk.bandwidth)
                v = max(A[s - 1][i], comm, stage_t(s, i, j))
                if v < A[s][j]:
                    A[s][j], arg[s][j] = v, i
    cuts = []
    j = n
    for s in range(S - 1, 0, -1):
        i = arg[s][j]
        cuts.append(i)
        j = i
    return sorted(cuts)


def pipedream_dp(wl: Workload, machines: int, speed: float, bandwidth: float,
                 memory: float | None = None) -> tuple[list[tuple[int, int, int]], float]:
    """PipeDream's partitioning DP over ``machines`` identical devices (speed FLOP/s, one
    bandwidth level). Returns ([(first_layer, last_layer_exclusive, replicas), ...], time per
    sample of the slowest stage). Replicated stages pay a ring all-reduce of their weights
    per sample, 4(m-1)|w|/(m*bandwidth) (the paper's data-parallel term), maxed with
    compute/m (the paper takes the max; PipeDream's released code adds them)."""
    n = wl.n
    if machines < 1:
        raise ValueError("need at least one machine")
    comp = np.concatenate([[0.0], np.cumsum(wl.fwd + wl.bwd)]) / speed
    par = np.concatenate([[0.0], np.cumsum(wl.params)])
    act = wl.act_out
    INF = math.inf

    def T(i: int, j: int, m: int) -> float:  # layers [i, j) replicated m times
        if memory is not None and 4 * (par[j] - par[i]) > memory:
            return INF
        c = (comp[j] - comp[i]) / m
        sync = 4 * (m - 1) * (par[j] - par[i]) / (m * bandwidth) if m > 1 else 0.0
        return max(c, sync)

    A = [[INF] * (machines + 1) for _ in range(n + 1)]
    choice: dict[tuple[int, int], tuple] = {}
    for j in range(1, n + 1):
        for m in range(1, machines + 1):
            A[j][m] = T(0, j, m)
            choice[(j, m)] = (None, m)
            for i in range(1, j):
                for mp in range(1, m):
                    v = max(A[i][m - mp], 2 * act[i - 1] / bandwidth, T(i, j, mp))
                    if v < A[j][m]:
                        A[j][m] = v
                        choice[(j, m)] = (i, mp)
    best_m = min(range(1, machines + 1), key=lambda m: A[n][m])
    stages = []
    j, m = n, best_m
    while True:
        i, mp = choice[(j, m)]
        stages.append((0 if i is None else i, j, mp))
        if i is None:
            break
        j, m = i, m - mp
    return stages[::-1], A[n][best_m]
