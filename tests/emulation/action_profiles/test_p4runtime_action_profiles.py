"""Action profile members, groups and one-shot action sets over P4Runtime, and the P4Info
``action_profiles`` of the ECMP program (a real gRPC client against the server)."""
from __future__ import annotations

from pathlib import Path

import pytest
from google.rpc import code_pb2
from scapy.all import Ether
from test_action_profiles import expected_member, flows, frame, ip_int

from emulation.p4runtime.device import Device
from emulation.p4runtime.p4info import p4info_from_program
from emulation.p4runtime.server import P4RuntimeServer
from emulation.v1model.load import load_switch
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.client import P4RuntimeClient, WriteError

PROG = Path(__file__).parent / "ecmp_selector.p4"
P4INFO = p4info_from_program(load_switch(str(PROG)))


def _ids():
    tables = {t.preamble.name: t for t in P4INFO.tables}
    profs = {a.preamble.name: a for a in P4INFO.action_profiles}
    acts = {a.preamble.name: a.preamble.id for a in P4INFO.actions}
    return tables, profs, acts


def test_p4info_action_profiles_as_p4c_writes_them():
    tables, profs, _ = _ids()
    assert set(profs) == {"Ing.ecmp", "Ing.smac_profile"}
    sel, ap = profs["Ing.ecmp"], profs["Ing.smac_profile"]
    assert sel.preamble.id >> 24 == 0x11 and ap.preamble.id >> 24 == 0x11
    assert sel.with_selector and sel.size == 64 and list(sel.table_ids) == [tables["Ing.ecmp"].preamble.id]
    assert not ap.with_selector and ap.size == 16
    assert list(ap.table_ids) == [tables["Ing.smac_rewrite"].preamble.id]
    assert tables["Ing.ecmp"].implementation_id == sel.preamble.id
    assert tables["Ing.smac_rewrite"].implementation_id == ap.preamble.id
    # selector keys are not match fields
    assert [m.name for m in tables["Ing.ecmp"].match_fields] == ["hdr.ipv4.dstAddr"]


@pytest.fixture
def env():
    sent = []
    dev = Device(device_id=1, transmit=lambda p, f: sent.append((p, f)))
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    c = P4RuntimeClient(srv.address, device_id=1, election_id=1)
    c.set_pipeline(P4INFO, PROG.read_bytes())
    c.load_p4info()
    yield dev, c
    c.close()
    srv.stop(0)


def member(pid, mid, aid, port, dmac):
    e = pb.Entity()
    m = e.action_profile_member
    m.action_profile_id, m.member_id = pid, mid
    m.action.action_id = aid
    m.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    m.action.params.add(param_id=2, value=dmac.to_bytes(6, "big"))
    return e


def group(pid, gid, weights, max_size=0):
    e = pb.Entity()
    g = e.action_profile_group
    g.action_profile_id, g.group_id, g.max_size = pid, gid, max_size
    for mid, w in weights:
        g.members.add(member_id=mid, weight=w)
    return e


def ecmp_entry(tid, prefix, plen, **action):
    e = pb.Entity()
    t = e.table_entry
    t.table_id = tid
    f = t.match.add(field_id=1)
    f.lpm.value = prefix.to_bytes(4, "big").lstrip(b"\0") or b"\0"
    f.lpm.prefix_len = plen
    for k, v in action.items():
        if k == "action_set":
            for aid, port, w in v:
                a = t.action.action_profile_action_set.action_profile_actions.add(weight=w)
                a.action.action_id = aid
                a.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
                a.action.params.add(param_id=2, value=(0x0A0000000000 + port).to_bytes(6, "big"))
        else:
            setattr(t.action, k, v)
    return e


def U(kind, e):
    return P4RuntimeClient.update(kind, e)


def ports_of(dev, n=80):
    out = {}
    for src, dst, proto in flows(n):
        o = dev.switch.process(0, frame(src, dst, proto))
        out[(src, dst, proto)] = o[0][0] if o else None
    return out


