"""P4Info generation: ids, aliases, @id, probing, and whole files against goldens."""
from __future__ import annotations


import pytest

from emulation.p4.info import (ActionInfoP, ControllerHeaderInfo, DigestInfo, ExternInstanceInfo,
                               HeaderFieldInfo, KeyInfoP, ParamInfo, ProgramInfo, TableActionRef,
                               TableInfo)
from emulation.p4runtime.p4info import (P4InfoError, SymbolTable, jenkins_one_at_a_time,
                                        p4info_from_program, p4info_to_text, read_p4info,
                                        write_p4info)
from testsupport import p4rt_paths

GOLDEN = p4rt_paths.GOLDEN

NOACTION = ActionInfoP(name="NoAction", annotations={"noWarn": '"unused"'})
NOACTION_REF = TableActionRef(name="NoAction", default_only=True, annotations={"defaultonly": ""})


def _table(name, keys, actions, size):
    return TableInfo(name=name, keys=[KeyInfoP(name=k, match_kind=m, width=w) for k, m, w in keys],
                     actions=[TableActionRef(name=a) for a in actions] + [NOACTION_REF], size=size)


def basic_routing_info() -> ProgramInfo:
    """p4c's testdata/p4_16_samples/basic_routing-bmv2.p4, described by hand."""
    acts = [NOACTION,
            ActionInfoP(name="ingress.set_vrf", params=[ParamInfo(name="vrf", width=12)]),
            ActionInfoP(name="ingress.on_miss"),
            ActionInfoP(name="ingress.fib_hit_nexthop", params=[ParamInfo(name="nexthop_index", width=16)]),
            ActionInfoP(name="ingress.set_egress_details", params=[ParamInfo(name="egress_spec", width=9)]),
            ActionInfoP(name="ingress.set_bd", params=[ParamInfo(name="bd", width=16)]),
            ActionInfoP(name="egress.on_miss"),
            ActionInfoP(name="egress.rewrite_src_dst_mac",
                        params=[ParamInfo(name="smac", width=48), ParamInfo(name="dmac", width=48)])]
    tabs = [
        _table("ingress.bd", [("meta.ingress_metadata.bd", "exact", 16)], ["ingress.set_vrf"], 65536),
        _table("ingress.ipv4_fib", [("meta.ingress_metadata.vrf", "exact", 12), ("hdr.ipv4.dstAddr", "exact", 32)],
               ["ingress.on_miss", "ingress.fib_hit_nexthop"], 131072),
        _table("ingress.ipv4_fib_lpm", [("meta.ingress_metadata.vrf", "exact", 12), ("hdr.ipv4.dstAddr", "lpm", 32)],
               ["ingress.on_miss", "ingress.fib_hit_nexthop"], 16384),
        _table("ingress.nexthop", [("meta.ingress_metadata.nexthop_index", "exact", 16)],
               ["ingress.on_miss", "ingress.set_egress_details"], 32768),
        _table("ingress.port_mapping", [("standard_metadata.ingress_port", "exact", 9)], ["ingress.set_bd"], 32768),
        _table("egress.rewrite_mac", [("meta.ingress_metadata.nexthop_index", "exact", 16)],
               ["egress.on_miss", "egress.rewrite_src_dst_mac"], 32768),
    ]
    return ProgramInfo(source="basic_routing-bmv2.p4", tables=tabs, actions=acts)


def test_jenkins_hash_known_values():
    # ids p4c assigns (prefix 0x01 actions, 0x02 tables): NoAction, tutorials' basic.p4
    assert (0x01 << 24) | (jenkins_one_at_a_time("NoAction") & 0xFFFFFF) == 21257015
    assert (0x02 << 24) | (jenkins_one_at_a_time("MyIngress.ipv4_lpm") & 0xFFFFFF) == 37375156
    assert (0x01 << 24) | (jenkins_one_at_a_time("MyIngress.ipv4_forward") & 0xFFFFFF) == 28792405
    assert jenkins_one_at_a_time(b"") == 0


def test_basic_routing_matches_p4c_output():
    """Byte-identical to p4c's golden (p4c testdata/p4_16_samples_outputs/basic_routing-bmv2.p4.p4info.txtpb)."""
    text = p4info_to_text(p4info_from_program(basic_routing_info()))
    assert text == (GOLDEN / "basic_routing-bmv2.p4info.txtpb").read_text()


def test_accepts_objects_carrying_info():
    info = basic_routing_info()

    class Prog:
        pass

    class Sw:
        pass
    prog = Prog()
    prog.info = info
    sw = Sw()
    sw.program = prog
    assert p4info_from_program(sw) == p4info_from_program(info)
    with pytest.raises(TypeError):
        p4info_from_program(object())


