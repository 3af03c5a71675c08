"""Mininet node classes for P4Runtime switches: :class:`SaatpSwitch` and :class:`Bmv2Switch`.

Both run in the root network namespace (like the tutorials' ``P4RuntimeSwitch`` and
p4-utils' ``P4RuntimeSwitch``), attach every Mininet interface as ``-i PORT@IFACE``,
serve P4Runtime on ``127.0.0.1:GRPC_PORT``, and:

* turn offloads and IPv6 off on their interfaces before starting (raw sockets see the
  frames the way the wire would carry them; no IPv6 router solicitations reach the switch);
* wait until the gRPC port answers (or fail with the tail of the switch's log);
* stop cleanly: SIGTERM to the process they started (by pid), SIGKILL after a grace period.

Parameters (``net.addSwitch("s1", cls=SaatpSwitch, **params)``): ``program`` (P4 source for
saatp, p4c JSON for BMv2, None = ``--no-p4``), ``grpc_port`` (None: a free port),
``device_id`` (None: 0, 1, 2... in creation order), ``cpu_port``, ``pcap_dir``,
``log_console``, ``log_dir`` (switch stdout/stderr go to ``LOG_DIR/NAME.log``), and for
saatp ``impair`` ({port: "loss=1%,delay=5ms"}), for BMv2 ``thrift_port`` and ``sw_path``;
both take ``queue_rate`` ({port: packets/s}) and ``queue_depth`` (packets): saatp switch
gets them on its command line, BMv2 through ``simple_switch_CLI`` once it runs.  saatp
switches also serve ``saatp switch-cli`` on ``control_port`` (default: a free port).
"""
from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from host_agent.free_ports import free_tcp_port  # noqa: F401  (the runner takes it from here)

from .commands import (
    bmv2_binary,
    bmv2_command,
    bmv2_queue_commands,
    saatp_switch_command,
)
from .hostsetup import root_intf_setup
from .mn import import_mininet

import_mininet()
from mininet.node import Switch  # noqa: E402

_device_ids = itertools.count()


def wait_tcp(host: str, port: int, timeout: float, alive=lambda: True) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not alive():
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


class SwitchStartError(RuntimeError):
    pass


class P4RuntimeSwitchBase(Switch):
    """Common machinery; subclasses define :meth:`command_line`."""

    kind = "p4"
    start_timeout = 60.0

    def __init__(self, name, program=None, grpc_port=None, device_id=None, cpu_port=None,
                 pcap_dir=None, log_console=False, log_dir=None, queue_rate=None, queue_depth=None, **params):
        self.program = program
        self.queue_rate = dict(queue_rate or {})
        self.queue_depth = queue_depth
        self.grpc_port = grpc_port if grpc_port is not None else free_tcp_port()
        self.device_id = device_id if device_id is not None else next(_device_ids)
        self.cpu_port = cpu_port
        self.pcap_dir = pcap_dir
        self.log_console = log_console
        self.log_dir = log_dir
        self.proc: subprocess.Popen | None = None
        self._log = None
        Switch.__init__(self, name, **params)

    # ---- what Mininet calls
    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def port_map(self) -> dict[int, str]:
        return {p: i.name for p, i in self.intfs.items() if i.name != "lo" and p > 0}

    @property
    def log_path(self) -> Path:
        return Path(self.log_dir or "/tmp") / f"{self.name}.log"

    def command_line(self) -> list[str]:
        raise NotImplementedError

    def start(self, controllers) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        for intf in self.port_map().values():
            root_intf_setup(intf)
        argv = self.command_line()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self._log.write(("$ " + " ".join(argv) + "\n").encode())
        self._log.flush()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # a session of its own: Ctrl-C in the Mininet CLI must not reach the switch
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True, env=env)
        if not wait_tcp("127.0.0.1", self.grpc_port, self.start_timeout, lambda: self.proc.poll() is None):
            rc = self.proc.poll()
            self.stop_process()
            raise SwitchStartError(f"{self.name}: {argv[0]} did not answer on {self.grpc_address}"
                                   f" ({'exited with status %s' % rc if rc is not None else 'timeout'});"
                                   f" log {self.log_path}:\n{self.log_tail()}")

    def log_tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop_process(self, grace: float = 5.0) -> int | None:
        p = self.proc
        if p is None:
            return None
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None
        return p.returncode

    def stop(self, deleteIntfs=True) -> None:
        self.stop_process()
        Switch.stop(self, deleteIntfs)

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc is not None else []


