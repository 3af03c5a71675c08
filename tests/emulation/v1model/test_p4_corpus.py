"""The P4 corpus: every ``tests/p4/NAME.p4`` with a sibling ``NAME.stf`` (and the
programs in ``p4src/``) must pass its STF test on the embedded v1model target.

The STF files are written against BMv2 ``simple_switch`` semantics (see
``/work/shared/design/v1model-semantics.md`` and the comment at the top of each program);
their expected packets were computed independently of the target (Python/scapy).

A few things STF cannot observe (counter values, register contents, that a packet is
dropped rather than sent to a port the test does not name, digests, log messages) are
checked below through the switch's control-plane API.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testsupport.p4paths import P4_TESTS as P4_DIR
from testsupport.p4paths import REPO as ROOT

from emulation.stf.runner import run_stf, run_stf_text
from emulation.v1model.load import load_switch
from host_agent.match import Exact

CORPUS = sorted(p for p in P4_DIR.glob("*.p4") if p.with_suffix(".stf").exists())
P4SRC = sorted(p for p in (ROOT / "p4src").glob("*.p4") if p.with_suffix(".stf").exists())

# Differences between the embedded target and BMv2 that are known and reported, by
# program name.  They are expected failures (not skips): once the target is fixed the
# test shows XPASS and the entry should be removed.
KNOWN_TARGET_BUGS: dict[str, str] = {}


def _params(progs):
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(reason=KNOWN_TARGET_BUGS[p.stem], strict=False)]
                         if p.stem in KNOWN_TARGET_BUGS else []) for p in progs]


def _switch(path: Path, **kw):
    return load_switch(str(path), **kw)


def _run(prog: Path):
    return run_stf(str(prog), str(prog.with_suffix(".stf")))


def test_corpus_is_complete():
    # guards against files being lost or renamed: the corpus covers ~30 programs
    assert len(CORPUS) >= 25, [p.name for p in CORPUS]
    for p in CORPUS:
        text = p.read_text()
        assert "#include <core.p4>" in text and "#include <v1model.p4>" in text, p.name
        assert text.rstrip().endswith("main;"), p.name
        stf = p.with_suffix(".stf").read_text()
        assert "packet " in stf, p.name


@pytest.mark.parametrize("prog", _params(CORPUS))
def test_stf(prog: Path):
    res = _run(prog)
    assert res.ok, f"{prog.name}:\n" + "\n".join(res.messages)


@pytest.mark.parametrize("prog", _params(P4SRC))
def test_p4src_stf(prog: Path):
    res = _run(prog)
    assert res.ok, f"{prog.name}:\n" + "\n".join(res.messages)


def test_runner_detects_a_wrong_expectation():
    """A one-nibble change in an expected packet must make the test fail
    (protects the corpus against a runner that passes everything)."""
    prog = P4_DIR / "arith_bit.p4"
    lines = prog.with_suffix(".stf").read_text().splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith("expect "))
    head, data = lines[i].rsplit(" ", 2)[0], lines[i].split()[2]
    flipped = data[:-1] + ("0" if data[-1] != "0" else "1")
    lines[i] = f"{head} {flipped} $"
    res = run_stf_text(_switch(prog), "\n".join(lines) + "\n", "mutated.stf")
    assert not res.ok
    good = run_stf_text(_switch(prog), prog.with_suffix(".stf").read_text(), "arith_bit.stf")
    assert good.ok, "\n".join(good.messages)


# ---------------------------------------------------------------- API-level checks
def _eth(etype: int = 0x1234, dst: int = 2, src: int = 1) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big")


def test_counters_values():
    sw = _switch(P4_DIR / "counters.p4")
    h1 = sw.table_add("fwd_table", "fwd", {"hdr.ethernet.etherType": Exact(0x1234)}, args=(2,))
    h2 = sw.table_add("fwd_table", "fwd_counted", {"hdr.ethernet.etherType": Exact(0x0800)}, args=(3,))
    outs = []
    for idx in (0, 3, 7, 9):                          # 20-byte packets
        outs += sw.process(0, _eth() + bytes([idx]) + bytes(5))
    outs += sw.process(0, _eth(0x0800) + bytes(6))    # 20 bytes
    outs += sw.process(0, _eth(0x86DD) + bytes(2))    # 16 bytes, table miss
    assert [p for p, _ in outs] == [2, 2, 2, 2, 3, 1]
    # direct counter: every hit counts, whether or not the action calls count()
    assert tuple(sw.direct_counter_read("fwd_table", h1)) == (4, 80)
    assert tuple(sw.direct_counter_read("fwd_table", h2)) == (1, 20)
    # indexed counter: index 9 is out of range (size 8) and counts nothing
    for i in range(8):
        want = (1, 20) if i in (0, 3, 7) else (0, 0)
        assert tuple(sw.counter_read("idx_counter", i)) == want, i
    # size 4: indices 7 and 9 out of range
    assert [sw.counter_read("small_counter", i)[0] for i in range(4)] == [1, 0, 0, 1]
    # byte counts use the received length, even in egress after the packet grew (idx 3)
    assert sw.counter_read("egress_bytes", 1)[1] == 5 * 20 + 16
    assert sw.counter_read("egress_bytes", 0)[1] == 0


def test_registers_values():
    prog = P4_DIR / "registers.p4"
    sw = _switch(prog)
    res = run_stf_text(sw, prog.with_suffix(".stf").read_text(), "registers.stf")
    assert res.ok, "\n".join(res.messages)
    assert sw.register_read("acc", 2) == 15
    assert sw.register_read("acc", 15) == 1          # 0xFFFFFFFF + 2 wraps
    assert sw.register_read("acc", 3) == 0x101       # register_write 256, then +1
    assert sw.register_read("small", 1) == 3
    assert sw.register_read("small", 3) == 1
    assert [sw.register_read("acc", i) for i in (0, 1, 4, 14)] == [0, 0, 0, 0]


def test_tutorial_style_externs_values():
    sw = _switch(P4_DIR / "externs_tutorial_style.p4")
    for idx, add in [(1, 5), (1, 7), (2, 1)]:
        sw.process(0, _eth() + idx.to_bytes(4, "big") + add.to_bytes(4, "big") + bytes(4))
    assert sw.register_read("totals", 1) == 12
    assert sw.register_read("totals", 2) == 1
    assert sw.counter_read("pkts", 1)[0] == 2


def test_drops_emit_nothing():
    sw = _switch(P4_DIR / "drop_ports.p4")
    for cmd in (1, 2, 4):
        assert sw.process(1, _eth() + bytes([cmd, 0xFF]) + b"\x99") == [], cmd
    assert [p for p, _ in sw.process(1, _eth() + bytes([3, 0xFF]))] == [3]
    mc = _switch(P4_DIR / "multicast.p4")
    mc.mc_group_create(1)
    mc.mc_node_associate(1, mc.mc_node_create(10, [2, 3]))
    pkt = lambda grp, drop=0: _eth() + bytes([grp, drop, 0, 0, 0, 0])  # noqa: E731
    assert sorted(p for p, _ in mc.process(0, pkt(1))) == [2, 3]
    assert mc.process(0, pkt(1, drop=1)) == []       # mark_to_drop clears mcast_grp
    assert mc.process(0, pkt(7)) == []               # unknown group: no copies
    mc.mc_group_create(3)
    mc.mc_node_associate(3, mc.mc_node_create(50, [3, 7]))
    assert [p for p, _ in mc.process(0, pkt(3))] == [3]   # egress drops the copy for port 7
    router = _switch(ROOT / "p4src" / "basic_router.p4")
    frame = bytes.fromhex("0000000001000000000000AA080045000024002A00004011649E0A0001010B000001"
                          "03E807D0001020C47061796C6F616421")
    assert router.process(0, frame) == []            # no route: default action drop()


def test_digest_and_log():
    logs: list[str] = []
    sw = _switch(P4_DIR / "misc_externs.p4", log=logs.append)
    before = len(sw.digests)
    for v in (1, 0x42):
        out = sw.process(3, _eth(src=0x0A0B0C0D0E0F) + bytes([v, 0, 0, 0, 0]))
        assert [p for p, _ in out] == [2]
    sw.process(3, _eth(0x0800))                      # no x header: no digest
    assert len(sw.digests) == before + 2
    last = sw.digests[-1]
    flat = repr(last)
    assert str(0x42) in flat or "0x42" in flat.lower() or "66" in flat, last
    text = "\n".join(logs)
    assert "plain message" in text
    assert "ingress_port=3" in text


def test_bench_script_smoke(tmp_path):
    """scripts/bench_target.py runs end to end on a few packets; it first checks that the
    target and its hand-written baseline produce the same frames (no timing asserted)."""
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_target.py"), "--packets", "300",
                        "--warmup", "20", "--repeat", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, f"exit {r.returncode}\nstderr:\n{r.stderr[-3000:]}\nstdout:\n{r.stdout[-3000:]}"
    data = json.loads(out.read_text())
    for name in ("basic_router", "bench_reg64"):
        fig = data["programs"][name]
        assert fig["target_pps"] > 0 and fig["baseline_pps"] > 0
        assert fig["bmv2_reference_pps"] == {"basic_router": 15000, "bench_reg64": 2000}[name]
    assert "target/BMv2" in r.stdout and "target/baseline" in r.stdout
