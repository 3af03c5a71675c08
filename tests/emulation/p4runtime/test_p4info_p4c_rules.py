"""P4Info rules of p4c's control-plane back end beyond what the golden programs exercise.

Each test is a program of our own; the expectations are what p4c 1.2.x writes, read from its
sources (``control-plane/p4RuntimeSerializer.cpp``, ``typeSpecConverter.cpp``,
``frontends/p4/unusedDeclarations.cpp``):

* a ``type`` gives match fields, action parameters and controller-header fields a
  ``type_name`` and a ``type_info.new_types`` entry (``original_type``, or ``translated_type``
  with ``@p4runtime_translation``, whose controller width becomes the ``bitwidth``);
* every type P4Info refers to goes through the TypeSpecConverter: a serializable-enum key
  lists its enum, an ``error`` key lists ``type_info.error`` and has bitwidth 0 (a string);
* the front end removes a table no apply block applies ("Table t is not used; removing")
  and, with it, actions only that table used; extern instances stay even when unused;
* controller-header fields keep their annotations (``@padding``) and ``@id``;
* match field ids count every key element, ``selector`` keys included;
* digest struct members are typed (``bool``, ``int<W>``, serializable enums);
* ``@pkginfo(...)`` on ``main`` fills ``pkg_info``.
"""
from __future__ import annotations

from emulation.p4runtime.p4info import p4info_from_program
from emulation.v1model.load import compile_file
from host_agent.p4runtime import p4info_pb2 as p4i

HEAD = """
#include <core.p4>
#include <v1model.p4>
"""
TAIL = """
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H h, inout M m) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
"""
MAIN = "V1Switch(P(), V(), I(), E(), C(), D()) main;\n"


def _p4info(tmp_path, body, main=MAIN):
    f = tmp_path / "prog.p4"
    f.write_text(HEAD + body + TAIL + main)
    return p4info_from_program(compile_file(f))


def _table(p, name):
    return next(t for t in p.tables if t.preamble.name == name)


def _action(p, name):
    return next(a for a in p.actions if a.preamble.name == name)


NEWTYPES = """
type bit<32> Ip_t;
@p4runtime_translation("example.org/v1/Port_t", 32)
type bit<9> Port_t;
@p4runtime_translation("example.org/v1/Name_t", string)
type bit<16> Name_t;
typedef Ip_t IpAlias_t;
header h_t { Ip_t dst; IpAlias_t src; bit<16> name; }
@controller_header("packet_in")
header packet_in_t { Port_t ingress_port; bit<7> pad; }
struct H { packet_in_t pin; h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(Port_t port, Ip_t nh, Name_t n) { sm.egress_spec = (bit<9>)port; h.h.dst = nh; h.h.name = (bit<16>)n; }
    table t {
        key = { h.h.dst : exact; h.h.src : lpm; (bit<32>)h.h.dst : ternary @name("plain"); }
        actions = { fwd; }
    }
    apply { t.apply(); }
}
"""


def test_new_types_name_their_uses_and_are_described(tmp_path):
    p = _p4info(tmp_path, NEWTYPES)
    t = _table(p, "I.t")
    keys = {m.name: m for m in t.match_fields}
    assert keys["h.h.dst"].type_name.name == "Ip_t" and keys["h.h.dst"].bitwidth == 32
    # a typedef of a type is that type
    assert keys["h.h.src"].type_name.name == "Ip_t"
    # a cast gives bit<32>: no type name
    assert not keys["plain"].HasField("type_name")
    params = {q.name: q for q in _action(p, "I.fwd").params}
    # translated: the controller's width (32 bits; 0 for a string), not bit<9>
    assert (params["port"].bitwidth, params["port"].type_name.name) == (32, "Port_t")
    assert (params["nh"].bitwidth, params["nh"].type_name.name) == (32, "Ip_t")
    assert (params["n"].bitwidth, params["n"].type_name.name) == (0, "Name_t")
    md = {m.name: m for m in p.controller_packet_metadata[0].metadata}
    assert (md["ingress_port"].bitwidth, md["ingress_port"].type_name.name) == (32, "Port_t")
    nt = p.type_info.new_types
    assert set(nt) == {"Ip_t", "Port_t", "Name_t"}
    assert nt["Ip_t"].original_type.bitstring.bit.bitwidth == 32
    assert nt["Port_t"].translated_type.uri == "example.org/v1/Port_t"
    assert nt["Port_t"].translated_type.sdn_bitwidth == 32
    assert nt["Name_t"].translated_type.HasField("sdn_string")
    assert not nt["Port_t"].annotations        # the translation is not repeated as an annotation


