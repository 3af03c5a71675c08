#!/usr/bin/env python3
"""Allreduce throughput of the ``saatp`` backend against gloo, in the same run.

Two (or --world) spawned ranks initialise the default process group with ``saatp`` and create a
gloo group over the same ranks; for each size they time --reps allreduces of float32 tensors in
each group and print elements/s (elements reduced per second per rank) and the saatp/gloo ratio.
Each saatp engine asked for (--engines ring,switch) gets its own saatp sub-group.

    python scripts/bench_allreduce.py                     # 2 ranks, ring engine, sizes 2^10..2^22
    python scripts/bench_allreduce.py --engines ring,switch --sizes 65536,1048576
"""
from __future__ import annotations

import argparse
import datetime
import os
import socket
import sys
import time

try:
    import host_agent  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import host_agent  # noqa: F401


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--sizes", default="1024,16384,262144,1048576,4194304",
                   help="comma-separated element counts")
    p.add_argument("--reps", type=int, default=0, help="repetitions per size (0: about 4M elements' worth, 3..50)")
    p.add_argument("--engines", default="ring", help="comma-separated saatp engines: ring, switch")
    p.add_argument("--timeout", type=float, default=300.0)
    a = p.parse_args(argv)
    try:
        a.sizes = [int(s) for s in a.sizes.split(",") if s]
    except ValueError:
        p.error("--sizes must be comma-separated integers")
    a.engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    bad = [e for e in a.engines if e not in ("ring", "switch")]
    if bad or not a.engines:
        p.error(f"--engines: unknown {bad}; choose from ring, switch")
    if a.world < 2 or any(s <= 0 for s in a.sizes):
        p.error("--world must be >= 2 and sizes positive")
    return a


def bench(rank, world, port, args, q):
    import torch
    import torch.distributed as dist

    from host_agent.torch_backend import SAATPOptions

    torch.set_num_threads(1)
    os.environ.setdefault("SAATP_LOG", "0")
    tmo = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group("saatp", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=tmo, pg_options=SAATPOptions(engine="ring"))
    groups = {"gloo": dist.new_group(backend="gloo", timeout=tmo)}
    for e in args.engines:
        groups[f"saatp/{e}"] = dist.new_group(backend="saatp", timeout=tmo, pg_options=SAATPOptions(engine=e))
    rows = []
    for n in args.sizes:
        reps = args.reps or max(3, min(50, (1 << 22) // n))
        x = torch.ones(n)
        row = {"n": n, "reps": reps}
        for name, g in groups.items():
            dist.all_reduce(x, group=g)  # warm-up
            dist.barrier(group=g)
            t0 = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(x, group=g)
            dt = time.perf_counter() - t0
            t = torch.tensor([dt], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)  # slowest rank decides
            row[name] = n * reps / float(t)
            x.fill_(1.0)
        rows.append(row)
    if rank == 0:
        q.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None) -> int:
    args = parse_args(argv)
    if "switch" in args.engines:
        from host_agent.torch_backend.engine_choice import switch_available

        ok, why = switch_available()
        if not ok:
            print(f"engine 'switch' is unavailable: {why}", file=sys.stderr)
            return 2
    import multiprocessing as mp
    import queue

    ctx = mp.get_context("spawn")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    q = ctx.Queue()
    procs = [ctx.Process(target=bench, args=(r, args.world, port, args, q), daemon=True) for r in range(args.world)]
    for p in procs:
        p.start()
    try:
        rows = q.get(timeout=args.timeout + 120)
    except queue.Empty:
        print("benchmark timed out", file=sys.stderr)
        rows = None
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.terminate()
            p.join(5)
    if rows is None or any(p.exitcode not in (0, None) for p in procs):
        print(f"benchmark failed (exit codes {[p.exitcode for p in procs]})", file=sys.stderr)
        return 1
    names = [k for k in rows[0] if k not in ("n", "reps")]
    print(f"allreduce of float32 on {args.world} ranks (127.0.0.1), elements/s per rank; ratio = saatp/gloo")
    head = f"{'elements':>10} {'reps':>5} " + " ".join(f"{n:>14}" for n in names)
    head += "".join(f" {('ratio ' + n.split('/')[1]):>12}" for n in names if n != "gloo")
    print(head)
    for r in rows:
        line = f"{r['n']:>10} {r['reps']:>5} " + " ".join(f"{r[n]:>14.3e}" for n in names)
        line += "".join(f" {r[n] / r['gloo']:>12.3f}" for n in names if n != "gloo")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
