"""The controller of the DP+MP executor: starts the processes, replays the quota trace,
asks each method's planner for a plan every slot and records what was measured.

``run(cfg)`` starts ``cfg.world`` worker processes (:mod:`.worker`), one CPU-quota cgroup
each, talks to them through a TCP store it hosts (commands and measurements; the workers'
process group uses the same store), and runs every method of ``cfg.methods`` slot by slot,
interleaved: slot t of every method runs under the trace's quotas of slot t (method ``t mod
n`` first, the order rotating), each method with its own model state, planner, virtual queue
and measurements. With ``react`` (the default) a slot's first iteration runs as a command of
its own, and a method whose estimates it contradicts (:func:`.planner.react`) gets a new plan
for the slot's other iterations. Test accuracy is measured here (outside the quotas) on the
parameters group 0's leader gathers at the end of each slot; the other groups' parameters are
compared with it (they must be equal: ``max_group_diff``).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from .. import digits
from ..fn_specs import refuse_run_during_import, spec_of
from ..progress import StallWatch
from ..rank_processes import RankFailure, RankProcesses, get_blob, host_store
from ..run_dirs import run_dir
from ..run_options import QuotaRunOptions, require, sigterm_exits
from .checks import check_layers_share_no_parameter, check_model_on_data, least_batch
from .costs import profile_layers
from .plan import ExecPlan, from_planner
from .planner import (BUDGET_REFS, METHODS, STATIC, Estimates, SlotPlanner, allreduce_times, jumped,
                      migration_rate, react, static_set, whole_replicas)
from .quotas import SlotQuotas, quota_trace, run_prefix, warn_above_one_cpu, warn_trace_not_applied


@dataclass
class GroupsConfig(QuotaRunOptions):
    methods: tuple[str, ...] = ("lyapunov", "bsp", "lbbsp")
    # as train_cgp takes them: a name, or an importable top-level function (its MODULE:FN); the
    # data also as a digits.Dataset or (x_train, y_train, x_test, y_test)
    model: str = "digits-cnn"
    data: str | digits.Dataset = "digits"
    world: int | None = None  # None: one process per base quota (until 2026-11-28 4, so base_quotas of 2 were refused)
    base_quotas: tuple[float, ...] = (0.35, 0.3, 0.2, 0.15)  # ~1 CPU in all: the host has 2 cores, shared
    slots: int = 12
    iters: int = 4
    hold: int = 1  # decision slots per trace slot (the quotas stay for `hold` slots; the planners decide every slot)
    B: int = 128
    lr: float = 0.01
    momentum: float = 0.9
    V: float = 10.0
    budget_frac: float = 1.0
    budget_ref: str = "all"  # the budget: budget_frac x the predicted cost of LB-BSP on all processes ("all") or of the fastest plan
    price_exp: float = 1.2
    timeout_s: float = 300.0
    gmax: int = 4
    script: tuple[dict, ...] = ()  # method "script": replay these plans (ExecPlan dicts), slot t -> t mod len
    react: bool = True  # decide again after a slot's first iteration if it shows a quota moved (not "script")

    def __post_init__(self) -> None:
        if self.trace is not None:  # a pathlib.Path: the result's config as text (JSON), as train_cgp's
            self.trace = os.fspath(self.trace)
        self.take_quota_sequence()
        # until 2026-11-28 a function failed with "argument of type 'function' is not iterable"
        self.model = spec_of(self.model, "model")
        self.data = digits.dataset_arg(self.data, "data")
        # as the command's --planner: one name, "all", repeats once. Until 2026-11-28
        # methods="lyapunov" failed with "unknown planner 'l'", ("all",) as unknown, and an empty
        # tuple with a ZeroDivisionError traceback after the processes had started
        names = (self.methods,) if isinstance(self.methods, str) else tuple(self.methods)
        self.methods = tuple(dict.fromkeys(m for x in names for m in (METHODS if x == "all" else (x,))))
        if not self.methods:
            raise ValueError(f"methods (--planner) must name at least one planner; known: {', '.join(METHODS)}")
        for m in self.methods:
            if m == "script" and self.script:
                continue
            if m not in METHODS:
                raise ValueError(f"unknown planner {m!r}; known: {', '.join(METHODS)}")
        if self.budget_ref not in BUDGET_REFS:
            raise ValueError(f"unknown budget reference {self.budget_ref!r}; known: {', '.join(BUDGET_REFS)}")
        if self.world is None:
            self.world = len(self.base_quotas)
        # one check at a time, each naming the field (its command-line option) and the value
        if self.world < 1:
            raise ValueError(f"the run needs at least 1 process (one per --quotas value), got {self.world}")
        if len(self.base_quotas) != self.world:
            raise ValueError(f"{self.world} processes need {self.world} base quotas, got {len(self.base_quotas)}")
        self.check_run_options("process")
        self.require_fields((
            ("slots", "--slots", self.slots >= 1, ">= 1"),
            ("iters", "--iters", self.iters >= 1, ">= 1"),
            ("hold", "--hold", self.hold >= 1, ">= 1"),
            ("B", "--batch", self.B >= 1, ">= 1"),
            ("budget_frac", "--budget-frac", self.budget_frac > 0, "> 0 (a fraction of the reference's cost)"),
            ("lr", "--lr", self.lr > 0, "> 0"),
            ("V", "--V", self.V >= 0, ">= 0"),
            ("momentum", None, 0 <= self.momentum < 1, "in [0, 1)"),
            ("gmax", None, self.gmax >= 1, ">= 1")))


REFERENCE = "_budget_reference"  # the method name (its own model state on the workers) of the reference run
REFERENCE_ITERS = 5


def measure_reference(ref: SlotPlanner, est0: Estimates, least: int, cfg: GroupsConfig, command) -> dict:
    """Run LB-BSP on every process under the base quotas for :data:`REFERENCE_ITERS`
    iterations (a model state of its own, nothing gathered) and return its measured over its
    predicted batch time (``ratio``), by which the budget and ``T_ref`` are scaled: the
    start-up model misses what an iteration costs beyond the layers' forward and backward
    (the optimizer step, the bookkeeping; and the all-reduce probe is pessimistic on tiny
    models), so a budget from it alone was 0.2-10x off for models far from the digits CNN
    (a 1.2k-parameter MLP ran every method at 4.1-4.9x its budget; a 10.5k-parameter CNN at
    0.09-0.14x). ``ratio`` is 1 when the plan would give a pass fewer samples than the model
    trains on."""
    plan0 = ref.search.baseline_plan(ref.view(est0), "lbbsp", range(cfg.world))
    ex = whole_replicas(from_planner(plan0, ref.model.L))
    out = dict(plan=ex.to_dict(), predicted_s=float(plan0.batch_time), measured_s=None, ratio=1.0)
    if min(min(g.microbatches()) for g in ex.groups) < least:
        return dict(out, skipped=f"a pass of fewer than {least} samples")
    meas = command({"kind": "slot", "method": REFERENCE, "plan": ex.to_dict(), "iters": REFERENCE_ITERS,
                    "gather": False, "probe": False})
    measured = float(np.median(part_times(meas, ex)[0]))
    return dict(out, measured_s=measured, ratio=measured / max(float(plan0.batch_time), 1e-9))


def part_times(meas: list[dict], plan: ExecPlan) -> tuple[list[float], float, int]:
    """What one command measured of a plan: each iteration's time (first active process's
    start to last one's end), the migration's time (0 without moves) and its move count."""
    act = plan.active
    k_n = len(meas[act[0]]["iters"])
    iters = [max(meas[r]["iters"][k][1] for r in act) - min(meas[r]["iters"][k][0] for r in act)
             for k in range(k_n)]
    moved = meas[0]["migration_moves"]  # the same move list on every rank
    mig = max(x["migration"][1] for x in meas) - min(x["migration"][0] for x in meas) if moved else 0.0
    return iters, mig, moved


def merge_parts(a: dict, b: dict) -> dict:
    """One process's measurements of two consecutive commands of the same plan as one slot's
    (the second moves nothing and probes nothing)."""
    out = dict(a)
    for k in ("iters", "sync_s", "sync", "phases", "losses"):
        out[k] = a[k] + b[k]
    out["work"] = a["work"] + b["work"]
    out["compute_s"] = a["compute_s"] + b["compute_s"]
    out["probe_speed"] = a["probe_speed"] if a["probe_speed"] is not None else b["probe_speed"]
    return out


def _wait_all(store, keys, ranks: RankProcesses, timeout_s, watch: StallWatch | None = None):
    """Until every key of ``keys`` (one per rank) is set; RuntimeError when a rank exits, when
    a rank whose key is missing makes no progress for the stall limit (``watch``), or after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    if watch:
        watch.reset()  # the wait between two commands (the parent planning) is no gap
    while True:
        missing = [r for r, k in enumerate(keys) if not store.check([k])]
        if not missing:
            return
        if watch:
            watch.check(missing)
        if ranks.exited():
            ranks.settle()
            # how each ended (until 2026-11-28 only which: a worker killed by SIGKILL, or by the
            # kernel's OOM killer, read as one that failed on its own, with an empty log)
            raise RankFailure(f"worker(s) {ranks.exited()} of {len(ranks.procs)} exited: "
                              f"{ranks.exits('worker', ranks.exited())}")
        if time.monotonic() > deadline:
            raise RankFailure(f"timed out after {timeout_s:g} s waiting for process(es) {missing} "
                              f"({', '.join(keys[r] for r in missing)})")
        time.sleep(0.01)


