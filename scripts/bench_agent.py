#!/usr/bin/env python3
"""Throughput of the SA-ATP host path: quantize + packetize + aggregate through the embedded
switch (p4src/saatp.p4), against a numpy baseline doing the same sum in the same process.

    .venv/bin/python scripts/bench_agent.py [--workers 4] [--elements 65536] [--repeat 3]

Prints elements/s for each stage and the ratios; no assertion on speed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from host_agent import wire  # noqa: E402
from host_agent.constants import DEFAULT_K as K, SWITCH_IP, SWITCH_MAC, worker_ip, worker_mac  # noqa: E402
from host_agent.quantize import quantize  # noqa: E402


def best(fn, repeat):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--elements", type=int, default=65536)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    n, N = a.workers, a.elements
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=N).astype(np.float32) for _ in range(n)]
    f = 20
    total = n * N

    def numpy_baseline():
        qs = [quantize(x, f)[0] for x in xs]
        np.sum(np.stack(qs).astype(np.int64), axis=0)

    t_np = best(numpy_baseline, a.repeat)

    def packetize():
        for x in xs:
            q = quantize(x, f)[0]
            c = -(-N // K)
            pad = np.zeros(c * K, np.int32)
            pad[:N] = q
            be = pad.astype(">i4").tobytes()
            tpl = wire.FrameTemplate(worker_mac(0), SWITCH_MAC, worker_ip(0), SWITCH_IP)
            for s in range(c):
                h = wire.Header(type=wire.DATA, flags=wire.F_PAYLOAD, seq=s, iter=1, slot=s % 32)
                tpl.frame(h.pack() + be[s * 4 * K:(s + 1) * 4 * K])

    t_pk = best(packetize, a.repeat)

    from emulation.harness import Network, add_job
    net = Network(switch_pps=None)
    job = add_job(net, 0, n, mode="saatp")
    qs = [quantize(x, f)[0] for x in xs]

    def through_switch():
        r = job.run_iteration(qs, f)
        assert r.ok

    through_switch()            # warm-up (first iteration pays for nothing extra, but be fair)
    p0 = net.switch_packets
    t_sw = best(through_switch, a.repeat)
    pkts = (net.switch_packets - p0) / a.repeat
    ref = np.sum(np.stack(qs).astype(np.int64), axis=0)
    assert np.array_equal(job.workers[0].result()[0], ref)

    print(f"{n} workers x {N} elements (K={K}, {-(-N // K)} chunks per worker)")
    print(f"  numpy quantize+sum           {total / t_np:14,.0f} elements/s")
    print(f"  quantize+packetize (frames)  {total / t_pk:14,.0f} elements/s"
          f"   ({t_pk / t_np:.1f}x numpy time)")
    print(f"  end to end via embedded P4   {total / t_sw:14,.0f} elements/s"
          f"   ({t_sw / t_np:.0f}x numpy time), {pkts / t_sw:,.0f} switch packets/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
