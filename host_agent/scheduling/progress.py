"""Progress of the rank processes of a run, and a watch that turns a rank that has stopped
making progress into an error.

A dead rank is reported by its exit status at once; a *hung* one (stopped by a signal or a
debugger, deadlocked, waiting for a peer that is) used to keep a run silent until the process
group's time-out, 300 s or more. Each rank now counts its units of work (iterations) in a
small file, ``<dir>/rank<R>.beat``; the parent reads the counts while it waits and raises
:class:`Stalled` when none of the ranks it waits for has counted for the stall limit and none is
computing (using CPU: the kernel's smallest quota is 0.1 CPU), naming every
rank's count, its process state and the CPU it used meanwhile (a stopped rank holds up every
rank that waits for it; a rank that used its whole CPU share is busy in its own code).

Rank side: :class:`Heartbeat`. Parent side: :class:`StallWatch`, :func:`process_state`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence

from .rank_processes import RankFailure

DEFAULT_STALL_S = 60.0  # the stall limit's floor unless a command line says otherwise
STARTUP_S = 120.0  # ... and its floor until a rank has started counting (imports, joining the world)
GAP_FACTOR = 10.0  # ... and never below this many times the longest gap between two counts seen
BUSY_CPU = 0.05  # a rank that used this share of a CPU since its last count is computing, not hung
_WIDTH = 20  # the count is written as this many characters at offset 0 (one pwrite, no truncation)

STATES = {"R": "running", "S": "sleeping", "D": "in uninterruptible I/O", "T": "stopped (a signal)",
          "t": "stopped (a debugger)", "Z": "exited, not yet reaped", "X": "dead", "I": "idle"}


def add_stall_option(p, who: str) -> None:
    """The command-line option ``--stall-timeout S`` (``args.stall_timeout``) of every command
    that runs rank processes; ``who`` names a rank ("stage", "process", "worker")."""
    p.add_argument("--stall-timeout", type=float, default=DEFAULT_STALL_S, metavar="S",
                   help=f"fail when no {who} finishes an iteration for S seconds or {GAP_FACTOR:g}x the longest gap "
                   f"so far, whichever is longer, naming each {who}'s state (default {DEFAULT_STALL_S:g}; 0 = no "
                   "limit but the time-out)")


def check_stall_timeout(value: float) -> None:
    if not value >= 0:
        raise ValueError(f"--stall-timeout must be >= 0 seconds (0: no limit), got {value}")


def beat_path(beat_dir: str, rank: int) -> str:
    return os.path.join(beat_dir, f"rank{rank}.beat")


class Heartbeat:
    """A rank's count of finished units of work, in ``beat_path(beat_dir, rank)``."""

    def __init__(self, beat_dir: str, rank: int):
        self.count = 0
        self._fd = os.open(beat_path(beat_dir, rank), os.O_WRONLY | os.O_CREAT, 0o644)
        self._write()

    def beat(self) -> None:
        self.count += 1
        self._write()

    def _write(self) -> None:
        os.pwrite(self._fd, str(self.count).rjust(_WIDTH).encode(), 0)

    def close(self) -> None:
        os.close(self._fd)


def read_count(beat_dir: str, rank: int) -> int | None:
    """The rank's count (None: no file yet, or a write caught half-way)."""
    try:
        with open(beat_path(beat_dir, rank), "rb") as f:
            return int(f.read(_WIDTH))
    except (OSError, ValueError):
        return None


