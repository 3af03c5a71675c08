"""Recompute p4src/basic_router.stf and p4src/bench_reg64.stf (``python gen_p4src_stf.py``).

Like gen_stf.py, the expected packets come from a small Python model of the programs
(BMv2 semantics), not from the embedded target.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stf_lib import bits, eth, hx  # noqa: E402

P4SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'p4src')


def basic_router():
    from scapy.all import Ether, IP, UDP, TCP, ICMP, Raw

    def E(dst, src, p):
        return bytes(Ether(dst=dst, src=src) / p)

    L = ["# basic_router: four routes; the router's MAC is 00:00:00:00:01:00.",
         "# lpm prefixes as * digits (0x0A0001** = 10.0.1.0/24): the form p4c's STF runner reads.",
         "add ipv4_lpm hdr.ipv4.dstAddr:0x0A0001** ipv4_forward(dstAddr:0x080000000111, port:1)",
         "add ipv4_lpm hdr.ipv4.dstAddr:0x0A0002** ipv4_forward(dstAddr:0x080000000222, port:2)",
         "add ipv4_lpm hdr.ipv4.dstAddr:0x0A****** ipv4_forward(dstAddr:0x080000000333, port:3)",
         "add ipv4_lpm hdr.ipv4.dstAddr:0x0A000203 ipv4_forward(dstAddr:0x080000000444, port:4)"]
    R = '00:00:00:00:01:00'
    H = '00:00:00:00:00:aa'

    def case(comment, dst, mac, port, ttl=64, payload=b'payload!', l4=None):
        l4 = l4 if l4 is not None else UDP(sport=1000, dport=2000) / Raw(payload)
        i = E(R, H, IP(src='10.0.1.1', dst=dst, ttl=ttl, id=42) / l4)
        out = [f"# {comment}", f"packet 0 {hx(i)}"]
        if port is not None:
            o = E(mac, R, IP(src='10.0.1.1', dst=dst, ttl=ttl - 1, id=42) / l4)
            out.append(f"expect {port} {hx(o)} $")
        return out

    L += case("10.0.1.5 -> /24 route, port 1", '10.0.1.5', '08:00:00:00:01:11', 1)
    L += case("10.0.2.9 -> /24 route, port 2", '10.0.2.9', '08:00:00:00:02:22', 2, ttl=1)
    L += case("10.0.2.3 -> /32 route wins, port 4", '10.0.2.3', '08:00:00:00:04:44', 4,
              l4=TCP(sport=5, dport=80, flags='S'))
    L += case("10.9.9.9 -> /8 route, port 3", '10.9.9.9', '08:00:00:00:03:33', 3, l4=ICMP() / Raw(b'x' * 33))
    L += case("11.0.0.1: no route -> default action drop", '11.0.0.1', None, None)
    other = bytes(Ether(dst=R, src=H, type=0x86DD) / Raw(b'abcd'))
    L += ["# not IPv4: no table applied, goes to port 0 unchanged", f"packet 5 {hx(other)}", f"expect 0 {hx(other)} $"]
    with open(os.path.join(P4SRC, 'basic_router.stf'), 'w') as f:
        f.write('\n'.join(L) + '\n')


def bench_reg64():
    def P(idx, vals):
        return eth(etype=0x88B5) + bits((32, idx), *[(32, v) for v in vals])
    state = {}
    L = ["# bench_reg64: values are summed per slot; each packet leaves with the running sums (port 1)."]
    rng = random.Random(7)
    for idx, vals in [(5, list(range(1, 65))), (5, [1000] * 64), (1024 + 5, [0xFFFFFFFF] * 64),
                      (6, [rng.randrange(1 << 32) for _ in range(64)])]:
        slot = idx & 1023
        cur = state.setdefault(slot, [0] * 64)
        for k in range(64):
            cur[k] = (cur[k] + vals[k]) & 0xFFFFFFFF
        L += [f"# idx={idx} (slot {slot})", f"packet 0 {hx(P(idx, vals))}", f"expect 1 {hx(P(idx, cur))} $"]
    L += ["# other ethertype: dropped", f"packet 0 {hx(eth(etype=0x0800) + bytes(4))}"]
    with open(os.path.join(P4SRC, 'bench_reg64.stf'), 'w') as f:
        f.write('\n'.join(L) + '\n')


if __name__ == '__main__':
    basic_router()
    bench_reg64()
