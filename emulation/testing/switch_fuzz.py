"""Robustness fuzzing of the ``saatp switch`` process: random and mutated frames through its ports.

For each program, a switch process runs with ports 0..N-1 as UDP tunnels and the program's
control-plane commands (its ``.stf`` file's ``add``/``setdefault`` lines, sent over
P4Runtime).  The same program runs in-process (:class:`~emulation.v1model.switch.Switch`)
as the reference, with the same commands.  Frames go in chunks, each chunk on one random
ingress port; after each chunk the fuzzer waits until the process has processed every frame
(its counters, asked for with SIGUSR1) and has sent what the reference says it must, then
checks:

* the process is alive, and ``forwarded + pipeline + error + no_program`` grew by the
  number of frames sent (every frame is processed and counted; the kernel dropped none:
  ``rx_overflow`` stays 0, or the run stops and reports it);
* the frames that came out of each port are exactly (as a multiset) the frames the reference
  emits on that port; frames for ports without an interface are counted in
  ``no_egress_port``; a frame the reference fails on (a target error) is counted in ``error``;
* at the end every port still works (a probe frame on each port is received and counted).

Frames: random bytes (lengths 0..9000), and seeds (the program's STF packets, plus a few
IPv4/UDP/TCP/ARP/IPv6 frames and, for the SA-ATP program, protocol frames of a job that
:func:`saatp_job` configures on both switches) mutated by bit flips, byte writes, truncation,
extension and interesting values at header offsets.
"""
from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulation.stf.runner import apply_commands
from emulation.v1model.load import load_switch
from host_agent.channels.udp import UdpTunnelPort
from host_agent.free_ports import free_udp_ports

from .switch_process import SwitchProcess

MAX_LEN = 9000
STATS_INTERVAL = 0.005     # s: the switch prints its counters this often; the fuzzer syncs on them
OUTPUT_GRACE = 1.0         # s: how long outputs may trail the counters of the frames that made them
_CONTROL = re.compile(r"^\s*(add|setdefault|mc_|mirroring_|register_write|counter_write)", re.IGNORECASE)


class FuzzFailure(AssertionError):
    """The switch process did something the program does not say, or stopped working."""


@dataclass
class FuzzReport:
    program: str
    frames: int = 0
    bytes_in: int = 0
    outputs: int = 0
    forwarded: int = 0
    dropped_by_program: int = 0
    target_errors: int = 0
    no_egress_port: int = 0
    seconds: float = 0.0
    lengths: Counter = field(default_factory=Counter)   # length bucket -> frames

    def line(self) -> str:
        rate = self.frames / self.seconds if self.seconds else 0.0
        return (f"{self.program}: {self.frames} frames ({self.bytes_in / 1e6:.1f} MB) in {self.seconds:.1f} s "
                f"({rate:.0f}/s): forwarded {self.forwarded}, dropped by the program {self.dropped_by_program}, "
                f"target errors {self.target_errors}, outputs {self.outputs}, "
                f"to ports without interface {self.no_egress_port}; all checked")


# ------------------------------------------------------------------ frames
def stf_control(stf: Path) -> str:
    return "\n".join(ln for ln in stf.read_text().splitlines() if _CONTROL.match(ln)) if stf.exists() else ""


def stf_packets(stf: Path) -> list[bytes]:
    out = []
    if stf.exists():
        for ln in stf.read_text().splitlines():
            m = re.match(r"\s*packet\s+\d+\s+(.*)", ln, re.IGNORECASE)
            if m:
                try:
                    out.append(bytes.fromhex("".join(m.group(1).split("#")[0].split())))
                except ValueError:
                    pass
    return out