def run(cfg: GroupsConfig, progress=None, log_dir: str | None = None) -> dict:
    """Every method, slot by slot. The processes' configs and logs go to ``log_dir``
    (``out_dir`` in the result), else to a temporary directory removed after a successful run
    (``out_dir`` None).

    Interrupted (Ctrl-C: ``KeyboardInterrupt``; SIGTERM: ``SystemExit``) after a slot that every
    method finished, the exception carries the result of those slots as ``partial_result``
    (:func:`summarise`'s, with ``interrupted``), which ``saatp train groups`` writes to
    ``--json``: until 2026-11-28 an interrupted run lost every slot it had run. A run that fails
    (``RuntimeError``: a rank exited or hung) does the same, with ``failed`` (``slots_done``,
    ``slots``, ``error``: the message's first line) in place of ``interrupted``."""
    refuse_run_during_import("groups.run")
    if not isinstance(cfg, GroupsConfig):  # a dict failed with "'dict' object has no attribute 'data'" (until 2026-11-28)
        raise TypeError(f"cfg must be a GroupsConfig (from host_agent.scheduling.groups import GroupsConfig; "
                        f"GroupsConfig(slots=4, ...)), got {type(cfg).__name__}")
    so_far: dict = {}
    try:
        with sigterm_exits(), run_dir("saatp-groups-", log_dir) as out_dir:  # a script's SIGTERM cleans up too
            out = _run_in(out_dir, cfg, progress, so_far)
    except (KeyboardInterrupt, SystemExit) as e:
        partial = finished_slots(cfg, so_far)
        if partial is not None:
            partial["out_dir"] = log_dir
            e.partial_result = partial
        raise
    except RuntimeError as e:  # a rank that exited or hung: the slots before it are as good as any
        partial = finished_slots(cfg, so_far)
        if partial is not None:
            done = partial.pop("interrupted")
            partial["failed"] = dict(done, error=str(e).splitlines()[0] if str(e) else type(e).__name__)
            partial["out_dir"] = log_dir
            e.partial_result = partial
        raise
    out["out_dir"] = log_dir
    return out


