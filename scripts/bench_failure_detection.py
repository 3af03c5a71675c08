#!/usr/bin/env python3
"""How long the surviving ranks take to fail after a rank or the switch dies, against gloo.

Each scenario spawns WORLD rank processes (group timeout 60 s), runs one allreduce, then kills
one thing and lets every survivor start the next allreduce; each survivor reports the seconds
from the kill to its error and the error's first line.

    .venv/bin/python scripts/bench_failure_detection.py [--world 3]

Scenarios: a rank SIGKILLed (gloo, saatp ring engine, saatp switch engine), the switch process
SIGKILLed, the switch process SIGSTOPped (alive but not answering).
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import queue
import signal
import sys
import tempfile
import time

TIMEOUT_S = 60.0


def _free_port() -> int:
    from host_agent.free_ports import free_tcp_port

    return free_tcp_port()


def _rank(rank, world, port, backend, engine, q, go_path, killed_at):
    os.environ["SAATP_ENGINE"] = engine or "ring"
    os.environ["SAATP_LOG"] = "0"
    import torch
    import torch.distributed as dist

    import host_agent  # noqa: F401  registers "saatp"

    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=TIMEOUT_S))
    t = torch.ones(100_000)
    dist.all_reduce(t)
    pid = None
    if backend == "saatp" and rank == 0 and engine == "switch":
        pid = dist.group.WORLD.engine.layout["pid"]
    q.put(("ready", rank, pid))
    while not os.path.exists(go_path):  # a file, not an mp.Event: a SIGKILLed waiter would wedge one
        time.sleep(0.001)
    try:
        dist.all_reduce(torch.ones(100_000))
        q.put(("done", rank, None))
    except Exception as e:  # noqa: BLE001
        q.put(("error", rank, (time.time() - killed_at.value, str(e).splitlines()[0][:160])))
    q.close()
    q.join_thread()  # the queue's feeder thread must deliver before the hard exit
    os._exit(0)


def run(world: int, backend: str, engine: str | None, kill: str) -> dict:
    ctx = mp.get_context("spawn")
    q, killed_at = ctx.Queue(), ctx.Value("d", 0.0, lock=False)
    go_path = os.path.join(tempfile.mkdtemp(prefix="saatp-bench-"), "go")
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, world, port, backend, engine, q, go_path, killed_at), daemon=True)
             for r in range(world)]
    for p in procs:
        p.start()
    switch_pid = None
    for _ in range(world):
        kind, rank, pid = q.get(timeout=180)
        switch_pid = switch_pid or pid
    victim = world - 1
    if kill == "rank":
        os.kill(procs[victim].pid, signal.SIGKILL)
    elif kill == "switch":
        os.kill(switch_pid, signal.SIGKILL)
    elif kill == "hang":
        os.kill(switch_pid, signal.SIGSTOP)
    killed_at.value = time.time()
    open(go_path, "w").close()
    survivors = [r for r in range(world) if not (kill == "rank" and r == victim)]
    out = {}
    deadline = time.monotonic() + TIMEOUT_S + 30
    while len(out) < len(survivors) and time.monotonic() < deadline:
        try:
            kind, rank, payload = q.get(timeout=1)
        except queue.Empty:
            continue
        out[rank] = payload if kind == "error" else (None, "completed (no error)")
    if kill == "hang" and switch_pid:
        os.kill(switch_pid, signal.SIGCONT)
        os.kill(switch_pid, signal.SIGKILL)
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--world", type=int, default=3)
    args = ap.parse_args(argv)
    cases = [("gloo", None, "rank"), ("saatp", "ring", "rank"), ("saatp", "switch", "rank"),
             ("saatp", "switch", "switch"), ("saatp", "switch", "hang")]
    print(f"{args.world} ranks, group timeout {TIMEOUT_S:g} s; seconds from the event to each survivor's error")
    results = []
    for backend, engine, kill in cases:
        res = run(args.world, backend, engine, kill)
        secs = [v[0] for v in res.values() if v[0] is not None]
        name = backend + (f"/{engine}" if engine else "")
        worst = max(secs) if secs else float("nan")
        msg = next(iter(res.values()))[1] if res else "no survivor reported"
        print(flush=True, end="")
        print(f"  {name:13s} {kill:7s} killed: worst {worst:6.2f} s over {len(res)} survivor(s)   {msg}")
        results.append(dict(backend=name, event=kill, worst_s=worst, per_rank=res))
    if os.environ.get("BENCH_JSON"):
        with open(os.environ["BENCH_JSON"], "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
