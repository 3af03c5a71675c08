"""``saatp switch`` / ``saatp-switch``: the switch process, shaped like BMv2's ``simple_switch_grpc``.

    saatp-switch [-i PORT@IFACE]... [--device-id N] [--cpu-port N] [--pcap [DIR]]
                 [--log-console] [--log-file FILE] [-L LEVEL] [-I DIR]... [-D NAME[=V]]...
                 [--impair PORT:SPEC]... [--seed N]
                 (PROGRAM.p4 | --no-p4) [-- --grpc-server-addr HOST:PORT] [--cpu-port N] [--drop-port N]

Port kinds (``-i N@SPEC``):

* ``N@IFACE`` a Linux interface through a raw packet socket (root; Mininet links,
  veths, NICs; our own transmissions are ignored; turn offloads off, see
  ``host_agent/channels/raw.py``);
* ``N@udp:LOCAL_PORT:REMOTE_HOST:REMOTE_PORT`` a UDP tunnel, one Ethernet frame per
  datagram (no root needed);

``--pcap DIR`` writes ``<port name>_in.pcap`` and ``<port name>_out.pcap`` per port, as
BMv2 does.  ``--impair 2:loss=1%,delay=5ms,seed=3`` impairs what port 2 sends (see
``host_agent/channels/impair.py``).  The program is P4 source (BMv2 would take the JSON that
p4c writes); with ``--no-p4`` the switch waits for ``SetForwardingPipelineConfig``.

The process stops cleanly (exit status 0) on SIGINT or SIGTERM, and when an interface
disappears (exit status 0, with a message); bad options exit with status 2, a program
that does not compile with status 1.

I/O: one event loop thread waits on all ports at once (``selectors``/epoll), reads each
readable port in a bounded batch (``--rx-batch``, default 64) into a preallocated buffer,
runs the batch through the pipeline and sends the outputs per port in one go.  The
P4Runtime server runs on its own threads; the device lock serialises its writes and
PacketOuts with the data plane, packet by packet.  Under overload the kernel's receive
queues overflow and the switch keeps going, counting what it drops.

Statistics (``SwitchStats``): per port, frames received, forwarded, dropped by reason
(``rx_overflow`` kernel receive-queue overflow, ``pipeline`` the program dropped it,
``error`` the target failed on it, e.g. a parser error it raised, ``no_program`` no
pipeline loaded), sent and ``tx_failed``; and frames sent to ports without an interface
(``no_egress_port``).  For every port ``rx = forwarded + pipeline + error + no_program``.
They are printed as one line ``saatp switch: stats {JSON}`` every ``--stats-interval``
seconds, on SIGUSR1 (the stats request), and when the switch stops.

Egress queues (``emulation/v1model/queues.py``, BMv2's traffic manager): ``--queue-rate PPS``
/ ``--queue-rate PORT:PPS`` and ``--queue-depth N`` / ``--queue-depth PORT:N`` set what BMv2's
``set_queue_rate`` / ``set_queue_depth`` set (BMv2 has no command-line option for them),
``--priority-queues N`` is simple_switch's own option (also accepted after ``--``), and
``--control-addr 127.0.0.1:PORT`` serves ``saatp switch-cli`` (``emulation/switch_control.py``)
to change them at run time.  While some queue has a rate (or there are priority queues) the
pipeline runs ingress, queues, and the event loop runs egress when a packet's departure time
comes (it sleeps until the next one); otherwise packets run to completion as without
queues.  A packet the pipeline sends to a queue counts as ``forwarded`` on its ingress port;
if the queue is full it is dropped there and counted as ``queue_drops`` on its egress port, and the statistics line gets a
``queues`` object (per port: queued, high water, enqueued, dequeued, tail and priority drops).

Back-pressure (docs/queues.md): ports send without waiting; a port whose link refuses frames
(a ``tc``-shaped veth) keeps them, the loop waits for POLLOUT on it while serving the others,
and its egress queue is held (queues attached even with no queue option), so packets queue
up there as in BMv2, whose transmit thread blocks instead.
"""
from __future__ import annotations

import argparse
import json
import os
import logging
import selectors
import signal
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Sequence

from emulation.p4.errors import P4Error
from emulation.p4.preprocess import parse_defines
from emulation.p4runtime.device import Device
from emulation.p4runtime.device_config import compile_source
from emulation.p4runtime.server import P4RuntimeServer
from emulation.switch_control import ControlError, ControlServer, SwitchCommands, parse_addr
from emulation.v1model.load import load_switch
from emulation.v1model.queues import DEFAULT_DEPTH, EgressQueues, QueueConfigError, parse_port_values
from emulation.v1model.trace import bmv2_line, line_level, trace_levels
from host_agent.channels import (ImpairedPort, PcapTap, PcapWriter, PortClosed, PortError, open_port,
                                 parse_impairment, parse_port_spec)

