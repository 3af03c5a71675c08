"""``Switch.process`` without a log runs an inlined hot path (ingress, unicast egress,
deparser written out in ``process``); with a log it runs the pass functions one by one
(``_process_logged``).  Both must emit the same frames and count the same port statistics,
including the packets that leave the hot path for the traffic manager's work queue (clone,
multicast, resubmit, recirculate) and parser errors."""
from __future__ import annotations

import pytest

from emulation.p4 import pyrt
from emulation.stf.runner import run_stf_text
from emulation.v1model.load import load_switch
from host_agent.match import Lpm
from testsupport import paths

P4_DIR = paths.REPO / "tests" / "p4"
PROGRAMS = ["clone", "clone_mc", "multicast", "resubmit", "recirculate", "parser_errors",
            "drop_ports", "checksums", "counters"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_hot_path_and_logged_path_agree(name):
    p4, stf = P4_DIR / f"{name}.p4", P4_DIR / f"{name}.stf"
    text = stf.read_text()
    fast = load_switch(str(p4))
    lines: list[str] = []
    logged = load_switch(str(p4), log=lines.append)
    assert not fast.log and logged.log
    r_fast = run_stf_text(fast, text, str(stf))
    r_logged = run_stf_text(logged, text, str(stf))
    assert r_fast.ok, r_fast.messages
    assert r_logged.ok, r_logged.messages
    assert lines                       # the logged switch did take the logged path
    assert fast.port_stats and fast.port_stats == logged.port_stats


def test_reused_packet_reader_is_fully_reset():
    """process() reuses one PacketIn and resets exactly these slots per packet."""
    assert set(pyrt.PacketIn.__slots__) == {"buf", "off", "n"}
    assert set(pyrt.PacketOut.__slots__) == {"parts"}


def test_short_frame_then_full_frame():
    """A parser reject leaves the reused reader mid-packet; the next packet starts afresh."""
    sw = load_switch(str(paths.REPO / "p4src" / "basic_router.p4"))
    sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, [0x020000000202, 2])
    ip = bytearray(20)
    ip[0], ip[8] = 0x45, 64
    ip[16:20] = bytes([10, 0, 2, 7])
    frame = b"\x02\0\0\0\0\xfe\x02\0\0\0\0\x01\x08\x00" + bytes(ip) + b"payload!"
    short = frame[:20]              # Ethernet + 6 bytes of IPv4: PacketTooShort
    first = sw.process(1, frame)
    # v1model: ingress still runs after the reject, ipv4 is invalid, so no route: egress_spec
    # stays 0 and the frame leaves unchanged on port 0
    assert sw.process(1, short) == [(0, short)]
    again = sw.process(1, frame)
    assert first == again and len(first) == 1 and first[0][0] == 2
    assert first[0][1].endswith(b"payload!")


def test_multicast_replicas_with_egress_requests():
    """The multicast fast path (``Switch._multicast``) hands a replica whose egress asks for a
    clone, a truncation or a recirculation to the work queue, after the other replicas, as the
    logged path does: same frames, same order, same port statistics."""
    p4 = paths.REPO / "tests" / "emulation" / "v1model" / "programs" / "mcast_egress_requests.p4"
    lines: list[str] = []
    fast, logged = load_switch(str(p4)), load_switch(str(p4), log=lines.append)
    for sw in (fast, logged):
        sw.mc_set_group(1, [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5)])
        sw.mirroring_add(5, egress_port=9)
    frame = bytes([0xAB, 0, 0, 0]) + bytes(range(40))
    for _ in range(3):
        a, b = fast.process(3, frame), logged.process(3, frame)
        assert a == b
    assert lines
    ports = [p for p, _ in a]
    # replicas on ports 1, 2 (cloned), 3 (truncated), 5 (rid 4 dropped), 6 in order; then the
    # E2E clone (port 9) and the recirculated replica's second pass (port 7)
    assert ports == [1, 2, 3, 6, 9, 7], ports
    by_port = dict(a)
    assert len(by_port[3]) == 20 and by_port[9][1] == 0xC0 and by_port[7][1] == 0   # egress ran again
    assert by_port[1][1] == 0 and by_port[6][1] == 5
    assert fast.port_stats == logged.port_stats


EMPTY_EGRESS = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> cmd; bit<32> plen; bit<16> ck; bit<8> seen; }
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.plen = sm.packet_length;
        hdr.h.seen = (bit<8>)sm.ingress_global_timestamp;
        if (hdr.h.cmd == 1) { mark_to_drop(sm); }
        else if (hdr.h.cmd == 2) { sm.egress_spec = 0; }
        else { sm.egress_spec = (bit<9>)hdr.h.cmd; }
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) {
    apply { update_checksum(hdr.h.isValid(), { hdr.h.cmd, hdr.h.plen }, hdr.h.ck, HashAlgorithm.csum16); }
}
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize("drop_port", [511, 0])
def test_unicast_through_an_empty_egress_agrees_with_the_logged_path(drop_port):
    """The hot path's own branch for unicast without an egress control (a router's case):
    ports, packet_length, checksum, payload and drops as the logged path, with the drop port
    at 511 or 0.  Before egress, egress_spec is drop_port + 1 in 9 bits (BMv2's
    simple_switch), so a packet that egress leaves alone is never dropped there."""
    from emulation.v1model.load import switch_from_source
    fast = switch_from_source(EMPTY_EGRESS, "empty_egress.p4", drop_port=drop_port)
    logged = switch_from_source(EMPTY_EGRESS, "empty_egress.p4", drop_port=drop_port, log=lambda s: None)
    assert not fast.dp._eg_live
    for clock in (fast, logged):
        clock.now_us = lambda: 0x1234
    frames = [bytes([cmd]) + bytes(7) + payload for cmd in (0, 1, 2, 3, 7, 200)
              for payload in (b"", b"xyz" * 20)]
    for f in frames:
        a, b = fast.process(1, f), logged.process(1, f)
        assert a == b, (f.hex(), a, b)
        dropped = f[0] == 1 or (drop_port == 0 and f[0] in (0, 2))
        assert (a == []) == dropped, (f.hex(), a)
        if not dropped:
            assert a[0][0] == (0 if f[0] == 2 else f[0]), (f.hex(), a)
    assert fast.port_stats == logged.port_stats


def test_drop_port_zero_does_not_drop_what_egress_leaves_alone():
    """With ``drop_port=0`` a packet that egress does not touch still leaves (egress_spec
    starts at drop_port + 1), on the hot path, the logged path and the multicast loop."""
    frame = bytes.fromhex("000000000002000000000001123405FF99")     # cmd 5: port 6
    for kw in ({}, {"log": lambda s: None}):
        sw = load_switch(str(P4_DIR / "drop_ports.p4"), drop_port=0, **kw)
        assert sw.dp._eg_live
        out = sw.process(1, frame)
        assert out == [(6, bytes.fromhex("0000000000020000000000011234050699"))], (kw, out)
