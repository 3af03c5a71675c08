"""Vectorised lanes (``emulation/p4/compiler/lanes.py``) against the scalar code.

Hypothesis draws programs of the aggregation shape (K lanes, each reading register ``r_k`` at
one shared index, computing with locals and field ``hdr.pay.v_k``, writing back, maybe OR-ing
into a metadata accumulator), then random packets; the same program compiled with and without
vectorisation must give identical output packets and register contents.  Widths 8/16/32,
bit<W> and int<W>, wrap-around, saturating ops, shifts, out-of-bounds indices (small registers,
indices up to twice the size) and an action applied only when a header flag is set.
The shipped programs (``saatp.p4``, ``bench_reg64.p4``) are checked the same way.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulation.p4.frontend import parse_file, parse_source
from emulation.v1model.arch import compile_ast
from emulation.v1model.switch import Switch

ROOT = Path(__file__).resolve().parents[3]
OPS = ["+", "-", "*", "&", "|", "^", "|+|", "|-|"]


# ------------------------------------------------------------------ program generator
@st.composite
def lane_programs(draw):
    w = draw(st.sampled_from([8, 16, 32]))
    signed = draw(st.booleans())
    k = draw(st.integers(4, 9))
    size = draw(st.integers(1, 40))
    t = f"{'int' if signed else 'bit'}<{w}>"
    maxc = (1 << (w - 1)) - 1 if signed else (1 << w) - 1

    def const():
        return f"{w}{'s' if signed else 'w'}{draw(st.integers(0, maxc))}"

    assigned: list[str] = []
    body: list[str] = []

    def expr(depth):
        leaves = ["hdr.pay.v{k}", "C"] + assigned
        if depth == 0 or draw(st.integers(0, 2)) == 0:
            leaf = draw(st.sampled_from(leaves))
            return const() if leaf == "C" else leaf
        kind = draw(st.sampled_from(["bin", "bin", "bin", "un", "shift"]))
        if kind == "un":
            return f"({draw(st.sampled_from(['~', '-']))}{expr(depth - 1)})"
        if kind == "shift":
            return f"({expr(depth - 1)} {draw(st.sampled_from(['<<', '>>']))} {draw(st.integers(0, w + 2))})"
        return f"({expr(depth - 1)} {draw(st.sampled_from(OPS))} {expr(depth - 1)})"

    if draw(st.booleans()):
        body.append("r{k}.read(a, hdr.ctl.idx);")
        assigned.append("a")
    for _ in range(draw(st.integers(1, 4))):
        target = draw(st.sampled_from(["a", "b", "hdr.pay.v{k}"]))
        body.append(f"{target} = {expr(2)};")
        if target not in assigned and target != "hdr.pay.v{k}":
            assigned.append(target)
    if draw(st.booleans()):
        body.append(f"r{{k}}.write(hdr.ctl.idx, {expr(2)});")
    reduce_op = draw(st.sampled_from([None, "|", "&", "^"]))
    if reduce_op and assigned:
        body.append(f"meta.acc = meta.acc {reduce_op} {assigned[0]};")
    return _lane_program(t, k, size, body, const(), const()), k, w, size, any("{k}" in b for b in body)


def _lane_program(t: str, k: int, size: int, body: list, a0: str, b0: str) -> str:
    """The test program: ``body`` (``{k}`` = the lane) repeated for K lanes in an action of
    ingress that runs when ``hdr.ctl.flag`` is set; locals ``a``, ``b`` start at ``a0``, ``b0``."""
    lanes = "\n".join("            " + s.replace("{k}", str(i)) for i in range(k) for s in body)
    fields = "\n".join(f"    {t} v{i};" for i in range(k))
    regs = "\n".join(f"    register<{t}>({size}) r{i};" for i in range(k))
    return f"""
