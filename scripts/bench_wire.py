#!/usr/bin/env python3
"""What a pipeline message costs: the runtime's wire format (the tensor's float32 values sent
as they are, received into a kept buffer, ``pipeline/wire.py``) against the two earlier
formats, in the same script, on the same two gloo processes:

* ``header copy`` (until 2026-11-28): one float32 buffer, freshly allocated per message, a
  header ``(start, ndim, dims)`` then a copy of the payload;
* ``two sends`` (until 2026-11-27): an int64 header message, then the payload.

Two processes ping-pong an activation: rank 0 sends it, rank 1 receives it and sends it back.
Per round trip each side sends one message and receives one. Reported per format and tensor
shape: process CPU per round trip on each side (what a stage under a CPU quota pays at its
quota's pace: gloo's threads included), wall time per round trip, and each format's CPU and
wall time over the current one's. The formats alternate ``--repeat`` times so a change in the
host's load hits all alike.

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
HEADER = 8  # the earlier formats' header: start, ndim, up to 6 dims
FORMATS = ("as is", "header copy", "two sends")


def _two_sends(t: torch.Tensor, dst: int) -> None:
    """The format until 2026-11-27: an int64 header (start, ndim, dims), then the payload."""
    h = torch.zeros(HEADER, dtype=torch.int64)
    h[1] = t.dim()
    h[2:2 + t.dim()] = torch.tensor(t.shape)
    works = [dist.isend(h, dst, tag=TAG), dist.isend(t.contiguous(), dst, tag=TAG)]
    for w in works:
        w.wait()


def _two_recvs(src: int, shape: tuple[int, ...]) -> torch.Tensor:
    h = torch.empty(HEADER, dtype=torch.int64)
    t = torch.empty(shape)
    works = [dist.irecv(h, src, tag=TAG), dist.irecv(t, src, tag=TAG)]
    for w in works:
        w.wait()
    return t


def _header_send(t: torch.Tensor, dst: int) -> None:
    """The format until 2026-11-28: one fresh float32 buffer, header then a copy of the payload."""
    buf = torch.empty(HEADER + t.numel(), dtype=torch.float32)
    head = [0.0, float(t.dim()), *map(float, t.shape)]
    buf[:HEADER] = torch.tensor(head + [0.0] * (HEADER - len(head)))
    buf[HEADER:].view(t.shape).copy_(t)
    dist.isend(buf, dst, tag=TAG).wait()


def _header_recv(src: int, shape: tuple[int, ...]) -> torch.Tensor:
    buf = torch.empty(HEADER + math.prod(shape), dtype=torch.float32)
    dist.recv(buf, src, tag=TAG)
    head = buf[:HEADER].tolist()
    assert [int(d) for d in head[2:2 + int(head[1])]] == list(shape)
    return buf[HEADER:].view(shape)


def _side(rank: int, port: int, fmt: str, shape: tuple[int, ...], rounds: int, out) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    t = torch.randn(shape)
    peer = 1 - rank
    bufs = wire.Buffers()

    def current_recv() -> torch.Tensor:  # as the runtime receives: a kept buffer, the sentinel checked
        box = wire.Inbox(peer, TAG, [(0, shape[0])], tuple(shape[1:]), bufs)
        got = box.take(0, shape[0])
        box.close()
        return got

    send, recv = {"as is": (lambda x: wire.isend(x, peer, TAG)[0].wait(), current_recv),
                  "header copy": (lambda x: _header_send(x, peer), lambda: _header_recv(peer, shape)),
                  "two sends": (lambda x: _two_sends(x, peer), lambda: _two_recvs(peer, shape))}[fmt]

    def once() -> None:
        if rank == 0:
            send(t)
            recv()
        else:
            send(recv())

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
        res: dict[str, list] = {f: [] for f in FORMATS}
        for _ in range(a.repeat):
            for fmt in FORMATS[::-1]:
                res[fmt].append(_measure(fmt, shape, a.rounds))
        med = {f: [statistics.median(r[i] for r in v) * 1e6 for i in range(3)] for f, v in res.items()}
        kib = math.prod(shape) * 4 / 1024
        now = med["as is"]
        for f in FORMATS:
            c0, c1, w = med[f]
            ratio = "" if f == "as is" else f"  / as is: CPU {(c0 + c1) / (now[0] + now[1]):.2f}, wall {w / now[2]:.2f}"
            print(f"{'x'.join(map(str, shape)):>12} {kib:6.0f} {f:>15} {c0:10.0f} {c1:10.0f} {w:8.0f}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
