"""The per-packet log in BMv2's shape (``--log-console``/``--log-file``, ``saatp p4 run --log``,
``saatp p4 stf -v``): emulation/v1model/trace.py.

Every line starts ``[HH:MM:SS.mmm] [bmv2] [L] [thread N] [pkt.copy] [cxt 0]`` and the messages are
BMv2's (parser states, extracts, select keys, tables with the key and hit/miss, action entries,
conditions, pipelines, deparser, drops, transmissions).  The trace code exists only in a program
compiled with ``trace=True``.
"""
from __future__ import annotations

import re
from pathlib import Path

from emulation.v1model.load import compile_file, load_switch, switch_from_source
from emulation.v1model.trace import line_level, trace_levels
from host_agent.match import Lpm

ROOT = Path(__file__).resolve().parents[3]
ROUTER = ROOT / "p4src" / "basic_router.p4"
PREFIX = re.compile(r"^\[\d\d:\d\d:\d\d\.\d{3}\] \[bmv2\] \[([TDIWE])\] \[thread \d+\] \[(\d+)\.(\d+)\] \[cxt 0\] ")
# 10.0.1.1 -> 11.0.0.1, UDP
FRAME = bytes.fromhex("0000000001000000000000AA080045000024002A00004011649E0A0001010B000001"
                      "03E807D0001020C47061796C6F616421")


def _messages(lines: list[str]) -> list[str]:
    out = []
    for ln in lines:
        m = PREFIX.match(ln)
        assert m, f"not in BMv2's shape: {ln!r}"
        out.append(ln[m.end():])
    return out


def _in_order(msgs: list[str], wanted: list[str]) -> None:
    """``wanted`` appear in ``msgs`` in this order (each as a prefix of some message)."""
    i = 0
    for w in wanted:
        while i < len(msgs) and not msgs[i].startswith(w):
            i += 1
        assert i < len(msgs), f"missing (in order) {w!r} in:\n" + "\n".join(msgs)
        i += 1


def test_trace_code_only_in_a_traced_compile():
    plain = compile_file(ROUTER)
    traced = compile_file(ROUTER, trace=True)
    assert not plain.traced and "TR." not in plain.source
    assert traced.traced and "TR.state('start')" in traced.source and "TR.condition(" in traced.source
    assert "TR.table_lookup(" in traced.source and "TR.extract('ipv4')" in traced.source


def test_a_switch_with_a_log_is_traced_by_default():
    lines: list[str] = []
    assert load_switch(ROUTER, log=lines.append).program.traced
    assert not load_switch(ROUTER).program.traced
    assert not load_switch(ROUTER, log=lines.append, trace=False).program.traced


def test_forwarded_packet_lines():
    lines: list[str] = []
    sw = load_switch(ROUTER, log=lines.append)
    sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)},
                 {"dstAddr": 0x080000000101, "port": 3})
    assert [p for p, _ in sw.process(1, FRAME)] == [3]
    msgs = _messages(lines)
    _in_order(msgs, [
        "Processing packet received on port 1",
        "Parser 'parser': start",
        "Parser 'parser' entering state 'start'",
        "Extracting header 'ethernet'",
        "Parser state 'start': key is 0800",
        "Parser 'parser' entering state 'parse_ipv4'",
        "Extracting header 'ipv4'",
        "Parser state 'parse_ipv4' has no switch, going to default next state",
        "Parser 'parser': end",
        "Pipeline 'ingress': start",
        'basic_router.p4(',
        "Applying table 'MyIngress.ipv4_lpm'",
        "Looking up key:\n* hdr.ipv4.dstAddr    : 0b000001\n",
        "Table 'MyIngress.ipv4_lpm': hit with handle 0",
        "Dumping entry 0\nMatch key:\n* hdr.ipv4.dstAddr    : LPM       0b000000/8\n",
        "Action entry is MyIngress.ipv4_forward - 80000000101,3,",
        "Action MyIngress.ipv4_forward",
        "Pipeline 'ingress': end",
        "Egress port is 3",
        "Pipeline 'egress': start",
        "Pipeline 'egress': end",
        "Deparser 'deparser': start",
        "Deparsing header 'ethernet'",
        "Deparsing header 'ipv4'",
        "Deparser 'deparser': end",
        "Transmitting packet of size 50 out of port 3",
    ])
    cond = next(m for m in msgs if "Condition" in m)
    assert re.fullmatch(r'basic_router\.p4\(\d+\) Condition "hdr\.ipv4\.isValid\(\)" \(node_\d+\) is true', cond)
    levels = {m: PREFIX.match(ln).group(1) for ln, m in zip(lines, msgs)}
    assert levels["Applying table 'MyIngress.ipv4_lpm'"] == "T" and levels[cond] == "T"
    assert levels["Parser 'parser': start"] == "D"


