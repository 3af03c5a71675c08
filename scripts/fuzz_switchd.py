#!/usr/bin/env python3
"""Fuzz the switch process with random and mutated frames, every p4src/ program loaded.

    .venv/bin/python scripts/fuzz_switchd.py [--frames 1000000] [--seed 1] [--ports 6] [PROGRAM.p4...]

``--frames`` per program (default 1,000,000).  Checks (emulation/testing/switch_fuzz.py): no
crash, no stuck port, every frame processed and counted, the frames out of each port exactly
those the in-process reference emits.  Prints one line per program; exit status 1 on the
first failure.  tests/emulation/testing/test_switch_fuzz.py runs the same code on fewer frames.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from emulation.testing.switch_fuzz import FuzzFailure, fuzz_program, p4src_programs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", help="default: every p4src/*.p4")
    ap.add_argument("--frames", type=int, default=1_000_000, help="frames per program")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ports", type=int, default=6)
    ap.add_argument("--chunk", type=int, default=512, help="frames sent before each check")
    a = ap.parse_args()
    progs = [Path(p) for p in a.programs] or p4src_programs(REPO)
    t0 = time.monotonic()
    total = 0
    for i, p in enumerate(progs):
        try:
            r = fuzz_program(p, a.frames, seed=a.seed + i, n_ports=a.ports, chunk=a.chunk,
                             progress=lambda m: print("  " + m, flush=True))
        except FuzzFailure as e:
            print(f"FAIL {e}", flush=True)
            return 1
        total += r.frames
        print(r.line(), flush=True)
        print(f"  lengths: {dict(sorted(r.lengths.items()))}", flush=True)
    print(f"{total} frames through {len(progs)} programs in {time.monotonic() - t0:.0f} s: no crash, no stuck "
          f"port, every frame forwarded as the program says or dropped and counted", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
