"""The processes of :func:`.library.train_cgp`: ``N`` workers (ranks 0..N-1) and the
parameter server as its own process (rank N), one ``torch.distributed`` world (gloo or
saatp) initialised through the parent's TCP store.

Methods: ``cgp`` (groups from measured compute times, :func:`.grouping.segment_groups`;
synchronous all-reduce inside a group, asynchronous pushes to the server, staleness gate and
damping; a group the gate holds computes up to ``accumulate`` more batches on the same
weights, added to its held update, instead of waiting: the server answers ``ACCUMULATE``
without weights), ``asp`` (every worker its own group, no gate, no damping), ``ssp`` (every worker its
own group, the gate with ``s_max``, no damping) and ``bsp`` (one all-reduce of all workers per
step, no server traffic).

The server never receives from "any source" (so any backend with plain send/recv works):
a leader first rings a doorbell in the TCP store (``cgp/q/N``, N from an atomic counter,
value = the leader's rank and the monotonic time it rang), then sends; the server reads the
doorbells in order (a blocking ``get``) and receives from exactly that leader. (Polling
``irecv`` handles does not work on gloo: a receive's ``is_completed`` stays false until it is
waited on.)

CGP's grouping is decided by the server alone, from what the pushes carry: every push has the
group members' compute times of that iteration (a slot per worker appended to the gradient,
summed by the group's all-reduce; under a CPU quota the step's time at the pace the quota
sustains, ``cgroups.quota_paced``) and the leader's last push round trip. Every ``R`` server
versions (the first time after ``2 N`` versions and once every worker has reported) the
server computes the grouping (:func:`.grouping.segment_groups` on each worker's period, the
median of its last five compute times plus the median of its last five round trips, with a
group's all-reduce priced as a round trip, and the server's measured time per update). A
new grouping must lose ``switch_margin`` less of the workers' compute than the one in place.
With ``accumulate`` the bound does not force a change (the gate keeps it at no idle cost). A
merged grouping is measured against the model (:mod:`.merge_check`) and undone when it
delivers less than singletons did.
If the grouping in place stays, training goes on with no pause; only a change ends the
phase: the server answers every group with "stop", and at the phase end (a barrier: the fast
groups wait for the slowest to finish its iteration) it broadcasts the weights, the version,
whether the time is up and the new grouping, and every rank creates the new groups' process
groups in the same order. With ``barrier_every_phase``
(the ablation's old behaviour) every decision ends the phase, changed or not. ASP and SSP run
one phase; BSP runs phases of ``R`` steps and never regroups.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import deque

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .. import digits
from ..grad_vectors import grads_to_vector
from ..pipeline import cgroups
from ..progress import Heartbeat
from ..rank_processes import end_rank, join_world, rank_main
from .grouping import (balanced_shares, group_periods, over_bound, predicted_staleness, segment_groups,
                       throughput_loss, worth_switching)
from .merge_check import MergeCheck, merged
from .server import ServerState
from .snapshots import SnapshotWriter

TAG_HDR, TAG_GRAD, TAG_VER, TAG_W = 11, 12, 13, 14
# the server's answer to a push: [version, FLAG], then the weights unless FLAG is ACCUMULATE
GO_ON, STOP, ACCUMULATE = 0, 1, 2
tick = time.perf_counter


def rss_mb() -> float:
    """This process's resident memory now, in MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


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


def grouping_code(groups, n: int) -> list[int]:
    """Each worker's group index (what the phase end broadcasts)."""
    code = [-1] * n
    for gi, g in enumerate(groups):
        for r in g:
            code[r] = gi
    return code


