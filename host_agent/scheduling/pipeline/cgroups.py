"""cgroup v1 CPU quotas for stage processes: a "slow device" that really computes slowly.

``CpuQuotas(prefix)`` creates ``/sys/fs/cgroup/cpu/<prefix>-stage<N>`` with
``cpu.cfs_quota_us = quota * period`` (quota in CPUs, e.g. 0.25 = a quarter of one core) and
removes exactly the groups it created (also on error: use it as a context manager). The
period defaults to 10 ms rather than the kernel's 100 ms so a throttled process runs in short
slices instead of 100 ms bursts, which keeps per-microbatch timings smooth. The groups also get
a high ``cpu.shares`` (default 8192, 8x a plain process) so that, on a busy host, a stage
still gets its quota: the quota is then the binding limit and the "device" has a known speed.
Keep the quotas' sum well below the core count so other work on the host keeps some CPU.
"""

from __future__ import annotations

import math
import os
import re
import time

from ..interrupts import held_interrupts

CPU_ROOT = "/sys/fs/cgroup/cpu"


def unavailable_reason() -> str | None:
    """None when CPU quotas can be set here; else why not (for skips and errors)."""
    if not os.path.isfile(os.path.join(CPU_ROOT, "cpu.cfs_quota_us")):
        return f"cgroup v1 cpu controller not mounted at {CPU_ROOT}"
    if os.geteuid() != 0:
        return "cgroup CPU quotas need root"
    return None


