"""Errors the running v1model target raises (shared by the switch and its run-time)."""
from __future__ import annotations


class P4AssertionError(RuntimeError):
    """An ``assert``/``assume`` in the program failed (BMv2 aborts the process)."""
