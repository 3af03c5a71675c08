#!/usr/bin/env python3
"""What the BMv2-style per-packet log costs (emulation/v1model/trace.py).

Runs ``p4src/basic_router.p4`` (a few LPM routes; Ethernet/IPv4, checksum verify and update)
on the same packets in three set-ups, in one process, and prints packets/s and ratios
against the first:

* ``plain``: compiled without tracing, no log: the code every switch without
  ``--log-console``/``--log-file`` runs;
* ``traced, no log``: compiled with ``trace=True`` but no log attached (the trace calls run,
  their lines are dropped): what tracing would cost if it were always compiled in;
* ``traced, log``: compiled with tracing and a log that discards each line (formatting included):
  the cost of ``--log-console`` without the terminal.

It also checks that the plain program's generated source has no trace call, which is why
logging off costs nothing.

Usage: ``python scripts/bench_trace.py [--packets 5000] [--repeat 3]``
"""
from __future__ import annotations

import argparse
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulation.v1model.load import compile_file
from emulation.v1model.switch import Switch
from host_agent.match import Lpm

ROUTES = [(0x0A000100, 24, 0x080000000111, 1), (0x0A000200, 24, 0x080000000222, 2),
          (0x0A000000, 8, 0x080000000333, 3)]


def _csum16(data: bytes) -> int:
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _packets(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        dst = [0x0A000101, 0x0A000202, 0x0A0B0C0D][i % 3] + (i % 7)
        ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, 20 + 8, i & 0xFFFF, 0, 64, 17, 0, 0x0A000001, dst))
        ip[10:12] = struct.pack("!H", _csum16(bytes(ip)))
        out.append(bytes.fromhex("000000000100" "0000000000aa" "0800") + bytes(ip) + b"\0" * 8)
    return out


def _switch(program, log) -> Switch:
    sw = Switch(program, log=log)
    for pfx, plen, mac, port in ROUTES:
        sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(pfx, plen)},
                     {"dstAddr": mac, "port": port})
    return sw


def _rate(sw: Switch, pkts: list[bytes], repeat: int) -> float:
    for p in pkts[:200]:
        sw.process(1, p)
    best = 0.0
    for _ in range(repeat):
        t = time.perf_counter()
        for p in pkts:
            sw.process(1, p)
        best = max(best, len(pkts) / (time.perf_counter() - t))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    path = ROOT / "p4src" / "basic_router.p4"
    plain = compile_file(path)
    traced = compile_file(path, trace=True)
    assert "TR." not in plain.source and "TR." in traced.source
    pkts = _packets(a.packets)
    lines = [0]

    def discard(_line: str) -> None:
        lines[0] += 1
    rows = [("plain (no trace code, no log)", _rate(_switch(plain, None), pkts, a.repeat)),
            ("traced, no log", _rate(_switch(traced, None), pkts, a.repeat)),
            ("traced, log discarded", _rate(_switch(traced, discard), pkts, a.repeat))]
    base = rows[0][1]
    print(f"basic_router.p4, {a.packets} packets, best of {a.repeat}")
    for name, r in rows:
        print(f"  {name:32s} {r:10,.0f} pps   x{r / base:.2f}")
    print(f"  log lines per packet: {lines[0] / ((a.repeat + 0) * len(pkts) + 200):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