def process_state(pid: int) -> tuple[str, float] | None:
    """``(state letter, CPU seconds used)`` of a process from ``/proc`` (None: gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[0], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Stalled(RankFailure):
    """A rank the parent waits for has not made progress for the stall limit."""


class StallWatch:
    """The parent's view of the ranks' counts. ``limit_s`` (the floor; None or 0: never
    stalls) is raised to :data:`GAP_FACTOR` times the longest gap between two counts of one
    rank seen so far, so a run whose iterations legitimately take long is not cut short."""

    def __init__(self, beat_dir: str, pids: Sequence[int], limit_s: float | None = DEFAULT_STALL_S,
                 what: str = "rank", unit: str = "iterations", clock: Callable[[], float] = time.monotonic,
                 names: Sequence[str] | None = None):
        """``what`` names a rank in the messages (``"stage 1"``); ``names``, when given, is
        every rank's own name instead (a run whose ranks differ: CGP's workers and server)."""
        self.beat_dir, self.pids, self.what, self.unit, self.clock = beat_dir, list(pids), what, unit, clock
        self.own_names = bool(names)
        self.names = list(names) if names else [f"{what} {r}" for r in range(len(self.pids))]
        self.floor = limit_s or 0.0
        self.longest_gap = 0.0
        self.count: list[int | None] = [None] * len(self.pids)
        self.reset()

    @property
    def limit_s(self) -> float:
        """The stall limit now: the floor, or :data:`GAP_FACTOR` x the longest gap seen, or
        while no rank has started counting (a rank creates its count once it has joined the
        run: before, it imports torch and meets the others, seconds on a loaded host)
        :data:`STARTUP_S`, whichever is longest."""
        started = any(c is not None for c in self.count)
        return max(self.floor, GAP_FACTOR * self.longest_gap, 0.0 if started else STARTUP_S)

    def reset(self) -> None:
        """Every rank's clock starts now (a new command after an idle wait, say): the time
        between two commands is not a gap."""
        now = self.clock()
        self.since = [now] * len(self.pids)
        self.cpu_at = [self._cpu(r) for r in range(len(self.pids))]

    def _cpu(self, r: int) -> float:
        st = process_state(self.pids[r])
        return st[1] if st else 0.0

    def poll(self) -> None:
        """Read the counts; a rank whose count moved starts a new gap."""
        now = self.clock()
        for r in range(len(self.pids)):
            c = read_count(self.beat_dir, r)
            if c is not None and c != self.count[r]:
                if self.count[r] is not None:
                    self.longest_gap = max(self.longest_gap, now - self.since[r])
                self.count[r] = c
                self.since[r] = now
                self.cpu_at[r] = self._cpu(r)

    def check(self, waiting: Iterable[int] | None = None) -> None:
        """:meth:`poll`, then :class:`Stalled` if none of the ranks of ``waiting`` (default:
        every rank still running) has counted for the limit. One rank waiting for another
        (a pipeline stage for its neighbour, a barrier, a staleness bound) is not a stall as
        long as somebody works; a hung rank soon holds up every other one."""
        if not self.floor:
            return
        self.poll()
        now, limit = self.clock(), self.limit_s
        ranks = [r for r in (range(len(self.pids)) if waiting is None else waiting) if self._alive(r)]
        if ranks and now - max(self.since[r] for r in ranks) > limit and not self._computing(ranks, now):
            raise Stalled(self.describe(ranks, now))

    def _computing(self, ranks: list[int], now: float) -> bool:
        """Whether a rank used at least :data:`BUSY_CPU` of a CPU since its last count: a long
        iteration (a large model under a 0.1-CPU quota) is not a hang. A stopped or blocked
        rank uses none; one spinning in its own code is not caught here (its peers then fail
        at the process group's time-out)."""
        return any(self._cpu(r) - self.cpu_at[r] >= BUSY_CPU * (now - self.since[r]) for r in ranks)

    def _alive(self, r: int) -> bool:
        st = process_state(self.pids[r])
        return st is not None and st[0] not in "ZX"

    def _limit_source(self) -> str:
        """Where :attr:`limit_s` comes from, for the message. Until 2026-11-28 a rank stopped
        while the run started up (``--stall-timeout 5``) failed after 120 s "(stall limit 120 s:
        --stall-timeout, or 10x the longest gap ...)", naming two sources that were 5 s and none."""
        limit = self.limit_s
        gap = GAP_FACTOR * self.longest_gap
        if not any(c is not None for c in self.count) and limit == STARTUP_S > max(self.floor, gap):
            return (f"no rank had started counting {self.unit}, and start-up (imports, joining the run) "
                    f"has {STARTUP_S:g} s whatever --stall-timeout says")
        if self.longest_gap and limit == gap > self.floor:
            return (f"{GAP_FACTOR:g}x the longest gap between two {self.unit} seen ({self.longest_gap:.1f} s), "
                    f"above --stall-timeout {self.floor:g}")
        return "--stall-timeout"

    def _list(self, ranks: list[int]) -> str:
        """``"stage 0, 1"``, or with names of their own ``"worker 0, the server (rank 4)"``."""
        if self.own_names:
            return ", ".join(self.names[r] for r in ranks)
        return f"{self.what} " + ", ".join(map(str, ranks))

    def describe(self, stalled: list[int], now: float) -> str:
        who = self._list(stalled)
        lines = [f"no progress from {who} for {now - max(self.since[r] for r in stalled):.0f} s "
                 f"(stall limit {self.limit_s:.0f} s: {self._limit_source()}); the ranks:"]
        stopped = []
        for r in range(len(self.pids)):
            st = process_state(self.pids[r])
            done = "none" if not self.count[r] else str(self.count[r])
            if st is None:
                lines.append(f"  {self.names[r]}: gone; {self.unit} done {done}")
                continue
            state, cpu = st
            if state in "Tt":
                stopped.append(r)
            lines.append(f"  {self.names[r]} (pid {self.pids[r]}): {STATES.get(state, state)}, {self.unit} done "
                         f"{done}, {cpu - self.cpu_at[r]:.1f} s CPU in the last {now - self.since[r]:.0f} s")
        if stopped:
            lines.append(f"  a stopped process ({self._list(stopped)}) holds up every "
                         f"process that waits for it")
        return "\n".join(lines)
