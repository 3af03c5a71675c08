"""Command lines of the P4 switch processes, as pure functions (testable without Mininet).

Both follow ``simple_switch_grpc``'s shape, which the p4lang tutorials and p4-utils use::

    simple_switch_grpc -i 1@s1-eth1 -i 2@s1-eth2 --device-id 0 [--pcap DIR]
        [--log-console | --log-file FILE] [--thrift-port N] PROGRAM.json|--no-p4
        -- --grpc-server-addr 127.0.0.1:50051 [--cpu-port 255]

``saatp switch`` takes the same options (it runs the P4 *source*, not p4c's JSON, has no
Thrift server, and adds ``--impair PORT:SPEC`` for loss/delay/rate on what a port sends,
``--queue-rate PORT:PPS`` / ``--queue-depth PORT:N`` for its egress queues and
``--control-addr`` for ``saatp switch-cli``).  BMv2 gets queue settings at run time through
``simple_switch_CLI --thrift-port N`` (``set_queue_rate PPS PORT``), see
:func:`bmv2_queue_commands`, and programs from ``p4c-bm2-ss`` (:func:`p4c_command`).
"""
from __future__ import annotations

import shutil
import sys
from typing import Mapping, Sequence


def _ports(intfs: Mapping[int, str]) -> list[str]:
    out: list[str] = []
    for port, name in sorted(intfs.items()):
        if not isinstance(port, int) or not 0 < port < 511:
            raise ValueError(f"switch port {port!r} must be an integer in 1..510")
        if not name or any(c.isspace() for c in name) or "@" in name:
            raise ValueError(f"bad interface name {name!r}")
        out += ["-i", f"{port}@{name}"]
    return out


def _common(intfs: Mapping[int, str], device_id: int, pcap_dir: str | None, log_console: bool,
            log_file: str | None) -> list[str]:
    if device_id < 0:
        raise ValueError(f"device id must be >= 0, got {device_id}")
    args = _ports(intfs) + ["--device-id", str(device_id)]
    if pcap_dir:
        args += ["--pcap", str(pcap_dir)]
    if log_console:
        args.append("--log-console")
    elif log_file:
        args += ["--log-file", str(log_file)]
    return args


def _target(grpc_port: int, cpu_port: int | None, grpc_host: str = "127.0.0.1") -> list[str]:
    if not 0 < grpc_port < 65536:
        raise ValueError(f"gRPC port {grpc_port} out of range")
    if cpu_port is not None and not 0 < cpu_port < 511:
        raise ValueError(f"CPU port {cpu_port} must be in 1..510")
    args = ["--", "--grpc-server-addr", f"{grpc_host}:{grpc_port}"]
    if cpu_port is not None:
        args += ["--cpu-port", str(cpu_port)]
    return args


def saatp_switch_command(intfs: Mapping[int, str], *, program: str | None, grpc_port: int,
                         device_id: int = 0, cpu_port: int | None = None, pcap_dir: str | None = None,
                         log_console: bool = False, log_file: str | None = None,
                         impair: Mapping[int, str] | None = None, include_dirs: Sequence[str] = (),
                         log_level: str | None = None, seed: int | None = None,
                         python: str | None = None, queue_rate: Mapping[int, float] | None = None,
                         queue_depth: int | None = None, control_port: int | None = None,
                         stats_interval: float | None = None, busy_poll_us: float | None = None) -> list[str]:
    """``python -m emulation.cli switch ...`` for the given ports and options (``busy_poll_us``:
    the switch's ``--busy-poll-us``; None leaves its default)."""
    if cpu_port is not None and cpu_port in intfs:
        raise ValueError(f"port {cpu_port} is both the CPU port and an interface")
    args = [python or sys.executable, "-m", "emulation.cli", "switch"]
    args += _common(intfs, device_id, pcap_dir, log_console, log_file)
    for port, spec in sorted((impair or {}).items()):
        if port not in intfs:
            raise ValueError(f"impairment on port {port}, which has no interface")
        if spec:
            args += ["--impair", f"{port}:{spec}"]
    for port, pps in sorted((queue_rate or {}).items()):
        if port not in intfs:
            raise ValueError(f"queue rate on port {port}, which has no interface")
        if not pps > 0:
            raise ValueError(f"queue rate {pps!r} on port {port}: expected packets/s > 0")
        args += ["--queue-rate", f"{port}:{pps:g}"]
    if queue_depth is not None:
        if queue_depth < 1:
            raise ValueError(f"queue depth {queue_depth}: expected >= 1 packet")
        args += ["--queue-depth", str(int(queue_depth))]
    if control_port is not None:
        args += ["--control-addr", f"127.0.0.1:{int(control_port)}"]
    if stats_interval:
        args += ["--stats-interval", f"{stats_interval:g}"]
    if busy_poll_us is not None:
        args += ["--busy-poll-us", f"{busy_poll_us:g}"]
    for d in include_dirs:
        args += ["-I", str(d)]
    if log_level:
        args += ["-L", log_level]
    if seed is not None:
        args += ["--seed", str(seed)]
    args.append(program if program else "--no-p4")
    return args + _target(grpc_port, cpu_port)