def generic_seeds() -> list[bytes]:
    from scapy.all import ARP, IP, TCP, UDP, Ether, IPv6
    e = Ether(dst="00:00:00:00:01:00", src="00:00:00:00:00:aa")
    seeds = [e / IP(dst="10.0.1.5") / UDP(sport=1, dport=2) / (b"p" * 18),
             e / IP(dst="10.0.2.3", options=[]) / TCP() / b"x",
             e / ARP(pdst="10.0.0.1"), e / IPv6(dst="::1") / UDP(), e / IP(ihl=15) / (b"\x01" * 40)]
    try:
        from host_agent.protocol.layout import SA_PORT
        from host_agent.protocol.scapy_layer import scapy_layer
        sa = scapy_layer()
        seeds += [e / IP(dst="10.0.0.1") / UDP(sport=SA_PORT, dport=SA_PORT) / sa(),
                  e / IP(dst="10.0.0.2") / UDP(dport=SA_PORT) / bytes(sa())[:7]]
    except Exception:   # noqa: BLE001 - the protocol layer is optional for the fuzzer
        pass
    return [bytes(s) for s in seeds]


INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF)
HEADER_OFFSETS = (12, 13, 14, 22, 23, 24, 25, 34, 35, 36, 37, 42, 43)   # ethertype, IP ver/ihl, ttl, proto...


def mutate(rng: random.Random, seed: bytes) -> bytes:
    b = bytearray(seed)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        if op == 0 and b:                        # flip bits
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:                      # write a random byte
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 2:                            # truncate
            del b[rng.randint(0, len(b)):]
        elif op == 3:                            # extend
            b += rng.randbytes(rng.randint(1, max(1, min(2000, MAX_LEN - len(b)))))
        elif op == 4 and b:                      # interesting value at a header offset
            i = rng.choice(HEADER_OFFSETS)
            if i < len(b):
                b[i] = rng.choice(INTERESTING)
        elif op == 5:                            # a long frame
            b += bytes(rng.randint(0, MAX_LEN - len(b))) if len(b) < MAX_LEN else b""
    return bytes(b[:MAX_LEN])


def random_frame(rng: random.Random) -> bytes:
    r = rng.random()
    n = rng.randint(0, 64) if r < 0.5 else rng.randint(64, 1514) if r < 0.8 else rng.randint(1514, MAX_LEN)
    return rng.randbytes(n)


def frames(rng: random.Random, seeds: list[bytes], n: int) -> list[bytes]:
    return [random_frame(rng) if not seeds or rng.random() < 0.25 else mutate(rng, rng.choice(seeds))
            for _ in range(n)]


# ------------------------------------------------------------------ control plane
class P4RuntimeControl:
    """The part of the ``Switch`` control-plane API that the STF runner's control commands and
    the SA-ATP controller use, done over P4Runtime on the switch process (``reference``: the
    in-process switch, for what P4Runtime does not tell, such as register sizes)."""

    def __init__(self, client: Any, reference: Any):
        self.client = client
        self.reference = reference
        self.program = reference.program

    def table_add(self, table: str, action: str, match: Any, args: Any = (), priority: int | None = None) -> int:
        if not isinstance(match, dict):           # key order, as Switch.table_add takes it
            t = self.client._idx().get("table", table)
            match = {m.name: v for m, v in zip(t.match_fields, match)}
        self.client.insert(table, match, action, args, priority or 0)
        return 0

    def table_set_default(self, table: str, action: str, args: Any = ()) -> None:
        self.client.set_default(table, action, args)

    def mc_set_group(self, mgid: int, replicas: Any) -> None:
        self.client.multicast_group(mgid, list(replicas))

    def register(self, name: str) -> Any:
        return self.reference.register(name)


