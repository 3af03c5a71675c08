"""Per-host workloads, run inside Mininet hosts (``python -m emulation.net.agent KIND ...``).

Every workload writes one JSON result file (``--out``), the contract of the runner's
pluggable agent command:

    {"workload": ..., "rank": R, "host": ..., "ok": bool, "iters": [{"time_s": ..,
     "digest": sha256 of the int32 result (ring)}, ...], ...}

* ``ring``: the host-only ring all-reduce baseline (:class:`host_agent.baselines.ring.RingWorker`)
  over UDP sockets between hosts; inputs are a deterministic function of (seed, iteration,
  rank), so the sum is checked exactly here and again by the runner;
* ``saatp``: one SA-ATP worker (:class:`host_agent.worker.Worker`) talking to the switch's
  aggregation address (the switch runs ``p4src/saatp.p4``, configured by the controller);
* ``echo``: UDP echo to every peer (RTT and loss), a connectivity/latency probe.

``--start-at`` (a ``time.time()`` value) lines all ranks up.

**Compute model** (``ring`` and ``saatp``): every iteration starts with the host "computing"
its mini-batch for ``--compute-ms`` T, plus ``--delay-ms`` D on a straggler (its compute is
that much slower), then all-reduces.  Compute is modelled as time, not CPU work: the agent
runs its event loop until the compute deadline (so it keeps answering late peers, as a host
whose accelerator computes while its CPU talks), because the Mininet hosts share the
machine's two cores with the switch process, and real work on them would time CPU
contention instead of the protocol.  The assumption: each host computes on a resource of
its own, at a fixed speed, and compute and communication overlap.  Every iteration record
has ``compute_s`` (iteration start to the all-reduce's start, measured), ``time_s`` (the
all-reduce) and ``iter_s`` (iteration start to all-reduce done), so moving compute between
hosts is never counted as free.  ``--warmup N`` iterations come first and are marked
``"warmup": true`` (not counted by the runner).

**Compute assist** (``saatp --assist-dir DIR``, :mod:`emulation.net.assist`): after the
warm-up the agent reports its measured compute time, waits for the runner's plan, and, when
the plan names it, either computes only (1 − φ) of its batch and all-reduces q − part (the
straggler) or runs a second :class:`Worker` with the virtual wid that all-reduces ``part``
of the straggler's input, computed from its replica (``ring_input`` of the straggler's rank),
φ·T after its own all-reduce began (the helper).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np

from host_agent import wire
from host_agent.baselines.ring import RingWorker
from host_agent.clock import RealClock
from host_agent.constants import DEFAULT_K, SWITCH_IP
from host_agent.transport import UdpSocketTransport
from host_agent.worker import AgentConfig, Worker

from . import assist as assist_mod

ECHO_PORT = 9002


def ring_input(seed: int, it: int, rank: int, n: int) -> np.ndarray:
    return np.random.default_rng([seed, it, rank]).integers(-1000, 1000, n, dtype=np.int32)


def expected_sum(seed: int, it: int, nranks: int, n: int) -> np.ndarray:
    acc = np.zeros(n, np.int64)
    for r in range(nranks):
        acc += ring_input(seed, it, r, n)
    return acc.astype(np.int32)


def digest(v: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(v, dtype="<i4").tobytes()).hexdigest()


def _wait_start(t: float | None) -> None:
    if t:
        d = t - time.time()
        if d > 0:
            time.sleep(d)


def compute_s(a: argparse.Namespace) -> float:
    """This host's compute time for one whole mini-batch (the model: T, plus D on a straggler)."""
    return (a.compute_ms + a.delay_ms) / 1000


def _until(loop: RealClock, deadline: float) -> None:
    """Compute until ``deadline``: the event loop keeps running (late peers are answered)."""
    d = deadline - loop.now()
    if d > 0:
        loop.run(lambda: False, timeout=d)


