"""The P4Runtime server against a real gRPC client, on the real front end running
tests/p4runtime/programs/router_cpu.p4 (pushed as P4 source in the device config)."""
from __future__ import annotations

import io
import time
import zipfile

import grpc
import pytest
from google.rpc import code_pb2

from emulation.p4runtime.device import Device
from emulation.p4runtime.device_config import DeviceConfigError, compile_device_config, compile_source
from emulation.p4runtime.p4info import p4info_from_program
from emulation.p4runtime.server import P4RuntimeServer
from emulation.v1model.hashes import csum16
from emulation.v1model.load import load_switch
from emulation.v1model.switch import Switch
from host_agent.match import Lpm, Ternary
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.client import P4RuntimeClient, WriteError
from testsupport import p4rt_paths

ROUTER = p4rt_paths.PROGRAMS / "router_cpu.p4"
SOURCE = ROUTER.read_bytes()
CPU_PORT = 64          # the program's CPU_PORT constant


@pytest.fixture
def env():
    sent = []
    dev = Device(device_id=1, cpu_port=CPU_PORT, transmit=lambda p, f: sent.append((p, f)))
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    clients = []

    def client(election_id=1, **kw):
        c = P4RuntimeClient(srv.address, device_id=1, election_id=election_id, **kw)
        clients.append(c)
        return c
    yield dev, srv, client, sent
    for c in clients:
        c.close()
    srv.stop(0)


P4INFO = p4info_from_program(load_switch(str(ROUTER), cpu_port=CPU_PORT))


def test_capabilities_and_no_pipeline(env):
    dev, srv, client, _ = env
    c = client()
    assert c.capabilities() == "1.4.1"
    with pytest.raises(grpc.RpcError) as e:
        c.get_pipeline()
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as e:
        c.write([])
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_arbitration_primary_backup_and_failover(env):
    dev, srv, client, _ = env
    a = client(election_id=5)
    assert a._last_arb.status.code == code_pb2.OK
    b = client(election_id=3)
    assert b._last_arb.status.code == code_pb2.ALREADY_EXISTS
    assert b._last_arb.election_id.low == 5
    # a backup cannot push a pipeline or write
    with pytest.raises(grpc.RpcError) as e:
        b.set_pipeline(P4INFO, SOURCE)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    a.set_pipeline(P4INFO, SOURCE)
    b.load_p4info()
    with pytest.raises(grpc.RpcError) as e:
        b.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000001, 32)}, "ipv4_forward", {"dstAddr": 1, "port": 1})
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # a higher election id takes over; everyone hears about it
    c = client(election_id=9)
    assert c._last_arb.status.code == code_pb2.OK
    upd = a.wait_arbitration(2)
    assert upd.status.code == code_pb2.ALREADY_EXISTS and upd.election_id.low == 9
    # duplicate election id: the stream is refused
    with pytest.raises(grpc.RpcError) as e:
        client(election_id=9)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # primary leaves: the next highest (5) becomes primary and is told so
    c.close()
    deadline = time.time() + 3
    got = None
    while time.time() < deadline:
        got = a.wait_arbitration(3)
        if got.status.code == code_pb2.OK:
            break
    assert got is not None and got.status.code == code_pb2.OK


def test_wrong_device_id(env):
    dev, srv, client, _ = env
    with pytest.raises(grpc.RpcError) as e:
        P4RuntimeClient(srv.address, device_id=7, election_id=1).wait_arbitration(0.1)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_pipeline_set_get_verify(env):
    dev, srv, client, _ = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE, action="VERIFY")
    assert dev.switch is None  # VERIFY does not commit
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(P4INFO, b"control broken(")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "syntax error" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(P4INFO, b'{"header_types": []}')
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "BMv2 JSON" in e.value.details()
    bad = pb.ForwardingPipelineConfig().p4info.__class__.FromString(P4INFO.SerializeToString())
    bad.tables[0].preamble.name = "MyIngress.nope"
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(bad, SOURCE)
    assert "not in the program" in e.value.details()
    c.set_pipeline(P4INFO, SOURCE, cookie=77)
    cfg = c.get_pipeline("ALL")
    assert cfg.p4info == P4INFO and cfg.p4_device_config == SOURCE and cfg.cookie.cookie == 77
    cfg = c.get_pipeline("COOKIE_ONLY")
    assert not cfg.HasField("p4info") and cfg.cookie.cookie == 77
    # BMv2 JSON is accepted when the loaded program is what the P4Info describes
    c.set_pipeline(P4INFO, b'{"header_types": []}')


