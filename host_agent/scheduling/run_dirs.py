"""The directory of one multi-process run (configs, the ranks' logs and results)."""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def _only_run_in(d: str) -> Iterator[None]:
    """Hold an exclusive lock on the directory ``d`` (``flock``, released when the run ends or its
    process dies); ValueError naming it when another run holds it. Two runs given one
    ``--log-dir`` wrote the same ``config.json``, logs and results: until 2026-11-28 the second
    of two ``saatp train cgp --log-dir DIR`` started 2 s apart failed in a rank with "Gloo
    connectFullMesh failed ... Connection refused"; both had written DIR/asp/config.json)."""
    fd = os.open(d, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"{d}: another run is using this directory for its configs, logs and results; give "
                             f"each run a directory of its own (--log-dir)") from None
        yield
    finally:
        os.close(fd)


@contextmanager
def run_dir(prefix: str, keep: str | None = None) -> Iterator[str]:
    """``keep`` (created if needed, left in place), else a fresh directory under the system's
    temporary directory that is removed when the run succeeds and left for its logs when it
    fails or is interrupted, unless it is still empty.

    A directory left behind is always named: by the error when it says where the logs are
    (``RankProcesses`` does), else by one line on stderr. That covers Ctrl-C
    (``KeyboardInterrupt``) and SIGTERM (the commands turn it into ``SystemExit(143)``); the
    exception then carries the path as ``run_dir_left`` so that the command line need not
    name it again."""
    if keep is not None:
        try:
            os.makedirs(keep, exist_ok=True)
        except OSError as e:  # a file in its place: until 2026-11-28 "[Errno 17] File exists: 'x'" named no option
            raise ValueError(f"--log-dir {keep}: cannot make this directory ({e.strerror}"
                             + (f": {e.filename}" if e.filename and e.filename != keep else "") + ")") from None
        with _only_run_in(keep):
            yield keep
        return
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    except BaseException as e:
        if not os.listdir(d):  # failed before writing anything: nothing to look at
            os.rmdir(d)
        elif d not in str(e):
            what = "was interrupted" if isinstance(e, (KeyboardInterrupt, SystemExit)) else "failed"
            print(f"saatp: the run {what}; its configs and logs are left in {d}", file=sys.stderr)
            try:
                e.run_dir_left = d
            except AttributeError:  # an exception type that takes no attributes
                pass
        raise
    shutil.rmtree(d, ignore_errors=True)