def run_ring(a: argparse.Namespace) -> dict:

    peers = a.hosts.split(",")
    n = len(peers)
    loop = RealClock()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    sock.bind(("0.0.0.0", a.port or wire.RING_PORT))
    sock.setblocking(False)
    port = a.port or wire.RING_PORT
    stats = {"tx": 0, "rx": 0, "tx_err": 0}

    def send_to(peer: int, data: bytes) -> None:
        try:
            sock.sendto(data, (peers[peer], port))
            stats["tx"] += 1
        except OSError:
            stats["tx_err"] += 1

    w = RingWorker(a.rank, n, a.k, loop, send_to, window=a.window, rto=a.rto)

    def readable() -> None:
        for _ in range(256):
            try:
                data = sock.recv(65535)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            stats["rx"] += 1
            w.on_message(data)
    loop.add_reader(sock, readable)
    _wait_start(a.start_at)
    iters = []
    ok = True
    t_all = time.monotonic()
    for it in range(a.warmup + a.iters):
        t_it = loop.now()
        q = ring_input(a.seed, it, a.rank, a.elements)
        _until(loop, t_it + compute_s(a))
        t0 = loop.now()
        # on the wire the iterations count from 1: RingWorker keeps a peer's packets of the
        # iteration after its current one (initially 0) until it starts it
        w.start(it + 1, q)
        done = loop.run(lambda: w.done, timeout=a.timeout)
        t1 = loop.now()
        rec = {"iter": it, "time_s": t1 - t0, "compute_s": t0 - t_it, "iter_s": t1 - t_it, "done": done,
               "resent": w.resent, "sent": w.sent}
        if it < a.warmup:
            rec["warmup"] = True
        if done:
            res, ovf = w.result()
            exact = bool(np.array_equal(res, expected_sum(a.seed, it, n, a.elements)))
            rec.update(digest=digest(res), exact=exact, overflow=bool(ovf))
            ok &= exact
        else:
            ok = False
            iters.append(rec)
            break
        iters.append(rec)
        # let the last unacknowledged chunks reach the next rank before moving on
        loop.run(lambda: not w.unacked and not w.pending_acks, timeout=min(2.0, a.timeout))
    # answer late retransmissions for a moment so that slower ranks can finish
    loop.run(None, timeout=a.linger)
    loop.remove_reader(sock)
    sock.close()
    return {"ok": ok, "iters": iters, "elements": a.elements, "nranks": n, "total_s": time.monotonic() - t_all,
            "bad_messages": w.bad, **stats}


