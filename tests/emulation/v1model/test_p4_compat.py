"""BMv2-compatibility regressions: every ``tests/p4/compat/NAME.p4`` with a sibling
``NAME.stf`` must pass its STF test on the embedded v1model target.

Each program is a small, self-written reproducer of one BMv2 (``simple_switch`` built from
p4c) behaviour that a third-party v1model program relies on and that the target once got
wrong, found by running p4c's ``testdata/p4_16_samples/*-bmv2`` STF tests (the comment at
the top of each program names the behaviour).  Examples: ``exit`` inside an action still
copies out ``inout`` arguments; the lvalue of an assignment is evaluated before its
right-hand side; an out-of-range run-time header-stack index in a control is ignored;
``@priority`` on const entries (smallest wins, an un-annotated entry gets its position);
an odd number of hex digits on an STF ``packet`` line.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from testsupport.p4paths import P4_COMPAT as COMPAT_DIR

from emulation.stf.runner import main, run_stf


CASES = sorted(p for p in COMPAT_DIR.glob("*.p4") if p.with_suffix(".stf").exists())


def test_compat_corpus_present():
    # guards against the directory being lost or emptied
    assert len(CASES) >= 10, [p.name for p in CASES]
    for p in CASES:
        text = p.read_text()
        assert text.lstrip().startswith("#include"), p.name
        assert "//" in text, f"{p.name}: say which BMv2 behaviour the program checks"
        assert "expect" in p.with_suffix(".stf").read_text(), p.name


@pytest.mark.parametrize("prog", CASES, ids=[p.stem for p in CASES])
def test_compat_stf(prog: Path):
    res = run_stf(str(prog), str(prog.with_suffix(".stf")))
    assert res.ok, "\n".join(res.messages)
    # every expected packet was compared, none silently skipped
    assert res.counts.get("expects", 0) >= 1, res.counts


def test_runner_exit_code_on_mismatch(tmp_path: Path):
    """A wrong expectation on one of these programs must fail (exit 1), not pass."""
    prog = COMPAT_DIR / "exit_copy_out.p4"
    bad = tmp_path / "bad.stf"
    bad.write_text("packet 0 00 00\nexpect 0 00 00\n")   # BMv2 gives 02 00
    assert main([str(prog), str(bad)]) == 1
    assert main([str(prog), str(prog.with_suffix(".stf"))]) == 0