class SaatpSwitch(P4RuntimeSwitchBase):
    """The embedded target: ``saatp switch`` (P4 source, raw-socket ports, P4Runtime)."""

    kind = "saatp"

    def __init__(self, name, impair=None, include_dirs=(), log_level=None, seed=None, control_port=None,
                 **params):
        self.impair = dict(impair or {})
        self.control_port = control_port if control_port is not None else free_tcp_port()
        self.include_dirs = list(include_dirs)
        self.log_level = log_level
        self.seed = seed
        P4RuntimeSwitchBase.__init__(self, name, **params)

    def command_line(self) -> list[str]:
        return saatp_switch_command(self.port_map(), program=self.program, grpc_port=self.grpc_port,
                                    device_id=self.device_id, cpu_port=self.cpu_port,
                                    pcap_dir=self.pcap_dir, log_console=self.log_console,
                                    impair=self.impair, include_dirs=self.include_dirs,
                                    log_level=self.log_level, seed=self.seed, queue_rate=self.queue_rate,
                                    queue_depth=self.queue_depth if self.queue_rate else None,
                                    control_port=self.control_port, busy_poll_us=0)
        # (no busy polling: Mininet's hosts share the machine's cores with the switch, and the
        # runner's bottleneck verdict reads the switch's CPU share)

    @property
    def control_address(self) -> str:
        return f"127.0.0.1:{self.control_port}"

    def final_stats(self) -> dict | None:
        """The last statistics line the switch printed (at exit: per-port rx, forwarded,
        drops by reason, kernel rx_overflow, queue drops and the queues' state), or None."""
        import json
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return None
        for line in reversed(lines):
            k = line.find("saatp switch: stats ")
            if k >= 0:
                try:
                    return json.loads(line[k + len("saatp switch: stats "):])
                except ValueError:
                    return None
        return None


class Bmv2Switch(P4RuntimeSwitchBase):
    """BMv2's ``simple_switch_grpc`` (needs it on PATH; ``program`` is p4c's JSON)."""

    kind = "bmv2"

    def __init__(self, name, thrift_port=None, sw_path="simple_switch_grpc", **params):
        self.sw_path = sw_path
        self.thrift_port = thrift_port
        P4RuntimeSwitchBase.__init__(self, name, **params)
        if self.thrift_port is None:
            self.thrift_port = free_tcp_port()

    def command_line(self) -> list[str]:
        return bmv2_command(self.port_map(), json_path=self.program, grpc_port=self.grpc_port,
                            device_id=self.device_id, cpu_port=self.cpu_port, pcap_dir=self.pcap_dir,
                            log_console=self.log_console, thrift_port=self.thrift_port,
                            sw_path=self.sw_path)

    def start(self, controllers) -> None:
        if bmv2_binary(self.sw_path) is None:
            raise SwitchStartError(f"{self.sw_path} (BMv2) is not on PATH; use --switch saatp")
        if self.queue_rate and bmv2_binary("simple_switch_CLI") is None:
            raise SwitchStartError("queue rates on BMv2 need simple_switch_CLI on PATH (it talks to the "
                                   "switch's Thrift port)")
        P4RuntimeSwitchBase.start(self, controllers)
        if self.queue_rate:
            self.runtime_cli(bmv2_queue_commands(self.queue_rate, self.queue_depth))

    def runtime_cli(self, lines: list[str]) -> str:
        """Run commands through ``simple_switch_CLI --thrift-port N`` (BMv2's runtime CLI)."""
        if not wait_tcp("127.0.0.1", self.thrift_port, self.start_timeout, lambda: self.proc.poll() is None):
            raise SwitchStartError(f"{self.name}: no Thrift server on port {self.thrift_port}")
        r = subprocess.run([bmv2_binary("simple_switch_CLI"), "--thrift-port", str(self.thrift_port)],
                           input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or "Error" in r.stdout:
            raise SwitchStartError(f"{self.name}: simple_switch_CLI failed on {lines}: {r.stdout}{r.stderr}")
        return r.stdout


SWITCH_CLASSES = {"saatp": SaatpSwitch, "bmv2": Bmv2Switch}
