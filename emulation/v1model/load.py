"""Load a P4 program for the v1model target: file or text -> front end -> compiled program.

This is where the architecture-free front end (:mod:`emulation.p4`) meets v1model:
``compile_file``/``compile_source`` parse with the front end and lower with
:func:`~emulation.v1model.arch.compile_ast`, returning an
:class:`~emulation.v1model.arch.Program`.  ``load_switch``/``switch_from_source`` also hand
that program to a fresh :class:`~emulation.v1model.switch.Switch` (which never compiles).
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from emulation.p4.frontend import parse_file, parse_source, require_file

from .arch import Program, compile_ast
from .bmv2_limits import enforce_bmv2_limits
from .switch import Switch


def compile_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                   defines: Optional[dict] = None, *, allow_target_extensions: bool = False) -> Program:
    """Compile P4 text. Constructs p4c's BMv2 back end refuses are errors
    (:mod:`~emulation.v1model.bmv2_limits`) unless ``allow_target_extensions``."""
    return _compile(parse_source(text, filename, include_dirs, defines), filename, allow_target_extensions)


def _compile(ast: Any, filename: str, allow_target_extensions: bool) -> Program:
    program = compile_ast(ast, filename)
    if not allow_target_extensions:
        enforce_bmv2_limits(ast)
    return program


def compile_file(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None, *,
                 allow_target_extensions: bool = False) -> Program:
    """Compile a program file; ``OSError`` if it cannot be read, :class:`P4Error` if it is wrong
    (BMv2 back-end limits included unless ``allow_target_extensions``)."""
    path = os.fspath(path)
    return _compile(parse_file(path, include_dirs, defines), path, allow_target_extensions)


def load_program(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None, *,
                 allow_target_extensions: bool = False) -> Program:
    """What ``saatp p4 check`` runs: like :func:`compile_file`, but a missing file is a
    :class:`P4Error` too (``file:line:col: ...``)."""
    return compile_file(require_file(path), include_dirs, defines, allow_target_extensions=allow_target_extensions)


def load_switch(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None, *,
                allow_target_extensions: bool = False, **switch_kw: Any) -> Switch:
    """A switch running the program in ``path`` (``switch_kw`` go to :class:`Switch`)."""
    return Switch(compile_file(path, include_dirs, defines, allow_target_extensions=allow_target_extensions),
                  **switch_kw)


def switch_from_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                       defines: Optional[dict] = None, *, allow_target_extensions: bool = False,
                       **switch_kw: Any) -> Switch:
    """A switch running the program in ``text``."""
    return Switch(compile_source(text, filename, include_dirs, defines,
                                 allow_target_extensions=allow_target_extensions), **switch_kw)
