"""Generate the SA-ATP switch program (``p4src/saatp.p4``) for K lanes.

    python -m host_agent.protocol.p4gen -k 256 --slots 2048 -o /tmp/saatp256.p4
    python scripts/gen_saatp_p4.py            # K=256 -> p4src/saatp.p4 (the committed file)

The ``header sa_t``, the payload header, the packet-type and flag constants and the width of
every worker set (one bit per worker, as wide as the header's ``bitmap``) come from the
field table in :mod:`.layout`, the counters and drop reasons from :mod:`.switch_counters`;
the rest of the program is :data:`.saatp_p4_template.TEMPLATE`.
The output stays within p4c's BMv2 back-end limits (headers of whole bytes, no non-constant
shift amount wider than 8 bits, no ``priority=`` in const entries, no stack ``last``/``next``
outside a parser).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Sequence

from ..constants import DEFAULT_K, SWITCH_SLOTS
from .framing import UDP_LEN
from .layout import (BITMAP_BITS, FIELD, FLAG_NAMES, HDR_LEN, HOST_ONLY_TYPES,
                     LANE_LEN, MAX_LANES, PAYLOAD_LANE, SA_HEADER, SA_PORT, SWITCH_WID,
                     TYPE_NAMES, VERSION, HeaderField)
from .saatp_p4_template import TEMPLATE
from .switch_counters import DROP_COUNTER_SIZE, DROP_REASONS, EVENT_COUNTERS

DEFAULT_SLOTS = SWITCH_SLOTS
DEFAULT_JOBS = FIELD["job"].mask + 1          # every job id
MAX_SLOTS = 1 << 20


def p4_field(f: HeaderField, comment: bool = True) -> str:
    """One header field as P4; the switch treats every field as unsigned bits."""
    decl = f"    {f'bit<{f.bits}>':<7} {f.name};"
    return f"{decl:<24}/* {f.doc} */" if comment else decl


def p4_header(type_name: str, fields: Sequence[HeaderField], comment: str) -> str:
    bits = sum(f.bits for f in fields)
    if bits % 8:
        raise ValueError(f"header {type_name} has {bits} bits: BMv2 takes whole bytes only")
    body = "\n".join(p4_field(f) for f in fields)
    return f"/* {comment} */\nheader {type_name} {{\n{body}\n}}"


def sa_header() -> str:
    return p4_header("sa_t", SA_HEADER,
                     f"the SA-ATP header, {HDR_LEN} bytes (§3), from host_agent/protocol/layout.py")


def payload_header(k: int) -> str:
    lanes = [HeaderField(f"{PAYLOAD_LANE.name}{i}", PAYLOAD_LANE.bits, PAYLOAD_LANE.kind, 0,
                         PAYLOAD_LANE.doc) for i in range(k)]
    body = "\n".join(p4_field(f, comment=False) for f in lanes)
    return (f"/* K lanes: {PAYLOAD_LANE.doc} */\n"
            f"header payload_t {{\n{body}\n}}")


def type_consts() -> str:
    w = FIELD["type"].bits
    return "\n".join(f"const bit<{w}> T_{name:<7} = {value};"
                     for value, name in sorted(TYPE_NAMES.items())
                     if value not in HOST_ONLY_TYPES)


def flag_consts() -> str:
    w = FIELD["flags"].bits
    return "\n".join(f"const bit<{w}> F_{name:<8} = {bit:#04x};"
                     for bit, name in sorted(FLAG_NAMES.items()))


def drop_consts() -> str:
    return "\n".join(f"const bit<32> DROP_{name.upper():<7} = {i};"
                     for i, name in enumerate(DROP_REASONS))


def event_counters() -> str:
    return "\n".join(f"    counter(@NJOBS@, CounterType.packets) c_{name};"
                     for name in EVENT_COUNTERS)


def _lanes(k: int, ind: str = " " * 8) -> dict[str, str]:
    """The per-lane parts of the program: registers and the straight-line lane code."""
    v = [f"hdr.payload.{PAYLOAD_LANE.name}{i}" for i in range(k)]
    add = []
    for i in range(k):
        # saturating int32 add: o = 1 on overflow, then clip to the limit of a's sign
        add.append(
            f"{ind}/* lane {i} */\n"
            f"{ind}s_val_{i}.read(a, meta.g);\n"
            f"{ind}s = a + {v[i]};\n"
            f"{ind}o = ((a ^ s) & ({v[i]} ^ s)) >> 31;\n"
            f"{ind}s = (s & ~(32w0 - o)) | ((32w0x7FFFFFFF + (a >> 31)) & (32w0 - o));\n"
            f"{ind}s_val_{i}.write(meta.g, s);\n"
            f"{ind}{v[i]} = s;\n"
            f"{ind}meta.ovf = meta.ovf | o;")
    return {
        "@VAL_REGISTERS@": "\n".join(f"    register<bit<32>>(@SLOTS@) s_val_{i};"
                                     for i in range(k)),
        "@OPEN_LANES@": "\n".join(f"{ind}s_val_{i}.write(meta.g, {v[i]});" for i in range(k)),
        "@LOAD_LANES@": "\n".join(f"{ind}s_val_{i}.read({v[i]}, meta.g);" for i in range(k)),
        "@ADD_LANES@": "\n".join(add),
    }


def generate(k: int = DEFAULT_K, slots: int = DEFAULT_SLOTS, njobs: int = DEFAULT_JOBS) -> str:
    """The switch program for ``k`` lanes (a power of two up to ``MAX_LANES``)."""
    if k < 1 or k & (k - 1) or k > MAX_LANES:
        raise ValueError(f"K must be a power of two in 1..{MAX_LANES} (K > 256 needs frames "
                         f"over 1500 bytes), got {k}")
    if slots < 2 or slots > MAX_SLOTS:
        raise ValueError(f"slots out of range: {slots}")
    if njobs < 1 or njobs > FIELD["job"].mask + 1:
        raise ValueError(f"jobs out of range: {njobs}")
    if FIELD["strag"].bits != BITMAP_BITS:
        raise ValueError("strag and bitmap are both worker sets: give them one width")
    if PAYLOAD_LANE.bits != 32:
        raise ValueError("the lane code and its meta.ovf scratch are written for 32-bit lanes")
    subst = {
        "@SA_HEADER@": sa_header(), "@PAYLOAD_HEADER@": payload_header(k),
        "@TYPE_CONSTS@": type_consts(), "@FLAG_CONSTS@": flag_consts(),
        "@DROP_CONSTS@": drop_consts(), "@EVENT_COUNTERS@": event_counters(),
        "@DROP_COUNTER_SIZE@": str(DROP_COUNTER_SIZE),
        **_lanes(k),
        "@K@": str(k), "@KLOG2@": str(k.bit_length() - 1), "@SLOTS@": str(slots),
        "@NJOBS@": str(njobs), "@PAYLOAD_BYTES@": str(LANE_LEN * k),
        "@SA_PORT@": str(SA_PORT), "@VERSION@": str(VERSION),
        "@VERSION_BITS@": str(FIELD["version"].bits), "@UDP_SA_LEN@": str(UDP_LEN + HDR_LEN),
        "@WID_SWITCH@": f"{SWITCH_WID:#04X}".replace("0X", "0x"), "@WSET@": str(BITMAP_BITS),
    }
    out = TEMPLATE
    for key, val in subst.items():     # in order: some parts contain @SLOTS@/@NJOBS@
        out = out.replace(key, val)
    hole = re.search(r"@[A-Z0-9_]+@", out)
    if hole:
        raise AssertionError(f"{hole.group()} left unfilled in the switch program template")
    return out.lstrip("\n")


def main(argv: list[str] | None = None, default_output: str | None = None) -> int:
    """Command line: write the program to ``-o`` (default ``default_output``, else stdout)."""
    ap = argparse.ArgumentParser(prog="gen_saatp_p4",
                                 description="Generate the SA-ATP switch program for K lanes.")
    ap.add_argument("-k", type=int, default=DEFAULT_K,
                    help=f"element lanes per packet (power of two, at most {MAX_LANES})")
    ap.add_argument("--slots", type=int, default=DEFAULT_SLOTS, help="aggregation slots, all jobs")
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="job ids")
    ap.add_argument("-o", "--output", default=default_output,
                    help="output file (default: %(default)s; none = standard output)")
    a = ap.parse_args(argv)
    try:
        text = generate(a.k, a.slots, a.jobs)
    except ValueError as e:
        print(f"gen_saatp_p4: {e}", file=sys.stderr)
        return 2
    if a.output is None or a.output == "-":
        sys.stdout.write(text)
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    with open(a.output, "w") as f:
        f.write(text)
    print(f"wrote {a.output} (K={a.k}, {a.slots} slots, {a.jobs} jobs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
