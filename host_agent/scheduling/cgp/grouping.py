"""Straggler detection and the 1-D optimal grouping of CGP (design section 3.3).

Workers are sorted by their (EMA) iteration time ``tau`` and cut into contiguous segments
(groups). A group iterates synchronously, so its period is its slowest member's ``tau``
(every member computing the same local batch); the cost of a grouping is

    J = sum_g sum_{i in g} (max_{j in g} tau_j - tau_i) / sum_i tau_i      (idle fraction)
        + lam * c_push * sum_g 1 / max_{j in g} tau_j                       (PS busy fraction)

The first term favours small, homogeneous groups; the second counts global updates per
second times the server time per update: merging workers into a group divides the number
of global updates by the group size ("cooperative reduction of the global update cost").

Predicted staleness of group ``g`` (other groups' updates during one of its periods):
``s_g = P_g * sum_{h != g} 1/P_h = P_g R - 1`` with ``R = sum_h 1/P_h``. It is largest for the
slowest group, whose period is the global maximum ``tau_max``; so the cap ``s_g <= s_max``
for all ``g`` is the single additive constraint ``R <= (s_max + 1) / tau_max``. Both ``J`` and
the constraint are sums over segments, so an exact DP over (position, rate budget) is
possible; for the cluster sizes we target (N <= 16) we enumerate the 2^(N-1) contiguous
segmentations with numpy instead, which is exact and simpler. Larger N fall back to a
Lagrangian-free greedy (merge the adjacent pair with the best cost change until feasible).

**Balanced groups** (``balanced=True``; the real trainer's ``--balance``, off by default: on a
small digits CNN a step is mostly its fixed part, and it measured fewer samples/s): the
members of a group split the group's samples in proportion to their speeds (LB-BSP inside the group, the
work-conserving variant of the design's "accumulate while waiting"), so nobody waits for the
group's slowest: a group of ``k`` workers whose ``tau`` are per local batch has the period
``k / sum_{i in g} 1/tau_i`` (they finish together), and merging costs only its all-reduce.
A straggler then joins a group to cut its staleness and the server's load at no idle cost:
the "cooperative" reading of CGP's "treats stragglers as an opportunity".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def straggler_flags(tau, theta: float = 0.3) -> np.ndarray:
    """Boolean mask: ``tau_i > (1 + theta) * median(tau)``."""
    t = np.asarray(tau, dtype=float)
    if t.ndim != 1 or t.size == 0 or np.any(~np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("tau must be a non-empty 1-D array of positive finite times")
    return t > (1.0 + theta) * np.median(t)


@dataclass(frozen=True)
class Grouping:
    groups: tuple[tuple[int, ...], ...]  # worker indices; ordered fast -> slow
    cost: float
    staleness: tuple[float, ...]  # predicted per group

    @property
    def G(self) -> int:
        return len(self.groups)

    def group_of(self, worker: int) -> int:
        for i, g in enumerate(self.groups):
            if worker in g:
                return i
        raise KeyError(worker)


def predicted_staleness(periods, wait: float = 0.0) -> np.ndarray:
    """Each group's predicted staleness ``P_g R - 1`` (``R = sum_h 1/P_h``) with every period
    lengthened by ``wait``, the time a push waits in the server's queue: the queue adds
    about the same wait to every group's period, which evens the push rates out (without
    it, the real trainer's forced switches came on predictions of 9-10.5 versions when the
    slowest worker's pushes had been applied at 5.7-6.5 on average; see the docs)."""
    p = np.asarray(periods, dtype=float) + float(wait)
    R = np.sum(1.0 / p)
    return p * R - 1.0


def grouping_cost(tau, groups, lam: float, c_push: float) -> float:
    t = np.asarray(tau, dtype=float)
    idle = sum(float(np.sum(t[list(g)].max() - t[list(g)])) for g in groups) / t.sum()
    return idle + lam * c_push * sum(1.0 / t[list(g)].max() for g in groups)


def balanced_period(taus) -> float:
    """The period of a group whose members split its ``k`` local batches by speed:
    ``k / sum 1/tau_i`` (between its fastest and slowest member's ``tau``)."""
    t = np.asarray(taus, dtype=float)
    return float(t.size / np.sum(1.0 / t))


