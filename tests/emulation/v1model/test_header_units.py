"""Headers extracted and emitted through one ``struct.Struct`` of 8/16/32/64-bit units (runs of
sub-byte fields split with shifts, e.g. IPv4's version+ihl): random layouts, every field
changed by the program, output compared with an independent bit-level model."""
from __future__ import annotations

import random

import pytest

from emulation.v1model.load import switch_from_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t {{ {fields} }}
struct headers {{ h_t h; }}
struct metadata {{ }}
parser P(packet_in p, out headers hdr, inout metadata m, inout standard_metadata_t sm) {{
    state start {{ p.extract(hdr.h); transition accept; }} }}
control VC(inout headers hdr, inout metadata m) {{ apply {{ }} }}
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {{
    apply {{ {updates} sm.egress_spec = 1; }} }}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers hdr, inout metadata m) {{ apply {{ }} }}
control D(packet_out p, in headers hdr) {{ apply {{ p.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _unit_layout(rng: random.Random) -> list[tuple[int, bool]]:
    """Units of 8/16/32/64 bits: a whole (possibly signed) field, or unsigned pieces filling it."""
    out = []
    for _ in range(rng.randint(2, 7)):
        unit = rng.choice([8, 16, 32, 64])
        if rng.random() < 0.5:
            out.append((unit, rng.random() < 0.3))
            continue
        left = unit
        while left:
            w = rng.randint(1, left)
            out.append((w, False))
            left -= w
    return out


@pytest.mark.parametrize("seed", range(10))
def test_unit_codec_round_trip_and_update(seed):
    rng = random.Random(100 + seed)
    layout = _unit_layout(rng)
    decl = " ".join(f"{'int' if s else 'bit'}<{w}> f{i};" for i, (w, s) in enumerate(layout))
    # every field: f = f + i + 1 (wraps at its width, two's complement for int<W>)
    updates = " ".join(f"hdr.h.f{i} = hdr.h.f{i} + {i + 1};" for i in range(len(layout)))
    sw = switch_from_source(PROGRAM.format(fields=decl, updates=updates))
    assert "_S = _struct.Struct(" in sw.program.source        # the unit codec is the one in use
    nbytes = sum(w for w, _ in layout) // 8
    for _ in range(30):
        data = bytes(rng.randrange(256) for _ in range(nbytes)) + b"tail"
        v = int.from_bytes(data[:nbytes], "big")
        new, pos = 0, nbytes * 8
        for i, (w, _s) in enumerate(layout):
            pos -= w
            f = (v >> pos) & ((1 << w) - 1)
            new = (new << w) | ((f + i + 1) & ((1 << w) - 1))
        (port, out), = sw.process(0, data)
        assert port == 1
        assert out == new.to_bytes(nbytes, "big") + b"tail"


def test_ipv4_uses_units():
    from emulation.v1model.load import load_switch
    from testsupport import paths
    sw = load_switch(str(paths.REPO / "p4src" / "basic_router.p4"))
    src = sw.program.source
    start = src.index("class H_ipv4_t")
    assert "_struct.Struct('>BBHHHBBHII')" in src[start:src.index("class ", start + 10)]


LANES = """
#include <core.p4>
#include <v1model.p4>
header lanes_t {{ {fields} }}
struct headers {{ lanes_t l; }}
struct metadata {{ }}
parser P(packet_in p, out headers hdr, inout metadata m, inout standard_metadata_t sm) {{
    state start {{ p.extract(hdr.l); transition accept; }} }}
control VC(inout headers hdr, inout metadata m) {{ apply {{ }} }}
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {{
    apply {{ hdr.l.f3 = hdr.l.f3 + hdr.l.f{last}; hdr.l.f0 = hdr.l.f0 - 1; sm.mcast_grp = 1; }} }}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {{
    apply {{ if (sm.egress_port == 2) {{ hdr.l.f1 = 7; }} }} }}
control CC(inout headers hdr, inout metadata m) {{ apply {{ }} }}
control D(packet_out p, in headers hdr) {{ apply {{ p.emit(hdr.l); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("width,signed", [(8, True), (16, False), (32, False), (32, True)])
def test_lane_header_fields_by_name_and_per_replica(width, signed):
    """A header of >= 16 same-typed fields is stored as one array: scalar reads and writes by
    name, wrap-around, and multicast replicas that each own their copy."""
    k = 20
    kind = "int" if signed else "bit"
    sw = switch_from_source(LANES.format(fields=" ".join(f"{kind}<{width}> f{i};" for i in range(k)),
                                         last=k - 1))
    assert "_a = np.frombuffer(" in sw.program.source
    sw.mc_set_group(1, [(1, 0), (2, 1)])
    rng = random.Random(width)
    mask = (1 << width) - 1
    for _ in range(20):
        vals = [rng.getrandbits(width) for _ in range(k)]
        data = b"".join(v.to_bytes(width // 8, "big") for v in vals)
        want = list(vals)
        want[3] = (vals[3] + vals[k - 1]) & mask       # two's complement wraps the same way
        want[0] = (vals[0] - 1) & mask
        out = dict(sw.process(0, data + b"xyz"))
        assert sorted(out) == [1, 2]
        for port, frame in out.items():
            w = list(want)
            if port == 2:
                w[1] = 7
            assert frame == b"".join(v.to_bytes(width // 8, "big") for v in w) + b"xyz"
