"""The P4_16 front end's entry points: source text or file -> checked program.

``parse_source`` runs preprocessing, parsing and AST construction; ``load_program``
also type-checks and lowers the program for the v1model architecture (the only
architecture the embedded target has), which is what ``saatp p4 check`` runs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence

from .ast import Builder, Program
from .errors import Loc, P4Error
from .lexer import parse
from .preprocess import preprocess


def parse_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                 defines: Optional[dict] = None) -> Program:
    expanded, linemap = preprocess(text, filename, include_dirs, defines)
    tree, src = parse(expanded, filename, linemap)
    from lark.exceptions import VisitError
    try:
        return Builder(src).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, P4Error):
            raise e.orig_exc from None
        raise


def load_program(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None):
    """Check and compile a program file; raises :class:`P4Error` (``file:line:col: ...``)."""
    from emulation.v1model.arch import compile_file
    path = os.fspath(path)
    if not Path(path).is_file():
        raise P4Error(f"no such file: {path}", Loc(path, 0, 0))
    return compile_file(path, include_dirs, defines)
