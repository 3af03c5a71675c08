"""The rank processes of a multi-process training run and how they meet: each rank is
``python -m MODULE CONFIG.json RANK``, the parent hosts a TCP store, and the ranks build
their ``torch.distributed`` world through that store (under the prefix ``pg``, so the
parent and the ranks can use the store's other keys for commands and measurements).

Parent side: :func:`free_port`, :func:`host_store` and :class:`RankProcesses` (start the
ranks with one log each, watch them, put the logs' tails in the error when the run fails,
kill what is left).
Rank side: :func:`rank_main` (the command line) and :func:`join_world`. Used by
:mod:`.cgp.library` / :mod:`.cgp.procs` and :mod:`.groups.executor` / :mod:`.groups.worker`;
:mod:`.pipeline.worker` shares the command line.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import NoReturn

import torch
import torch.distributed as dist

from ..free_ports import free_tcp_port
from .interrupts import held_interrupts

HOST = "127.0.0.1"
# torch.distributed backends the runs support: every runtime here keeps its tensors on the CPU
# (NCCL would need CUDA placement, which none does)
BACKENDS = ("gloo", "saatp")


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not supported: {' or '.join(BACKENDS)} (the runs keep their "
                         "tensors on the CPU; nccl would need CUDA tensors)")


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    return free_tcp_port(HOST)


def host_store(clients: int, timeout_s: float, tries: int = 5) -> tuple[dist.TCPStore, int]:
    """The parent's TCP store on a free loopback port (``clients`` = ranks + the parent). The
    port was free when :func:`free_port` released it; another process (a run started at the
    same time, a connection's ephemeral port) may take it before the store listens, so a port
    found in use is replaced by another (``tries`` in all). Until 2026-11-28 the run failed:
    "The server socket has failed to listen on any local network address ... address already
    in use"."""
    for attempt in range(tries):
        port = free_port()
        try:
            store = dist.TCPStore(HOST, port, world_size=clients, is_master=True, wait_for_workers=False,
                                  timeout=datetime.timedelta(seconds=timeout_s))
        except dist.DistNetworkError as e:
            if "EADDRINUSE" not in str(e) or attempt == tries - 1:
                raise
            continue
        return store, port
    raise AssertionError("unreachable")


STORE_CHUNK = 4 << 20  # bytes per store value: torch's (libuv) TCPStore drops a connection that sets over 8 MiB


def put_blob(store: dist.Store, key: str, data: bytes) -> None:
    """``data`` under ``key`` in parts of :data:`STORE_CHUNK` bytes (``key/0``, ``key/1``, ...), then
    ``key`` = the part count, so a reader blocked on ``key`` finds every part. One value of a
    model's parameters over 8 MiB (2M float32) failed every rank with "Connection reset by peer"."""
    n = max(1, -(-len(data) // STORE_CHUNK))
    for i in range(n):
        store.set(f"{key}/{i}", data[i * STORE_CHUNK:(i + 1) * STORE_CHUNK])
    store.set(key, str(n))


def get_blob(store: dist.Store, key: str) -> bytes:
    """What :func:`put_blob` stored under ``key`` (waits for it); the parts are deleted."""
    n = int(store.get(key))
    parts = [store.get(f"{key}/{i}") for i in range(n)]
    for i in range(n):
        store.delete_key(f"{key}/{i}")
    return b"".join(parts)


def join_world(port: int, rank: int, world: int, backend: str, timeout_s: float, threads: int = 1) -> dist.TCPStore:
    """In a rank: connect to the parent's store, limit torch to ``threads`` threads and join
    the world process group through the store; returns the store."""
    timeout = datetime.timedelta(seconds=timeout_s)
    store = dist.TCPStore(HOST, port, is_master=False, timeout=timeout)
    torch.set_num_threads(threads)
    dist.init_process_group(backend, store=dist.PrefixStore("pg", store), rank=rank, world_size=world,
                            timeout=timeout)
    return store


def how_ended(returncode: int) -> str:
    """A process's exit status in words: ``"exit status 1"``, ``"killed by SIGKILL"``."""
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


PARENT_ENV = "SAATP_RANK_PARENT"  # the pid of the process that started the rank (RankProcesses.start)
_PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent() -> None:
    """In a rank started by :meth:`RankProcesses.start`: be killed (SIGKILL) when the parent
    dies, and leave at once if it already has. A parent killed by SIGKILL cannot kill its
    ranks; until 2026-11-28 ranks it left while they were still starting sat in the store's
    connect retries for up to the run's timeout (300 s), and ranks it left later failed on
    the lost store only at their next store call. Linux only; elsewhere nothing happens."""
    parent = os.environ.get(PARENT_ENV)
    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the parent died before the request took effect
        exit_rank(1)


class RankFailure(RuntimeError):
    """A rank exited, hung (:class:`.progress.Stalled`) or did not finish in time: what the
    ranks' logs may explain."""


class RankProcesses:
    """The ranks of one run; their logs are ``<log_dir>/rank<R>.log`` (stdout and stderr).
    As a context manager: on leaving, the ranks still running are killed, and a
    :class:`RankFailure`, or any exception once a rank has failed, becomes
    ``RuntimeError("<what> failed: ...")`` with the directory and the logs' tails. Any other
    exception (the parent's own: a bad option found late, a bug) passes unchanged: the
    ranks' logs hold nothing about it (``run_dirs.run_dir`` names the directory left)."""

    def __init__(self, log_dir: str, what: str = "run"):
        self.log_dir, self.what = log_dir, what
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> RankProcesses:
        return self

    def __exit__(self, kind, e, tb) -> None:
        try:
            if isinstance(e, RankFailure) or (isinstance(e, Exception) and self.failed()):
                tails = self.log_tails()
                logs = f"the ranks' logs are in {self.log_dir}" + (", their ends:\n" + tails if tails else " (empty)")
                raise RuntimeError(f"{self.what} failed: {e}\n{logs}") from e
        finally:
            self.kill()

    def log_path(self, rank: int) -> str:
        return os.path.join(self.log_dir, f"rank{rank}.log")

    def start(self, module: str, config_path: str, n: int) -> None:
        """Start ranks 0..n-1 as ``python -m module config_path RANK``."""
        env = dict(os.environ, **{PARENT_ENV: str(os.getpid())})  # the ranks die with this process
        for r in range(n):
            with open(self.log_path(r), "w") as log:
                self.procs.append(subprocess.Popen([sys.executable, "-m", module, config_path, str(r)],
                                                   stdout=log, stderr=subprocess.STDOUT, env=env))

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs)

    def failed(self) -> bool:
        """True once any rank has exited with a non-zero status."""
        return bool(self.failed_ranks())

    def failed_ranks(self) -> list[int]:
        """The ranks that have exited with a non-zero status."""
        return [r for r, p in enumerate(self.procs) if p.poll() not in (None, 0)]

    def exits(self, noun: str = "rank", ranks: list[int] | None = None) -> str:
        """How ``ranks`` (default: the failed ones) ended: ``"rank 1 (killed by SIGKILL), rank 2
        (exit status 1)"``."""
        which = self.failed_ranks() if ranks is None else ranks
        return ", ".join(f"{noun} {r} ({how_ended(self.procs[r].returncode)})" for r in which)

    def settle(self, seconds: float = 2.0) -> None:
        """After a rank's failure: give the others up to ``seconds`` to exit too. A rank's
        failure is usually every rank's (the same model, data and code), so the message can
        name all that failed, not the first."""
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end and self.running():
            time.sleep(0.05)

    def exited(self) -> list[int]:
        return [r for r, p in enumerate(self.procs) if p.poll() is not None]

    def wait(self, timeout_s: float) -> list[int]:
        """After the last command: wait up to ``timeout_s`` in all for the ranks to exit, kill
        those still running and return their ranks. Their work is done by then, so a slow exit
        costs the run nothing (until 2026-11-28 it raised ``TimeoutExpired`` and lost it)."""
        self.settle(timeout_s)
        late = [r for r, p in enumerate(self.procs) if p.poll() is None]
        self.kill()
        return late

    def log_tails(self, chars: int = 1500) -> str:
        """The last ``chars`` characters of every non-empty log, one block a rank."""
        out = []
        for r in range(len(self.procs)):
            try:
                with open(self.log_path(r)) as f:
                    tail = f.read()[-chars:]
            except OSError:
                tail = ""
            if tail.strip():
                out.append(f"--- rank {r} ---\n{tail}")
        return "\n".join(out)

    def kill(self) -> None:
        """Kill the ranks still running and reap them, with Ctrl-C held meanwhile (a second
        one left ranks running: :mod:`.interrupts`)."""
        with held_interrupts():
            for p in self.procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()


def exit_rank(status: int) -> NoReturn:
    """End a rank's process with ``status`` without the interpreter's and libtorch's teardown
    (``if __name__ == "__main__": exit_rank(main())``). libtorch deregisters every operator
    kernel in its static destructors: 1-3 CPU seconds once a rank has run, and under a slot's
    0.1 CPU quota over 60 s, so the parent's wait for the exit failed a finished run (a
    clean-clone CI run, 2026-11-28). A rank's results are in the store or in closed files by
    then; only the standard streams need flushing."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def end_rank(main: Callable[[], int | None]) -> NoReturn:
    """Run a rank's ``main`` and leave through :func:`exit_rank`, also when it raises (``if
    __name__ == "__main__": end_rank(main)``): the traceback goes to the rank's log and the
    status is 1 (a ``SystemExit``'s own code where it has one). Until 2026-11-28 a failing rank
    went through the interpreter's and libtorch's teardown (minutes under a 0.1 CPU quota): when
    the parent had been killed, its ranks failed on the lost store, and one groups rank was
    still tearing down, holding its cgroup, 80 s later; CGP's ranks took 58 s."""
    try:
        status = main()
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # noqa: BLE001 - every failure ends the same way, its traceback logged
        sys.excepthook(type(e), e, e.__traceback__)
        status = 1
    exit_rank(0 if status is None else status)


def rank_main(module: str, body: Callable[[dict, int], None], argv: list[str] | None = None,
              leave_world: bool = False) -> int:
    """The command line of a rank, ``python -m module CONFIG.json RANK``: ``body(config, rank)``
    with the JSON config; exit status 2 with the usage on other arguments. ``leave_world``:
    afterwards (also on error) destroy the process group ``body`` joined."""
    die_with_parent()
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(f"usage: python -m {module} CONFIG.json RANK", file=sys.stderr)
        return 2
    with open(args[0]) as f:
        cfg = json.load(f)
    try:
        body(cfg, int(args[1]))
    finally:
        if leave_world and dist.is_initialized():
            dist.destroy_process_group()
    return 0