log = logging.getLogger("saatp.switch")

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"

# simple_switch(_grpc) options we do not implement, with the reason given to the user
UNSUPPORTED = {
    "--thrift-port": "there is no Thrift runtime (simple_switch_CLI); use P4Runtime on --grpc-server-addr",
    "--nanolog": "there is no nanomsg event logger; use --log-console or --log-file",
    "--notifications-addr": "there is no nanomsg notification channel; digests go over P4Runtime",
    "--use-files": "file-based ports are not supported; use UDP tunnel ports (N@udp:LPORT:HOST:RPORT)",
    "--packet-in": "the packet-in nanomsg socket is not supported; use P4Runtime PacketIn with --cpu-port",
    "--restore-state": "state snapshots are not supported",
    "--debugger": "the BMv2 debugger is not supported",
    "--debugger-addr": "the BMv2 debugger is not supported",
    "--dump-packet-data": "use --pcap DIR to record packets",
    "--log-flush": "the log is always flushed per line",
    "--json": "pass the P4 program as the positional argument",
    "--max-port-count": "there is no port-count limit (ports 0..510)",
    "--dp-grpc-server-addr": "the data-plane gRPC service is not supported",
    "--grpc-server-ssl": "TLS for the gRPC server is not supported",
    "--grpc-server-cacert": "TLS for the gRPC server is not supported",
    "--grpc-server-cert": "TLS for the gRPC server is not supported",
    "--grpc-server-key": "TLS for the gRPC server is not supported",
    "--grpc-server-with-client-auth": "TLS for the gRPC server is not supported",
    "--enable-swap": "live pipeline swapping: use SetForwardingPipelineConfig instead",
    "--load-modules": "BMv2 extern modules cannot be loaded",
}


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _main_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="saatp switch", description="the saatp software switch (simple_switch_grpc compatible)",
                 add_help=True)
    ap.add_argument("program", nargs="?", help="the P4 program (P4_16 source for v1model)")
    ap.add_argument("--no-p4", action="store_true", help="start without a program; wait for P4Runtime")
    ap.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                    help="attach a port: N@IFACE (raw socket) or N@udp:LOCAL_PORT:REMOTE_HOST:REMOTE_PORT")
    ap.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0, as BMv2)")
    ap.add_argument("--cpu-port", type=int, default=None, help="the CPU port for P4Runtime packet I/O")
    ap.add_argument("--drop-port", type=int, default=511)
    ap.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR",
                    help="write per-port pcap files DIR/<port>_in.pcap and _out.pcap")
    ap.add_argument("--log-console", action="store_true", help="per-packet trace on standard output")
    ap.add_argument("--log-file", metavar="FILE", help="per-packet trace into FILE")
    ap.add_argument("-L", "--log-level", default=None,
                    choices=["trace", "debug", "info", "warn", "error", "off"],
                    help="lowest level of the per-packet log (default trace: every line, as BMv2) and of "
                         "the switch's own messages (default info)")
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    ap.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]")
    ap.add_argument("--allow-target-extensions", action="store_true",
                    help="accept constructs p4c's BMv2 back end refuses (programs for the embedded target only)")
    ap.add_argument("--impair", action="append", default=[], metavar="PORT:SPEC",
                    help="impair what PORT sends, e.g. 2:loss=1%%,delay=5ms,jitter=1ms,rate=10mbit,seed=7")
    ap.add_argument("--seed", type=int, default=None, help="seed for the target's random externs")
    ap.add_argument("--stats-interval", type=float, default=0.0, metavar="SECONDS",
                    help="print a statistics line (saatp switch: stats {JSON}) every SECONDS (saatp extension)")
    ap.add_argument("--rx-batch", type=int, default=64, metavar="N",
                    help="frames read from one port before turning to the next (default 64)")
    ap.add_argument("--busy-poll-us", type=float, default=DEFAULT_BUSY_POLL_US, metavar="US",
                    help="under a load of more than about 20k frames/s, poll the ports for US microseconds "
                         "after each batch instead of sleeping (default 200; 0: never) (saatp extension)")
    ap.add_argument("--exit-with-parent", type=int, default=None, metavar="PID",
                    help="stop when process PID (the one that started this switch) is gone (saatp extension)")
    ap.add_argument("--queue-rate", action="append", default=[], metavar="PPS|PORT:PPS",
                    help="egress queue rate in packets/s, every port or one (repeatable; BMv2's set_queue_rate; "
                         "default: no limit)")
    ap.add_argument("--queue-depth", action="append", default=[], metavar="N|PORT:N",
                    help=f"egress queue depth in packets, every port or one (repeatable; BMv2's set_queue_depth; "
                         f"default {DEFAULT_DEPTH})")
    ap.add_argument("--priority-queues", type=int, default=None, metavar="N",
                    help="egress queues per port, served by standard_metadata.priority (as simple_switch)")
    ap.add_argument("--control-addr", default=None, metavar="127.0.0.1:PORT",
                    help="serve runtime commands (set_queue_rate, set_queue_depth, show_queues, stats) for "
                         "`saatp switch-cli` on this local TCP address (port 0: any free port)")
    ap.add_argument("--grpc-server-addr", default=None, help=argparse.SUPPRESS)
    return ap