def finished_slots(cfg: GroupsConfig, so_far: dict) -> dict | None:
    """The result of the slots every method finished before an interruption, from what
    :func:`_run_in` recorded in ``so_far``; ``interrupted`` says how many of how many. With none
    finished, the run's config and no runs: until 2026-11-28 nothing, so ``saatp train groups``
    wrote no ``--json`` and a result of an earlier run at that path read as this run's."""
    rec = so_far.get("rec")
    done = min((len(v) for v in rec.values()), default=0) if rec else 0
    if not done:
        return dict(config=config_record(cfg), runs={}, interrupted=dict(slots_done=0, slots=cfg.slots))
    out = summarise(cfg, {m: v[:done] for m, v in rec.items()}, so_far["budget"], so_far["t_ref"], so_far["costs"],
                    time.perf_counter() - so_far["t_start"], so_far["load0"])
    out["static_sets"] = so_far["static"]
    out["interrupted"] = dict(slots_done=done, slots=cfg.slots)
    return out


DIVERGED_LOSS = 100.0  # a slot's mean training loss this many times the first slot's: diverged


def diverged_slot(slots: list[dict]) -> int | None:
    """The first slot after which the parameters held NaN or infinities, or whose mean training
    loss was not finite or :data:`DIVERGED_LOSS` times the first slot's (a cross-entropy does not
    grow a hundredfold while training works; ``--lr 100`` took it to 1e21 with finite weights,
    which passed as no divergence); None: never."""
    first = next((s["loss"] for s in slots if s.get("loss") is not None), None)
    for s in slots:
        loss = s.get("loss")
        if not s.get("finite", True) or (loss is not None and (not np.isfinite(loss) or (
                first is not None and np.isfinite(first) and loss > DIVERGED_LOSS * max(first, 1e-3)))):
            return s["slot"]
    return None