def test_bundle_device_config(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("main.p4", '// the router, through an include\n#include "lib.p4"\n')
        z.writestr("lib.p4", SOURCE)
    seen = {}

    def comp(text, filename, include_dirs, **kw):
        seen["text"], seen["file"], seen["inc"] = text, filename, include_dirs
        return compile_source(text, filename, include_dirs, **kw)
    sw = compile_device_config(buf.getvalue(), compile_source=comp, switch_kw={"cpu_port": CPU_PORT})
    assert isinstance(sw, Switch) and seen["file"].endswith("main.p4")
    assert {t.name for t in sw.program.info.tables} == {"MyIngress.ipv4_lpm", "MyIngress.acl"}
    assert sw.cpu_port == CPU_PORT
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.p4", "x")
        z.writestr("b.p4", "y")
    with pytest.raises(DeviceConfigError, match="main program"):
        compile_device_config(buf.getvalue(), compile_source=comp)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("../evil.p4", "x")
    with pytest.raises(DeviceConfigError, match="unsafe"):
        compile_device_config(buf.getvalue(), compile_source=comp)


def _frame(dst_ip: int, ttl: int = 64, src_mac=b"\x02\0\0\0\0\x01", dst_mac=b"\x02\0\0\0\0\xfe") -> bytes:
    ip = bytearray(20)
    ip[0] = 0x45
    ip[2:4] = (20 + 8).to_bytes(2, "big")
    ip[8] = ttl
    ip[9] = 17
    ip[12:16] = bytes([10, 0, 1, 1])
    ip[16:20] = dst_ip.to_bytes(4, "big")
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    return dst_mac + src_mac + b"\x08\x00" + bytes(ip) + bytes(8)


def test_router_tables_and_read_back(env):
    dev, srv, client, sent = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE)
    c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, "MyIngress.ipv4_forward",
             {"dstAddr": 0x020000000002, "port": 2})
    c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000202, 32)}, "MyIngress.ipv4_forward",
             {"dstAddr": 0x020000000003, "port": 3})
    out = dev.process(1, _frame(0x0A000202))
    assert [p for p, _ in out] == [3]
    assert out[0][1][:6] == bytes.fromhex("020000000003") and out[0][1][22] == 63
    assert [p for p, _ in dev.process(1, _frame(0x0A000209))] == [2]
    assert dev.process(1, _frame(0x0B000001)) == []          # default: drop
    assert sent and sent[-1][0] == 2                          # transmit callback saw the frames
    entries = c.read_table("MyIngress.ipv4_lpm")
    assert len(entries) == 2
    by_len = {e.match[0].lpm.prefix_len: e for e in entries}
    assert by_len[24].match[0].lpm.value == bytes([10, 0, 2, 0])
    assert by_len[32].action.action.params[1].value == b"\x03"   # canonical form
    assert len(c.read_table()) == 2                               # wildcard over all tables
    # modify, then delete
    c.modify("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000202, 32)}, "MyIngress.ipv4_forward",
             {"dstAddr": 0x020000000003, "port": 4})
    assert [p for p, _ in dev.process(1, _frame(0x0A000202))] == [4]
    c.delete("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000202, 32)})
    assert [p for p, _ in dev.process(1, _frame(0x0A000202))] == [2]
    # default entry: set, read, reset
    c.set_default("MyIngress.ipv4_lpm", "MyIngress.ipv4_forward", {"dstAddr": 9, "port": 7})
    assert [p for p, _ in dev.process(1, _frame(0x0B000001))] == [7]
    ent = pb.Entity()
    ent.table_entry.table_id = c.index.id("table", "ipv4_lpm")
    ent.table_entry.is_default_action = True
    (d,) = c.read([ent])
    assert d.table_entry.is_default_action and d.table_entry.action.action.params[1].value == b"\x07"
    c.set_default("MyIngress.ipv4_lpm", None)
    assert dev.process(1, _frame(0x0B000001)) == []


def test_padded_bytestrings_accepted(env):
    dev, srv, client, _ = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE)
    ent = c.table_entry("ipv4_lpm", {}, "ipv4_forward", {"dstAddr": 5, "port": 2})
    fm = ent.table_entry.match.add(field_id=1)
    fm.lpm.value = bytes([10, 0, 0, 0])
    fm.lpm.prefix_len = 8
    ent.table_entry.action.action.params[0].value = bytes(5) + b"\x05"    # 48-bit zero-padded
    ent.table_entry.action.action.params[1].value = b"\x00\x02"           # 9-bit in 2 bytes
    c.write([c.update("INSERT", ent)])
    (e,) = c.read_table("ipv4_lpm")
    assert e.action.action.params[0].value == b"\x05" and e.match[0].lpm.value == bytes([10, 0, 0, 0])


