"""The byte-string/match/parameter codec shared by the P4Runtime client and server."""
from __future__ import annotations

import subprocess
import sys

import pytest
from google.protobuf import text_format

from host_agent.match import Exact, Lpm, Optional_, Range, Ternary
from host_agent.p4runtime import p4info_pb2 as p4i
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import (CodecError, decode_bytes, decode_match, decode_matches, decode_params,
                                        encode_bytes, encode_match, encode_matches, encode_params, is_dont_care,
                                        set_uint128, uint128)
from testsupport import paths

P4INFO = text_format.Parse("""
tables {
  preamble { id: 33554433 name: "C.t" alias: "t" }
  match_fields { id: 1 name: "dst" bitwidth: 32 match_type: LPM }
  match_fields { id: 2 name: "proto" bitwidth: 8 match_type: EXACT }
  match_fields { id: 3 name: "src" bitwidth: 32 match_type: TERNARY }
  match_fields { id: 4 name: "port" bitwidth: 16 match_type: RANGE }
  match_fields { id: 5 name: "flag" bitwidth: 1 match_type: OPTIONAL }
}
actions {
  preamble { id: 16777217 name: "C.fwd" alias: "fwd" }
  params { id: 1 name: "mac" bitwidth: 48 }
  params { id: 2 name: "port" bitwidth: 9 }
}
""", p4i.P4Info())
TABLE = P4INFO.tables[0]
FIELDS = {m.name: m for m in TABLE.match_fields}
FWD = P4INFO.actions[0]


def test_bytestrings_are_canonical_out_and_accept_padding_in():
    assert encode_bytes(0) == b"\x00" and encode_bytes(0x1ff) == b"\x01\xff"
    assert encode_bytes(-1, 9) == b"\x01\xff"            # two's complement of the width
    assert decode_bytes(b"\x00\x00\x0a", 9, "x") == 10
    with pytest.raises(CodecError, match="does not fit within 9 bits"):
        decode_bytes(b"\x02\x00", 9, "x")
    with pytest.raises(CodecError, match="empty"):
        decode_bytes(b"", 9, "x")


def test_uint128_round_trip():
    m = pb.Uint128()
    set_uint128(m, (5 << 64) | 7)
    assert (m.high, m.low) == (5, 7) and uint128(m) == (5 << 64) | 7


@pytest.mark.parametrize("name,spec", [
    ("dst", Lpm(0x0A000000, 8)), ("proto", Exact(6)), ("src", Ternary(0x0A000001, 0xFF0000FF)),
    ("port", Range(80, 443)), ("flag", Optional_(1))])
def test_each_match_kind_round_trips(name, spec):
    mf = FIELDS[name]
    fm = encode_match(mf.id, spec)
    assert fm.field_id == mf.id
    assert decode_match(mf, pb.FieldMatch.FromString(fm.SerializeToString()), "w") == spec


def test_shorthands_and_bad_specs():
    assert encode_match(2, 6) == encode_match(2, Exact(6))
    assert encode_match(1, (0x0A000000, 8)) == encode_match(1, Lpm(0x0A000000, 8))
    with pytest.raises(TypeError, match="bad match spec"):
        encode_match(1, "10.0.0.0/8")


def test_dont_cares_are_omitted_on_encode_and_refused_on_decode():
    assert is_dont_care(Lpm(0, 0), 32) and is_dont_care(Ternary(0, 0), 32)
    assert is_dont_care(Range(0, 0xFFFF), 16) and is_dont_care(Optional_(None), 1)
    assert not is_dont_care(Range(0, 0xFFFE), 16) and not is_dont_care(Exact(0), 8)
    got = encode_matches(TABLE, {"dst": Lpm(0, 0), "proto": 6, "src": Ternary(0, 0), "port": Range(0, 0xFFFF)})
    assert [fm.field_id for fm in got] == [2]
    for name, spec, msg in [("dst", Lpm(0, 0), "prefix length of 0"), ("src", Ternary(0, 0), "mask of 0"),
                            ("port", Range(0, 0xFFFF), "full range")]:
        with pytest.raises(CodecError, match=msg):
            decode_match(FIELDS[name], encode_match(FIELDS[name].id, spec), "w")


@pytest.mark.parametrize("name,spec,msg", [
    ("dst", Lpm(0x0A000001, 8), "beyond the prefix length"),
    ("dst", Lpm(1, 33), "out of range 1..32"),
    ("src", Ternary(0x11, 0x01), "outside the mask"),
    ("port", Range(9, 3), "low 9 > high 3"),
    ("proto", Exact(256), "does not fit within 8 bits")])
def test_invalid_matches_are_refused(name, spec, msg):
    with pytest.raises(CodecError, match=msg):
        decode_match(FIELDS[name], encode_match(FIELDS[name].id, spec), "w")


def test_entry_level_match_rules():
    ok = [encode_match(2, 6), encode_match(1, Lpm(0x0A000000, 8))]
    assert decode_matches(TABLE, ok) == {"proto": Exact(6), "dst": Lpm(0x0A000000, 8)}
    with pytest.raises(CodecError, match="expected a exact match, got lpm"):
        decode_matches(TABLE, [encode_match(2, Lpm(6, 8))])
    with pytest.raises(CodecError, match="unknown match field id 9"):
        decode_matches(TABLE, ok + [encode_match(9, 1)])
    with pytest.raises(CodecError, match="given twice"):
        decode_matches(TABLE, ok + [encode_match(2, 7)])
    with pytest.raises(CodecError, match="exact match field proto is missing"):
        decode_matches(TABLE, ok[1:])


def test_action_params_round_trip_and_rules():
    act = pb.Action()
    encode_params(act, FWD, {"mac": 0x020000000001, "port": 3})
    assert act.action_id == FWD.preamble.id
    assert [(p.param_id, p.value) for p in act.params] == [(1, b"\x02\x00\x00\x00\x00\x01"), (2, b"\x03")]
    assert decode_params(FWD, act.params) == {"mac": 0x020000000001, "port": 3}
    with pytest.raises(CodecError, match=r"missing parameter\(s\) \['port'\]"):
        decode_params(FWD, act.params[:1])
    with pytest.raises(CodecError, match="given twice"):
        decode_params(FWD, list(act.params) + [act.params[1]])
    with pytest.raises(CodecError, match="unknown parameter id 7"):
        decode_params(FWD, [pb.Action.Param(param_id=7, value=b"\x01")])
    with pytest.raises(CodecError, match="does not fit within 9 bits"):
        decode_params(FWD, [act.params[0], pb.Action.Param(param_id=2, value=b"\x02\x00")])


def test_host_side_p4runtime_loads_without_the_emulation_package():
    """The client, codec and stubs are host-side: importing them pulls in nothing of emulation."""
    code = ("import sys\n"
            "import host_agent.p4runtime.client, host_agent.p4runtime.codec, host_agent.p4runtime.p4config_pb2\n"
            "print(sorted(m for m in sys.modules if m == 'emulation' or m.startswith('emulation.')))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=paths.REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
