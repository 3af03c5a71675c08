#!/usr/bin/env python3
"""DDP training of a small model over the ``saatp`` torch.distributed backend.

Synthetic MNIST-like data (28x28 images of 10 smooth class templates plus noise) is generated
on the fly; nothing is downloaded. Optionally one rank straggles (sleeps before its backward
pass). Rank 0 prints every iteration's time and loss, then the loss curve and a summary.

    # torchrun
    torchrun --nproc-per-node 2 scripts/ddp_example.py --steps 40 --straggler 1 --delay-ms 80
    # torch.multiprocessing (spawn), no torchrun
    python scripts/ddp_example.py --spawn 2 --steps 40 --straggler 1 --delay-ms 80
    # the same with gloo, for comparison
    python scripts/ddp_example.py --spawn 2 --backend gloo

The allreduce engine is chosen by --engine / SAATP_ENGINE (auto: the SA-ATP switch engine when
the saatp-switch command is installed, else the host ring); rank 0 prints which one is used.
"""
from __future__ import annotations

import argparse
import datetime
import os
import socket
import sys
import time

try:
    import host_agent  # noqa: F401  registers the "saatp" backend (the entry point does too)
except ImportError:  # running from a checkout that is not installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import host_agent  # noqa: F401


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spawn", type=int, default=0, metavar="N",
                   help="start N ranks with torch.multiprocessing instead of running under torchrun")
    p.add_argument("--backend", default="saatp", choices=["saatp", "gloo"])
    p.add_argument("--engine", default=None, choices=["auto", "ring", "switch"],
                   help="saatp allreduce engine (default: SAATP_ENGINE or auto)")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=32, help="per-rank batch size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--straggler", type=int, default=-1, metavar="RANK", help="rank that straggles (-1: none)")
    p.add_argument("--delay-ms", type=float, default=100.0, help="straggler delay per straggling step")
    p.add_argument("--straggle-every", type=int, default=1, metavar="K", help="straggle on every K-th step")
    p.add_argument("--timeout", type=float, default=120.0, help="process group timeout, seconds")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.steps <= 0 or args.batch <= 0:
        p.error("--steps and --batch must be positive")
    return args


# ------------------------------------------------------------------------------------------------
def templates(seed: int):
    """10 smooth 28x28 class templates (random 7x7 patterns, upsampled)."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(10_000 + seed)
    low = torch.rand(10, 1, 7, 7, generator=g)
    return F.interpolate(low, size=(28, 28), mode="bilinear", align_corners=False).reshape(10, 784)


def batch(rank: int, step: int, n: int, tmpl, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + rank)
    y = torch.randint(0, 10, (n,), generator=g)
    x = tmpl[y] + 0.35 * torch.randn(n, 784, generator=g)
    return x, y


def train(rank: int, world: int, args) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    opts = None
    if args.backend == "saatp":
        from host_agent.torch_backend import SAATPOptions

        opts = SAATPOptions(engine=args.engine)
    dist.init_process_group(args.backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout), pg_options=opts)
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(784, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    tmpl = templates(args.seed)
    if rank == 0:
        engine = getattr(dist.group.WORLD, "engine", None)
        print(f"[ddp] backend={args.backend}"
              f"{' engine=' + engine.describe() if engine is not None else ''} world={world} "
              f"steps={args.steps} batch/rank={args.batch} straggler="
              f"{'none' if args.straggler < 0 else f'rank {args.straggler} +{args.delay_ms:.0f} ms'}", flush=True)
        print(f"{'step':>5} {'loss':>8} {'iter ms':>9} {'straggle':>9}", flush=True)
    losses, times = [], []
    for step in range(args.steps):
        x, y = batch(rank, step, args.batch, tmpl, args.seed)
        t0 = time.perf_counter()
        straggling = args.straggler >= 0 and step % args.straggle_every == 0
        if straggling and rank == args.straggler:
            time.sleep(args.delay_ms / 1000.0)
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        stats = torch.tensor([float(loss.detach()), dt])
        dist.all_reduce(stats[:1], op=dist.ReduceOp.SUM)
        dist.all_reduce(stats[1:], op=dist.ReduceOp.MAX)
        losses.append(float(stats[0]) / world)
        times.append(float(stats[1]))
        if rank == 0:
            print(f"{step:>5} {losses[-1]:>8.4f} {times[-1] * 1e3:>9.1f} {'yes' if straggling else '':>9}", flush=True)
    # held-out accuracy (same on every rank: the replicas are identical)
    xt, yt = batch(10_000, 0, 512, tmpl, args.seed + 1)
    with torch.no_grad():
        acc = float((model(xt).argmax(1) == yt).float().mean())
    if rank == 0:
        print_curve(losses)
        steady = times[1:] or times
        print(f"[ddp] mean iteration {1e3 * sum(steady) / len(steady):.1f} ms (excluding step 0), "
              f"first loss {losses[0]:.4f}, last loss {losses[-1]:.4f}, held-out accuracy {acc:.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def print_curve(losses, width: int = 60, height: int = 10) -> None:
    """Loss curve as text: one column per step (resampled to ``width``)."""
    n = len(losses)
    m = min(width, n)
    cols = [losses[min(n - 1, int(i * n / m))] for i in range(m)]
    lo, hi = min(cols), max(cols)
    span = (hi - lo) or 1.0
    print("[ddp] loss curve")
    rows = [round((v - lo) / span * height) for v in cols]
    for row in range(height, -1, -1):
        level = lo + span * row / height
        line = "".join("*" if r == row else " " for r in rows)
        print(f"{level:8.3f} |{line}")
    print(" " * 9 + "+" + "-" * len(cols) + f"> step (0..{n - 1})")


# ------------------------------------------------------------------------------------------------
def _spawned(rank, world, port, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    train(rank, world, args)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.spawn:
        import torch.multiprocessing as tmp

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ctx = tmp.start_processes(_spawned, args=(args.spawn, port, args), nprocs=args.spawn, join=False,
                                  start_method="spawn")
        deadline = time.monotonic() + args.timeout + 60 + args.steps * (1 + args.delay_ms / 1000)
        try:
            while not ctx.join(timeout=1):
                if time.monotonic() > deadline:
                    print("[ddp] timed out; stopping the ranks", file=sys.stderr)
                    for p in ctx.processes:
                        if p.is_alive():
                            p.terminate()
                    return 1
        except Exception as e:  # a rank failed: torch reports which one and why
            print(f"[ddp] a rank failed: {e}", file=sys.stderr)
            return 1
        return 0
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        print("run under torchrun (torchrun --nproc-per-node 2 scripts/ddp_example.py) or pass --spawn N",
              file=sys.stderr)
        return 2
    train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