def run_saatp(a: argparse.Namespace) -> dict:
    """One SA-ATP worker (``host_agent.worker.Worker``) over a kernel UDP socket to the
    switch's aggregation address; iterations are numbered 1..warmup+iters (0 is not a valid
    SA-ATP iteration).  With ``--assist-dir``, compute assist after the warm-up (module docs)."""

    n = len(a.hosts.split(","))
    cfg = AgentConfig(job=a.job, nworkers=n, k=a.k, pool=a.window, t_s=a.t_s)
    loop = RealClock()
    tr = UdpSocketTransport(loop, ("0.0.0.0", a.port or wire.SA_PORT), (a.agg_ip, a.port or wire.SA_PORT))
    w = Worker(a.rank, cfg, loop, tr.send)
    tr.set_receiver(w.on_message)
    vw: Worker | None = None            # the virtual worker, on the helper's host
    plan: dict = {}
    out: dict = {}
    _wait_start(a.start_at)
    iters = []
    ok = True
    t_all = time.monotonic()
    last_compute = 0.0
    for it in range(1, a.warmup + a.iters + 1):
        if a.assist_dir and it == a.warmup + 1:
            plan, vw = _assist_setup(a, loop, tr, w, cfg, iters[-1] if iters else {}, last_compute, out)
        active = bool(plan.get("assist"))
        straggler, helper = (plan.get("straggler"), plan.get("helper")) if active else (None, None)
        share = plan.get("phi", 0.0) if active else 0.0
        t_it = loop.now()
        q = ring_input(a.seed, it, a.rank, a.elements)
        mine = compute_s(a)
        if a.rank == straggler:
            q, _ = assist_mod.split(q, share)      # the helper all-reduces `part` of our batch, we the rest
            mine *= 1 - share
        part = None
        if a.rank == helper:
            # the straggler's input, from this host's replica of its data shard
            _, part = assist_mod.split(ring_input(a.seed, it, straggler, a.elements), share)
        _until(loop, t_it + mine)
        w.start(it, q)
        t_v = None
        if part is not None:
            # after our own batch, φ of the straggler's, at our speed
            _until(loop, w.cur.t_start + share * mine)
            t_v = loop.now()
            vw.start(it, part)
        both = part is not None

        def finished(it=it, both=both, vw=vw) -> bool:
            return w.done and (not both or (vw.cur.it == it and vw.done))
        done = loop.run(finished, timeout=a.timeout)
        t_end = max(w.cur.t_done or loop.now(), (vw.cur.t_done or loop.now()) if part is not None else 0.0)
        rec = {"iter": it, "time_s": (w.cur.t_done or loop.now()) - w.cur.t_start, "compute_s": w.cur.t_start - t_it,
               "iter_s": t_end - t_it, "done": done}
        last_compute = rec["compute_s"]
        if it <= a.warmup:
            rec["warmup"] = True
        if a.rank == straggler:
            rec["assist"] = {"role": "straggler", "phi": share}
        if part is not None:
            rec["assist"] = {"role": "helper", "phi": share, "assist_compute_s": t_v - w.cur.t_start,
                             "virtual_allreduce_s": (vw.cur.t_done or loop.now()) - t_v}
            rec["compute_s"] = t_v - t_it      # its own batch and the straggler's share
        if not done:
            ok = False
            iters.append(rec)
            break
        res, ovf = w.result()
        exact = bool(np.array_equal(res, expected_sum(a.seed, it, n, a.elements)))
        if part is not None:
            vres, _ = vw.result()
            rec["virtual_exact"] = bool(np.array_equal(vres, res))
            exact &= rec["virtual_exact"]
        rec.update(digest=digest(res), exact=exact, overflow=bool(ovf))
        ok &= exact
        iters.append(rec)
    # stay for late peers: the worker caches results and may be its job's helper
    loop.run(None, timeout=a.linger)
    tr.close()
    out.update({"ok": ok, "iters": iters, "elements": a.elements, "nranks": n, "total_s": time.monotonic() - t_all,
                "stats": w.stats.as_dict(), "helper": w.helper.stats.as_dict(), "tx": tr.tx, "rx": tr.rx,
                "tx_dropped": tr.tx_dropped, "compute_ms": a.compute_ms})
    if vw is not None:
        out["virtual"] = {"wid": vw.wid, "stats": vw.stats.as_dict(), "helper": vw.helper.stats.as_dict()}
    return out


def _assist_setup(a: argparse.Namespace, loop: RealClock, tr: UdpSocketTransport, w: Worker, cfg: AgentConfig,
                  last: dict, compute: float, out: dict) -> tuple[dict, Worker | None]:
    """Report the warm-up's measured compute time, wait for the plan, and set up this
    host's part in it: every worker's helper role counts v as a contributor; the helper's
    host gets the virtual worker and routes packets between its two workers."""
    d = Path(a.assist_dir)
    assist_mod.write_json(assist_mod.report_path(d, a.rank),
                          {"rank": a.rank, "compute_s": compute, "allreduce_s": last.get("time_s"),
                           "iter": last.get("iter"), "at": time.time()})
    t0 = loop.now()
    plan = assist_mod.wait_for_plan(d, lambda until, t: loop.run(until, timeout=t), a.timeout)
    out["assist_plan"] = plan
    out["plan_wait_s"] = loop.now() - t0
    if not plan.get("assist"):
        return plan, None
    v = int(plan["virtual"])
    cfg.assist_mask |= 1 << v
    w.helper.assist_mask = cfg.assist_mask
    if a.rank != plan["helper"]:
        return plan, None
    vw = Worker(v, cfg, loop, tr.send)
    share = a.assist_results == "local"

    def deliver(data: bytes) -> None:
        to_real, to_virtual = assist_mod.route(data, v, share)
        if to_real:
            w.on_message(data)
        if to_virtual:
            vw.on_message(data)
    tr.set_receiver(deliver)
    if share:
        # results this host's helper role completes itself reach v too (the switch does not
        # send a helper's own HRESULT back to its port)
        own = w.helper.on_result

        def local_result(h: wire.Header, vals: np.ndarray) -> None:
            own(h, vals)
            vw.on_message(wire.pack(h, vals))
        w.helper.on_result = local_result
    return plan, vw


