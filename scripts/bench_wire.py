#!/usr/bin/env python3
"""What a pipeline message costs: the runtime's wire format (header and payload in one send,
``pipeline/wire.py``) against the earlier format of two sends (an int64 header, then the
payload), in the same script, on the same two gloo processes.

Two processes ping-pong an activation: rank 0 sends it, rank 1 receives it and sends it back.
Per round trip each side sends one message and receives one. Reported per format and tensor
shape: process CPU per round trip on each side (what a stage under a CPU quota pays at its
quota's pace: gloo's threads included), wall time per round trip, and the ratio of the two
formats. The formats alternate ``--repeat`` times so a change in the host's load hits both.

    .venv/bin/python scripts/bench_wire.py [--rounds 2000] [--repeat 3] [--shape 8x64x8x8 ...]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from host_agent.scheduling.pipeline import wire  # noqa: E402
from host_agent.scheduling.rank_processes import free_port  # noqa: E402

TAG = 3


def _two_sends(t: torch.Tensor, dst: int) -> None:
    """The earlier format: an int64 header (start, ndim, dims), then the payload."""
    h = torch.zeros(wire.HEADER, dtype=torch.int64)
    h[1] = t.dim()
    h[2:2 + t.dim()] = torch.tensor(t.shape)
    works = [dist.isend(h, dst, tag=TAG), dist.isend(t.contiguous(), dst, tag=TAG)]
    for w in works:
        w.wait()


def _two_recvs(src: int, shape: tuple[int, ...]) -> torch.Tensor:
    h = torch.empty(wire.HEADER, dtype=torch.int64)
    t = torch.empty(shape)
    works = [dist.irecv(h, src, tag=TAG), dist.irecv(t, src, tag=TAG)]
    for w in works:
        w.wait()
    return t


def _side(rank: int, port: int, fmt: str, shape: tuple[int, ...], rounds: int, out) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    t = torch.randn(shape)
    peer = 1 - rank

    def once() -> None:
        if fmt == "one":
            if rank == 0:
                wire.isend(t, 0, peer, TAG)[0].wait()
                wire.recv(peer, TAG, shape)
            else:
                _, got = wire.recv(peer, TAG, shape)
                wire.isend(got, 0, peer, TAG)[0].wait()
        else:
            if rank == 0:
                _two_sends(t, peer)
                _two_recvs(peer, shape)
            else:
                _two_sends(_two_recvs(peer, shape), peer)

    for _ in range(20):
        once()
    dist.barrier()
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        once()
    out.put((rank, (time.process_time() - c0) / rounds, (time.perf_counter() - w0) / rounds))
    dist.destroy_process_group()


def _measure(fmt: str, shape: tuple[int, ...], rounds: int) -> tuple[float, float, float]:
    """(CPU s of rank 0, CPU s of rank 1, wall s) per round trip."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_side, args=(r, port, fmt, shape, rounds, q)) for r in range(2)]
    for p in procs:
        p.start()
    got = sorted(q.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
        if p.exitcode:
            raise SystemExit(f"{fmt} {shape}: a side exited with {p.exitcode}")
    return got[0][1], got[1][1], got[0][2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shape", action="append", help="activation shape, e.g. 8x64x8x8 (repeatable)")
    a = ap.parse_args()
    shapes = [tuple(int(d) for d in s.split("x")) for s in (a.shape or ["8x64x8x8", "8x16x128", "32x512"])]
    load = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {load}; {a.rounds} round trips x {a.repeat} repeats per format and shape")
    print(f"{'shape':>12} {'KiB':>6} {'format':>15} {'CPU us r0':>10} {'CPU us r1':>10} {'wall us':>8}")
    for shape in shapes:
        res: dict[str, list] = {"one": [], "two": []}
        for _ in range(a.repeat):
            for fmt in ("two", "one"):
                res[fmt].append(_measure(fmt, shape, a.rounds))
        med = {f: [statistics.median(r[i] for r in v) * 1e6 for i in range(3)] for f, v in res.items()}
        kib = math.prod(shape) * 4 / 1024
        for f, label in (("two", "header+payload"), ("one", "one message")):
            c0, c1, w = med[f]
            print(f"{'x'.join(map(str, shape)):>12} {kib:6.0f} {label:>15} {c0:10.0f} {c1:10.0f} {w:8.0f}")
        ratio_cpu = (med["one"][0] + med["one"][1]) / (med["two"][0] + med["two"][1])
        print(f"{'':>12} {'':>6} {'one / two':>15} CPU {ratio_cpu:.2f}, wall {med['one'][2] / med['two'][2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
