"""System model of the joint DP+MP planner (design section 2.2).

A *structure* is a list of groups; each group is an ordered chain of devices (a pipeline,
one stage per device) holding the whole model, with layer cut points and a microbatch size.
Groups run data-parallel on uneven shares ``b_g`` of the global batch ``B``.

* Stage time per microbatch of ``mu`` samples on device ``d`` for layers ``[lo, hi)``:
  ``overhead_d + (fixed[lo:hi] + (fwd+bwd FLOPs) * max(mu, knee_d)) / v_d`` plus, if a next
  stage exists,
  the activation send and the gradient return over the link: ``2 (lat + act_out * mu / bw)``.
* Group time for ``b`` samples in ``M = ceil(b / mu)`` equal microbatches of ``mu' = b/M``:
  ``T_g(b) = sum_s tau_s(mu') + (M - 1) max_s tau_s(mu')`` (fill-drain). Relaxing the ceiling
  gives the affine ``alpha_g + gamma_g b`` with ``alpha = sum tau - max tau``, ``gamma = max tau / mu``.
* Memory: a stage holds ``4 x`` its weight bytes (weights, gradients, two Adam moments)
  plus ``K`` microbatches of stashed activations (a 1F1B-like bound):
  ``4 params + mu * K * (act_int + act_out) <= memory`` limits ``mu``.
* Inter-group synchronisation: every layer is all-reduced (ring) among the ``G`` devices that
  hold it, ``2 (G-1)/G * params_l / bw_min(l) + 2 (G-1) lat``; devices sync their layers one
  after another and devices run in parallel, so ``T_sync = max_device sum_{l on device}``.
* Batch time ``T = max_g T_g(b_g) + T_sync``; cost ``c = sum_{active n} price_n * T``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..workloads import Workload

OPT_STATE_FACTOR = 4.0  # weights + grads + 2 Adam moments, in units of the weight bytes


@dataclass
class SlotView:
    """What the planner needs about the cluster for one slot (arrays over devices)."""

    speed: np.ndarray  # FLOP/s, already divided by straggler factors
    memory: np.ndarray  # bytes
    price: np.ndarray  # $ per second
    overhead: np.ndarray  # s per microbatch
    knee: np.ndarray  # samples
    bandwidth: np.ndarray  # [N, N] bytes/s
    latency: np.ndarray  # [N, N] s

    @property
    def n(self) -> int:
        return len(self.speed)


@dataclass
class GroupPlan:
    devices: tuple[int, ...]  # pipeline order
    cuts: tuple[int, ...]  # stage k holds layers [bounds[k], bounds[k+1])
    mu: int
    alpha: float
    gamma: float

    @property
    def bounds(self) -> tuple[int, ...]:
        return self.cuts


@dataclass
class Plan:
    groups: list[GroupPlan]
    shares: np.ndarray  # int samples per group
    group_times: np.ndarray
    sync_time: float
    batch_time: float
    cost: float
    active: tuple[int, ...]  # devices that did work
    kind: str = "joint"
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "groups": [{"devices": [int(d) for d in g.devices], "bounds": [int(c) for c in g.cuts],
                        "mu": int(g.mu), "share": int(s), "time": float(t)}
                       for g, s, t in zip(self.groups, self.shares, self.group_times)],
            "sync_time": float(self.sync_time), "batch_time": float(self.batch_time),
            "cost": float(self.cost), "active": [int(d) for d in self.active],
        }


class SystemModel:
    """Evaluates structures for one workload and global batch ``B``."""

    def __init__(self, workload: Workload, B: int, mu_grid=(1, 2, 4, 8, 16, 32), fixed=None):
        """``fixed``: per-layer work of one pass whatever its size (launch and per-op costs,
        in the units of the FLOPs; None: zero), which a stage pays per microbatch for the
        layers it holds, on top of the device's ``overhead``."""
        if B < 1:
            raise ValueError(f"global batch must be >= 1, got {B}")
        self.w = workload
        self.B = int(B)
        self.L = workload.n
        flops = workload.fwd + workload.bwd
        self.Fp = np.concatenate([[0.0], np.cumsum(flops)])
        self.Pp = np.concatenate([[0.0], np.cumsum(workload.params)])
        self.Ap = np.concatenate([[0.0], np.cumsum(workload.act_int + workload.act_out)])
        fx = np.zeros(workload.n) if fixed is None else np.asarray(fixed, dtype=float)
        if fx.shape != (workload.n,) or np.any(fx < 0) or not np.all(np.isfinite(fx)):
            raise ValueError(f"fixed: {workload.n} finite values >= 0 needed")
        self.Xp = np.concatenate([[0.0], np.cumsum(fx)])
        self.params = workload.params.copy()
        self.act_out = workload.act_out.copy()
        self.mu_grid = np.array(sorted({int(m) for m in mu_grid if 1 <= m <= self.B}), dtype=float)
        if self.mu_grid.size == 0:
            self.mu_grid = np.array([1.0])

    # ---------------------------------------------------------------- stage times
    def stage_times(self, view: SlotView, devices, bounds, mu) -> np.ndarray:
        """Per-stage time for microbatch size(s) ``mu`` (scalar or 1-D) -> [len(mu), K]."""
        mu = np.atleast_1d(np.asarray(mu, dtype=float))
        K = len(devices)
        out = np.empty((mu.size, K))
        for k, d in enumerate(devices):
            lo, hi = bounds[k], bounds[k + 1]
            F = self.Fp[hi] - self.Fp[lo]
            t = view.overhead[d] + (self.Xp[hi] - self.Xp[lo] + F * np.maximum(mu, view.knee[d])) / view.speed[d]
            if k + 1 < K:
                e = devices[k + 1]
                t = t + 2.0 * (view.latency[d, e] + self.act_out[hi - 1] * mu / view.bandwidth[d, e])
            out[:, k] = t
        return out

    # ---------------------------------------------------------------- layer DP
    def layer_dp(self, view: SlotView, devices) -> list[tuple[tuple[int, ...], float]]:
        """Communication-aware min-bottleneck layer split of the chain ``devices`` for every
        microbatch size in ``mu_grid``: ``D[k, l] = min_{l'<l} max(D[k-1, l'], tau_k(l'..l))``.
        Returns ``[(bounds, bottleneck)]`` per mu (bottleneck = inf if infeasible)."""
        K, L = len(devices), self.L
        mus = self.mu_grid
        nm = mus.size
        if K > L:
            return [((), np.inf)] * nm
        i_idx, j_idx = np.meshgrid(np.arange(L + 1), np.arange(L + 1), indexing="ij")
        valid = i_idx < j_idx
        INF = np.inf
        D = np.full((nm, L + 1), INF)
        D[:, 0] = 0.0
        choice = np.zeros((K, nm, L + 1), dtype=int)
        for k, d in enumerate(devices):
            F = self.Fp[None, :] - self.Fp[:, None]  # [i, j] flops of layers [i, j)
            X = self.Xp[None, :] - self.Xp[:, None]  # [i, j] fixed work of layers [i, j)
            comp = view.overhead[d] + (X[None] + F[None] * np.maximum(mus, view.knee[d])[:, None, None]) / view.speed[d]
            if k + 1 < K:
                e = devices[k + 1]
                a = np.concatenate([[0.0], self.act_out])  # act_out of layer j-1 at index j
                comm = 2.0 * (view.latency[d, e] + a[None, None, :] * mus[:, None, None] / view.bandwidth[d, e])
                cost = comp + comm
            else:
                cost = comp
            static = OPT_STATE_FACTOR * (self.Pp[None, :] - self.Pp[:, None])
            act = (self.Ap[None, :] - self.Ap[:, None])
            mem_ok = (static[None] + mus[:, None, None] * K * act[None]) <= view.memory[d]
            cost = np.where(valid[None] & mem_ok, cost, INF)
            cand = np.maximum(D[:, :, None], cost)  # [mu, i, j]
            if k + 1 == K:
                # the last stage must end at L
                best_i = np.argmin(cand[:, :, L], axis=1)
                newD = np.full((nm, L + 1), INF)
                newD[:, L] = cand[np.arange(nm), best_i, L]
                choice[k, :, L] = best_i
            else:
                best_i = np.argmin(cand, axis=1)
                newD = np.take_along_axis(cand, best_i[:, None, :], axis=1)[:, 0, :]
                choice[k] = best_i
            D = newD
        out = []
        for m in range(nm):
            if not np.isfinite(D[m, L]):
                out.append(((), np.inf))
                continue
            bounds = [L]
            j = L
            for k in range(K - 1, -1, -1):
                j = int(choice[k, m, j])
                bounds.append(j)
            out.append((tuple(reversed(bounds)), float(D[m, L])))
        return out

    def uniform_group(self, view: SlotView, devices, b_est: float) -> GroupPlan | None:
        """Equal-layer-count split (the single-pipeline baseline), best mu from the grid."""
        K, L = len(devices), self.L
        if K > L:
            return None
        bounds = tuple(int(round(L * k / K)) for k in range(K + 1))
        best = None
        for m in self.mu_grid:
            if m > self.mu_cap_uniform(view, devices, bounds):
                continue
            tau = self.stage_times(view, devices, bounds, m)[0]
            alpha, gamma = float(tau.sum() - tau.max()), float(tau.max() / m)
            score = alpha + gamma * max(b_est, m)
            if best is None or score < best[0]:
                best = (score, GroupPlan(tuple(devices), bounds, int(m), alpha, gamma))
        return None if best is None else best[1]

    def mu_cap_uniform(self, view: SlotView, devices, bounds) -> float:
        K = len(devices)
        cap = np.inf
        for k, d in enumerate(devices):
            lo, hi = bounds[k], bounds[k + 1]
            free = view.memory[d] - OPT_STATE_FACTOR * (self.Pp[hi] - self.Pp[lo])
            act = self.Ap[hi] - self.Ap[lo]
            if free < 0:
                return 0.0
            if act > 0:
                cap = min(cap, free / (K * act))
        return cap

    # ---------------------------------------------------------------- exact evaluation
    def group_time(self, view: SlotView, g: GroupPlan, b: int) -> float:
        if b <= 0:
            return 0.0
        M = int(np.ceil(b / g.mu))
        tau = self.stage_times(view, g.devices, g.cuts, b / M)[0]
        return float(tau.sum() + (M - 1) * tau.max())

    def sync_time(self, view: SlotView, groups: list[GroupPlan]) -> float:
        G = len(groups)
        if G <= 1:
            return 0.0
        holder = np.empty((G, self.L), dtype=int)
        for gi, g in enumerate(groups):
            for k, d in enumerate(g.devices):
                holder[gi, g.cuts[k]:g.cuts[k + 1]] = d
        f = 2.0 * (G - 1) / G
        bw = view.bandwidth[holder[:, None, :], holder[None, :, :]]  # [G, G, L]
        lat = view.latency[holder[:, None, :], holder[None, :, :]]
        off = ~np.eye(G, dtype=bool)
        bw_min = np.where(off[:, :, None], bw, np.inf).min(axis=(0, 1))
        lat_max = np.where(off[:, :, None], lat, 0.0).max(axis=(0, 1))
        t = f * self.params / bw_min + 2 * (G - 1) * lat_max  # [L]
        # a device belongs to one group, so it holds each layer at most once
        per_dev = np.bincount(holder.ravel(), weights=np.tile(t, G))
        return float(per_dev.max())

    def evaluate(self, view: SlotView, groups: list[GroupPlan], shares, kind: str = "joint") -> Plan:
        shares = np.asarray(shares, dtype=int)
        keep = [i for i, s in enumerate(shares) if s > 0]
        groups = [groups[i] for i in keep]
        shares = shares[keep]
        times = np.array([self.group_time(view, g, int(s)) for g, s in zip(groups, shares)])
        ts = self.sync_time(view, groups)
        T = float(times.max() + ts)
        active = tuple(sorted(d for g in groups for d in g.devices))
        cost = float(view.price[list(active)].sum() * T)
        return Plan(groups, shares, times, ts, T, cost, active, kind)
