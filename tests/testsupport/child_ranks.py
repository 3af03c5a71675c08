"""Find this test process's rank processes (``python -m MODULE CONFIG.json RANK``) by their
command line, to stop or signal one of them from a test."""

import glob
import time


def children() -> list[int]:
    """The pids of this process's children (every thread's)."""
    pids = []
    for path in glob.glob("/proc/self/task/*/children"):
        try:
            with open(path) as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode() for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def rank_pid(module: str, rank: int, timeout_s: float = 120.0) -> int:
    """The pid of our child ``python -m module CONFIG.json rank``; waits for it to start."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in children():
            args = cmdline(pid)
            if args[1:3] == ["-m", module] and args[-1] == str(rank):
                return pid
        time.sleep(0.05)
    raise AssertionError(f"no child process python -m {module} ... {rank} within {timeout_s} s")