def _run_in(out_dir: str, cfg: GroupsConfig, progress, so_far: dict | None = None) -> dict:
    """The run; ``so_far`` (if given) gets what a partial result needs as it is made (the
    records of every slot, the budget), for :func:`finished_slots`."""
    data = digits.dataset_of(cfg.data)
    # a global batch takes B distinct samples of the training split (sampler.ShareSampler), which
    # refused a larger B in every worker after start-up
    require("B", cfg.B, cfg.B <= len(data.x_train), f"at most the training split's {len(data.x_train)} samples",
            "--batch")
    torch.manual_seed(1)
    built = digits.model_from(cfg.model)
    layers = digits.as_sequential(built, cfg.model)
    note = digits.uncut_note(cfg.model, built)
    if note:
        print(note, file=sys.stderr)
    check_model_on_data(layers, data, cfg.model)  # here, not in every worker after start-up
    check_layers_share_no_parameter(layers, cfg.model)
    least = least_batch(layers, data.x_train)  # the planners give no pass fewer samples
    quotas = np.repeat(quota_trace(cfg.base_quotas, -(-cfg.slots // cfg.hold), cfg.trace, cfg.trace_seed,
                                   noun="processes", warn=cfg.cgroups), cfg.hold, axis=0)[:cfg.slots]
    if cfg.cgroups:
        warn_above_one_cpu(quotas)
    warn_trace_not_applied(cfg.trace, cfg.cgroups)
    costs = profile_layers(layers, data.x_train[:1])
    # the model the accuracy is measured with: the ranks' buffers (worker.MethodState's seed)
    evaluated = digits.built_as_ranks_build(cfg.model, cfg.seed, sequential=True)
    model_bytes = float(costs.param_bytes.sum())
    price = np.asarray(cfg.base_quotas) ** cfg.price_exp
    store, port = host_store(cfg.world + 1, cfg.timeout_s)
    cg = SlotQuotas(cfg.world, run_prefix("groups")) if cfg.cgroups else None
    n = 0
    t_start = time.perf_counter()
    load0 = os.getloadavg()

    def command(c: dict) -> list[dict]:
        nonlocal n
        store.set(f"cmd/{n}", json.dumps(c))
        _wait_all(store, [f"meas/{n}/{r}" for r in range(cfg.world)], ranks, cfg.timeout_s, watch)
        got = [json.loads(store.get(f"meas/{n}/{r}")) for r in range(cfg.world)]
        n += 1
        return got

    with cg or nullcontext(), RankProcesses(out_dir, "groups run") as ranks:
        if cg:
            cg.set(cfg.base_quotas)
        # the workers load the parent's data (a user's data FN is called once, here)
        named = isinstance(cfg.data, str)
        data_path = None if named and cfg.data == "digits" else digits.save_for_ranks(data, out_dir)
        wcfg = dict(world=cfg.world, port=port, model=cfg.model, data=cfg.data if named else None, data_path=data_path,
                    B=cfg.B, lr=cfg.lr, momentum=cfg.momentum, seed=cfg.seed, backend=cfg.backend, timeout_s=cfg.timeout_s,
                    costs=costs.to_dict(), cgroups=cg.paths if cg else None, beat_dir=out_dir)
        cfg_path = os.path.join(out_dir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(wcfg, f)
        ranks.start("host_agent.scheduling.groups.worker", cfg_path, cfg.world)
        watch = StallWatch(out_dir, [p.pid for p in ranks.procs], cfg.stall_s, what="process")
        probe = command({"kind": "probe"})  # under the base quotas: the planners' first measurements
        est0 = Estimates(np.array([p["speed"] for p in probe]), 0.0, 0.0)
        ar = max(p["allreduce"] for p in probe)
        # both per unit of the slowest process's speed, from the all-reduce of all of them
        est0.sync_bw = 2 * (cfg.world - 1) / cfg.world * model_bytes / max(ar, 1e-6) / float(est0.speed.min())
        est0.mig_bw = migration_rate(probe, est0.speed, model_bytes, est0.sync_bw)
        planners = {m: SlotPlanner("lyapunov" if m == "script" else m, costs, cfg.B, price, cfg.V, cfg.gmax, cfg.iters)
                    for m in cfg.methods}
        ref = SlotPlanner("lyapunov", costs, cfg.B, price, cfg.V, cfg.gmax, cfg.iters)
        for p in planners.values():
            p.min_microbatch = least
        t_model, b_model = ref.set_budget(est0, quotas, np.asarray(cfg.base_quotas), cfg.budget_frac, cfg.budget_ref)
        reference = measure_reference(ref, est0, least, cfg, command)
        t_ref, budget = t_model * reference["ratio"], b_model * reference["ratio"]
        static = {}
        for m, p in planners.items():
            p.t_ref, p.budget = t_ref, budget
            if m in STATIC:
                # their sets are chosen by predicted cost: against the model's own budget
                p.static_devices, T_s, c_s = static_set(ref, est0, quotas, np.asarray(cfg.base_quotas), b_model,
                                                        STATIC[m])
                static[m] = dict(devices=list(p.static_devices), predicted_s=T_s,
                                 predicted_cost_over_budget=c_s / b_model)
        floor = budget_floor(ref, est0, quotas, np.asarray(cfg.base_quotas), b_model)
        est = {m: est0.copy() for m in cfg.methods}
        cur: dict[str, ExecPlan | None] = {m: None for m in cfg.methods}
        rec: dict[str, list] = {m: [] for m in cfg.methods}
        if so_far is not None:
            so_far.update(rec=rec, budget=budget, t_ref=t_ref, costs=costs, t_start=t_start, load0=load0,
                          static=static)
        final: dict[str, torch.Tensor] = {}
        for t in range(cfg.slots):
            if cg:
                cg.set(quotas[t])
            k = t % len(cfg.methods)  # the order rotates: no method always runs first after a quota change
            for m in cfg.methods[k:] + cfg.methods[:k]:
                pl = planners[m]
                t0 = time.perf_counter()
                if m == "script":
                    plan = ExecPlan.from_dict(cfg.script[t % len(cfg.script)])
                    info = dict(predicted_s=float("nan"), predicted_migration_s=float("nan"))
                else:
                    plan, info = pl.choose(est[m], cur[m], cfg.world)
                decide_s = time.perf_counter() - t0
                # with the reaction, the slot's first iteration runs alone: if it shows a process's
                # speed jumped from the estimate the plan was made with (a quota that moved at the
                # slot's start), the planner decides again, on that measurement, for the rest
                split = cfg.react and cfg.iters > 1
                meas = command({"kind": "slot", "method": m, "plan": plan.to_dict(),
                                "iters": 1 if split else cfg.iters, "gather": not split})
                first = None
                seen_first = None  # each process's speed as the slot's first iteration measured it
                if split:
                    seen_first = est[m].implied_speeds(meas, plan)
                    active_jumped = jumped(est[m].speed, seen_first, plan.active)
                    t0 = time.perf_counter()
                    again = None if m == "script" else react(pl, est[m], plan, meas, model_bytes, cfg.world)
                    decide_s += time.perf_counter() - t0
                    if again:
                        its1, mig1, moved1 = part_times(meas, plan)
                        first = dict(plan=plan, iters=its1, migration=mig1, moves=moved1)
                        pl.observe_setup(plan, its1)
                        plan, info = again
                    rest = command({"kind": "slot", "method": m, "plan": plan.to_dict(), "iters": cfg.iters - 1,
                                    "probe": False})
                    meas = rest if first else [merge_parts(a, b) for a, b in zip(meas, rest)]
                ci = n - 1
                act = plan.active
                iters, mig, moved = part_times(meas, plan)
                cost = float(price[list(act)].sum()) * (sum(iters) + mig)
                if first:
                    cost += float(price[list(first["plan"].active)].sum()) * (sum(first["iters"]) + first["migration"])
                    iters, mig, moved = first["iters"] + iters, first["migration"] + mig, first["moves"] + moved
                T = float(np.mean(iters)) + mig / cfg.iters
                cost /= cfg.iters
                pl.observe_cost(cost)
                seen = est[m].implied_speeds(meas, plan)
                qmoved = jumped(est[m].speed, seen, act)
                part = iters[len(first["iters"]):] if first else iters
                pl.observe(plan, info["predicted_s"], float(np.mean(part)), qmoved, kind=info.get("kind"))
                pl.observe_setup(plan, part)
                qmoved = qmoved or bool(first and active_jumped)  # an active process's quota moved in the slot
                est[m].update(meas, plan, model_bytes)
                params = [torch.load(io.BytesIO(get_blob(store, f"params/{ci}/{g}"))) for g in range(len(plan.groups))]
                diff = max((float((params[g] - params[0]).abs().max()) for g in range(1, len(params))), default=0.0)
                acc = digits.accuracy_of(evaluated, params[0], data)
                losses = [l for x in meas for l in x["losses"]]
                sync = allreduce_times(meas, plan)
                wait = [v for r in plan.leaders for v in meas[r]["sync_s"]]
                rec[m].append(dict(slot=t, quotas=quotas[t].tolist() if cg else None,  # None: none applied
                                   plan=plan.to_dict(), batch_s=iters, migration_s=mig, migration_moves=moved, T=T,
                                   cost=cost, Q=pl.Q,
                                   predicted_s=info["predicted_s"], predicted_migration_s=info["predicted_migration_s"],
                                   correction=info.get("correction", 1.0), setup_s=pl.setup_s,
                                   decide_s=decide_s, test_acc=acc, max_group_diff=diff,
                                   finite=bool(torch.isfinite(params[0]).all()),
                                   loss=float(np.mean(losses)) if losses else None,
                                   sync_s=float(np.median(sync)) if sync and len(plan.groups) > 1 else 0.0,
                                   sync_wait_s=float(np.median(wait)) if wait and len(plan.groups) > 1 else 0.0,
                                   compute_s={r: meas[r]["compute_s"] / max(1, len(meas[r]["phases"])) for r in act},
                                   phases={r: meas[r]["phases"] for r in act},
                                   sync_bw=est[m].sync_bw, mig_bw=est[m].mig_bw,
                                   speeds_measured=seen, quota_moved=qmoved, speeds_seen=est[m].speed.tolist(),
                                   # decided again after the first iteration (its plan may be kept:
                                   # then replanned_from is None)
                                   reacted=bool(first), speeds_first=seen_first,
                                   replanned_from=first["plan"].to_dict() if first and first["plan"] != plan else None))
                cur[m] = plan
                final[m] = params[0]
            if progress:
                progress(t, {m: rec[m][-1] for m in cfg.methods})
        command_stop = {"kind": "stop"}
        store.set(f"cmd/{n}", json.dumps(command_stop))
        late = ranks.wait(timeout_s=60)
        if late:
            print(f"warning: processes {late} had not exited 60 s after the last slot and were killed (the "
                  f"results are complete)", file=sys.stderr, flush=True)
    out = summarise(cfg, rec, budget, t_ref, costs, time.perf_counter() - t_start, load0)
    out["static_sets"] = static
    out["budget_reference"] = dict(reference, model_budget=b_model)
    out["budget_floor"] = floor
    # what the planners started from: each process's speed, the all-reduce and the model's move
    out["start_probe"] = dict(speed=est0.speed.tolist(), allreduce_s=[p["allreduce"] for p in probe],
                              migration_s=[p.get("migration") for p in probe], sync_bw=est0.sync_bw,
                              mig_bw=est0.mig_bw)
    out["final_params"] = final  # tensors (not JSON): group 0's parameters after the last slot
    return out


def budget_floor(ref: SlotPlanner, est: Estimates, quotas: np.ndarray, base: np.ndarray, budget: float) -> dict:
    """The least cost any device set is predicted to run at over the trace (BSP on it: a set
    of one process is the whole model there), against ``budget`` (the model's own, as the
    static sets are chosen). Above 1, no method can meet the budget: a warning says so before
    the first slot. Until 2026-11-28 ``--budget-frac 0.01`` ran every method at 30-70x the
    budget without a word on why (the least any set costs was 27x it)."""
    devs, T, c = static_set(ref, est, quotas, base, 0.0, "bsp")  # none meets 0: the cheapest
    out = dict(devices=list(devs), predicted_s=T, predicted_cost_over_budget=c / budget)
    if c > budget * (1 + 1e-9):
        print(f"warning: no device set is predicted to meet the budget: the cheapest (processes {list(devs)}, each "
              f"a replica of the whole model) at {c / budget:.3g}x it; every method will run above it (a larger "
              f"--budget-frac?)", file=sys.stderr, flush=True)
    return out


def config_record(cfg: GroupsConfig) -> dict:
    """``cfg`` as the result's JSON records it: a data set given as arrays (a
    :class:`~..digits.Dataset`) is named, not written out."""
    if isinstance(cfg.data, digits.Dataset):
        return dict(asdict(replace(cfg, data="digits")), data=f"(a data set given in the call: {cfg.data.name})")
    return asdict(cfg)


def summarise(cfg: GroupsConfig, rec: dict, budget: float, t_ref: float, costs, wall: float,
              load0=None) -> dict:
    runs = {}
    for m, slots in rec.items():
        T = np.array([s["T"] for s in slots])
        c = np.array([s["cost"] for s in slots])
        late = np.array([bool(s.get("quota_moved")) for s in slots])  # an active process's quota moved in the slot
        n = len(slots)
        marks = sorted({max(1, n // 4), max(1, n // 2), max(1, 3 * n // 4), n})
        runs[m] = dict(method=m, mean_batch_s=float(T.mean()), median_batch_s=float(np.median(T)),
                       mean_cost=float(c.mean()),
                       cost_over_budget=float(c.mean() / budget), final_Q=slots[-1]["Q"],
                       cost_over_budget_running={k: float(c[:k].mean() / budget) for k in marks},
                       surprise_slots=int(late.sum()), surprise_time_share=float(T[late].sum() / T.sum()),
                       mean_batch_s_no_surprise=float(T[~late].mean()) if (~late).any() else None,
                       mean_sync_s=float(np.mean([s["sync_s"] for s in slots])),
                       mean_active=float(np.mean([sum(len(g["ranks"]) for g in s["plan"]["groups"]) for s in slots])),
                       final_test_acc=slots[-1]["test_acc"], max_group_diff=max(s["max_group_diff"] for s in slots),
                       migrations=sum(1 for s in slots if s["migration_moves"]),
                       diverged_slot=diverged_slot(slots),
                       reactions=sum(1 for s in slots if s.get("reacted")),
                       replans=sum(1 for s in slots if s.get("replanned_from")),
                       migration_s=float(sum(s["migration_s"] for s in slots)),
                       train_s=float(sum(cfg.iters * float(np.mean(s["batch_s"])) + s["migration_s"] for s in slots)),
                       slots=slots)
    out = dict(config=config_record(cfg), budget=budget, t_ref=t_ref, layer_costs=costs.to_dict(), wall_s=wall,
               load_avg=os.getloadavg(), load_avg_start=load0, runs=runs)
    if "lyapunov" in runs:
        # slots in which a method ran exactly Lyapunov's plans (a reaction's first plan too):
        # there the difference in batch time is the host's, not the planner's
        ran = [(s["plan"], s.get("replanned_from")) for s in runs["lyapunov"]["slots"]]
        out["lyapunov_vs"] = {m: vs_method(runs["lyapunov"]["slots"], r["slots"], ran)
                              for m, r in runs.items() if m != "lyapunov"}
    return out


def vs_method(mine: list[dict], other: list[dict], ran: list) -> dict:
    """The planner's slots against another method's: the batch-time reduction over all slots,
    and split into the slots where the two ran the same plans (there the difference is the
    host's noise: the order the methods run in, a quota's phase) and those where they did not
    (what the planner's choices did). ``ran``: the planner's (plan, replanned_from) per slot."""
    same = [(s["plan"], s.get("replanned_from")) == p for s, p in zip(other, ran)]

    def reduction(pick: bool) -> float | None:
        a = [x["T"] for x, k in zip(mine, same) if k == pick]
        b = [x["T"] for x, k in zip(other, same) if k == pick]
        return 1.0 - sum(a) / sum(b) if a and sum(b) > 0 else None

    ly, r = float(np.mean([s["T"] for s in mine])), float(np.mean([s["T"] for s in other]))
    return dict(batch_time_reduction=1.0 - ly / r, speedup=r / ly, same_plan_slots=sum(same), slots=len(other),
                reduction_same_plans=reduction(True), reduction_other_plans=reduction(False))
