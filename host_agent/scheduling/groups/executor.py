"""The controller of the DP+MP executor: starts the processes, replays the quota trace,
asks each method's planner for a plan every slot and records what was measured.

``run(cfg)`` starts ``cfg.world`` worker processes (:mod:`.worker`), one CPU-quota cgroup
each, talks to them through a TCP store it hosts (commands and measurements; the workers'
process group uses the same store), and runs every method of ``cfg.methods`` slot by slot,
interleaved: slot t of every method runs under the trace's quotas of slot t, each method with
its own model state, planner, virtual queue and measurements. Test accuracy is measured here
(outside the quotas) on the parameters group 0's leader gathers at the end of each slot; the
other groups' parameters are compared with it (they must be equal: ``max_group_diff``).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .. import digits
from ..rank_processes import RankProcesses, host_store
from ..run_options import QuotaRunOptions
from .costs import profile_layers
from .plan import ExecPlan
from .planner import METHODS, Estimates, SlotPlanner
from .quotas import SlotQuotas, quota_trace, run_prefix


@dataclass
class GroupsConfig(QuotaRunOptions):
    methods: tuple[str, ...] = ("lyapunov", "bsp", "lbbsp")
    model: str = "digits-cnn"
    data: str = "digits"
    world: int = 4
    base_quotas: tuple[float, ...] = (0.5, 0.4, 0.3, 0.2)
    slots: int = 12
    iters: int = 4
    B: int = 128
    lr: float = 0.01
    momentum: float = 0.9
    V: float = 10.0
    budget_frac: float = 0.9
    price_exp: float = 1.2
    timeout_s: float = 300.0
    gmax: int = 4
    script: tuple[dict, ...] = ()  # method "script": replay these plans (ExecPlan dicts), slot t -> t mod len

    def __post_init__(self) -> None:
        for m in self.methods:
            if m == "script" and self.script:
                continue
            if m not in METHODS:
                raise ValueError(f"unknown planner {m!r}; known: {', '.join(METHODS)}")
        if len(self.base_quotas) != self.world:
            raise ValueError(f"{self.world} processes need {self.world} base quotas, got {len(self.base_quotas)}")
        if self.slots < 1 or self.iters < 1 or self.world < 1:
            raise ValueError("slots, iters and world must be >= 1")


def _wait_all(store, keys, ranks: RankProcesses, timeout_s):
    deadline = time.monotonic() + timeout_s
    while True:
        if all(store.check([k]) for k in keys):
            return
        dead = ranks.exited()
        if dead:
            raise RuntimeError(f"worker(s) {dead} exited")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {keys}")
        time.sleep(0.01)


def run(cfg: GroupsConfig, progress=None) -> dict:
    data = digits.dataset_from(cfg.data)
    torch.manual_seed(1)
    layers = digits.model_from(cfg.model)
    costs = profile_layers(layers, data.x_train[:1])
    model_bytes = float(costs.param_bytes.sum())
    quotas = quota_trace(cfg.base_quotas, cfg.slots, cfg.trace, cfg.trace_seed)
    price = np.asarray(cfg.base_quotas) ** cfg.price_exp
    store, port = host_store(cfg.world + 1, cfg.timeout_s)
    out_dir = tempfile.mkdtemp(prefix="saatp-groups-")
    cg = SlotQuotas(cfg.world, run_prefix("groups")) if cfg.cgroups else None
    n = 0
    t_start = time.perf_counter()

    def command(c: dict) -> list[dict]:
        nonlocal n
        store.set(f"cmd/{n}", json.dumps(c))
        _wait_all(store, [f"meas/{n}/{r}" for r in range(cfg.world)], ranks, cfg.timeout_s)
        got = [json.loads(store.get(f"meas/{n}/{r}")) for r in range(cfg.world)]
        n += 1
        return got

    with cg or nullcontext(), RankProcesses(out_dir, "groups run") as ranks:
        if cg:
            cg.set(cfg.base_quotas)
        wcfg = dict(world=cfg.world, port=port, model=cfg.model, data=cfg.data, B=cfg.B, lr=cfg.lr,
                    momentum=cfg.momentum, seed=cfg.seed, backend=cfg.backend, timeout_s=cfg.timeout_s,
                    costs=costs.to_dict(), cgroups=cg.paths if cg else None)
        cfg_path = os.path.join(out_dir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(wcfg, f)
        ranks.start("host_agent.scheduling.groups.worker", cfg_path, cfg.world)
        probe = command({"kind": "probe"})  # under the base quotas: the planners' first measurements
        est0 = Estimates(np.array([p["speed"] for p in probe]), 0.0, 0.0)
        ar = max(p["allreduce"] for p in probe)
        est0.sync_bw = 2 * (cfg.world - 1) / cfg.world * model_bytes / max(ar, 1e-6)
        est0.mig_bw = est0.sync_bw
        planners = {m: SlotPlanner("lyapunov" if m == "script" else m, costs, cfg.B, price, cfg.V, cfg.gmax, cfg.iters)
                    for m in cfg.methods}
        ref = SlotPlanner("lyapunov", costs, cfg.B, price, cfg.V, cfg.gmax, cfg.iters)
        t_ref, budget = ref.set_budget(est0, quotas, np.asarray(cfg.base_quotas), cfg.budget_frac)
        for p in planners.values():
            p.t_ref, p.budget = t_ref, budget
        est = {m: est0.copy() for m in cfg.methods}
        cur: dict[str, ExecPlan | None] = {m: None for m in cfg.methods}
        rec: dict[str, list] = {m: [] for m in cfg.methods}
        final: dict[str, torch.Tensor] = {}
        for t in range(cfg.slots):
            if cg:
                cg.set(quotas[t])
            for m in cfg.methods:
                pl = planners[m]
                t0 = time.perf_counter()
                if m == "script":
                    plan = ExecPlan.from_dict(cfg.script[t % len(cfg.script)])
                    info = dict(predicted_s=float("nan"), predicted_migration_s=float("nan"))
                else:
                    plan, info = pl.choose(est[m], cur[m], cfg.world)
                decide_s = time.perf_counter() - t0
                meas = command({"kind": "slot", "method": m, "plan": plan.to_dict(), "iters": cfg.iters})
                ci = n - 1
                act = plan.active
                iters = [max(meas[r]["iters"][k][1] for r in act) - min(meas[r]["iters"][k][0] for r in act)
                         for k in range(cfg.iters)]
                mig = max(x["migration"][1] for x in meas) - min(x["migration"][0] for x in meas)
                moved = meas[0]["migration_moves"]  # the same move list on every rank
                mig = mig if moved else 0.0
                T = float(np.mean(iters)) + mig / cfg.iters
                cost = float(price[list(act)].sum()) * T
                pl.observe_cost(cost)
                est[m].update(meas, plan, model_bytes)
                params = [torch.load(io.BytesIO(store.get(f"params/{ci}/{g}"))) for g in range(len(plan.groups))]
                diff = max((float((params[g] - params[0]).abs().max()) for g in range(1, len(params))), default=0.0)
                torch.nn.utils.vector_to_parameters(params[0], layers.parameters())
                acc = digits.accuracy(layers, data.x_test, data.y_test)
                losses = [l for x in meas for l in x["losses"]]
                rec[m].append(dict(slot=t, quotas=quotas[t].tolist(), plan=plan.to_dict(), batch_s=iters,
                                   migration_s=mig, migration_moves=moved, T=T, cost=cost, Q=pl.Q,
                                   predicted_s=info["predicted_s"], predicted_migration_s=info["predicted_migration_s"],
                                   decide_s=decide_s, test_acc=acc, max_group_diff=diff,
                                   finite=bool(torch.isfinite(params[0]).all()),
                                   loss=float(np.mean(losses)) if losses else None,
                                   speeds_seen=est[m].speed.tolist()))
                cur[m] = plan
                final[m] = params[0]
            if progress:
                progress(t, {m: rec[m][-1] for m in cfg.methods})
        command_stop = {"kind": "stop"}
        store.set(f"cmd/{n}", json.dumps(command_stop))
        ranks.wait(timeout_s=60)
    out = summarise(cfg, rec, budget, t_ref, costs, time.perf_counter() - t_start, out_dir)
    out["final_params"] = final  # tensors (not JSON): group 0's parameters after the last slot
    return out


def summarise(cfg: GroupsConfig, rec: dict, budget: float, t_ref: float, costs, wall: float, out_dir: str) -> dict:
    runs = {}
    for m, slots in rec.items():
        T = np.array([s["T"] for s in slots])
        c = np.array([s["cost"] for s in slots])
        runs[m] = dict(method=m, mean_batch_s=float(T.mean()), mean_cost=float(c.mean()),
                       cost_over_budget=float(c.mean() / budget), final_Q=slots[-1]["Q"],
                       final_test_acc=slots[-1]["test_acc"], max_group_diff=max(s["max_group_diff"] for s in slots),
                       migrations=sum(1 for s in slots if s["migration_moves"]),
                       migration_s=float(sum(s["migration_s"] for s in slots)),
                       train_s=float(sum(cfg.iters * float(np.mean(s["batch_s"])) + s["migration_s"] for s in slots)),
                       slots=slots)
    out = dict(config=asdict(cfg), budget=budget, t_ref=t_ref, layer_costs=costs.to_dict(), wall_s=wall,
               load_avg=os.getloadavg(), runs=runs, out_dir=out_dir)
    if "lyapunov" in runs:
        ly = runs["lyapunov"]["mean_batch_s"]
        out["lyapunov_vs"] = {m: dict(batch_time_reduction=1.0 - ly / r["mean_batch_s"],
                                      speedup=r["mean_batch_s"] / ly)
                              for m, r in runs.items() if m != "lyapunov"}
    return out