def bmv2_command(intfs: Mapping[int, str], *, json_path: str | None, grpc_port: int, device_id: int = 0,
                 cpu_port: int | None = None, pcap_dir: str | None = None, log_console: bool = False,
                 log_file: str | None = None, thrift_port: int | None = None,
                 sw_path: str = "simple_switch_grpc") -> list[str]:
    """``simple_switch_grpc ...`` (BMv2) for the given ports and options."""
    if json_path is not None and json_path.endswith(".p4"):
        raise ValueError(f"{json_path}: BMv2 runs p4c's JSON output (p4c-bm2-ss), not P4 source")
    if cpu_port is not None and cpu_port in intfs:
        raise ValueError(f"port {cpu_port} is both the CPU port and an interface")
    args = [sw_path] + _common(intfs, device_id, pcap_dir, log_console, log_file)
    if thrift_port is not None:
        args += ["--thrift-port", str(thrift_port)]
    args.append(json_path if json_path else "--no-p4")
    return args + _target(grpc_port, cpu_port)


def bmv2_binary(sw_path: str = "simple_switch_grpc") -> str | None:
    return shutil.which(sw_path)


def bmv2_queue_commands(queue_rate: Mapping[int, float], queue_depth: int | None = None) -> list[str]:
    """``simple_switch_CLI`` lines that give BMv2 the same egress queues (its sswitch_CLI
    commands ``set_queue_depth <nb_pkts> [<egress_port>]`` and ``set_queue_rate <rate_pps>
    [<egress_port>]``; BMv2 takes whole packets per second)."""
    lines = []
    for port, pps in sorted(queue_rate.items()):
        if queue_depth is not None:
            lines.append(f"set_queue_depth {int(queue_depth)} {port}")
        lines.append(f"set_queue_rate {max(1, round(pps))} {port}")
    return lines


def p4c_command(source: str, build_dir: str, p4c: str = "p4c-bm2-ss") -> tuple[list[str], str, str]:
    """The p4lang tutorials' compile step for BMv2 (their Makefile):
    ``p4c-bm2-ss --p4v 16 --p4runtime-files BUILD/NAME.p4.p4info.txtpb -o BUILD/NAME.json NAME.p4``.
    Returns (argv, the JSON path, the P4Info path)."""
    from pathlib import Path
    src = Path(source)
    if src.suffix != ".p4":
        raise ValueError(f"{source}: p4c-bm2-ss compiles P4 source (.p4)")
    b = Path(build_dir)
    json_path, p4info = b / f"{src.stem}.json", b / f"{src.stem}.p4.p4info.txtpb"
    return ([p4c, "--p4v", "16", "--p4runtime-files", str(p4info), "-o", str(json_path), str(src)],
            str(json_path), str(p4info))


def p4c_binary(p4c: str = "p4c-bm2-ss") -> str | None:
    return shutil.which(p4c)
