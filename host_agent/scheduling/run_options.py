"""The options shared by the runs that train on real rank processes under a CPU-quota trace
(``saatp train groups`` = :class:`.groups.executor.GroupsConfig`, ``saatp train cgp`` =
:class:`.cgp.library.CGPConfig`): the config fields (:class:`QuotaRunOptions`), their
command-line options (:func:`add_run_options`, :func:`run_options_from`) and the commands'
SIGTERM handling."""

from __future__ import annotations

import argparse
import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .interrupts import exit_129, exit_143
from .progress import DEFAULT_STALL_S, add_stall_option
from .rank_processes import BACKENDS, check_backend


@dataclass
class QuotaRunOptions:
    """Base CPUs of each rank (slowed down slot by slot by the trace CSV ``trace`` or, without
    one, by factors generated from ``trace_seed``), the ``torch.distributed`` backend, the
    training seed, whether to apply the quotas (cgroup v1), the processes' time-out and the
    stall limit (:mod:`.progress`)."""

    base_quotas: tuple[float, ...] = (0.4, 0.4, 0.3, 0.3)
    trace: str | None = None  # CSV slot,device,factor or slot,device,quota; None: generated from trace_seed
    trace_seed: int = 0
    backend: str = "gloo"
    seed: int = 0
    cgroups: bool = True
    timeout_s: float = 120.0
    stall_s: float = DEFAULT_STALL_S  # a rank without progress this long fails the run (progress.py); 0: never

    def take_quota_sequence(self) -> None:
        """``base_quotas`` as a tuple; ValueError for one number (``base_quotas=0.5``), which
        failed with "TypeError: object of type 'float' has no len()" (until 2026-11-28)."""
        if isinstance(self.base_quotas, (int, float, str)):
            raise ValueError(f"base_quotas (--quotas) must be a sequence of CPU quotas, one per rank process "
                             f"(base_quotas=(0.5, 0.5) for two), got {self.base_quotas!r}")
        self.base_quotas = tuple(self.base_quotas)

    def check_run_options(self, rank: str) -> None:
        """ValueError naming the field (its option) and the value when a base quota is not a
        positive number of CPUs or the time-out is not positive; ``rank`` names a rank
        ("worker", "process")."""
        for r, q in enumerate(self.base_quotas):
            try:
                ok = math.isfinite(float(q)) and float(q) > 0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(f"base quota of {rank} {r} (--quotas) must be > 0 CPUs, got {q!r}")
        require("timeout_s", self.timeout_s, self.timeout_s > 0, "> 0")
        # numpy's generator takes no negative seed: until 2026-11-28 --trace-seed -2 failed with
        # numpy's "expected non-negative integer" alone
        require("trace_seed", self.trace_seed, int(self.trace_seed) >= 0, ">= 0", "--trace-seed")
        check_backend(self.backend)
        require("stall_s", self.stall_s, self.stall_s >= 0, ">= 0 seconds (0: no limit)", "--stall-timeout")

    def require_fields(self, checks) -> None:
        """:func:`require` for each ``(field, option, ok, want)`` in order, on the field's value
        (which must also be finite); a None value is the field's default, not checked."""
        for name, option, ok, want in checks:
            value = getattr(self, name)
            if value is None:
                continue
            finite = math.isfinite(float(value))
            # an infinite value passes '> 0': it was refused as "must be > 0 seconds, got inf"
            # (--duration inf; until 2026-11-28)
            require(name, value, bool(ok) and finite, want if finite else f"a finite number {want}", option)


def require(name: str, value, ok: bool, want: str, option: str | None = None) -> None:
    """ValueError ``"NAME (OPTION) must be WANT, got VALUE"`` unless ``ok``: one check, named,
    with the value that failed it (a NaN fails every comparison, so it fails here too)."""
    if not ok:
        raise ValueError(f"{name}{f' ({option})' if option else ''} must be {want}, got {value!r}")


