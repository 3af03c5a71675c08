#!/usr/bin/env python3
"""Overload soak of the switch process: it degrades, never stops (issue #11 item 7).

For each raw-port kind (``--raw``, default ``ring,socket``: PACKET_MMAP rings and plain packet
sockets) one ``saatp switch`` runs the SA-ATP program with rate-limited egress queues on every
port, with UDP-tunnel ports and (as root) veth ports in a network namespace made and deleted
here.  Two flooders offer far more than it can process for ``--seconds``, while an SA-ATP job,
a SwitchML-like job and a ring all-reduce iterate through it and check every sum exactly, and
P4Runtime is read every 0.5 s.  Printed per phase: offered / forwarded / dropped per port and
reason (link, kernel rx overflow, program, error, egress queue tail drops, failed sends), with
the check that offered = forwarded + counted drops, and the workloads' verdicts.  See
``emulation/testing/soak.py`` for the port plan and the accounting.

    .venv/bin/python scripts/soak_switchd.py [--seconds 120] [--raw ring,socket] [--udp-only]
        [--flood-rate 0] [--queue-rate 2000] [--sink-queue-rate 500] [--queue-depth 32]
        [--json OUT]

Exit status 0 when every phase passed its checks, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulation.testing.netns import netns_available
from emulation.testing.soak import SoakConfig, format_table, soak


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="flood time per phase (120)")
    ap.add_argument("--raw", default="ring,socket",
                    help="raw-port kinds, one phase each: ring, socket (default both)")
    ap.add_argument("--udp-only", action="store_true", help="UDP-tunnel ports only (no namespace, no root)")
    ap.add_argument("--flood-rate", type=float, default=0.0, help="frames/s per flooder (0: as fast as it can)")
    ap.add_argument("--queue-rate", type=float, default=2000.0, help="egress queue rate of every port, pps")
    ap.add_argument("--sink-queue-rate", type=float, default=500.0,
                    help="egress queue rate of the sink port (the flood's main destination), pps")
    ap.add_argument("--queue-depth", type=int, default=32, help="egress queue depth of every port, packets")
    ap.add_argument("--k", type=int, default=32, help="SA-ATP lanes per packet (32)")
    ap.add_argument("--json", default=None, help="write every phase's report as JSON")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # clean up: namespace, switch, flooders
    veth = not a.udp_only and netns_available() is None
    if not a.udp_only and not veth:
        print(f"note: UDP-tunnel ports only ({netns_available()})")
    kinds = [k.strip() for k in a.raw.split(",") if k.strip()] if veth else ["ring"]
    load = os.getloadavg()
    print(f"switch overload soak: {len(kinds)} phase(s) of {a.seconds:g} s, {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} at start")
    reports, ok = [], True
    for kind in kinds:
        cfg = SoakConfig(seconds=a.seconds, veth=veth, raw=kind, flood_rate=a.flood_rate,
                         queue_rate=a.queue_rate, sink_queue_rate=a.sink_queue_rate,
                         queue_depth=a.queue_depth, k=a.k)
        print("\n== phase: UDP tunnels" + (f" + veths read through {kind} packet sockets" if veth else ""))
        t0 = time.monotonic()
        rep = soak(cfg, log=lambda s: print(s, flush=True))
        print(format_table(rep))
        print(f"phase took {time.monotonic() - t0:.0f} s")
        reports.append(json.loads(rep.to_json()))
        ok &= rep.ok
    if a.json:
        Path(a.json).write_text(json.dumps(reports, indent=2))
    print("\nall phases: " + ("degraded, never stopped" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
