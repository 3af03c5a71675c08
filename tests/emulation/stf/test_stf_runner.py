"""The STF runner (emulation/stf/runner.py).

Most tests drive the runner with ``FakeSwitch``: a tiny hand-written data plane that
implements the public Switch API (process, table_*, mc_*, mirroring_add, register_*,
counter_*, direct_counter_read, program.info) on top of the real match tables of
``emulation.v1model.tables``.  The assertions check the runner's own behaviour: name
resolution, value conversion, priorities, per-port comparison and its messages.
End-to-end tests with real P4 programs run when the front end is importable.
"""
from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest

from emulation.p4.info import (ActionInfoP, ExternInstanceInfo, KeyInfoP, ParamInfo,
                               ProgramInfo, TableActionRef, TableInfo)
from emulation.p4.errors import Loc, P4Error
from emulation.stf import runner as stf_runner
from emulation.stf.parser import StfError
from emulation.stf.runner import (StfResult, apply_commands, compare_packet, main,
                                  run_stf, run_stf_text, to_match_spec)
from emulation.v1model.load import load_switch
from emulation.v1model.tables import ActionInfo, KeyInfo, Table
from host_agent.match import Exact, Lpm, Optional_, Range, Ternary
from testsupport.crc_reference import crc16_arc

# ---------------------------------------------------------------- the fake switch
ACTIONS = {
    "MyIngress.forward": [("port", 9)],
    "MyIngress.drop": [],
    "MyIngress.mcast": [("grp", 16)],
    "MyIngress.set_tos": [("tos", 8)],
    "NoAction": [],
}
TABLES = {
    # name: (keys [(name, kind, width)], actions, default)
    "MyIngress.dmac": ([("hdr.ethernet.dstAddr", "exact", 48)],
                       ["MyIngress.forward", "MyIngress.drop", "MyIngress.mcast"], "MyIngress.drop"),
    "MyIngress.ipv4_lpm": ([("hdr.ipv4.dstAddr", "lpm", 32)], ["MyIngress.forward", "NoAction"],
                           "NoAction"),
    "MyIngress.acl": ([("hdr.ethernet.etherType", "ternary", 16), ("hdr.ipv4.protocol", "range", 8)],
                      ["MyIngress.set_tos", "NoAction"], "NoAction"),
    "MyEgress.opt": ([("hdr.ipv4.isValid()", "exact", 1), ("hdr.ipv4.ttl", "optional", 8)],
                     ["MyIngress.set_tos", "NoAction"], "NoAction"),
}


class _DirectCtr:
    def __init__(self, sw):
        self.sw = sw

    def packet_bytes(self):
        return self.sw._len


