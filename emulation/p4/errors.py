"""Errors of the P4 front end: every one carries a source position.

``str(P4Error)`` is ``file:line:col: message`` (1-based line and column, as compilers
print them), so the command line and the tests show the same text.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOWHERE = Loc("<unknown>", 0, 0)


class P4Error(Exception):
    """A program the front end refuses (syntax, typing, an unsupported construct)."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc or NOWHERE

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}"


class P4Unsupported(P4Error):
    """A construct the embedded target does not implement (named in the message)."""


class P4NotRunnable(P4Error):
    """The program passed every check of the front end, but it is not a program for the
    architecture: it has no ``main``, or ``main`` is not the architecture's package (p4c's
    ``p4test`` accepts such programs; its BMv2 back end does not).  ``saatp p4 check`` reports
    it as a warning and succeeds; loading the program on a target refuses it."""