def join(path: str) -> None:
    """Move the calling process into the cgroup directory ``path``."""
    with open(os.path.join(path, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


class QuotaReader:
    """The CPUs the cgroup directory ``path`` allows now (None: no limit), read as often as
    every training step: its two files stay open and a read is two ``pread`` calls (2 µs of
    CPU here, against 30 µs for opening and reading them each time)."""

    def __init__(self, path: str):
        self.fds: list[int] = []
        for name in ("cpu.cfs_quota_us", "cpu.cfs_period_us"):
            self.fds.append(os.open(os.path.join(path, name), os.O_RDONLY))

    def __call__(self) -> float | None:
        q = int(os.pread(self.fds[0], 32, 0))
        return None if q < 0 else q / int(os.pread(self.fds[1], 32, 0))

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def read_quota(path: str) -> float | None:
    """The CPUs the cgroup directory ``path`` allows now (None: no limit), read once."""
    r = QuotaReader(path)
    try:
        return r()
    finally:
        r.close()


def quota_paced(wall: float, cpu: float, quota: float | None) -> float:
    """A step's time at the pace a CPU quota sustains: the longer of its wall time and its CPU
    seconds over the quota (``quota`` None: the wall time)."""
    return max(wall, cpu / quota) if quota else wall


# the groups of this project's commands: saatp-<pid>-..., saatp-cgp-<pid>-..., saatp-groups-<pid>-...
_OURS = re.compile(r"^saatp-(?:[a-z]+-)?(\d+)-")
STALE_AFTER_S = 60.0  # a group is joined within seconds of its creation


def remove_stale(root: str | None = None, older_than_s: float = STALE_AFTER_S) -> list[str]:
    """Remove the empty groups of this project's commands whose process (the pid in the name)
    no longer exists and which are older than ``older_than_s``; returns their names. A command
    killed by SIGKILL cannot remove its groups: until 2026-11-28 each such run left them in
    ``/sys/fs/cgroup/cpu`` for good (``CpuQuotas.create`` now calls this once per process)."""
    gone, root = [], root or CPU_ROOT
    try:
        names = os.listdir(root)
    except OSError:
        return gone
    now = time.time()
    for name in names:
        m = _OURS.match(name)
        path = os.path.join(root, name)
        if not m or not os.path.isdir(path):
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # its command is alive
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, ValueError):
            continue
        try:
            if now - os.stat(path).st_mtime < older_than_s:
                continue
            os.rmdir(path)  # EBUSY while a process is in it: left alone
            gone.append(name)
        except OSError:
            continue
    return gone


_swept = False


class CpuQuotas:
    def __init__(self, prefix: str | None = None, period_us: int = 10_000, shares: int = 8192):
        self.prefix = prefix or f"saatp-{os.getpid()}"
        self.period_us = int(period_us)
        self.shares = int(shares)
        self.created: list[str] = []

    def create(self, name: str, quota: float | None) -> str:
        """A cgroup ``<prefix>-<name>`` limited to ``quota`` CPUs (None: no limit, only the
        high ``cpu.shares``); returns its path."""
        if quota is not None and quota <= 0:
            raise ValueError(f"CPU quota must be > 0, got {quota}")
        if quota is not None:
            check_settable([quota], self.period_us, what="a CPU quota of")
        why = unavailable_reason()
        if why:
            raise RuntimeError(why)
        global _swept
        if not _swept:  # the groups of commands killed by SIGKILL
            _swept = True
            remove_stale()
        path = os.path.join(CPU_ROOT, f"{self.prefix}-{name}")
        os.mkdir(path)
        self.created.append(path)
        with open(os.path.join(path, "cpu.cfs_period_us"), "w") as f:
            f.write(str(self.period_us))
        with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
            f.write("-1" if quota is None else str(quota_us(quota, self.period_us)))
        with open(os.path.join(path, "cpu.shares"), "w") as f:
            f.write(str(self.shares))
        return path

    def remove(self) -> list[str]:
        """Remove the groups this object created (their processes must have exited); returns
        the paths that could not be removed. Ctrl-C is held meanwhile (a second one left the
        groups behind: :mod:`..interrupts`)."""
        left = []
        with held_interrupts():
            for path in reversed(self.created):
                for _ in range(50):
                    try:
                        os.rmdir(path)
                        break
                    except FileNotFoundError:
                        break
                    except OSError:  # EBUSY while an exiting process is still listed
                        time.sleep(0.05)
                else:
                    left.append(path)
            self.created = left
        return left

    def __enter__(self) -> "CpuQuotas":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


PERIOD_US = 10_000  # CpuQuotas' default period
KERNEL_MIN_QUOTA_US = 1000  # the least cpu.cfs_quota_us the kernel takes (1 ms)


def quota_us(quota: float, period_us: int = PERIOD_US) -> int:
    """``cpu.cfs_quota_us`` for ``quota`` CPUs: at least the kernel's least (1 ms) and at most
    the host's cores (a quota beyond them limits nothing, and the kernel refuses one above
    about 2**44 us: until 2026-11-28 a trace's quota of 1e10 CPUs, or a factor of 1e-10, failed
    the run in its slot with "OSError: [Errno 22] Invalid argument")."""
    most = (os.cpu_count() or 1) * int(period_us)
    return min(max(KERNEL_MIN_QUOTA_US, int(round(float(quota) * period_us))), most)


def min_quota(period_us: int = PERIOD_US) -> float:
    """The least CPU quota a cgroup takes at ``period_us`` (0.1 CPU at 10 ms)."""
    return KERNEL_MIN_QUOTA_US / period_us


def check_settable(quotas, period_us: int = PERIOD_US, what: str | None = None) -> None:
    """ValueError for a quota below :func:`min_quota`: the kernel refuses a ``cfs_quota_us``
    below 1 ms, and until 2026-11-28 such a quota was raised to it without a word (a stage
    given 0.05 CPU ran at 0.1 while the cost model predicted it at 0.05: +221 %; ``--quota
    auto`` on 13 stages or more of this 2-core host gave quotas below 0.1 too)."""
    least = min_quota(period_us)
    for s, q in enumerate(quotas):
        if q is not None and int(round(q * period_us)) < KERNEL_MIN_QUOTA_US:
            raise ValueError(f"{what or f'stage {s} has a CPU quota of'} {q:g} CPU, below {least:g} CPU, the least a "
                             f"cgroup takes (the kernel's smallest cfs_quota_us is {KERNEL_MIN_QUOTA_US} us per "
                             f"{period_us / 1000:g} ms period): --quota and --slow take {least:g} or more")


def default_quota(stages: int) -> float:
    """CPUs per stage when 60% of the host's cores are shared out evenly (at most one each, at
    least :func:`min_quota`). ValueError for no stages (``--stages 0`` failed with a
    ZeroDivisionError's traceback here until 2026-11-28, before :func:`stage_quotas` said so)."""
    if stages < 1:
        raise ValueError("--stages must be >= 1")
    return max(min_quota(), round(min(1.0, 0.6 * (os.cpu_count() or 1) / stages), 3))


def oversubscribed(quotas: list[float | None], cores: int | None = None,
                   how: str = "--quota and --slow keep") -> str | None:
    """A note when the stages may use more CPUs together than the host has (a stage without a
    quota, or above one CPU, uses one core: it computes on one thread), else None. When they
    compute at once they share the cores, which the cost model does not model: it predicts each
    stage at its quota (15 stages without quotas on 2 cores ran 80 % slower than predicted;
    nothing said why until 2026-11-28). ``how``: the options that set the quotas, as the note
    names them."""
    cores = cores or os.cpu_count() or 1
    total = sum(1.0 if q is None else min(float(q), 1.0) for q in quotas)
    if total <= cores + 1e-9:
        return None
    return (f"note: the {len(quotas)} stages may use {total:g} CPUs together (a stage without a quota, or above one "
            f"CPU, one core) on a host of {cores} cores: when they compute at once they share the cores, which the cost "
            f"model does not model, so its predictions are too fast; {how} the sum within the cores")


def stage_quotas(stages: int, quota: float | None, slow: list[str]) -> list[float | None]:
    """Per-stage CPU quotas: ``quota`` for every stage (None: no cgroup), then each
    ``STAGE:QUOTA`` of ``slow`` overrides one stage. ValueError on bad items: a quota that is
    not a finite number > 0 (``nan`` passed the check and failed later as "cuts [0, 0] do not
    split ...", ``inf`` with an OverflowError's traceback, until 2026-11-28), and a stage given
    twice (the last one won without a word)."""
    if stages < 1:
        raise ValueError("--stages must be >= 1")
    out: list[float | None] = [quota] * stages
    seen: dict[int, str] = {}
    for item in slow or []:
        try:
            s, q = item.split(":")
            s, q = int(s), float(q)
        except ValueError:
            raise ValueError(f"--slow {item!r}: expected STAGE:QUOTA, e.g. 2:0.25") from None
        if not 0 <= s < stages:
            raise ValueError(f"--slow {item!r}: stage must be in 0..{stages - 1}")
        if not (math.isfinite(q) and q > 0):
            raise ValueError(f"--slow {item!r}: quota must be a number of CPUs > 0")
        if s in seen:
            raise ValueError(f"--slow {item!r}: stage {s} is already given a quota (--slow {seen[s]})")
        seen[s] = item
        out[s] = q
    return out
