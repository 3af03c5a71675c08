"""The switch program, read back by the project's P4 front end: its ``header sa_t`` is the
field table and its constants are the layout's; and for every supported K the embedded
target compiles it with p4c's BMv2 back-end limits enforced (../shared/golden/p4c-rejects.txt
shows p4c refusing the program before the egress shift was narrowed)."""
import functools
import os

import pytest

from emulation.p4.frontend import parse_source
from emulation.v1model.bmv2_limits import BMv2LimitError
from emulation.v1model.load import compile_source
from host_agent.constants import DEFAULT_K
from host_agent.protocol import layout, p4gen, switch_counters

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
PROGRAM = os.path.join(REPO, "p4src", "saatp.p4")


@functools.lru_cache(maxsize=None)
def committed():
    with open(PROGRAM) as f:
        return parse_source(f.read(), "p4src/saatp.p4")


def _decl(program, name):
    found = [d for d in program.decls if getattr(d, "name", None) == name]
    assert len(found) == 1, f"{name} declared {len(found)} times"
    return found[0]


def _fields(decl):
    return [(f.name, type(f.type).__name__, f.type.width) for f in decl.fields]


def test_sa_header_is_the_field_table():
    sa = _decl(committed(), "sa_t")
    assert type(sa).__name__ == "HeaderDecl"
    assert _fields(sa) == [(f.name, "TBit", f.bits) for f in layout.SA_HEADER]
    assert sum(f.type.width for f in sa.fields) == 8 * layout.HDR_LEN


def test_payload_header_is_k_lanes():
    pay = _decl(committed(), "payload_t")
    lane = layout.PAYLOAD_LANE
    assert _fields(pay) == [(f"{lane.name}{i}", "TBit", lane.bits) for i in range(DEFAULT_K)]
    hdrs = _decl(committed(), "headers_t")
    assert [(f.name, f.type.name) for f in hdrs.fields] == [
        ("ethernet", "ethernet_t"), ("ipv4", "ipv4_t"), ("udp", "udp_t"), ("sa", "sa_t"),
        ("payload", "payload_t")]


def _const(program, name):
    c = _decl(program, name)
    return c.type.width, c.value.value


def test_constants_are_the_layout_values():
    p = committed()
    for value, name in layout.TYPE_NAMES.items():
        if value not in layout.HOST_ONLY_TYPES:
            assert _const(p, f"T_{name}") == (layout.FIELD["type"].bits, value)
    for bit, name in layout.FLAG_NAMES.items():
        assert _const(p, f"F_{name}") == (layout.FIELD["flags"].bits, bit)
    assert _const(p, "SA_PORT")[1] == layout.SA_PORT
    assert _const(p, "SA_VERSION") == (layout.FIELD["version"].bits, layout.VERSION)
    assert _const(p, "WID_SWITCH")[1] == layout.SWITCH_WID


@pytest.mark.parametrize("k", [64, 256, layout.MAX_LANES])
def test_generated_program_compiles_within_bmv2_limits(k):
    """compile_source raises BMv2LimitError for anything p4c's BMv2 back end refuses."""
    program = compile_source(p4gen.generate(k), f"saatp_k{k}.p4")
    assert program is not None


def test_the_shift_p4c_refused_is_reported():
    """The egress check as it stood when p4c refused the program (a 16-bit shift amount)."""
    text = p4gen.generate(8)
    i = text.index(f"(sm.egress_rid >= {layout.BITMAP_BITS} ||\n")
    j = text.index("== 0)) {", i)
    old = text[:i] + "((hdr.sa.bitmap >> sm.egress_rid) & 1) == 0) {" + text[j + len("== 0)) {"):]
    line = old[:old.index("hdr.sa.bitmap >> sm.egress_rid")].count("\n") + 1
    with pytest.raises(BMv2LimitError) as e:
        compile_source(old, "old.p4")
    [err] = e.value.errors
    assert err.loc.line == line
    assert "hdr.sa.bitmap >> sm.egress_rid: shift amount limited to 8 bits" in err.message


def test_counters_and_drop_reasons_are_the_shared_names():
    p = committed()
    for i, name in enumerate(switch_counters.DROP_REASONS):
        assert _const(p, f"DROP_{name.upper()}") == (32, i)
    ingress = _decl(p, "SaIngress")
    counters = {d.name: d for d in ingress.locals if type(d).__name__ == "Instantiation"
                and getattr(d.type, "name", None) == "counter"}
    assert set(counters) == {f"c_{n}" for n in switch_counters.EVENT_COUNTERS} | {"c_drop"}
    assert counters["c_drop"].args[0].value.value == switch_counters.DROP_COUNTER_SIZE
