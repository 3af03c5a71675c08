"""Where the P4Runtime tests' data live (programs, golden P4Info) and the scripts that the
p4runtime-shell venv runs."""
from __future__ import annotations

from testsupport.paths import P4SRC, REPO, TESTS

__all__ = ["REPO", "P4SRC", "PROGRAMS", "GOLDEN", "SHELL_SCRIPTS"]

PROGRAMS = TESTS / "p4runtime" / "programs"    # P4 programs written for the P4Runtime tests
GOLDEN = TESTS / "p4runtime" / "golden"        # P4Info files p4c wrote (byte-exact references)
SHELL_SCRIPTS = TESTS / "testsupport"          # p4rt_shell_*.py, run with .venv-p4sh's python
