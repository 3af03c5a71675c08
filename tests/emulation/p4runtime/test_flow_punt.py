"""A controller-driven flow cache over P4Runtime, in the style of p4lang/tutorials' flowcache
exercise (program: tests/p4runtime/programs/flow_punt.p4): a miss is cloned to the CPU port
keeping the metadata of a field list named by a constant (``@field_list(FL_TO_CPU)``), the
controller reads that metadata from the PacketIn, installs an entry with an idle timeout,
hears the IdleTimeoutNotification, deletes the entry and the flow is punted again.

The switch gets a hand-driven clock, so which entry ages is decided by the test's clock steps;
the waits for a notification are bounded (generously) but never measured."""
from __future__ import annotations

import threading

import pytest
from testsupport import p4rt_paths
from testsupport.hand_clock import HandClock

from emulation.p4runtime.device import Device
from emulation.p4runtime.p4info import p4info_from_program
from emulation.p4runtime.server import P4RuntimeServer
from emulation.v1model.load import compile_source, load_switch
from host_agent.p4runtime.client import P4RuntimeClient

PROGRAM = p4rt_paths.PROGRAMS / "flow_punt.p4"
SOURCE = PROGRAM.read_bytes()
CPU_PORT = 192          # the program's CPU_PORT
CLONE_TO_CPU = 57       # the program's clone session
P4INFO = p4info_from_program(load_switch(str(PROGRAM), cpu_port=CPU_PORT))
MS = 1_000_000          # ns
WAIT = 10.0             # bound on waiting for a message (s); never reached when things work
H1, H2 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])


def _wait_for_sent(sent: list) -> None:
    """Until the device has transmitted something (a PacketOut crosses the server's thread)."""
    for _ in range(int(WAIT / 0.01)):
        if sent:
            return
        threading.Event().wait(0.01)


def ipv4(src: bytes, dst: bytes, payload: bytes = b"flow") -> bytes:
    ip = bytes([0x45, 0]) + (20 + len(payload)).to_bytes(2, "big") + bytes(4) + bytes([64, 17]) \
        + bytes(2) + src + dst
    return bytes.fromhex("020000000002" "020000000001" "0800") + ip + payload


def key(src: bytes, dst: bytes) -> dict[str, int]:
    return {"hdr.ipv4.src": int.from_bytes(src, "big"), "hdr.ipv4.dst": int.from_bytes(dst, "big")}


@pytest.fixture
def env():
    clock = HandClock(5000.0)
    sent: list = []
    dev = Device(device_id=1, cpu_port=CPU_PORT, transmit=lambda p, f: sent.append((p, f)),
                 switch_kw={"clock": clock})
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    c = P4RuntimeClient(srv.address, device_id=1, election_id=1)
    c.set_pipeline(P4INFO, SOURCE)
    c.clone_session(CLONE_TO_CPU, CPU_PORT)
    yield clock, dev, srv, c, sent
    c.close()
    srv.stop(0)


def enum_values(p4info, name: str) -> dict[str, int]:
    e = p4info.type_info.serializable_enums[name]
    return {m.name: int.from_bytes(m.value, "big") for m in e.members}


def test_p4info_names_enum_typed_packet_metadata():
    # p4c: an enum bit<8> field is 8 bits wide, and the enum is listed in type_info
    (pin,) = [m for m in P4INFO.controller_packet_metadata if m.preamble.name == "packet_in"]
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == \
        [(1, "in_port", 16), (2, "reason", 8), (3, "not_kept", 8)]
    assert list(P4INFO.type_info.serializable_enums) == ["Reason_t"]
    assert P4INFO.type_info.serializable_enums["Reason_t"].underlying_type.bitwidth == 8
    assert enum_values(P4INFO, "Reason_t") == {"NEW_FLOW": 3, "BAD_OPCODE": 4}


ENUM_USES = """
#include <core.p4>
#include <v1model.p4>
enum bit<4> InParam { P = 9 }
enum bit<12> InHeaderOnly { H = 0x123 }
enum bit<8> Unused { U = 1 }
header h_t { InHeaderOnly k; bit<4> pad; }
struct hs_t { h_t h; }
struct m_t { }
parser Pr(packet_in b, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { b.extract(hdr.h); transition accept; }
}
control C(inout hs_t hdr, inout m_t m) { apply { } }
control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    action set(InParam v) { sm.egress_spec = (bit<9>) (bit<4>) v; }
    table t { key = { hdr.h.pad : exact; } actions = { set; NoAction; } }
    apply { t.apply(); }
}
control E(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control D(packet_out b, in hs_t hdr) { apply { b.emit(hdr.h); } }
V1Switch(Pr(), C(), I(), E(), C(), D()) main;
"""