class FakeSwitch:
    """Ethernet/IPv4 forwarding: ipv4_lpm (if IPv4) else dmac; acl may rewrite the TOS byte."""

    def __init__(self):
        info = ProgramInfo()
        for a, ps in ACTIONS.items():
            info.actions.append(ActionInfoP(name=a, params=[ParamInfo(name=n, width=w) for n, w in ps]))
        self.tables = {}
        self._len = 0
        for t, (keys, acts, dflt) in TABLES.items():
            info.tables.append(TableInfo(name=t, keys=[KeyInfoP(name=n, match_kind=k, width=w)
                                                       for n, k, w in keys],
                                         actions=[TableActionRef(name=a) for a in acts],
                                         default_action=dflt))
            self.tables[t] = Table(t, [KeyInfo(n, k, w) for n, k, w in keys],
                                   [ActionInfo(a, i, ACTIONS[a], None) for i, a in enumerate(acts)],
                                   (dflt, ()), direct_counter=_DirectCtr(self) if t == "MyIngress.dmac" else None)
        info.externs = [ExternInstanceInfo(kind="counter", name="MyIngress.port_ctr", size=8),
                        ExternInstanceInfo(kind="register", name="MyIngress.last_port", size=4, width=9),
                        ExternInstanceInfo(kind="direct_counter", name="MyIngress.dmac_ctr",
                                           table="MyIngress.dmac")]
        self.program = SimpleNamespace(info=info)
        self.registers = {"MyIngress.last_port": [0] * 4}
        self.counters = {"MyIngress.port_ctr": [[0, 0] for _ in range(8)]}
        self.groups: dict[int, list[int]] = {}
        self.nodes: list[tuple[int, list[int]]] = []
        self.sessions: dict[int, tuple] = {}

    # -- names (suffix resolution like the real switch)
    @staticmethod
    def _res(names, name):
        if name in names:
            return name
        c = [n for n in names if n.endswith("." + name)]
        if len(c) != 1:
            raise KeyError(f"no unique object named {name!r}")
        return c[0]

    def table_add(self, table, action, match, args=(), priority=None):
        return self.tables[self._res(self.tables, table)].add(match, action, args, priority)

    def table_set_default(self, table, action, args=()):
        self.tables[self._res(self.tables, table)].set_default(action, args)

    def table_entries(self, table):
        return self.tables[self._res(self.tables, table)].entries()

    def table_delete(self, table, handle):
        self.tables[self._res(self.tables, table)].delete(handle)

    def direct_counter_read(self, table, handle):
        e = self.tables[self._res(self.tables, table)].entry(handle)
        return e.packets, e.bytes

    def register_read(self, name, index):
        return self.registers[self._res(self.registers, name)][index]

    def register_write(self, name, index, value):
        self.registers[self._res(self.registers, name)][index] = value

    def counter_read(self, name, index):
        return tuple(self.counters[self._res(self.counters, name)][index])

    def counter_write(self, name, index, packets, nbytes):
        self.counters[self._res(self.counters, name)][index] = [packets, nbytes]

    def mc_group_create(self, mgid):
        if mgid in self.groups:
            raise ValueError(f"multicast group {mgid} exists")
        self.groups[mgid] = []

    def mc_node_create(self, rid, ports):
        self.nodes.append((rid, list(ports)))
        return 100 + len(self.nodes) - 1          # deliberately not 0, 1, 2...

    def mc_node_associate(self, mgid, handle):
        self.groups[mgid].append(handle)

    def mirroring_add(self, session, egress_port=None, mgid=None):
        self.sessions[session] = (egress_port, mgid)

    # -- the "program"
    def _run(self, table, key):
        fn, args, hit, idx = self.tables[table].lookup(key)
        return list(self.tables[table].actions)[idx], args, hit

    def process(self, port, frame):
        self._len = len(frame)
        c = self.counters["MyIngress.port_ctr"][port % 8]
        c[0] += 1
        c[1] += len(frame)
        self.registers["MyIngress.last_port"][0] = port
        if len(frame) < 14:
            return []
        dst = int.from_bytes(frame[0:6], "big")
        etype = int.from_bytes(frame[12:14], "big")
        ipv4 = etype == 0x0800 and len(frame) >= 34
        action, args = None, ()
        if ipv4:
            action, args, hit = self._run("MyIngress.ipv4_lpm", int.from_bytes(frame[30:34], "big"))
            if not hit:
                action = None
        if action is None:
            action, args, hit = self._run("MyIngress.dmac", dst)
        out = bytearray(frame)
        a2, a2args, _ = self._run("MyIngress.acl", (etype, frame[23] if ipv4 else 0))
        if a2 == "MyIngress.set_tos" and ipv4:
            out[15] = a2args[0]
        if action == "MyIngress.forward":
            return [(args[0], bytes(out))]
        if action == "MyIngress.mcast":
            res = []
            for h in self.groups.get(args[0], []):
                rid, ports = self.nodes[h - 100]
                res += [(p, bytes(out)) for p in ports]
            return res
        return []


def eth(dst, src=0xA, etype=0x9000, payload=b""):
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big") + payload


def ipv4(dst_ip, tos=0, proto=6, dst=1):
    ip = bytes([0x45, tos]) + (20).to_bytes(2, "big") + bytes(4) + bytes([64, proto]) + bytes(2) \
        + (0x0A000001).to_bytes(4, "big") + dst_ip.to_bytes(4, "big")
    return eth(dst, etype=0x0800, payload=ip)


def run(text, sw=None):
    sw = sw or FakeSwitch()
    return run_stf_text(sw, textwrap.dedent(text), "t.stf"), sw


# ---------------------------------------------------------------- passing runs
def test_forwarding_passes_and_counts():
    p1 = eth(1).hex()
    p2 = eth(2).hex()
    res, sw = run(f"""
        add dmac hdr.ethernet.dstAddr:0x000000000001 forward(port:1)
        add MyIngress.dmac dstAddr:2 MyIngress.forward(port:2)
        packet 0 {p1}
        expect 1 {p1}
        packet 0 {p2}
        expect 2 {p2} $
        packet 0 {p1}
        expect 1 {p1[:10]}
        """)
    assert res.ok, res.messages
    assert res.counts["packets_in"] == 3 and res.counts["packets_out"] == 3
    assert res.counts["expects"] == 3
    assert len(sw.table_entries("MyIngress.dmac")) == 2


def test_wildcard_nibbles_and_prefix_match():
    p = eth(1, src=0x123456789ABC)
    h = p.hex()
    masked = h[:14] + "**" + h[16:20]
    res, _ = run(f"""
        add dmac hdr.ethernet.dstAddr:1 forward(port:3)
        packet 0 {h}
        expect 3 {masked}
        """)
    assert res.ok, res.messages


