"""The directory of one multi-process run (configs, the ranks' logs and results)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def run_dir(prefix: str, keep: str | None = None) -> Iterator[str]:
    """``keep`` (created if needed, left in place), else a fresh directory under the system's
    temporary directory that is removed when the run succeeds and left for its logs when it
    fails (the error names what failed; the logs hold the rest), unless it is still empty."""
    if keep is not None:
        os.makedirs(keep, exist_ok=True)
        yield keep
        return
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    except BaseException:
        if not os.listdir(d):  # failed before writing anything: nothing to look at
            os.rmdir(d)
        raise
    shutil.rmtree(d, ignore_errors=True)
