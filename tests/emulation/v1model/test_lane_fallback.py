"""The scalar fallback of a vectorised lane group lives in a function of its own.

Inline, the K unrolled lanes of the out-of-bounds fallback made the action holding the group
carry thousands of locals and closure cells, which CPython copies and clears on every call,
vector path included (at K = 1024 that was most of the switch's time per packet).  These tests
pin the shape of the generated code; ``tests/emulation/p4/test_vectorize.py`` checks that the
fallback still computes what the scalar code does (out-of-bounds indices included).
"""
from __future__ import annotations

import gc
import types

import numpy as np
import pytest

from emulation.v1model.load import load_switch
from host_agent.controller import Controller, JobSpec
from host_agent.switch_program import saatp_program
from host_agent import constants, wire
from host_agent.protocol import codec
from host_agent.protocol.framing import FrameTemplate

# walking every object the collector knows touches deprecated module attributes (torch's
# reduce_op, when torch is loaded by another test): their warnings are not this test's
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _generated_functions(source_tag: str) -> list[types.FunctionType]:
    return [o for o in gc.get_objects() if isinstance(o, types.FunctionType)
            and o.__code__.co_filename.startswith("<p4:") and source_tag in o.__code__.co_filename]


@pytest.mark.parametrize("k", [256])
def test_hot_functions_stay_small(k):
    path = saatp_program(k)
    sw = load_switch(path)
    fns = _generated_functions(path.name.split(".")[0])
    assert fns, "no generated functions found"
    fallbacks = [f for f in fns if f.__name__.startswith("_lanes_scalar")]
    hot = [f for f in fns if not f.__name__.startswith("_lanes_scalar") and not f.__name__.startswith("build")]
    # the lane groups of saatp.p4 (open, add, load) each got a fallback function
    assert len(fallbacks) >= 3, [f.__name__ for f in fallbacks]
    assert any(f.__code__.co_nlocals >= k for f in fallbacks)      # the unrolled lanes are there
    worst = max(hot, key=lambda f: f.__code__.co_nlocals + len(f.__code__.co_freevars))
    size = worst.__code__.co_nlocals + len(worst.__code__.co_freevars)
    assert size < 64, f"{worst.__name__}: {worst.__code__.co_nlocals} locals, {len(worst.__code__.co_freevars)} free"
    del sw