def test_priority_larger_wins_ternary_and_nibble_mask():
    pkt = ipv4(0x0A000005, proto=17).hex()
    res, sw = run(f"""
        add ipv4_lpm hdr.ipv4.dstAddr:10.0.0.0/8 forward(port:4)
        add acl 10 hdr.ethernet.etherType:0x0800&&&0xffff hdr.ipv4.protocol:0..255 set_tos(tos:0x11)
        add acl 20 etherType:0x08** protocol:17..17 set_tos(tos:0x22)
        add acl 5 etherType:0x**00 set_tos(tos:0x33)
        packet 0 {pkt}
        expect 4 {pkt[:30]}22
        """)
    assert res.ok, res.messages
    prios = sorted(e.priority for e in sw.table_entries("acl"))
    assert prios == [5, 10, 20]
    # the nibble form 0x08** became value 0x0800 mask 0xff00; range key absent = full range
    e20 = [e for e in sw.table_entries("acl") if e.priority == 20][0]
    assert e20.match["hdr.ethernet.etherType"] == Ternary(0x0800, 0xFF00)
    assert e20.match["hdr.ipv4.protocol"] == Range(17, 17)
    e5 = [e for e in sw.table_entries("acl") if e.priority == 5][0]
    assert e5.match["hdr.ipv4.protocol"] == Range(0, 255)


def test_lower_priority_loses():
    pkt = ipv4(0x0A000005, proto=17).hex()
    res, _ = run(f"""
        add ipv4_lpm hdr.ipv4.dstAddr:10.0.0.0/8 forward(port:4)
        add acl 1 etherType:0x0800 set_tos(tos:0x22)
        add acl 9 etherType:0x0800 set_tos(tos:0x11)
        packet 0 {pkt}
        expect 4 {pkt[:30]}11
        """)
    assert res.ok, res.messages


def test_longest_prefix_wins_and_hex_prefix_forms():
    pkt = ipv4(0x0A010203).hex()
    res, sw = run(f"""
        add ipv4_lpm dstAddr:0x0a000000/8 forward(port:1)
        add ipv4_lpm dstAddr:0x0a01****   forward(port:2)
        add ipv4_lpm dstAddr:10.1.2.0/24 forward(port:3)
        packet 0 {pkt}
        expect 3 {pkt}
        """)
    assert res.ok, res.messages
    plens = sorted(e.match["hdr.ipv4.dstAddr"].prefix_len for e in sw.table_entries("ipv4_lpm"))
    assert plens == [8, 16, 24]


def test_multicast_handles_and_per_port_order():
    p1, p2 = eth(9).hex(), eth(9, src=0xB).hex()
    res, sw = run(f"""
        mc_mgrp_create 7
        mc_node_create 0 1 2
        mc_node_create 1 3
        mc_node_associate 7 0
        mc_node_associate 7 1
        add dmac dstAddr:9 mcast(grp:7)
        packet 0 {p1}
        packet 0 {p2}
        # per-port order matters, cross-port order does not
        expect 3 {p1}
        expect 2 {p1}
        expect 1 {p1}
        expect 3 {p2}
        expect 1 {p2}
        expect 2 {p2}
        """)
    assert res.ok, res.messages
    assert sw.groups[7] == [100, 101]          # STF handles 0, 1 mapped to the switch's handles


def test_registers_counters_and_direct_counter():
    p = eth(1).hex()
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1) = E1
        register_write last_port 2 0x1ff
        register_read MyIngress.last_port 2 511
        packet 5 {p}
        packet 5 {p}
        expect 1 {p}
        expect 1 {p}
        register_read last_port 0 == 5
        counter_read port_ctr 5 packets 2 bytes 28
        check_counter port_ctr(5) bytes == 28
        check_counter MyIngress.port_ctr(5) packets >= 2
        check_counter dmac_ctr($E1) packets == 2
        check_counter dmac_ctr($E1) bytes == 28
        counter_write port_ctr 5 0 0
        check_counter port_ctr(5) == 0
        """)
    assert res.ok, res.messages
    assert res.counts["checks"] == 9


def test_remove_all_and_by_id():
    p = eth(1).hex()
    res, sw = run(f"""
        add dmac dstAddr:1 forward(port:1) = A
        add dmac dstAddr:2 forward(port:2) = B
        remove $A
        packet 0 {p}
        """)
    assert res.ok, res.messages                       # port 0 had no output: drop by default
    assert [e.match["hdr.ethernet.dstAddr"] for e in sw.table_entries("dmac")] == [Exact(2)]
    res, sw = run("""
        add dmac dstAddr:1 forward(port:1)
        add ipv4_lpm dstAddr:10.0.0.0/8 forward(port:1)
        remove all
        """)
    assert res.ok and sw.table_entries("dmac") == [] and sw.table_entries("ipv4_lpm") == []


def test_setdefault_and_expect_any():
    p = eth(77).hex()
    res, _ = run(f"""
        setdefault dmac forward(port:6)
        packet 0 {p}
        packet 0 {p}
        expect 6
        """)
    assert res.ok, res.messages
    # "expect PORT" without data accepts any number of packets, including none (p4c)
    res, _ = run(f"""
        packet 0 {p}
        expect 6
        """)
    assert res.ok, res.messages


def test_output_on_unmentioned_port_is_ignored_but_noted():
    p = eth(1).hex()
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:9)
        packet 0 {p}
        """)
    assert res.ok
    assert any("ignored 1 packet(s) on port 9" in m for m in res.messages)


