"""``saatp switch`` / ``saatp-switch``: the switch process, shaped like BMv2's ``simple_switch_grpc``.

    saatp-switch [-i PORT@IFACE]... [--device-id N] [--cpu-port N] [--pcap [DIR]]
                 [--log-console] [--log-file FILE] [-L LEVEL] [-I DIR]... [-D NAME[=V]]...
                 [--impair PORT:SPEC]... [--seed N]
                 (PROGRAM.p4 | --no-p4) [-- --grpc-server-addr HOST:PORT] [--cpu-port N] [--drop-port N]

Port kinds (``-i N@SPEC``):

* ``N@IFACE`` a Linux interface through a raw packet socket (root; Mininet links,
  veths, NICs; our own transmissions are ignored; turn offloads off, see
  ``emulation/ports/raw.py``);
* ``N@udp:LOCAL_PORT:REMOTE_HOST:REMOTE_PORT`` a UDP tunnel, one Ethernet frame per
  datagram (no root needed);

``--pcap DIR`` writes ``<port name>_in.pcap`` and ``<port name>_out.pcap`` per port, as
BMv2 does.  ``--impair 2:loss=1%,delay=5ms,seed=3`` impairs what port 2 sends (see
``emulation/ports/impair.py``).  The program is P4 source (BMv2 would take the JSON that
p4c writes); with ``--no-p4`` the switch waits for ``SetForwardingPipelineConfig``.

The process stops cleanly (exit status 0) on SIGINT or SIGTERM, and when an interface
disappears (exit status 0, with a message); bad options exit with status 2, a program
that does not compile with status 1.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

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
    "--priority-queues": "priority queues are not modelled",
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
    ap.add_argument("-L", "--log-level", default="info",
                    choices=["trace", "debug", "info", "warn", "error", "off"])
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    ap.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]")
    ap.add_argument("--impair", action="append", default=[], metavar="PORT:SPEC",
                    help="impair what PORT sends, e.g. 2:loss=1%%,delay=5ms,jitter=1ms,rate=10mbit,seed=7")
    ap.add_argument("--seed", type=int, default=None, help="seed for the target's random externs")
    ap.add_argument("--grpc-server-addr", default=None, help=argparse.SUPPRESS)
    return ap


def _target_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="saatp switch ... --", add_help=False)
    ap.add_argument("--grpc-server-addr", default=None)
    ap.add_argument("--cpu-port", type=int, default=None)
    ap.add_argument("--drop-port", type=int, default=None)
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
    for k in ("grpc_server_addr", "cpu_port", "drop_port"):
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
    if ":" not in args.grpc_server_addr:
        raise UsageError(f"--grpc-server-addr {args.grpc_server_addr}: expected HOST:PORT")
    return args


class SwitchDaemon:
    """The switch process's machinery, usable in-process by tests.

    ``ports`` maps port numbers to :class:`~emulation.ports.FramePort` objects (already
    wrapped for pcap/impairments); ``switch`` is a compiled Switch or None (--no-p4).
    """

    def __init__(self, ports: dict[int, Any], switch: Any = None, *, device_id: int = 0,
                 cpu_port: int | None = None, grpc_addr: str | None = DEFAULT_GRPC_ADDR,
                 device_config: bytes = b"", trace: Callable[[str], None] | None = None,
                 compile_source: Callable[..., Any] | None = None, switch_kw: dict | None = None):
        from emulation.p4runtime.device import Device
        self.ports = dict(ports)
        if cpu_port is not None and cpu_port in self.ports:
            raise ValueError(f"port {cpu_port} is the CPU port; do not attach an interface to it")
        self.trace = trace
        kw: dict[str, Any] = {"transmit": self._transmit, "switch_kw": switch_kw or {}}
        if compile_source is not None:
            kw["compile_source"] = compile_source
        self.device = Device(device_id=device_id, cpu_port=cpu_port, **kw)
        if switch is not None:
            self.device.load_program(switch, device_config)
        self.server = None
        if grpc_addr:
            from emulation.p4runtime.server import P4RuntimeServer
            self.server = P4RuntimeServer(self.device, grpc_addr)
        self.stop_event = threading.Event()
        self.stop_reason = ""
        self._threads: list[threading.Thread] = []

    @property
    def grpc_address(self) -> str | None:
        return self.server.address if self.server else None

    def _transmit(self, port: int, frame: bytes) -> None:
        p = self.ports.get(port)
        if p is None:
            if self.trace:
                self.trace(f"egress port {port} has no interface: frame of {len(frame)} bytes dropped")
            return
        if self.trace:
            self.trace(f"port {port} out: {len(frame)} bytes")
        try:
            p.send(frame)
        except Exception as e:  # PortClosed and friends
            self.request_stop(f"port {port} ({p.name}) failed on send: {e}")

    def _rx_loop(self, num: int, port: Any) -> None:
        from emulation.ports import PortClosed
        while not self.stop_event.is_set():
            try:
                f = port.recv(0.2)
            except PortClosed as e:
                if not self.stop_event.is_set():
                    self.request_stop(f"port {num} ({port.name}) went away: {e}")
                return
            if f is None:
                continue
            # run the pipeline on this thread: the device lock serialises packets, and
            # skipping a hand-over to a worker thread roughly doubles the packet rate
            self._process(num, f)

    def _process(self, num: int, frame: bytes) -> None:
        if self.trace:
            self.trace(f"port {num} in: {len(frame)} bytes")
        try:
            self.device.process(num, frame)
        except Exception as e:  # a P4 assertion or a target bug must not kill the switch
            log.exception("packet processing failed")
            if self.trace:
                self.trace(f"packet from port {num} dropped: {type(e).__name__}: {e}")

    def request_stop(self, reason: str = "") -> None:
        if not self.stop_event.is_set():
            self.stop_reason = reason
            self.stop_event.set()

    def start(self) -> "SwitchDaemon":
        if self.server is not None:
            self.server.start()
        for num, p in sorted(self.ports.items()):
            t = threading.Thread(target=self._rx_loop, args=(num, p), name=f"rx-{num}", daemon=True)
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
        for p in self.ports.values():
            try:
                p.close()
            except Exception:  # noqa: BLE001 - closing must not fail the shutdown
                pass


def _defines(items: Sequence[str]) -> dict[str, str]:
    from emulation.p4.preprocess import parse_defines
    return parse_defines(items)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def build_ports(args: argparse.Namespace) -> dict[int, Any]:
    from emulation.ports import ImpairedPort, PcapTap, PcapWriter, PortError, open_port, parse_impairment, \
        parse_port_spec
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
             "error": logging.ERROR, "off": logging.CRITICAL + 1}[args.log_level]
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
    t0 = time.monotonic()

    def trace(msg: str) -> None:
        line = f"[{time.monotonic() - t0:10.6f}] {msg}\n"
        with out_lock:
            for s in sinks:
                s.write(line)
                s.flush()
    trace_fn = trace if sinks else None

    switch = None
    device_config = b""
    switch_kw: dict[str, Any] = {"drop_port": args.drop_port}
    if args.seed is not None:
        switch_kw["seed"] = args.seed
    if trace_fn is not None:
        switch_kw["log"] = trace_fn
    if args.program:
        try:
            from emulation.p4.errors import P4Error
        except ImportError:  # pragma: no cover - front end missing
            P4Error = Exception  # type: ignore[misc,assignment]
        try:
            from emulation.v1model.switch import Switch
            switch = Switch.from_file(args.program, include_dirs=args.include, defines=_defines(args.define),
                                      cpu_port=args.cpu_port, **switch_kw)
            device_config = Path(args.program).read_bytes()
        except P4Error as e:
            print(e, file=sys.stderr)
            return 1
        except OSError as e:
            print(f"saatp switch: error: {args.program}: {e.strerror or e}", file=sys.stderr)
            return 1
        except ImportError as e:
            print(f"saatp switch: error: the P4 compiler is not available: {e}", file=sys.stderr)
            return 1

    from emulation.ports import PortError
    try:
        ports = build_ports(args)
    except PortError as e:
        print(f"saatp switch: error: {e}", file=sys.stderr)
        return 2
    try:
        d = SwitchDaemon(ports, switch, device_id=args.device_id, cpu_port=args.cpu_port,
                         grpc_addr=args.grpc_server_addr, device_config=device_config, trace=trace_fn,
                         switch_kw=switch_kw)
    except (OSError, ValueError) as e:
        for p in ports.values():
            p.close()
        print(f"saatp switch: error: {e}", file=sys.stderr)
        return 2

    def on_signal(signum: int, _frame: Any) -> None:
        d.request_stop(f"received {signal.Signals(signum).name}")
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            old[sig] = signal.signal(sig, on_signal)
        except ValueError:  # not the main thread (embedded use): the caller stops us
            pass
    try:
        d.start()
        names = ", ".join(f"{n}@{p.name}" for n, p in sorted(ports.items())) or "none"
        print(f"saatp switch: device {args.device_id}, ports {names}, cpu port {args.cpu_port}, "
              f"P4Runtime on {d.grpc_address}, program {args.program or '(none: --no-p4)'}", flush=True)
        while not d.wait(0.5):
            pass
    finally:
        d.stop()
        for s, h in old.items():
            signal.signal(s, h)
        for s in sinks:
            if s is not sys.stdout:
                s.close()
    print(f"saatp switch: stopped ({d.stop_reason})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
