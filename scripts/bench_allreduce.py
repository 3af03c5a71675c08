#!/usr/bin/env python3
"""Allreduce throughput of the ``saatp`` backend against gloo, in the same run.

Two (or --world) spawned ranks initialise the default process group with ``saatp`` and create a
gloo group over the same ranks; for each size they time --reps allreduces of float32 tensors in
each group and print elements/s (elements reduced per second per rank) and the saatp/gloo ratio.
Each saatp engine asked for (--engines ring,switch) gets its own saatp sub-group.

For the switch engine it also prints where the time goes during the timed allreduces: the CPU
seconds each rank process and the switch process (``saatp-switch``, started by rank 0) used, as
fractions of the wall time, and the switch engine's K.

    python scripts/bench_allreduce.py                     # 2 ranks, ring engine, sizes 2^10..2^22
    python scripts/bench_allreduce.py --engines ring,switch --sizes 65536,1048576
    python scripts/bench_allreduce.py --engines switch --sizes 1048576 --world 2,4,8
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

try:
    import host_agent  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import host_agent  # noqa: F401


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", default="2", help="ranks; comma-separated for several runs (2,4,8)")
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
    try:
        a.worlds = [int(w) for w in a.world.split(",") if w]
    except ValueError:
        p.error("--world must be comma-separated integers")
    a.engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    bad = [e for e in a.engines if e not in ("ring", "switch")]
    if bad or not a.engines:
        p.error(f"--engines: unknown {bad}; choose from ring, switch")
    if not a.worlds or min(a.worlds) < 2 or any(s <= 0 for s in a.sizes):
        p.error("--world must be >= 2 and sizes positive")
    return a


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _worker_stats(eng) -> tuple[int, int, int, int]:
    """DATA packets, retransmissions, probes and result probes the engine's workers sent."""
    lanes = getattr(eng, "lanes", None) or []
    st = [lane.worker.stats for lane in lanes]
    return (sum(s.data_sent for s in st), sum(s.resends for s in st), sum(s.probes for s in st),
            sum(s.result_probes for s in st))


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
        row = {"n": n, "reps": reps}
        for name, g in groups.items():
            eng = getattr(g, "engine", None)
            for _ in range(len(getattr(eng, "lanes", None) or [0])):  # warm-up: each lane learns its scale
                dist.all_reduce(torch.ones(n), group=g)
            xs = [torch.ones(n) for _ in range(reps)]  # one tensor per allreduce: every sum is world
            dist.barrier(group=g)
            sw_pid = (eng.layout.get("pid") if rank == 0 and getattr(eng, "name", "") == "switch" else None)
            stats0 = _worker_stats(eng)
            c0, s0 = time.process_time(), (_cpu_of(sw_pid) if sw_pid else 0.0)
            t0 = time.perf_counter()
            for x in xs:
                dist.all_reduce(x, group=g)
            dt = time.perf_counter() - t0
            c1, s1 = time.process_time(), (_cpu_of(sw_pid) if sw_pid else 0.0)
            bad = [i for i, x in enumerate(xs) if not bool((x == float(world)).all())]
            if bad:
                raise AssertionError(f"{name}: allreduce(s) {bad} of {n} ones on {world} ranks did not give {world}")
            stats1 = _worker_stats(eng)
            t = torch.tensor([dt, c1 - c0, s1 - s0, *(b - a for a, b in zip(stats0, stats1))], dtype=torch.float64)
            ts = [torch.zeros(len(t), dtype=torch.float64) for _ in range(world)]
            dist.all_gather(ts, t)
            wall = max(float(v[0]) for v in ts)  # slowest rank decides
            row[name] = n * reps / wall
            if getattr(eng, "name", "") == "switch":
                row[name + ":split"] = dict(wall=wall, ranks=[float(v[1]) for v in ts], switch=float(ts[0][2]),
                                            k=eng.k, reps=reps, redone=eng.redone,
                                            pkts=[int(sum(float(v[3 + i]) for v in ts)) for i in range(4)])
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
    status = 0
    for world in args.worlds:
        status = max(status, run_world(world, args))
    return status


def run_world(world: int, args) -> int:
    import multiprocessing as mp
    import queue

    ctx = mp.get_context("spawn")
    from host_agent.free_ports import free_tcp_port

    port = free_tcp_port()
    q = ctx.Queue()
    procs = [ctx.Process(target=bench, args=(r, world, port, args, q), daemon=True) for r in range(world)]
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
    names = [k for k in rows[0] if k not in ("n", "reps") and ":" not in k]
    print(f"allreduce of float32 on {world} ranks (127.0.0.1), elements/s per rank; ratio = saatp/gloo")
    head = f"{'elements':>10} {'reps':>5} " + " ".join(f"{n:>14}" for n in names)
    head += "".join(f" {('ratio ' + n.split('/')[1]):>12}" for n in names if n != "gloo")
    print(head)
    for r in rows:
        line = f"{r['n']:>10} {r['reps']:>5} " + " ".join(f"{r[n]:>14.3e}" for n in names)
        line += "".join(f" {r[n] / r['gloo']:>12.3f}" for n in names if n != "gloo")
        print(line)
    for r in rows:
        for n in names:
            sp = r.get(n + ":split")
            if sp:
                ranks = " ".join(f"{c / sp['wall']:.2f}" for c in sp["ranks"])
                data, resent, probes, rprobes = sp["pkts"]
                print(f"  {n} K={sp['k']} n={r['n']}: {sp['wall'] / sp['reps'] * 1e3:.1f} ms per allreduce; "
                      f"CPU / wall: switch process {sp['switch'] / sp['wall']:.2f}, ranks {ranks}; "
                      f"all ranks sent {data} DATA ({resent} resent), {probes} probes, {rprobes} result probes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
