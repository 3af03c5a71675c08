"""The processes of :func:`.library.train_cgp`: ``N`` workers (ranks 0..N-1) and the
parameter server as its own process (rank N), one ``torch.distributed`` world (gloo or
saatp) initialised through the parent's TCP store.

Methods: ``cgp`` (groups from measured compute times, :func:`.grouping.segment_groups`;
synchronous all-reduce inside a group, asynchronous pushes to the server, staleness gate and
damping), ``asp`` (every worker its own group, no gate, no damping), ``ssp`` (every worker its
own group, the gate with ``s_max``, no damping) and ``bsp`` (one all-reduce of all workers per
step, no server traffic).

The server never receives from "any source" (so any backend with plain send/recv works):
a leader first rings a doorbell in the TCP store (``cgp/q/N``, N from an atomic counter,
value = the leader's rank), then sends; the server reads the doorbells in order (a blocking
``get``) and receives from exactly that leader. (Polling ``irecv`` handles does not work on
gloo: a receive's ``is_completed`` stays false until it is waited on.) Training runs in
phases of ``R`` server versions (BSP: ``R`` steps). At a phase end the server (BSP: rank 0)
broadcasts the weights and whether the time is up; every rank all-gathers the median compute
time of its phase and computes the same grouping; every rank creates the groups' process
groups in the same order. A phase end is a barrier: every group finishes its iteration in
flight and the fast ones wait for the slowest. With ``R_max``, CGP doubles the length of the
next phase while a regrouping keeps the groups (up to ``R_max`` versions) and goes back to
``R`` when they change (:func:`next_phase_length`).
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .. import digits
from ..pipeline import cgroups
from ..rank_processes import join_world, rank_main
from .grouping import segment_groups
from .server import ServerState

TAG_HDR, TAG_GRAD, TAG_VER, TAG_W = 11, 12, 13, 14
tick = time.perf_counter


def load_data(cfg: dict) -> digits.Dataset:
    if cfg.get("data_path"):
        return digits.Dataset(*torch.load(cfg["data_path"]))
    return digits.dataset_from(cfg["data"], int(cfg.get("seed", 0)))


def push_cost(configured, measured: float) -> float:
    """The server's time per global update for the grouping: ``configured`` seconds if set
    (> 0), else the server's measured mean (receive, apply, reply) of the last phase, 5 ms
    before any was measured."""
    if configured is not None and float(configured) > 0:
        return float(configured)
    return measured if measured > 0 else 0.005


def next_phase_length(current: int, R: int, R_max: int, same_groups: bool) -> int:
    """Server versions of CGP's next phase: twice the last while the regrouping kept the
    groups (up to ``R_max``), ``R`` again when they changed."""
    return min(2 * current, R_max) if same_groups else R


class Proc:
    def __init__(self, cfg: dict, rank: int):
        self.cfg, self.rank = cfg, rank
        self.N = int(cfg["workers"])
        self.ps = self.N
        self.store = join_world(int(cfg["port"]), rank, self.N + 1, cfg.get("backend", "gloo"),
                                float(cfg.get("timeout_s", 120)))
        torch.manual_seed(int(cfg.get("seed", 0)))
        self.model = digits.model_from(cfg["model"])
        self.params = list(self.model.parameters())
        self.w = parameters_to_vector(self.params).detach().clone()
        data = load_data(cfg)
        self.X, self.Y = data.x_train, data.y_train
        self.gen = torch.Generator().manual_seed(int(cfg.get("seed", 0)) * 1000 + rank)
        self.mode = cfg["mode"]
        self.pgs: dict[tuple[int, ...], object] = {}
        self.workers_pg = self.pg(tuple(range(self.N)))
        self.log: dict = {"rank": rank, "groupings": [], "taus": [], "pushes": 0, "iters": 0}
        if cfg.get("cgroups"):
            cgroups.join(cfg["cgroups"][rank])
        dist.barrier()
        self.t0 = tick()
        if rank == self.ps:
            self.store.set("started", str(time.monotonic()))

    def pg(self, ranks: tuple[int, ...]):
        if len(ranks) < 2:
            return None
        if ranks not in self.pgs:
            self.pgs[ranks] = dist.new_group(list(ranks))
        return self.pgs[ranks]

    def elapsed(self) -> float:
        return tick() - self.t0

    def grad(self, w: torch.Tensor) -> torch.Tensor:
        vector_to_parameters(w, self.params)
        idx = torch.randint(0, len(self.X), (int(self.cfg["local_batch"]),), generator=self.gen)
        self.model.zero_grad()
        loss = digits.loss_sum(self.model(self.X[idx]), self.Y[idx]) / len(idx)
        loss.backward()
        return parameters_to_vector([p.grad for p in self.params]).detach().clone()

    # ------------------------------------------------------------------ phases
    def initial_groups(self) -> list[tuple[int, ...]]:
        """BSP: everybody; ASP, SSP and CGP's first (measuring) phase: every worker alone (a
        first phase as one group would make every worker wait for the slowest before CGP
        has measured anybody)."""
        if self.mode == "bsp":
            return [tuple(range(self.N))]
        return [(r,) for r in range(self.N)]

    def run(self) -> None:
        groups = self.initial_groups()
        # equal speeds until measured: each of N singletons sees the other N-1 updates per period
        expected = [float(len(groups) - 1)] * len(groups)
        v, phase = 0, 0
        r_phase = int(self.cfg["R"])  # CGP: the versions of the next phase (next_phase_length)
        state = None
        if self.rank == self.ps and self.mode != "bsp":
            s_max = float("inf") if self.mode == "asp" else float(self.cfg["s_max"])
            kind = self.cfg["damping"] if self.mode == "cgp" else "none"
            state = ServerState(self.w, float(self.cfg["lr"]), self.N * int(self.cfg["local_batch"]), s_max, kind)
            self.state = state
        self.snaps: list = []
        self.service: list[float] = []  # the server's time per push (receive, apply, reply)
        self.bell = 0
        self.samples = 0
        self.last_snap = -1e9
        while True:
            for g in groups:  # every rank, the same order (new_group is collective)
                self.pg(g)
            self.log["groupings"].append({"phase": phase, "version": v, "t": self.elapsed(),
                                          "groups": [list(g) for g in groups], "versions": r_phase})
            taus: list[float] = []
            if self.mode == "bsp":
                if self.rank != self.ps:
                    v = self.bsp_phase(v, taus)
            elif self.rank == self.ps:
                v = self.server_phase(state, groups, expected, v, phase, r_phase)
            else:
                v = self.worker_phase(groups, v, taus)
            # phase end: the weights and "time is up" from the model holder, then regroup
            src = 0 if self.mode == "bsp" else self.ps
            if self.rank == src:
                w = self.w if self.mode == "bsp" else state.w
                flag = torch.tensor([v, int(self.elapsed() >= float(self.cfg["duration_s"]))], dtype=torch.int64)
                wb = w.clone()
            else:
                flag, wb = torch.zeros(2, dtype=torch.int64), torch.zeros_like(self.w)
            dist.broadcast(wb, src)
            dist.broadcast(flag, src)
            self.w, v = wb, int(flag[0])
            if int(flag[1]):
                break
            if self.rank == self.ps:  # the server's part: its measured time per global update
                taus = [float(np.mean(self.service[-32:]))] if self.service else []
            tau = torch.tensor([float(np.median(taus[-5:])) if taus else 0.0], dtype=torch.float64)
            allt = [torch.zeros(1, dtype=torch.float64) for _ in range(self.N + 1)]
            dist.all_gather(allt, tau)
            tau_np = np.array([float(x[0]) for x in allt[:self.N]])
            c_push = push_cost(self.cfg.get("c_push"), float(allt[self.N][0]))
            self.log["taus"].append(tau_np.tolist())
            self.log.setdefault("c_push", []).append(c_push)
            if self.mode == "cgp":
                gr = segment_groups(tau_np, float(self.cfg["lam"]), float(self.cfg["s_max"]), 4,
                                    c_push, float(self.cfg["theta"]),
                                    objective=self.cfg.get("objective", "throughput"))
                pairs = sorted(((tuple(sorted(int(i) for i in g)), s) for g, s in zip(gr.groups, gr.staleness)),
                               key=lambda p: min(p[0]))
                new = [p[0] for p in pairs]
                if phase > 0:  # the first phase only measured: the first grouping starts at R
                    R = int(self.cfg["R"])
                    r_phase = next_phase_length(r_phase, R, int(self.cfg.get("R_max") or R), new == groups)
                groups, expected = new, [float(p[1]) for p in pairs]
            phase += 1
        self.finish()

    def snapshot(self, v: int, w: torch.Tensor) -> None:
        t = self.elapsed()
        if t - self.last_snap >= float(self.cfg["snapshot_s"]):
            self.snaps.append((t, v, self.samples, w.clone()))
            self.last_snap = t

    def bsp_phase(self, v: int, taus: list) -> int:
        for _ in range(int(self.cfg["R"])):
            t0 = tick()
            g = self.grad(self.w)
            taus.append(tick() - t0)
            over = float(self.rank == 0 and self.elapsed() >= float(self.cfg["duration_s"]))
            ext = torch.cat([g, torch.tensor([over])])
            dist.all_reduce(ext, group=self.workers_pg)
            self.w -= float(self.cfg["lr"]) * ext[:-1] / self.N
            v += 1
            self.log["iters"] += 1
            self.samples += self.N * int(self.cfg["local_batch"])
            if self.rank == 0:
                self.snapshot(v, self.w)
            if ext[-1] > 0:
                break
        return v

    def worker_phase(self, groups, v: int, taus: list) -> int:
        gi = next(i for i, g in enumerate(groups) if self.rank in g)
        members = groups[gi]
        leader = members[0]
        gpg = self.pg(members)
        n = len(members) * int(self.cfg["local_batch"])
        w = self.w
        while True:
            t0 = tick()
            g = self.grad(w)
            taus.append(tick() - t0)
            self.log["iters"] += 1
            if gpg is not None:
                dist.all_reduce(g, group=gpg)
                g /= len(members)
            msg = torch.zeros(2, dtype=torch.int64)
            if self.rank == leader:
                k = self.store.add("cgp/qn", 1)  # the doorbell, then the message
                self.store.set(f"cgp/q/{k}", str(self.rank))
                dist.send(torch.tensor([v, n, 0], dtype=torch.int64), self.ps, tag=TAG_HDR)
                dist.send(g, self.ps, tag=TAG_GRAD)
                dist.recv(msg, self.ps, tag=TAG_VER)
                dist.recv(w, self.ps, tag=TAG_W)
                self.log["pushes"] += 1
            if gpg is not None:
                dist.broadcast(msg, leader, group=gpg)
                dist.broadcast(w, leader, group=gpg)
            v = int(msg[0])
            if int(msg[1]):
                return v

    def server_phase(self, st: ServerState, groups, expected, v: int, phase: int, R: int) -> int:
        G = len(groups)
        leaders = [g[0] for g in groups]
        st.begin(G, expected)
        # only CGP regroups; ASP and SSP run one phase (a phase end is a barrier they need not pay)
        # CGP's first phase only measures: two versions per worker, then the first grouping
        R = R if phase > 0 else 2 * self.N
        end_v = st.v + (R if self.mode == "cgp" else 1 << 60)
        n_param = self.w.numel()
        sends: list = []

        def reply(replies) -> None:
            for gi, ver in replies:
                stop = ver >= end_v or self.elapsed() >= float(self.cfg["duration_s"])
                m, wc = torch.tensor([ver, int(stop)], dtype=torch.int64), st.w.clone()
                sends.append((dist.isend(m, leaders[gi], tag=TAG_VER), m))
                sends.append((dist.isend(wc, leaders[gi], tag=TAG_W), wc))
                if stop:
                    stopped.add(gi)
                    reply(st.retire(gi))

        stopped: set[int] = set()
        while len(stopped) < G:
            self.bell += 1
            src = int(self.store.get(f"cgp/q/{self.bell}"))
            ts = tick()
            gi = leaders.index(src)
            hdr, buf = torch.zeros(3, dtype=torch.int64), torch.zeros(n_param)
            dist.recv(hdr, src, tag=TAG_HDR)
            dist.recv(buf, src, tag=TAG_GRAD)
            before = st.applied
            replies = st.push(gi, int(hdr[0]), int(hdr[1]), buf)
            self.samples += int(hdr[1])
            self.log["pushes"] += st.applied - before
            reply(replies)
            self.service.append(tick() - ts)
            self.snapshot(st.v, st.w)
        for wk, _ in sends:
            wk.wait()
        return st.v

    def finish(self) -> None:
        out = self.cfg["out_dir"]
        if self.snaps:
            torch.save(self.snaps, os.path.join(out, f"snapshots{self.rank}.pt"))
        if self.rank == self.ps and self.mode != "bsp":
            st = self.state
            self.log.update(max_staleness=st.max_staleness, applied=st.applied, held=st.held, version=st.v,
                            staleness_hist=np.bincount(st.staleness).tolist() if st.staleness else [])
        self.log["wall_s"] = self.elapsed()
        with open(os.path.join(out, f"rank{self.rank}.json"), "w") as f:
            json.dump(self.log, f)
        dist.barrier()


def main(argv: list[str] | None = None) -> int:
    return rank_main("host_agent.scheduling.cgp.procs", lambda cfg, rank: Proc(cfg, rank).run(), argv,
                     leave_world=True)


if __name__ == "__main__":
    raise SystemExit(main())