ENUM_ERROR_KEYS = """
enum bit<8> Color_t { RED = 1, GREEN = 2 }
header h_t { Color_t color; bit<8> a; }
struct H { h_t h; }
struct M { }
error { Oops }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) never_counted;
    action a1(bit<8> v) { h.h.a = v; }
    action only_unused() { h.h.a = 9; }
    table t { key = { h.h.color : exact; sm.parser_error : exact; } actions = { a1; } }
    table unused { key = { h.h.a : exact; } actions = { only_unused; } }
    apply { t.apply(); }
}
"""


def test_enum_and_error_keys_and_unused_tables(tmp_path):
    p = _p4info(tmp_path, ENUM_ERROR_KEYS)
    assert [t.preamble.name for t in p.tables] == ["I.t"]
    assert {a.preamble.name for a in p.actions} == {"I.a1", "NoAction"}
    assert [c.preamble.name for c in p.counters] == ["I.never_counted"]     # instances stay
    keys = {m.name: m for m in _table(p, "I.t").match_fields}
    assert keys["h.h.color"].bitwidth == 8
    assert keys["sm.parser_error"].bitwidth == 0
    assert set(p.type_info.serializable_enums) == {"Color_t"}
    assert list(p.type_info.error.members) == ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
                                               "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument",
                                               "Oops"]


CONTROLLER_DIGEST_SELECTOR = """
enum bit<8> Color_t { RED = 1, GREEN = 2 }
header h_t { bit<8> a; bit<16> b; int<8> s; }
@controller_header("packet_in")
header packet_in_t { @id(3) bit<9> ingress_port; @padding bit<7> _pad; bit<16> reason; }
struct d_t { bit<8> a; bool flag; Color_t c; int<8> s; }
struct H { packet_in_t pin; h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a1(bit<8> v) { h.h.a = v; }
    table sel {
        key = { h.h.b : selector; h.h.a : exact; }
        actions = { a1; }
        implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w16);
    }
    apply { sel.apply(); digest<d_t>(1, {h.h.a, true, Color_t.RED, h.h.s}); }
}
"""


def test_controller_header_digest_and_selector_rules(tmp_path):
    p = _p4info(tmp_path, CONTROLLER_DIGEST_SELECTOR,
                main='@pkginfo(name="rules", version="0.1", contact="a@b.c")\n@brief("test program")\n' + MAIN)
    md = [(m.name, m.id, list(m.annotations)) for m in p.controller_packet_metadata[0].metadata]
    # FieldIdAllocator: @id first, then 1, 2, ... in order, an @id field still taking its turn
    assert md == [("ingress_port", 3, []), ("_pad", 2, ["@padding"]), ("reason", 4, [])]
    # the selector key is not listed but takes id 1
    assert [(m.name, m.id) for m in _table(p, "I.sel").match_fields] == [("h.h.a", 2)]
    members = {m.name: m.type_spec for m in p.type_info.structs["d_t"].members}
    assert members["a"].bitstring.bit.bitwidth == 8
    assert members["flag"].HasField("bool")
    assert members["c"].serializable_enum.name == "Color_t"
    assert members["s"].bitstring.int.bitwidth == 8
    assert set(p.type_info.serializable_enums) == {"Color_t"}
    assert (p.pkg_info.name, p.pkg_info.version, p.pkg_info.contact, p.pkg_info.arch) == \
        ("rules", "0.1", "a@b.c", "v1model")
    assert p.pkg_info.doc.brief == "test program"


DIRECT_ON_UNUSED_TABLE = """
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) dc;
    direct_counter(CounterType.bytes) used_dc;
    action a1() { h.h.a = 1; }
    table t { key = { h.h.a : exact; } actions = { a1; } counters = dc; }
    table u { key = { h.h.a : exact; } actions = { NoAction; } counters = used_dc; }
    apply { u.apply(); }
}
"""


def test_direct_resources_come_with_their_table(tmp_path):
    # p4c lists a direct counter or meter with the table that owns it (addTableProperties);
    # the owner of dc is never applied, so neither is listed
    p = _p4info(tmp_path, DIRECT_ON_UNUSED_TABLE)
    assert [t.preamble.name for t in p.tables] == ["I.u"]
    assert [(c.preamble.name, c.direct_table_id) for c in p.direct_counters] == \
        [("I.used_dc", p.tables[0].preamble.id)]
    assert {a.preamble.name for a in p.actions} == {"NoAction"}


