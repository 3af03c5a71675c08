"""The switch process's runtime control socket and ``saatp switch-cli``, its client.

BMv2 changes queue depths and rates at run time through Thrift (``simple_switch_CLI``:
``set_queue_depth <nb_pkts> [<egress_port> [<priority>]]``, ``set_queue_rate <rate_pps>
[<egress_port> [<priority>]]``).  ``saatp switch`` has no Thrift server; with
``--control-addr 127.0.0.1:PORT`` it listens on a local TCP socket for the same commands:

    saatp switch-cli --control-addr 127.0.0.1:9091 set_queue_rate 5000 2
    echo "set_queue_depth 16" | saatp switch-cli --control-addr 127.0.0.1:9091
    saatp switch-cli --control-addr 127.0.0.1:9091 show_queues

Commands: ``set_queue_depth``, ``set_queue_rate`` (as simple_switch_CLI; a rate of 0 lifts
the limit), ``show_queues`` (JSON: every queue's depth, rate, occupancy, tail drops),
``stats`` (JSON: the switch's statistics line, queue drops included), ``help``.

Protocol: the client sends one command per line (UTF-8); the switch answers each with one
line of JSON, ``{"ok": true, "output": "..."}`` or ``{"ok": false, "error": "..."}``.  The
socket binds loopback addresses only.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import socket
import socketserver
import sys
import threading
from typing import Any, Callable, Sequence

DEFAULT_CLIENT_ADDR = "127.0.0.1:9091"

HELP = {
    "set_queue_depth": "set_queue_depth <nb_pkts> [<egress_port> [<priority>]]: depth of one / all egress queue(s)",
    "set_queue_rate": "set_queue_rate <rate_pps> [<egress_port> [<priority>]]: rate of one / all egress queue(s); "
                      "0 = no limit",
    "show_queues": "show_queues: every egress queue's depth, rate, occupancy and drops (JSON)",
    "stats": "stats: the switch's per-port statistics (JSON)",
    "help": "help: this list",
}


class ControlError(Exception):
    pass


def parse_addr(addr: str) -> tuple[str, int]:
    """``HOST:PORT`` with a loopback HOST (the control socket is local only)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ControlError(f"control address {addr!r}: expected HOST:PORT, e.g. 127.0.0.1:9091")
    host = host.strip("[]") or "127.0.0.1"
    if host != "localhost":
        try:
            ok = ipaddress.ip_address(host).is_loopback
        except ValueError:
            ok = False
        if not ok:
            raise ControlError(f"control address {addr!r}: the control socket binds loopback addresses only "
                               "(127.0.0.1)")
    return host, int(port)


def _int(v: str, what: str) -> int:
    try:
        return int(v, 0)
    except ValueError:
        raise ControlError(f"bad format for {what}: expected an integer, got {v!r}") from None


class SwitchCommands:
    """The runtime commands over a switch's :class:`~emulation.v1model.queues.EgressQueues`.

    ``lock`` serialises changes with the data plane (the device lock); ``changed`` is called
    after a queue setting changes (the switch attaches or detaches the queued path);
    ``stats`` returns the switch's statistics snapshot."""

    def __init__(self, queues: Any, lock: Any, changed: Callable[[], None] = lambda: None,
                 stats: Callable[[], dict] | None = None):
        self.queues = queues
        self.lock = lock
        self.changed = changed
        self.stats = stats

    def execute(self, line: str) -> str:
        words = line.split()
        if not words:
            return ""
        cmd, args = words[0], words[1:]
        if cmd in ("set_queue_depth", "set_queue_rate"):
            if not 1 <= len(args) <= 3:
                raise ControlError(f"usage: {HELP[cmd]}")
            if cmd == "set_queue_depth":
                value: Any = _int(args[0], "nb_pkts")
            else:
                try:
                    value = float(args[0])
                except ValueError:
                    raise ControlError(f"bad format for rate_pps: expected a number, got {args[0]!r}") from None
            port = _int(args[1], "egress_port") if len(args) > 1 else None
            pri = _int(args[2], "priority") if len(args) > 2 else None
            from emulation.v1model.queues import QueueConfigError
            try:
                with self.lock:
                    (self.queues.set_depth if cmd == "set_queue_depth" else self.queues.set_rate)(value, port, pri)
            except QueueConfigError as e:
                raise ControlError(str(e)) from None
            self.changed()
            return ""
        if cmd == "show_queues":
            with self.lock:
                return json.dumps(self.queues.stats(), sort_keys=True)
        if cmd == "stats":
            if self.stats is None:
                raise ControlError("no statistics here")
            return json.dumps(self.stats(), sort_keys=True)
        if cmd == "help":
            return "\n".join(HELP.values())
        raise ControlError(f"unknown command {cmd!r}; commands: {', '.join(HELP)}")


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        cmds: SwitchCommands = self.server.commands  # type: ignore[attr-defined]
        for raw in self.rfile:
            line = raw.decode("utf-8", "replace").strip()
            try:
                reply = {"ok": True, "output": cmds.execute(line)}
            except ControlError as e:
                reply = {"ok": False, "error": str(e)}
            except Exception as e:  # noqa: BLE001 - a bad command must not kill the server
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            self.wfile.write((json.dumps(reply) + "\n").encode())
            self.wfile.flush()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class ControlServer:
    """The control socket: ``start()`` serves on a thread, ``address`` is where, ``stop()``."""

    def __init__(self, addr: str, commands: SwitchCommands):
        host, port = parse_addr(addr)
        try:
            self._srv = _Server((host, port), _Handler)
        except OSError as e:
            raise ControlError(f"control address {addr}: {e.strerror or e}") from None
        self._srv.commands = commands  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        h, p = self._srv.server_address[:2]
        return f"{h}:{p}"

    def start(self) -> "ControlServer":
        self._thread = threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="switch-control", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()
        if self._thread is not None:
            self._thread.join(2)


def send_commands(addr: str, lines: Sequence[str], timeout: float = 10.0) -> list[dict]:
    """Send command lines to a switch's control socket; returns the replies in order."""
    host, port = parse_addr(addr)
    out = []
    with socket.create_connection((host, port), timeout=timeout) as s:
        f = s.makefile("rwb")
        for line in lines:
            f.write((line.strip() + "\n").encode())
            f.flush()
            reply = f.readline()
            if not reply:
                raise ControlError("the switch closed the control connection")
            out.append(json.loads(reply))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp switch-cli",
                                 description="runtime commands for a running saatp switch (queue depth and rate, "
                                             "as simple_switch_CLI), over its --control-addr socket")
    ap.add_argument("--control-addr", default=DEFAULT_CLIENT_ADDR,
                    help=f"the switch's control socket (default {DEFAULT_CLIENT_ADDR})")
    ap.add_argument("command", nargs=argparse.REMAINDER,
                    help="one command (e.g. set_queue_rate 1000 2); none: read commands from standard input")
    args = ap.parse_args(argv)
    if args.command:
        lines = [" ".join(args.command)]
    else:
        lines = [ln for ln in (raw.strip() for raw in sys.stdin) if ln and not ln.startswith("#")]
    try:
        replies = send_commands(args.control_addr, lines)
    except (ControlError, OSError) as e:
        print(f"saatp switch-cli: {args.control_addr}: {e}", file=sys.stderr)
        return 2
    rc = 0
    for line, r in zip(lines, replies):
        if r.get("ok"):
            if r.get("output"):
                print(r["output"])
        else:
            print(f"{line}: error: {r.get('error')}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
