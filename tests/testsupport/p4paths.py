"""Where the P4 programs used by the front-end, v1model and STF tests live."""
from __future__ import annotations

from testsupport.paths import P4SRC, REPO, TESTS

__all__ = ["REPO", "P4SRC", "P4_TESTS", "P4_ERRORS", "P4_COMPAT"]

P4_TESTS = TESTS / "p4"                      # programs with STF tests (the corpus)
P4_ERRORS = P4_TESTS / "errors"              # malformed programs, first line '// expect: ...'
P4_COMPAT = P4_TESTS / "compat"              # BMv2-compatibility programs with STF tests
