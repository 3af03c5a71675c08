"""Per-process CPU quotas that change over time from a trace (real, time-varying stragglers).

The quota of process ``r`` in slot ``t`` is ``base[r] / factor[t, r]`` CPUs, where the
factors come from a straggler trace (:class:`~..workloads.TraceReplay` CSV, ``slot,device,
factor``) or are generated from :mod:`~..workloads`'s seeded models. A trace may give the
quotas themselves instead (``slot,device,quota``, in CPUs): its factor is ``base / quota``.
Either trace loops; a (slot, device) it does not name keeps the base quota. ``SlotQuotas`` owns one
cgroup v1 per process (``/sys/fs/cgroup/cpu/<prefix>-rankR``, made with
:class:`~..pipeline.cgroups.CpuQuotas`), rewrites ``cpu.cfs_quota_us`` at every slot and
removes exactly the groups it created.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Sequence

import numpy as np

from ..pipeline.cgroups import CPU_ROOT, CpuQuotas, quota_us, unavailable_reason
from ..workloads import Combined, Persistent, TraceReplay, Transient, read_slot_csv

MIN_QUOTA = 0.1  # CPUs: the kernel needs >= 1 ms per 10 ms period


def generated_factors(slots: int, n: int, seed: int = 0, p: float = 0.12, factor=(2.0, 4.0), duration=(2, 5),
                      persistent: Sequence[tuple[int, float, int]] = ()) -> np.ndarray:
    """[slots, n] slowdown factors: transient episodes plus optional persistent stragglers."""
    models = [Transient(p, tuple(factor), tuple(duration), seed=seed)]
    models += [Persistent(d, f, s) for d, f, s in persistent]
    return Combined(tuple(models)).factors(slots, n)


def _row_lines(path: str, n_rows: int) -> list[int | None]:
    """The line number of each data row of a trace CSV, as :func:`~..workloads.read_slot_csv`
    reads it (blank and ``#`` lines skipped, the first other line the header)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        lines = [i + 1 for i, ln in enumerate(fh) if ln.strip() and not ln.lstrip().startswith("#")][1:]
    return lines if len(lines) == n_rows else [None] * n_rows


_warned: set = set()  # the rows already warned about (a CGP run reads its trace once per method)


def _warn_clamped(path: str, low: list[tuple]) -> None:
    """One line per trace row whose quota the kernel's minimum raises (the first 5, then a
    count), each row once per process."""
    fresh = [x for x in low if (os.path.abspath(path), x) not in _warned]
    _warned.update((os.path.abspath(path), x) for x in fresh)
    for ln, s, d, what in fresh[:5]:
        print(f"warning: {path}{'' if ln is None else f':{ln}'}: slot {s}, device {d}: {what} CPUs is "
              f"below {MIN_QUOTA} CPUs and runs at {MIN_QUOTA} (the kernel needs >= 1 ms per 10 ms period)",
              file=sys.stderr)
    if len(fresh) > 5:
        print(f"warning: {path}: {len(fresh) - 5} more rows below {MIN_QUOTA} CPUs run at {MIN_QUOTA}",
              file=sys.stderr)


def _warn_low_base(base: Sequence[float], path: str, noun: str) -> None:
    """One warning (once per trace and base quotas) when a base quota is below the kernel's
    minimum: a trace file keeps the base quota wherever it does not name the (slot, device), and
    there the quota runs at :data:`MIN_QUOTA`. Until 2026-11-28 ``--quotas 0.05,...`` with a
    ``--trace`` that did not name that device ran it at 0.1 CPUs without a word (a generated trace
    counted it in its warning)."""
    low = [r for r, q in enumerate(base) if float(q) < MIN_QUOTA - 1e-9]
    key = ("base", os.path.abspath(path), tuple(float(q) for q in base))
    if not low or key in _warned:
        return
    _warned.add(key)
    print(f"warning: --quotas: the base quotas of {noun} {low} ({', '.join(f'{float(base[r]):g}' for r in low)} "
          f"CPUs) are below {MIN_QUOTA} CPUs and run at {MIN_QUOTA} wherever {path} does not set the quota (the "
          f"kernel needs >= 1 ms per 10 ms period)", file=sys.stderr)


def _warn_unused(path: str, rows: list[tuple[int, int, float]], slots: int, noun: str) -> None:
    """One warning (once per trace and run length) when no row of the trace falls in the slots
    the run reaches: a trace of its header alone, or one whose slots start past the run's last
    (an excerpt of a longer trace keeping its slot numbers, ``5,0,2`` first in a 3-slot run). A
    trace loops only after its last slot, so every process then kept its base quota throughout;
    until 2026-11-28 such a run went ahead without a word, as if the trace had been applied."""
    if any(s < slots for s, _, _ in rows) or (("unused", os.path.abspath(path), slots) in _warned):
        return
    _warned.add(("unused", os.path.abspath(path), slots))
    why = ("names no (slot, device)" if not rows else
           f"sets no quota in the {slots} trace slot(s) the run reaches (0-{slots - 1}): its first slot is "
           f"{min(s for s, _, _ in rows)} (slots count from 0 at the run's start; the trace loops only after "
           f"its last slot, {max(s for s, _, _ in rows)})")
    print(f"warning: {path} {why}; every one of the {noun} keeps its base quota (--quotas) throughout",
          file=sys.stderr)


def trace_factors(path: str, slots: int, n: int, base: Sequence[float] | None = None,
                  noun: str = "processes", warn: bool = True) -> np.ndarray:
    """[slots, n] slowdown factors of a trace CSV: ``slot,device,factor`` as written, or
    ``slot,device,quota`` (CPUs; needs ``base``) as ``base[device] / quota``. ValueError with
    ``path:line`` for a device the run does not have (``n`` ``noun``) or a (slot, device) given
    twice; with ``base`` and ``warn``, a warning on stderr names each row whose quota is below
    the kernel's minimum (:data:`MIN_QUOTA`, where :func:`quota_matrix` clamps it)."""
    kind, rows = read_slot_csv(path, ("factor", "quota"))
    lines = _row_lines(path, len(rows))
    seen: dict[tuple[int, int], int | None] = {}
    for (s, d, _), ln in zip(rows, lines):
        at = path if ln is None else f"{path}:{ln}"
        if d >= n:
            have = "device 0" if n == 1 else f"devices 0-{n - 1}"
            # a held-out trace of another size: say what the run would need (until 2026-11-28 only the first row)
            top, low = max(r[1] for r in rows), min(r[1] for r in rows)
            # a trace that numbers the devices from 1 (never naming device 0) one past the run's last:
            # until 2026-11-28 the error asked for one more --quotas value and did not say why
            from_1 = ("; devices are numbered from 0 and the trace never names device 0: if it numbers them "
                      "from 1, subtract 1 from its devices") if low >= 1 and top == n else ""
            # (until 2026-11-28 "the run has 1 processes" and "so one of all the trace's devices needs 4 values")
            single = {"processes": "process", "workers": "worker"}.get(noun, noun)
            # the count option too (train groups --processes, train cgp --workers): until 2026-11-28 only
            # --quotas was named, though --processes N alone sets the number
            raise ValueError(f"{at}: the trace names device {d}, but the run has {n} {single if n == 1 else noun} "
                             f"({have}); it names devices up to {top}: a run of all of them needs --{noun} {top + 1} "
                             f"or {top + 1} --quotas values (one base quota per {single}){from_1}")
        if (s, d) in seen:
            also = "" if seen[(s, d)] is None else f" (also on line {seen[(s, d)]})"
            raise ValueError(f"{at}: slot {s}, device {d} is given twice{also}")
        seen[(s, d)] = ln
    if kind == "quota" and base is None:
        raise ValueError(f"{path}: a quota trace needs the base quotas")
    if base is not None and warn:
        # only the rows of slots the run reaches (a trace longer than the run is cut; until
        # 2026-11-28 a 5-slot run was warned of its trace's slot 5, which it never ran)
        if kind == "quota":
            low = [(ln, s, d, f"quota {x:g}") for (s, d, x), ln in zip(rows, lines)
                   if x < MIN_QUOTA - 1e-9 and s < slots]
        else:
            low = [(ln, s, d, f"base {float(base[d]):g} / factor {x:g} = {float(base[d]) / x:.3g}")
                   for (s, d, x), ln in zip(rows, lines) if float(base[d]) / x < MIN_QUOTA - 1e-9 and s < slots]
        _warn_clamped(path, low)
    if warn:
        _warn_unused(path, rows, slots, noun)
    if kind == "quota":
        rows = [(s, d, float(base[d]) / q) for s, d, q in rows]
    return TraceReplay(tuple(rows), loop=True).factors(slots, n)


def quota_matrix(base: Sequence[float], factors: np.ndarray) -> np.ndarray:
    base = np.asarray(base, dtype=float)
    if np.any(base <= 0):
        raise ValueError(f"base quotas must be > 0 CPUs, got {base.tolist()}")
    if factors.shape[1] != len(base):
        raise ValueError(f"trace has {factors.shape[1]} devices, {len(base)} processes")
    return np.maximum(base[None, :] / factors, MIN_QUOTA)


def _one(nouns: str) -> str:
    """The singular of a rank's plural noun: processes, workers, stages."""
    return nouns[:-2] if nouns.endswith("sses") else nouns[:-1] if nouns.endswith("s") else nouns


def quota_trace(base: Sequence[float], slots: int, trace: str | None = None, seed: int = 0,
                noun: str = "processes", warn: bool = True) -> np.ndarray:
    """[slots, n] CPUs per process per slot: ``base`` slowed down by the factors of the trace
    CSV ``trace`` (or set to its quotas) or, without one, generated from ``seed``; ``noun``
    names the ranks in errors. ``warn``: say which quotas the kernel's minimum raises (a run
    without cgroups applies none: until 2026-11-28 ``--no-cgroups`` still said "they run at 0.1")."""
    n = len(base)
    if trace:
        if warn:
            _warn_low_base(base, trace, noun)
        return quota_matrix(base, trace_factors(trace, slots, n, base, noun, warn))
    factors = generated_factors(slots, n, seed)
    low = np.asarray(base, dtype=float)[None, :] / factors < MIN_QUOTA - 1e-9
    if warn and low.any() and ("generated", seed, tuple(base), slots) not in _warned:
        _warned.add(("generated", seed, tuple(base), slots))
        ranks = np.flatnonzero(low.any(axis=0)).tolist()
        # in the rank's own noun (a CGP run's said "(slot, process)" of its workers until 2026-11-28)
        print(f"warning: the generated trace (seed {seed}) slows {int(low.sum())} of its {low.size} (slot, "
              f"{_one(noun)}) quotas below {MIN_QUOTA} CPUs ({noun} {ranks}); they "
              f"run at {MIN_QUOTA} "
              f"(the kernel needs >= 1 ms per 10 ms period)", file=sys.stderr)
    return quota_matrix(base, factors)


def warn_server_quota(ps_quota: float) -> None:
    """One warning (once per value) when CGP's server quota (``--ps-quota``) is below the
    kernel's minimum, where the server runs. Once: ``saatp train cgp`` makes a config per method
    (``dataclasses.replace``, which checks it again), and until 2026-11-28 ``--ps-quota 0.05
    --ablation`` printed the same warning nine times."""
    if ps_quota < MIN_QUOTA and ("ps_quota", float(ps_quota)) not in _warned:
        _warned.add(("ps_quota", float(ps_quota)))
        print(f"warning: --ps-quota {ps_quota:g} is below {MIN_QUOTA} CPUs: the server runs at {MIN_QUOTA} "
              f"(the kernel needs >= 1 ms per 10 ms period)", file=sys.stderr)


def warn_trace_not_applied(trace: str | None, cgroups: bool) -> None:
    """One warning (once per trace file) when a run is given ``--trace`` but no cgroups
    (``--no-cgroups``, ``cgroups=False``): no quota is applied, so the trace changes nothing but
    the groups planners' predictions. Until 2026-11-28 it was ignored without a word, and the
    groups run's JSON recorded its quotas in every slot as if they had been set."""
    key = ("not applied", os.path.abspath(trace or ""))
    if trace and not cgroups and key not in _warned:
        _warned.add(key)
        print(f"warning: --trace {trace} is not applied: without cgroups (--no-cgroups) no process has a CPU quota",
              file=sys.stderr)


def warn_above_one_cpu(quotas: np.ndarray, noun: str = "process", nouns: str = "processes",
                       planners: bool = True) -> None:
    """One warning (once per quota matrix) when a quota of the ``[slots, ranks]`` matrix is above
    1 CPU: a rank computes on one thread (``torch.set_num_threads(1)``), so it uses at most about
    1 CPU however high its quota, while the groups planners' predictions before the run (the
    budget, the static sets) take a rank's speed as proportional to its quota. Until 2026-11-28
    a quota trace of 4 CPUs on this 2-core host ran without a word, in ``saatp train cgp``
    (where a trace in per cent, 25 for a quarter of a CPU, then slowed no worker) until later
    that day. ``planners``: the run's planners take a speed as its quota (``train groups``);
    CGP's server regroups from measured times, and until 2026-11-28 its warning named "the
    groups planners' predictions" too."""
    high = np.asarray(quotas) > 1.0 + 1e-9
    key = ("above 1 CPU", np.asarray(quotas, dtype=float).tobytes(), noun)
    if high.any() and key not in _warned:
        _warned.add(key)
        ranks = np.flatnonzero(high.any(axis=0)).tolist()
        print(f"warning: {int(high.sum())} of the {high.size} (slot, {noun}) quotas are above 1 CPU ({nouns} "
              f"{ranks}, up to {float(np.max(quotas)):g}): a {noun} computes on one thread and uses at most about 1 "
              f"CPU, so it runs no faster above 1 CPU"
              + (" (and the groups planners' predictions, budget and static sets, take its speed as its quota)"
                 if planners else ""), file=sys.stderr)


def run_prefix(run: str) -> str:
    """A cgroup name prefix no other run uses: ``saatp-<run>-<pid>-<ms>``."""
    return f"saatp-{run}-{os.getpid()}-{int(time.time() * 1000) % 10**8}"


_RUN_CGROUP = re.compile(r"^saatp-(groups|cgp)-(\d+)-\d+-")  # run_prefix's names: the run's parent pid


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_cgroups(root: str = CPU_ROOT, remove=os.rmdir) -> list[str]:
    """Remove the cgroups of ``train groups`` / ``train cgp`` runs whose parent process is gone
    and that hold no process (``cgroup.procs`` empty): a parent killed by SIGKILL (or the OOM
    killer) cannot remove its own, and until 2026-11-28 they stayed under ``/sys/fs/cgroup/cpu``
    for good (4 per killed ``train groups``, 4 per ``train cgp`` method). Called when a run
    creates its cgroups; returns the names removed (a note on stderr names them)."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    gone = []
    for name in names:
        m = _RUN_CGROUP.match(name)
        if not m or _pid_alive(int(m.group(2))):
            continue
        path = os.path.join(root, name)
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                if f.read().strip():
                    continue  # a process is still in it (an orphaned rank): not ours to end
            remove(path)
        except OSError:
            continue
        gone.append(name)
    if gone:
        pids = sorted({int(_RUN_CGROUP.match(n).group(2)) for n in gone})
        print(f"note: removed {len(gone)} cgroup(s) left by killed runs (parent pids {pids}): {', '.join(gone)}",
              file=sys.stderr)
    return gone


class SlotQuotas:
    """One cgroup per process (``<prefix>-rankR``); ``set(quotas)`` applies a slot's quotas
    (CPUs), ``close()`` (or leaving it as a context manager) removes the groups: after the
    processes in them have exited."""

    def __init__(self, n: int, prefix: str, period_us: int = 10_000):
        why = unavailable_reason()
        if why:  # the run's options say how to go without (the bare reason did not)
            raise RuntimeError(f"{why}: run as root on a host with the cgroup v1 cpu controller, or without CPU "
                               f"quotas (--no-cgroups; cgroups=False in a config)")
        sweep_stale_cgroups()
        self.cg = CpuQuotas(prefix=prefix, period_us=period_us)
        self.paths = [self.cg.create(f"rank{r}", 1.0) for r in range(n)]

    def set(self, quotas: Sequence[float]) -> None:
        for path, q in zip(self.paths, quotas):
            with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
                f.write(str(quota_us(q, self.cg.period_us)))

    def remove(self) -> list[str]:
        return self.cg.remove()

    def __enter__(self) -> SlotQuotas:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove the groups; a warning on stderr names any that could not be removed."""
        left = self.remove()
        if left:
            print(f"warning: could not remove cgroups {left}", file=sys.stderr)
