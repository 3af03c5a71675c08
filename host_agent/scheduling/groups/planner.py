"""The slot planners of the executor: the Lyapunov joint DP+MP planner and the baselines,
all fed with what was *measured* in earlier slots, all paying for migrations.

Each slot a planner gets an :class:`Estimates` (per process speed measured in the previous
slots, measured synchronisation and migration bandwidth; no view of the coming slot) and the
current placement. Every candidate plan is scored by the drift-plus-penalty rule of
:mod:`..online.lyapunov` (``V T/T_ref + Q c/C``) with the migration it needs added: the
bytes of parameters and momentum it moves (:func:`.plan.migration_bytes`) over the measured
migration bandwidth, spread over the slot's iterations, in both the time and the cost. The
current structure, re-split for the new speeds, is always a candidate (it moves nothing).

Methods (all with the same queue, budget and candidate device sets):
``lyapunov`` (the joint search of :class:`..online.search.TentativeSearch`), ``bsp`` (one
replica per device, even split), ``lbbsp`` (shares proportional to measured speed),
``pipeline`` (one pipeline, equal layer counts) and ``hetpipe`` (virtual workers of two
pipelined devices, equal shares).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..online.lp import round_shares, waterfill
from ..online.model import GroupPlan, Plan, SlotView, SystemModel
from ..online.search import TentativeSearch
from .costs import LayerCosts, workload
from .plan import ExecPlan, Group, from_planner, migration_bytes, transfers

METHODS = ("lyapunov", "bsp", "lbbsp", "pipeline", "hetpipe")
MEMORY = 1e12  # bytes: the model fits everywhere on this host


@dataclass
class Estimates:
    """What a planner knows: measurements of earlier slots only."""

    speed: np.ndarray  # CPUs-worth of compute per process
    sync_bw: float  # bytes/s of the leaders' all-reduce (ring-equivalent)
    mig_bw: float  # bytes/s of migrations
    latency: float = 2e-4
    history: list = field(default_factory=list)

    def update(self, meas: list[dict], plan: ExecPlan, model_bytes: float, ema: float = 0.5) -> None:
        for r, m in enumerate(meas):
            v = None
            if m["compute_s"] > 0:
                v = m["work"] / m["compute_s"]
            elif m.get("probe_speed"):
                v = m["probe_speed"]
            if v is not None and np.isfinite(v) and v > 0:
                self.speed[r] = v  # the latest measurement: speeds move with the trace
        G = len(plan.groups)
        sync = [s for r in plan.leaders for s in meas[r]["sync_s"]]
        if G > 1 and sync:
            bw = 2 * (G - 1) / G * model_bytes / max(float(np.median(sync)), 1e-6)
            self.sync_bw = ema * bw + (1 - ema) * self.sync_bw
        moved = sum(m["migration_bytes_in"] for m in meas)
        if moved > 0:
            t = max(m["migration"][1] for m in meas) - min(m["migration"][0] for m in meas)
            self.mig_bw = ema * moved / max(t, 1e-6) + (1 - ema) * self.mig_bw

    def copy(self) -> Estimates:
        return Estimates(self.speed.copy(), self.sync_bw, self.mig_bw, self.latency)


def whole_replicas(plan: ExecPlan) -> ExecPlan:
    """A single-process group runs its share as one microbatch: without a pipeline to fill,
    splitting it only adds per-pass overhead (the search's affine relaxation may pick mu
    below the share)."""
    return ExecPlan(tuple(Group(g.ranks, g.bounds, g.share, g.share) if len(g.ranks) == 1 else g
                          for g in plan.groups), plan.n_layers)


class SlotPlanner:
    def __init__(self, method: str, costs: LayerCosts, B: int, price, V: float = 10.0, gmax: int = 4,
                 iters: int = 4, mu_grid=(4, 8, 16, 32, 64, 128, 256)):
        if method not in METHODS:
            raise ValueError(f"unknown planner {method!r}; known: {', '.join(METHODS)}")
        self.method = method
        self.costs = costs
        self.price = np.asarray(price, dtype=float)
        self.model = SystemModel(workload(costs), B, mu_grid)
        self.search = TentativeSearch(self.model, gmax=gmax)
        self.V = float(V)
        self.iters = int(iters)
        self.Q = 0.0
        self.budget = None
        self.t_ref = None
        self._slot = 0

    # ------------------------------------------------------------------ model view
    def view(self, est: Estimates) -> SlotView:
        n = len(est.speed)
        bw = np.full((n, n), est.sync_bw)
        lat = np.full((n, n), est.latency)
        np.fill_diagonal(lat, 0.0)
        # the fixed per-op cost (alpha) of a stage, as the model's per-microbatch overhead:
        # half the whole model's (a stage holds part of the layers)
        over = 0.5 * float(self.costs.alpha.sum()) / est.speed
        return SlotView(est.speed.copy(), np.full(n, MEMORY), self.price, over, np.zeros(n), bw, lat)

    def set_budget(self, est: Estimates, quotas: np.ndarray, base: np.ndarray, frac: float) -> tuple[float, float]:
        """The operator's budget: ``frac`` x the mean predicted cost of the fastest joint plan
        over the trace's slots (speeds = the probe's speed per CPU x each slot's quotas), and
        ``T_ref`` = its mean batch time. Set once, the same for every method of a run; the
        planners never see the per-slot quotas."""
        per_cpu = est.speed / np.asarray(base, dtype=float)
        Ts, Cs = [], []
        for t, q in enumerate(np.asarray(quotas)):
            e = est.copy()
            e.speed = per_cpu * q
            p = min(self.search.candidates(self.view(e), ("budget", t)), key=lambda p: p.batch_time)
            Ts.append(p.batch_time)
            Cs.append(p.cost)
        return float(np.mean(Ts)), frac * float(np.mean(Cs))

    def mig_time(self, est: Estimates, moves) -> float:
        if not moves:
            return 0.0
        return migration_bytes(moves, self.costs.param_bytes) / est.mig_bw + est.latency * len(moves)

    def _keep(self, view: SlotView, cur: ExecPlan) -> Plan | None:
        """The current structure re-split (water-filling) for the new view."""
        gps = []
        for g in cur.groups:
            tau = self.model.stage_times(view, g.ranks, g.bounds, g.mu)[0]
            gps.append(GroupPlan(g.ranks, g.bounds, g.mu, float(tau.sum() - tau.max()), float(tau.max() / g.mu)))
        if self.method in ("bsp", "hetpipe"):
            shares = round_shares(np.full(len(gps), self.model.B / len(gps)), self.model.B)
        elif self.method == "lbbsp":
            sp = np.array([view.speed[list(g.ranks)].sum() for g in cur.groups])
            shares = round_shares(self.model.B * sp / sp.sum(), self.model.B)
        else:
            _, b = waterfill([g.alpha for g in gps], [g.gamma for g in gps], float(self.model.B))
            shares = round_shares(b, self.model.B)
        return self.model.evaluate(view, gps, shares, kind=self.method)

    def choose(self, est: Estimates, cur: ExecPlan | None, world: int) -> tuple[ExecPlan, dict]:
        if self.budget is None:
            raise RuntimeError("call set_budget first")
        view = self.view(est)
        key = ("slot", self._slot)
        self._slot += 1
        if self.method == "lyapunov":
            cands = list(self.search.candidates(view, key))
        else:
            cands = list(self.search.baseline_candidates(view, self.method, key))
        if cur is not None:
            k = self._keep(view, cur)
            if k is not None:
                cands.append(k)
        if not cands:
            raise RuntimeError("no feasible plan")
        old = cur.holdings(world) if cur is not None else None
        best = None
        for p in cands:
            ex = whole_replicas(from_planner(p, self.model.L))
            mig = 0.0 if old is None else self.mig_time(est, transfers(old, ex.holdings(world)))
            T = p.batch_time + mig / self.iters
            c = float(self.price[list(ex.active)].sum()) * T
            score = self.V * T / self.t_ref + self.Q * c / self.budget
            if best is None or (score, T) < best[0]:
                best = ((score, T), ex, dict(predicted_s=p.batch_time, predicted_migration_s=mig,
                                              predicted_cost=c, score=score))
        return best[1], best[2]

    def observe_cost(self, c: float) -> None:
        self.Q = max(self.Q + c / self.budget - 1.0, 0.0)
