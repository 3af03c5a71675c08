"""Match specifications for table entries, shared by every control-plane client
(the Python API, the STF runner, the P4Runtime server).

A table entry's match is a ``dict`` from the key's control-plane name (the key
expression as written, e.g. ``hdr.ipv4.dstAddr``, or its ``@name``) to one of the
classes below.  A plain ``int`` is accepted where an :class:`Exact` is meant.
Keys left out of the dict are wildcards; that is only legal for ``ternary``,
``optional``, ``range`` (full range) and ``lpm`` (prefix length 0) keys.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional_:
    """``optional`` match kind: ``value=None`` is the wildcard."""
    value: int | None


MatchSpec = Union[int, Exact, Lpm, Ternary, Range, Optional_]
