"""On-disk cache of compiled v1model programs, so that a switch does not compile again a
program it compiled before (the K=1024 SA-ATP program takes seconds to parse and lower).

An entry is a pickled :class:`~emulation.v1model.arch.Program` (its generated code as a
marshalled code object plus its control-plane description; unpickling runs the code).
It is keyed by a SHA-256 over

* the preprocessed program text (``#include`` files resolved) and the files its lines come from,
* every option that changes code generation: ``trace``, ``allow_target_extensions`` (the
  BMv2 back-end refusals), the ``-D`` defines, the include directories, the vectorisation
  switch (``SAATP_P4_VECTORIZE``) and the program's file name (as given, and absolute),
* the compiler itself: the contents of every file under ``emulation/p4/`` and of
  ``emulation/v1model/*.py``, the Python version (marshal format) and the lark version,

so any change to the program, an option or the compiler's code misses.  Preprocessing
itself costs seconds on a large program, so a second, "direct" entry (the idea of ccache's
direct mode) maps the *unpreprocessed* text and options to the preprocessed key plus the
content hash of every included file; it is used only when all those files still hash the
same, else the program is preprocessed again.  (Like ccache's direct mode, it does not notice a
new file that would now shadow an included one earlier in the include search path;
``SAATP_COMPILE_CACHE=0`` or removing the directory is the way out.)

Only programs that compiled are stored: refusals (:class:`P4Error`) are raised every time.
Entries are written atomically (temporary file + ``os.replace``); an unreadable or corrupt
entry is ignored (and the program compiled again).  Location: ``$XDG_CACHE_HOME/saatp/compiled``
(default ``~/.cache/saatp/compiled``); ``SAATP_COMPILE_CACHE=0`` turns the cache off.  The
directory is pruned to the :data:`MAX_ENTRIES` most recently used entries.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import lark

from emulation.p4.compiler.core import vectorize_default  # the switch the Compiler reads
from emulation.p4.preprocess import preprocess

FORMAT = 1                 # bump when the entry layout changes
MAX_ENTRIES = 64           # programs kept (each entry has a direct and a compiled file)
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent      # emulation/
_compiler_digest: Optional[str] = None


def enabled() -> bool:
    return os.environ.get("SAATP_COMPILE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "saatp" / "compiled"


def compiler_digest() -> str:
    """Hash of the compiler's own sources (computed once per process)."""
    global _compiler_digest
    if _compiler_digest is None:
        h = hashlib.sha256(f"{FORMAT}|{sys.version}|{sys.implementation.cache_tag}|lark {lark.__version__}".encode())
        files = [p for p in (_PACKAGE_ROOT / "p4").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        files += list((_PACKAGE_ROOT / "v1model").glob("*.py"))
        for p in sorted(files):
            h.update(str(p.relative_to(_PACKAGE_ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
        _compiler_digest = h.hexdigest()
    return _compiler_digest


def _file_digest(path: str) -> Optional[str]:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _options(filename: str, include_dirs: Sequence[str], defines: Optional[dict],
             allow_target_extensions: bool, trace: bool) -> list:
    return [compiler_digest(), filename, os.path.abspath(filename), [os.path.abspath(d) for d in include_dirs],
            sorted((str(k), str(v)) for k, v in (defines or {}).items()),
            bool(allow_target_extensions), bool(trace), vectorize_default()]


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update((p if isinstance(p, str) else json.dumps(p)).encode())
        h.update(b"\0")
    return h.hexdigest()


def _read(path: Path) -> Optional[bytes]:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        os.utime(path)          # most recently used: kept by the pruning
    except OSError:
        pass
    return data


def _write(path: Path, data: bytes) -> None:
    """Atomic write; a cache that cannot be written is not an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass


def _prune(d: Path) -> None:
    try:
        entries = sorted(d.glob("*.program"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in entries[MAX_ENTRIES:]:
            p.unlink(missing_ok=True)
        direct = sorted(d.glob("*.direct"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in direct[MAX_ENTRIES:]:
            p.unlink(missing_ok=True)
    except OSError:
        pass


def _load_program(path: Path) -> Any:
    data = _read(path)
    if data is None:
        return None
    try:
        return pickle.loads(data)
    except Exception:       # corrupt, truncated or from an incompatible build: compile again
        return None


def cached_compile(text: str, filename: str, include_dirs: Sequence[str], defines: Optional[dict], *,
                   allow_target_extensions: bool, trace: bool,
                   compile_expanded: Callable[[str, Any], Any]) -> Any:
    """The program for ``text``: from the cache, else ``compile_expanded(expanded, linemap)``
    (which raises on a refused program), then stored."""
    if not enabled():
        return compile_expanded(*preprocess(text, filename, include_dirs, defines))
    d = cache_dir()
    options = _options(filename, include_dirs, defines, allow_target_extensions, trace)
    direct = d / f"{_digest('direct', options, text)}.direct"
    raw = _read(direct)
    if raw is not None:
        try:
            manifest = json.loads(raw)
            if all(_file_digest(p) == h for p, h in manifest["includes"]):
                program = _load_program(d / f"{manifest['key']}.program")
                if program is not None:
                    return program
        except (ValueError, KeyError, TypeError):
            pass
    expanded, linemap = preprocess(text, filename, include_dirs, defines)
    sources = list(dict.fromkeys(f for f, _ in linemap.entries))
    key = _digest("program", options, sources, expanded)
    entry = d / f"{key}.program"
    program = _load_program(entry)
    if program is None:
        program = compile_expanded(expanded, linemap)
        _write(entry, pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL))
    main = os.path.abspath(filename)
    includes = [(p, _file_digest(p)) for p in (os.path.abspath(s) for s in sources if not s.startswith("<"))
                if p != main]
    if all(h is not None for _, h in includes):
        _write(direct, json.dumps({"key": key, "includes": includes}).encode())
    _prune(d)
    return program
