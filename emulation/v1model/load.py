"""Load a P4 program for the v1model target: file or text -> front end -> compiled program.

This is where the architecture-free front end (:mod:`emulation.p4`) meets v1model:
``compile_file``/``compile_source`` parse with the front end and lower with
:func:`~emulation.v1model.arch.compile_ast`, returning an
:class:`~emulation.v1model.arch.Program`; a program compiled before comes from the on-disk
cache (:mod:`~emulation.v1model.compile_cache`).  ``load_switch``/``switch_from_source`` also hand
that program to a fresh :class:`~emulation.v1model.switch.Switch` (which never compiles).
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from emulation.p4.frontend import parse_expanded, read_source, require_file

from .arch import Program, compile_ast
from .bmv2_limits import enforce_bmv2_limits
from .compile_cache import cached_compile
from .switch import Switch


def compile_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                   defines: Optional[dict] = None, *, allow_target_extensions: bool = False,
                   trace: bool = False) -> Program:
    """Compile P4 text. Constructs p4c's BMv2 back end refuses are errors
    (:mod:`~emulation.v1model.bmv2_limits`) unless ``allow_target_extensions``.  ``trace``
    generates the calls behind the BMv2-style per-packet log (:mod:`~emulation.v1model.trace`)."""
    def compile_expanded(expanded: str, linemap: Any) -> Program:
        return _compile(parse_expanded(expanded, linemap, filename), filename, allow_target_extensions, trace)

    return cached_compile(text, filename, include_dirs, defines, allow_target_extensions=allow_target_extensions,
                          trace=trace, compile_expanded=compile_expanded)


def _compile(ast: Any, filename: str, allow_target_extensions: bool, trace: bool = False) -> Program:
    program = compile_ast(ast, filename, trace=trace)
    if not allow_target_extensions:
        enforce_bmv2_limits(ast)
    return program


def compile_file(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None, *,
                 allow_target_extensions: bool = False, trace: bool = False) -> Program:
    """Compile a program file; ``OSError`` if it cannot be read, :class:`P4Error` if it is wrong
    (BMv2 back-end limits included unless ``allow_target_extensions``)."""
    path = os.fspath(path)
    return compile_source(read_source(path), path, include_dirs, defines,
                          allow_target_extensions=allow_target_extensions, trace=trace)


def load_program(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None, *,
                 allow_target_extensions: bool = False) -> Program:
    """What ``saatp p4 check`` runs: like :func:`compile_file`, but a missing file is a
    :class:`P4Error` too (``file:line:col: ...``)."""
    return compile_file(require_file(path), include_dirs, defines, allow_target_extensions=allow_target_extensions)


def load_switch(path: Any, include_dirs: Sequence[str] = (), defines: Optional[dict] = None, *,
                allow_target_extensions: bool = False, trace: Optional[bool] = None, **switch_kw: Any) -> Switch:
    """A switch running the program in ``path`` (``switch_kw`` go to :class:`Switch`).  The
    program is compiled with ``trace`` (default: when the switch has a ``log``)."""
    if trace is None:
        trace = switch_kw.get("log") is not None
    return Switch(compile_file(path, include_dirs, defines, allow_target_extensions=allow_target_extensions,
                               trace=trace), **switch_kw)


def switch_from_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                       defines: Optional[dict] = None, *, allow_target_extensions: bool = False,
                       trace: Optional[bool] = None, **switch_kw: Any) -> Switch:
    """A switch running the program in ``text`` (traced, by default, when it has a ``log``)."""
    if trace is None:
        trace = switch_kw.get("log") is not None
    return Switch(compile_source(text, filename, include_dirs, defines,
                                 allow_target_extensions=allow_target_extensions, trace=trace), **switch_kw)