def test_alias_is_shortest_unique_suffix():
    s = SymbolTable()
    for n in ("a.b.c", "b.c", "a.d.c", "x.y", "ingress.t", "egress.t"):
        s.add("table", n)
    assert s.alias("a.d.c") == "d.c"
    assert s.alias("a.b.c") == "a.b.c"
    assert s.alias("b.c") == "b.c"      # "c" is shared by three names
    assert s.alias("x.y") == "y"
    assert s.alias("ingress.t") == "ingress.t"


def test_id_annotation_and_collision_probing():
    s = SymbolTable()
    natural = (0x02 << 24) | (jenkins_one_at_a_time("c.t2") & 0xFFFFFF)
    # @id takes exactly the hash slot of c.t2, which must then probe to the next value
    s.add("table", "c.t1", {"id": str(natural & 0xFFFFFF)})
    s.add("table", "c.t2")
    s.compute_ids()
    assert s.id("table", "c.t1") == natural
    assert s.id("table", "c.t2") == natural + 1


def _colliding_names(prefix: str) -> tuple[str, str]:
    seen: dict[int, str] = {}
    i = 0
    while True:
        n = f"{prefix}{i}"
        h = jenkins_one_at_a_time(n) & 0xFFFFFF
        if h in seen:
            return seen[h], n
        seen[h] = n
        i += 1


def test_probing_follows_sorted_names():
    a, b = sorted(_colliding_names("C.t"))
    base = (0x02 << 24) | (jenkins_one_at_a_time(a) & 0xFFFFFF)
    for order in ((a, b), (b, a)):       # declaration order does not matter, sorted order does
        s = SymbolTable()
        for n in order:
            s.add("table", n)
        s.compute_ids()
        assert s.id("table", a) == base
        assert s.id("table", b) == base + 1
    # a colliding action does not disturb tables: the prefix differs
    s = SymbolTable()
    s.add("table", a)
    s.add("action", b)
    s.compute_ids()
    assert s.id("table", a) == base and s.id("action", b) & 0xFFFFFF == base & 0xFFFFFF


def test_bad_ids_are_errors():
    s = SymbolTable()
    with pytest.raises(P4InfoError, match="prefix"):
        s.add("table", "t", {"id": hex(0x01000005)})
    s.add("table", "t1", {"id": "5"})
    with pytest.raises(P4InfoError, match="multiple"):
        s.add("table", "t2", {"id": str(0x02000005)})
    info = ProgramInfo(actions=[ActionInfoP(name="a", params=[ParamInfo(name="x", width=8, annotations={"id": "0"})])],
                       tables=[TableInfo(name="t", actions=[TableActionRef(name="a")])])
    with pytest.raises(P4InfoError, match="0 is not"):
        p4info_from_program(info)


def test_field_ids_and_annotations():
    info = ProgramInfo(actions=[NOACTION, ActionInfoP(
        name="C.a", annotations={"brief": '"does a"', "name": '"C.a"'},
        params=[ParamInfo(name="p", width=8), ParamInfo(name="q", width=4, annotations={"id": "1"}),
                ParamInfo(name="r", width=2)])],
        tables=[TableInfo(name="C.t", actions=[TableActionRef(name="C.a"), NOACTION_REF])])
    p = p4info_from_program(info)
    a = p.actions[1]
    assert [(x.name, x.id) for x in a.params] == [("p", 2), ("q", 1), ("r", 3)]
    assert a.preamble.doc.brief == "does a"
    assert list(a.preamble.annotations) == []


