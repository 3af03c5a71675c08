"""Recompute the expected packets of the STF files in tests/p4/ (``python gen_stf.py [NAME ...]``).

The .p4 programs are the source of truth; this script holds, per program, a small Python
model of what BMv2 simple_switch does with the test packets (see the comment at the top of
each program and /work/shared/design/v1model-semantics.md) and writes NAME.stf.  It does
not use the embedded target.  Packets with IPv4/UDP are built with scapy.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stf_lib import *  # noqa: E402,F401,F403

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), '')
GEN = {}
def prog(f):
    GEN[f.__name__] = f
    return f
def write(name, lines):
    with open(OUT + name + '.stf', 'w') as fh:
        fh.write('\n'.join(lines) + '\n')

def pkt(port, b):
    return f"packet {port} {hx(b)}"
def exp(port, b):
    return f"expect {port} {hx(b)} $"

@prog
def arith_bit():
    L = ["# Unsigned arithmetic; results written into the ops header, packet goes to port 1."]
    cases = [(200, 100, 3, 0x1234), (10, 20, 8, 0xFFFF), (255, 255, 0, 0x0100), (0x81, 0, 9, 2), (7, 200, 7, 0x8000), (0, 5, 255, 7)]
    for a, b, s, c in cases:
        inp = eth() + bits((8,a),(8,b),(8,s),(16,c)) + bytes(16)
        cmp = 0
        if a < b: cmp |= 1
        if a <= b: cmp |= 2
        if a > b: cmp |= 4
        if a >= b: cmp |= 8
        if a == b: cmp |= 0x10
        if a != b: cmp |= 0x20
        if a > b and a > 100: cmp |= 0x40
        if a != 0 or b == 0: cmp |= 0x80
        shl = u(a << s, 8) if s < 8 else 0
        shr = a >> s if s < 8 else 0
        out = eth() + bits((8,a),(8,b),(8,s),(16,c),
            (8,u(a+b,8)),(8,u(a-b,8)),(16,u(c*a,16)),(8,u(-a,8)),(8,a&b),(8,a|b),(8,a^b),(8,u(~a,8)),
            (8,shl),(8,shr),(8,sat_u(a+b,8)),(8,sat_u(a-b,8)),(16,u(c<<4,16)),(8,cmp))
        L += [f"# a={a} b={b} s={s} c={c:#x}", pkt(0, inp), exp(1, out)]
    # a non-0x1234 frame is forwarded unchanged
    L += ["# other ethertype: untouched", pkt(3, eth(etype=0x0800) + b'\x01\x02'), exp(1, eth(etype=0x0800) + b'\x01\x02')]
    write('arith_bit', L)

@prog
def arith_int():
    L = ["# Signed arithmetic, packet goes to port 2."]
    cases = [(100, 100, 1, 32000), (-100, 100, 3, -32768), (-128, 1, 7, 32767), (127, -1, 0, -5), (-1, -2, 1, 100), (5, -128, 4, 0)]
    for x, y, s, w in cases:
        inp = eth() + bits((8,x),(8,y),(8,s),(16,w)) + bytes(12)
        shr = x >> s  # python >> on negative ints is arithmetic
        shl = u(x << s, 8) if s < 8 else 0
        cmp = 0
        if x < y: cmp |= 1
        if x <= y: cmp |= 2
        if x > y: cmp |= 4
        if x >= y: cmp |= 8
        if x == y: cmp |= 16
        if x < 0: cmp |= 32
        if u(x,8) > u(y,8): cmp |= 64
        out = eth() + bits((8,x),(8,y),(8,s),(16,w),
            (8,x+y),(8,x-y),(8,-x),(8,sat_s(x+y,8)),(8,sat_s(x-y,8)),(8,shr),(8,shl),(8,x>>2),
            (16,sat_s(w+x,16)),(8,u(x,8)+1),(8,cmp))
        L += [f"# x={x} y={y} s={s} w={w}", pkt(1, inp), exp(2, out)]
    write('arith_int', L)

@prog
def casts_literals():
    L = ["# Casts, literals, slices, concatenation; packet goes to port 3."]
    cases = [(0x85, -1, 0xABCD, 1, 0x55), (0x10, 100, 0x1234, 0, 0x00), (0xFF, -128, 0x00F0, 1, 0x7F)]
    for a, n, w, flag, pad in cases:
        inp = eth() + bits((8,a),(8,n),(16,w),(1,flag),(7,pad)) + bytes(2+2+2+1+1+1+1+2+1+1+1+1+2+1+1+1+1+4)
        f = bool(flag); g = a > 127
        rb = (1 if f else 0) | (2 if g else 0) | (4 if f and g else 0) | (0 if f else 0x80)
        sl = ((a & 0xF) << 4) | 0x0C
        out = eth() + bits((8,a),(8,n),(16,w),(1,flag),(7,pad),
            (16,a),(16,n),(16,n),(8,w&0xFF),(8,n),(8,s8(a)),(8,rb),(16,(a<<8)|u(n,8)),(4,w>>12),(4,w&0xF),(8,sl),
            (8,0),(8,0xAA),(16,0xF0F0),(8,0xFF),(8,u(-3,8)),(8,0x2A+15+10),(8,10),
            (32,(flag<<31)|(pad<<24)|(0xC3<<16)|w))
        L += [f"# a={a:#x} n={n} w={w:#x} flag={flag} pad={pad:#x}", pkt(0, inp), exp(3, out)]
    write('casts_literals', L)

@prog
def types_enums():
    L = ["# Enums and new types; packet goes to port 1."]
    for op, x, y, tag in [(1, 200, 100, 0xBEEF), (2, 5, 10, 0x0001), (0x10, 0xF0, 0x3C, 0xBEEE), (7, 1, 1, 0xBEEF)]:
        inp = eth() + bits((8,op),(8,x),(8,y),(16,tag),(8,0),(8,0),(8,0))
        r = {1: u(x+y,8), 2: u(x-y,8), 0x10: x ^ y}.get(op, 0xEE)
        color = {1: 1, 2: 2}.get(op, 3)
        raw = op + 0x10 if op == 2 else op
        out = eth() + bits((8,op),(8,x),(8,y),(16,0xCAFE if tag == 0xBEEF else tag),(8,r),(8,color),(8,raw))
        L += [f"# op={op:#x} x={x} y={y} tag={tag:#x}", pkt(0, inp), exp(1, out)]
    write('types_enums', L)

@prog
def validity():
    L = ["# Header validity; everything goes to port 4; DEAD is payload."]
    E = eth(); P = bytes.fromhex('DEAD')
    def A(v1, cmd): return bits((8,v1),(8,cmd))
    W = bits((16,0x1234))
    cases = [
        ("cmd1 b not parsed: setValid gives zeroed b", A(0,1)+P, A(0,1)+bits((16,0))+P),
        ("cmd1 b parsed: setValid is a no-op", A(1,1)+W+P, A(1,1)+W+P),
        ("cmd2 setInvalid then setValid zeroes", A(1,2)+W+P, A(1,2)+bits((16,0))+P),
        ("cmd3 setInvalid removes b", A(1,3)+W+P, A(1,3)+P),
        ("cmd4 c zeroed on setValid, then +5", A(1,4)+W+P, A(1,4)+W+bytes([5])+P),
        ("cmd5 setValid on valid b keeps value", A(1,5)+W+P, A(1,5)+bits((16,0x1235))+P),
        ("cmd6 header assignment copies validity", A(0,6)+P, A(0,6)+A(0,0x66)+P),
        ("cmd7 c made valid then invalid: not emitted", A(1,7)+W+P, A(1,7)+W+P),
    ]
    for c, i, o in cases:
        L += ["# " + c, pkt(1, E+i), exp(4, E+o)]
    L += ["# a too short is not extracted: all bytes stay payload", pkt(1, E+b'\x01'), exp(4, E+b'\x01')]
    write('validity', L)

@prog
def stack_parser():
    E = eth(etype=0x8847)
    def lab(v, bos): return bytes([(v << 1) | bos])
    L = ["# Parser header stack; port 1 normally, port 2 on StackOutOfBounds."]
    # 3 labels then tail
    i = E + lab(10,0) + lab(20,0) + lab(30,1) + bits((8,0),(8,0),(8,0)) + b'\xAA'
    o = E + lab(10,0) + lab(20,0) + lab(30,1) + bits((8,3),(8,30),(8,60)) + b'\xAA'
    L += ["# three labels: count=3 lastval=30 sum=60", pkt(0, i), exp(1, o)]
    i = E + lab(99,1) + bits((24,0))
    o = E + lab(99,1) + bits((8,1),(8,99),(8,99))
    L += ["# one label", pkt(0, i), exp(1, o)]
    i = E + lab(1,0) + lab(2,0) + lab(3,0) + lab(4,1) + bits((24,0))
    o = E + lab(1,0) + lab(2,0) + lab(3,0) + lab(4,1) + bits((8,4),(8,4),(8,10))
    L += ["# exactly four labels fits", pkt(0, i), exp(1, o)]
    i = E + lab(1,0) + lab(2,0) + lab(3,0) + lab(4,0) + lab(5,1) + bits((24,0x010203))
    o = E + lab(0x7F,0) + lab(2,0) + lab(3,0) + lab(4,0) + lab(5,1) + bits((24,0x010203))
    L += ["# five labels overflow: StackOutOfBounds, rest stays payload", pkt(0, i), exp(2, o)]
    i = E + lab(1,0) + lab(2,0)
    L += ["# packet ends inside the loop: PacketTooShort, no tail, forwarded as is", pkt(0, i), exp(1, i)]
    write('stack_parser', L)

@prog
def stack_ops():
    E = eth()
    def el(v, more): return bytes([(v << 1) | more])
    L = ["# Header stack operations in ingress; all to port 1."]
    def run(op, elems):
        # elems: list of (v, more); model the stack of 4
        st = [e for e in elems] + [None] * (4 - len(elems))
        info = 0
        def cnt():
            return (4 << 4) | sum(1 for e in st if e is not None)
        if op == 1:
            st = [None] + st[:3]; st[0] = (0x55, 1)
        elif op == 2:
            st = st[1:] + [None]
        elif op == 3:
            st[2] = st[0]
        elif op == 4:
            info = cnt()
        elif op == 5:
            st = [None, None] + st[:2]
            st = st[1:] + [None]
            info = cnt()
        elif op == 6:
            st[1] = None; info = cnt()
        return bits((8,op),(8,info)) + b''.join(el(*e) for e in st if e is not None)
    for op, elems in [(1, [(1,1),(2,0)]), (2, [(1,1),(2,1),(3,0)]), (3, [(7,0)]), (3, [(7,1),(8,1),(9,0)]),
                      (4, [(1,1),(2,1),(3,0)]), (5, [(1,1),(2,1),(3,0)]), (6, [(1,1),(2,1),(3,0)]), (0, [(5,0)])]:
        i = E + bits((8,op),(8,0)) + b''.join(el(*e) for e in elems) + b'\xEE'
        o = E + run(op, elems) + b'\xEE'
        L += [f"# op={op} stack={elems}", pkt(2, i), exp(1, o)]
    write('stack_ops', L)

@prog
def parser_select():
    E = eth()
    L = ["# select with masks/ranges/default; res.path/cpath record the states taken."]
    def path(a, b):
        if (a, b) == (1, 2): return 1
        if a & 0xF0 == 0x10: return 2
        if 0x20 <= a <= 0x2F and b <= 0x7F: return 3
        if b == 0xFF: return 4
        if a == 0x30: return 5
        return None
    def cpath(c):
        if c & 0xFF00 == 0x0800: return 0xA
        if 0x1000 <= c <= 0x1FFF: return 0xB
        if c == 0x2000: return 0xC
        return 0xD
    for a, b, c in [(1,2,0x0800), (0x12,0x02,0x08FF), (0x10,0xFF,0x1000), (0x25,0x10,0x1FFF), (0x25,0x90,0x2000),
                    (0x99,0xFF,0x2000), (0x30,0x77,0x2001), (0x01,0x03,0x0000), (0x2F,0x7F,0x0700)]:
        i = E + bits((8,a),(8,b),(16,c),(16,0)) + b'\x42'
        p = path(a, b)
        if p is None:
            # BMv2 (p4c 1.2.4.8): no case matches -> parsing ends with NoError, res stays payload
            L += [f"# a={a:#x} b={b:#x}: no case matches: BMv2 accepts with NoError, port 1, unchanged",
                  pkt(0, i), exp(1, i)]
        else:
            o = E + bits((8,a),(8,b),(16,c),(8,p),(8,cpath(c))) + b'\x42'
            L += [f"# a={a:#x} b={b:#x} c={c:#x}: path {p}", pkt(0, i), exp(1, o)]
    i = E + bits((8,1),(8,2),(16,0x0800)) + b'\x01'
    L += ["# res too short: PacketTooShort -> port 3, unchanged", pkt(0, i), exp(3, i)]
    write('parser_select', L)

@prog
def parser_errors():
    L = ["# verify/lookahead/advance; egress port = 1 + error code (0 ok, 1 BadVersion, 2 TooBig, 3 PacketTooShort)."]
    def E(src=1): return eth(src=src)
    P = b'\xAB\xCD'
    L += ["# good: version 4, len 5; srcAddr low 16 bits = lookahead value",
          pkt(0, E() + bytes([0x45, 0x77]) + P), exp(1, E(0x4577) + bytes([0x45, 0x00]) + P)]
    L += ["# version 3: BadVersion (header stays valid, extracted before verify)",
          pkt(0, E() + bytes([0x35, 0x77]) + P), exp(2, E() + bytes([0x35, 0x01]) + P)]
    L += ["# len 10: TooBig", pkt(0, E() + bytes([0x4A, 0x77]) + P), exp(3, E() + bytes([0x4A, 0x02]) + P)]
    L += ["# len 8 is fine", pkt(0, E() + bytes([0x48, 0x77])), exp(1, E(0x4877) + bytes([0x48, 0x00]))]
    L += ["# leading nibble F: advance(16) skips two bytes, which are dropped from the output",
          pkt(0, E() + bytes([0xF0, 0x11, 0x45, 0x77]) + P), exp(1, E(0xF011) + bytes([0x45, 0x00]) + P)]
    L += ["# one byte left: lookahead fails with PacketTooShort",
          pkt(0, E() + b'\x45'), exp(4, E() + b'\x45')]
    L += ["# other ethertype: NoError, srcAddr low bits = 0", pkt(0, eth(src=0x0102030405, etype=0x0800) + P),
          exp(1, eth(src=0x0102030000, etype=0x0800) + P)]
    write('parser_errors', L)

@prog
def subblocks():
    L = ["# sub-parser, sub-controls with constructor params, functions, directional action params; port 5."]
    for a, b, c, d, e, f in [(1, 250, 1, 0, 0x11, 0x22), (7, 0, 255, 200, 1, 2), (1, 3, 4, 9, 5, 6)]:
        i = eth() + bytes([a, b, c, d, e, f, 0])
        o = eth() + bytes([a, u(b+10,8), u(c+7,8), max(a, d), f, e, u((a ^ 0xFF) + 2, 8)])
        if a == 1:
            i += b'\x99'
            o += bytes([44])
        L += [f"# a={a} b={b} c={c} d={d}", pkt(0, i + b'\x00'), exp(5, o + b'\x00')]
    write('subblocks', L)

@prog
def control_flow():
    L = ["# control flow; egress adds 0x11 to r4 even after exit in ingress."]
    for sel in [0, 1, 2, 3, 4, 5, 6, 10, 200]:
        r1 = {0: 1, 1: 1, 2: 0x34, 3: 0x34, 4: 0x34, 10: 0x0A}.get(sel, 0xFF)
        r2 = {1: 1, 2: 2, 3: 3}.get(sel, 0)
        r3 = 0
        port = 1
        if sel != 3:
            r3 = 0xA1 if sel == 1 else 0xB0
            if sel == 5: port = 2
            elif sel == 6: pass
            else: r1 = u(r1 + 1, 8)
        i = eth() + bytes([sel, 0, 0, 0, 0x22])
        o = eth() + bytes([sel, r1, r2, r3, 0x33])
        L += [f"# sel={sel}", pkt(0, i), exp(port, o)]
    L += ["# no cf header: exit right away", pkt(0, eth(etype=0x0800)), exp(1, eth(etype=0x0800))]
    write('control_flow', L)

@prog
def tables_const():
    L = ["# const entries of all kinds; results in the c header, port 1. 0 = miss with NoAction."]
    def rng(x):
        if x <= 9: return 1
        if 5 <= x <= 20: return 2
        if 21 <= x <= 254: return 3
        return 0xEE
    def tern(t):
        if t & 0xFF00 == 0x1200: return 1
        if t == 0x1234: return 2
        if t & 0xF0 == 0x30: return 3
        return 0
    def annot(t):
        m1 = (t & 0xF) == 1
        m3 = (t & 0xF00F) == 0x1001
        return 3 if m3 else (1 if m1 else 0)
    def prio(t):
        if t & 0xF00F == 0x1001: return 20
        if t & 0xF == 1: return 10
        return 0
    def opt(x, o):
        if x == 1: return 0x15 if o == 5 else 0x10
        if (x, o) == (2, 7): return 0x27
        return 0
    def ex(x, o):
        return {(1, 2): 0x12, (0x10, 0x20): 0x55}.get((x, o), 0)
    def lpm(a):
        if a == 0x0A010203: return 32
        if a >> 16 == 0x0A01: return 16
        if a >> 24 == 0x0A: return 8
        return 0
    cases = [(7, 5, 0x1234, 0x0A010203), (15, 2, 0x1001, 0x0A010204), (1, 2, 0x2001, 0x0A020304), (255, 7, 0x5634, 0x0B000000),
             (2, 7, 0x0031, 0x0A01FFFF), (0x10, 0x20, 0x1181, 0), (21, 6, 0x12FF, 0x0AFFFFFF), (1, 6, 0x0000, 0x0A010203)]
    for x, o, t, a in cases:
        i = eth() + bits((8,x),(8,o),(16,t),(32,a)) + bytes(7)
        o_ = eth() + bits((8,x),(8,o),(16,t),(32,a)) + bytes([rng(x), tern(t), annot(t), prio(t), opt(x, o), ex(x, o), lpm(a)])
        L += [f"# x={x} o={o} t={t:#x} addr={a:#x}", pkt(0, i), exp(1, o_)]
    write('tables_const', L)

@prog
def tables_cp():
    L = ["# Control-plane entries. STF priorities: a larger number wins (the p4c STF runner converts for BMv2).",
         "# Ternary and lpm values use * digits (0x12**, 0x0A01**** = /16): the forms p4c's runner reads."]
    L += ["add t_exact hdr.t.k8:0x01 set_exact(v:0x11, port:2)",
          "add t_exact hdr.t.k8:2 set_exact(v:0x22, port:3)",
          "add t_lpm hdr.t.addr:0x0A****** set_lpm(v:0x08)",
          "add t_lpm hdr.t.addr:0x0A0102** set_lpm(v:0x18)",
          "add t_lpm hdr.t.addr:0x0A01**** set_lpm(v:0x10)",
          "add t_tern 10 hdr.t.tk:0x12** hdr.t.k8:0x01 set_tern(v:0xA0)",
          "add t_tern 20 hdr.t.tk:0x1234 hdr.t.k8:0x01 set_tern(v:0xB0)",
          "add t_tern 5 hdr.t.tk:0x**** hdr.t.k8:0x02 set_tern(v:0xC0)"]
    def P(k8, addr, tk): return eth() + bits((8,k8),(32,addr),(16,tk),(32,0))
    def O(k8, addr, tk, re, rl, rt, fl): return eth() + bits((8,k8),(32,addr),(16,tk),(8,re),(8,rl),(8,rt),(8,fl))
    L += ["# exact hit (port 2), lpm /24, ternary: priority 20 beats 10",
          pkt(0, P(1, 0x0A010203, 0x1234)), exp(2, O(1, 0x0A010203, 0x1234, 0x11, 0x18, 0xB0, 1))]
    L += ["# exact hit (port 3), lpm /16, ternary wildcard entry for k8=2",
          pkt(0, P(2, 0x0A010909, 0x0000)), exp(3, O(2, 0x0A010909, 0x0000, 0x22, 0x10, 0xC0, 1))]
    L += ["# lpm /8, ternary priority-10 entry only",
          pkt(0, P(1, 0x0AC80001, 0x12FF)), exp(2, O(1, 0x0AC80001, 0x12FF, 0x11, 0x08, 0xA0, 1))]
    L += ["# all miss: port stays 9, lpm default miss_lpm",
          pkt(0, P(3, 0x0B000001, 0x1234)), exp(9, O(3, 0x0B000001, 0x1234, 0, 0xEE, 0, 2))]
    L += ["setdefault t_lpm set_lpm(v:0x77)",
          "# new default action; still a miss", pkt(0, P(3, 0x0B000001, 0x1234)), exp(9, O(3, 0x0B000001, 0x1234, 0, 0x77, 0, 2))]
    L += ["setdefault t_exact set_exact(v:0x99, port:4)",
          "# default action with data sets the port; .hit is false on a miss", pkt(0, P(5, 0x0A010203, 0x1200)),
          exp(4, O(5, 0x0A010203, 0x1200, 0x99, 0x18, 0, 0))]
    L += ["add t_lpm hdr.t.addr:0x******** set_lpm(v:0x01)",
          "# a /0 route matches everything not covered by a longer prefix: a hit, not a miss (port 4: t_exact default)",
          pkt(0, P(3, 0x0B000001, 0x1234)), exp(4, O(3, 0x0B000001, 0x1234, 0x99, 0x01, 0, 0)),
          pkt(0, P(3, 0x0A0102FF, 0x1234)), exp(4, O(3, 0x0A0102FF, 0x1234, 0x99, 0x18, 0, 0))]
    write('tables_cp', L)

@prog
def counters():
    L = ["# Counters: the packets are forwarded normally; counter values are checked by test_p4_corpus.py.",
         "add fwd_table hdr.ethernet.etherType:0x1234 fwd(port:2)",
         "add fwd_table hdr.ethernet.etherType:0x0800 fwd_counted(port:3)"]
    for idx in [0, 3, 7, 9]:
        i = eth() + bytes([idx]) + b'\x00' * 5
        o = eth() + bytes([idx]) + (b'\xAB\xCD' if idx == 3 else b'') + b'\x00' * 5
        L += [f"# idx={idx}", pkt(0, i), exp(2, o)]
    L += ["# ipv4 ethertype: fwd_counted", pkt(0, eth(etype=0x0800) + bytes(6)), exp(3, eth(etype=0x0800) + bytes(6))]
    L += ["# miss: default port 1", pkt(0, eth(etype=0x86DD) + bytes(2)), exp(1, eth(etype=0x86DD) + bytes(2))]
    write('counters', L)

@prog
def registers():
    L = ["# Registers; the packet carries (op, idx, val, old, sv); old/sv are overwritten by reads."]
    acc = [0] * 16; small = [0] * 4
    def P(op, idx, val=0, old=0x11111111, sv=0x77):
        i = eth() + bits((8,op),(8,idx),(32,val),(32,old),(8,sv))
        if op == 1:
            if idx < 16:
                old = acc[idx]; acc[idx] = u(old + val, 32)
        elif op == 2:
            if idx < 16: old = acc[idx]
        elif op == 3:
            if idx < 4:
                sv = small[idx]; small[idx] = u(sv + 1, 8)
        o = eth() + bits((8,op),(8,idx),(32,val),(32,old),(8,sv))
        return [f"# op={op} idx={idx} val={val:#x}", pkt(0, i), exp(1, o)]
    L += P(1, 2, 10) + P(1, 2, 5) + P(2, 2)
    L += ["# out of bounds read keeps the destination"] + P(2, 20, old=0xDEADBEEF)
    L += ["# out of bounds read+write: nothing changes"] + P(1, 20, 7)
    L += P(2, 15) + P(1, 15, 0xFFFFFFFF) + P(1, 15, 2) + P(2, 15)
    L += P(3, 1) + P(3, 1) + P(3, 1) + P(3, 4) + P(3, 3)
    L += ["register_write MyIngress.acc 3 256"]
    acc[3] = 256
    L += P(2, 3) + P(1, 3, 1) + P(2, 3)
    write('registers', L)

@prog
def hash_algos():
    L = ["# hash(); the r_* fields receive the results, port 1."]
    for a, b, c, d in [(0x1234, 0x56, 0x789, 0xA), (0xFFFF, 0xFF, 0xFFF, 0xF), (0, 0, 0, 0), (0xBEEF, 0x01, 0x002, 0x3)]:
        i = eth() + bits((16,a),(8,b),(12,c),(4,d)) + bytes(18)
        ab = bits((16,a),(8,b))
        r16 = crc16(ab)
        r32 = crc32(bits((8,b),(12,c),(4,d)))
        rcs = csum16(bits((16,a),(8,b),(12,c),(4,d)))
        rid = a
        rmod = 100 + (crc16(ab) % 7)
        r16b = crc16(bits((4,d),(12,c)))
        o = eth() + bits((16,a),(8,b),(12,c),(4,d),(16,r16),(32,r32),(16,rcs),(16,rid),(16,rmod),(16,r16b),(16,42),(16,crc16(bits((12,c),(4,0)))))
        L += [f"# a={a:#x} b={b:#x} c={c:#x} d={d:#x}", pkt(0, i), exp(1, o)]
    write('hash_algos', L)

@prog
def checksums():
    L = ["# IPv4 header checksum and UDP checksum with payload; checked against scapy."]
    from scapy.all import Ether, IP, UDP, TCP, Raw
    def E(p): return bytes(Ether(dst='00:00:00:00:00:02', src='00:00:00:00:00:01') / p)
    # 1: good UDP packet, odd payload length
    pay = b'hello'
    i = E(IP(src='10.0.0.1', dst='10.0.1.2', ttl=64, id=7) / UDP(sport=1234, dport=53) / Raw(pay))
    o = E(IP(src='10.0.0.1', dst='10.0.1.2', ttl=63, id=7) / UDP(sport=1234, dport=8080) / Raw(pay))
    L += ["# good UDP packet: ttl-1, dport 8080, both checksums recomputed", pkt(0, i), exp(1, o)]
    # 2: TCP-ish payload (not parsed): only IPv4 checksum
    i = E(IP(src='192.168.1.1', dst='8.8.8.8', ttl=5, proto=6, id=0x1234) / Raw(b'\x00' * 20))
    o = E(IP(src='192.168.1.1', dst='8.8.8.8', ttl=4, proto=6, id=0x1234) / Raw(b'\x00' * 20))
    L += ["# protocol 6: no udp header, payload untouched", pkt(0, i), exp(1, o)]
    # 3: bad IPv4 checksum -> port 2, fields unchanged, checksum corrected on output
    good = E(IP(src='10.0.0.1', dst='10.0.1.2', ttl=64, id=9) / UDP(sport=1, dport=2) / Raw(b'xy'))
    bad = bytearray(good); bad[24] ^= 0xFF
    L += ["# bad IPv4 checksum: checksum_error=1, port 2; update_checksum rewrites both checksums",
          pkt(0, bytes(bad)), exp(2, good)]
    # 4: UDP with wrong checksum in input; the udp checksum is not verified, only recomputed
    i = bytearray(E(IP(src='1.2.3.4', dst='5.6.7.8', ttl=9) / UDP(sport=7, dport=9) / Raw(b'abcdef')))
    i[40] ^= 0x55
    o = E(IP(src='1.2.3.4', dst='5.6.7.8', ttl=8) / UDP(sport=7, dport=8080) / Raw(b'abcdef'))
    L += ["# wrong udp checksum on input is simply recomputed", pkt(0, bytes(i)), exp(1, o)]
    write('checksums', L)

@prog
def drop_ports():
    L = ["# Drops and default port 0; dropped packets have no expect line."]
    def P(cmd): return eth() + bytes([cmd, 0xFF]) + b'\x99'
    def O(cmd, port): return eth() + bytes([cmd, port & 0xFF]) + b'\x99'
    L += ["# cmd 0: egress_spec never set -> port 0", pkt(1, P(0)), exp(0, O(0, 0))]
    L += ["# cmd 1: mark_to_drop -> dropped", pkt(1, P(1))]
    L += ["# cmd 2: egress_spec = 511 -> dropped", pkt(1, P(2))]
    L += ["# cmd 3: mark_to_drop then egress_spec = 3 -> port 3", pkt(1, P(3)), exp(3, O(3, 3))]
    L += ["# cmd 4: mark_to_drop in egress -> dropped", pkt(1, P(4))]
    L += ["# cmd 5: port 6, egress sees egress_port 6", pkt(1, P(5)), exp(6, O(5, 6))]
    L += ["# cmd 6: port 510 is a normal port", pkt(1, P(6)), exp(510, O(6, 510))]
    L += ["# not our ethertype: port 0, untouched", pkt(2, eth(etype=0x0800)), exp(0, eth(etype=0x0800))]
    write('drop_ports', L)

@prog
def multicast():
    L = ["# Multicast groups; node handles are numbered from 0 in creation order.",
         "mc_mgrp_create 1",
         "mc_node_create 10 2 3",
         "mc_node_create 20 4",
         "mc_node_associate 1 0",
         "mc_node_associate 1 1",
         "mc_mgrp_create 2",
         "mc_node_create 30 2",
         "mc_node_associate 2 2"]
    def P(grp, drop=0): return eth() + bits((8,grp),(8,drop),(16,0xFFFF),(8,0xFF),(8,0xFF)) + b'\x5A'
    def O(grp, rid, port, inst, drop=0): return eth() + bits((8,grp),(8,drop),(16,rid),(8,port),(8,inst)) + b'\x5A'
    L += ["# group 1: ports 2 and 3 with rid 10, port 4 with rid 20", pkt(0, P(1)),
          exp(2, O(1, 10, 2, 5)), exp(3, O(1, 10, 3, 5)), exp(4, O(1, 20, 4, 5))]
    L += ["# group 2: port 2 rid 30", pkt(0, P(2)), exp(2, O(2, 30, 2, 5))]
    L += ["# no group: unicast to port 1, rid 0, instance_type NORMAL", pkt(0, P(0)), exp(1, O(0, 0, 1, 0))]
    L += ["# mark_to_drop clears mcast_grp: dropped", pkt(0, P(1, 1))]
    L += ["# group 7 does not exist: no copies", pkt(0, P(7))]
    L += ["# group 1 again", pkt(5, P(1)), exp(2, O(1, 10, 2, 5)), exp(3, O(1, 10, 3, 5)), exp(4, O(1, 20, 4, 5))]
    L += ["mc_mgrp_create 3",
          "mc_node_create 50 3 7",
          "mc_node_associate 3 3",
          "# group 3: the replica for port 7 is dropped by egress, the one for port 3 goes out",
          pkt(0, P(3)), exp(3, O(3, 50, 3, 5))]
    write('multicast', L)

@prog
def clone():
    L = ["# Clone sessions: 5 -> port 3, 6 -> port 4.",
         "mirroring_add 5 3",
         "mirroring_add 6 4"]
    def P(cmd): return eth() + bytes([cmd, 0xFF, 0xFF, 0xFF, 0xFF, 0x00]) + b'\x77'
    def O(cmd, inst, port, keep, lose, mark): return eth() + bytes([cmd, inst, port, keep, lose, mark]) + b'\x77'
    L += ["# cmd 0: no clone", pkt(0, P(0)), exp(1, O(0, 0, 1, 0xAA, 0xBB, 0x11))]
    L += ["# cmd 1: clone I2E without field list: clone has original headers, metadata reset",
          pkt(0, P(1)), exp(1, O(1, 0, 1, 0xAA, 0xBB, 0x11)), exp(3, O(1, 1, 3, 0, 0, 0))]
    L += ["# cmd 2: clone I2E preserving field list 1: keep survives, lose does not",
          pkt(0, P(2)), exp(1, O(2, 0, 1, 0xAA, 0xBB, 0x11)), exp(3, O(2, 1, 3, 0xAA, 0, 0))]
    L += ["# cmd 3: clone E2E: the clone carries the egress-modified headers, then egress runs again",
          pkt(0, P(3)), exp(1, O(3, 0, 1, 0xAA, 0xBB, 0x11)), exp(4, O(3, 2, 4, 0xAA, 0, 0x11))]
    L += ["# cmd 4: original dropped, the I2E clone still goes out",
          pkt(0, P(4)), exp(3, O(4, 1, 3, 0xAA, 0, 0))]
    write('clone', L)

@prog
def resubmit():
    L = ["# Resubmit twice; only the third pass is forwarded (to port 2)."]
    i = eth() + bytes([0x07, 0, 0, 0xFF, 0, 0xFF]) + b'\x01\x02'
    o = eth() + bytes([0x07, 6, 3, 0, len(i), 0]) + b'\x01\x02'
    L += ["# passes keeps the received value 7 (ingress changes of pass 1 are lost), ingress sees",
          "# instance_type 6, count 3, lost reset, len = received size; egress sees instance_type 0",
          pkt(5, i), exp(2, o)]
    L += ["# other ethertype: unicast to port 1", pkt(5, eth(etype=0x0800)), exp(1, eth(etype=0x0800))]
    write('resubmit', L)

@prog
def recirculate():
    L = ["# Recirculate once; the second pass goes to port 3."]
    i = eth() + bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0xFF]) + b'\xAB'
    # recirculated bytes: rc with mark 0x22 and eg_inst 0, extra C0DE added -> 14+6+2+1 = 23 bytes
    o = eth() + bytes([4, 0x5A, 0x00, 23, 0x22, 0]) + b'\xC0\xDE' + b'\xAB'
    L += ["# ingress of pass 2: inst 4, keep 0x5A (set after the call), lost reset, len 23;",
          "# mark from egress of pass 1; the extra header is now payload; egress sees instance_type 0",
          pkt(0, i), exp(3, o)]
    i = eth() + bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x22, 0xFF]) + b'\xAB'
    o = eth() + bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x22, 0]) + b'\xAB'
    L += ["# already marked: no recirculation, port 1", pkt(0, i), exp(1, o)]
    write('recirculate', L)

@prog
def clone_mc():
    L = ["# Clone session 7 replicates to multicast group 2 (rid 40 on ports 5 and 6).",
         "mc_mgrp_create 2",
         "mc_node_create 40 5 6",
         "mc_node_associate 2 0",
         "mirroring_add_mc 7 2"]
    def P(): return eth() + bytes([0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) + b'\x10'
    def O(inst, rid, port, ok): return eth() + bits((8,inst),(16,rid),(8,port),(8,ok)) + b'\x10'
    L += ["# original to port 1 (instance 0, timestamps ordered), clones to 5 and 6 (instance 1, rid 40)",
          pkt(0, P()), exp(1, O(0, 0, 1, 1)), exp(5, O(1, 40, 5, 0)), exp(6, O(1, 40, 6, 0))]
    L += ["# again", pkt(3, P()), exp(1, O(0, 0, 1, 1)), exp(5, O(1, 40, 5, 0)), exp(6, O(1, 40, 6, 0))]
    L += ["# no cm header: no clone", pkt(0, eth(etype=0x0800)), exp(1, eth(etype=0x0800))]
    write('clone_mc', L)

@prog
def varbit_options():
    L = ["# IPv4 options as varbit; ttl-1, udp dport 7777 (the UDP checksum is not updated), checksum over the options."]
    from scapy.all import Ether, IP, UDP, Raw, IPOption
    def E(p): return bytes(Ether(dst='00:00:00:00:00:02', src='00:00:00:00:00:01') / p)
    for opts in [b'', b'\x01\x01\x01\x00', b'\x94\x04\x00\x00' + b'\x01' * 4, bytes([0x07, 39, 4] + [0] * 36) + b'\x00']:
        i = E(IP(src='10.0.0.1', dst='10.0.0.2', ttl=20, options=[IPOption(opts)] if opts else []) / UDP(sport=5, dport=6) / Raw(b'data'))
        ihl = (i[14] & 0xF)
        assert ihl == 5 + len(opts) // 4, (ihl, len(opts))
        o = bytearray(i)
        o[14 + 8] -= 1                                   # ttl
        o[24:26] = b'\x00\x00'
        c = csum16(bytes(o[14:14 + ihl * 4]))
        o[24:26] = c.to_bytes(2, 'big')
        u0 = 14 + ihl * 4
        o[u0 + 2:u0 + 4] = (7777).to_bytes(2, 'big')     # dport; udp checksum left as it was
        L += [f"# {len(opts)} bytes of options", pkt(0, i), exp(1, bytes(o))]
    write('varbit_options', L)

@prog
def header_union():
    L = ["# header_union; ctl.res = union valid | v4 valid << 1 | v6 valid << 2; port 2."]
    P = b'\x99\x98'
    V4 = bits((8,4),(8,64),(16,0xABCD))
    V6 = bits((8,6),(8,32),(32,0x01020304))
    cases = [("v4 parsed", 4, 0, V4, V4, 3), ("v6 parsed", 6, 0, V6, V6, 5),
             ("v4 turned into v6: v6.setValid() invalidates v4", 4, 1, V4, bits((8,6),(8,64),(32,0xABCD)), 5),
             ("v4.setInvalid(): union empty, nothing emitted", 4, 2, V4, b'', 0),
             ("op 1 on a v6 packet does nothing", 6, 1, V6, V6, 5),
             ("kind 9: no member parsed", 9, 0, b'', b'', 0)]
    for c, kind, op, hin, hout, res in cases:
        L += ["# " + c, pkt(0, eth() + bytes([kind, op, 0xEE]) + hin + P), exp(2, eth() + bytes([kind, op, res]) + hout + P)]
    write('header_union', L)


@prog
def misc_externs():
    L = ["# log/assert/assume/random/digest; port 2."]
    for v in [1, 0x42, 0xFF]:
        i = eth(src=0x0A0B0C0D0E0F) + bytes([v, 0, 0, 0, 0])
        o = eth(src=0x0A0B0C0D0E0F) + bytes([v, 7]) + (1000).to_bytes(2, 'big') + b'\x01'
        L += [f"# v={v:#x}", pkt(3, i), exp(2, o)]
    L += ["# no x header", pkt(3, eth(etype=0x0800)), exp(2, eth(etype=0x0800))]
    write('misc_externs', L)

@prog
def externs_tutorial_style():
    L = ["# Running totals per index."]
    tot = [0] * 8
    for idx, add in [(1, 5), (1, 7), (2, 1), (1, 0xFFFFFFFF), (7, 3)]:
        i = eth() + bits((32,idx),(32,add),(32,0))
        tot[idx] = u(tot[idx] + add, 32)
        o = eth() + bits((32,idx),(32,add),(32,tot[idx]))
        L += [f"# idx={idx} add={add:#x}", pkt(0, i), exp(1, o)]
    write('externs_tutorial_style', L)

@prog
def structs_exprs():
    L = ["# structs, ?:, header equality, short-circuit evaluation; port 1."]
    for a, b, w in [(5, 9, 0x1234), (200, 3, 0xFFFF), (0, 0, 0)]:
        i = eth() + bits((8,a),(8,b),(16,w)) + bytes(7)
        mx = a if a > b else b
        sc = 0; calls = 0
        if a == 0: sc |= 0x10
        else:
            calls += 1; sc |= 0x10
        if a != 0:
            calls += 1; sc |= 0x20
        sc += calls
        o = eth() + bits((8,a),(8,b),(16,w),(8,mx),(8,b),(8,a),(16,u(w+1,16)),(8,3),(8,sc))
        L += [f"# a={a} b={b} w={w:#x}", pkt(0, i), exp(1, o)]
    write('structs_exprs', L)

@prog
def subcontrol_tables():
    L = ["# Two instances of one control, each with its own table.",
         "add MyIngress.lookup_src.t addr:0x000000000001 set_class(c:0x11)",
         "add MyIngress.lookup_dst.t addr:0x000000000002 set_class(c:3)",
         "add MyIngress.lookup_dst.t addr:0x000000000001 set_class(c:4)"]
    def P(dst, src): return eth(dst=dst, src=src, etype=0x9999) + b'\x00\x00'
    def O(dst, src, sc, dc): return eth(dst=dst, src=src, etype=0x9999) + bytes([sc, dc])
    L += ["# src known in the src table, dst known in the dst table", pkt(0, P(2, 1)), exp(3, O(2, 1, 0x11, 3))]
    L += ["# 1 is in the dst table but not in the src table (tables are separate)", pkt(0, P(1, 2)), exp(4, O(1, 2, 0xFF, 4))]
    L += ["# both unknown: dst class 0xFF -> port 255", pkt(0, P(5, 6)), exp(255, O(5, 6, 0xFF, 0xFF))]
    write('subcontrol_tables', L)

@prog
def std_metadata():
    L = ["# standard_metadata fields; egress port = ingress port + 1; b is emitted before sm;",
         "# from port 7 ingress removes b, which egress sees in packet_length."]
    SMLEN = 2 + 4 + 4 + 2 + 1 + 2 + 4
    for port, extra in [(0, b''), (7, b'\x01\x02\x03'), (100, bytes(50))]:
        i = eth() + b'\xFF' * SMLEN + b'\xB0' + extra
        n = len(i)
        eg_len = n - 1 if port == 7 else n
        sm_out = bits((16,port),(32,n),(32,0),(16,port+1),(8,0),(16,0),(32,eg_len))
        o = eth() + (b'' if port == 7 else b'\xB0') + sm_out + extra
        L += [f"# in port {port}, {n} bytes", pkt(port, i), exp(port + 1, o)]
    i = eth() + bytes(SMLEN)
    L += ["# b missing: PacketTooShort; sm still valid, err=0xEE; b not emitted", pkt(3, i),
          exp(4, eth() + bits((16,3),(32,len(i)),(32,0),(16,4),(8,0xEE),(16,0),(32,len(i))))]
    write('std_metadata', L)

@prog
def arith_wide():
    L = ["# 64/48/128-bit arithmetic; port 1."]
    M64 = (1 << 64) - 1
    def sgn64(v):
        v &= M64
        return v - (1 << 64) if v >> 63 else v
    for a, b, m, s in [(0xFFFFFFFFFFFFFFFF, 2, 0xFFFFFFFFFFFF, 1), (0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x123456789ABC, 63),
                       (1, 0x8000000000000000, 0, 64), (0x8000000000000000, 0x7FFFFFFFFFFFFFFF, 5, 0)]:
        i = eth() + bits((64,a),(64,b),(48,m),(8,s)) + bytes(8*4 + 6 + 16 + 4 + 8 + 8)
        shl = (a << s) & M64 if s < 64 else 0
        shr = a >> s if s < 64 else 0
        o = eth() + bits((64,a),(64,b),(48,m),(8,s),(64,(a+b)&M64),(64,(a*b)&M64),(64,shl),(64,shr),(48,(m+1)&((1<<48)-1)),
                         (128,(a<<64)|b),(32,a>>32),(64,-sgn64(a)),(64,min(a+b,M64)))
        L += [f"# a={a:#x} b={b:#x} m={m:#x} s={s}", pkt(0, i), exp(1, o)]
    write('arith_wide', L)

@prog
def checksum_payload():
    L = ["# checksums over header fields + payload; port 1; err = checksum_error."]
    for ln, pad, payload, good in [(5, 1, b'hello', True), (4, 0xFF, b'abcd', True), (3, 7, b'xyz', False), (0, 0, b'', True)]:
        c = csum16(bits((16,ln),(8,pad)) + payload)
        cin = c if good else c ^ 0x0101
        i = eth() + bits((16,ln),(8,pad),(8,0xEE),(16,cin)) + payload
        npad = (pad + 1) & 0xFF if good else pad
        o = eth() + bits((16,ln),(8,npad),(8,0 if good else 1),(16,csum16(bits((16,ln),(8,npad)) + payload))) + payload
        L += [f"# len={ln} pad={pad} payload={payload!r} {'good' if good else 'bad'} checksum", pkt(0, i), exp(1, o)]
    write('checksum_payload', L)

@prog
def tables_mixed_keys():
    L = ["# lpm+exact, ternary with * nibbles, egress table on egress_port; lpm prefixes as * digits.",
         "add t_vrf hdr.k.vrf:1 hdr.k.addr:0x0A****** set_lpm(v:1)",
         "add t_vrf hdr.k.vrf:2 hdr.k.addr:0x0A00**** set_lpm(v:2)",
         "add t_vrf hdr.k.vrf:1 hdr.k.addr:0x0A01**** set_lpm(v:3)",
         "add t_tern 10 hdr.k.tk:0x12** set_tern(v:0x0A)",
         "add t_tern 20 hdr.k.tk:0x**34 set_tern(v:0x0B)",
         "add MyEgress.t_eg standard_metadata.egress_port:2 set_eg(v:0x22)",
         "add MyEgress.t_eg standard_metadata.egress_port:3 set_eg(v:0x33)"]
    def lpm(vrf, a):
        if vrf == 1:
            if a >> 16 == 0x0A01: return 3
            if a >> 24 == 0x0A: return 1
        if vrf == 2 and a >> 16 == 0x0A00: return 2
        return 0
    def tern(t):
        if t & 0xFF == 0x34: return 0x0B
        if t >> 8 == 0x12: return 0x0A
        return 0
    for vrf, a, t, port in [(1, 0x0A010203, 0x1234, 2), (1, 0x0A020304, 0x12FF, 3), (2, 0x0A000001, 0x5634, 4),
                            (2, 0x0A010001, 0x0000, 2), (3, 0x0A010203, 0x1200, 3)]:
        i = eth() + bits((8,vrf),(32,a),(16,t),(8,port),(24,0))
        eg = {2: 0x22, 3: 0x33}.get(port, 0xEE)
        o = eth() + bits((8,vrf),(32,a),(16,t),(8,port),(8,lpm(vrf,a)),(8,tern(t)),(8,eg))
        L += [f"# vrf={vrf} addr={a:#x} tk={t:#x} port={port}", pkt(0, i), exp(port, o)]
    write('tables_mixed_keys', L)

@prog
def lookahead_header():
    L = ["# calc-style: answers go back out of the ingress port with MACs swapped; others to port 9."]
    def C(p, f, v, op, a, b, res=0): return bits((8,p),(8,f),(8,v),(8,op),(32,a),(32,b),(32,res))
    for op, a, b, r in [(0x2b, 7, 5, 12), (0x2d, 5, 7, u(5-7,32)), (0x26, 0xF0F0, 0xFF00, 0xF000)]:
        i = eth(dst=0xAA, src=0xBB) + C(0x50, 0x34, 1, op, a, b)
        o = eth(dst=0xBB, src=0xAA) + C(0x50, 0x34, 1, op, a, b, r)
        L += [f"# op {chr(op)}", pkt(4, i), exp(4, o)]
    L += ["# unknown op: const default action drops", pkt(4, eth(dst=0xAA, src=0xBB) + C(0x50, 0x34, 1, 0x2a, 1, 1))]
    i = eth(dst=0xAA, src=0xBB) + C(0x50, 0x34, 2, 0x2b, 1, 1)
    L += ["# wrong version: not parsed (lookahead consumed nothing), port 9 unchanged", pkt(4, i), exp(9, i)]
    i = eth(dst=0xAA, src=0xBB) + b'P4'
    L += ["# too short for lookahead<calc_t>: PacketTooShort, not dropped, port 9", pkt(4, i), exp(9, i)]
    write('lookahead_header', L)

@prog
def parser_counter():
    L = ["# counted parser loop; res gets the sum of the items and the sign flag."]
    for n, sgn, items in [(3, 0, [1, 2, 3]), (0, -1, []), (5, -1, [10, 20, 30, 40, 50]), (2, 5, [0xFF, 2])]:
        i = eth() + bits((8,n),(8,sgn)) + bytes(items) + b'\x00\x00' + b'\xCC'
        o = eth() + bits((8,n),(8,sgn)) + bytes(items) + bytes([sum(items) & 0xFF, 1 if sgn == -1 else 0]) + b'\xCC'
        L += [f"# n={n} sgn={sgn} items={items}", pkt(0, i), exp(1, o)]
    i = eth() + bits((8,6),(8,0)) + bytes([1, 2, 3, 4, 5, 6]) + b'\x00\x00'
    L += ["# six items overflow the stack of five: StackOutOfBounds -> port 2, res not parsed", pkt(0, i), exp(2, i)]
    write('parser_counter', L)

@prog
def copy_semantics():
    L = ["# copy-in/copy-out; port 1."]
    for a, d, e, f in [(7, 5, 3, 0xFF), (0, 0xFE, 0xF8, 0)]:
        i = eth() + bytes([a, 0, 0x11, d, e, f])
        d1 = u(d + 1, 8); d2 = u(d1 + 1, 8)
        o = eth() + bytes([0x55, a, 2, u(d1 + d2 * 2, 8), u(9 + e, 8), u(f + 1, 8)])
        L += [f"# a={a} d={d} e={e} f={f}", pkt(0, i), exp(1, o)]
    write('copy_semantics', L)

@prog
def invalid_reads():
    L = ["# reads of invalid headers and uninitialized values (BMv2 behaviour); port 1."]
    for v in (0, 1):
        i = eth() + bytes([v, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) + b'\x42' + b'\xEE'
        o = eth() + bytes([v, 0, 0x42, 0, 0, 0x77]) + (b'\x00' if v == 1 else b'') + b'\xEE'
        L += [f"# v={v}: b removed; scratch {'made valid (zeroed)' if v else 'stays invalid'}", pkt(0, i), exp(1, o)]
    write('invalid_reads', L)


@prog
def hash_invalid_fields():
    L = ["# crc16({opt.x, h.a}) into h.r; opt is only valid when a == 0xFFFF; port 1."]
    for a, x in [(0x1234, None), (0xFFFF, 0x56), (0x0000, None), (0xFFFF, 0x00)]:
        data = (bytes([x]) if x is not None else b'') + a.to_bytes(2, 'big')
        i = eth(etype=0x0800) + bits((16,a),(16,0)) + (bytes([x]) if x is not None else b'') + b'\x77'
        o = eth(etype=0x0800) + bits((16,a),(16,crc16(data))) + (bytes([x]) if x is not None else b'') + b'\x77'
        L += [f"# a={a:#x} opt={'invalid' if x is None else hex(x)}: hash input {data.hex()}", pkt(0, i), exp(1, o)]
    write('hash_invalid_fields', L)


@prog
def compound_arrays():
    L = ["# Compound assignment and arrays of values; results in the ops header, packet to port 1."]
    cases = [(200, 100, 3, 0, 0x0102), (10, 20, 9, 1, 0xFFFF), (255, 255, 0, 2, 0), (0x81, 0, 7, 3, 0x8000), (7, 250, 8, 6, 0x7FFF)]
    for a, b, s, idx, acc in cases:
        inp = eth() + bits((8,a),(8,b),(8,s),(8,idx)) + bytes(10) + bits((16,acc)) + bytes(6)
        arr = [a, b, s, 0x10]
        i = idx & 3
        at = arr[i]
        arr[i] = sat_u(arr[i] + 200, 8)
        out = eth() + bits((8,a),(8,b),(8,s),(8,idx),
            (8,u(a+b,8)),(8,u(a-b,8)),(8,u(a*b,8)),(8,a&b),(8,a|b),(8,a^b),
            (8,u(a << s, 8) if s < 8 else 0),(8,a >> s if s < 8 else 0),(8,sat_u(a+b,8)),(8,sat_u(a-b,8)),
            (16,u(u(acc+a,16) << 1,16)),
            (8,at),(8,arr[i]),(8,arr[0]),(8,4),(8,a^0xFF),(8,u(sum(arr),8)))
        L += [f"# a={a} b={b} s={s} idx={idx} acc={acc:#x}", pkt(0, inp), exp(1, out)]
    L += ["# other ethertype: untouched", pkt(2, eth(etype=0x0800) + b'\x01\x02'), exp(1, eth(etype=0x0800) + b'\x01\x02')]
    write('compound_arrays', L)

@prog
def parser_forms():
    L = ["# select on bool and enum labels, a state without transition, extract<H>(_), a header with a",
         "# struct field, a stack of header_unions, update_checksum with named arguments."]
    def tag(kind, flag, path=0, err=0):
        return bits((8,kind),(8,flag),(8,path),(8,err))
    def pair(hi, lo, mid, z, csum):
        return bits((4,hi),(4,lo),(8,mid),(8,z),(16,csum))
    def pair_out(hi, lo, mid, z):
        mid = u(mid + lo, 8); hi = lo
        return pair(hi, lo, mid, z, csum16(bits((4,hi),(4,lo),(8,mid),(8,z))))
    # kind 1 (PAIRS), flag 0: the pair header follows the tag; port 1 + 1
    for hi, lo, mid, z in [(0xA, 0x3, 0x10, 0x77), (0xF, 0xF, 0xFA, 0x00), (0, 0, 0, 0xFF)]:
        inp = eth() + tag(1, 0) + pair(hi, lo, mid, z, 0xDEAD) + b'\x55'
        L += [f"# pairs, no skip: p=({hi},{lo},{mid}) z={z}", pkt(0, inp),
              exp(2, eth() + tag(1, 0, 1, 0) + pair_out(hi, lo, mid, z) + b'\x55')]
    # flag 1: two bytes skipped with extract<skip_t>(_): gone from the output
    inp = eth() + tag(1, 1) + bits((16, 0x9999)) + pair(1, 2, 3, 4, 0) + b'\x66\x67'
    L += ["# pairs after a skipped skip_t", pkt(3, inp), exp(2, eth() + tag(1, 1, 1, 0) + pair_out(1, 2, 3, 4) + b'\x66\x67')]
    # kind 2 (UNIONS): us[0].a (1 byte), us[1].b (2 bytes); ingress adds a.v to b.w and makes
    # us[0].b valid (0xBEEF) instead of us[0].a; emit writes us[0].b then us[1].b
    for v, w in [(0x05, 0x1000), (0xFF, 0xFFF0)]:
        inp = eth() + tag(2, 0) + bits((8, v), (16, w)) + b'\x01'
        out = eth() + tag(2, 0, 2, 0) + bits((16, 0xBEEF), (16, u(w + v, 16))) + b'\x01'
        L += [f"# unions v={v:#x} w={w:#x}", pkt(1, inp), exp(3, out)]
    # kind 3: parse_no_transition extracts last and goes to reject: ingress still runs, last is
    # valid and emitted, the rest stays payload; err is left as received
    inp = eth() + tag(3, 0, 0, 0x42) + bits((8, 0x33)) + b'\x99\x98'
    L += ["# a state without transition goes to reject; the packet is not dropped", pkt(0, inp),
          exp(4, eth() + tag(3, 0, 3, 0x42) + bits((8, 0x33)) + b'\x99\x98')]
    # kind 9: no matching label (default: accept), nothing more parsed
    inp = eth() + tag(9, 0) + b'\x01\x02'
    L += ["# unknown kind: default label", pkt(0, inp), exp(1, eth() + tag(9, 0, 0, 0) + b'\x01\x02')]
    # not 0x1234: select on a bool, false: accept
    inp = eth(etype=0x0800) + b'\x01\x02\x03\x04'
    L += ["# other ethertype", pkt(0, inp), exp(1, inp)]
    write('parser_forms', L)


@prog
def field_list_names():
    # BMv2: resubmit/recirculate/I2E clone reset all metadata, then copy the fields of the
    # field list the call names (@field_list ids given as a const and as enum members)
    FL = {"resub": {"both", "rs"}, "recirc": {"nest.r"}, "FL_PACKET_IN": {"both", "cl"}}
    def kept(values, fl):
        return [values[f] if f in FL[fl] else 0 for f in ("both", "cl", "rs", "nest.r")]
    L = ["# @field_list ids given as a const and as enum members (see the .p4)", "mirroring_add 5 3"]
    v = {"both": 0x11, "cl": 0x12, "rs": 0x13, "nest.r": 0x14}
    L += ["# resubmit with FieldLists.resub: both and rs survive; cl and nest.r (other lists) are reset",
          f"packet 0 {hx(bytes([1, 0, 0, 0, 0]))}", f"expect 1 {hx(bytes([1] + kept(v, 'resub')))}"]
    v = {"both": 0x21, "cl": 0x22, "rs": 0x23, "nest.r": 0x24}
    L += ["# recirculate with FieldLists.recirc: only nest.r (a field of a nested struct) survives",
          f"packet 0 {hx(bytes([2, 0, 0, 0, 0]))}", f"expect 1 {hx(bytes([2] + kept(v, 'recirc')))}"]
    v = {"both": 0x31, "cl": 0x32, "rs": 0x33, "nest.r": 0x34}
    L += ["# I2E clone with FL_PACKET_IN (a const): both and cl reach the clone's egress",
          f"packet 0 {hx(bytes([3, 0, 0, 0, 0]))}", f"expect 1 {hx(bytes([3, 0, 0, 0, 0]))}",
          f"expect 3 {hx(bytes([3] + kept(v, 'FL_PACKET_IN')))}"]
    write('field_list_names', L)


if __name__ == '__main__':
    for n in (sys.argv[1:] or GEN):
        GEN[n]()