def add_run_options(p: argparse.ArgumentParser, model: str, rank: str, quotas: str) -> None:
    """``--model`` (``digits-cnn`` or a ``MODULE:FN`` returning a ``model``), ``--data`` and the
    options of :class:`QuotaRunOptions`: ``--quotas`` (default ``quotas``: base CPUs of each
    ``rank``), ``--trace``, ``--trace-seed``, ``--backend``, ``--no-cgroups``, ``--seed``,
    ``--stall-timeout``; and ``--log-dir`` (not a config field: where the run keeps its files)."""
    g = p.add_argument_group("model, data and processes")
    g.add_argument("--model", default="digits-cnn", help=f"digits-cnn or MODULE:FN returning an {model}")
    g.add_argument("--data", default="digits", help="digits or MODULE:FN returning (x_train, y_train, x_test, y_test)")
    ranks = rank + ("es" if rank.endswith("s") else "s")
    g.add_argument("--quotas", default=None, help=f"base CPU quota per {rank} (default {quotas}); their number is "
                                                  f"the number of {ranks}")
    g.add_argument(f"--{ranks}", type=int, default=None, dest="rank_count", metavar="N",
                   help=f"the number of {ranks}: without --quotas, the default quotas repeated to N values "
                        f"({quotas} for 4); with --quotas, it must match their number")
    p.set_defaults(default_quotas=quotas, rank_noun=rank, ranks_noun=ranks)
    g.add_argument("--trace", metavar="CSV",
                   help="CPU trace, looped: slot,device,factor (base quota / factor) or slot,device,quota "
                   "(CPUs); a (slot, device) it does not name keeps the base quota (default: generated)")
    g.add_argument("--trace-seed", type=int, default=0)
    g.add_argument("--backend", default="gloo", choices=BACKENDS, help="torch.distributed backend (default gloo)")
    g.add_argument("--no-cgroups", action="store_true", help="run without CPU quotas")
    g.add_argument("--seed", type=int, default=0)
    add_stall_option(g, rank)
    g.add_argument("--log-dir", metavar="DIR",
                   help="keep the processes' configs and logs here (default: a temporary directory, "
                   "removed after a successful run)")


def run_options_from(args: argparse.Namespace) -> dict:
    """The :class:`QuotaRunOptions` fields the options of :func:`add_run_options` give
    (``timeout_s`` keeps its default); ValueError when ``--quotas`` holds a non-number."""
    given = getattr(args, "quotas", None)
    text = given if given is not None else args.default_quotas
    try:
        quotas = tuple(float(q) for q in text.split(","))
    except ValueError:
        raise ValueError(f"--quotas must be comma-separated CPU quotas (e.g. 0.3,0.2), got {text!r}") from None
    n = getattr(args, "rank_count", None)
    if n is not None:
        nouns = args.ranks_noun
        require(nouns, n, n >= 1, ">= 1", f"--{nouns}")
        if given is not None and len(quotas) != n:
            raise ValueError(f"--{nouns} {n} but --quotas gives {len(quotas)} values ({given}): give one quota per "
                             f"{args.rank_noun}, or leave out one of the two options")
        if given is None:
            quotas = tuple(quotas[i % len(quotas)] for i in range(n))
    return dict(base_quotas=quotas, trace=args.trace, trace_seed=args.trace_seed, backend=args.backend,
                seed=args.seed, cgroups=not args.no_cgroups, stall_s=args.stall_timeout)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into ``SystemExit(143)`` so that the finally blocks run (they remove the
    run's cgroups and kill its rank processes); later SIGTERMs are ignored
    (:func:`.interrupts.exit_143`). SIGHUP likewise becomes ``SystemExit(129)`` unless it is
    ignored (``nohup``, which stays so): until 2026-11-28 a closed terminal killed the command at
    once, leaving its cgroups and run directory, and the finished methods or slots unwritten."""
    signal.signal(signal.SIGTERM, exit_143)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:
        signal.signal(signal.SIGHUP, exit_129)


@contextmanager
def sigterm_exits() -> Iterator[None]:
    """For a library call that starts rank processes and cgroups (``train_cgp``,
    ``groups.executor.run``): while it runs, SIGTERM becomes ``SystemExit(143)`` as in the
    commands (:func:`exit_on_sigterm`), so that its finally blocks kill the ranks and remove the
    cgroups; afterwards the caller's handler is back. Only where SIGTERM has its default action
    (a caller's own handler is left alone) and in the main thread (the only one that may set
    handlers). Until 2026-11-28 a plain Python script calling ``train_cgp`` that got SIGTERM (a
    ``timeout``, a batch system) left its cgroups under ``/sys/fs/cgroup/cpu``."""
    main = threading.current_thread() is threading.main_thread()
    if not main:
        yield
        return
    # SIGHUP (a closed terminal) likewise becomes SystemExit(129) where it has its default action
    # (until 2026-11-28 it killed the script at once, leaving the run's cgroups)
    mine = [(s, h) for s, h in ((signal.SIGTERM, exit_143), (signal.SIGHUP, exit_129))
            if signal.getsignal(s) is signal.SIG_DFL]
    for s, h in mine:
        signal.signal(s, h)
    try:
        yield
    finally:
        for s, _ in mine:
            signal.signal(s, signal.SIG_DFL)