def test_externs_controller_headers_digests():
    info = ProgramInfo(
        actions=[NOACTION, ActionInfoP(name="I.fwd", params=[ParamInfo(name="port", width=9)])],
        tables=[TableInfo(name="I.t", keys=[KeyInfoP(name="hdr.eth.dst", match_kind="ternary", width=48)],
                          actions=[TableActionRef(name="I.fwd"), NOACTION_REF],
                          direct_counter="I.dc", default_action="NoAction", const_default_action=True)],
        externs=[ExternInstanceInfo(kind="counter", name="I.c", size=64, unit="packets_and_bytes"),
                 ExternInstanceInfo(kind="direct_counter", name="I.dc", unit="packets", table="I.t"),
                 ExternInstanceInfo(kind="register", name="I.r", size=16, width=32),
                 ExternInstanceInfo(kind="register", name="I.s", size=4, width=8, signed=True)],
        controller_headers=[ControllerHeaderInfo(name="packet_in", type_name="packet_in_header_t",
                                                 annotations={"controller_header": '"packet_in"'},
                                                 fields=[HeaderFieldInfo("ingress_port", 9),
                                                         HeaderFieldInfo("_pad", 7)])],
        digests=[DigestInfo("learn_t", [HeaderFieldInfo("mac", 48), HeaderFieldInfo("port", 9)])])
    p = p4info_from_program(info)
    t = p.tables[0]
    dc = p.direct_counters[0]
    assert dc.preamble.id >> 24 == 0x13 and dc.direct_table_id == t.preamble.id
    assert list(t.direct_resource_ids) == [dc.preamble.id]
    assert t.const_default_action_id == 21257015
    assert p.counters[0].preamble.id >> 24 == 0x12 and p.counters[0].size == 64
    assert p.counters[0].spec.unit == p.counters[0].spec.BOTH
    regs = {r.preamble.name: r for r in p.registers}
    assert regs["I.r"].type_spec.bitstring.bit.bitwidth == 32 and regs["I.r"].preamble.id >> 24 == 0x16
    assert regs["I.s"].type_spec.bitstring.int.bitwidth == 8
    cpm = p.controller_packet_metadata[0]
    assert cpm.preamble.name == cpm.preamble.alias == "packet_in"
    assert cpm.preamble.id == (4 << 24) | (jenkins_one_at_a_time("packet_in_header_t") & 0xFFFFFF)
    assert list(cpm.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in cpm.metadata] == [(1, "ingress_port", 9), (2, "_pad", 7)]
    d = p.digests[0]
    assert d.preamble.id >> 24 == 0x17 and d.type_spec.struct.name == "learn_t"
    assert [m.name for m in p.type_info.structs["learn_t"].members] == ["mac", "port"]


@pytest.mark.parametrize("ext", ["txtpb", "txt", "bin", "json"])
def test_write_read_round_trip(tmp_path, ext):
    p = p4info_from_program(basic_routing_info())
    path = tmp_path / f"out.p4info.{ext}"
    write_p4info(p, path)
    assert read_p4info(path) == p
    if ext == "json":
        assert path.read_text().lstrip().startswith("{")
    if ext == "bin":
        assert path.read_bytes() == p.SerializeToString(deterministic=True)


ROUTER_GOLDEN = GOLDEN / "basic_router.p4info.txtpb"
REPO = p4rt_paths.REPO


def basic_router_info() -> ProgramInfo:
    """p4src/basic_router.p4 described by hand (ids from the Jenkins hash, derived by hand
    in the golden file: 37375156, 28792405, 25652968, 21257015)."""
    return ProgramInfo(
        source="p4src/basic_router.p4",
        actions=[NOACTION, ActionInfoP(name="MyIngress.drop"),
                 ActionInfoP(name="MyIngress.ipv4_forward",
                             params=[ParamInfo(name="dstAddr", width=48), ParamInfo(name="port", width=9)])],
        tables=[TableInfo(name="MyIngress.ipv4_lpm",
                          keys=[KeyInfoP(name="hdr.ipv4.dstAddr", match_kind="lpm", width=32)],
                          actions=[TableActionRef(name="MyIngress.ipv4_forward"),
                                   TableActionRef(name="MyIngress.drop"), TableActionRef(name="NoAction")],
                          default_action="MyIngress.drop", size=1024)])


def test_basic_router_hand_description_matches_golden():
    assert p4info_to_text(p4info_from_program(basic_router_info())) == ROUTER_GOLDEN.read_text()


def _compiled_switch(path):
    from emulation.v1model.load import load_switch
    return load_switch(str(path))


def test_basic_router_compiled_matches_golden():
    core = REPO / "emulation" / "p4" / "include" / "core.p4"
    if core.exists() and "noWarn" not in core.read_text():
        pytest.xfail('emulation/p4/include/core.p4 lacks @noWarn("unused") on NoAction, which p4c\'s core.p4 '
                     "has and which p4c copies into the P4Info")
    sw = _compiled_switch(REPO / "p4src" / "basic_router.p4")
    assert p4info_to_text(p4info_from_program(sw)) == ROUTER_GOLDEN.read_text()


def test_saatp_program_p4info_is_consistent():
    sw = _compiled_switch(REPO / "p4src" / "saatp.p4")
    p = p4info_from_program(sw)
    ids = [o.preamble.id for kind in ("tables", "actions", "counters", "registers", "direct_counters",
                                      "controller_packet_metadata", "digests") for o in getattr(p, kind)]
    assert len(ids) == len(set(ids))
    aliases = [o.preamble.alias for kind in ("tables", "actions", "counters", "registers") for o in getattr(p, kind)]
    assert len(aliases) == len(set(aliases))
    regs = {r.preamble.name: r for r in p.registers}
    assert any(n.endswith("s_state") for n in regs)
    r = next(r for n, r in regs.items() if n.endswith("s_state"))
    assert r.size == 1024 and r.type_spec.bitstring.bit.bitwidth == 8 and r.preamble.id >> 24 == 0x16