def balanced_shares(speeds, total: int, least: int = 1, most: int | None = None) -> list[int]:
    """Split ``total`` samples among a group's members in proportion to ``speeds`` (samples per
    second), each between ``least`` (a batch-norm layer does not train on one sample) and
    ``most``, the sum exactly ``total`` (largest remainders; ties to the earlier member, so
    every member computes the same split from the same speeds)."""
    v = np.asarray(speeds, dtype=float)
    k = v.size
    most = total if most is None else int(most)
    if k == 0 or least < 1 or not k * least <= total <= k * most:
        raise ValueError(f"cannot split {total} samples among {k} members with {least} to {most} each")
    if np.any(~np.isfinite(v)) or np.any(v <= 0):
        v = np.ones(k)  # nothing usable measured: equal shares
    held = np.full(k, np.nan)  # members held at a bound
    for _ in range(2 * k + 1):
        free = np.isnan(held)
        rest = total - np.nansum(held)
        exact = np.where(free, rest * v / v[free].sum() if free.any() else 0.0, held)
        low, high = free & (exact < least), free & (exact > most)
        if not (low.any() or high.any()):
            break
        held[low], held[high] = least, most
    base = np.floor(exact + 1e-9).astype(int)
    rest = total - int(base.sum())
    order = sorted(range(k), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[:rest]:
        base[i] += 1
    return [int(b) for b in base]


def segment_periods(tau, samples=None, comm: float = 0.0, n_draws: int = 512, seed: int = 0,
                    balanced: bool = False):
    """Period of every contiguous segment ``[i, j]`` of the workers sorted by ``tau``.

    Without ``samples`` the period is the segment's largest ``tau`` (deterministic times), or
    with ``balanced`` :func:`balanced_period` (members' shares by speed; not with ``samples``).
    With ``samples`` (one 1-D array of recent iteration times per worker) it is the expected
    maximum of independent draws from the members' empirical distributions (a group waits
    for whichever member straggles *this* iteration), estimated with ``n_draws`` seeded
    bootstrap draws. ``comm`` adds the intra-group ring all-reduce ``2 (k-1)/k comm``.
    Returns ``(order, P)`` with ``P[i, j]`` for ``i <= j`` (sorted positions)."""
    t = np.asarray(tau, dtype=float)
    n = t.size
    order = np.argsort(t, kind="stable")
    P = np.full((n, n), np.inf)
    if balanced:
        if samples is not None:
            raise ValueError("balanced periods take times, not samples")
        inv = 1.0 / t[order]
        for i in range(n):
            P[i, i:] = np.arange(1, n - i + 1) / np.cumsum(inv[i:])
    elif samples is None:
        ts = t[order]
        for i in range(n):
            P[i, i:] = np.maximum.accumulate(ts[i:])
    else:
        if len(samples) != n:
            raise ValueError("samples needs one array per worker")
        rng = np.random.default_rng(seed)
        D = np.empty((n, n_draws))
        for r, w in enumerate(order):
            x = np.asarray(samples[w], dtype=float)
            if x.size == 0 or np.any(~(x > 0)):
                raise ValueError("each worker needs at least one positive time sample")
            D[r] = x[rng.integers(0, x.size, n_draws)]
        for i in range(n):
            P[i, i:] = np.maximum.accumulate(D[i:], axis=0).mean(axis=1)
    P = P + group_comm(np.arange(n)[None, :] - np.arange(n)[:, None] + 1, comm)
    return order, P


def segment_groups(tau, lam: float = 0.1, s_max: float = 4, g_max: int = 4, c_push: float = 0.1,
                   theta: float = 0.3, samples=None, comm: float = 0.0, seed: int = 0,
                   objective: str = "linear", wait: float = 0.0, balanced: bool = False) -> Grouping:
    """Optimal contiguous grouping of workers sorted by ``tau`` (see the module docstring).

    ``objective="linear"`` (the design's rule): with no straggler (``max tau <= (1 + theta)
    median tau``) everybody forms one group, i.e. plain synchronous training. ``c_push`` is
    the server time per global update in the same unit as ``tau``. ``samples``/``comm``: see
    :func:`segment_periods` (periods then include random stragglers and the intra-group
    all-reduce). ``balanced``: the members split a group's samples by speed (module
    docstring); nobody idles, so the linear objective's idle term is 0.

    ``objective="linear"`` minimises ``J`` (idle fraction + ``lam`` x server busy fraction).
    ``objective="throughput"`` maximises the samples per second the grouping lets through,
    ``sum_g k_g / P_g`` divided by ``max(1, rho)`` with the server's load
    ``rho = c_push sum_g 1/P_g`` (a saturated server slows every group down; an idle one
    costs nothing): ``J = 1 - throughput / sum_i 1/tau_i``, the fraction of the workers'
    compute lost to waiting in groups or at the server. ``lam`` is then unused, and there is
    no "no straggler, one group" shortcut: measured on the real trainer, a fast outlier
    (times 98, 30, 89, 77 ms: no worker 30 % above the median) made everybody wait for the
    slowest; the objective itself merges workers only for a busy server or the bound.
    """
    if objective not in ("linear", "throughput"):
        raise ValueError(f"unknown grouping objective {objective!r} (linear, throughput)")
    t = np.asarray(tau, dtype=float)
    flags = straggler_flags(t, theta)
    if not (lam >= 0 and s_max >= 0 and g_max >= 1 and c_push >= 0 and comm >= 0 and wait >= 0):
        raise ValueError("need lam >= 0, s_max >= 0, g_max >= 1, c_push >= 0, comm >= 0, wait >= 0")
    n = t.size
    order, P = segment_periods(t, samples, comm, seed=seed, balanced=balanced)
    ts = t[order]
    if n == 1 or (objective == "linear" and not flags.any()):
        g = (tuple(int(i) for i in order),)
        return Grouping(g, grouping_cost(t, g, lam, c_push), (0.0,))
    tot = ts.sum()
    cap = (s_max + 1.0) / P[:, n - 1].max()  # the slowest group's period bounds staleness
    if n <= 16:
        # bit k of mask set = a cut after sorted position k (k = 0..n-2)
        masks = np.arange(2 ** (n - 1), dtype=np.int64)
        cuts = ((masks[:, None] >> np.arange(n - 1)) & 1).astype(bool)
        keep = cuts.sum(axis=1) + 1 <= g_max
        cuts = cuts[keep]
        is_end = np.concatenate([cuts, np.ones((cuts.shape[0], 1), dtype=bool)], axis=1)
        is_start = np.concatenate([np.ones((cuts.shape[0], 1), dtype=bool), cuts], axis=1)
        pos = np.arange(n)[None, :]
        end = np.minimum.accumulate(np.where(is_end, pos, n)[:, ::-1], axis=1)[:, ::-1]
        start = np.maximum.accumulate(np.where(is_start, pos, -1), axis=1)
        per = P[start, end]  # period of each position's group
        idle = np.zeros(per.shape[0]) if balanced else (per - ts[None, :]).sum(axis=1) / tot
        rate = np.where(is_end, 1.0 / per, 0.0).sum(axis=1)
        slow = per[:, -1]
        if objective == "throughput":
            J = 1.0 - (1.0 / per).sum(axis=1) / np.sum(1.0 / ts) / np.maximum(1.0, c_push * rate)
        else:
            J = idle + lam * c_push * rate
        # the slowest group's staleness, every period lengthened by the queue wait
        rate_w = np.where(is_end, 1.0 / (per + wait), 0.0).sum(axis=1)
        J = np.where((slow + wait) * rate_w - 1.0 <= s_max + 1e-9, J, np.inf)
        k = int(np.argmin(J))
        if not np.isfinite(J[k]):
            k = int(np.argmin(rate))  # nothing feasible: the fewest updates (one group)
        ends = np.flatnonzero(is_end[k])
    else:
        ends = _greedy_ends(ts, lam, c_push, cap, g_max)
    groups, lo = [], 0
    for e in ends:
        groups.append(tuple(int(i) for i in order[lo:e + 1]))
        lo = e + 1
    periods, lo = [], 0
    for e in ends:
        periods.append(P[lo, e])
        lo = e + 1
    return Grouping(tuple(groups), float(grouping_cost(t, groups, lam, c_push)),
                    tuple(float(s) for s in predicted_staleness(periods, wait)))


def group_comm(k, comm: float):
    """The intra-group ring all-reduce of ``k`` members: ``2 (k-1)/k comm`` (0 alone)."""
    k = np.asarray(k)
    return np.where(k > 1, 2.0 * (k - 1) / np.maximum(k, 1) * comm, 0.0)


def group_periods(tau, groups, comm: float = 0.0, balanced: bool = False) -> np.ndarray:
    """Each group's period with deterministic times: its slowest member's ``tau`` (with
    ``balanced``: :func:`balanced_period`) plus its all-reduce (:func:`group_comm`)."""
    t = np.asarray(tau, dtype=float)
    compute = balanced_period if balanced else np.max
    return np.array([compute(t[list(g)]) + float(group_comm(len(g), comm)) for g in groups])


def throughput_loss(tau, groups, c_push: float, comm: float = 0.0, wait: float = 0.0,
                    balanced: bool = False) -> tuple[float, float]:
    """``(J, s)`` of an arbitrary grouping under the ``throughput`` objective of
    :func:`segment_groups` (:func:`group_periods`): ``J`` the fraction of the workers' compute
    lost to waiting in groups or at the server, ``s`` the largest predicted staleness (the
    periods lengthened by the server's queue ``wait``, :func:`predicted_staleness`)."""
    t = np.asarray(tau, dtype=float)
    per = group_periods(t, groups, comm, balanced)
    k = np.array([len(g) for g in groups])
    rate = float(np.sum(1.0 / per))
    J = 1.0 - float(np.sum(k / per)) / float(np.sum(1.0 / t)) / max(1.0, c_push * rate)
    return J, float(predicted_staleness(per, wait).max())


def over_bound(s: float, s_max: float) -> bool:
    """A predicted staleness ``s`` that forces a change of groups: more than one version over
    the bound (within it, the server's gate holds updates back instead)."""
    return s > s_max + 1.0


def worth_switching(tau, current, new, c_push: float, s_max: float, margin: float, comm: float = 0.0,
                    wait: float = 0.0, cost: float = 0.0, lost: float = float("inf"),
                    balanced: bool = False) -> bool:
    """Is ``new`` worth the barrier a change of groups costs? Yes if ``current`` exceeds the
    staleness bound by more than one version (predicted with the server's queue ``wait``).
    Otherwise only if ``new`` loses at least ``margin`` less of the workers' compute
    (:func:`throughput_loss`) than ``current`` and the phase end has been paid for: ``lost``,
    the worker-seconds of compute the measurements have shown ``current`` losing against
    better groupings since it was put in place, has reached ``cost``, the worker-seconds a
    phase end costs (the server measures both; ``procs.Proc.decide``). This is the
    rent-or-buy rule: stay (pay the loss) until the loss paid equals the price of moving,
    then move (with an exact gain and cost and a gain lasting an unknown time, at most twice
    what the best choice in hindsight would pay). Measured times are noisy; without the margin the
    real trainer's groups flipped at every decision near the bound, and without the price at
    a single decision's spike of the server's measured time per update."""
    j_cur, s_cur = throughput_loss(tau, current, c_push, comm, wait, balanced)
    if over_bound(s_cur, s_max):
        return True
    gain = j_cur - throughput_loss(tau, new, c_push, comm, balanced=balanced)[0]
    return gain >= margin and (cost <= 0 or lost >= cost)


def grouping_objective(tau, groups, lam: float, c_push: float, samples=None, comm: float = 0.0,
                       n_draws: int = 512, seed: int = 0) -> float:
    """``J`` of an arbitrary grouping with the same period model as :func:`segment_periods`
    (used to decide whether a new grouping is worth a regrouping barrier)."""
    t = np.asarray(tau, dtype=float)
    rng = np.random.default_rng(seed)
    idle, rate = 0.0, 0.0
    for g in groups:
        g = list(g)
        if samples is None:
            P = t[g].max()
        else:
            draws = np.stack([np.asarray(samples[i], float)[rng.integers(0, len(samples[i]), n_draws)] for i in g])
            P = draws.max(axis=0).mean()
        P += float(group_comm(len(g), comm))
        idle += float(np.sum(P - t[g]))
        rate += 1.0 / P
    return idle / t.sum() + lam * c_push * rate


def _greedy_ends(ts, lam, c_push, cap, g_max):
    n = ts.size
    ends = list(range(n))

    def cost(ends):
        lo, idle, rate = 0, 0.0, 0.0
        for e in ends:
            idle += np.sum(ts[e] - ts[lo:e + 1])
            rate += 1.0 / ts[e]
            lo = e + 1
        return idle / ts.sum() + lam * c_push * rate, rate

    while True:
        c0, r0 = cost(ends)
        if len(ends) <= g_max and r0 <= cap:
            # try merges that lower the cost
            opts = [(cost(ends[:i] + ends[i + 1:])[0], i) for i in range(len(ends) - 1)]
            if not opts or min(opts)[0] >= c0:
                return ends
        else:
            opts = [(cost(ends[:i] + ends[i + 1:])[0], i) for i in range(len(ends) - 1)]
        _, i = min(opts)
        ends = ends[:i] + ends[i + 1:]
