#!/usr/bin/env python3
"""What the egress queues (emulation/v1model/queues.py) cost the in-process target.

The ECN test program (``tests/emulation/v1model/programs/ecn_queue.p4``: ingress picks a
port and a priority, egress reads the queueing metadata and may mark ECN) runs the same
packets three ways, in one process, interleaved over ``--repeat`` rounds:

* ``no queues``: ``Switch.process`` runs each packet to completion (the default path; STF,
  ``saatp p4 run``, the switch process without ``--queue-rate``);
* ``queues, no rate``: queues attached, every packet due at once (``process`` queues and
  drains);
* ``queues, rate``: queues at 1e9 packets/s: the departure-time arithmetic on top.

Prints packets/s per way (best round) and the ratios against ``no queues``.

Usage: ``python scripts/bench_queues.py [--packets 20000] [--repeat 3]``
"""
from __future__ import annotations

import argparse
import os
import platform
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulation.v1model.load import load_switch  # noqa: E402
from emulation.v1model.queues import EgressQueues  # noqa: E402

PROGRAM = ROOT / "tests" / "emulation" / "v1model" / "programs" / "ecn_queue.p4"


def frame(i: int) -> bytes:
    eth = bytes.fromhex("0000000000020000000000010800")
    return eth + struct.pack("!BBHHHBBH4s4s", 0x45, 1, 20, i & 0xFFFF, 0, 64, 17, 0,
                             bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))


def run(sw, frames) -> float:
    proc = sw.process
    t0 = time.perf_counter()
    n = 0
    for f in frames:
        n += len(proc(1, f))
    dt = time.perf_counter() - t0
    assert n == len(frames), f"{n} of {len(frames)} packets came out"
    return len(frames) / dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    frames = [frame(i) for i in range(a.packets)]
    prog = load_switch(PROGRAM).program
    from emulation.v1model.switch import Switch
    ways = {}
    for name, q in (("no queues", None), ("queues, no rate", EgressQueues()),
                    ("queues, rate", EgressQueues(rate=1e9))):
        sw = Switch(prog)
        if q is not None:
            sw.attach_queues(q)
        run(sw, frames[:1000])          # warm-up
        ways[name] = sw
    best = dict.fromkeys(ways, 0.0)
    for _ in range(a.repeat):
        for name, sw in ways.items():
            best[name] = max(best[name], run(sw, frames))
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}; {a.packets} packets x {a.repeat} rounds, best round")
    base = best["no queues"]
    for name, pps in best.items():
        print(f"  {name:<16} {pps:10,.0f} pps   ratio {pps / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