def groups_from_code(code) -> list[tuple[int, ...]]:
    """Inverse of :func:`grouping_code`: groups ordered by index, members ascending."""
    out: dict[int, list[int]] = {}
    for r, gi in enumerate(code):
        out.setdefault(int(gi), []).append(r)
    return [tuple(out[k]) for k in sorted(out)]


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
        self.log: dict = {"rank": rank, "groupings": [], "taus": [], "pushes": 0, "iters": 0, "compute_s": 0.0}
        cgroup = cfg["cgroups"][rank] if cfg.get("cgroups") else None
        if cgroup:
            cgroups.join(cgroup)
        # CGP's workers read their quota at every step (see grad)
        paced = self.mode == "cgp" and rank < self.N and cgroup and cfg.get("sustained_periods", True)
        self.quota = cgroups.QuotaReader(cgroup) if paced else None
        dist.barrier()
        self.beats = Heartbeat(cfg["out_dir"], rank)  # every gradient counts, for the parent's stall watch
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

    def grad(self, w: torch.Tensor, out: torch.Tensor, n: int | None = None) -> tuple[float, float]:
        """The gradient (the mean loss's) of a local batch of ``n`` samples (default the
        configured local batch) at ``w`` into ``out[:n_param]``; returns its compute time
        and, for CGP's grouping, that time at the pace the process's CPU quota sustains
        (``cgroups.quota_paced``): under a quota a step after a wait (for the group, the
        server) runs at full speed on the CPU budget the wait left; only back to back does a
        worker run at its quota's pace, the pace of a worker on its own."""
        self.beats.beat()
        t0, c0 = tick(), time.process_time()
        vector_to_parameters(w, self.params)
        idx = torch.randint(0, len(self.X), (int(n or self.cfg["local_batch"]),), generator=self.gen)
        self.model.zero_grad()
        loss = digits.loss_sum(self.model(self.X[idx]), self.Y[idx]) / len(idx)
        loss.backward()
        grads_to_vector(self.params, out[:self.w.numel()])
        wall = tick() - t0
        return wall, cgroups.quota_paced(wall, time.process_time() - c0, self.quota() if self.quota else None)

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
        state = None
        if self.rank == self.ps and self.mode != "bsp":
            s_max = float("inf") if self.mode == "asp" else float(self.cfg["s_max"])
            kind = self.cfg["damping"] if self.mode == "cgp" else "none"
            state = ServerState(self.w, float(self.cfg["lr"]), self.N * int(self.cfg["local_batch"]), s_max, kind)
            self.state = state
        self.snaps = SnapshotWriter(self.cfg["out_dir"], self.rank)  # the model holder's, to disk as taken
        self.service: list[float] = []  # the server's time per push (receive, apply, reply)
        # the server's view of every worker: its last compute times, and its last push round
        # trips (doorbell to reply, as a group's leader)
        self.recent: list[deque] = [deque(maxlen=5) for _ in range(self.N)]
        self.round_trips: list[deque] = [deque(maxlen=5) for _ in range(self.N)]
        self.queued = [0.0] * self.N  # server: how long a leader's last push waited for service
        self.waits: deque = deque(maxlen=32)  # server: the last pushes' waits in its queue
        # server: the worker-seconds each change of grouping cost (the groups' idle time from
        # their "stop" to the next phase's start; the groups that stopped, and when)
        self.switch_costs: deque = deque(maxlen=8)
        self.stop_times: dict[int, float] = {}
        # server: the worker-seconds of compute the measurements have shown the grouping in
        # place losing against a clearly better one since it was put in place, and when the
        # last decision was made
        self.lost = 0.0
        self.last_decision: float | None = None
        self.merge_check = MergeCheck()  # server: merged groupings measured against singletons
        self.bell = 0
        self.samples = 0
        self.last_snap = -1e9
        prev = groups  # the grouping of the phase that just ended
        # every worker's local batch at a phase's start (CGP's balanced groups: by speed, the
        # server's choice at the phase end; the leader re-splits after every step)
        self.shares0 = [int(self.cfg["local_batch"])] * self.N
        while True:
            for g in groups:  # every rank, the same order (new_group is collective)
                self.pg(g)
            if self.stop_times:  # server: what the change of grouping cost the workers
                t_ready = tick()
                self.switch_costs.append(sum(len(prev[gi]) * (t_ready - t) for gi, t in self.stop_times.items()))
                self.stop_times = {}
            prev = groups
            self.log["groupings"].append({"phase": phase, "version": v, "t": self.elapsed(),
                                          "groups": [list(g) for g in groups]})
            if self.mode == "bsp":
                if self.rank != self.ps:
                    v = self.bsp_phase(v)
            elif self.rank == self.ps:
                self.log.setdefault("serve_rss_mb", rss_mb())  # the server's memory before it served
                v, groups_next, expected = self.server_phase(state, groups, expected, v, phase)
            else:
                v = self.worker_phase(groups, v)
            # phase end: the weights, the version, "time is up" and the next grouping from the
            # model holder
            t_end = tick()
            src = 0 if self.mode == "bsp" else self.ps
            if self.rank == src:
                w = self.w if self.mode == "bsp" else state.w
                up = int(self.elapsed() >= float(self.cfg["duration_s"]))
                nxt = groups_next if self.rank == self.ps and self.mode == "cgp" else groups
                shares = self.shares_for(nxt) if self.rank == self.ps else self.shares0
                flag = torch.tensor([v, up, *grouping_code(nxt, self.N), *shares], dtype=torch.int64)
                wb = w.clone()
            else:
                flag, wb = torch.zeros(2 + 2 * self.N, dtype=torch.int64), torch.zeros_like(self.w)
            dist.broadcast(wb, src)
            dist.broadcast(flag, src)
            self.w, v = wb, int(flag[0])
            self.log["phase_end_s"] = self.log.get("phase_end_s", 0.0) + tick() - t_end
            if int(flag[1]):
                break
            groups = groups_from_code(flag[2:2 + self.N].tolist())
            self.shares0 = [int(x) for x in flag[2 + self.N:].tolist()]
            phase += 1
        # the end of training: the model holder snapshots the final weights (every rank holds
        # them after the broadcast), whenever its last periodic snapshot was. The periodic ones
        # are snapshot_s apart, so the last of them fell anywhere in the run's last snapshot_s,
        # at a different time for every method (4.57 s against 5.11 s in a 5 s run)
        if self.rank == (0 if self.mode == "bsp" else self.ps):
            self.snaps.add(self.elapsed(), v, self.samples, self.w)
        self.finish()

    def snapshot(self, v: int, w: torch.Tensor) -> None:
        t = self.elapsed()
        if t - self.last_snap >= float(self.cfg["snapshot_s"]):
            self.snaps.add(t, v, self.samples, w)
            self.last_snap = t

    def bsp_phase(self, v: int) -> int:
        n_param = self.w.numel()
        ext = torch.zeros(n_param + 1)  # the gradient, then rank 0's "time is up"
        for _ in range(int(self.cfg["R"])):
            self.log["compute_s"] += self.grad(self.w, ext)[0]
            ext[-1] = float(self.rank == 0 and self.elapsed() >= float(self.cfg["duration_s"]))
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

    def balancing(self, members) -> bool:
        """Do ``members`` split their samples by speed? CGP's groups of two or more, when the
        configuration's ``balance`` is on (``--balance``, the ablation's ``cgp-balanced``)."""
        return self.mode == "cgp" and len(members) > 1 and bool(self.cfg.get("balance", False))

    def share_bounds(self) -> tuple[int, int]:
        """A member's local batch in a balanced group: half to twice the configured one (and at
        least the model's least batch). A step has a fixed part (the runtime, the all-reduce)
        that a smaller share does not shrink: unbounded, a 0.1-CPU straggler's share fell to 1
        sample, its time per sample (by which it reports its time per local batch) rose
        ten-fold and the grouping saw it 9x slower than it was (668 against 74 ms per local
        batch)."""
        b = int(self.cfg["local_batch"])
        return max(int(self.cfg.get("least_batch", 1)), -(-b // 2)), 2 * b

    def shares_for(self, groups) -> list[int]:
        """Server: every worker's local batch for the next phase's first step: a balanced
        group's samples split by the speeds its members' last compute times show (per local
        batch, :meth:`worker_phase`), else the configured local batch."""
        b = int(self.cfg["local_batch"])
        out = [b] * self.N
        for g in groups:
            if self.balancing(g):
                speeds = [b / float(np.median(self.recent[r])) if self.recent[r] else float("nan") for r in g]
                for r, n in zip(g, balanced_shares(speeds, b * len(g), *self.share_bounds())):
                    out[r] = n
        return out

    def worker_phase(self, groups, v: int) -> int:
        gi = next(i for i, g in enumerate(groups) if self.rank in g)
        members = groups[gi]
        leader = members[0]
        gpg = self.pg(members)
        b = int(self.cfg["local_batch"])
        n = len(members) * b
        n_param = self.w.numel()
        # balanced groups: each member computes ``mine`` of the group's n samples, its share by
        # speed; the leader re-splits after every step from the times the all-reduce brought
        # (an EMA of each member's samples per second) and sends the shares with the weights
        balance = self.balancing(members)
        mine = int(self.shares0[self.rank]) if balance else b
        speeds: dict[int, float] = {}
        bounds = self.share_bounds()
        # the weights the leader receives, then the version, "phase ends" and every worker's
        # next local batch: what the group's members get in one broadcast (exact in float32:
        # versions and batches stay far below 2**24)
        wv = torch.zeros(n_param + 2 + self.N)
        wv[:n_param] = self.w
        w = self.w = wv[:n_param]
        # the group's summed gradient, then a slot per worker for the members' compute times
        # (summed by the all-reduce) and one per worker for the leader's last push round trip
        ext = torch.zeros(n_param + 2 * self.N)
        rtt = 0.0
        while True:
            ext[n_param:] = 0.0
            tau, paced = self.grad(w, ext, mine)
            if mine != b:  # the group's gradient is the mean over all its n samples
                ext[:n_param] *= mine / b
            ext[n_param + self.rank] = paced * b / mine  # the time per configured local batch
            self.log["compute_s"] += tau
            self.log["iters"] += 1
            if gpg is not None:
                dist.all_reduce(ext, group=gpg)
                ext[:n_param] /= len(members)
            msg = torch.zeros(2, dtype=torch.int64)
            if self.rank == leader:
                ext[n_param + self.N + self.rank] = rtt
                t_push = tick()
                k = self.store.add("cgp/qn", 1)  # the doorbell, then the message
                self.store.set(f"cgp/q/{k}", f"{self.rank} {time.monotonic()!r}")
                dist.send(torch.tensor([v, n, 0], dtype=torch.int64), self.ps, tag=TAG_HDR)
                dist.send(ext, self.ps, tag=TAG_GRAD)
                dist.recv(msg, self.ps, tag=TAG_VER)
                if int(msg[1]) == ACCUMULATE:  # held: the next batch on the same weights, added to it
                    msg[1] = GO_ON
                else:
                    dist.recv(w, self.ps, tag=TAG_W)
                rtt = tick() - t_push
                self.log["pushes"] += 1
                wv[n_param:n_param + 2] = msg.to(wv.dtype)
                if balance:
                    for r in members:
                        now = b / max(float(ext[n_param + r]), 1e-9)
                        speeds[r] = now if r not in speeds else 0.5 * speeds[r] + 0.5 * now
                    for r, k in zip(members, balanced_shares([speeds[r] for r in members], n, *bounds)):
                        wv[n_param + 2 + r] = k
            if gpg is not None:
                dist.broadcast(wv, leader, group=gpg)
            v, last = int(wv[n_param]), int(wv[n_param + 1])
            if balance:
                mine = int(wv[n_param + 2 + self.rank])
                self.log.setdefault("shares", []).append(mine)  # this worker's local batch, step by step
            if last:
                return v

    def decide(self, groups) -> tuple[list[tuple[int, ...]], list[float]] | None:
        """CGP's grouping from the compute times the pushes carried and the server's measured
        time per update; None until every worker has reported a full window of compute times
        (the first steps are slow: before, the first decision saw the 0.1-CPU worker at
        66-84 ms instead of its 30-40 and forced a merge it undid a decision later)."""
        if any(len(q) < q.maxlen for q in self.recent):
            return None
        # a worker's period: its compute time and the round trip of a push without the wait
        # in the server's queue (a worker that has not led a push yet: the median of the
        # others'), so the push rate the server would see is not overestimated (computed from
        # compute times alone, a 0.15-CPU server looked saturated at 2.2x while it was busy
        # 42 % of the time with four singletons)
        trips = [float(np.median(q)) for q in self.round_trips if q]
        fallback = float(np.median(trips)) if trips else 0.0
        tau = np.array([float(np.median(q)) + (float(np.median(t)) if t else fallback)
                        for q, t in zip(self.recent, self.round_trips)])
        served = float(np.mean(self.service[-32:])) if self.service else 0.0
        c_push = push_cost(self.cfg.get("c_push"), served)
        # the staleness is predicted with the periods the server sees: with its queue's wait
        wait = float(np.median(self.waits)) if self.waits else 0.0
        s_max, margin = float(self.cfg["s_max"]), float(self.cfg["switch_margin"])
        if int(self.cfg.get("accumulate", 0)) > 0:
            # the gate keeps the bound, and the groups it holds accumulate instead of idling:
            # a grouping over the bound loses no compute, so groups are formed for the server
            # alone (forced merges of singletons over the bound cost a phase end each and then
            # an all-reduce per step: on the held-out scenario merged groups ran 2-6x slower steps)
            s_max = float("inf")
        bal = bool(self.cfg.get("balance", False))  # groups split their samples by speed
        gr = segment_groups(tau, float(self.cfg["lam"]), s_max, 4, c_push,
                            float(self.cfg["theta"]), comm=fallback,
                            objective=self.cfg.get("objective", "throughput"), wait=wait, balanced=bal)
        new = sorted((tuple(sorted(int(i) for i in g)) for g in gr.groups), key=min)
        now = self.elapsed()
        j_cur, s_cur = throughput_loss(tau, groups, c_push, fallback, wait, bal)
        # measured against modelled (merge_check): the samples the pushes brought since the
        # last decision against the samples/s the model gives the grouping in place
        chk = self.merge_check
        chk.observe(now, self.samples, groups, int(self.cfg["local_batch"]) * (1.0 - j_cur) * float(np.sum(1.0 / tau)))
        singles = [(r,) for r in range(self.N)]
        forced = over_bound(s_cur, s_max)
        check = bool(self.cfg.get("check_merges", True))
        undo = check and not forced and chk.measured_worse(now, groups)
        if undo:  # the merged groups measured worse than singletons did: undone, at once
            new = singles
        elif check and merged(new) and not forced and (
                chk.banned(now) or (chk.single_eff is None and not merged(groups))):
            # no merge while banned, nor before singletons have been measured to compare with
            new = singles if merged(groups) else list(groups)
        gain = j_cur - throughput_loss(tau, new, c_push, fallback, balanced=bal)[0]
        # the compute lost since the last decision, as the medians (which span it) measure it
        dt = 0.0 if self.last_decision is None else now - self.last_decision
        self.last_decision = now
        if new != list(groups) and gain >= margin:
            self.lost += gain * self.N * dt
        # a phase end's cost in worker-seconds: the mean of the last ones measured, else every
        # worker waiting half the slowest group's period
        cost = (float(np.mean(self.switch_costs)) if self.switch_costs
                else 0.5 * self.N * float(group_periods(tau, groups, fallback, bal).max()))
        if not self.cfg.get("price_switch", True):
            cost = 0.0
        lost = self.lost
        if new != list(groups) and not undo and self.cfg.get("objective", "throughput") == "throughput":
            # a change ends the phase (a barrier): keep the groups unless the new ones are
            # clearly better and the loss of staying has paid for the barrier, or the old
            # ones are over the bound
            if not worth_switching(tau, groups, new, c_push, s_max, margin, fallback, wait, cost, lost, bal):
                new = list(groups)
        if new != list(groups):
            self.lost = 0.0
        self.log["taus"].append(tau.tolist())
        self.log.setdefault("c_push", []).append(c_push)
        seen = self.state.window()
        self.log.setdefault("decisions", []).append({
            "version": self.state.v, "t": now, "kept": new == list(groups),
            "c_push": c_push, "comm": fallback, "wait": wait, "loss": j_cur, "predicted_s": s_cur,
            "forced": forced, "gain": gain, "lost": lost, "cost": cost,
            "efficiency": chk.efficiency(), "single_efficiency": chk.single_eff, "measured_worse": undo,
            # the staleness the server applied per group since the last decision: max, mean, count
            "seen_s": {",".join(map(str, groups[g])): [max(x), float(np.mean(x)), len(x)] for g, x in seen.items()}})
        # the damping's expected staleness per group: predicted without the queue's wait, as
        # before the wait entered the bound (a higher expectation damps less)
        return new, predicted_staleness(group_periods(tau, new, fallback, bal)).tolist()

    def server_phase(self, st: ServerState, groups, expected, v: int, phase: int):
        """Serve pushes until the time is up or (CGP) a regrouping changes the groups; returns
        the version and the next grouping with its predicted staleness per group."""
        G = len(groups)
        leaders = [g[0] for g in groups]
        st.begin(G, expected)
        self.merge_check.new_phase()
        R = int(self.cfg["R"])
        # only CGP regroups (ASP and SSP: one phase); its first decision after 2 versions per worker
        end_v = st.v + (R if phase > 0 else 2 * self.N) if self.mode == "cgp" else None
        every_phase = bool(self.cfg.get("barrier_every_phase"))
        nxt: list = [groups, expected]
        changing = False
        n_param = self.w.numel()
        # each group's replies in flight (work, tensor); a reply to a group first waits for its
        # earlier ones, which the group received before it pushed again: until 2026-11-28 every
        # reply's weight copy was kept to the end of the phase (ASP and SSP: the whole run), and
        # the server grew by the model's size per push (1.75 GB after 12 s of ASP on the CNN)
        sends: dict[int, list] = {}
        w_out: dict[int, torch.Tensor] = {}

        def send(gi: int, t: torch.Tensor, tag: int) -> None:
            sends.setdefault(gi, []).append((dist.isend(t, leaders[gi], tag=tag), t))

        def stop_now() -> bool:
            nonlocal end_v, changing
            if self.elapsed() >= float(self.cfg["duration_s"]):
                return True
            if end_v is None or changing or st.v < end_v:
                return changing
            d = self.decide(groups)
            if d is None:  # not everybody has reported yet: decide at a later version
                return False
            if d[0] == list(groups) and not every_phase:
                st.expected = dict(enumerate(d[1]))  # same groups, fresh predictions
                end_v = st.v + R
                return False
            nxt[:] = d
            changing = True
            return True

        def reply(replies) -> None:
            for gi, ver in replies:
                stop = stop_now()
                for wk, _ in sends.pop(gi, ()):
                    wk.wait()
                send(gi, torch.tensor([ver, STOP if stop else GO_ON], dtype=torch.int64), TAG_VER)
                # the group's own copy of the weights, free again now (a fresh clone of a model
                # above glibc's mmap threshold is a new mapping, page faults on its first write)
                if gi not in w_out:
                    w_out[gi] = torch.empty_like(st.w)
                send(gi, w_out[gi].copy_(st.w), TAG_W)
                if stop:
                    stopped.add(gi)
                    if changing:
                        self.stop_times[gi] = tick()
                    reply(st.retire(gi))

        stopped: set[int] = set()
        # CGP: a group the gate holds computes up to this many more batches on the weights it
        # has (ServerState.hold_open) instead of waiting
        acc_max = int(self.cfg.get("accumulate", 0)) if self.mode == "cgp" else 0
        buf = torch.zeros(n_param + 2 * self.N)
        while len(stopped) < G:
            self.bell += 1
            bell = self.store.get(f"cgp/q/{self.bell}").decode().split()
            src, wait = int(bell[0]), max(0.0, time.monotonic() - float(bell[1]))
            ts = tick()
            gi = leaders.index(src)
            hdr = torch.zeros(3, dtype=torch.int64)
            dist.recv(hdr, src, tag=TAG_HDR)
            dist.recv(buf, src, tag=TAG_GRAD)
            for r in groups[gi]:
                self.recent[r].append(float(buf[n_param + r]))
            if float(buf[n_param + self.N + src]) > 0:
                # the leader's last round trip without its wait in the server's queue: the
                # period it would have with a server free to serve it (with the wait, a
                # saturated server's queue hid in the periods, and the push rate it would
                # see looked sustainable)
                self.round_trips[src].append(max(0.0, float(buf[n_param + self.N + src]) - self.queued[src]))
            self.queued[src] = wait
            self.waits.append(wait)
            before = st.applied
            replies = st.push(gi, int(hdr[0]), int(hdr[1]), buf[:n_param].clone())
            self.samples += int(hdr[1])
            self.log["pushes"] += st.applied - before
            reply(replies)
            if (acc_max and not changing and gi not in stopped
                    and self.elapsed() < float(self.cfg["duration_s"]) and st.hold_open(gi, acc_max)):
                # held by the gate: compute another batch on the same weights rather than wait
                send(gi, torch.tensor([st.base[gi], ACCUMULATE], dtype=torch.int64), TAG_VER)
            self.service.append(tick() - ts)
            self.snapshot(st.v, st.w)
            if len(self.service) % 32 == 0:  # the server's memory as it serves: (pushes, MiB)
                self.log.setdefault("rss", []).append((len(self.service), rss_mb()))
        for wk, _ in (x for works in sends.values() for x in works):
            wk.wait()
        return st.v, nxt[0], nxt[1]

    def finish(self) -> None:
        out = self.cfg["out_dir"]
        self.snaps.close()
        if self.rank == self.ps and self.mode != "bsp":
            st = self.state
            self.log.update(max_staleness=st.max_staleness, applied=st.applied, held=st.held, merged_waits=st.merged_waits,
                            accumulated=st.accumulated, merges_undone=self.merge_check.verdicts, version=st.v,
                            staleness_hist=np.bincount(st.staleness).tolist() if st.staleness else [],
                            peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        self.log["wall_s"] = self.elapsed()
        if self.quota:
            self.quota.close()
        with open(os.path.join(out, f"rank{self.rank}.json"), "w") as f:
            json.dump(self.log, f)
        dist.barrier()


def main(argv: list[str] | None = None) -> int:
    return rank_main("host_agent.scheduling.cgp.procs", lambda cfg, rank: Proc(cfg, rank).run(), argv,
                     leave_world=True)


if __name__ == "__main__":
    end_rank(main)
