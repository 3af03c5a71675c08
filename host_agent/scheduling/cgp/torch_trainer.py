"""A real CGP trainer on torch.distributed (gloo, CPU processes).

Every rank is a worker; rank 0 also hosts the parameter server (PS) in two threads. The
straggler is emulated with ``time.sleep`` (``straggler_factor`` times the base iteration
time) and can move to another rank at a given global version.

Protocol
* Training runs in *phases* of ``R`` global versions. All ranks start a phase with the same
  model (rank 0 broadcasts the PS weights over the world group) and the same grouping.
* Inside a group: every member computes the gradient of its local batch, the group
  all-reduces it on its own process group (``dist.new_group``), the leader (lowest rank)
  sends ``(header, gradient)`` to the PS on a dedicated process group and receives
  ``(version, stop flag, weights)`` on another one, then broadcasts them to the group.
* The PS applies ``w -= lr * (n_g / B_ref) * h(s) * g`` (see :mod:`.policy`) under the
  bounded-staleness gate: an update is held while applying it would leave another in-flight
  group more than ``s_max`` versions behind; if every in-flight group is held, they are
  applied one after another. Once the version reaches the phase end, every reply carries
  ``stop``; a group stops after its next update.
* At the phase barrier all ranks all-gather their median compute time of the phase, compute
  the same grouping with :func:`segment_groups`, and create (or reuse, cached by rank set)
  the groups' process groups, every rank calling ``new_group`` for every group in the same
  order (gloo's ``new_group`` is collective over the world).

``mode="bsp"`` runs the baseline: a world all-reduce of gradients every iteration.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
import time
from dataclasses import asdict, dataclass
from datetime import timedelta

import numpy as np

from .grouping import segment_groups, straggler_flags
from .policy import damping

TAG_HDR, TAG_GRAD, TAG_VER, TAG_W = 11, 12, 13, 14
KIND_PUSH, KIND_DONE = 0, 2


@dataclass
class TorchCGPConfig:
    world: int = 4
    mode: str = "cgp"  # or "bsp"
    phases: int = 6
    R: int = 12  # global versions per phase (CGP); BSP runs phases * R iterations... see run
    bsp_iters: int = 0  # 0 = same number of samples as CGP would process at most
    local_batch: int = 32
    lr: float = 1.0
    base_time: float = 0.02  # s of emulated compute per iteration
    straggler: int = 3
    straggler_factor: float = 3.0
    move_to: int = -1  # rank the straggler moves to at version move_at (-1: never)
    move_at: int = 0
    s_max: int = 4
    lam: float = 0.1
    theta: float = 0.3
    c_push: float = 0.005  # s, the grouping's estimate of the PS time per update
    damping: str = "excess"
    check: bool = True  # verify replica consistency inside groups after each step
    seed: int = 0
    timeout_s: float = 60.0

    def __post_init__(self):
        if self.world < 2:
            raise ValueError("world must be >= 2")
        if self.mode not in ("cgp", "bsp"):
            raise ValueError("mode must be 'cgp' or 'bsp'")
        if not 0 <= self.straggler < self.world or self.move_to >= self.world:
            raise ValueError("straggler / move_to must be ranks")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- model and data
def _make_problem(cfg: TorchCGPConfig):
    import torch
    from .sim import make_dataset
    Xtr, ytr, Xte, yte = make_dataset(4000, 1000, 20, 10, seed=cfg.seed)
    torch.manual_seed(cfg.seed)
    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.Tanh(), torch.nn.Linear(64, 10))
    return (model, torch.tensor(Xtr, dtype=torch.float32), torch.tensor(ytr),
            torch.tensor(Xte, dtype=torch.float32), torch.tensor(yte))


class _PS:
    """Parameter-server state and policy (lives on rank 0)."""

    def __init__(self, w, cfg: TorchCGPConfig):
        self.w = w.clone()
        self.v = 0
        self.cfg = cfg
        self.lock = threading.Lock()
        self.requests: queue.Queue = queue.Queue()
        self.max_staleness = 0
        self.applied = 0
        self.held = 0
        self.on_version = None

    def begin_phase(self, groups, end_version):
        self.groups = [tuple(g) for g in groups]
        self.base = {gi: self.v for gi in range(len(groups))}
        self.active = set(range(len(groups)))
        self.expected = {}
        self.end = end_version
        self.pending: list = []

    def serve_phase(self, reply):
        """Serve requests until every group of the phase has stopped."""
        self.error = None
        try:
            while self.active:
                req = self.requests.get(timeout=self.cfg.timeout_s)
                self.pending.append(req)
                self._drain(reply)
        except Exception as e:  # reported by the main thread
            self.error = e

    def _drain(self, reply):
        progress = True
        while progress and self.pending:
            progress = False
            for k, (gi, g, n, src) in enumerate(self.pending):
                others = [h for h in self.active if h != gi]
                if all(self.v + 1 - self.base[h] <= self.cfg.s_max for h in others):
                    self.pending.pop(k)
                    self._apply(gi, g, n, src, reply)
                    progress = True
                    break
            if not progress and self.pending and len(self.pending) == len(self.active):
                self.held += 1
                gi, g, n, src = self.pending.pop(0)  # everybody waits: apply the oldest
                self._apply(gi, g, n, src, reply)
                progress = True

    def _apply(self, gi, g, n, src, reply):
        cfg = self.cfg
        s = self.v - self.base[gi]
        self.max_staleness = max(self.max_staleness, s)
        h = damping(s, cfg.damping, self.expected.get(gi, 0.0))
        with self.lock:
            self.w -= cfg.lr * (n / (cfg.world * cfg.local_batch)) * h * g
            self.v += 1
            self.applied += 1
            v, w = self.v, self.w.clone()
        stop = int(v >= self.end)
        if self.on_version is not None and v % 6 == 0:
            self.on_version(v, w)
        self.base[gi] = v
        if stop:
            self.active.discard(gi)
        reply(src, v, stop, w)


def _worker(rank: int, cfg: TorchCGPConfig, port: int, outdir: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.utils import parameters_to_vector, vector_to_parameters

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", rank=rank, world_size=cfg.world,
                            timeout=timedelta(seconds=cfg.timeout_s))
    model, Xtr, ytr, Xte, yte = _make_problem(cfg)
    params = list(model.parameters())
    w = parameters_to_vector(params).detach().clone()
    nparam = w.numel()
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    lossf = torch.nn.CrossEntropyLoss()
    log = {"rank": rank, "mode": cfg.mode, "pushes": 0, "iters": 0, "groupings": [], "consistency": [],
           "loss": [], "tau": []}
    t_start = time.perf_counter()

    def grad_at(wvec):
        vector_to_parameters(wvec, params)
        idx = torch.randint(0, Xtr.shape[0], (cfg.local_batch,), generator=gen)
        model.zero_grad()
        loss = lossf(model(Xtr[idx]), ytr[idx])
        loss.backward()
        return parameters_to_vector([p.grad for p in params]).detach().clone()

    def emulate(version):
        who = cfg.move_to if (cfg.move_to >= 0 and version >= cfg.move_at) else cfg.straggler
        t = cfg.base_time * (cfg.straggler_factor if rank == who else 1.0)
        time.sleep(t)

    def eval_loss(wvec):
        with torch.no_grad():
            vector_to_parameters(wvec, params)
            out = model(Xte)
            return float(lossf(out, yte)), float((out.argmax(1) == yte).float().mean())

    if cfg.mode == "bsp":
        iters = cfg.bsp_iters or cfg.phases * cfg.R
        v = 0
        for it in range(iters):
            t0 = time.perf_counter()
            g = grad_at(w)
            emulate(v)
            log["tau"].append(time.perf_counter() - t0)
            dist.all_reduce(g)
            w -= cfg.lr * g / cfg.world
            v += 1
            log["iters"] += 1
            if rank == 0 and (it % 5 == 0 or it == iters - 1):
                log["loss"].append((time.perf_counter() - t_start, v, *eval_loss(w)))
        log["samples"] = iters * cfg.local_batch
        log["wall"] = time.perf_counter() - t_start
        log["versions"] = v
        _finish(rank, log, outdir, dist)
        return

    # ------------------------------------------------------------------ CGP
    ps_pg = dist.new_group(list(range(cfg.world)))  # leaders -> PS
    rep_pg = dist.new_group(list(range(cfg.world)))  # PS -> leaders
    cache: dict = {}

    def pg_for(ranks):
        key = frozenset(ranks)
        if key not in cache:
            cache[key] = dist.new_group(sorted(ranks))
        return cache[key]

    ps = _PS(w, cfg) if rank == 0 else None
    if rank == 0:
        # the PS thread logs the loss every 6 versions (on its own copy of the model)
        import copy
        emodel = copy.deepcopy(model)
        eparams = list(emodel.parameters())

        def on_version(vv, wv):
            with torch.no_grad():
                vector_to_parameters(wv, eparams)
                out = emodel(Xte)
                log["loss"].append((time.perf_counter() - t_start, vv, float(lossf(out, yte)),
                                    float((out.argmax(1) == yte).float().mean())))
        ps.on_version = on_version
    local_reply: queue.Queue = queue.Queue()
    threads = []
    if rank == 0:
        def reply(src, v, stop, wv):
            if src == 0:
                local_reply.put((v, stop, wv))
            else:
                dist.send(torch.tensor([v, stop], dtype=torch.int64), dst=src, group=rep_pg, tag=TAG_VER)
                dist.send(wv, dst=src, group=rep_pg, tag=TAG_W)

        def receiver():
            done = 0
            hdr = torch.zeros(4, dtype=torch.int64)
            while done < cfg.world - 1:
                src = dist.recv(hdr, src=None, group=ps_pg, tag=TAG_HDR)
                kind, gi, n, _ = hdr.tolist()
                if kind == KIND_DONE:
                    done += 1
                    continue
                g = torch.zeros(nparam)
                dist.recv(g, src=src, group=ps_pg, tag=TAG_GRAD)
                ps.requests.put((gi, g, n, src))

        rt = threading.Thread(target=receiver, daemon=True)
        rt.start()
        threads.append(rt)

    def push(gi, g, n):
        """Leader -> PS -> (version, stop, weights)."""
        if rank == 0:
            ps.requests.put((gi, g, n, 0))
            return local_reply.get(timeout=cfg.timeout_s)
        dist.send(torch.tensor([KIND_PUSH, gi, n, 0], dtype=torch.int64), dst=0, group=ps_pg, tag=TAG_HDR)
        dist.send(g, dst=0, group=ps_pg, tag=TAG_GRAD)
        vs = torch.zeros(2, dtype=torch.int64)
        dist.recv(vs, src=0, group=rep_pg, tag=TAG_VER)
        wv = torch.zeros(nparam)
        dist.recv(wv, src=0, group=rep_pg, tag=TAG_W)
        return int(vs[0]), int(vs[1]), wv

    groups = [tuple(range(cfg.world))]
    expected = [0.0]
    v = 0
    for phase in range(cfg.phases):
        for g_ in groups:  # every rank creates every group, same order
            pg_for(g_)
        gi = next(i for i, g_ in enumerate(groups) if rank in g_)
        members = groups[gi]
        leader = min(members)
        gpg = pg_for(members)
        log["groupings"].append({"phase": phase, "version": v, "groups": [list(g_) for g_ in groups]})
        server = None
        if rank == 0:
            ps.begin_phase(groups, v + cfg.R)
            ps.expected = dict(enumerate(expected))
            server = threading.Thread(target=ps.serve_phase, args=(reply,), daemon=True)
            server.start()
        taus = []
        while True:
            t0 = time.perf_counter()
            g = grad_at(w)
            emulate(v)
            taus.append(time.perf_counter() - t0)
            log["iters"] += 1
            if len(members) > 1:
                dist.all_reduce(g, group=gpg)
                g /= len(members)
            if rank == leader:
                v_new, stop, wv = push(gi, g, len(members) * cfg.local_batch)
                log["pushes"] += 1
                msg = torch.tensor([v_new, stop], dtype=torch.int64)
            else:
                msg = torch.zeros(2, dtype=torch.int64)
                wv = torch.zeros(nparam)
            if len(members) > 1:
                dist.broadcast(msg, src=leader, group=gpg)
                dist.broadcast(wv, src=leader, group=gpg)
            w = wv
            v, stop = int(msg[0]), int(msg[1])
            if cfg.check and len(members) > 1:
                allw = [torch.zeros(nparam) for _ in members]
                dist.all_gather(allw, w, group=gpg)
                log["consistency"].append(float(max((x - w).abs().max() for x in allw)))
            if stop:
                break
        if rank == 0:
            server.join(timeout=cfg.timeout_s)
            if server.is_alive() or ps.error is not None:
                raise RuntimeError(f"PS phase did not finish: {ps.error!r}")
            with ps.lock:
                wsync = ps.w.clone()
                vsync = ps.v
            log["loss"].append((time.perf_counter() - t_start, vsync, *eval_loss(wsync)))
        else:
            wsync, vsync = torch.zeros(nparam), 0
        # phase barrier: same weights and measurements everywhere, then regroup
        vt = torch.tensor([vsync], dtype=torch.int64)
        dist.broadcast(wsync, src=0)
        dist.broadcast(vt, src=0)
        w, v = wsync, int(vt[0])
        # the median of the phase's last 3 compute times: robust to one outlier, quick to
        # follow a straggler that moved late in the phase
        tau = torch.tensor([float(np.median(taus[-3:]))], dtype=torch.float64)
        alltau = [torch.zeros(1, dtype=torch.float64) for _ in range(cfg.world)]
        dist.all_gather(alltau, tau)
        tau_np = np.array([float(x[0]) for x in alltau])
        log["tau"].append(tau_np.tolist())
        gr = segment_groups(tau_np, cfg.lam, cfg.s_max, 4, cfg.c_push, cfg.theta)
        groups = [tuple(sorted(g_)) for g_ in gr.groups]
        groups.sort(key=min)
        expected = [gr.staleness[[tuple(sorted(x)) for x in gr.groups].index(g_)] for g_ in groups]
        log["flags"] = straggler_flags(tau_np, cfg.theta).tolist()
    if rank != 0:
        dist.send(torch.tensor([KIND_DONE, 0, 0, 0], dtype=torch.int64), dst=0, group=ps_pg, tag=TAG_HDR)
    else:
        for t in threads:
            t.join(timeout=cfg.timeout_s)
        log["ps_version"] = ps.v
        log["ps_applied"] = ps.applied
        log["ps_max_staleness"] = ps.max_staleness
        log["ps_held"] = ps.held
    log["wall"] = time.perf_counter() - t_start
    log["versions"] = v
    log["samples"] = log["iters"] * cfg.local_batch
    _finish(rank, log, outdir, dist)


def _finish(rank, log, outdir, dist):
    import torch
    tot = torch.tensor([float(log["samples"])], dtype=torch.float64)
    dist.all_reduce(tot)
    log["total_samples"] = float(tot[0])
    log["loss"] = sorted(log["loss"])
    dist.barrier()
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as fh:
        json.dump(log, fh)
    dist.destroy_process_group()


def _entry(rank, cfg_dict, port, outdir):
    _worker(rank, TorchCGPConfig(**cfg_dict), port, outdir)


def launch(cfg: TorchCGPConfig, outdir: str, hard_timeout: float = 120.0) -> list[dict]:
    """Spawn ``cfg.world`` processes, wait at most ``hard_timeout`` seconds, return the
    per-rank logs. Raises ``TimeoutError`` (after terminating the processes it started) on
    a hang and ``RuntimeError`` if a rank failed."""
    import torch.multiprocessing as mp
    os.makedirs(outdir, exist_ok=True)
    port = free_port()
    ctx = mp.start_processes(_entry, args=(asdict(cfg), port, outdir), nprocs=cfg.world,
                             join=False, start_method="spawn")
    deadline = time.monotonic() + hard_timeout
    try:
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                raise TimeoutError(f"torch CGP run did not finish within {hard_timeout:.0f} s")
    except mp.ProcessRaisedException as e:
        raise RuntimeError(f"a rank failed: {e}") from None
    except mp.ProcessExitedException as e:
        raise RuntimeError(f"a rank exited abnormally: {e}") from None
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.terminate()
                p.join(5)
                if p.is_alive():
                    p.kill()
    logs = []
    for r in range(cfg.world):
        with open(os.path.join(outdir, f"rank{r}.json")) as fh:
            logs.append(json.load(fh))
    return logs
