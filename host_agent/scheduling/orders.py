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

CPU-quota stages (``costs.info["cfs"]``, see :class:`CpuBandwidth`). A stage process in a
cgroup with CPU quota q and period P gets q*P CPU-seconds per period; idle time is not banked,
and the kernel notices an exhausted quota only at its scheduler tick, so a stage overruns by
up to a tick and then repays the debt from later periods (:class:`_Budget`). A stage that
waited therefore runs its next op at full speed for a few milliseconds, and only a stage that
stays busy runs at the average rate q. The cost model's compute times are the *fluid* times
(CPU seconds / q); the simulation turns each op back into CPU seconds and runs it through the
stage's budget. The periods of different cgroups have unrelated phases and an iteration starts
at a random point of each, and with the debts the previous iteration left, so a prediction
is the mean over several phase draws of a steady-state iteration (:func:`expected_makespan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
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


DEFAULT_TICK_S = 0.004  # CONFIG_HZ=250, the common kernel default


@dataclass(frozen=True)
class CpuBandwidth:
    """cgroup v1 CFS bandwidth of the stage processes: ``quota[s]`` CPUs (None: not limited)
    per ``period_s``; the kernel notices an exhausted quota at its scheduler tick
    (``tick_s``) or when the stage blocks and wakes. Stored as
    ``costs.info["cfs"] = {"quota": [...], "period_s": P, "tick_s": T}``."""

    quota: tuple[float | None, ...]
    period_s: float
    tick_s: float = DEFAULT_TICK_S

    @classmethod
    def of(cls, costs: PipelineCosts) -> "CpuBandwidth | None":
        d = costs.info.get("cfs")
        if not d:
            return None
        q = tuple(None if x is None or float(x) >= 1.0 else float(x) for x in d["quota"])
        if len(q) != costs.S:
            raise ValueError(f"cfs quotas for {len(q)} stages, the cost model has {costs.S}")
        return cls(q, float(d["period_s"]), float(d.get("tick_s") or DEFAULT_TICK_S))

    def draw(self, i: int) -> list["_Budget | None"]:
        """Draw ``i`` of the phases: each stage's period phase and the tick's phase (one tick
        grid for all stages), point ``i`` of an additive recurrence (Roberts' R_d sequence,
        d = stages + 1): every prefix covers the torus of phase combinations evenly, so
        more draws just append points, and draws far apart in the sequence
        (:data:`SEARCH_FIRST_DRAW`) are other phases."""
        alpha = _r_sequence_steps(len(self.quota) + 1)
        x = [(0.5 + (i + 1) * a) % 1.0 for a in alpha]
        return [None if q is None else _Budget(q, self.period_s, x[s] * self.period_s, self.tick_s, x[-1] * self.tick_s)
                for s, q in enumerate(self.quota)]


@lru_cache(maxsize=None)
def _r_sequence_steps(d: int) -> tuple[float, ...]:
    """The steps of the R_d low-discrepancy sequence: ``1 / phi_d ** k``, k = 1..d, with phi_d
    the root > 1 of ``x ** (d + 1) = x + 1`` (Roberts 2018)."""
    phi = 2.0
    for _ in range(60):  # fixed point of x = (1 + x) ** (1 / (d + 1))
        phi = (1.0 + phi) ** (1.0 / (d + 1))
    return tuple((1.0 / phi ** k) % 1.0 for k in range(1, d + 1))


_EPS = 1e-12  # seconds: a balance this close to zero counts as zero


class _Budget:
    """One stage's CFS bandwidth as the kernel enforces it (absolute times).

    The balance is refilled by quota x period at each period boundary (capped at that) and
    spent at full speed. An exhausted balance is noticed only at a scheduler tick or when the
    stage wakes up: the stage overruns by up to a tick, is throttled until refills bring the
    balance above zero again, and so repays the debt from later periods. Measured on the
    profiled host (HZ=250, 10 ms period): a stage with quota 0.15 runs bursts of 2-6 ms of CPU
    after an idle spell, then ~4 ms per ~27 ms, 1/0.15 on average."""

    def __init__(self, quota: float, period: float, phase: float, tick: float, tick_phase: float):
        self.P, self.phase, self.T, self.tphase = period, phase, tick, tick_phase
        self.cap = quota * period
        self.bal = self.cap
        self.k: int | None = None  # index of the period the balance is up to date for

    def _catch_up(self, t: float) -> None:
        k = math.floor((t - self.phase) / self.P)
        if self.k is None:
            self.k = k
        elif k > self.k:
            if self.bal < self.cap:
                self.bal = min(self.cap, self.bal + (k - self.k) * self.cap)
            self.k = k

    def _refill(self) -> float:
        """Jump to the next period boundary; returns its time."""
        self.k += 1
        self.bal = min(self.cap, self.bal + self.cap)
        return self.phase + self.k * self.P

    def run(self, t: float, cpu: float) -> float:
        """When ``cpu`` CPU-seconds wanted from time ``t`` on are done."""
        if cpu <= 0:
            return t
        self._catch_up(t)
        while self.bal <= _EPS:  # throttled when it wakes up
            t = max(t, self._refill())
        P, T = self.P, self.T
        while True:
            nb = self.phase + (self.k + 1) * P
            nt = self.tphase + (math.floor((t - self.tphase) / T) + 1) * T
            if nt <= t:
                nt += T
            e = min(nb, nt, t + cpu)
            d = e - t if e > t else 0.0
            cpu -= d
            self.bal -= d
            t = e
            if cpu <= 1e-12:
                return t
            if e >= nb:
                self._refill()
            if e >= nt and self.bal < -_EPS:
                while self.bal <= _EPS:
                    t = max(t, self._refill())


def check_rows(costs: PipelineCosts, rows: Sequence[Sequence[int]], what: str = "") -> list[list[int]]:
    """The rows without their zero padding; ValueError unless there is one per stage and each
    sums to B (``what`` names the rows in the message, e.g. "backward")."""
    rows = [[int(v) for v in r if int(v) > 0] for r in rows]
    kind = f"{what} " if what else ""
    if len(rows) != costs.S:
        raise ValueError(f"{kind}plan has {len(rows)} stages, the cost model {costs.S}")
    for s, r in enumerate(rows):
        if sum(r) != costs.B:
            raise ValueError(f"stage {s}: {kind}microbatch sizes {r} sum to {sum(r)}, expected B={costs.B}")
    return rows


def fill_drain_orders(rows: Sequence[Sequence[int]]) -> list[list[tuple[str, int]]]:
    return [[("F", j) for j in range(len(r))] + [("B", j) for j in reversed(range(len(r)))] for r in rows]


class _Plan:
    """A plan's per-op durations and sample dependencies, computed once per plan."""

    def __init__(self, costs: PipelineCosts, rows: Sequence[Sequence[int]]):
        rows = check_rows(costs, rows)
        S = costs.S
        self.S, self.rows, self.M = S, rows, [len(r) for r in rows]
        self.starts = [[sum(r[:j]) for j in range(len(r) + 1)] for r in rows]
        fa, fb, ba, bb, kn = (list(map(float, x)) for x in (costs.f_alpha, costs.f_beta, costs.b_alpha,
                                                                 costs.b_beta, costs.knee))
        sl, sb, gl, gb = (list(map(float, x)) for x in (costs.send_lat, costs.send_beta, costs.grad_lat,
                                                        costs.grad_beta))
        self.tf = [[fa[s] + fb[s] * max(b, kn[s]) for b in rows[s]] for s in range(S)]
        self.tb = [[ba[s] + bb[s] * max(b, kn[s]) for b in rows[s]] for s in range(S)]
        self.cf = [[sl[s] + sb[s] * b if s < S - 1 else 0.0 for b in rows[s]] for s in range(S)]
        self.cb = [[gl[s] + gb[s] * b if s > 0 else 0.0 for b in rows[s]] for s in range(S)]
        self.tail = [float(t) for t in costs.tail]

        def overlap(s: int, t: int) -> list[list[int]]:  # microbatches of stage t holding stage s's samples
            out = []
            for j in range(self.M[s]):
                a, b = self.starts[s][j], self.starts[s][j + 1]
                out.append([k for k in range(self.M[t]) if self.starts[t][k] < b and self.starts[t][k + 1] > a])
            return out

        self.up = [overlap(s, s - 1) if s > 0 else None for s in range(S)]
        self.down = [overlap(s, s + 1) if s < S - 1 else None for s in range(S)]
        self.bw = CpuBandwidth.of(costs)


def schedule(costs: PipelineCosts, rows: Sequence[Sequence[int]], kind: str = "fill-drain",
             cap: Sequence[int] | None = None, orders: Sequence[Sequence[tuple[str, int]]] | None = None,
             record: bool = False, phases: Sequence[float] | None = None) -> OrderResult:
    """Simulate a plan. With ``orders`` the given per-stage orders are replayed (ValueError on
    a deadlock); otherwise ``kind`` generates them (``cap`` only for ``1f1b``). With CPU-quota
    stages (``costs.info["cfs"]``) ops run through each stage's CFS budget, with the periods
    starting at ``phases[s]`` (default: the first of :func:`expected_makespan`'s draws)."""
    pl = _Plan(costs, rows)
    budgets = None
    if pl.bw is not None:
        budgets = pl.bw.draw(0) if phases is None else [
            None if q is None else _Budget(q, pl.bw.period_s, p, pl.bw.tick_s, 0.0) for q, p in zip(pl.bw.quota, phases)]
    return _run(pl, kind, cap, orders, record, budgets)


def _run(pl: _Plan, kind: str, cap, orders, record: bool, budgets=None, offset: float = 0.0) -> OrderResult:
    """One iteration from time 0; ``budgets`` (per stage, None: no quota) keep absolute times
    ``offset`` + t, so a second call with the same budgets continues where the first left."""
    S, M, starts = pl.S, pl.M, pl.starts
    if orders is None:
        if kind == "fill-drain":
            orders = fill_drain_orders(pl.rows)
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
    tf, tb, cf, cb, up, down = pl.tf, pl.tb, pl.cf, pl.cb, pl.up, pl.down
    bw = pl.bw
    run: list = [None] * S
    cpu = [1.0] * S
    if bw is not None and budgets is not None:
        def shifted(b):
            return lambda t, c: b.run(t + offset, c) - offset
        run = [None if b is None else shifted(b) for b in budgets]
        cpu = [1.0 if q is None else q for q in bw.quota]  # fluid seconds -> CPU seconds
    # arrival at stage s+1 of stage s's activations of microbatch k / at stage s-1 of its gradients
    acts = [[None] * M[s] for s in range(S)]
    grads = [[None] * M[s] for s in range(S)]
    fend = [[None] * M[s] for s in range(S)]
    free = [0.0] * S
    linkf = [0.0] * S
    linkb = [0.0] * S
    nf = [0] * S  # next forward (forwards run in order in both families)
    ptr = [0] * S  # fixed orders: position
    nb = [0] * S  # 1f1b: backwards in forward order
    inflight = [0] * S
    stashed = [0] * S
    peak = [0] * S
    out_orders: list[list[tuple[str, int]]] = [[] for _ in range(S)]
    ev: list[tuple] = []
    left = 2 * sum(M)

    def ready_f(s: int, j: int):
        if s == 0:
            return 0.0
        src = acts[s - 1]
        r = 0.0
        for k in up[s][j]:
            t = src[k]
            if t is None:
                return None
            if t > r:
                r = t
        return r

    def ready_b(s: int, j: int):
        r = fend[s][j]
        if r is None or s == S - 1:
            return r
        src = grads[s + 1]
        for k in down[s][j]:
            t = src[k]
            if t is None:
                return None
            if t > r:
                r = t
        return r

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
                rb = ready_b(s, nb[s]) if nb[s] < M[s] else None
                rf = ready_f(s, nf[s]) if nf[s] < M[s] else None
                if rf is not None and inflight[s] >= caps[s]:
                    blocked_f.append((max(free[s], rf), s))
                    rf = None
                t = free[s]
                if rb is not None and rb <= t:
                    cand = (t, 0, s, ("B", nb[s]))
                elif rf is not None and rf <= t:
                    cand = (t, 1, s, ("F", nf[s]))
                elif rb is not None and (rf is None or rb <= rf):
                    cand = (rb, 0, s, ("B", nb[s]))
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
        n = starts[s][j + 1] - starts[s][j]
        if k == "F":
            if j != nf[s]:
                raise ValueError(f"stage {s}: forwards must run in order (F{j} before F{nf[s]})")
            end = t0 + tf[s][j] if run[s] is None else run[s](t0, tf[s][j] * cpu[s])
            fend[s][j] = end
            nf[s] += 1
            inflight[s] += 1
            stashed[s] += n
            if stashed[s] > peak[s]:
                peak[s] = stashed[s]
            if record:
                ev.append((s, "F", j, t0, end, n))
            if s < S - 1:
                cst = max(linkf[s], end)
                linkf[s] = cst + cf[s][j]
                acts[s][j] = linkf[s]
                if record:
                    ev.append((s, "sendF", j, cst, linkf[s], n))
        else:
            end = t0 + tb[s][j] if run[s] is None else run[s](t0, tb[s][j] * cpu[s])
            inflight[s] -= 1
            stashed[s] -= n
            if not fixed:
                nb[s] += 1
            if record:
                ev.append((s, "B", j, t0, end, n))
            if s > 0:
                cst = max(linkb[s], end)
                linkb[s] = cst + cb[s][j]
                grads[s][j] = linkb[s]
                if record:
                    ev.append((s, "sendB", j, cst, linkb[s], n))
        free[s] = end
        out_orders[s].append((k, j))
        if fixed:
            ptr[s] += 1
        left -= 1
    ends = [free[s] + pl.tail[s] if run[s] is None else run[s](free[s], pl.tail[s] * cpu[s]) for s in range(S)]
    return OrderResult(max(ends), out_orders, peak, ends, ev)


PHASE_DRAWS = 8  # period-phase draws per prediction for CPU-quota stages (at least)
PRECISION = 0.004  # a prediction's standard error, relative, that more draws are made for
MAX_DRAWS = 128
# A search that keeps the best of thousands of plans scored on the same few draws keeps the
# plans whose op timing happens to dodge a throttle at those phases (a 4-stage MLP: a split of
# one stage's microbatch scored 7 % faster on 8 draws, +2 % on 64, and measured 27 % slower).
# So a search scores on draws of its own, far along the sequence, and the final predictions
# rank its plans on phases they were not chosen on.
SEARCH_FIRST_DRAW = 1_000_003


def expected_makespan(costs: PipelineCosts, rows, orders, draws: int = PHASE_DRAWS, first_draw: int = 0,
                      precision: float | None = PRECISION) -> float:
    """Predicted iteration time of a plan with fixed ``orders``. For CPU-quota stages: the
    mean over draws of the period and tick phases (:meth:`CpuBandwidth.draw`) of a
    *steady-state* iteration -- the second of two back to back (a barrier apart), which starts
    with the CFS balances (debts) the first left, as every iteration of a training run does.
    ``draws`` draws from ``first_draw`` on, more (doubling, up to :data:`MAX_DRAWS`) while the
    mean's standard error is above ``precision`` of it (None: exactly ``draws``). An iteration
    of two or three periods depends on where the throttles fall: on a 4-stage MLP of 20 ms the
    same plan predicted 20.1 to 22.6 ms on different sets of 4-8 draws, more than the gains
    the search finds."""
    pl = _Plan(costs, rows)
    if pl.bw is None:
        return _run(pl, "", None, orders, False).makespan
    gap = 2 * max(max(pl.cf[s][0] for s in range(pl.S)), 0.0)  # the barrier between iterations
    return steady_state_mean(pl.bw, lambda bud, off: _run(pl, "", None, orders, False, bud, offset=off).makespan,
                             gap, draws, first_draw, precision)


def steady_state_mean(bw: "CpuBandwidth", iteration, gap: float, draws: int = PHASE_DRAWS, first_draw: int = 0,
                      precision: float | None = PRECISION) -> float:
    """The mean over phase draws ``first_draw, ...`` of ``bw`` of a steady-state iteration:
    ``iteration(budgets, offset)`` (its makespan from ``offset`` on, the budgets keeping
    absolute times) run twice on one draw's budgets, the second ``gap`` (the barrier) after
    the first ends; ``draws`` of them, doubling up to :data:`MAX_DRAWS` while the mean's
    standard error is above ``precision`` of it (None: exactly ``draws``). The one rule of
    every evaluator of plans under CPU quotas (:func:`expected_makespan`, the dual plans'
    :func:`..umpipe.dual.expected_makespan`)."""
    xs: list[float] = []
    want = max(1, draws)
    while True:
        for i in range(first_draw + len(xs), first_draw + want):
            bud = bw.draw(i)
            first = iteration(bud, 0.0)
            xs.append(iteration(bud, first + gap))
        n = len(xs)
        mean = sum(xs) / n
        if precision is None or n >= MAX_DRAWS or n < 2:
            return mean
        se = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1) / n)
        if se <= precision * mean:
            return mean
        want = min(2 * n, MAX_DRAWS)


def predict(costs: PipelineCosts, rows, orders) -> float:
    """Predicted iteration time of a plan whose orders are given."""
    return expected_makespan(costs, rows, orders)
