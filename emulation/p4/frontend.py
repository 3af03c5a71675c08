"""The P4_16 front end's entry points: source text or file -> syntax tree.

``parse_source`` runs preprocessing, parsing and AST construction; ``parse_file`` reads a
file first (it must be UTF-8 text).  Type checking and code generation need an
architecture: the v1model target's loader (:mod:`emulation.v1model.load`) hands the tree to
:class:`~emulation.p4.compiler.core.Compiler` with its own :class:`ArchHooks`.  This
package imports nothing else of the project.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence

from lark.exceptions import VisitError

from .builder import Builder
from .errors import Loc, P4Error
from .lexer import parse
from .nodes import Program
from .preprocess import preprocess


def parse_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                 defines: Optional[dict] = None) -> Program:
    return parse_expanded(*preprocess(text, filename, include_dirs, defines), filename)


def parse_expanded(expanded: str, linemap: Any, filename: str = "<string>") -> Program:
    """The syntax tree of already preprocessed text (:func:`~emulation.p4.preprocess.preprocess`)."""
    tree, src = parse(expanded, filename, linemap)
    try:
        return Builder(src).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, P4Error):
            raise e.orig_exc from None
        raise


def read_source(path: Any) -> str:
    """The text of a P4 source file; ``OSError`` if it cannot be read, :class:`P4Error` if
    it is not UTF-8 (``file:line:col`` of the first bad byte)."""
    path = os.fspath(path)
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise P4Error(f"not a P4 source file: invalid UTF-8 byte {raw[e.start]:#04x}",
                      Loc(path, line, col)) from None


def parse_file(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None) -> Program:
    path = os.fspath(path)
    return parse_source(read_source(path), path, include_dirs, defines)


def require_file(path: Any) -> str:
    """``path`` as a string; :class:`P4Error` (not ``OSError``) when there is no such file."""
    path = os.fspath(path)
    if not Path(path).is_file():
        raise P4Error(f"no such file: {path}", Loc(path, 0, 0))
    return path