IMPLICIT_NOACTION = """
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action seta(bit<8> v) { h.h.a = v; }
    table no_default { key = { h.h.a : exact; } actions = { seta; } }
    table listed { key = { h.h.a : exact; } actions = { seta; NoAction; } }
    table explicit { key = { h.h.a : exact; } actions = { seta; NoAction; } default_action = NoAction(); }
    apply { no_default.apply(); listed.apply(); explicit.apply(); }
}
"""


def test_implicit_noaction_is_default_only(tmp_path):
    # p4c's front end (frontends/p4/createBuiltins.cpp) gives a table without default_action
    # ``@defaultonly NoAction`` (unless NoAction is already in its actions) and
    # ``default_action = NoAction()``; P4Info shows the reference's annotation and scope
    p = _p4info(tmp_path, IMPLICIT_NOACTION)
    noaction = _action(p, "NoAction").preamble.id

    def ref(table):
        return next(r for r in _table(p, table).action_refs if r.id == noaction)
    assert list(ref("I.no_default").annotations) == ["@defaultonly"]
    assert ref("I.no_default").scope == p4i.ActionRef.DEFAULT_ONLY
    for t in ("I.listed", "I.explicit"):
        assert not ref(t).annotations and ref(t).scope == p4i.ActionRef.TABLE_AND_DEFAULT


VALUE_SETS_AND_REGISTERS = """
enum bit<4> Kind_t { SMALL = 1, LARGE = 9 }
type bit<12> Cookie_t;
struct pair_t {
    bit<8> first;
    @match(ternary) @brief("low bits") bit<4> second;
    @id(7) @match(lpm) @note("x") bit<4> third;
}
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    value_set<pair_t>(8) pairs;
    value_set<bit<8>>(2) plain;
    state start {
        p.extract(h.h);
        transition select(h.h.a, h.h.b[7:4], h.h.b[3:0]) { pairs: next; default: accept; }
    }
    state next { transition select(h.h.b) { plain: accept; default: accept; } }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    register<Kind_t>(4) kinds;
    register<Cookie_t>(2) cookies;
    register<int<6>>(3) signed_cells;
    apply {
        kinds.write(0, Kind_t.LARGE);
        cookies.write(1, (Cookie_t)12w5);
        signed_cells.write(2, -6s1);
    }
}
"""


def test_value_sets_of_structs_and_typed_registers(tmp_path):
    p = _p4info(tmp_path, VALUE_SETS_AND_REGISTERS)
    vs = {v.preamble.name: v for v in p.value_sets}
    # value_set<S>: one match per field of S (p4c's addValueSet), @match giving the match
    # type, @id first (FieldIdAllocator), other annotations kept, @brief as doc
    got = [(m.id, m.name, m.bitwidth, m.match_type, list(m.annotations), m.doc.brief)
           for m in vs["P.pairs"].match]
    assert got == [(1, "first", 8, p4i.MatchField.EXACT, [], ""),
                   (2, "second", 4, p4i.MatchField.TERNARY, [], "low bits"),
                   (7, "third", 4, p4i.MatchField.LPM, ['@note("x")'], "")]
    assert [(m.id, m.name, m.bitwidth) for m in vs["P.plain"].match] == [(1, "", 8)]
    # registers: the type_spec of the declared cell type (TypeSpecConverter), with its
    # type_info entry
    regs = {r.preamble.name: r.type_spec for r in p.registers}
    assert regs["I.kinds"].serializable_enum.name == "Kind_t"
    assert regs["I.cookies"].new_type.name == "Cookie_t"
    assert regs["I.signed_cells"].bitstring.int.bitwidth == 6
    se = p.type_info.serializable_enums["Kind_t"]
    assert se.underlying_type.bitwidth == 4
    assert [(m.name, m.value) for m in se.members] == [("SMALL", b"\x01"), ("LARGE", b"\x09")]
    assert p.type_info.new_types["Cookie_t"].original_type.bitstring.bit.bitwidth == 12


DIGEST_NESTED = """
enum Verdict_t { ALLOW, DENY }
struct inner_t { bit<3> x; bool y; }
header tag_t { bit<8> t; }
header h_t { bit<8> a; }
struct learn_t { bit<8> a; error e; Verdict_t v; inner_t inner; tag_t tag; }
struct H { h_t h; tag_t tag; }
struct M { }
error { TooLong }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { digest<learn_t>(1, {h.h.a, sm.parser_error, Verdict_t.DENY, {3w1, true}, h.tag}); }
}
"""


