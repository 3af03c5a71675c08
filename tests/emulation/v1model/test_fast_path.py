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