def test_write_errors_one_per_update(env):
    dev, srv, client, _ = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE)
    good = c.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, "ipv4_forward", {"dstAddr": 1, "port": 1})
    trailing = c.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000001, 8)}, "ipv4_forward",
                             {"dstAddr": 1, "port": 1})
    too_wide = c.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)}, "ipv4_forward",
                             {"dstAddr": 1, "port": 1})
    too_wide.table_entry.action.action.params[1].value = b"\x02\x00"      # 512 > 9 bits
    zero_plen = c.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0, 0)}, "ipv4_forward", {"dstAddr": 1, "port": 1})
    prio = c.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0C000000, 8)}, "ipv4_forward",
                         {"dstAddr": 1, "port": 1}, priority=10)
    with pytest.raises(WriteError) as e:
        c.write([c.update("INSERT", good), c.update("INSERT", good), c.update("INSERT", trailing),
                 c.update("INSERT", too_wide), c.update("INSERT", zero_plen), c.update("INSERT", prio),
                 c.update("DELETE", c.table_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0D000000, 8)}))])
    codes = e.value.codes
    assert codes == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT,
                     code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT, code_pb2.NOT_FOUND]
    assert "does not fit within 9 bits" in e.value.errors[3][1]
    assert e.value.rpc_error.code() == grpc.StatusCode.UNKNOWN
    assert len(c.read_table("ipv4_lpm")) == 1                # the good one stayed


def test_ternary_rules_priority_and_direct_counters(env):
    dev, srv, client, _ = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE)
    m = {"hdr.ipv4.srcAddr": Ternary(0x0A000100, 0xFFFFFF00), "hdr.ipv4.protocol": 17}
    with pytest.raises(WriteError) as e:
        c.insert("acl", m, "set_mark", {"mark": 1})                       # no priority
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
    with pytest.raises(WriteError) as e:
        c.insert("acl", {"hdr.ipv4.srcAddr": Ternary(0x0A000101, 0xFFFFFF00), "hdr.ipv4.protocol": 17},
                 "set_mark", {"mark": 1}, priority=5)                    # value & ~mask != 0
    assert "outside the mask" in e.value.errors[0][1]
    with pytest.raises(WriteError) as e:
        c.insert("acl", {"hdr.ipv4.protocol": 17, "hdr.ipv4.srcAddr": Ternary(0, 0)}, "set_mark", {"mark": 1},
                 priority=5)                                             # mask 0 must be omitted
    assert "must be omitted" in e.value.errors[0][1]
    with pytest.raises(WriteError) as e:
        c.insert("acl", {"hdr.ipv4.srcAddr": Ternary(0x0A000100, 0xFFFFFF00)}, "set_mark", {"mark": 1},
                 priority=5)                                             # exact field missing
    assert "missing" in e.value.errors[0][1]
    with pytest.raises(WriteError) as e:
        c.insert("acl", m, "NoAction", {}, priority=5)                   # @defaultonly
    assert "defaultonly" in e.value.errors[0][1]
    c.insert("acl", m, "set_mark", {"mark": 1}, priority=5)
    c.insert("acl", {"hdr.ipv4.protocol": 17}, "set_mark", {"mark": 2}, priority=1)   # src wildcard
    for _ in range(3):
        dev.process(1, _frame(0x0A000202))
    ent = pb.Entity()
    ent.direct_counter_entry.table_entry.table_id = c.index.id("table", "acl")
    got = {e.direct_counter_entry.table_entry.priority: e.direct_counter_entry.data for e in c.read([ent])}
    assert got[5].packet_count == 3 and got[5].byte_count == 3 * 42 and got[1].packet_count == 0
    # read with counter_data on the table entry itself
    te = pb.Entity()
    te.table_entry.table_id = c.index.id("table", "acl")
    te.table_entry.counter_data.SetInParent()
    rows = {e.table_entry.priority: e.table_entry for e in c.read([te])}
    assert rows[5].counter_data.packet_count == 3 and len(rows[1].match) == 1
    # write a direct counter
    w = pb.Entity()
    w.direct_counter_entry.table_entry.CopyFrom(c.table_entry("acl", m, priority=5).table_entry)
    w.direct_counter_entry.data.packet_count = 100
    c.write([c.update("MODIFY", w)])
    got = {e.direct_counter_entry.table_entry.priority: e.direct_counter_entry.data for e in c.read([ent])}
    assert got[5].packet_count == 100