def test_digest_types_nest_as_p4c_describes_them(tmp_path):
    p = _p4info(tmp_path, DIGEST_NESTED)
    assert p.digests[0].type_spec.struct.name == "learn_t"
    ti = p.type_info
    members = {m.name: m.type_spec for m in ti.structs["learn_t"].members}
    assert members["e"].HasField("error") and members["v"].enum.name == "Verdict_t"
    assert members["inner"].struct.name == "inner_t" and members["tag"].header.name == "tag_t"
    inner = {m.name: m.type_spec for m in ti.structs["inner_t"].members}
    assert inner["x"].bitstring.bit.bitwidth == 3 and inner["y"].HasField("bool")
    assert [(m.name, m.type_spec.bit.bitwidth) for m in ti.headers["tag_t"].members] == [("t", 8)]
    assert [m.name for m in ti.enums["Verdict_t"].members] == ["ALLOW", "DENY"]
    assert list(ti.error.members)[-1] == "TooLong"


UNUSED_INSTANCE = """
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control Inner(inout H h) {
    counter(4, CounterType.packets) hits;
    action mark(bit<8> v) { h.h.b = v; hits.count(0); }
    table marks { key = { h.h.a : exact; } actions = { mark; } }
    apply { marks.apply(); }
}
control Outer(inout H h) {
    Inner() deep;
    apply { deep.apply(h); }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    Inner() first;
    Inner() spare;
    Outer() nested_spare;
    Inner() second;
    apply { first.apply(h); second.apply(h); }
}
"""


def test_instances_nothing_applies_are_left_out(tmp_path):
    # p4c's front end removes an unused parser/control instance (frontends/p4/
    # unusedDeclarations.cpp: only extern instances are kept unused), with what is inside it
    p = _p4info(tmp_path, UNUSED_INSTANCE)
    assert [t.preamble.name for t in p.tables] == ["I.first.marks", "I.second.marks"]
    assert [a.preamble.name for a in p.actions] == ["NoAction", "I.first.mark", "I.second.mark"]
    assert [c.preamble.name for c in p.counters] == ["I.first.hits", "I.second.hits"]


SHARED_SELECTOR = """
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w16, 32w8) pool;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table zeta { key = { h.h.a : exact; h.h.b : selector; } actions = { fwd; } implementation = pool; }
    table alpha { key = { h.h.b : exact; h.h.a : selector; } actions = { fwd; } implementation = pool; }
    apply { zeta.apply(); alpha.apply(); }
}
"""


def test_shared_profile_lists_its_tables_by_name(tmp_path):
    # p4c collects the tables of an action profile in a std::set of names
    p = _p4info(tmp_path, SHARED_SELECTOR)
    ids = {t.preamble.name: t.preamble.id for t in p.tables}
    assert list(p.action_profiles[0].table_ids) == [ids["I.alpha"], ids["I.zeta"]]


IN_PLACE_PROFILES = """
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table members_only {
        key = { h.h.a : exact; }
        actions = { fwd; }
        @name("member_pool") @note(1) implementation = action_profile(32w64);
    }
    table hashed {
        key = { h.h.a : exact; h.h.b : selector; }
        actions = { fwd; }
        @name(".spread") @max_group_size(8) implementation = action_selector(HashAlgorithm.crc32, 32w32, 32w16);
    }
    apply { members_only.apply(); hashed.apply(); }
}
"""


def test_profiles_built_in_the_table_take_the_property_name(tmp_path):
    # p4c names a profile constructed in the ``implementation`` property after the property's
    # @name as written (not prefixed with the control), with the property's annotations
    p = _p4info(tmp_path, IN_PLACE_PROFILES)
    prof = {a.preamble.name: a for a in p.action_profiles}
    assert set(prof) == {"member_pool", "spread"}
    assert list(prof["member_pool"].preamble.annotations) == ["@note(1)"]
    assert (prof["spread"].with_selector, prof["spread"].max_group_size, prof["spread"].size) == (True, 8, 32)
    assert not prof["spread"].preamble.annotations
    # with @max_group_size p4c states its meaning: a sum of weights unless the program says otherwise
    # (p4c 1.2.4.8 on its action_profile_max_group_size_annotation.p4 writes `sum_of_weights {}`)
    assert prof["spread"].WhichOneof("selector_size_semantics") == "sum_of_weights"
    assert prof["member_pool"].WhichOneof("selector_size_semantics") is None
    members = IN_PLACE_PROFILES.replace("@max_group_size(8)", '@max_group_size(8) @selector_size_semantics("sum_of_members") '
                                        "@max_member_weight(4)")
    p = _p4info(tmp_path, members)
    spread = next(a for a in p.action_profiles if a.preamble.name == "spread")
    assert spread.WhichOneof("selector_size_semantics") == "sum_of_members"
    assert spread.sum_of_members.max_member_weight == 4 and not spread.preamble.annotations
    ids = {t.preamble.name: t.implementation_id for t in p.tables}
    assert ids == {"I.members_only": prof["member_pool"].preamble.id, "I.hashed": prof["spread"].preamble.id}


