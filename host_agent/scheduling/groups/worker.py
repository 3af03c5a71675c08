"""One process of the DP+MP executor (started by :mod:`.executor`).

The process joins the world process group (gloo or saatp) through the controller's TCP
store, then its CPU-quota cgroup, and executes commands the controller writes to the store
(``cmd/N``, JSON):

* ``probe``: time a forward+backward of the whole model (measured speed) and a world
  all-reduce of the model's size (measured synchronisation bandwidth);
* ``slot``: for one method (each method has its own model state, so methods run interleaved
  slot by slot under the same quotas), run the slot's plan:

  1. migrate: receive the parameters and momentum of every layer the plan gives this
     process that it does not hold (:func:`.plan.transfers`); layers it no longer holds are
     dropped (set to NaN, so a missing move would poison the model visibly);
  2. ``iters`` iterations, each after a world barrier: a group member runs its pipeline
     stage (:func:`..pipeline.stage.run_iteration`, fill-drain, microbatches of the plan's
     size) on its group's share of the global batch (:class:`.sampler.ShareSampler`); the
     stages send their flat gradients to the group leader, the leaders all-reduce them
     weighted by their data shares (:func:`.allreduce.weighted_allreduce`) over the leaders'
     process group, the leader sends each stage its slice back and every process takes a
     momentum-SGD step on its own layers. A process outside the plan probes its speed once
     (unless the command says ``probe: false``);
  3. every group leader gathers its group's parameters and puts them in the store (the
     controller checks that the groups agree and measures test accuracy; not when the
     command says ``gather: false``); every process puts its measurements (``meas/N/RANK``).
* ``stop``.
"""

from __future__ import annotations

import io
import json
import time

import torch
import torch.distributed as dist
from torch import nn

from .. import digits
from ..grad_vectors import grads_to_vector
from ..pipeline import cgroups
from ..pipeline.stage import run_iteration
from ..pipeline.wire import Buffers
from ..progress import Heartbeat
from ..rank_processes import end_rank, join_world, put_blob, rank_main
from .allreduce import weighted_allreduce
from .costs import LayerCosts, op_work, stage_needs_copy, stage_takes_ids
from .plan import ExecPlan, Group, transfers
from .sampler import ShareSampler

TAG_GATHER, TAG_SCATTER, TAG_PARAMS, TAG_MIGRATE = 21, 22, 23, 30
PROBE_BATCH = 64  # samples per pass of the speed probe
tick = time.perf_counter


def flat_params(layer: nn.Module) -> torch.Tensor:
    ps = [p.detach().reshape(-1) for p in layer.parameters()]
    return torch.cat(ps) if ps else torch.zeros(0)


def load_flat(tensors: list[torch.Tensor], flat: torch.Tensor) -> None:
    a = 0
    with torch.no_grad():
        for t in tensors:
            n = t.numel()
            t.copy_(flat[a:a + n].view_as(t))
            a += n


def warm_up_autograd() -> None:
    """The first ``backward(gradient)`` of a process (what a pipeline stage runs) costs ~0.3 s
    of CPU once (lazy initialisation in torch); under a 0.1-0.15 CPU quota that stalled the
    first pipeline iteration of a run by 2-3 s. Pay it at start-up, outside the quotas."""
    x = torch.ones(2, requires_grad=True)
    (x * 2).backward(torch.ones(2))


class CopyInput(nn.Module):
    """A stage's first op when a layer of it works in place on its input
    (:func:`~.costs.stage_needs_copy`): the input's copy, through which the gradient flows."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()


class AsIds(nn.Module):
    """A stage's first op when the previous stage's output is integers (token ids, which a
    pipeline message carries as float32, exact below 2^24): them as int64 again."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.detach().round().long()