def test_miss_drop_and_packet_ids():
    lines: list[str] = []
    sw = load_switch(ROUTER, log=lines.append)
    assert sw.process(1, FRAME) == []
    assert sw.process(2, FRAME) == []
    msgs = _messages(lines)
    _in_order(msgs, ["Table 'MyIngress.ipv4_lpm': miss", "Action entry is MyIngress.drop - ",
                     "Action MyIngress.drop", "Egress port is 511", "Dropping packet at the end of ingress",
                     "Processing packet received on port 2"])
    ids = {(PREFIX.match(ln).group(2), PREFIX.match(ln).group(3)) for ln in lines}
    assert ids == {("0", "0"), ("1", "0")}           # one id per received packet, copy 0
    assert not any("Transmitting" in m for m in msgs)


def test_parser_exception_is_an_error_line():
    lines: list[str] = []
    sw = load_switch(ROUTER, log=lines.append)
    sw.process(0, FRAME[:20])                         # the IPv4 header is cut short
    msgs = _messages(lines)
    _in_order(msgs, ["Extracting header 'ethernet'", "Parser 'parser' entering state 'parse_ipv4'",
                     "Exception while parsing: PacketTooShort", "Parser 'parser': end"])
    err = next(ln for ln in lines if "Exception while parsing" in ln)
    assert PREFIX.match(err).group(1) == "E"


MCAST = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition select(h.h.a, h.h.b) { (1, 2): accept; default: reject; } }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { if (h.h.isValid()) { sm.mcast_grp = 7; } }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { if (sm.egress_port == 5) { mark_to_drop(sm); } }
}
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_select_keys_multicast_copies_and_egress_drop():
    lines: list[str] = []
    sw = switch_from_source(MCAST, "mcast.p4", log=lines.append)
    sw.mc_group_create(7)
    sw.mc_node_associate(7, sw.mc_node_create(0, [4, 5]))
    assert [p for p, _ in sw.process(1, bytes([1, 2]))] == [4]
    msgs = _messages(lines)
    _in_order(msgs, ["Parser state 'start': key is 0102", "Multicast requested for packet",
                     "Replicating packet on port 4", "Replicating packet on port 5",
                     "Transmitting packet of size 2 out of port 4", "Dropping packet at the end of egress"])
    copies = [PREFIX.match(ln).group(3) for ln, m in zip(lines, msgs) if m == "Pipeline 'egress': start"]
    assert copies == ["1", "2"]                      # each replica is a copy of packet 0
    assert 'Condition "node_1" (node_1) is true' in msgs   # no source file: the node's name, as BMv2


def test_levels_for_the_switch_process_filter():
    assert trace_levels("trace") == "TDIWE" and trace_levels("debug") == "DIWE"
    assert trace_levels("warn") == "WE" and trace_levels("off") == ""
    assert line_level("[12:00:00.000] [bmv2] [T] [thread 1] [0.0] [cxt 0] Applying table 't'") == "T"
    assert line_level("plain text") == "I"


def test_traced_tables_with_an_action_profile():
    from emulation.stf.runner import run_stf_text
    prog = ROOT / "tests" / "emulation" / "action_profiles" / "ecmp_selector.p4"
    lines: list[str] = []
    sw = load_switch(prog, log=lines.append)
    res = run_stf_text(sw, prog.with_suffix(".stf").read_text(), "ecmp_selector.stf")
    assert res.ok, res.messages                     # the traced program forwards as the plain one
    msgs = _messages(lines)
    _in_order(msgs, ["Applying table 'Ing.ecmp'", "Table 'Ing.ecmp': hit with handle 0",
                     "Dumping entry 0\nMatch key:\n* hdr.ipv4.dstAddr    : LPM       0a000000/8\n",
                     "Action entry is Ing.set_nhop - "])


def test_traced_corpus_behaves_as_the_plain_one():
    """Every corpus program with an STF test, compiled with tracing and run with a log, still
    passes its test: the trace calls change nothing the program does."""
    from emulation.stf.runner import run_stf_text
    progs = [p for d in ("tests/p4", "tests/p4/compat", "p4src") for p in sorted((ROOT / d).glob("*.p4"))
             if p.with_suffix(".stf").is_file()]
    assert len(progs) > 40
    failed = []
    for p in progs:
        lines: list[str] = []
        res = run_stf_text(load_switch(p, log=lines.append), p.with_suffix(".stf").read_text(), p.name)
        if not res.ok or not any("Pipeline 'ingress': start" in ln for ln in lines):
            failed.append((p.name, res.messages[:2]))
    assert not failed
