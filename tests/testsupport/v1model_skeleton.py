"""A small v1model program with a place for the ingress control's body, for front-end tests
that compile a few lines of P4: a header ``h`` (two bytes, ``a`` and ``b``) extracted by the
parser and emitted by the deparser, the other controls empty."""

INCLUDES = """
#include <core.p4>
#include <v1model.p4>
"""

# BODY: the body of control I (ingress): its locals and its apply block
SKELETON = INCLUDES + """header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    BODY
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


def v1model_program(body: str, top: str | None = None) -> str:
    """:data:`SKELETON` with ``body`` as the ingress control's body; ``top`` (declarations),
    when given, on a line of its own after the includes."""
    src = SKELETON if top is None else INCLUDES + top + "\n" + SKELETON[len(INCLUDES):]
    return src.replace("BODY", body)
