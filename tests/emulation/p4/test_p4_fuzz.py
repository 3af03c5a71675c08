"""Fuzzing the front end with mutated corpus programs (issue #14, item 2).

Every program under ``tests/p4/`` and ``p4src/`` is cut into tokens; a seeded RNG deletes,
duplicates or swaps tokens, replaces an identifier with another one of the same program or
an integer literal with an edge value (0, widths, 2^48, ...).  Whatever the mutant is, the
front end must either accept it or refuse it with a located error ``file:line:col: message``
in the mutated file: no Python exception may escape, no ``<unknown>`` or line-0 location,
no "internal compiler error".  The count is bounded (``CASES`` per run, fixed seeds) so the
test stays fast; ``SAATP_P4_FUZZ=N`` runs N mutants per seed instead.
"""
from __future__ import annotations

import os
import random
import re

import pytest
from testsupport.p4paths import P4_TESTS, P4SRC

from emulation.p4.errors import P4Error
from emulation.v1model.load import compile_source

CASES = int(os.environ.get("SAATP_P4_FUZZ", "60"))
SEEDS = (1, 2)

_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\s+|[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9a-zA-Z_]*'
                    r'|&&&|\.\.\.|\|\+\||\|-\||\+\+|\.\.|&&|\|\||==|!=|<=|>=|<<|#\w+|.', re.S)
_IDENT = re.compile(r"[A-Za-z_]")
_EDGE_INTS = (0, 1, 2, 7, 8, 9, 16, 31, 32, 33, 64, 65, 128, 255, 256, 511, 65536, 2 ** 48)
_LOCATED = re.compile(r"^(?P<file>[^<\n][^\n]*?):(?P<line>[1-9]\d*):(?P<col>\d+): ")


def _programs() -> list:
    return sorted(P4_TESTS.glob("*.p4")) + sorted(P4SRC.glob("*.p4"))


def mutate(text: str, rng: random.Random, n: int) -> str:
    toks = _TOKEN.findall(text)
    # comments, blanks and preprocessor directives stay: a mutant still includes v1model.p4
    idx = [i for i, t in enumerate(toks) if t.strip() and not t.startswith(("//", "/*", "#"))]
    idents = [t for t in toks if _IDENT.match(t)]
    for _ in range(n):
        i = rng.choice(idx)
        op = rng.randrange(5)
        if op == 0:
            toks[i] = ""
        elif op == 1:
            toks[i] = toks[i] + " " + toks[i]
        elif op == 3 and _IDENT.match(toks[i]):
            toks[i] = rng.choice(idents)
        elif op == 4 and toks[i][0].isdigit():
            toks[i] = str(rng.choice(_EDGE_INTS))
        else:
            j = rng.choice(idx)
            toks[i], toks[j] = toks[j], toks[i]
    return "".join(toks)


def outcome(text: str, filename: str) -> str:
    """'accepted', or the located error text; AssertionError for anything else."""
    try:
        compile_source(text, filename)
        return "accepted"
    except P4Error as e:
        s = str(e)
        m = _LOCATED.match(s)
        assert m, f"error without a location: {s!r}"
        assert "internal compiler error" not in s, s
        return s


@pytest.mark.parametrize("seed", SEEDS)
def test_mutants_are_accepted_or_refused_with_a_location(seed, tmp_path):
    rng = random.Random(seed)
    progs = _programs()
    assert progs, "no corpus programs found"
    refused = 0
    for k in range(CASES):
        src = rng.choice(progs)
        text = mutate(src.read_text(), rng, rng.randint(1, 3))
        name = str(tmp_path / f"mutant{k}_{src.name}")
        try:
            res = outcome(text, name)
        except Exception as e:   # any escape is the failure being tested for
            (tmp_path / f"mutant{k}_{src.name}").write_text(text)
            raise AssertionError(f"mutant {k} of {src.name} (seed {seed}, kept in {name}): "
                                 f"{type(e).__name__}: {e}") from e
        if res != "accepted":
            refused += 1
    # the mutations must mostly break programs, or the test checks nothing
    assert refused >= CASES // 2


def test_mutate_changes_the_program_and_is_deterministic():
    text = (P4_TESTS / "control_flow.p4").read_text()
    a = mutate(text, random.Random(7), 2)
    b = mutate(text, random.Random(7), 2)
    assert a == b and a != text
