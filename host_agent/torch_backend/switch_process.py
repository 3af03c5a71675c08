"""Start and stop a ``saatp-switch`` process: the host side starts a switch only as a process.

The switch is the ``saatp-switch`` command installed with the package (the same program users
run by hand); this module finds it, starts it with one UDP-tunnel port per worker, waits until
its P4Runtime server answers, and stops exactly that process again. ``--exit-with-parent``
makes the switch stop itself when the process that started it dies, even by SIGKILL.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc

from ..free_ports import free_tcp_port, free_udp_ports  # noqa: F401  (switch_job takes them from here)
from .engines import SwitchEngineError, SwitchEngineUnavailable

SWITCH_COMMAND = "saatp-switch"


def installed_command(name: str) -> str:
    """Path of an installed console script of this package (``saatp-switch``, ``saatp``): beside
    this interpreter (a venv's ``bin/``), else on ``PATH``. Raises
    :class:`SwitchEngineUnavailable` naming the places tried."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    raise SwitchEngineUnavailable(
        f"saatp: the switch engine runs the {name!r} command, which is neither beside {sys.executable} "
        f"({beside}) nor on PATH; install the saatp package into this environment, or use "
        f"engine='ring' (SAATP_ENGINE=ring)")


class SwitchProcess:
    """One ``saatp-switch`` subprocess; :meth:`close` stops exactly it (SIGTERM, then SIGKILL)."""

    def __init__(self, args: list[str], log_path: str | None = None):
        # our own option goes before ``--`` (after it come the target's, as simple_switch_grpc's)
        own = ["--exit-with-parent", str(os.getpid())]
        cut = args.index("--") if "--" in args else len(args)
        self.argv = [installed_command(SWITCH_COMMAND), *args[:cut], *own, *args[cut:]]
        self.log_path = log_path
        # without a log file the switch's output goes to a pipe we drain, so that a switch that
        # fails to start can say why (its last lines go into the error)
        self._tail: list[bytes] = []
        self._log = open(log_path, "wb") if log_path else None
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=self._log if self._log else subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self._lock = threading.Lock()
        if self._log is None:
            threading.Thread(target=self._drain, name=f"saatp-switch-{self.proc.pid}-out", daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self._tail.append(line)
            del self._tail[:-20]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output_tail(self) -> str:
        if self.log_path and os.path.exists(self.log_path):
            return Path(self.log_path).read_text(errors="replace")[-1500:].strip()
        return b"".join(self._tail).decode(errors="replace")[-1500:].strip()

    def wait_ready(self, addr: str, deadline: float) -> None:
        """Block until P4Runtime answers on ``addr``; a switch that exits first is an error that
        carries its output and command line."""
        while True:
            if self.proc.poll() is not None:
                time.sleep(0.1)  # let the drain thread collect the last lines
                raise SwitchEngineError(
                    f"saatp switch exited with status {self.proc.returncode} before P4Runtime answered on "
                    f"{addr}; command: {' '.join(self.argv)}; its output: {self.output_tail() or '(none)'}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"saatp switch: P4Runtime on {addr} did not answer in time "
                                   f"(command: {' '.join(self.argv)})")
            ch = grpc.insecure_channel(addr)
            try:
                grpc.channel_ready_future(ch).result(timeout=min(0.5, left))
                return
            except grpc.FutureTimeoutError:
                continue
            finally:
                ch.close()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        with self._lock:
            p = self.proc
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
                except ProcessLookupError:
                    pass
            if self._log is not None:
                self._log.close()
                self._log = None
