#!/usr/bin/env python3
"""Throughput of the embedded v1model target on two programs, against BMv2 and a
hand-written Python baseline.

(a) ``p4src/basic_router.p4`` with a few LPM routes (Ethernet/IPv4, checksum verify and
    update, TTL and MAC rewrite);
(b) ``p4src/bench_reg64.p4``: 64 register read-add-write sequences per packet.

For each program N packets are built up front, ``Switch.process`` runs a warm-up and
then the timed loop; the script prints packets/s and two ratios:

* against the reference rate of the real BMv2 ``simple_switch`` on this kind of machine
  (a default build with logging, one core of a small VM): **15,000 pps** for the router
  and **2,000 pps** for the 64-RMW program.  These are reference figures, not
  measurements made here (see /work/shared/design/v1model-semantics.md for the
  published BMv2 numbers they derive from);
* against a baseline measured in the same process: minimal hand-written Python doing the
  same work on the same packets (for the router: parse, dict-based LPM, TTL/MAC rewrite,
  csum16 verify and update; for reg64: unpack, 64 list read-add-writes, repack).  The
  baseline's outputs are compared with the target's on the first packets first, so the
  two do the same job.

Usage: ``python scripts/bench_target.py [--packets 20000] [--warmup 1000] [--repeat 3] [--json OUT]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulation.v1model.load import load_switch  # noqa: E402
from host_agent.match import Lpm  # noqa: E402

BMV2_REF_PPS = {"basic_router": 15_000, "bench_reg64": 2_000}

ROUTER_MAC = 0x000000000100
ROUTES = [  # (prefix, length, next-hop MAC, port)
    (0x0A000100, 24, 0x080000000111, 1),
    (0x0A000200, 24, 0x080000000222, 2),
    (0x0A000000, 8, 0x080000000333, 3),
    (0xC0A80000, 16, 0x080000000444, 4),
]


# ------------------------------------------------------------------ helpers
def csum16(data: bytes) -> int:
    """RFC 1071 Internet checksum of ``data`` (odd length padded with a zero byte)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_packet(dst: int, src: int = 0x0A000101, ttl: int = 64, payload: bytes = b"") -> bytes:
    total = 20 + len(payload)
    hdr = struct.pack("!BBHHHBBHII", 0x45, 0, total, 1, 0, ttl, 17, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", csum16(hdr)) + hdr[12:]
    eth = ROUTER_MAC.to_bytes(6, "big") + (0x0000000000AA).to_bytes(6, "big") + b"\x08\x00"
    return eth + hdr + payload


def router_packets(n: int, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    dsts = ([0x0A000100 | rng.randrange(256) for _ in range(64)] +
            [0x0A000200 | rng.randrange(256) for _ in range(64)] +
            [0x0A000000 | rng.randrange(1 << 24) for _ in range(64)] +
            [0xC0A80000 | rng.randrange(1 << 16) for _ in range(64)])
    payload = bytes(rng.randrange(256) for _ in range(26))   # 60-byte frames
    pool = [ipv4_packet(d, ttl=rng.randrange(2, 255), payload=payload) for d in dsts]
    return [pool[i % len(pool)] for i in range(n)]


def reg64_packets(n: int, seed: int = 2) -> list[bytes]:
    rng = random.Random(seed)
    eth = (2).to_bytes(6, "big") + (1).to_bytes(6, "big") + b"\x88\xb5"
    pool = [eth + struct.pack("!I64I", rng.randrange(1024), *(rng.randrange(1 << 16) for _ in range(64)))
            for _ in range(256)]
    return [pool[i % len(pool)] for i in range(n)]


# ------------------------------------------------------------------ baselines
def make_router_baseline():
    """Straight-line Python doing basic_router's work: returns process(port, frame)."""
    by_len: dict[int, dict[int, tuple[int, int]]] = {}
    for prefix, plen, mac, port in ROUTES:
        by_len.setdefault(plen, {})[prefix >> (32 - plen)] = (mac, port)
    lengths = sorted(by_len, reverse=True)
    unpack_ip = struct.Struct("!BBHHHBBHII").unpack_from

    def process(in_port: int, frame: bytes) -> list[tuple[int, bytes]]:
        if frame[12:14] != b"\x08\x00" or len(frame) < 34:
            return [(0, frame)]
        ver_ihl, tos, tot, ident, frag, ttl, proto, cks, src, dst = unpack_ip(frame, 14)
        ip = frame[14:34]
        ok = csum16(ip[:10] + ip[12:]) == cks          # verify_checksum (error flag only)
        del ok
        for plen in lengths:
            hit = by_len[plen].get(dst >> (32 - plen))
            if hit is not None:
                break
        else:
            return []                                  # default action: drop
        mac, port = hit
        ttl = (ttl - 1) & 0xFF
        hdr = struct.pack("!BBHHHBBHII", ver_ihl, tos, tot, ident, frag, ttl, proto, 0, src, dst)
        hdr = hdr[:10] + struct.pack("!H", csum16(hdr[:10] + hdr[12:])) + hdr[12:]
        out = mac.to_bytes(6, "big") + frame[0:6] + frame[12:14] + hdr + frame[34:]
        return [(port, out)]

    return process


def make_reg64_baseline():
    regs = [[0] * 1024 for _ in range(64)]
    st = struct.Struct("!I64I")

    def process(in_port: int, frame: bytes) -> list[tuple[int, bytes]]:
        if frame[12:14] != b"\x88\xb5":
            return []
        idx, *vals = st.unpack_from(frame, 14)
        slot = idx & 1023
        for k in range(64):
            r = regs[k]
            v = (r[slot] + vals[k]) & 0xFFFFFFFF
            r[slot] = v
            vals[k] = v
        return [(1, frame[:14] + st.pack(idx, *vals) + frame[14 + st.size:])]

    return process


# ------------------------------------------------------------------ timing
def rate(process, packets: list[bytes], warmup: int, repeat: int = 1) -> float:
    """Packets/s of ``process`` over ``packets``: the best of ``repeat`` timed runs, timed in
    this thread's CPU time (``time.thread_time``), so other processes on a shared machine
    do not count against either side of a ratio (wall-clock time with ``--wall``)."""
    for f in packets[:warmup]:
        process(0, f)
    best = 0.0
    for _ in range(repeat):
        t0 = CLOCK()
        for f in packets:
            process(0, f)
        best = max(best, len(packets) / (CLOCK() - t0))
    return best


CLOCK = time.thread_time


def build_router():
    sw = load_switch(str(ROOT / "p4src" / "basic_router.p4"))
    for prefix, plen, mac, port in ROUTES:
        sw.table_add("MyIngress.ipv4_lpm", "MyIngress.ipv4_forward",
                     {"hdr.ipv4.dstAddr": Lpm(prefix, plen)}, args=(mac, port))
    return sw


def build_reg64():
    return load_switch(str(ROOT / "p4src" / "bench_reg64.p4"))


def check_same(name: str, target, baseline, packets: list[bytes], count: int = 300) -> None:
    for i, f in enumerate(packets[:count]):
        a, b = target(0, f), baseline(0, f)
        if [(p, bytes(x)) for p, x in a] != b:
            raise SystemExit(f"{name}: target and baseline disagree on packet {i}:\n"
                             f"  target:   {[(p, bytes(x).hex()) for p, x in a]}\n"
                             f"  baseline: {[(p, x.hex()) for p, x in b]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=20000, help="timed packets per program")
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per measurement; the best is kept")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    ap.add_argument("--wall", action="store_true", help="time in wall-clock seconds instead of CPU seconds")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.thread_time

    results = {"python": platform.python_version(), "machine": platform.machine(),
               "clock": "wall" if args.wall else "thread CPU time", "load_average": os.getloadavg(),
               "packets": args.packets, "warmup": args.warmup, "repeat": args.repeat,
               "bmv2_reference_pps": BMV2_REF_PPS, "programs": {}}
    cases = [("basic_router", build_router, make_router_baseline, router_packets, "LPM router, 60-byte frames"),
             ("bench_reg64", build_reg64, make_reg64_baseline, reg64_packets, "64 register RMW, 274-byte frames")]
    print(f"embedded v1model target, Python {results['python']}, {args.packets} packets "
          f"after {args.warmup} warm-up, best of {args.repeat} runs, timed in {results['clock']}; "
          f"load average {results['load_average'][0]:.2f}")
    for name, build, make_base, gen, what in cases:
        packets = gen(args.packets)
        # correctness first, on fresh state for both
        check_same(name, build().process, make_base(), packets)
        sw, base = build(), make_base()
        target_pps = base_pps = 0.0
        for _ in range(args.repeat):      # alternate, so both sides meet the same machine
            target_pps = max(target_pps, rate(sw.process, packets, args.warmup if not target_pps else 0))
            base_pps = max(base_pps, rate(base, packets, args.warmup if not base_pps else 0))
        ref = BMV2_REF_PPS[name]
        results["programs"][name] = {
            "what": what, "target_pps": round(target_pps, 1), "baseline_pps": round(base_pps, 1),
            "bmv2_reference_pps": ref, "target_over_bmv2": round(target_pps / ref, 3),
            "target_over_baseline": round(target_pps / base_pps, 4)}
        print(f"\n{name} ({what})")
        print(f"  target:              {target_pps:12,.0f} pps  ({1e6 / target_pps:8.1f} us/packet)")
        print(f"  BMv2 reference:      {ref:12,d} pps  (reference figure, not measured here)"
              f"  -> target/BMv2 = {target_pps / ref:.2f}x")
        print(f"  hand-written Python: {base_pps:12,.0f} pps  -> target/baseline = {target_pps / base_pps:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