#include <core.p4>
#include <v1model.p4>
header eth_t {{ bit<48> d; bit<48> s; bit<16> t; }}
header ctl_t {{ bit<32> idx; bit<8> flag; }}
header pay_t {{
{fields}
}}
header out_t {{ {t} acc; {t} a; {t} b; }}
struct headers_t {{ eth_t eth; ctl_t ctl; pay_t pay; out_t res; }}
struct meta_t {{ {t} acc; }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.eth); pkt.extract(hdr.ctl); pkt.extract(hdr.pay); pkt.extract(hdr.res);
                  transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{regs}
    action lanes() {{
        {t} a = {a0};
        {t} b = {b0};
        meta.acc = hdr.res.acc;
        if (hdr.ctl.flag != 0) {{
{lanes}
        }}
        hdr.res.acc = meta.acc;
        hdr.res.a = a;
        hdr.res.b = b;
    }}
    apply {{ lanes(); sm.egress_spec = 1; }}
}}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _switches(ast, filename):
    """The same program compiled scalar and vectorised: (scalar switch, vector switch, vector source)."""
    scalar = compile_ast(ast, filename, vectorize=False)
    vector = compile_ast(ast, filename, vectorize=True)
    assert "import numpy" not in scalar.source
    return Switch(scalar), Switch(vector), vector.source


def _registers(sw: Switch) -> dict:
    return {name: [sw.register_read(name, i) for i in range(reg.size)]
            for name, reg in sw.externs.items() if hasattr(reg, "cells")}


def _same_run(s1: Switch, s2: Switch, frames) -> None:
    for i, (port, frame) in enumerate(frames):
        a, b = s1.process(port, frame), s2.process(port, frame)
        assert [(p, bytes(x)) for p, x in a] == [(p, bytes(x)) for p, x in b], f"packet {i} differs"
    assert _registers(s1) == _registers(s2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lane_programs(), st.randoms(use_true_random=False))
def test_random_lane_programs_match_scalar(prog, rnd):
    src, k, w, size, varies = prog
    s1, s2, vsrc = _switches(parse_source(src, "<lanes>"), "<lanes>")
    # every generated shape whose lanes differ is inside the vectorisable subset
    assert ("import numpy as np" in vsrc) == varies
    if "r0.read" in src or "r0.write" in src:
        assert "X.bank_registers" in vsrc
    nbytes = (k * w) // 8 + 3 * w // 8
    frames = []
    for _ in range(25):
        idx = rnd.randrange(2 * size + 2)
        flag = rnd.choice([0, 1, 1, 1])
        eth = bytes(12) + b"\x88\xb5"
        frames.append((0, eth + idx.to_bytes(4, "big") + bytes([flag]) + rnd.randbytes(nbytes)))
    _same_run(s1, s2, frames)


@st.composite
def select_programs(draw):
    """Lanes of a saturating add written as saatp.p4 writes it: a branchless select
    ``(s & ~(0 - o)) | (y & (0 - o))`` that the lane code turns into ``np.where`` when ``o``
    is 0/1 -- and near misses that must stay as they are (``o`` up to 3, a non-zero minuend,
    signed types), in every operand order."""
    w = draw(st.sampled_from([8, 16, 32]))
    signed = draw(st.booleans())
    t = f"{'int' if signed else 'bit'}<{w}>"
    k = draw(st.integers(4, 6))
    size = draw(st.integers(1, 8))
    sh = draw(st.sampled_from([w - 1, w - 1, w - 2]))
    z = draw(st.sampled_from(["0", "0", "0", "1"]))
    m = f"({w}{'s' if signed else 'w'}{z} - o)"
    y = draw(st.sampled_from([f"({(1 << (w - 1)) - 1} + (a >> {sh}))", "hdr.pay.v{k}", "b"]))
    left = draw(st.sampled_from([f"(s & ~{m})", f"(~{m} & s)"]))
    right = draw(st.sampled_from([f"({y} & {m})", f"({m} & {y})"]))
    sel = f"{left} | {right}" if draw(st.booleans()) else f"{right} | {left}"
    body = ["r{k}.read(a, hdr.ctl.idx);", "s = a + hdr.pay.v{k};",
            f"o = ((a ^ s) & (hdr.pay.v{{k}} ^ s)) >> {sh};", f"s = {sel};",
            "r{k}.write(hdr.ctl.idx, s);", "hdr.pay.v{k} = s;", "meta.acc = meta.acc | o;"]
    src = _lane_program(t, k, size, body, "0", f"{w}{'s' if signed else 'w'}3")
    src = src.replace("        {t} b =".format(t=t), f"        {t} s = 0;\n        {t} o = 0;\n        {t} b =", 1)
    return src, k, w, size, signed, sh == w - 1 and z == "0"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(select_programs(), st.randoms(use_true_random=False))