def test_p4info_lists_enums_of_action_params_only_where_p4c_does():
    # p4c lists an enum reached from the P4Info (an action parameter's type), not one used
    # only in a header or not at all; a 12-bit value takes two bytes
    p4info = p4info_from_program(compile_source(ENUM_USES))
    assert list(p4info.type_info.serializable_enums) == ["InParam"]
    (param,) = [a for a in p4info.actions if a.preamble.name == "I.set"][0].params
    assert param.bitwidth == 4
    assert p4info.type_info.serializable_enums["InParam"].members[0].value == b"\x09"
    wide = p4info_from_program(compile_source(ENUM_USES.replace("InParam v", "InHeaderOnly v")
                                              .replace("(bit<4>) v", "(bit<12>) v")))
    assert list(wide.type_info.serializable_enums) == ["InHeaderOnly"]
    assert wide.type_info.serializable_enums["InHeaderOnly"].members[0].value == b"\x01\x23"


def test_miss_punts_with_field_list_metadata(env):
    _, dev, _, c, sent = env
    f = ipv4(H1, H2)
    assert dev.process(2, f) == []                        # the original is dropped
    got = c.packet_in(WAIT)
    assert got is not None, "no PacketIn for a flow-cache miss"
    payload, md = got
    assert payload == f
    reasons = enum_values(c.load_p4info(), "Reason_t")
    # kept by FL_TO_CPU: the ingress port and the reason; not_kept is in another list: zero
    assert md == {"in_port": 2, "reason": reasons["NEW_FLOW"], "not_kept": 0}
    assert sent == []


def test_controller_installs_flow_then_idle_timeout_removes_it(env):
    clock, dev, srv, c, sent = env
    f = ipv4(H1, H2)
    dev.process(1, f)
    payload, md = c.packet_in(WAIT)
    assert md["in_port"] == 1
    # the controller sends the punted packet on, then caches the flow for 200 ms of idleness
    c.packet_out(payload, port=3)
    _wait_for_sent(sent)
    assert sent == [(3, f)]
    c.insert("flows", key(H1, H2), "forward", {"port": 3}, idle_timeout_ns=200 * MS)
    c.insert("flows", key(H2, H1), "forward", {"port": 1},
             idle_timeout_ns=60_000 * MS)
    assert dev.process(1, f) == [(3, f)]                  # a hit: forwarded, not punted
    assert c.packet_in(0.2) is None
    clock.advance(300)                                    # idle past 200 ms, not past 60 s
    srv.servicer.idle_timeouts.sweep()
    note = c.idle_timeout_notification(WAIT)
    assert note is not None, "no idle-timeout notification for an entry idle past its timeout"
    (te,) = note.table_entry
    assert te.table_id == c.load_p4info().tables[0].preamble.id
    assert [m.exact.value for m in te.match] == [H1, H2]
    assert te.idle_timeout_ns == 200 * MS
    # as flowcache's controller does: delete the entry the notification names
    c.delete("flows", key(H1, H2))
    assert [[m.exact.value for m in e.match] for e in c.read_table("flows")] == [[H2, H1]]
    assert dev.process(1, f) == []
    again = c.packet_in(WAIT)
    assert again is not None and again[1]["in_port"] == 1


def test_stream_request_without_update_is_ignored(env):
    # Older p4lang/tutorials p4runtime_lib: switch.py's PacketIn() puts an empty
    # StreamMessageRequest on the stream, then takes the next stream response as the PacketIn.
    # BMv2's server (PI) ignores a request with no update set; an error reply here would be
    # taken for a packet by that controller (flowcache's), and the punted packet left behind.
    from host_agent.p4runtime.client import pb
    _, dev, _, c, sent = env
    for _ in range(3):
        c._req.put(pb.StreamMessageRequest())
    f = ipv4(H1, H2)
    assert dev.process(1, f) == []
    got = c.packet_in(WAIT)
    assert got is not None and got[0] == f and got[1]["in_port"] == 1
    assert c.stream_errors.empty()
    # the stream is still the primary's: a PacketOut goes out
    c.packet_out(f, port=2)
    _wait_for_sent(sent)
    assert sent == [(2, f)]
    assert c.stream_errors.empty()


def test_stream_request_without_update_before_arbitration_is_ignored(env):
    from host_agent.p4runtime.client import pb
    _, _, srv, _, _ = env
    c2 = P4RuntimeClient(srv.address, device_id=1, election_id=None, arbitrate=False)
    try:
        c2._req.put(pb.StreamMessageRequest())     # first on the stream, before arbitration
        c2.open_stream()                           # the arbitration that follows is answered
        assert c2.stream_status is None and c2.stream_errors.empty()
    finally:
        c2.close()