class MethodState:
    """One method's replica of the training state on this process."""

    def __init__(self, spec: str, seed: int, world: int, rank: int = 0):
        torch.manual_seed(seed)
        m = digits.sequential_from(spec)
        self.layers = m
        self.mom = [[torch.zeros_like(p) for p in layer.parameters()] for layer in m]
        L = len(m)
        self.holds = [frozenset(range(L))] * world  # every process builds the same initial weights
        self.step = 0
        # the method's own random stream on this process (Dropout's masks), the same for every
        # method at the start: the methods' slots interleave in one process, and until
        # 2026-11-28 they drew from one stream, so two methods running the same plans trained
        # on different masks and reported different accuracies
        self.rng_state = torch.Generator().manual_seed(1_000_003 * (seed + 1) + rank).get_state()


class Worker:
    def __init__(self, cfg: dict, rank: int):
        self.cfg, self.rank = cfg, rank
        self.world = int(cfg["world"])
        self.store = join_world(int(cfg["port"]), rank, self.world, cfg.get("backend", "gloo"),
                                cfg.get("timeout_s", 300), int(cfg.get("threads", 1)))
        data = (digits.load_saved(cfg["data_path"]) if cfg.get("data_path")
                else digits.dataset_from(cfg["data"], int(cfg.get("data_seed", 0))))
        self.X, self.Y = data.x_train, data.y_train
        self.costs = LayerCosts.from_dict(cfg["costs"])
        self.sampler = ShareSampler(len(self.X), int(cfg["B"]), int(cfg.get("seed", 0)))
        self.lr, self.momentum = float(cfg["lr"]), float(cfg["momentum"])
        self.states: dict[str, MethodState] = {}
        self.quota: float | None = None  # this process's CPU quota in the current slot (None: no cgroup)
        self.buffers = Buffers()  # pipeline message buffers, kept across iterations (wire.Buffers)
        self.pgs: dict[tuple[int, ...], object] = {}
        torch.manual_seed(1)
        self.probe_model = digits.sequential_from(cfg["model"])
        self.numel = [sum(p.numel() for p in layer.parameters()) for layer in self.probe_model]
        warm_up_autograd()
        self.warm_up()
        if cfg.get("cgroups"):
            cgroups.join(cfg["cgroups"][rank])
        # counts every iteration and probe for the parent's stall watch (progress.py)
        self.beats = Heartbeat(cfg["beat_dir"], rank) if cfg.get("beat_dir") else None

    def warm_up(self) -> None:
        """Before the process joins its cgroup: one untimed iteration of the whole model at
        the full batch on a scratch state, and one pass at the probe's batch. A process's
        first pass at a batch size costs several steady ones (torch's lazy initialisation,
        oneDNN's kernels for a new shape: 16 ms of CPU against 2.5 for a small CNN on this
        host), once per process. Without this the first method to run on a process paid it
        inside its quota: every run's slot 0 charged it to the method listed first, whose
        in-slot reaction then read it as a slow process (a held-out run of 2026-11-27:
        Lyapunov's first iteration on rank 0 took 22.4 ms, BSP's right after on the same rank
        and quota 9.0 ms, and Lyapunov moved its replica away)."""
        B, L = int(self.cfg["B"]), len(self.probe_model)
        st = MethodState(self.cfg["model"], int(self.cfg.get("seed", 0)), self.world)
        plan = ExecPlan((Group((self.rank,), (0, L), B, B),), L)
        self.iteration(st, plan, 0, {"iters": [], "work": 0.0, "compute_s": 0.0, "sync_s": [], "sync": [],
                                     "phases": [], "losses": []})
        b = min(PROBE_BATCH, len(self.X))
        digits.loss_sum(self.probe_model(self.X[:b].clone()), self.Y[:b]).backward()
        self.probe_model.zero_grad()

    # ------------------------------------------------------------------ commands
    def serve(self) -> None:
        n = 0
        while True:
            cmd = json.loads(self.store.get(f"cmd/{n}"))
            kind = cmd["kind"]
            if kind == "stop":
                break
            if kind == "probe":
                out = {"speed": self.probe_speed(), "allreduce": self.probe_allreduce(),
                       "migration": self.probe_migration()}
                self.beat()
            elif kind == "slot":
                st = self.states.get(cmd["method"])
                if st is None:
                    st = self.states[cmd["method"]] = MethodState(self.cfg["model"], int(self.cfg.get("seed", 0)),
                                                                  self.world, self.rank)
                out = self.slot(st, ExecPlan.from_dict(cmd["plan"]), int(cmd["iters"]), n,
                                probe=bool(cmd.get("probe", True)), gather=bool(cmd.get("gather", True)))
            else:
                raise ValueError(f"unknown command {kind!r}")
            self.store.set(f"meas/{n}/{self.rank}", json.dumps(out))
            n += 1

    def beat(self) -> None:
        if self.beats:
            self.beats.beat()

    def probe_speed(self, b: int = PROBE_BATCH, min_s: float = 0.08) -> float:
        """Work per second of whole-model forward+backward passes over at least ``min_s``
        (several quota periods: a shorter probe would run inside one period's quota at full
        speed). ``b`` is near a replica's share, so the fixed per-pass cost, which the
        start-up profile fits least well, weighs as in real iterations."""
        # a copy: a first layer that works in place (nn.LeakyReLU(inplace=True)) changed the
        # training split's first samples at every pass (until 2026-11-28)
        x, y = self.X[:b].clone(), self.Y[:b]
        reps, t0, c0 = 0, tick(), time.process_time()
        while reps < 1 or tick() - t0 < min_s:
            digits.loss_sum(self.probe_model(x), y).backward()
            reps += 1
        # at the pace the slot's quota sustains, as the active processes' compute is measured
        # (Worker.iteration): an idle process's probe ends on CPU its quota has not repaid yet
        # (the kernel throttles at its 4-ms tick), and a 0.1-CPU process probed at 0.075
        # against 0.053 active, just fast enough not to count as a straggler beside a 0.3-CPU
        # process, which the planner then gave a third of the batch (171.8 ms, predicted 74.5)
        el = cgroups.quota_paced(tick() - t0, time.process_time() - c0, self.quota)
        self.probe_model.zero_grad()
        return reps * op_work(self.costs, 0, self.costs.n, b) / el

    def probe_allreduce(self) -> float:
        t = torch.zeros(sum(self.numel))
        dist.barrier()
        t0 = tick()
        for _ in range(3):
            dist.all_reduce(t)
        return (tick() - t0) / 3

    def probe_migration(self, reps: int = 3) -> float | None:
        """Seconds to move the whole model with its momentum (what a migration sends of each
        layer: its parameters and one momentum buffer) from rank r to rank r + 1 (r even), as
        one message: the receiver's time from a barrier to the end of its receives, per move;
        None on a sender and on the last rank of an odd world. A migration is one transfer
        between two CPU-limited processes, an all-reduce 2(G - 1) latency-bound steps: a
        migration rate taken from the all-reduce (until 2026-11-28) predicted a 3.2 kB model's
        move at 49 ms, which took 16 ms, and the online methods stayed on a process whose
        quota had fallen to 0.15 CPU (28-60 ms a batch against 3-5 ms on the process that rose
        to 0.6)."""
        payload = torch.zeros(2 * sum(self.numel))
        partner = self.rank ^ 1
        dist.barrier()
        if partner >= self.world:
            return None
        t0 = tick()
        for _ in range(reps):
            if self.rank % 2 == 0:
                dist.send(payload, partner, tag=TAG_MIGRATE)
            else:
                dist.recv(payload, partner, tag=TAG_MIGRATE)
        return None if self.rank % 2 == 0 else (tick() - t0) / reps

    def leaders_group(self, leaders: tuple[int, ...]):
        if len(leaders) < 2:
            return None
        if leaders not in self.pgs:  # every rank calls new_group for the same sets in the same order
            self.pgs[leaders] = dist.new_group(list(leaders))
        return self.pgs[leaders]

    # ------------------------------------------------------------------ one slot
    def migrate(self, st: MethodState, new: list[frozenset[int]]) -> tuple[int, int, int]:
        """Move the layers this rank must newly hold; (moves, bytes received, bytes sent)."""
        moves = [m for m in transfers(st.holds, new) if self.numel[m[2]]]  # parameter-free layers need nothing
        r = self.rank
        pending, got, sent = [], 0, 0
        for src, dst, l in moves:
            if src == r:
                payload = torch.cat([flat_params(st.layers[l])] + [m.reshape(-1) for m in st.mom[l]])
                pending.append((dist.isend(payload, dst, tag=TAG_MIGRATE), payload))
                sent += payload.numel() * 4
        for src, dst, l in moves:
            if dst == r:
                buf = torch.empty(2 * self.numel[l])
                dist.recv(buf, src, tag=TAG_MIGRATE)
                load_flat(list(st.layers[l].parameters()), buf[:self.numel[l]])
                load_flat(st.mom[l], buf[self.numel[l]:])
                got += buf.numel() * 4
        for w, _ in pending:
            w.wait()
        with torch.no_grad():
            for l in st.holds[r] - new[r]:  # dropped: poison, so a missing move cannot go unnoticed
                for p in st.layers[l].parameters():
                    p.fill_(float("nan"))
                for m in st.mom[l]:
                    m.zero_()
        st.holds = new
        return len(moves), got, sent

    def slot(self, st: MethodState, plan: ExecPlan, iters: int, n: int, probe: bool = True,
             gather: bool = True) -> dict:
        new = plan.holdings(self.world)
        dist.barrier()
        tm0 = tick()
        n_moves, got, sent = self.migrate(st, new)
        tm1 = tick()
        self.leaders_group(plan.leaders)  # collective: every rank creates the leaders group now
        gi = plan.group_of(self.rank)
        # the quota the slot runs under (the controller sets it before the slot's commands)
        self.quota = cgroups.read_quota(self.cfg["cgroups"][self.rank]) if self.cfg.get("cgroups") else None
        out = {"iters": [], "work": 0.0, "compute_s": 0.0, "sync_s": [], "sync": [], "phases": [], "losses": [],
               "probe_speed": None,
               "migration": [tm0, tm1], "migration_moves": n_moves, "migration_bytes_in": got,
               "migration_bytes_out": sent}
        for it in range(iters):
            dist.barrier()
            t0 = tick()
            if gi is not None:
                torch.set_rng_state(st.rng_state)
                loss = self.iteration(st, plan, gi, out)
                st.rng_state = torch.get_rng_state()
                if loss is not None:
                    out["losses"].append(loss)
                out["iters"].append([t0, tick()])
            elif it == 0 and probe:
                out["probe_speed"] = self.probe_speed()
            st.step += 1
            self.beat()
        if gi is not None and gather:
            self.gather_params(st, plan.groups[gi], gi, n)
        return out

    def iteration(self, st: MethodState, plan: ExecPlan, gi: int, out: dict) -> float | None:
        grp = plan.groups[gi]
        k, K = grp.stage_of(self.rank), len(grp.ranks)
        lo, hi = grp.bounds[k], grp.bounds[k + 1]
        idx = self.sampler.split(st.step, [g.share for g in plan.groups])[gi]
        x = self.X[idx] if k == 0 else None
        y = self.Y[idx] if k == K - 1 else None
        module = nn.Sequential(*list(st.layers)[lo:hi])
        for p in module.parameters():
            p.grad = None
        if stage_needs_copy(self.costs, st.layers, lo, hi):
            # a layer that works in place must not write to the received activations (a leaf
            # that requires grad, in the runtime's receive buffer), nor, on the first stage, to a
            # microbatch of the batch: the microbatches are views of one tensor, sharing its
            # version counter, so the next one's write failed the previous one's backward ("one
            # of the variables needed for gradient computation has been modified by an inplace
            # operation"; until 2026-11-28). It gets a copy
            module = nn.Sequential(CopyInput(), *module)
        if k > 0 and stage_takes_ids(self.costs, lo):
            module = nn.Sequential(AsIds(), *module)  # token ids travel as float32
        rows = grp.microbatches()
        order = [("F", j) for j in range(len(rows))] + [("B", j) for j in reversed(range(len(rows)))]
        shapes = [self.costs.out_shapes[grp.bounds[s + 1] - 1] for s in range(K)]
        clock, ops = [0.0], []
        tr0 = tick()
        loss = run_iteration(module, k, K, [rows] * K, [order] * K, grp.share, x, y, digits.loss_sum, shapes,
                             peers=grp.ranks, clock=clock, trace=ops, buffers=self.buffers)
        # the compute at the pace the quota sustains: a pass after a wait (for the other stages,
        # the all-reduce) runs at full speed on the CPU budget the wait left in the quota's period
        compute = cgroups.quota_paced(clock[0], sum(op[5] for op in ops), self.quota)
        out["compute_s"] += compute
        phase = [tr0, tick(), compute]  # the stage's run (compute + pipeline waits), its compute
        out["work"] += sum(op_work(self.costs, lo, hi, b) for b in rows)
        # synchronisation: stages -> leader, weighted all-reduce among leaders, leader -> stages
        ts0 = tick()
        params = list(module.parameters())
        mine = grads_to_vector(params)
        if k > 0:
            if mine.numel():
                dist.send(mine, grp.leader, tag=TAG_GATHER)
                dist.recv(mine, grp.leader, tag=TAG_SCATTER)
        else:
            sizes = [sum(self.numel[grp.bounds[s]:grp.bounds[s + 1]]) for s in range(K)]
            parts = [mine]
            for s in range(1, K):
                buf = torch.empty(sizes[s])
                if sizes[s]:
                    dist.recv(buf, grp.ranks[s], tag=TAG_GATHER)
                parts.append(buf)
            full = torch.cat(parts)
            te = tick()
            weighted_allreduce(full, grp.share / plan.B, self.leaders_group(plan.leaders))
            out["sync"].append([te, tick()])  # entry and exit of the leaders' all-reduce
            a = sizes[0]
            sends = []
            for s in range(1, K):
                if sizes[s]:
                    piece = full[a:a + sizes[s]].contiguous()
                    sends.append((dist.isend(piece, grp.ranks[s], tag=TAG_SCATTER), piece))
                a += sizes[s]
            for w, _ in sends:
                w.wait()
            mine = full[:sizes[0]]
        # momentum SGD (torch.optim.SGD's rule, dampening 0) on this process's layers
        with torch.no_grad():
            a = 0
            for l in range(lo, hi):
                for p, m in zip(st.layers[l].parameters(), st.mom[l]):
                    g = mine[a:a + p.numel()].view_as(p)
                    a += p.numel()
                    m.mul_(self.momentum).add_(g)
                    p.sub_(self.lr * m)
        if k == 0:
            out["sync_s"].append(tick() - ts0)
        out["phases"].append(phase + [tick()])
        return loss if k == K - 1 else None

    def gather_params(self, st: MethodState, grp, gi: int, n: int) -> None:
        k = grp.stage_of(self.rank)
        lo, hi = grp.bounds[k], grp.bounds[k + 1]
        mine = torch.cat([flat_params(st.layers[l]) for l in range(lo, hi)])
        if k > 0:
            dist.send(mine, grp.leader, tag=TAG_PARAMS)
            return
        parts = [mine]
        for s in range(1, len(grp.ranks)):
            buf = torch.empty(sum(self.numel[grp.bounds[s]:grp.bounds[s + 1]]))
            dist.recv(buf, grp.ranks[s], tag=TAG_PARAMS)
            parts.append(buf)
        b = io.BytesIO()
        torch.save(torch.cat(parts), b)
        put_blob(self.store, f"params/{n}/{gi}", b.getvalue())  # a store value holds at most 8 MiB


def main(argv: list[str] | None = None) -> int:
    return rank_main("host_agent.scheduling.groups.worker", lambda cfg, rank: Worker(cfg, rank).serve(), argv,
                     leave_world=True)


if __name__ == "__main__":
    end_rank(main)