def saatp_job(sw: Any) -> list[bytes]:
    """Configure an SA-ATP job (3 workers on ports 1..3, no straggler timer: the run must not
    depend on time) with the project's controller; returns seed frames of that job."""
    from scapy.all import IP, UDP, Ether

    from host_agent.constants import DEFAULT_K, SWITCH_IP, SWITCH_MAC
    from host_agent.controller import Controller, JobSpec
    from host_agent.protocol.layout import F_PAYLOAD, SA_PORT
    from host_agent.protocol.scapy_layer import scapy_layer
    c = Controller(sw)
    for port in (1, 2, 3):
        c.add_host(port, f"02:00:00:00:00:0{port}", f"10.0.0.{port}")
    c.configure_job(JobSpec(job=1, ports={0: 1, 1: 2, 2: 3}, nworkers=3, t_s=None))
    sa = scapy_layer()
    seeds = []
    for wid in range(3):
        for slot in (0, 1, 5):
            for typ in range(4):
                for payload in (b"", bytes(range(256)) * (4 * DEFAULT_K // 256)):
                    hdr = sa(type=typ, flags=F_PAYLOAD if payload else 0, job=1, wid=wid, nworkers=3,
                             slot=slot, seq=slot, nvalid=4)
                    seeds.append(bytes(Ether(dst=SWITCH_MAC, src=f"02:00:00:00:00:0{wid + 1}")
                                       / IP(src=f"10.0.0.{wid + 1}", dst=SWITCH_IP)
                                       / UDP(sport=SA_PORT, dport=SA_PORT) / hdr / payload))
    return seeds


# programs whose fuzzing needs a control-plane set-up beyond their .stf: name -> set-up
# (called on the reference switch and on the process's P4RuntimeControl; returns seeds)
SETUPS: dict[str, Callable[[Any], list[bytes]]] = {"saatp.p4": saatp_job}


# ------------------------------------------------------------------ the run
def _length_bucket(n: int) -> str:
    return "0" if n == 0 else "1-63" if n < 64 else "64-1514" if n <= 1514 else "1515-9000"


def fuzz_program(program: Path, n_frames: int, *, seed: int = 1, n_ports: int = 6, chunk: int = 512,
                 progress: Callable[[str], None] | None = None, sync_timeout: float = 20.0,
                 reference_only_commands: str = "") -> FuzzReport:
    """Fuzz one program (see the module docstring); raises :class:`FuzzFailure`.
    ``reference_only_commands``: STF control lines given to the reference only (a test of
    the checker: the process must then be caught disagreeing)."""
    rng = random.Random(seed)
    stf = program.with_suffix(".stf")
    control = stf_control(stf)
    seeds = stf_packets(stf) + generic_seeds()
    ref = load_switch(str(program))
    if control or reference_only_commands:
        apply_commands(ref, control + "\n" + reference_only_commands, str(stf))
    setup = SETUPS.get(program.name)
    if setup is not None:
        seeds += setup(ref)
    udp = free_udp_ports(2 * n_ports)
    specs = {i: f"udp:{udp[2 * i]}:127.0.0.1:{udp[2 * i + 1]}" for i in range(n_ports)}
    ours = {i: UdpTunnelPort(udp[2 * i + 1], "127.0.0.1", udp[2 * i]) for i in range(n_ports)}
    report = FuzzReport(program.name)
    try:
        with SwitchProcess(program, specs, extra_args=["--stats-interval", str(STATS_INTERVAL)]) as sw:
            if control or setup is not None:
                from host_agent.p4runtime.client import P4RuntimeClient
                with P4RuntimeClient(sw.grpc_address, device_id=0, election_id=1) as c:
                    c.load_p4info()
                    if control:
                        apply_commands(P4RuntimeControl(c, ref), control, str(stf))
                    if setup is not None:
                        setup(P4RuntimeControl(c, ref))
            base = last = sw.next_stats()
            t0 = time.monotonic()
            sent = 0
            while sent < n_frames:
                batch = frames(rng, seeds, min(chunk, n_frames - sent))
                port = rng.randrange(n_ports)
                last = _check_chunk(sw, ref, ours, port, batch, report, sync_timeout, last)
                sent += len(batch)
                if progress and sent // 50000 != (sent - len(batch)) // 50000:
                    progress(f"{program.name}: {sent}/{n_frames} frames, {time.monotonic() - t0:.0f} s")
            report.seconds = time.monotonic() - t0
            _check_ports_alive(sw, ours, report)
            end = sw.next_stats()
            if end["no_egress_port"] - base["no_egress_port"] != report.no_egress_port:
                raise FuzzFailure(f"{program.name}: {end['no_egress_port'] - base['no_egress_port']} frames "
                                  f"to ports without interface, the program sent {report.no_egress_port}")
            if not sw.alive():
                raise FuzzFailure(f"{program.name}: the switch process exited")
    finally:
        for p in ours.values():
            p.close()
    return report


def _processed(st: dict, port: int) -> tuple[int, int, int, int]:
    c = st["ports"][str(port)]
    return c["forwarded"] + c["pipeline"] + c["error"] + c["no_program"], c["forwarded"], c["error"], c["rx_overflow"]


def _check_chunk(sw: SwitchProcess, ref: Any, ours: dict, port: int, batch: list[bytes], report: FuzzReport,
                 timeout: float, before: dict) -> dict:
    want: dict[int, Counter] = {p: Counter() for p in ours}
    n_fwd = n_err = n_noif = 0
    for f in batch:
        try:
            out = ref.process(port, f)
        except Exception:   # noqa: BLE001 - the process counts these as "error"
            n_err += 1
            continue
        if out:
            n_fwd += 1
        for p, b in out:
            if p in want:
                want[p][b] += 1
            else:
                n_noif += 1
    for f in batch:
        ours[port].send(f)
        report.lengths[_length_bucket(len(f))] += 1
    n_out = sum(sum(c.values()) for c in want.values())
    got: dict[int, Counter] = {p: Counter() for p in ours}
    got_n = 0
    end = time.monotonic() + timeout
    p0, f0, e0, o0 = _processed(before, port)
    done_at = 0.0
    while True:
        for p, q in ours.items():
            while True:
                fr = q.recv(0)
                if fr is None:
                    break
                got[p][fr] += 1
                got_n += 1
        st = sw.next_stats()
        p1, f1, e1, o1 = _processed(st, port)
        if o1 != o0:
            raise FuzzFailure(f"{report.program}: the kernel dropped {o1 - o0} frames before the switch read "
                              f"them (rx_overflow): lower the chunk size")
        if p1 - p0 >= len(batch):
            # every frame processed: its outputs are on their way (or missing: checked below)
            if got_n >= n_out:
                break
            done_at = done_at or time.monotonic()
            if time.monotonic() - done_at > OUTPUT_GRACE:
                break
        if not sw.alive():
            raise FuzzFailure(f"{report.program}: the switch process exited:\n" + "\n".join(sw.output[-20:]))
        if time.monotonic() > end:
            raise FuzzFailure(f"{report.program}: port {port} stuck: {p1 - p0} of {len(batch)} frames processed, "
                              f"{got_n} of {n_out} outputs received in {timeout} s")
    time.sleep(0.002)
    for p, q in ours.items():          # anything late and extra
        while (fr := q.recv(0)) is not None:
            got[p][fr] += 1
    if p1 - p0 != len(batch):
        raise FuzzFailure(f"{report.program}: {p1 - p0} frames processed on port {port}, {len(batch)} sent")
    if (f1 - f0, e1 - e0) != (n_fwd, n_err):
        raise FuzzFailure(f"{report.program}: port {port}: forwarded {f1 - f0} / errors {e1 - e0}, "
                          f"the program says {n_fwd} / {n_err}")
    for p in ours:
        if got[p] != want[p]:
            extra = sum((got[p] - want[p]).values())
            missing = sum((want[p] - got[p]).values())
            raise FuzzFailure(f"{report.program}: port {p}: {extra} frames the program does not emit, "
                              f"{missing} it emits missing")
    report.frames += len(batch)
    report.bytes_in += sum(map(len, batch))
    report.outputs += n_out
    report.forwarded += n_fwd
    report.target_errors += n_err
    report.dropped_by_program += len(batch) - n_fwd - n_err
    report.no_egress_port += n_noif
    return st


def _check_ports_alive(sw: SwitchProcess, ours: dict, report: FuzzReport) -> None:
    before = sw.next_stats()
    for p in ours.values():
        p.send(bytes(64))
    end = time.monotonic() + 10
    while True:
        st = sw.next_stats()
        if all(_processed(st, p)[0] > _processed(before, p)[0] for p in ours):
            return
        if time.monotonic() > end:
            stuck = [p for p in ours if _processed(st, p)[0] <= _processed(before, p)[0]]
            raise FuzzFailure(f"{report.program}: ports {stuck} do not take frames any more")


def p4src_programs(repo: Path) -> list[Path]:
    return sorted((repo / "p4src").glob("*.p4"))
