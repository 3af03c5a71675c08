"""``saatp switch`` as a child process, for tests: start, wait until it serves, stop.

``SwitchProcess(program, {port: spec}, netns=None)`` runs ``python -m emulation.switchd``
with ``-i PORT@SPEC`` per port (``udp:LOCAL:HOST:REMOTE`` or an interface name), P4Runtime on
a free loopback port, and ``--exit-with-parent`` so that a crashed test run leaves no switch
behind.  :meth:`stats` asks the process for its counters (SIGUSR1) and returns them; when the
switch was started with ``--control-addr`` (``extra_args``), :attr:`control_address` is where
its control socket listens and :meth:`control_stats` asks there (``emulation/switch_control.py``).
``env`` adds environment variables (e.g. ``SAATP_PACKET_RING=0`` for plain packet sockets).
"""
from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

STARTED = re.compile(r"P4Runtime on (\S+?),")
CONTROL = re.compile(r"control on (\S+?),")


class SwitchStartError(RuntimeError):
    """The switch process exited or did not come up."""


class SwitchProcess:
    def __init__(self, program: str | Path | None, ports: dict[int, str], *, netns: str | None = None,
                 cpu_port: int | None = None, extra_args: Sequence[str] = (), start_timeout: float = 120.0,
                 env: dict[str, str] | None = None):
        self.program = str(program) if program is not None else None
        self.ports = dict(ports)
        self.netns = netns
        self.grpc_address: str | None = None
        self.control_address: str | None = None
        argv = [sys.executable, "-m", "emulation.switchd"]
        argv += [self.program] if self.program else ["--no-p4"]
        for n, spec in sorted(self.ports.items()):
            argv += ["-i", f"{n}@{spec}"]
        argv += ["--exit-with-parent", str(os.getpid()), *extra_args]
        if cpu_port is not None:
            argv += ["--cpu-port", str(cpu_port)]
        argv += ["--", "--grpc-server-addr", "127.0.0.1:0"]
        if netns:
            argv = ["ip", "netns", "exec", netns, *argv]
        self.argv = argv
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                             env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        threading.Thread(target=self._pump, daemon=True).start()
        try:
            self._wait_started(start_timeout)
        except BaseException:
            self.stop()
            raise

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("saatp switch: stats "):     # periodic: not kept
                self.output.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def _next_line(self, timeout: float) -> str | None:
        return self._lines.get(timeout=max(timeout, 0.01))

    def _wait_started(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while True:
            try:
                line = self._next_line(end - time.monotonic())
            except queue.Empty:
                raise SwitchStartError(f"the switch did not start in {timeout:.0f} s: "
                                       + "\n".join(self.output[-20:])) from None
            if line is None:
                raise SwitchStartError(f"the switch exited with status {self.proc.wait()}:\n"
                                       + "\n".join(self.output[-20:]))
            m = STARTED.search(line)
            if m:
                self.grpc_address = m.group(1)
                c = CONTROL.search(line)
                self.control_address = c.group(1) if c else None
                return

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stats(self, timeout: float = 10.0) -> dict:
        """The switch's counters (``saatp switch: stats {JSON}``, asked for with SIGUSR1)."""
        while True:                       # drop stats lines printed before this request
            try:
                self._lines.get_nowait()
            except queue.Empty:
                break
        self.proc.send_signal(signal.SIGUSR1)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self._next_line(end - time.monotonic())
            except queue.Empty:
                break
            if line is None:
                raise SwitchStartError("the switch exited:\n" + "\n".join(self.output[-20:]))
            if line.startswith("saatp switch: stats "):
                return json.loads(line[len("saatp switch: stats "):])
        raise TimeoutError("the switch did not print its statistics")

    def control_stats(self, timeout: float = 10.0) -> dict:
        """The switch's counters from its control socket's ``stats`` command (needs ``--control-addr``)."""
        from emulation.switch_control import send_commands
        if self.control_address is None:
            raise RuntimeError("the switch has no control socket (start it with --control-addr 127.0.0.1:0)")
        reply = send_commands(self.control_address, ["stats"], timeout=timeout)[0]
        if not reply.get("ok"):
            raise RuntimeError(f"stats: {reply.get('error')}")
        return json.loads(reply["output"])

    def next_stats(self, timeout: float = 10.0) -> dict:
        """The next statistics line the switch prints by itself (``--stats-interval``)."""
        end = time.monotonic() + timeout
        while True:
            try:
                line = self._next_line(end - time.monotonic())
            except queue.Empty:
                raise TimeoutError("the switch printed no statistics (is --stats-interval set?)") from None
            if line is None:
                raise SwitchStartError("the switch exited:\n" + "\n".join(self.output[-20:]))
            if line.startswith("saatp switch: stats "):
                return json.loads(line[len("saatp switch: stats "):])

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> SwitchProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