def test_select_idiom_matches_scalar(prog, rnd):
    src, k, w, size, signed, selector = prog
    s1, s2, vsrc = _switches(parse_source(src, "<select>"), "<select>")
    assert "X.bank_registers" in vsrc
    assert ("np.where(" in vsrc) == (selector and not signed)
    nbytes = (k * w) // 8 + 3 * w // 8
    frames = []
    for _ in range(30):     # extreme values make the adds overflow often
        vals = b"".join(rnd.choice([0, 1, (1 << (w - 1)) - 1, 1 << (w - 1), (1 << w) - 1,
                                    rnd.randrange(1 << w)]).to_bytes(w // 8, "big") for _ in range(k + 3))
        eth = bytes(12) + b"\x88\xb5"
        frames.append((0, eth + rnd.randrange(2 * size + 2).to_bytes(4, "big") + b"\x01" + vals[:nbytes]))
    _same_run(s1, s2, frames)


def test_vectorized_path_is_used_and_correct_bench_reg64():
    ast = parse_file(str(ROOT / "p4src" / "bench_reg64.p4"))
    s1, s2, vsrc = _switches(ast, "bench_reg64.p4")
    assert "_bank" in vsrc
    rnd = random.Random(5)
    eth = (2).to_bytes(6, "big") + (1).to_bytes(6, "big") + b"\x88\xb5"
    frames = []
    for _ in range(300):
        vals = b"".join(rnd.randrange(1 << 32).to_bytes(4, "big") for _ in range(64))
        frames.append((0, eth + rnd.randrange(1 << 32).to_bytes(4, "big") + vals))
    _same_run(s1, s2, frames)
    # the control plane sees the banked registers, and writes through to the data plane
    s2.register_write("MyIngress.agg05", 7, 123)
    assert s2.register_read("MyIngress.agg05", 7) == 123
    assert type(s2.register_read("MyIngress.agg05", 7)) is int


def test_register_bank_rows_back_registers():
    from emulation.v1model.externs import Register, bank_registers
    regs = [Register(f"r{i}", 5, 16) for i in range(3)]
    regs[1].set(2, 9)
    bank = bank_registers(regs)
    assert bank[1, 2] == 9
    bank[2, 4] = 77
    assert regs[2].get(4) == 77
    regs[0].reset()
    regs[0].set(0, 5)
    assert bank[0, 0] == 5
    with pytest.raises(ValueError):
        bank_registers([Register("a", 4, 32), Register("b", 5, 32)])


def test_vectorize_env_switch(monkeypatch):
    ast = parse_file(str(ROOT / "p4src" / "bench_reg64.p4"))
    monkeypatch.setenv("SAATP_P4_VECTORIZE", "0")
    assert "X.bank_registers" not in compile_ast(ast, "bench_reg64.p4").source
    monkeypatch.setenv("SAATP_P4_VECTORIZE", "1")
    assert "X.bank_registers" in compile_ast(ast, "bench_reg64.p4").source


@pytest.mark.parametrize("mode,lim", [("saatp", 1 << 20), ("saatp", 1 << 30), ("switchml", 1 << 29), ("atp", 1 << 20)])
def test_saatp_program_vectorized_matches_scalar(monkeypatch, mode, lim):
    """SA-ATP (and the SwitchML-/ATP-like modes) through p4src/saatp.p4 on the virtual-clock
    harness, with loss, duplication and a straggler: every frame the switch sends (time, port,
    bytes) and its final register contents are the same with and without vectorised lanes;
    large values drive the saturating lanes and the overflow flag."""
    import numpy as np
    from testsupport.int32_sums import rand_qs

    from emulation import harness

    path = harness.DEFAULT_PROGRAM
    ast = parse_file(path)
    runs = []
    for vec in (False, True):
        program = compile_ast(ast, path, vectorize=vec)
        assert ("X.bank_registers" in program.source) == vec
        monkeypatch.setitem(harness._COMPILED, path, program)
        net = harness.Network(path, harness.Impairments(loss=0.02, dup=0.02, seed=3), switch_pps=20000.0)
        kw = {"mode": "atp", "switch_t_s": 0.0, "resend_data": True} if mode == "atp" else {"mode": mode}
        job = harness.add_job(net, 0, 4, pool=8, t_s=0.05, **kw)
        net.trace = []
        rng = np.random.default_rng(7)
        sums = []
        for it in range(2):
            r = job.run_iteration(rand_qs(rng, 4, 64 * 12 - 5, lim), 0, {2: 0.02} if it else None, max_time=30)
            sums.append((r.ok, [s.tolist() for s in r.sums]))
        runs.append(([(t, d, p, bytes(f)) for t, d, p, f in net.trace], _registers(net.sw), sums))
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == runs[1][1]
    assert runs[0][2] == runs[1][2]
    assert runs[1][2][0][0], "the iteration finished"


_READONLY_LANES = """
#include <core.p4>
#include <v1model.p4>
header p_t { bit<16> v0; bit<16> v1; bit<16> v2; bit<16> v3; }
struct headers_t { p_t pay; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.pay); transition accept; } }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply {
   hdr.pay.v0 = hdr.pay.v0 + 1; hdr.pay.v1 = hdr.pay.v1 + 1; hdr.pay.v2 = hdr.pay.v2 + 1; hdr.pay.v3 = hdr.pay.v3 + 1;
   pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("vec", [False, True])
def test_errors_in_lane_groups_are_reported_as_without_vectorisation(vec):
    from emulation.p4.errors import P4Error
    with pytest.raises(P4Error, match="14:4: hdr is read-only"):
        compile_ast(parse_source(_READONLY_LANES, "x"), "x", vectorize=vec)


def test_register_read_copies_are_dropped_only_where_no_one_can_see_the_write():
    from emulation.p4.compiler.lanes import _without_needless_copies as drop
    read = "x = bank[:, i].copy()"
    # read, arithmetic, write back (SA-ATP's add): the copy goes
    assert drop([read, "s = ((x + f) & 255)", "o = ((x ^ s) >> 7)", "bank[:, i] = s"])[0] == "x = bank[:, i]"
    # never written in the group: the view is only read
    assert drop([read, "s = (x + f)"])[0] == "x = bank[:, i]"
    # x itself could outlive the write: an alias, a use after it, a live-out tail, written back itself
    for rest in (["y = x", "bank[:, i] = s"], ["s = (x + f)", "bank[:, i] = s", "t = (x + 1)"],
                 ["s = (x + f)", "bank[:, i] = s", "meta.a = int(x[-1])"], ["bank[:, i] = x"],
                 ["s = (f if n else x)", "bank[:, i] = (s + 1)"]):
        assert drop([read] + rest)[0] == read, rest
    # any write to the bank counts (another index may be the same slot)
    assert drop([read, "bank[:, j] = f", "s = (x + f)"])[0] == read


def test_saatp_add_reads_its_slot_once_and_counts_overflow_once():
    from emulation.v1model.load import compile_file
    src = compile_file(str(ROOT / "p4src" / "saatp.p4")).source.splitlines()
    start = next(i for i, ln in enumerate(src) if "def _a_add_slot" in ln)
    end = next(i for i in range(start + 1, len(src)) if src[i].lstrip().startswith("def "))
    body = "\n".join(src[start:end])
    assert body.count("np.count_nonzero(") == 1, body
    assert ".copy()" not in body, body


def test_lane_constants_are_zero_d_arrays_defined_once():
    """Literal operands of vector operations are 0-d int64 arrays made once per control (numpy
    2 combines an array with a Python int ~270 ns slower), never Python ints in the lane code."""
    import re

    from emulation.v1model.load import compile_file
    src = compile_file(str(ROOT / "p4src" / "saatp.p4")).source
    start = src.index("def _a_add_slot")
    body = src[start:src.index("\n        def ", start + 1)]
    vec = [ln for ln in body.splitlines() if "_lv_" in ln and " = " in ln]
    assert vec and not any(re.search(r"[&^|+\-*] (0x[0-9a-f]+|\d+)\b|>> \d", ln) for ln in vec), vec
    assert "& _lk_ffffffff" in body and ">> _lk_1f" in body
    for name in ("_lk_ffffffff", "_lk_1f"):
        assert src.count(f"{name} = np.array(") == 1