def run_echo(a: argparse.Namespace) -> dict:
    peers = [p for p in a.hosts.split(",")]
    me = peers[a.rank]
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("0.0.0.0", a.port or ECHO_PORT))
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                data, addr = srv.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            srv.sendto(data, addr)
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    _wait_start(a.start_at)
    cli = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cli.settimeout(a.rto * 20)
    per_peer = {}
    ok = True
    for j, peer in enumerate(peers):
        if peer == me:
            continue
        rtts, lost = [], 0
        for i in range(a.iters):
            if a.delay_ms:
                time.sleep(a.delay_ms / 1000)
            msg = f"{a.rank}:{j}:{i}".encode().ljust(64, b".")
            t0 = time.monotonic()
            cli.sendto(msg, (peer, a.port or ECHO_PORT))
            try:
                while True:
                    data, _ = cli.recvfrom(2048)
                    if data == msg:
                        rtts.append(time.monotonic() - t0)
                        break
            except socket.timeout:
                lost += 1
        per_peer[peer] = {"sent": a.iters, "lost": lost,
                          "rtt_ms_mean": 1000 * float(np.mean(rtts)) if rtts else None,
                          "rtt_ms_max": 1000 * float(np.max(rtts)) if rtts else None}
        ok &= lost < a.iters
    time.sleep(a.linger)
    stop.set()
    th.join(1)
    srv.close()
    cli.close()
    iters = [{"iter": 0, "time_s": float(np.mean([p["rtt_ms_mean"] or 0 for p in per_peer.values()]) / 1000)}]
    return {"ok": ok, "peers": per_peer, "iters": iters}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m emulation.net.agent", description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=["ring", "echo", "saatp"])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--hosts", required=True, help="comma-separated IPv4 addresses, in rank order")
    ap.add_argument("--out", required=True)
    ap.add_argument("--host", default=os.uname().nodename)
    ap.add_argument("--elements", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--k", type=int, default=DEFAULT_K,
                    help=f"int32 values per message (power of two; default {DEFAULT_K}, the lanes of p4src/saatp.p4)")
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--rto", type=float, default=0.05)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="straggler: its compute takes this much longer per iteration")
    ap.add_argument("--compute-ms", type=float, default=0.0,
                    help="compute time per iteration (modelled, see the module docs)")
    ap.add_argument("--warmup", type=int, default=0, help="iterations before the counted ones (marked warmup)")
    ap.add_argument("--assist-dir", default=None,
                    help="saatp: compute assist after the warm-up; reports and the plan go through DIR")
    ap.add_argument("--assist-results", choices=["local", "replica"], default="local",
                    help="saatp assist: the virtual worker gets the helper host's results (local) or a "
                         "multicast replica of its own (replica)")
    ap.add_argument("--start-at", type=float, default=None)
    ap.add_argument("--timeout", type=float, default=30.0, help="per iteration")
    ap.add_argument("--linger", type=float, default=1.0)
    ap.add_argument("--agg-ip", default=SWITCH_IP, help="saatp: the switch's aggregation address")
    ap.add_argument("--job", type=int, default=0, help="saatp: job id")
    ap.add_argument("--t-s", type=float, default=0.05, help="saatp: straggler threshold T_s (s)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    n = len(a.hosts.split(","))
    if not 0 <= a.rank < n:
        print(f"agent: rank {a.rank} out of range for {n} hosts", file=sys.stderr)
        return 2
    if a.assist_dir and (a.workload != "saatp" or a.warmup < 1):
        print("agent: --assist-dir is for saatp with --warmup >= 1 (the plan is learnt in the warm-up)",
              file=sys.stderr)
        return 2
    if a.compute_ms < 0 or a.delay_ms < 0 or a.warmup < 0:
        print("agent: --compute-ms, --delay-ms and --warmup must not be negative", file=sys.stderr)
        return 2
    t0 = time.time()
    try:
        res = {"ring": run_ring, "echo": run_echo, "saatp": run_saatp}[a.workload](a)
    except Exception as e:  # noqa: BLE001 - the result file says what went wrong
        res = {"ok": False, "error": f"{type(e).__name__}: {e}", "iters": []}
    res.update(workload=a.workload, rank=a.rank, host=a.host, delay_ms=a.delay_ms, started=t0,
               pid=os.getpid(), cpu_s=round(time.process_time(), 3))   # CPU this agent used (all threads)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, a.out)
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
