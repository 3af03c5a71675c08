"""Activation transfer time between two stage processes: ping-pong of messages in the
runtime's wire format (the tensor itself, float32) over torch.distributed; one-way
time = round trip / 2.

``measure_link(sizes_bytes)`` starts two processes (``python -m ...profile.link``) and returns
``[(bytes, seconds), ...]``. With ``shares`` (the default when cgroups are available) each
process runs in its own cgroup with the stages' high ``cpu.shares`` and no quota, as a stage
that has budget left: on a busy host a process with default shares waits for a CPU after
every wake-up, which once made the measured latency 5 ms instead of ~0.2 ms."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Sequence

import torch
import torch.distributed as dist

from ..interrupts import held_interrupts
from ..pipeline import cgroups
from ..pipeline.wire import isend, recv
from ..progress import DEFAULT_STALL_S, STARTUP_S, STATES, process_state
from ..rank_processes import free_port, how_ended

TAG = 7


def _pingpong(rank: int, sizes: Sequence[int], min_s: float) -> list[tuple[int, float]]:
    out = []
    for nbytes in sizes:
        t = torch.randn(max(1, nbytes // 4 // 8), 8)  # [samples, 8] floats
        def once():
            if rank == 0:
                isend(t, 1, TAG)[0].wait()
                recv(1, TAG, tuple(t.shape))
            else:
                got = recv(0, TAG, tuple(t.shape))
                isend(got, 0, TAG)[0].wait()

        once()
        t0 = time.perf_counter()
        once()
        pilot = time.perf_counter() - t0
        n = torch.tensor([max(3, min(2000, int(min_s / max(pilot, 1e-6))))])
        dist.broadcast(n, 0)  # both sides run the same number of round trips
        dist.barrier()
        rounds = int(n.item())
        t0 = time.perf_counter()
        for _ in range(rounds):
            once()
        out.append((t.numel() * 4, (time.perf_counter() - t0) / rounds / 2))
    return out


def measure_link(sizes_bytes: Sequence[int], backend: str = "gloo", min_s: float = 0.05,
                 timeout_s: float = 300.0, shares: bool | None = None,
                 stall_s: float | None = DEFAULT_STALL_S) -> list[tuple[int, float]]:
    """``[(bytes, one-way seconds), ...]``. RuntimeError (with the ranks' stderr) as soon as one
    of the two processes fails, and (naming each one's state) when they have not finished
    within ``max(stall_s, STARTUP_S)`` (None or 0: ``timeout_s``): a measurement takes seconds,
    and a rank stopped or killed mid-way held the command for the process group's time-out
    (120 s) plus ``timeout_s`` (300 s), then failed with ``subprocess.TimeoutExpired``."""
    limit = max(stall_s, STARTUP_S) if stall_s else timeout_s
    why = f"--stall-timeout, at least {STARTUP_S:g} s" if stall_s else "the time-out"
    with tempfile.TemporaryDirectory(prefix="saatp-link-") as d:  # the errors come through stderr
        return _measure_in(d, sizes_bytes, backend, min_s, limit, shares, why)


def _wait(procs: list[subprocess.Popen], limit_s: float, why: str) -> None:
    """Until both ranks have exited, or one has failed (the other is then killed by the caller)."""
    deadline = time.monotonic() + limit_s
    while True:
        codes = [p.poll() for p in procs]
        if any(codes) or all(c is not None for c in codes):
            return
        if time.monotonic() > deadline:
            states = []
            for r, p in enumerate(procs):
                st = process_state(p.pid)
                states.append(f"rank {r} (pid {p.pid}): " + ("exited" if st is None else STATES.get(st[0], st[0])))
            raise RuntimeError(f"link measurement: the two processes did not finish within {limit_s:g} s "
                               f"({why}); " + ", ".join(states))
        time.sleep(0.05)


def _measure_in(d: str, sizes_bytes, backend: str, min_s: float, timeout_s: float, shares,
                why: str = "the time-out") -> list[tuple[int, float]]:
    if shares is None:
        shares = cgroups.unavailable_reason() is None
    groups = cgroups.CpuQuotas(prefix=f"saatp-{os.getpid()}-link")
    procs, ended = [], []
    try:
        paths = [groups.create(f"rank{r}", None) if shares else None for r in range(2)]
        cfg = dict(sizes=[int(s) for s in sizes_bytes], backend=backend, min_s=min_s, port=free_port(), out=d,
                   cgroups=paths)
        path = os.path.join(d, "config.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        for r in range(2):
            with open(os.path.join(d, f"rank{r}.err"), "w") as err:  # a file: a pipe nobody reads can fill
                procs.append(subprocess.Popen([sys.executable, "-m", "host_agent.scheduling.profile.link", path,
                                               str(r)], stdout=subprocess.DEVNULL, stderr=err))
        _wait(procs, timeout_s, why)
    finally:
        with held_interrupts():  # a second Ctrl-C must not leave the processes or their groups
            ended = [p.poll() is not None for p in procs]  # before the survivor is killed below
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            groups.remove()
    if any(p.returncode for p in procs):
        errs = []
        for r, p in enumerate(procs):
            # the rank this function killed when its peer failed: until 2026-11-28 both ranks read
            # "killed by SIGKILL" when one was, not saying which had ended the measurement
            how = how_ended(p.returncode) if ended[r] else f"killed by the profiler after rank {1 - r} ended"
            with open(os.path.join(d, f"rank{r}.err"), errors="replace") as f:
                errs.append(f"rank {r} ({how}):\n{f.read()[-2000:]}")
        raise RuntimeError("link measurement failed:\n" + "\n".join(errs))
    with open(os.path.join(d, "link.json")) as f:
        return [tuple(x) for x in json.load(f)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    with open(args[0]) as f:
        cfg = json.load(f)
    rank = int(args[1])
    if (cfg.get("cgroups") or [None, None])[rank]:
        cgroups.join(cfg["cgroups"][rank])
    torch.set_num_threads(1)
    dist.init_process_group(cfg["backend"], init_method=f"tcp://127.0.0.1:{cfg['port']}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=120))
    try:
        res = _pingpong(rank, cfg["sizes"], cfg["min_s"])
        if rank == 0:
            with open(os.path.join(cfg["out"], "link.json"), "w") as f:
                json.dump(res, f)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