STRUCTURED_ANNOTATIONS = """
#define LABEL "edge"
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    @plain(x, 1 + 2) @kv[tag=LABEL, weight=0x10, on=true] @none[] @mixed[3, "s", 2 == 3, 4 + 5 * 2]
    action seta(@unit["bytes"] bit<8> v) { h.h.a = v; }
    table t { key = { h.h.a : exact @ui[hint="k"]; } actions = { seta; } }
    apply { t.apply(); }
}
"""


def test_structured_annotations_are_listed_apart(tmp_path):
    # p4c puts a structured annotation (@a[...]) in structured_annotations, its expressions
    # folded to string/int64/bool; an unstructured one stays text, tokens joined by spaces
    p = _p4info(tmp_path, STRUCTURED_ANNOTATIONS)
    pre = _action(p, "I.seta").preamble
    assert list(pre.annotations) == ["@plain(x , 1 + 2)"]
    sa = {a.name: a for a in pre.structured_annotations}
    assert list(sa) == ["kv", "none", "mixed"]
    kv = {k.key: k.value for k in sa["kv"].kv_pair_list.kv_pairs}
    assert (kv["tag"].string_value, kv["weight"].int64_value, kv["on"].bool_value) == ("edge", 16, True)
    assert not sa["none"].HasField("kv_pair_list") and not sa["none"].HasField("expression_list")
    ex = sa["mixed"].expression_list.expressions
    assert [e.WhichOneof("value") for e in ex] == ["int64_value", "string_value", "bool_value", "int64_value"]
    assert (ex[0].int64_value, ex[1].string_value, ex[2].bool_value, ex[3].int64_value) == (3, "s", False, 14)
    param = _action(p, "I.seta").params[0]
    assert not param.annotations and param.structured_annotations[0].expression_list.expressions[0].string_value == "bytes"
    key = _table(p, "I.t").match_fields[0]
    assert key.structured_annotations[0].kv_pair_list.kv_pairs[0].value.string_value == "k"


HIDDEN_NAMES = """
header h_t { bit<8> a; }
@hidden @controller_header("packet_in")
header internal_in_t { bit<8> x; }
struct H { h_t h; internal_in_t i; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    @hidden action bump() { h.h.a = h.h.a + 1; }
    @hidden table t { actions = { bump; } default_action = bump(); }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    action bump() { h.h.a = 0; }
    table t { key = { h.h.a : exact; } actions = { bump; } }
    apply { t.apply(); }
}
"""


def test_hidden_objects_still_count_for_aliases(tmp_path):
    # p4c's symbol table holds @hidden tables and actions too: a visible object sharing their
    # last name component needs a longer alias; a @hidden controller header is not listed
    tail = TAIL.replace("control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }\n", "")
    f = tmp_path / "prog.p4"
    f.write_text(HEAD + HIDDEN_NAMES + tail + MAIN)
    p = p4info_from_program(compile_file(f))
    assert [(t.preamble.name, t.preamble.alias) for t in p.tables] == [("E.t", "E.t")]
    assert ("E.bump", "E.bump") in [(a.preamble.name, a.preamble.alias) for a in p.actions]
    assert "I.bump" not in [a.preamble.name for a in p.actions]
    assert not p.controller_packet_metadata


FLAT_CONTROLLER_HEADER_AND_LIST_DIGEST = """
struct where_t { bit<4> rack; @id(9) bit<4> slot; }
@controller_header("packet_in")
header punt_t { where_t from; bit<9> port; @padding bit<7> pad; }
header h_t { bit<8> a; bit<8> b; }
struct H { punt_t punt; h_t h; }
struct M { bit<8> x; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { digest(1, {h.h.a, m.x}); digest(2, {h.h.b}); }
}
"""