def _target_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="saatp switch ... --", add_help=False)
    ap.add_argument("--grpc-server-addr", default=None)
    ap.add_argument("--cpu-port", type=int, default=None)
    ap.add_argument("--drop-port", type=int, default=None)
    ap.add_argument("--priority-queues", type=int, default=None)
    return ap


# options that scripts written for simple_switch_grpc always pass (the p4lang tutorials'
# P4RuntimeSwitch passes --thrift-port and --nanolog): accepted with a warning and ignored,
# so those scripts work unchanged; the value is how many arguments follow the option
IGNORED = {"--thrift-port": 1, "--nanolog": 1, "--debugger": 0, "--log-flush": 0}


def _drop_ignored(argv: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        name = a.split("=", 1)[0]
        if name in IGNORED:
            n = 0 if "=" in a else IGNORED[name]
            print(f"saatp switch: warning: {name} ignored ({UNSUPPORTED.get(name, 'not modelled')})",
                  file=sys.stderr)
            i += 1 + n
            continue
        out.append(a)
        i += 1
    return out


def _p4_for_json(path: str) -> str | None:
    """The P4 source a BMv2 JSON was compiled from, found the way the tutorials lay files out
    (``build/basic.json`` from ``basic.p4``): next to the JSON, in its parent, or here."""
    p = Path(path)
    for d in (p.parent, p.parent.parent, Path.cwd()):
        cand = d / (p.stem + ".p4")
        if cand.is_file():
            return str(cand)
    return None


def _check_unsupported(argv: Sequence[str]) -> None:
    for a in argv:
        name = a.split("=", 1)[0]
        if name in UNSUPPORTED:
            raise UsageError(f"option {name} is not supported: {UNSUPPORTED[name]}")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    argv = list(argv)
    if "--" in argv:
        k = argv.index("--")
        main_argv, target_argv = argv[:k], argv[k + 1:]
    else:
        main_argv, target_argv = argv, []
    main_argv, target_argv = _drop_ignored(main_argv), _drop_ignored(target_argv)
    _check_unsupported(main_argv + target_argv)
    args = _main_parser().parse_args(main_argv)
    t = _target_parser().parse_args(target_argv)
    for k in ("grpc_server_addr", "cpu_port", "drop_port", "priority_queues"):
        v = getattr(t, k)
        if v is not None:
            setattr(args, k, v)
    args.grpc_server_addr = args.grpc_server_addr or DEFAULT_GRPC_ADDR
    if args.pcap and args.pcap.endswith(".p4") and not args.program and not args.no_p4:
        args.program, args.pcap = args.pcap, "."   # `--pcap prog.p4`: the optional DIR was left out
    if args.program and args.no_p4:
        raise UsageError("give a program or --no-p4, not both")
    if not args.program and not args.no_p4:
        raise UsageError("give a P4 program, or --no-p4 to wait for one over P4Runtime")
    if args.program and args.program.endswith(".json"):
        src = _p4_for_json(args.program)
        if src is None:
            raise UsageError(f"{args.program}: this switch runs P4 source, not BMv2 JSON, and no "
                             f"{Path(args.program).stem}.p4 was found beside it; pass the .p4 program")
        print(f"saatp switch: running {src} (the source of {args.program})", file=sys.stderr)
        args.program = src
    if args.cpu_port is not None and not 0 < args.cpu_port < 511:
        raise UsageError(f"--cpu-port {args.cpu_port}: must be in 1..510 (0 is not valid, 511 is the drop port)")
    if not 0 < args.drop_port < 512:
        raise UsageError(f"--drop-port {args.drop_port}: must be in 1..511")
    if args.stats_interval < 0:
        raise UsageError(f"--stats-interval {args.stats_interval}: must be >= 0")
    if args.rx_batch < 1:
        raise UsageError(f"--rx-batch {args.rx_batch}: must be >= 1")
    if not 0 <= args.busy_poll_us <= 1e6:
        raise UsageError(f"--busy-poll-us {args.busy_poll_us:g}: must be between 0 and 1000000")
    if ":" not in args.grpc_server_addr:
        raise UsageError(f"--grpc-server-addr {args.grpc_server_addr}: expected HOST:PORT")
    try:
        args.queues = build_queues(args)
        if args.control_addr is not None:
            parse_addr(args.control_addr)
    except (QueueConfigError, ControlError) as e:
        raise UsageError(str(e)) from None
    return args


def build_queues(args: argparse.Namespace) -> EgressQueues | None:
    """The egress queues the command line asks for (None: no queue option and no control socket)."""
    rate, rates = parse_port_values(args.queue_rate, "--queue-rate", float)
    depth, depths = parse_port_values(args.queue_depth, "--queue-depth", int)
    if not (args.queue_rate or args.queue_depth or args.priority_queues or args.control_addr):
        return None
    q = EgressQueues(priorities=args.priority_queues or 1,
                     depth=DEFAULT_DEPTH if depth is None else depth, rate=rate or 0.0)
    for port, v in rates.items():
        q.set_rate(v, port)
    for port, v in depths.items():
        q.set_depth(v, port)
    return q


PORT_COUNTERS = ("rx", "forwarded", "pipeline", "error", "no_program", "tx", "tx_failed")
DEFAULT_RX_BATCH = 64
DEFAULT_BUSY_POLL_US = 200.0
SPIN_RATE_FACTOR = 4      # busy-poll above 1 / (busy_poll / 4) frames per second (20k/s by default)
LINK_CHECK_INTERVAL = 0.5
# frames kept for a port whose link refuses them while no egress queue holds the port
# (normally only what one batch produced; beyond this they count as tx_failed)
BACKLOG_LIMIT = 4096
# packets a port coming back from back-pressure may send before the loop looks at its link
# again (BMv2 keeps up to 128 in its output buffer between egress and the transmit thread)
LINK_BUDGET = 8


class BusyPoll:
    """When to busy-poll (see ``SwitchDaemon.busy_poll``): :meth:`arrived` is told of every
    batch read; while the mean time between frames (an EWMA over batches) is below
    ``span / SPIN_RATE_FACTOR``, ``until`` moves to ``span`` seconds after the last batch."""

    def __init__(self, span: float):
        self.span = span
        self.until = 0.0
        self.gap = 1.0              # mean seconds between frames
        self._last: float | None = None

    def arrived(self, now: float, frames: int) -> None:
        if self._last is not None:
            gap = min((now - self._last) / max(1, frames), 1.0)
            self.gap += (gap - self.gap) * 0.125
        self._last = now
        if self.gap * SPIN_RATE_FACTOR < self.span:
            self.until = now + self.span


class SwitchStats:
    """Per-port counters of the switch process (see the module docstring).

    ``rx``/``forwarded``/``pipeline``/``error``/``no_program`` count frames by the port they
    arrived on; ``tx``/``tx_failed`` by the port they left on (``tx_failed`` as the port saw
    it: a full socket buffer, nobody listening); ``rx_overflow`` is read from the kernel.
    """

    def __init__(self, ports: dict[int, Any], queues: Any = None):
        self.ports = ports
        self.queues = queues
        self.counts: dict[int, dict[str, int]] = {n: dict.fromkeys(PORT_COUNTERS, 0) for n in ports}
        self.no_egress_port = 0
        self.to_cpu = 0

    def snapshot(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for n, c in sorted(self.counts.items()):
            row = dict(c)
            p = self.ports[n]
            try:
                row["rx_overflow"] = int(p.rx_overflow())
            except Exception:  # noqa: BLE001 - a closed port keeps its last reading
                row["rx_overflow"] = 0
            ps = p.stats
            row["tx"] = int(ps.get("tx_frames", 0))
            row["tx_failed"] = int(ps.get("tx_dropped", 0))
            out[str(n)] = row
        snap = {"ports": out, "no_egress_port": self.no_egress_port, "to_cpu": self.to_cpu}
        q = self.queues
        if q is not None:   # egress queue drops count on the egress port
            for n, row in out.items():
                row["queue_drops"] = q.tail_drops.get(int(n), 0) + q.priority_drops.get(int(n), 0)
            snap["queues"] = q.stats()
        return snap


class SwitchDaemon:
    """The switch process's machinery, usable in-process by tests.

    ``ports`` maps port numbers to :class:`~host_agent.channels.FramePort` objects (already
    wrapped for pcap/impairments); ``switch`` is a compiled Switch or None (--no-p4).
    One event-loop thread reads all ports (see the module docstring).
    """

    def __init__(self, ports: dict[int, Any], switch: Any = None, *, device_id: int = 0,
                 cpu_port: int | None = None, grpc_addr: str | None = DEFAULT_GRPC_ADDR,
                 device_config: bytes = b"", trace: Callable[[str], None] | None = None,
                 compile_source: Callable[..., Any] | None = None, switch_kw: dict | None = None,
                 rx_batch: int = DEFAULT_RX_BATCH, queues: EgressQueues | None = None,
                 busy_poll_us: float = DEFAULT_BUSY_POLL_US):
        self.ports = dict(ports)
        # while frames come faster than one per busy_poll / SPIN_RATE_FACTOR on average, poll
        # the ports for busy_poll after each batch instead of sleeping in epoll (NAPI busy
        # polling's idea; no system call per check on PACKET_MMAP rings): a heavily loaded
        # switch never pays a wake-up per packet.  A lightly loaded one (a Mininet run whose
        # hosts need the CPU) sleeps as before.  0 turns it off.
        self.busy_poll = max(0.0, float(busy_poll_us)) / 1e6
        if cpu_port is not None and cpu_port in self.ports:
            raise ValueError(f"port {cpu_port} is the CPU port; do not attach an interface to it")
        self.trace = trace
        self.rx_batch = max(1, int(rx_batch))
        # egress queues (emulation/v1model/queues.py): the running switch goes through them
        # while any queue has a rate or there are priority queues (sync_queues)
        self.queues = queues
        self._queued = False
        self.stats = SwitchStats(self.ports, queues)
        # frames the pipeline emits on the loop thread, sent per port after each batch
        self._pending: dict[int, list[bytes]] = {}
        # back-pressure: frames a port's link refused, per port, sent when it is writable
        # again (the loop waits for POLLOUT on it; its egress queue is held meanwhile)
        self._backlog: dict[int, deque] = {}
        self._sel: selectors.BaseSelector | None = None
        self._loop_ident: int | None = None
        kw: dict[str, Any] = {"transmit": self._transmit, "switch_kw": switch_kw or {}}
        if compile_source is not None:
            kw["compile_source"] = compile_source
        self.device = Device(device_id=device_id, cpu_port=cpu_port, **kw)
        self.device.packet_in_listeners.append(self._count_packet_in)
        self.device.pipeline_listeners.append(self.sync_queues)
        if switch is not None:
            self.device.load_program(switch, device_config)
        self.server = None
        if grpc_addr:
            self.server = P4RuntimeServer(self.device, grpc_addr)
        self.stop_event = threading.Event()
        self.stop_reason = ""
        self._threads: list[threading.Thread] = []

    @property
    def grpc_address(self) -> str | None:
        return self.server.address if self.server else None

    def sync_queues(self) -> None:
        """Give the running switch the egress queues when shaping is on (called on pipeline
        changes and queue-setting changes); the event loop takes them away again once shaping
        is off and they are empty, so without shaping packets run to completion."""
        q = self.queues
        if q is None:
            return
        with self.device.lock:
            sw = self.device.switch
            if sw is None or sw.queues is q or not (q.shaping() or q.held):
                return
            q.flush()            # packets of a replaced pipeline cannot run its successor's egress
            sw.attach_queues(q)
            self._queued = True

    def _count_packet_in(self, _pin: Any) -> None:
        self.stats.to_cpu += 1

    def _transmit(self, port: int, frame: bytes) -> None:
        p = self.ports.get(port)
        if p is None:
            self.stats.no_egress_port += 1
            if self.trace:
                self.trace(bmv2_line("W", f"egress port {port} has no interface: frame of {len(frame)} bytes "
                                          f"dropped"))
            return
        if threading.get_ident() == self._loop_ident:
            q = self._pending.get(port)
            if q is None:
                self._pending[port] = [frame]
            else:
                q.append(frame)
            return
        try:  # a PacketOut from a P4Runtime thread: send right away
            p.send(frame)
        except Exception as e:  # PortClosed and friends
            self.request_stop(f"port {port} ({p.name}) failed on send: {e}")

    def _flush(self) -> None:
        pending, self._pending = self._pending, {}
        for port, frames in pending.items():
            backlog = self._backlog.get(port)
            if backlog is not None:           # the link is busy: behind what it refused
                self._add_backlog(port, backlog, frames)
                continue
            p = self.ports[port]
            try:
                n = p.send_some(frames)
                if n < len(frames) or p.tx_stalled():
                    self._wait_for_link(port, frames[n:])
            except Exception as e:  # PortClosed and friends
                self.request_stop(f"port {port} ({p.name}) failed on send: {e}")

    def _add_backlog(self, port: int, backlog: deque, frames: list[bytes]) -> None:
        room = BACKLOG_LIMIT - len(backlog)
        if len(frames) > room:                # only without queues to hold the port (see sync_queues)
            lost = len(frames) - max(room, 0)
            st = self.ports[port].stats
            st["tx_dropped"] = st.get("tx_dropped", 0) + lost
            frames = frames[:max(room, 0)]
        backlog.extend(frames)

    def _wait_for_link(self, port: int, rest: list[bytes]) -> None:
        """Back-pressure: ``port``'s link refused ``rest``.  Keep them, wait for POLLOUT on the
        port, and hold its egress queue so that packets for it queue up in the traffic manager
        (and see the real enq_qdepth) instead of in front of the link; other ports go on."""
        p = self.ports[port]
        fd = p.fileno()
        if fd is None or self._sel is None:   # cannot wait for this port: what it refused is lost
            st = p.stats
            st["tx_dropped"] = st.get("tx_dropped", 0) + len(rest)
            return
        self._backlog[port] = deque(rest)
        self._sel.modify(fd, selectors.EVENT_READ | selectors.EVENT_WRITE, port)
        q = self.queues
        if q is None:                         # no queue option given: BMv2's defaults, no rate
            q = self.queues = self.stats.queues = EgressQueues()
        with self.device.lock:
            q.hold(port)
            sw = self.device.switch
            if sw is not None and sw.queues is not q:
                q.flush()                     # anything left belongs to a replaced pipeline
                sw.attach_queues(q)           # queued path while some port is held
                self._queued = True

    def _link_writable(self, port: int) -> None:
        """POLLOUT on a port with a backlog: send what it takes; once all is gone, release
        its egress queue and stop waiting for POLLOUT."""
        backlog = self._backlog[port]
        p = self.ports[port]
        try:
            n = p.send_some(list(backlog))
        except Exception as e:  # PortClosed and friends
            self.request_stop(f"port {port} ({p.name}) failed on send: {e}")
            return
        for _ in range(n):
            backlog.popleft()
        if backlog or p.tx_stalled():
            return
        del self._backlog[port]
        fd = p.fileno()
        if fd is not None and self._sel is not None:
            self._sel.modify(fd, selectors.EVENT_READ, port)
        if self.queues is not None:
            with self.device.lock:
                self.queues.release(port, LINK_BUDGET)

    def _run_batch(self, num: int, frames: list[bytes]) -> None:
        c = self.stats.counts[num]
        c["rx"] += len(frames)
        if self._queued:
            self._run_each(num, frames, c)
        else:
            # run to completion: the whole batch under one acquisition of the device lock
            results = self.device.process_batch(num, frames)
            if results is None:
                c["no_program"] += len(frames)
            else:
                sent = failed = 0
                for out in results:
                    if type(out) is list:
                        if out:              # to a port or to the CPU
                            sent += 1
                    else:
                        failed += 1
                        self._packet_error(num, out, c)
                c["forwarded"] += sent
                c["pipeline"] += len(results) - sent - failed
        self._flush()

    def _run_each(self, num: int, frames: list[bytes], c: dict[str, int]) -> None:
        """One packet at a time, for the egress queues: a packet the pipeline handed to a
        queue counts as forwarded (the queue's ``offered`` moves) though nothing left yet."""
        dev, stats, q = self.device, self.stats, self.queues
        for f in frames:
            if dev.switch is None:
                c["no_program"] += 1
                continue
            cpu_before = stats.to_cpu
            offered = q.offered
            try:
                front = dev.process(num, f)
            except Exception as e:  # a P4 assertion or a target bug must not kill the switch
                self._packet_error(num, e, c)
                continue
            if front or stats.to_cpu != cpu_before or q.offered != offered:
                c["forwarded"] += 1
            else:
                c["pipeline"] += 1

    def _packet_error(self, num: int, e: BaseException, c: dict[str, int]) -> None:
        c["error"] += 1
        if c["error"] <= 3 or log.isEnabledFor(logging.DEBUG):
            log.warning("packet from port %d dropped: %s: %s", num, type(e).__name__, e)
        if self.trace:
            self.trace(bmv2_line("E", f"packet from port {num} dropped: {type(e).__name__}: {e}"))

    def _event_loop(self) -> None:
        self._loop_ident = threading.get_ident()
        sel = self._sel = selectors.DefaultSelector()
        polled: list[int] = []        # ports without a descriptor: read every turn
        for num, p in sorted(self.ports.items()):
            fd = p.fileno()
            if fd is None:
                polled.append(num)
            else:
                sel.register(fd, selectors.EVENT_READ, num)
        hot: set[int] = set(self.ports)   # read everything once at start
        limit = self.rx_batch
        next_check = time.monotonic() + LINK_CHECK_INTERVAL
        poll = BusyPoll(self.busy_poll)
        all_ports = set(self.ports)
        try:
            while not self.stop_event.is_set():
                if poll.until and time.monotonic() < poll.until:
                    hot = all_ports
                if hot:
                    timeout = 0.0
                elif polled:
                    timeout = 0.002
                else:
                    timeout = 0.2
                if self._queued:             # wake up when the next queued packet may leave
                    timeout = self._queue_timeout(timeout)
                ready = []
                for key, events in (sel.select(timeout) if sel.get_map() else ()):
                    if events & selectors.EVENT_WRITE:
                        self._link_writable(key.data)
                    if events & selectors.EVENT_READ:
                        ready.append(key.data)
                if not ready and not hot and not sel.get_map():
                    time.sleep(timeout)
                todo = set(ready) | hot | set(polled)
                hot = set()
                for num in sorted(todo):
                    p = self.ports[num]
                    try:
                        frames = p.recv_batch(limit)
                    except PortClosed as e:
                        if not self.stop_event.is_set():
                            self.request_stop(f"port {num} ({p.name}) went away: {e}")
                        return
                    if len(frames) >= limit:
                        hot.add(num)
                    if frames:
                        self._run_batch(num, frames)
                        if poll.span:
                            poll.arrived(time.monotonic(), len(frames))
                if self._queued:
                    self._drain_queues()
                now = time.monotonic()
                if now >= next_check:
                    next_check = now + LINK_CHECK_INTERVAL
                    for num, p in self.ports.items():
                        try:
                            p.check_link()
                        except PortClosed as e:
                            if not self.stop_event.is_set():
                                self.request_stop(f"port {num} ({p.name}) went away: {e}")
                            return
        except Exception as e:  # noqa: BLE001 - report, do not die silently
            log.exception("the switch's event loop failed")
            self.request_stop(f"event loop failed: {type(e).__name__}: {e}")
        finally:
            self._sel = None
            sel.close()

    def _queue_timeout(self, timeout: float) -> float:
        with self.device.lock:
            nd = self.queues.next_departure()
        if nd is None:
            return timeout
        return min(timeout, max(0.0, nd - time.monotonic()))

    def _drain_queues(self) -> None:
        """Egress for what the queues release now; sent like a batch's outputs.  A port that
        came back from back-pressure is released LINK_BUDGET packets at a time, and again
        as long as its link takes them, so packets wait in its queue rather than in front of
        its link."""
        q = self.queues
        while True:
            try:
                self.device.advance()
            except Exception as e:  # noqa: BLE001 - as in _run_batch: a failing packet must not stop the switch
                log.warning("egress of a queued packet failed: %s: %s", type(e).__name__, e)
            self._flush()
            spent = [p for p in q.held if p not in self._backlog]   # budget used, link not full
            if not spent:
                break
            with self.device.lock:
                for p in spent:
                    q.release(p, LINK_BUDGET)
        if not len(q) and not q.shaping() and not q.held:
            with self.device.lock:
                sw = self.device.switch
                if sw is not None and not len(q) and not q.shaping() and not q.held:
                    sw.attach_queues(None)
                    self._queued = False

    def request_stop(self, reason: str = "") -> None:
        if not self.stop_event.is_set():
            self.stop_reason = reason
            self.stop_event.set()

    def start(self) -> "SwitchDaemon":
        if self.server is not None:
            self.server.start()
        t = threading.Thread(target=self._event_loop, name="switch-io", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def wait(self, timeout: float | None = None) -> bool:
        return self.stop_event.wait(timeout)

    def stop(self) -> None:
        self.request_stop("stopped")
        if self.server is not None:
            self.server.stop(0.2)
        for t in self._threads:
            t.join(2)
        for port, backlog in self._backlog.items():   # refused by a busy link, never sent
            st = self.ports[port].stats
            st["tx_dropped"] = st.get("tx_dropped", 0) + len(backlog)
        self._backlog.clear()
        for p in self.ports.values():
            try:
                p.close()
            except Exception:  # noqa: BLE001 - closing must not fail the shutdown
                pass


def _compiler(allow_target_extensions: bool) -> Callable[..., Any] | None:
    """How programs a controller pushes are compiled: with or without p4c's BMv2 limits."""
    if not allow_target_extensions:
        return None
    return lambda text, filename, include_dirs, **kw: compile_source(text, filename, include_dirs,
                                                                     allow_target_extensions=True, **kw)


def _defines(items: Sequence[str]) -> dict[str, str]:
    return parse_defines(items)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def build_ports(args: argparse.Namespace) -> dict[int, Any]:
    specs: dict[int, str] = {}
    for item in args.interface:
        n, spec = parse_port_spec(item)
        if n in specs:
            raise PortError(f"port {n} is given twice")
        if args.cpu_port is not None and n == args.cpu_port:
            raise PortError(f"port {n} is the CPU port (--cpu-port); pick another number for {spec}")
        specs[n] = spec
    imps = {}
    for item in args.impair:
        num, sep, spec = item.partition(":")
        if not sep or not num.strip().isdigit():
            raise PortError(f"--impair {item!r}: expected PORT:SPEC, e.g. 2:loss=1%,delay=5ms")
        if int(num) not in specs:
            raise PortError(f"--impair {item!r}: port {num} is not attached with -i")
        imps[int(num)] = parse_impairment(spec)
    pcap_dir = None
    if args.pcap is not None:
        pcap_dir = Path(args.pcap)
        pcap_dir.mkdir(parents=True, exist_ok=True)
    ports: dict[int, Any] = {}
    try:
        for n, spec in sorted(specs.items()):
            p = open_port(spec)
            if pcap_dir is not None:
                base = _safe(p.name)
                p = PcapTap(p, PcapWriter(pcap_dir / f"{base}_in.pcap"), PcapWriter(pcap_dir / f"{base}_out.pcap"))
            if n in imps and imps[n].active:
                p = ImpairedPort(p, imps[n])
            ports[n] = p
    except Exception:
        for p in ports.values():
            p.close()
        raise
    return ports


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"saatp switch: error: {e}", file=sys.stderr)
        return 2
    level = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
             "error": logging.ERROR, "off": logging.CRITICAL + 1}[args.log_level or "info"]
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s: %(message)s")

    out_lock = threading.Lock()
    sinks: list[Any] = []
    if args.log_console:
        sinks.append(sys.stdout)
    if args.log_file:
        try:
            sinks.append(open(args.log_file, "a", buffering=1))
        except OSError as e:
            print(f"saatp switch: error: --log-file {args.log_file}: {e.strerror}", file=sys.stderr)
            return 2
    keep = trace_levels(args.log_level or "trace")

    def trace(line: str) -> None:
        # lines come whole, in BMv2's shape (emulation/v1model/trace.py); -L filters by level
        if line_level(line) not in keep:
            return
        line += "\n"
        with out_lock:
            for s in sinks:
                s.write(line)
                s.flush()
    trace_fn = trace if sinks and keep else None

    switch = None
    device_config = b""
    switch_kw: dict[str, Any] = {"drop_port": args.drop_port}
    if args.seed is not None:
        switch_kw["seed"] = args.seed
    if trace_fn is not None:
        switch_kw["log"] = trace_fn
    if args.program:
        try:
            switch = load_switch(args.program, include_dirs=args.include, defines=_defines(args.define),
                                 cpu_port=args.cpu_port, allow_target_extensions=args.allow_target_extensions,
                                 **switch_kw)
            device_config = Path(args.program).read_bytes()
        except P4Error as e:
            print(e, file=sys.stderr)
            return 1
        except OSError as e:
            print(f"saatp switch: error: {args.program}: {e.strerror or e}", file=sys.stderr)
            return 1

    try:
        ports = build_ports(args)
    except PortError as e:
        print(f"saatp switch: error: {e}", file=sys.stderr)
        return 2
    try:
        d = SwitchDaemon(ports, switch, device_id=args.device_id, cpu_port=args.cpu_port,
                         grpc_addr=args.grpc_server_addr, device_config=device_config, trace=trace_fn,
                         switch_kw=switch_kw, compile_source=_compiler(args.allow_target_extensions),
                         rx_batch=args.rx_batch, queues=args.queues, busy_poll_us=args.busy_poll_us)
    except (OSError, ValueError) as e:
        for p in ports.values():
            p.close()
        print(f"saatp switch: error: {e}", file=sys.stderr)
        return 2

    stats_wanted = threading.Event()

    def print_stats() -> None:
        print("saatp switch: stats " + json.dumps(d.stats.snapshot(), separators=(",", ":")), flush=True)

    def on_signal(signum: int, _frame: Any) -> None:
        if signum == getattr(signal, "SIGUSR1", None):
            stats_wanted.set()
            return
        d.request_stop(f"received {signal.Signals(signum).name}")
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGUSR1", None)):
        if sig is None:
            continue
        try:
            old[sig] = signal.signal(sig, on_signal)
        except ValueError:  # not the main thread (embedded use): the caller stops us
            pass
    control = None
    try:
        d.start()
        if args.control_addr is not None:
            try:
                control = ControlServer(args.control_addr, SwitchCommands(
                    d.queues, d.device.lock, changed=d.sync_queues, stats=d.stats.snapshot)).start()
            except ControlError as e:
                print(f"saatp switch: error: {e}", file=sys.stderr)
                return 2
        names = ", ".join(f"{n}@{p.name}" for n, p in sorted(ports.items())) or "none"
        extra = f", control on {control.address}" if control is not None else ""
        print(f"saatp switch: device {args.device_id}, ports {names}, cpu port {args.cpu_port}, "
              f"P4Runtime on {d.grpc_address}{extra}, program {args.program or '(none: --no-p4)'}", flush=True)
        tick = 0.5 if not args.stats_interval else min(0.5, args.stats_interval)
        next_stats = time.monotonic() + args.stats_interval if args.stats_interval else None
        while not d.wait(tick):
            if args.exit_with_parent is not None and os.getppid() != args.exit_with_parent:
                d.request_stop(f"process {args.exit_with_parent}, which started this switch, is gone")
            if stats_wanted.is_set():
                stats_wanted.clear()
                print_stats()
            if next_stats is not None and time.monotonic() >= next_stats:
                next_stats += args.stats_interval
                print_stats()
    finally:
        if control is not None:
            control.stop()
        d.stop()
        print_stats()
        for s, h in old.items():
            signal.signal(s, h)
        for s in sinks:
            if s is not sys.stdout:
                s.close()
    print(f"saatp switch: stopped ({d.stop_reason})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
