"""csum16 over field lists, as the generated code computes it (a sum of shifted fields modulo
0xFFFF, no bytes object), against RFC 1071 over the concatenated bytes (hashes.csum16 of
hashes.concat_fields), on random header layouts: odd byte counts, padding to a byte,
signed fields, fields wider than 16 bits, all-zero lists."""
from __future__ import annotations

import random

import pytest

from emulation.v1model.hashes import CSUM16_INT_CODE, concat_fields, csum16, csum16_int
from emulation.v1model.load import switch_from_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t {{ {fields} bit<16> ck; bit<8> err; }}
struct headers {{ h_t h; }}
struct metadata {{ }}
parser P(packet_in p, out headers hdr, inout metadata m, inout standard_metadata_t sm) {{
    state start {{ p.extract(hdr.h); transition accept; }} }}
control VC(inout headers hdr, inout metadata m) {{
    apply {{ verify_checksum(true, {{ {names} }}, hdr.h.ck, HashAlgorithm.csum16); }} }}
control I(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {{
    apply {{ hdr.h.err = (bit<8>)sm.checksum_error; sm.egress_spec = 1; }} }}
control E(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers hdr, inout metadata m) {{
    apply {{ update_checksum(hdr.h.err == 0, {{ {names} }}, hdr.h.ck, HashAlgorithm.csum16); }} }}
control D(packet_out p, in headers hdr) {{ apply {{ p.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _layout(rng: random.Random) -> list[tuple[int, bool]]:
    """Field widths and signedness, padded so the header is whole bytes (p4c requires it)."""
    fields = [(rng.choice([1, 3, 4, 7, 8, 9, 13, 16, 17, 24, 32, 33, 48, 64]), rng.random() < 0.2)
              for _ in range(rng.randint(1, 9))]
    total = sum(w for w, _ in fields)
    if total % 8:
        fields.append((8 - total % 8, False))
    return [(w, s and w > 1) for w, s in fields]


def test_csum16_int_matches_bytes():
    rng = random.Random(11)
    for n in range(41):
        for _ in range(20):
            data = bytes(rng.randrange(256) for _ in range(n))
            if rng.random() < 0.2:
                data = b"\0" * n
            padded = data + (b"\0" if n % 2 else b"")
            assert csum16_int(int.from_bytes(padded, "big")) == csum16(data)


def test_generated_csum16_expression_is_csum16_int():
    """The expression the generated code uses in place of a call of csum16_int."""
    code = eval(f"lambda n: {CSUM16_INT_CODE.format(n='n')}")  # noqa: S307 -- our own constant
    rng = random.Random(5)
    for n in [0, 1, 0xFFFF, 0x1FFFE, 0xFFFF * 7, 2 ** 160 - 1] + [rng.randrange(2 ** rng.randrange(1, 200)) for _ in range(2000)]:
        assert code(n) == csum16_int(n), n


@pytest.mark.parametrize("seed", range(12))
def test_generated_csum16_matches_rfc1071(seed):
    rng = random.Random(seed)
    layout = _layout(rng)
    decl = " ".join(f"{'int' if s else 'bit'}<{w}> f{i};" for i, (w, s) in enumerate(layout))
    names = ", ".join(f"hdr.h.f{i}" for i in range(len(layout)))
    sw = switch_from_source(PROGRAM.format(fields=decl, names=names))
    nbytes = sum(w for w, _ in layout) // 8
    for trial in range(25):
        values = [0 if trial == 0 else rng.getrandbits(w) for w, _ in layout]   # raw bits
        raw = 0
        for (w, _), v in zip(layout, values):
            raw = (raw << w) | v
        expected = csum16(concat_fields([(v, w) for (w, _), v in zip(layout, values)]))
        body = raw.to_bytes(nbytes, "big")
        good = rng.random() < 0.5
        ck = expected if good else (expected + 1 + rng.randrange(0xFFFE)) & 0xFFFF
        (port, out), = sw.process(0, body + ck.to_bytes(2, "big") + b"\0")
        assert port == 1
        assert out[:nbytes] == body
        if good:   # verified: the update recomputes the same checksum; error flag clear
            assert out[nbytes:] == expected.to_bytes(2, "big") + b"\0"
        else:      # wrong checksum: flagged, and the update (guarded by err == 0) leaves it alone
            assert out[nbytes:] == ck.to_bytes(2, "big") + b"\x01"
