"""Tentative search over structures (design section 2.3) and the baselines' structures.

For one slot's observation the search tries, pruned:

1. candidate device sets: prefixes of the devices sorted by speed/price and by speed,
   bandwidth-aware prefixes (grow from the fastest device by speed x link quality, and from
   the cheapest-per-FLOP device by speed/price x link quality), every single device, and
   "all minus detected stragglers" (speed below ``nominal / (1 + theta)``);
2. group counts ``G = 1..gmax`` and three groupings per ``G``: LPT balancing of aggregate
   speed, contiguous runs of the speed order (similar devices together), and a
   bandwidth-aware LPT that prefers groups whose members share fast links;
3. per group, two chain orders (speed-descending and a greedy high-bandwidth chain) and the
   communication-aware layer DP of :meth:`SystemModel.layer_dp` for every microbatch size;
4. the water-filling split (:func:`waterfill`), integer rounding, and the exact evaluation.

The structure search does not depend on the virtual queue: for a device set the drift-plus-
penalty objective ``V T/T_ref + Q c/C`` equals ``T (V/T_ref + Q P_active / C)``, so the best
structure for a set is the one with the smallest batch time. :meth:`TentativeSearch.candidates`
returns that best plan per set; the planner then weighs sets against the queue. Results are
memoised per slot so several planners (different ``V``) can share one search.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np

from .lp import round_shares, waterfill
from .model import GroupPlan, Plan, SlotView, SystemModel


def detect_stragglers(speed: np.ndarray, nominal: np.ndarray, theta: float = 0.3) -> np.ndarray:
    """Indices of devices running slower than ``nominal / (1 + theta)``."""
    return np.flatnonzero(np.asarray(speed) * (1 + theta) < np.asarray(nominal))


def _lpt(devs, speed, G):
    groups = [[] for _ in range(G)]
    load = np.zeros(G)
    for d in sorted(devs, key=lambda d: -speed[d]):
        g = int(np.argmin(load))
        groups[g].append(d)
        load[g] += speed[d]
    return groups


def _contiguous(devs, speed, G):
    order = sorted(devs, key=lambda d: -speed[d])
    n = len(order)
    # G chunks, each at least one device, cut where the cumulative speed crosses k/G
    cum = np.cumsum([speed[d] for d in order])
    cuts = []
    for k in range(1, G):
        c = int(np.searchsorted(cum, cum[-1] * k / G)) + 1
        lo = (cuts[-1] if cuts else 0) + 1
        cuts.append(min(max(c, lo), n - (G - k)))
    b = [0, *cuts, n]
    return [order[b[i]:b[i + 1]] for i in range(G)]


def _bw_lpt(devs, speed, bw, G):
    groups = [[] for _ in range(G)]
    load = np.zeros(G)
    top = bw[np.ix_(devs, devs)].max() if len(devs) > 1 else 1.0
    for d in sorted(devs, key=lambda d: -speed[d]):
        near = [g for g in range(G) if groups[g] and min(bw[d, m] for m in groups[g]) >= 0.5 * top]
        empty = [g for g in range(G) if not groups[g]]
        pool = near if near and (not empty or min(load[near]) < speed[d]) else (empty or list(range(G)))
        g = min(pool, key=lambda g: load[g])
        groups[g].append(d)
        load[g] += speed[d]
    return groups


def _bw_chain(devs, speed, bw):
    rest = sorted(devs, key=lambda d: -speed[d])
    chain = [rest.pop(0)]
    while rest:
        nxt = max(rest, key=lambda d: (bw[chain[-1], d], speed[d]))
        rest.remove(nxt)
        chain.append(nxt)
    return chain


class TentativeSearch:
    def __init__(self, model: SystemModel, gmax: int = 4, theta: float = 0.3,
                 nominal_speed: np.ndarray | None = None, orders: bool = True):
        if gmax < 1:
            raise ValueError("gmax must be >= 1")
        self.m = model
        self.gmax = int(gmax)
        self.theta = theta
        self.nominal = nominal_speed
        self.orders = orders
        self._memo_key = None
        self._memo: dict = {}
        self._dp: dict = {}
        self._memo_view = None
        self.evaluated = 0

    # ------------------------------------------------------------------ helpers
    def _reset_memo(self, view, slot_key=None):
        # the view is kept referenced so that its id cannot be reused by another object
        key = (slot_key, id(view))
        if key != self._memo_key:
            self._memo_key = key
            self._memo_view = view
            self._memo = {}
            self._dp = {}

    def chain_dp(self, view, chain):
        key = tuple(chain)
        r = self._dp.get(key)
        if r is None:
            r = self.m.layer_dp(view, chain)
            self._dp[key] = r
        return r

    def chain_options(self, view, chain):
        """(mu, bounds, alpha, gamma) of the DP split for every feasible mu; memoised per slot."""
        key = ("opts", tuple(chain))
        r = self._dp.get(key)
        if r is None:
            r = []
            for mu, (bounds, bott) in zip(self.m.mu_grid, self.chain_dp(view, chain)):
                if np.isfinite(bott):
                    tau = self.m.stage_times(view, chain, bounds, mu)[0]
                    r.append((int(mu), tuple(bounds), float(tau.sum() - tau.max()), float(tau.max() / mu)))
            self._dp[key] = r
        return r

    def group_for_chain(self, view, chain, b_est) -> GroupPlan | None:
        best = None
        for mu, bounds, alpha, gamma in self.chain_options(view, chain):
            score = alpha + gamma * max(b_est, mu)
            if best is None or score < best[0]:
                best = (score, GroupPlan(tuple(chain), bounds, mu, alpha, gamma))
        return None if best is None else best[1]

    def best_group(self, view, devs, b_est) -> GroupPlan | None:
        chains = [sorted(devs, key=lambda d: -view.speed[d])]
        if self.orders and len(devs) > 2:
            c2 = _bw_chain(devs, view.speed, view.bandwidth)
            if c2 != chains[0]:
                chains.append(c2)
        best = None
        for c in chains:
            g = self.group_for_chain(view, c, b_est)
            if g is not None and (best is None or g.alpha + g.gamma * b_est < best.alpha + best.gamma * b_est):
                best = g
        return best

    def solve_split(self, view, groups: list[GroupPlan], kind="joint") -> Plan | None:
        a = np.array([g.alpha for g in groups])
        c = np.array([g.gamma for g in groups])
        _, b = waterfill(a, c, float(self.m.B))
        shares = round_shares(b, self.m.B)
        self.evaluated += 1
        return self.m.evaluate(view, groups, shares, kind)

    def device_sets(self, view: SlotView) -> list[tuple[int, ...]]:
        n = view.n
        sets = []
        for key in (view.speed / view.price, view.speed):
            order = list(np.argsort(-key, kind="stable"))
            sets += [tuple(sorted(order[:k])) for k in range(1, n + 1)]
        # bandwidth-aware prefixes: from the fastest device, add the device with the best
        # speed x (slowest link to the set / fastest link)
        # (from the fastest device by speed, and from the cheapest-per-FLOP device by speed/price)
        top = view.bandwidth[~np.eye(n, dtype=bool)].max() if n > 1 else 1.0
        for key in (view.speed, view.speed / view.price):
            chosen = [int(np.argmax(key))]
            sets.append((chosen[0],))
            while len(chosen) < n:
                rest = [d for d in range(n) if d not in chosen]
                nxt = max(rest, key=lambda d: key[d] * view.bandwidth[d, chosen].min() / top)
                chosen.append(nxt)
                sets.append(tuple(sorted(chosen)))
        sets += [(d,) for d in range(n)]  # every single device
        if self.nominal is not None:
            s = detect_stragglers(view.speed, self.nominal, self.theta)
            if 0 < len(s) < n:
                sets.append(tuple(d for d in range(n) if d not in set(s.tolist())))
        return list(dict.fromkeys(sets))

    def plan_for_set(self, view: SlotView, devs: tuple[int, ...], slot_key=None) -> Plan | None:
        self._reset_memo(view, slot_key)
        best = None
        tot = view.speed[list(devs)].sum()
        for G in range(1, min(self.gmax, len(devs)) + 1):
            groupings = [_lpt(devs, view.speed, G)]
            if G > 1:
                groupings += [_contiguous(devs, view.speed, G), _bw_lpt(devs, view.speed, view.bandwidth, G)]
            seen = set()
            for grouping in groupings:
                key = frozenset(frozenset(g) for g in grouping)
                if key in seen or any(not g for g in grouping):
                    continue
                seen.add(key)
                gps = [self.best_group(view, g, self.m.B * view.speed[g].sum() / tot) for g in grouping]
                if any(g is None for g in gps):
                    continue
                p = self.solve_split(view, gps)
                if p is not None and (best is None or p.batch_time < best.batch_time):
                    best = p
        return best

    def candidates(self, view: SlotView, slot_key=None) -> list[Plan]:
        """Best plan (min batch time) per candidate device set; memoised on ``slot_key``."""
        self._reset_memo(view, slot_key)
        if "joint" not in self._memo:
            out = [self.plan_for_set(view, s, slot_key) for s in self.device_sets(view)]
            self._memo["joint"] = [p for p in out if p is not None]
        return self._memo["joint"]

    # ------------------------------------------------------------------ baseline structures
    def _dp_replica(self, view, d):
        """A single device holding the whole model, with the largest microbatch that fits."""
        res = self.chain_dp(view, (d,))
        feas = [mu for mu, (b, t) in zip(self.m.mu_grid, res) if np.isfinite(t)]
        if not feas:
            return None
        mu = max(feas)
        tau = self.m.stage_times(view, (d,), (0, self.m.L), mu)[0]
        return GroupPlan((d,), (0, self.m.L), int(mu), 0.0, float(tau.max() / mu))

    def baseline_plan(self, view: SlotView, kind: str, devs, ema_speed=None) -> Plan | None:
        """The fixed-structure baseline ``kind`` on device set ``devs`` (None if infeasible)."""
        devs = list(devs)
        if kind in ("bsp", "lbbsp"):
            gps = [self._dp_replica(view, d) for d in devs]
            if any(g is None for g in gps):
                return None
            if kind == "bsp":
                share = np.full(len(devs), self.m.B / len(devs))
            else:
                sp = (view.speed if ema_speed is None else ema_speed)[devs]
                share = self.m.B * sp / sp.sum()
            return self.m.evaluate(view, gps, round_shares(share, self.m.B), kind)
        if kind == "pipeline":
            g = self.m.uniform_group(view, sorted(devs), float(self.m.B))
            return None if g is None else self.m.evaluate(view, [g], [self.m.B], kind)
        if kind == "hetpipe":
            # HetPipe-style (Park et al., USENIX ATC'20): virtual workers of about two devices
            # each with balanced aggregate speed (LPT), each a pipeline with the min-bottleneck
            # layer split, and the same minibatch for every virtual worker.
            G = max(1, len(devs) // 2)
            gps = [self.best_group(view, g, self.m.B / G) for g in _lpt(devs, view.speed, G)]
            if any(g is None for g in gps):
                return None
            return self.m.evaluate(view, gps, round_shares(np.full(G, self.m.B / G), self.m.B), kind)
        raise ValueError(f"unknown baseline {kind!r}")

    def baseline_candidates(self, view: SlotView, kind: str, slot_key=None,
                            ema_speed: np.ndarray | None = None) -> list[Plan]:
        """Per device-set plans of a fixed-structure baseline.

        ``bsp``: every device a full replica, even split; ``lbbsp``: full replicas, shares
        proportional to (predicted) speed; ``pipeline``: one pipeline over all devices of the
        set with equal layer counts per stage and the best microbatch size from the grid."""
        self._reset_memo(view, slot_key)
        mk = (kind, None if ema_speed is None else ema_speed.tobytes())
        if mk in self._memo:
            return self._memo[mk]
        out = []
        for devs in self.device_sets(view):
            p = self.baseline_plan(view, kind, devs, ema_speed)
            if p is not None:
                out.append(p)
        self._memo[mk] = out
        return out


def exhaustive_best(model: SystemModel, view: SlotView, score, max_devices: int = 5) -> Plan:
    """Reference for the heuristic-quality check: every device subset, every set partition
    into groups, every chain order, every layer split (enumerated), every mu in the grid,
    water-filled split. ``score(plan) -> float`` is the slot objective. Small N only."""
    from itertools import combinations
    n = view.n
    if n > max_devices:
        raise ValueError(f"exhaustive search is limited to {max_devices} devices")
    L = model.L
    best: tuple[float, Plan] | None = None

    def partitions(items):
        if not items:
            yield []
            return
        first, rest = items[0], items[1:]
        for p in partitions(rest):
            for i in range(len(p)):
                yield p[:i] + [[first] + p[i]] + p[i + 1:]
            yield [[first]] + p

    chain_cache: dict = {}

    def chain_options(chain):
        """All (alpha, gamma, GroupPlan) for every split and mu of an ordered chain."""
        if chain in chain_cache:
            return chain_cache[chain]
        K = len(chain)
        opts = []
        for cuts in combinations(range(1, L), K - 1):
            bounds = (0, *cuts, L)
            for mu in model.mu_grid:
                if mu > model.mu_cap_uniform(view, chain, bounds):
                    continue
                tau = model.stage_times(view, chain, bounds, mu)[0]
                opts.append(GroupPlan(chain, bounds, int(mu), float(tau.sum() - tau.max()), float(tau.max() / mu)))
        chain_cache[chain] = opts
        return opts

    from itertools import product
    for k in range(1, n + 1):
        for subset in combinations(range(n), k):
            for part in partitions(list(subset)):
                per_group = []
                for grp in part:
                    opts = []
                    for chain in permutations(grp):
                        opts += chain_options(chain)
                    per_group.append(opts)
                if any(not o for o in per_group):
                    continue
                for combo in product(*per_group):
                    combo = list(combo)
                    _, b = waterfill([g.alpha for g in combo], [g.gamma for g in combo], float(model.B))
                    p = model.evaluate(view, combo, round_shares(b, model.B))
                    s = score(p)
                    if best is None or s < best[0]:
                        best = (s, p)
    assert best is not None
    return best[1]