def _data_frame(wid: int, seq: int, pool: int, k: int, values) -> bytes:
    h = codec.Header(version=wire.VERSION, type=wire.DATA, job=0, wid=wid, nworkers=2, helper=0xFF,
                     slot=seq % pool, seq=seq, iter=1, nvalid=k, bitmap=1 << wid,
                     klog2=k.bit_length() - 1, dst=0xFF)
    if (seq // pool) % 2:
        h.flags |= wire.F_SET
    t = FrameTemplate(src_mac=f"02:00:00:00:00:{wid + 1:02x}", dst_mac=constants.SWITCH_MAC,
                      src_ip=f"10.0.0.{wid + 1}", dst_ip=constants.SWITCH_IP)
    return t.frame(codec.pack(h, np.asarray(values, dtype=np.int32)))


def test_fallback_runs_out_of_bounds():
    """A slot index past the registers' size takes the out-of-line scalar code.  BMv2 leaves an
    out-of-bounds read's destination unchanged and ignores the write, so in saatp.p4 such a slot
    never leaves EMPTY: every contribution re-opens it and no result is sent; an in-bounds slot
    of the same job still sums."""
    k, pool = 64, 8
    sw = load_switch(saatp_program(k))
    nslots = Controller(sw).nslots
    # pretend the switch has twice its slots, so that the job's upper slots fall outside
    ctl = Controller(sw, nslots=2 * nslots)
    for port in (1, 2):
        ctl.add_host(port, f"02:00:00:00:00:{port:02x}", f"10.0.0.{port}")
    base = nslots - 4           # slots 0..3 of set 0 are in bounds, 4..7 are not
    ctl.configure_job(JobSpec(job=0, ports={0: 1, 1: 2}, nworkers=2, pool=pool, t_s=10.0, base=base))
    vals = {w: [(w + 1) * (i + 1) for i in range(k)] for w in (0, 1)}
    lane0 = sw.register("SaIngress.s_val_0")
    before = [lane0.get(i) for i in range(nslots)]
    # g = base + 6: out of bounds, the fallback runs (no error, no output, no register touched)
    assert sw.process(1, _data_frame(0, 6, pool, k, vals[0])) == []
    assert sw.process(2, _data_frame(1, 6, pool, k, vals[1])) == []
    assert [lane0.get(i) for i in range(nslots)] == before
    # g = base + 2: in bounds, the vector path sums and multicasts the result
    assert sw.process(1, _data_frame(0, 2, pool, k, vals[0])) == []
    out = sw.process(2, _data_frame(1, 2, pool, k, vals[1]))
    assert sorted(p for p, _ in out) == [1, 2]
    _, res = codec.unpack(out[0][1][14 + 20 + 8:])
    assert res.tolist() == [a + b for a, b in zip(vals[0], vals[1])]
    assert lane0.get(base + 2) == vals[0][0] + vals[1][0]


# --------------------------------------------------------------- liveness and views
def _top_level_program(body: list[str], after: list[str], k: int = 8, size: int = 16) -> str:
    """Lanes at the top level of an action (``body``, ``{k}`` = the lane), then ``after``."""
    t = "bit<32>"
    lanes = "\n".join("        " + s.replace("{k}", str(i)) for i in range(k) for s in body)
    fields = "\n".join(f"    {t} v{i};" for i in range(k))
    regs = "\n".join(f"    register<{t}>({size}) r{i};" for i in range(k))
    rest = "\n".join("        " + s for s in after)
    return f"""
#include <core.p4>
#include <v1model.p4>
header ctl_t {{ bit<32> idx; }}
header pay_t {{
{fields}
}}
header out_t {{ {t} a; {t} b; }}
struct headers_t {{ ctl_t ctl; pay_t pay; out_t res; }}
struct meta_t {{ }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.ctl); pkt.extract(hdr.pay); pkt.extract(hdr.res); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{regs}
    action lanes() {{
        {t} a = 7;
        {t} b = 9;
{lanes}
{rest}
    }}
    apply {{ lanes(); sm.egress_spec = 1; }}
}}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("body, after, handed", [
    # a is read after the group: it must hold lane K-1's value (the register's old cell)
    (["r{k}.read(a, hdr.ctl.idx);", "b = a + hdr.pay.v{k};", "r{k}.write(hdr.ctl.idx, b);",
      "hdr.pay.v{k} = b;"], ["hdr.res.a = a;"], {"a"}),
    # a aliases the field before the field is written: the local keeps the value it read
    (["a = hdr.pay.v{k};", "hdr.pay.v{k} = a + 5;", "r{k}.write(hdr.ctl.idx, a);"],
     ["hdr.res.a = a;", "hdr.res.b = b;"], {"a"}),
    # nothing reads a or b afterwards: both are dead, the packets are still the same
    (["r{k}.read(a, hdr.ctl.idx);", "b = a |+| hdr.pay.v{k};", "r{k}.write(hdr.ctl.idx, b);",
      "hdr.pay.v{k} = b;"], [], set()),
])
def test_top_level_lanes_match_scalar(body, after, handed):
    import random
    from emulation.p4.frontend import parse_source
    from emulation.v1model.arch import compile_ast
    from emulation.v1model.switch import Switch
    src = _top_level_program(body, after)
    ast = parse_source(src, "<top>")
    scalar, vector = compile_ast(ast, "<top>", vectorize=False), compile_ast(ast, "<top>", vectorize=True)
    assert "np." in vector.source                       # the lanes were vectorised
    for name in ("a", "b"):      # only a local read after the group gets lane K-1's value
        lines = [ln for ln in vector.source.splitlines() if "int(_lv_" in ln and f"_v_{name}" in ln]
        assert bool(lines) == (name in handed), (name, lines)
    s1, s2 = Switch(scalar), Switch(vector)
    rnd = random.Random(5)
    for i in range(60):
        idx = rnd.randrange(20)                          # some indices out of bounds (size 16)
        vals = [rnd.randrange(1 << 32) for _ in range(8)]
        frame = (idx.to_bytes(4, "big") + b"".join(v.to_bytes(4, "big") for v in vals) +
                 rnd.randrange(1 << 32).to_bytes(4, "big") + rnd.randrange(1 << 32).to_bytes(4, "big"))
        assert s1.process(1, frame) == s2.process(1, frame), f"packet {i}"
    regs = lambda sw: {n: [sw.register_read(n, j) for j in range(16)]  # noqa: E731
                       for n, r in sw.externs.items() if hasattr(r, "cells")}
    assert regs(s1) == regs(s2)