def test_controller_header_structs_flatten_and_list_digests_are_numbered(tmp_path):
    p = _p4info(tmp_path, FLAT_CONTROLLER_HEADER_AND_LIST_DIGEST)
    # p4c flattens a struct-typed controller-header field into ``from.rack``, ``from.slot``
    # (control-plane/flattenHeader.cpp), ids over the flattened fields
    md = [(m.name, m.id, m.bitwidth, list(m.annotations)) for m in p.controller_packet_metadata[0].metadata]
    assert md == [("from.rack", 1, 4, []), ("from.slot", 9, 4, []), ("port", 2, 9, []),
                  ("pad", 3, 7, ["@padding"])]
    # a digest of a list has no type name: p4c calls it digest_<n> in call order, a tuple
    digests = [(d.preamble.name, [m.bitstring.bit.bitwidth for m in d.type_spec.tuple.members]) for d in p.digests]
    assert digests == [("digest_0", [8, 8]), ("digest_1", [8])]


INLINED_ORDER = """
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
action drop_it() { mark_to_drop(); }
control Part(inout H h) {
    counter(8, CounterType.packets) part_hits;
    action set_b(bit<8> v) { h.h.b = v; part_hits.count(0); }
    table part_t { key = { h.h.a : exact; } actions = { set_b; } default_action = set_b(1); }
    apply { part_t.apply(); }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    counter(8, CounterType.packets) first_hits;
    action first_a(bit<8> v) { h.h.a = v; first_hits.count(0); }
    table first_t { key = { h.h.a : exact; } actions = { first_a; } default_action = first_a(0); }
    Part() part;
    counter(8, CounterType.packets) last_hits;
    action last_a(bit<8> v) { h.h.a = v; last_hits.count(1); }
    table last_t { key = { h.h.b : exact; } actions = { last_a; } default_action = last_a(0); }
    apply { first_t.apply(); part.apply(h); last_t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    action e_a() { h.h.a = 2; }
    table e_t { key = { h.h.a : exact; } actions = { e_a; drop_it; } default_action = drop_it(); }
    apply { e_t.apply(); }
}
"""


def test_order_follows_p4c_inlining_and_action_localization(tmp_path):
    # p4c's front end inlines a control instance where it is declared (frontends/p4/
    # inlining.cpp) and copies a top-level action to the front of the first control that
    # uses it (localizeActions.cpp); P4Info lists what it finds in that order
    tail = TAIL.replace("control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }\n", "")
    f = tmp_path / "prog.p4"
    f.write_text(HEAD + INLINED_ORDER + tail + MAIN)
    p = p4info_from_program(compile_file(f))
    assert [t.preamble.name for t in p.tables] == ["I.first_t", "I.part.part_t", "I.last_t", "E.e_t"]
    assert [a.preamble.name for a in p.actions] == ["I.first_a", "I.part.set_b", "I.last_a", "drop_it", "E.e_a"]
    assert [c.preamble.name for c in p.counters] == ["I.first_hits", "I.part.part_hits", "I.last_hits"]


GLOBAL_ACTIONS_CALLED = """
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
action zap() { mark_to_drop(); }
action mark() { }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action local_a() { h.h.a = 1; }
    table t { key = { h.h.a : exact; } actions = { local_a; NoAction; } default_action = NoAction(); }
    apply { t.apply(); if (h.h.a == 0) { mark(); } }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { zap(); }
}
"""


def test_top_level_actions_called_from_apply_blocks(tmp_path):
    # a top-level action an apply block calls is copied into that control, after the ones its
    # tables use (localizeActions.cpp visits the control's declarations before its body)
    tail = TAIL.replace("control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }\n", "")
    f = tmp_path / "prog.p4"
    f.write_text(HEAD + GLOBAL_ACTIONS_CALLED + tail + MAIN)
    p = p4info_from_program(compile_file(f))
    assert [a.preamble.name for a in p.actions] == ["NoAction", "mark", "I.local_a", "zap"]


TOP_LEVEL_NAMED = """
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
@name("shared_hits") counter(4, CounterType.packets) top_counter;
@name(".by_table") direct_meter<bit<32>>(MeterType.bytes) top_meter;
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    bit<32> color;
    action metered() { top_meter.read(color); }
    table t { key = { h.h.a : exact; } actions = { metered; } meters = top_meter; }
    apply { t.apply(); top_counter.count(0); }
}
"""


def test_top_level_instances_follow_their_name_annotation(tmp_path):
    p = _p4info(tmp_path, TOP_LEVEL_NAMED)
    assert [c.preamble.name for c in p.counters] == ["shared_hits"]
    assert [m.preamble.name for m in p.direct_meters] == ["by_table"]