def test_counters_registers(env):
    dev, srv, client, _ = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE)
    c.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, "ipv4_forward", {"dstAddr": 1, "port": 2})
    dev.process(3, _frame(0x0A000001, ttl=33))
    dev.process(3, _frame(0x0A000001, ttl=34))
    assert c.read_counter("port_counter", 3) == {3: (2, 84)}
    allc = c.read_counter("MyIngress.port_counter")
    assert len(allc) == 16 and allc[0] == (0, 0)
    c.write_counter("port_counter", 3, 10, 1000)
    assert c.read_counter("port_counter", 3) == {3: (10, 1000)}
    assert c.read_register("last_ttl", 3) == {3: 34}
    c.write_register("last_ttl", 5, 200)
    assert c.read_register("last_ttl", 5) == {5: 200}
    c.write_register("last_ttl", None, 7)                 # all indices
    assert set(c.read_register("last_ttl").values()) == {7}
    with pytest.raises(WriteError) as e:
        c.write_register("last_ttl", 99, 1)
    assert e.value.codes == [code_pb2.OUT_OF_RANGE]
    ent = pb.Entity()
    ent.register_entry.register_id = c.index.id("register", "last_ttl")
    ent.register_entry.index.index = 1
    ent.register_entry.data.bitstring = b"\x01\x00"       # 256 in an 8-bit register
    with pytest.raises(WriteError) as e:
        c.write([c.update("MODIFY", ent)])
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]


def test_multicast_groups_and_clone_sessions(env):
    dev, srv, client, _ = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE)
    c.multicast_group(1, [(1, 1), (2, 1), (3, 1)])
    bcast = b"\xff" * 6 + b"\x02\0\0\0\0\x01" + b"\x08\x06" + bytes(28)
    assert sorted(p for p, _ in dev.process(1, bcast)) == [2, 3]
    assert c.read_multicast_groups() == {1: [(1, 1), (2, 1), (3, 1)]}
    with pytest.raises(WriteError) as e:
        c.multicast_group(1, [(4, 1)])
    assert e.value.codes == [code_pb2.ALREADY_EXISTS]
    c.multicast_group(1, [(4, 1), (1, 1)], kind="MODIFY")
    assert sorted(p for p, _ in dev.process(1, bcast)) == [4]
    c.multicast_group(1, [], kind="DELETE")
    assert dev.process(1, bcast) == [] and c.read_multicast_groups() == {}
    with pytest.raises(WriteError) as e:
        c.multicast_group(9, [], kind="DELETE")
    assert e.value.codes == [code_pb2.NOT_FOUND]
    c.clone_session(5, 7)
    assert dev.switch.pre.sessions[5] == (7, None)
    with pytest.raises(WriteError):
        c.clone_session(5, 7)
    c.clone_session(5, 8, kind="MODIFY")
    assert dev.switch.pre.sessions[5] == (8, None)
    c.clone_session(5, 8, kind="DELETE")
    assert 5 not in dev.switch.pre.sessions


def test_packet_out_in_and_digests(env):
    dev, srv, client, sent = env
    c = client()
    c.set_pipeline(P4INFO, SOURCE)
    payload = b"\x02\0\0\0\0\x09" * 2 + b"\x88\xb5" + b"hello"
    c.packet_out(payload, egress_port=5)
    deadline = time.time() + 3
    while time.time() < deadline and not any(p == 5 for p, _ in sent):
        time.sleep(0.01)
    assert (5, payload) in sent
    dev.process(6, payload)                        # EtherType 0x88B5 goes to the CPU
    got = c.packet_in(3)
    assert got == (payload, {"ingress_port": 6, "_pad": 0})
    # digests only after the controller asked for them
    learn = b"\xff" * 6 + b"\x02\0\0\0\0\x42" + b"\x88\xb6" + bytes(20)
    dev.process(2, learn)
    c.enable_digest("learn_t")
    dev.process(2, learn)
    d = c.digests.get(timeout=3)
    assert d.digest_id == c.index.id("digest", "learn_t")
    mem = d.data[0].struct.members
    assert int.from_bytes(mem[0].bitstring, "big") == 0x020000000042 and mem[1].bitstring == b"\x02"
    assert c.digests.empty()                       # the first one was not reported
    # a backup's packet-out is refused on its stream
    b = client(election_id=0)
    b.load_p4info()
    b.packet_out(payload, egress_port=5)
    err = b.stream_errors.get(timeout=3)
    assert err.canonical_code == code_pb2.PERMISSION_DENIED
