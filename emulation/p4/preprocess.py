"""C preprocessing of P4 sources (``#include``, ``#define``, ``#if``...) with pcpp.

Returns the expanded text plus a :class:`LineMap` that maps each line of the
expanded text back to ``(file, line)`` of the original sources, using the ``#line``
markers pcpp writes; the marker lines themselves are blanked so that line numbers in
the expanded text stay put.
"""
from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Sequence

from .errors import Loc, P4Error

INCLUDE_DIR = str(Path(__file__).with_name("include"))
_LINE_RE = re.compile(r'^\s*#\s*(?:line\s+)?(\d+)\s+"([^"]*)"')


def parse_defines(items: Sequence[str]) -> dict[str, str]:
    """``-D NAME[=VALUE]`` options as a dict (a bare NAME is defined as 1, as cpp does)."""
    out = {}
    for d in items:
        k, _, v = d.partition("=")
        out[k] = v or "1"
    return out


class LineMap:
    def __init__(self, entries: list[tuple[str, int]]):
        self.entries = entries  # index = expanded line - 1

    def loc(self, line: int, col: int) -> Loc:
        if 1 <= line <= len(self.entries):
            f, ln = self.entries[line - 1]
            return Loc(f, ln, col)
        return Loc("<preprocessed>", line, col)


def _display(path: str) -> str:
    if path.startswith("<"):
        return path
    ap = os.path.abspath(path)
    try:
        rel = os.path.relpath(ap)
    except ValueError:
        return ap
    return rel if not rel.startswith("..") else ap


def _user_line(text: str, filename: str, text_of_error: str, include: str) -> Loc | None:
    """The line of the program's own source that an included file's ``#error`` is about."""
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)", ln)
        if m and re.search(rf"\b{m.group(1)}\b", text_of_error):
            return Loc(_display(filename), i + 1, ln.index(m.group(1)) + 1)
    for i, ln in enumerate(lines):
        if re.match(r"\s*#\s*include\b", ln) and include in ln:
            return Loc(_display(filename), i + 1, 1)
    return None


def preprocess(text: str, filename: str, include_dirs: Sequence[str] = (),
               defines: dict[str, str] | None = None) -> tuple[str, LineMap]:
    from pcpp.preprocessor import Preprocessor

    errors: list[P4Error] = []

    class _PP(Preprocessor):
        def on_error(self, file, line, msg):  # noqa: D401 - pcpp hook
            errors.append(P4Error(f"preprocessor: {msg}", Loc(_display(file or filename), line or 1, 1)))

        def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
            body = "".join(t.value for t in toks).strip()
            where = Loc(_display(directive.source or filename), directive.lineno or 1, 1)
            if directive.value == "error":
                src = directive.source or ""
                if src and os.path.dirname(os.path.abspath(src)) == INCLUDE_DIR:
                    # an #error of a bundled include (v1model.p4's unknown V1MODEL_VERSION) is
                    # about the program: point at its #define of a macro the message names,
                    # else at its #include of that file
                    where = _user_line(text, filename, text_of_error=body,
                                       include=os.path.basename(src)) or where
                errors.append(P4Error(f"#error {body}", where))
            elif directive.value != "warning":
                errors.append(P4Error(f"preprocessor: unknown directive #{directive.value}", where))
            return True

        def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
            line = next((i + 1 for i, ln in enumerate(text.split("\n"))
                         if "include" in ln and includepath in ln), 1)
            raise P4Error(f"cannot find include file {includepath!r} (searched: "
                          f"{', '.join(self.path)})", Loc(_display(filename), line, 1))

    pp = _PP()
    pp.line_directive = "#line"
    pp.compress = 0
    for d in list(include_dirs) + [os.path.dirname(os.path.abspath(filename)) or ".", INCLUDE_DIR]:
        pp.add_path(d)
    for k, v in (defines or {}).items():
        pp.define(f"{k} {v}")
    try:
        pp.parse(text, filename)
        out = io.StringIO()
        pp.write(out)
    except P4Error:
        raise
    if errors:
        raise errors[0]
    lines = out.getvalue().split("\n")
    entries: list[tuple[str, int]] = []
    cur_file, cur_line = _display(filename), 1
    result = []
    for ln in lines:
        m = _LINE_RE.match(ln)
        if m:
            cur_line, cur_file = int(m.group(1)), _display(m.group(2))
            entries.append((cur_file, cur_line))
            result.append("")
            continue
        entries.append((cur_file, cur_line))
        result.append(ln)
        cur_line += 1
    return "\n".join(result), LineMap(entries)
