"""Malformed P4 programs must be refused with a positioned, readable error.

Each ``tests/p4/errors/*.p4`` starts with ``// expect: LINE:COL: SUBSTRING``:

* ``LINE:COL`` is where the error must be reported (1-based, in the file itself);
  ``LINE:*`` accepts any column of that line, ``*`` any position.
* ``SUBSTRING`` must occur in the message (case-insensitive); ``a | b`` means either.

The front end (``emulation.v1model.load.load_program``) must raise
``emulation.p4.errors.P4Error`` whose ``str`` is ``file:line:col: message``, and
``saatp p4 check FILE`` must exit with status 1 and print that text.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from testsupport.p4paths import P4_ERRORS as ERR_DIR
from testsupport.p4paths import P4_TESTS
from testsupport.p4paths import REPO as ROOT

from emulation.p4.errors import P4Error
from emulation.v1model.load import load_program

CASES = sorted(ERR_DIR.glob("*.p4"))

# Cases where the front end is known (and reported) to differ from p4c: expected failures,
# not skips; once fixed they show XPASS and the entry should be removed.
KNOWN_GAPS: dict[str, str] = {}


def _params(paths):
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(reason=KNOWN_GAPS[p.stem], strict=False)]
                         if p.stem in KNOWN_GAPS else []) for p in paths]


_EXPECT = re.compile(r"^//\s*expect:\s*(\*|(\d+):(\d+|\*)):\s*(.+?)\s*$")


def _expectation(path: Path) -> tuple[int | None, int | None, list[str]]:
    first = path.read_text().splitlines()[0]
    m = _EXPECT.match(first)
    assert m, f"{path.name}: first line must be '// expect: LINE:COL: SUBSTRING', got {first!r}"
    line = int(m.group(2)) if m.group(2) else None
    col = int(m.group(3)) if m.group(3) and m.group(3) != "*" else None
    subs = [s.strip().lower() for s in m.group(4).split("|") if s.strip()]
    return line, col, subs


def _check_text(path: Path, text: str, line, col, subs) -> None:
    """``text`` is ``file:line:col: message``; the file part may be relative."""
    m = re.search(r":(\d+):(\d+): (.*)", text, re.S)
    assert m, f"{path.name}: error text is not 'file:line:col: message': {text!r}"
    got_line, got_col, msg = int(m.group(1)), int(m.group(2)), m.group(3)
    assert path.name in text[:m.start()], f"{path.name}: error names another file: {text!r}"
    if line is not None:
        assert got_line == line, f"{path.name}: reported at line {got_line}, expected {line}: {text}"
    if col is not None:
        assert got_col == col, f"{path.name}: reported at column {got_col}, expected {col}: {text}"
    assert any(s in msg.lower() for s in subs), f"{path.name}: message lacks {subs!r}: {text}"


def test_error_corpus_is_well_formed():
    assert len(CASES) >= 15
    for p in CASES:
        _expectation(p)


@pytest.mark.parametrize("path", _params(CASES))
def test_frontend_refuses(path: Path):
    line, col, subs = _expectation(path)
    with pytest.raises(P4Error) as ei:
        load_program(str(path))
    _check_text(path, str(ei.value), line, col, subs)


def _cli() -> list[str]:
    exe = ROOT / ".venv" / "bin" / "saatp"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("saatp")
    if found:
        return [found]
    return [sys.executable, "-m", "emulation.cli"]


@pytest.mark.parametrize("path", _params(CASES[:4] + [p for p in CASES if p.stem in (
    "varbit_extract_without_size", "unknown_state", "type_mismatch_add", "missing_include")]))
def test_cli_check_exits_1(path: Path):
    line, col, subs = _expectation(path)
    r = subprocess.run(_cli() + ["p4", "check", str(path)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 1, f"exit {r.returncode}\nstdout:{r.stdout}\nstderr:{r.stderr}"
    out = (r.stdout + r.stderr).strip()
    err_line = next((l for l in out.splitlines() if path.name in l and re.search(r":\d+:\d+: ", l)), None)
    assert err_line, f"no 'file:line:col: message' line for {path.name} in:\n{out}"
    _check_text(path, err_line, line, col, subs)


def test_good_programs_are_accepted():
    """The corpus programs themselves must load without error (no false positives)."""
    for p in sorted(P4_TESTS.glob("*.p4"))[:5]:
        load_program(str(p))
