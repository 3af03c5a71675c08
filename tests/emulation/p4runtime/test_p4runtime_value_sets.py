"""Parser value sets over P4Runtime: a ValueSetEntry MODIFY replaces the members, reads
return them, and the parser matches on them."""
from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2

from emulation.p4runtime.device import Device
from emulation.p4runtime.p4info import p4info_from_program
from emulation.p4runtime.server import P4RuntimeServer
from emulation.v1model.load import switch_from_source
from host_agent.match import Exact, Ternary
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.client import P4RuntimeClient, WriteError
from host_agent.p4runtime.codec import encode_match

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<bit<8>>(2) pvs;
    state start { pkt.extract(hdr.h); transition select(hdr.h.a) { pvs: mark; default: accept; } }
    state mark { hdr.h.b = 0xEE; transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def env():
    sw = switch_from_source(PROGRAM, "pvs.p4")
    dev = Device(device_id=1)
    dev.load_program(sw)
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    c = P4RuntimeClient(srv.address, device_id=1, election_id=1)
    c.load_p4info()
    yield dev, c
    c.close()
    srv.stop(0)


def _entity(vs, specs) -> pb.Entity:
    ent = pb.Entity()
    e = ent.value_set_entry
    e.value_set_id = vs.preamble.id
    for spec in specs:
        e.members.add().match.append(encode_match(vs.match[0].id, spec))
    return ent


def test_value_set_members_replace_read_back_and_steer_the_parser(env):
    dev, c = env
    vs = p4info_from_program(dev.switch).value_sets[0]
    assert vs.preamble.name == "P.pvs" and vs.size == 2
    assert dev.process(0, b"\x07\x00") == [(1, b"\x07\x00")]      # empty set
    c.write([c.update("MODIFY", _entity(vs, [Exact(7), Exact(9)]))])
    assert dev.process(0, b"\x07\x00") == [(1, b"\x07\xee")]
    assert dev.process(0, b"\x09\x00") == [(1, b"\x09\xee")]
    read = pb.Entity()
    read.value_set_entry.value_set_id = 0                           # all value sets
    got = c.read([read])
    assert len(got) == 1 and got[0].value_set_entry == _entity(vs, [Exact(7), Exact(9)]).value_set_entry
    c.write([c.update("MODIFY", _entity(vs, [Exact(9)]))])          # replaces, not adds
    assert dev.process(0, b"\x07\x00") == [(1, b"\x07\x00")]
    assert dev.process(0, b"\x09\x00") == [(1, b"\x09\xee")]


def test_value_set_errors(env):
    dev, c = env
    vs = p4info_from_program(dev.switch).value_sets[0]
    cases = [("INSERT", _entity(vs, [Exact(1)]), code_pb2.INVALID_ARGUMENT, "only be MODIFY"),
             ("MODIFY", _entity(vs, [Exact(1), Exact(2), Exact(3)]), code_pb2.RESOURCE_EXHAUSTED, "size is 2"),
             ("MODIFY", _entity(vs, [Exact(256)]), code_pb2.INVALID_ARGUMENT, "does not fit within 8 bits"),
             ("MODIFY", _entity(vs, [Ternary(1, 1)]), code_pb2.INVALID_ARGUMENT, "expected a exact match")]
    for kind, ent, code, msg in cases:
        with pytest.raises(WriteError) as e:
            c.write([c.update(kind, ent)])
        (got_code, got_msg), = e.value.errors
        assert got_code == code and msg in got_msg, (kind, got_msg)
    unknown = pb.Entity()
    unknown.value_set_entry.value_set_id = vs.preamble.id + 1
    with pytest.raises(grpc.RpcError) as e:
        c.read([unknown])
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    # a refused write leaves the members as they were
    assert dev.switch.process(0, b"\x01\x00") == [(1, b"\x01\x00")]