# ---------------------------------------------------------------- failing runs
def test_payload_mismatch_reports_port_offset_and_both_packets():
    p = eth(1)
    wrong = bytearray(p)
    wrong[13] ^= 0xFF
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1)
        packet 0 {p.hex()}
        expect 1 {wrong.hex()}
        """)
    assert not res.ok
    msg = "\n".join(res.messages)
    assert "t.stf:4: port 1, packet #1" in msg
    assert "differs at byte 13 (nibble 26)" in msg
    assert "expected: " + " ".join(f"{b:02X}" for b in wrong) in msg
    assert "got:      " + " ".join(f"{b:02X}" for b in p) in msg
    # the caret sits under the first differing nibble
    lines = msg.splitlines()
    got_line = next(i for i, l in enumerate(lines) if l.lstrip().startswith("got:"))
    caret_col = lines[got_line + 1].index("^")
    assert lines[got_line][caret_col] == f"{p[13]:02X}"[0]
    assert lines[got_line][len("    got:      "):caret_col].split(" ")[-1] == ""   # at a byte start


def test_missing_and_extra_packets_fail():
    p = eth(1).hex()
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1)
        packet 0 {p}
        expect 1 {p}
        expect 1 {p}
        """)
    assert not res.ok
    assert any("port 1: expected 2 packet(s), got 1" in m for m in res.messages)
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1)
        packet 0 {p}
        packet 0 {p}
        expect 1 {p}
        """)
    assert not res.ok
    assert any("port 1: expected 1 packet(s), got 2" in m for m in res.messages)


def test_expected_port_without_output_fails():
    p = eth(1).hex()
    res, _ = run(f"""
        packet 0 {p}
        expect 3 {p}
        """)
    assert not res.ok
    assert any("port 3: expected 1 packet(s), got 0" in m for m in res.messages)


def test_unexpected_output_on_a_test_port_fails():
    # port 0 is an interface of the test (a packet line names it) and expects nothing
    p = eth(1).hex()
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:0)
        packet 0 {p}
        """)
    assert not res.ok
    assert any("port 0: expected 0 packet(s), got 1" in m for m in res.messages)


def test_exact_length_and_too_short():
    p = eth(1).hex()
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1)
        packet 0 {p}
        expect 1 {p[:-2]} $
        """)
    assert not res.ok and any("too long: 14 bytes, expected exactly 13" in m for m in res.messages)
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1)
        packet 0 {p}
        expect 1 {p}00
        """)
    assert not res.ok and any("too short: 14 bytes, expected at least 15" in m for m in res.messages)


