#!/usr/bin/env python3
"""Packet rate of the switch *process* (``saatp switch``) with the IPv4 router program.

Starts ``python -m emulation.switchd p4src/basic_router.p4`` with two UDP-tunnel ports on
127.0.0.1 (whole Ethernet frames in UDP datagrams), installs a route through P4Runtime,
then offers frames on port 1 at a series of rates and counts what leaves port 2.  Prints,
per offered rate, the delivered rate and the loss, and the best delivered rate against
``Switch.process`` called in this process on the same frames (the in-process baseline).

    .venv/bin/python scripts/bench_switchd.py [--packets 20000] [--rates 5000,10000,20000,0] [--json OUT]

A rate of 0 means "as fast as the sender can".  The real ``simple_switch_grpc`` on this kind
of machine forwards about 15k packets/s through an IPv4 router (reference figure).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host_agent.p4runtime.client import P4RuntimeClient  # noqa: E402
from host_agent.match import Lpm  # noqa: E402
from emulation.v1model.load import load_switch  # noqa: E402

PROGRAM = ROOT / "p4src" / "basic_router.p4"
BMV2_REFERENCE_PPS = 15000


def free_ports(kind: int, n: int) -> list[int]:
    socks = [socket.socket(socket.AF_INET, kind) for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def frame(i: int) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    return bytes(Ether(dst="00:00:00:00:00:fe", src="00:00:00:00:00:01") /
                 IP(src="10.0.1.1", dst=f"10.0.2.{1 + i % 200}", ttl=64) / UDP(sport=1000 + i % 50, dport=9) /
                 (b"x" * 18))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packets", type=int, default=20000, help="frames offered per rate (20000)")
    ap.add_argument("--rates", default="5000,10000,20000,40000,0", help="offered rates, pps (0 = max)")
    ap.add_argument("--json", default=None, help="write the figures as JSON")
    args = ap.parse_args(argv)

    frames = [frame(i) for i in range(1000)]
    # in-process baseline: the same compiled program, same frames, no I/O
    sw = load_switch(str(PROGRAM))
    sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, [0x000000000202, 2])
    n = min(args.packets, 20000)
    t0 = time.perf_counter()
    for i in range(n):
        sw.process(1, frames[i % 1000])
    inproc = n / (time.perf_counter() - t0)

    s1, h1, s2, h2 = free_ports(socket.SOCK_DGRAM, 4)
    gport = free_ports(socket.SOCK_STREAM, 1)[0]
    cmd = [sys.executable, "-m", "emulation.switchd", "-i", f"1@udp:{s1}:127.0.0.1:{h1}",
           "-i", f"2@udp:{s2}:127.0.0.1:{h2}", str(PROGRAM), "--", "--grpc-server-addr", f"127.0.0.1:{gport}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    results = []
    try:
        end = time.time() + 60
        while time.time() < end:
            line = proc.stdout.readline()
            if "P4Runtime on" in line or proc.poll() is not None:
                break
        if proc.poll() is not None:
            print("the switch process did not start:\n" + (proc.stdout.read() or ""), file=sys.stderr)
            return 1
        with P4RuntimeClient(f"127.0.0.1:{gport}", device_id=0, election_id=1) as c:
            c.load_p4info()
            c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, "MyIngress.ipv4_forward",
                     {"dstAddr": 0x000000000202, "port": 2})
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tx.bind(("127.0.0.1", h1))
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind(("127.0.0.1", h2))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        rx.settimeout(0.5)
        for rate in [float(r) for r in args.rates.split(",")]:
            got = [0]
            stop = threading.Event()

            def receive():
                while not stop.is_set():
                    try:
                        rx.recv(4096)
                        got[0] += 1
                    except socket.timeout:
                        continue
            th = threading.Thread(target=receive, daemon=True)
            th.start()
            t0 = time.perf_counter()
            for i in range(args.packets):
                if rate:
                    due = t0 + i / rate
                    while time.perf_counter() < due:
                        pass
                tx.sendto(frames[i % 1000], ("127.0.0.1", s1))
            t_send = time.perf_counter() - t0
            last, quiet = got[0], time.perf_counter()
            while time.perf_counter() - quiet < 1.0:       # drain until 1 s without progress
                time.sleep(0.1)
                if got[0] != last:
                    last, quiet = got[0], time.perf_counter()
            t_all = quiet - t0
            stop.set()
            th.join()
            offered = args.packets / t_send
            delivered = got[0] / t_all if t_all > 0 else 0.0
            results.append({"offered_pps": round(offered), "delivered": got[0], "sent": args.packets,
                            "delivered_pps": round(delivered), "loss": round(1 - got[0] / args.packets, 4)})
            print(f"offered {offered:9,.0f} pps -> delivered {got[0]:6d}/{args.packets} "
                  f"({delivered:9,.0f} pps, loss {100 * (1 - got[0] / args.packets):5.1f}%)")
        tx.close()
        rx.close()
    finally:
        proc.terminate()
        try:
            rest, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest = ""
    stats = [ln for ln in (rest or "").splitlines() if ln.startswith("saatp switch: stats ")]
    if stats:   # the switch's own counters: what it read, forwarded, and dropped by reason
        print(stats[-1])
    best = max((r["delivered_pps"] for r in results if r["loss"] < 0.01), default=0)
    print(f"\nin-process Switch.process baseline: {inproc:,.0f} pps")
    print(f"switch process, best rate with < 1% loss: {best:,.0f} pps "
          f"(x{best / inproc:.2f} of in-process; x{best / BMV2_REFERENCE_PPS:.2f} of the BMv2 reference "
          f"{BMV2_REFERENCE_PPS:,} pps, not measured here)")
    if args.json:
        Path(args.json).write_text(json.dumps({"inprocess_pps": round(inproc), "rates": results,
                                               "best_lossless_pps": best}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