def test_members_groups_and_weights_pick_as_bmv2(env):
    dev, c = env
    tables, profs, acts = _ids()
    pid, tid, aid = profs["Ing.ecmp"].preamble.id, tables["Ing.ecmp"].preamble.id, acts["Ing.set_nhop"]
    c.write([U("INSERT", member(pid, 10, aid, 1, 0x0A0000000001)),
             U("INSERT", member(pid, 20, aid, 2, 0x0A0000000002)),
             U("INSERT", member(pid, 30, aid, 3, 0x0A0000000003))])
    # weights: member 20 counts twice; BMv2's server makes a copy of it (the next free handle, 3)
    c.write([U("INSERT", group(pid, 7, [(30, 1), (20, 2), (10, 1)])),
             U("INSERT", ecmp_entry(tid, ip_int("10.0.0.0"), 8, action_profile_group_id=7))])
    prof = dev.switch.action_profile("Ing.ecmp")
    assert sorted(prof.members) == [0, 1, 2, 3]
    port_of_handle = {0: 1, 1: 2, 2: 3, 3: 2}
    for (src, dst, proto), port in ports_of(dev).items():
        assert port == port_of_handle[expected_member(src, dst, proto, [0, 1, 2, 3])]
    # reads give back what was written
    (g,) = c.read([group(pid, 0, [])])
    assert [(m.member_id, m.weight) for m in g.action_profile_group.members] == [(10, 1), (20, 2), (30, 1)]
    ms = c.read([member(pid, 0, 0, 0, 0)])
    assert sorted(m.action_profile_member.member_id for m in ms) == [10, 20, 30]
    (te,) = c.read([ecmp_entry(tid, ip_int("10.0.0.0"), 8)])
    assert te.table_entry.action.action_profile_group_id == 7
    # weight back to 1: the copy goes away
    c.write([U("MODIFY", group(pid, 7, [(10, 1), (20, 1)]))])
    assert sorted(prof.members) == [0, 1, 2]
    for (src, dst, proto), port in ports_of(dev, 40).items():
        assert port == {0: 1, 1: 2}[expected_member(src, dst, proto, [0, 1])]


def test_member_entry_refusals_and_delete_order(env):
    dev, c = env
    tables, profs, acts = _ids()
    pid, tid, aid = profs["Ing.ecmp"].preamble.id, tables["Ing.ecmp"].preamble.id, acts["Ing.set_nhop"]
    c.write([U("INSERT", member(pid, 1, aid, 4, 0x0A0000000004))])
    c.write([U("INSERT", ecmp_entry(tid, ip_int("10.0.0.0"), 8, action_profile_member_id=1))])
    assert ports_of(dev, 5) and set(ports_of(dev, 5).values()) == {4}
    with pytest.raises(WriteError) as e:
        c.write([U("INSERT", member(pid, 1, aid, 4, 0))])
    assert e.value.codes == [code_pb2.ALREADY_EXISTS]
    with pytest.raises(WriteError) as e:
        c.write([U("DELETE", member(pid, 1, aid, 4, 0))])          # an entry uses it
    assert e.value.codes == [code_pb2.FAILED_PRECONDITION]
    with pytest.raises(WriteError) as e:
        c.write([U("INSERT", group(pid, 2, [(1, 0)]))])
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
    with pytest.raises(WriteError) as e:
        c.write([U("INSERT", group(pid, 2, [(99, 1)]))])
    assert e.value.codes == [code_pb2.NOT_FOUND]
    with pytest.raises(WriteError) as e:              # a direct action on an indirect table
        c.insert("Ing.ecmp", {"hdr.ipv4.dstAddr": (ip_int("11.0.0.0"), 8)}, "Ing.drop")
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
    with pytest.raises(WriteError) as e:              # one-shot while members are in use
        c.write([U("INSERT", ecmp_entry(tid, ip_int("12.0.0.0"), 8, action_set=[(aid, 1, 1)]))])
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
    c.write([U("DELETE", ecmp_entry(tid, ip_int("10.0.0.0"), 8))])
    c.write([U("DELETE", member(pid, 1, aid, 4, 0))])
    assert dev.switch.action_profile("Ing.ecmp").members == {}


def test_one_shot_action_sets(env):
    dev, c = env
    tables, profs, acts = _ids()
    tid, aid = tables["Ing.ecmp"].preamble.id, acts["Ing.set_nhop"]
    c.write([U("INSERT", ecmp_entry(tid, ip_int("10.0.0.0"), 8, action_set=[(aid, 5, 1), (aid, 6, 2)]))])
    prof = dev.switch.action_profile("Ing.ecmp")
    # members 0 (port 5), 1 and 2 (port 6, weight 2), then group 0
    assert sorted(prof.members) == [0, 1, 2] and list(prof.groups) == [0]
    for (src, dst, proto), port in ports_of(dev, 60).items():
        assert port == {0: 5, 1: 6, 2: 6}[expected_member(src, dst, proto, [0, 1, 2])]
    (te,) = c.read([ecmp_entry(tid, ip_int("10.0.0.0"), 8)])
    acts_read = te.table_entry.action.action_profile_action_set.action_profile_actions
    assert [(a.weight, int.from_bytes(a.action.params[0].value, "big")) for a in acts_read] == [(1, 5), (2, 6)]
    (port, data), = dev.switch.process(0, frame("1.1.1.1", "10.0.0.9", 6))
    assert Ether(data).dst == f"0a:00:00:00:00:{port:02x}"
    c.write([U("DELETE", ecmp_entry(tid, ip_int("10.0.0.0"), 8))])
    assert prof.members == {} and prof.groups == {}