def test_per_port_order_is_checked():
    p1, p2 = eth(1).hex(), eth(1, src=0xB).hex()
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1)
        packet 0 {p1}
        packet 0 {p2}
        expect 1 {p2}
        expect 1 {p1}
        """)
    assert not res.ok
    assert sum("port 1, packet #" in m for m in res.messages) == 2


def test_failed_checks():
    res, _ = run("""
        register_write last_port 1 3
        register_read last_port 1 4
        check_counter port_ctr(2) packets == 1
        check_counter port_ctr(2) bytes != 0
        """)
    assert not res.ok
    msg = "\n".join(res.messages)
    assert "t.stf:3: register MyIngress.last_port[1] is 3" in msg or "t.stf:3: register last_port[1] is 3" in msg
    assert "t.stf:4: counter port_ctr(2) packets is 0, expected == 1" in msg
    assert "t.stf:5: counter port_ctr(2) bytes is 0, expected != 0" in msg


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("line,needle", [
    ("add nosuch k:1 a()", "no table named 'nosuch'"),
    ("add dmac nokey:1 forward(port:1)", "no key 'nokey'"),
    ("add dmac dstAddr:1 nosuch(port:1)", "no action named 'nosuch'"),
    ("add dmac dstAddr:1 forward(prot:1)", "has no parameter 'prot'"),
    ("add dmac dstAddr:1 forward(port:512)", "does not fit in 9 bits"),
    ("add dmac dstAddr:1 forward()", "takes 1 argument(s) ['port'], got 0"),
    ("add dmac dstAddr:1 forward(port:1, port:2)", "given twice"),
    ("add dmac dstAddr:1&&&1 forward(port:1)", "is an exact key"),
    ("add dmac forward(port:1)", "exact key hdr.ethernet.dstAddr needs a value"),
    ("add ipv4_lpm dstAddr:0x0a0000ff&&&0xff0000ff forward(port:1)", "is not a prefix"),
    ("add ipv4_lpm dstAddr:10.0.0.0/33 forward(port:1)", "prefix length 33"),
    ("add acl 1 protocol:5..2 set_tos(tos:1)", "empty range"),
    ("mc_node_associate 1 0", "no multicast node with handle 0"),
    ("register_read nosuch 0", "no unique object named 'nosuch'"),
    ("check_counter port_ctr($Q)", "no entry named $Q"),
    ("add dmac dstAddr:1 forward(port:1)\nadd dmac dstAddr:1 forward(port:2)", "same match"),
])
def test_bad_input_is_an_stf_error_with_line(line, needle):
    text = "# test\n" + line
    with pytest.raises(StfError) as ei:
        run_stf_text(FakeSwitch(), text, "bad.stf")
    msg = str(ei.value)
    assert msg.startswith(f"bad.stf:{text.count(chr(10)) + 1}: "), msg
    assert needle in msg, msg


def test_apply_commands_control_plane_only():
    sw = FakeSwitch()
    fails = apply_commands(sw, "add dmac dstAddr:1 forward(port:1)\nregister_read last_port 0 1\n", "c.txt")
    assert len(sw.table_entries("dmac")) == 1
    assert fails == ["c.txt:2: register last_port[0] is 0 (0x0), expected 1 (0x1)"]
    with pytest.raises(StfError, match="c.txt:1: only control-plane commands"):
        apply_commands(sw, "packet 0 00", "c.txt")


# ---------------------------------------------------------------- helpers
def test_compare_packet():
    d = bytes.fromhex("0a0b0c")
    assert compare_packet("0A0B", False, d) is None
    assert compare_packet("0A0B0C", True, d) is None
    assert compare_packet("0A*B", False, d) is None
    assert compare_packet("0A0C", False, d) == "differs at byte 1 (nibble 3)"
    assert compare_packet("0A0B", True, d).startswith("too long")
    assert compare_packet("0A0B0C0D", False, d).startswith("too short")
    assert compare_packet("0B0B0C0D", False, d) == "differs at byte 0 (nibble 1)"
    assert compare_packet("", False, d) is None


def _k(kind, w=16, name="k"):
    return KeyInfoP(name=name, match_kind=kind, width=w)


def test_to_match_spec_conversions():
    from emulation.stf.parser import parse_match_value as pm
    assert to_match_spec(_k("ternary"), pm("0x0A")) == Ternary(0x0A, 0xFF)        # p4c: digits written
    assert to_match_spec(_k("ternary"), pm("10")) == Ternary(10, 0xFFFF)           # decimal: full mask
    assert to_match_spec(_k("ternary"), pm("0x**0A")) == Ternary(0x0A, 0x00FF)
    assert to_match_spec(_k("ternary"), pm("0xff00/8")) == Ternary(0xFF00, 0xFF00)
    assert to_match_spec(_k("ternary", 12), pm("0x***")) == Ternary(0, 0)
    assert to_match_spec(_k("lpm", 32), pm("0x0a01****")) == Lpm(0x0A010000, 16)
    assert to_match_spec(_k("lpm", 32), pm("167772160")) == Lpm(0x0A000000, 32)
    assert to_match_spec(_k("lpm", 32), pm("0xa000000&&&0xff000000")) == Lpm(0x0A000000, 8)
    assert to_match_spec(_k("lpm", 9), pm("0x1**")) == Lpm(0x100, 1)
    assert to_match_spec(_k("range", 8), pm("3")) == Range(3, 3)
    assert to_match_spec(_k("range", 8), pm("0x**")) == Range(0, 255)
    assert to_match_spec(_k("optional", 8), pm("7")) == Optional_(7)
    assert to_match_spec(_k("optional", 8), pm("0x**")) == Optional_(None)
    assert to_match_spec(_k("exact", 8), pm("-1")) == Exact(0xFF)
    with pytest.raises(ValueError, match="trailing"):
        to_match_spec(_k("lpm", 16), pm("0x*a00"))
    with pytest.raises(ValueError, match="does not fit"):
        to_match_spec(_k("exact", 8), pm("0x100"))


def test_key_name_variants():
    sw = FakeSwitch()
    run_stf_text(sw, "add opt hdr.ipv4.$valid$:1 ttl:64 set_tos(tos:1)\n"
                     "add MyEgress.opt ipv4.valid:0 opt.hdr.ipv4.ttl:0x** set_tos(tos:2)\n", "k.stf")
    ms = [e.match for e in sw.table_entries("opt")]
    assert ms[0] == {"hdr.ipv4.isValid()": Exact(1), "hdr.ipv4.ttl": Optional_(64)}
    assert ms[1] == {"hdr.ipv4.isValid()": Exact(0), "hdr.ipv4.ttl": Optional_(None)}


def test_key_names_p4c_derives_for_validity():
    """p4c's runner (bmv2stf.py, TableKeyInstance.set) also tries NAME$, NAME.$valid$ and
    X.valid -> X.$valid$ against key names; p4c's P4_14 converter names a validity key
    ``data.$valid$`` (p4c's exact_match_valid1.stf writes ``data:1``, tmvalid.stf
    ``data.$valid:0b1``)."""
    info = ProgramInfo()
    info.tables.append(TableInfo(name="ingress.test1", keys=[
        KeyInfoP(name="data.$valid$", match_kind="exact", width=1),
        KeyInfoP(name="data2.$valid$", match_kind="exact", width=1),
        KeyInfoP(name="data.f1", match_kind="exact", width=32)]))
    ti = info.tables[0]
    resolve = stf_runner._resolve_key
    assert resolve(ti, "data").name == "data.$valid$"            # NAME.$valid$
    assert resolve(ti, "data2").name == "data2.$valid$"
    assert resolve(ti, "data.$valid").name == "data.$valid$"     # NAME$
    assert resolve(ti, "data2.valid").name == "data2.$valid$"    # X.valid
    assert resolve(ti, "f1").name == "data.f1"                   # a unique .suffix
    with pytest.raises(ValueError, match="no key 'data3'"):
        resolve(ti, "data3")
    with pytest.raises(ValueError, match="ambiguous"):
        resolve(ti, "$valid$")            # both validity keys end with .$valid$
    one = TableInfo(name="t", keys=[KeyInfoP(name="hdr.h.$valid$", match_kind="exact", width=1)])
    assert resolve(one, "valid").name == "hdr.h.$valid$"          # a lone 'valid'


def test_byte_count_off_by_an_fcs_is_explained():
    """Some STF files count 4 bytes of Ethernet FCS a packet (p4c's p4_14_samples/counter3.stf);
    BMv2 counts packets as received, and p4c's BMv2 runner ignores check_counter."""
    p = eth(1).hex()
    res, _ = run(f"""
        add dmac dstAddr:1 forward(port:1) = E1
        packet 5 {p}
        packet 5 {p}
        expect 1 {p}
        expect 1 {p}
        check_counter dmac_ctr($E1) bytes == 36
        check_counter dmac_ctr($E1) bytes == 30
        """)
    assert not res.ok
    fcs = [m for m in res.messages if "4-byte FCS" in m]
    assert len(fcs) == 1 and fcs[0].startswith("t.stf:7: counter dmac_ctr($E1) bytes is 28, expected == 36")
    assert any(m.startswith("t.stf:8: counter dmac_ctr($E1) bytes is 28, expected == 30") and "FCS" not in m
               for m in res.messages)


# ---------------------------------------------------------------- main() exit codes
def test_main_exit_codes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(stf_runner, "load_switch", lambda *a, **k: FakeSwitch())
    prog = tmp_path / "p.p4"
    prog.write_text("// compiled by the fake\n")
    p = eth(1).hex()
    good = tmp_path / "good.stf"
    good.write_text(f"add dmac dstAddr:1 forward(port:1)\npacket 0 {p}\nexpect 1 {p}\n")
    bad = tmp_path / "bad.stf"
    bad.write_text(f"add dmac dstAddr:1 forward(port:1)\npacket 0 {p}\nexpect 2 {p}\n")
    broken = tmp_path / "broken.stf"
    broken.write_text("add dmac dstAddr:1\n")
    assert main([str(prog), str(good)]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "1 packet(s) in, 1 out, 1 expect(s)" in out
    assert main([str(prog), str(bad), "-v"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "port 2: expected 1 packet(s), got 0" in out
    assert "packet in  port 0" in out                     # verbose trace
    assert main([str(prog), str(broken)]) == 2
    assert f"{broken}:1: missing action" in capsys.readouterr().err
    assert main([str(prog), str(tmp_path / "missing.stf")]) == 2
    assert main(["only-one-arg"]) == 2


def test_main_reports_program_errors_as_exit_2(tmp_path, monkeypatch, capsys):
    def boom(path, *a, **k):
        raise P4Error("syntax error", Loc(str(path), 3, 7))
    monkeypatch.setattr(stf_runner, "load_switch", boom)
    stf = tmp_path / "t.stf"
    stf.write_text("packet 0 00\n")
    assert main([str(tmp_path / "x.p4"), str(stf)]) == 2
    assert f"{tmp_path / 'x.p4'}:3:7: syntax error" in capsys.readouterr().err


def test_result_type():
    res, _ = run("wait\n")
    assert isinstance(res, StfResult) and res.ok and res.messages == []


# ---------------------------------------------------------------- end to end (real P4 programs)
L3_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct metadata { }
struct headers { ethernet_t ethernet; ipv4_t ipv4; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    counter(8, CounterType.packets_and_bytes) port_ctr;
    register<bit<32>>(4) last_src;
    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action set_mcast(bit<16> grp) { standard_metadata.mcast_grp = grp; }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; set_mcast; NoAction; }
        size = 1024;
        default_action = drop();
    }
    action set_tos(bit<8> tos) { hdr.ipv4.diffserv = tos; }
    table acl {
        key = { hdr.ipv4.srcAddr: ternary; hdr.ipv4.protocol: range; }
        actions = { set_tos; NoAction; }
        default_action = NoAction();
    }
    apply {
        port_ctr.count((bit<32>)standard_metadata.ingress_port);
        if (hdr.ipv4.isValid()) {
            last_src.write(0, hdr.ipv4.srcAddr);
            ipv4_lpm.apply();
            acl.apply();
        } else {
            drop();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
"""


def _scapy_ipv4(dst_mac, src_mac, src_ip, dst_ip, ttl=64, tos=0, proto=17, payload=b"\x01\x02\x03\x04"):
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether
    return bytes(Ether(dst=dst_mac, src=src_mac) /
                 IP(src=src_ip, dst=dst_ip, ttl=ttl, tos=tos, proto=proto, id=7) / payload)


@pytest.fixture
def l3_program(tmp_path):
    p = tmp_path / "l3.p4"
    p.write_text(L3_PROGRAM)
    return p


def test_e2e_l3_forwarding_with_checksum(l3_program, tmp_path, capsys):
    pytest.importorskip("scapy")
    pin = _scapy_ipv4("00:00:00:00:00:aa", "00:00:00:00:00:01", "10.0.0.1", "10.1.2.3")
    pout = _scapy_ipv4("00:00:00:00:01:02", "00:00:00:00:00:aa", "10.0.0.1", "10.1.2.3", ttl=63)
    pout_tos = _scapy_ipv4("00:00:00:00:01:02", "00:00:00:00:00:aa", "10.0.0.1", "10.1.2.3", ttl=63,
                           tos=0x2C)
    far = _scapy_ipv4("00:00:00:00:00:aa", "00:00:00:00:00:01", "10.0.0.1", "192.168.0.1")
    stf = tmp_path / "l3.stf"
    stf.write_text(f"""
add ipv4_lpm hdr.ipv4.dstAddr:10.0.0.0/8 ipv4_forward(dstAddr:0x000000000101, port:1)
add MyIngress.ipv4_lpm dstAddr:10.1.0.0/16 MyIngress.ipv4_forward(dstAddr:00:00:00:00:01:02, port:2)
packet 0 {pin.hex()}
expect 2 {pout.hex()} $
add acl 10 srcAddr:10.0.0.0&&&0xff000000 protocol:17..17 set_tos(tos:0x2c)
add acl 1 srcAddr:0x******** protocol:0..255 set_tos(tos:0x04)
packet 3 {pin.hex()}
expect 2 {pout_tos.hex()} $
packet 0 {far.hex()}
register_read last_src 0 0x0a000001
check_counter port_ctr(0) packets == 2
check_counter port_ctr(3) bytes == {len(pin)}
""")
    assert main([str(l3_program), str(stf), "--lenient"]) == 0, capsys.readouterr().out
    # the same test with a wrong TTL in the expectation fails, naming the byte
    bad = tmp_path / "bad.stf"
    wrong = bytearray(pout)
    wrong[22] = 64
    bad.write_text(f"add ipv4_lpm dstAddr:10.1.0.0/16 ipv4_forward(dstAddr:0x000000000102, port:2)\n"
                   f"packet 0 {pin.hex()}\nexpect 2 {wrong.hex()}\n")
    assert main([str(l3_program), str(bad), "--lenient"]) == 1
    out = capsys.readouterr().out
    assert "port 2, packet #1" in out and "differs at byte 22" in out


def test_e2e_multicast(l3_program, tmp_path):
    pin = _scapy_ipv4("00:00:00:00:00:aa", "00:00:00:00:00:01", "10.0.0.1", "224.1.1.1")
    stf = tmp_path / "mc.stf"
    stf.write_text(f"""
mc_mgrp_create 5
mc_node_create 0 1 2
mc_node_create 1 4
mc_node_associate 5 0
mc_node_associate 5 1
add ipv4_lpm dstAddr:224.0.0.0/4 set_mcast(grp:5)
packet 0 {pin.hex()}
expect 4 {pin.hex()} $
expect 1 {pin.hex()} $
expect 2 {pin.hex()} $
""")
    res = run_stf(str(l3_program), str(stf), lenient=True)
    assert res.ok, res.messages
    assert res.counts["packets_out"] == 3


def test_e2e_bad_program_is_exit_2(tmp_path, capsys):
    p = tmp_path / "broken.p4"
    p.write_text("#include <core.p4>\ncontrol C() { apply { x = ; } }\n")
    stf = tmp_path / "t.stf"
    stf.write_text("packet 0 00\n")
    assert main([str(p), str(stf)]) == 2
    err = capsys.readouterr().err
    assert f"{p}:2:" in err


HASH_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> a; bit<32> b;
    bit<16> r16; bit<32> r32; bit<16> idout; bit<16> x16; bit<16> cs; bit<8> tag;
}
struct metadata { }
struct headers { h_t h; }

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { packet.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) dc;
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; hdr.h.tag = tag; }
    table t {
        key = { hdr.h.b: ternary; }
        actions = { fwd; NoAction; }
        counters = dc;
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        hash(hdr.h.r16, HashAlgorithm.crc16, (bit<16>)0, { hdr.h.a, hdr.h.b }, (bit<32>)65536);
        hash(hdr.h.r32, HashAlgorithm.crc32, (bit<32>)0, { hdr.h.a, hdr.h.b }, (bit<64>)0x100000000);
        hash(hdr.h.idout, HashAlgorithm.identity, (bit<16>)0, { hdr.h.a[11:0] }, (bit<32>)65536);
        hash(hdr.h.x16, HashAlgorithm.xor16, (bit<16>)0, { hdr.h.a, hdr.h.b }, (bit<32>)65536);
        hash(hdr.h.cs, HashAlgorithm.csum16, (bit<16>)0, { hdr.h.a, hdr.h.b }, (bit<32>)65536);
        t.apply();
        if (hdr.h.a == 0xC1) {
            clone(CloneType.I2E, 5);
        }
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _hash_packet_out(a: int, b: int, tag: int = 0) -> bytes:
    import struct
    import zlib
    ab = struct.pack("!II", a, b)
    words = struct.unpack("!4H", ab)
    x16 = words[0] ^ words[1] ^ words[2] ^ words[3]
    s = sum(words)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ab + struct.pack("!HIHHHB", crc16_arc(ab), zlib.crc32(ab), (a & 0xFFF) << 4, x16,
                            ~s & 0xFFFF, tag)


def test_e2e_hashes_ternary_priority_direct_counter_and_clone(tmp_path):
    prog = tmp_path / "hash.p4"
    prog.write_text(HASH_PROGRAM)

    def pkt(a, b):
        return (a.to_bytes(4, "big") + b.to_bytes(4, "big") + bytes(13)).hex()
    stf = tmp_path / "hash.stf"
    stf.write_text(f"""
add t 10 hdr.h.b:0x1234**** fwd(port:2, tag:0xAA) = WIDE
add t 20 b:0x12345678&&&0xffffffff fwd(port:4, tag:0xBB) = EXACT
add t 5 b:0x******** fwd(port:6, tag:0xCC)
mirroring_add 5 3
packet 0 {pkt(0xC1, 0x12345678)}
expect 4 {_hash_packet_out(0xC1, 0x12345678, 0xBB).hex()} $
expect 3 {pkt(0xC1, 0x12345678)} $
packet 0 {pkt(0x7, 0x1234ABCD)}
expect 2 {_hash_packet_out(0x7, 0x1234ABCD, 0xAA).hex()} $
packet 0 {pkt(0xFFFFFFFF, 0x0)}
expect 6 {_hash_packet_out(0xFFFFFFFF, 0x0, 0xCC).hex()} $
check_counter dc($EXACT) packets == 1
check_counter dc($WIDE) packets == 1
check_counter dc($WIDE) bytes == 21
""")
    res = run_stf(str(prog), str(stf), lenient=True)
    assert res.ok, "\n".join(res.messages)
    assert res.counts["packets_out"] == 4 and res.counts["checks"] == 3
    # a wrong expected hash is caught at the right byte: r16 starts at byte 8
    bad = tmp_path / "bad.stf"
    wrong = bytearray(_hash_packet_out(0x7, 0x1234ABCD))
    wrong[8] ^= 0x01
    bad.write_text(f"packet 0 {pkt(0x7, 0x1234ABCD)}\nexpect 1 {wrong.hex()}\n")
    res = run_stf(str(prog), str(bad), lenient=True)
    assert not res.ok and any("differs at byte 8" in m for m in res.messages)


def test_e2e_setdefault_remove_registers_and_apply_commands(l3_program, tmp_path):
    pin = _scapy_ipv4("00:00:00:00:00:aa", "00:00:00:00:00:01", "10.9.9.9", "172.16.0.1")
    pout = _scapy_ipv4("00:00:00:00:00:07", "00:00:00:00:00:aa", "10.9.9.9", "172.16.0.1", ttl=63)
    stf = tmp_path / "misc.stf"
    stf.write_text(f"""
setdefault ipv4_lpm ipv4_forward(dstAddr:7, port:5)
add ipv4_lpm dstAddr:172.16.0.0/12 drop() = D
packet 1 {pin.hex()}
remove $D
packet 1 {pin.hex()}
expect 5 {pout[:12].hex()} ** ** {pout[14:].hex()} $
register_write last_src 3 0xdeadbeef
register_read MyIngress.last_src 3 0xdeadbeef
register_read last_src 0 0x0a090909
counter_read port_ctr 1 packets 2 bytes {2 * len(pin)}
remove all
packet 1 {pin.hex()}
expect 5 {pout.hex()}
""")
    res = run_stf(str(l3_program), str(stf), lenient=True)
    assert res.ok, "\n".join(res.messages)
    assert res.counts["checks"] == 4
    # apply_commands on a real switch: control plane only, failed checks returned
    sw = load_switch(str(l3_program))
    fails = apply_commands(sw, "add ipv4_lpm dstAddr:10.0.0.0/8 ipv4_forward(dstAddr:1, port:3)\n"
                               "register_read last_src 0 5\n", "cmds.txt")
    assert fails == ["cmds.txt:2: register last_src[0] is 0 (0x0), expected 5 (0x5)"]
    out = sw.process(0, _scapy_ipv4("00:00:00:00:00:aa", "00:00:00:00:00:01", "1.2.3.4", "10.0.0.1"))
    assert [p for p, _ in out] == [3]
