"""Language-level run-time support for the Python code that the compiler (``compiler/``) generates.

Architecture-neutral P4_16: packet cursors for ``packet_in``/``packet_out``, parser
errors, ``exit``, header stacks.  Headers and structs are generated classes (one per P4
type) with ``__slots__``; a header's validity is the slot ``_valid``.
"""
from __future__ import annotations

from typing import Any, Callable

# core.p4 error numbering (declaration order)
NoError, PacketTooShort, NoMatch, StackOutOfBounds, HeaderTooShort, ParserTimeout, ParserInvalidArgument = range(7)


class ParserReject(Exception):
    """The parser reached ``reject``; ``code`` is the ``error`` value."""

    __slots__ = ("code",)

    def __init__(self, code: int):
        self.code = code


class P4Exit(Exception):
    """``exit``: ends the top-level control.  ``outs`` carries the scalar out/inout values of
    the action that exited, so its caller still copies them back (as p4c/BMv2 do)."""

    def __init__(self, outs: tuple = ()):
        super().__init__()
        self.outs = outs


class P4RuntimeError(RuntimeError):
    """Something BMv2 would abort on (an out-of-range stack index in a control, a failed assert)."""


class PacketIn:
    """``packet_in``: the received bytes and the parser's byte offset."""

    __slots__ = ("buf", "off", "n")

    def __init__(self, buf: bytes):
        self.buf = buf
        self.off = 0
        self.n = len(buf)

    def need(self, nbytes: int) -> int:
        off = self.off
        if off + nbytes > self.n:
            raise ParserReject(PacketTooShort)
        return off

    def peek_bits(self, width: int) -> int:
        nb = (width + 7) >> 3
        off = self.off
        if off + nb > self.n:
            raise ParserReject(PacketTooShort)
        v = int.from_bytes(self.buf[off:off + nb], "big")
        return v >> (nb * 8 - width)

    def advance(self, bits: int) -> None:
        if bits % 8:
            raise P4RuntimeError(f"advance by {bits} bits: only whole bytes are supported")
        nb = bits >> 3
        if self.off + nb > self.n:
            raise ParserReject(PacketTooShort)
        self.off += nb


class PacketOut:
    """``packet_out``: the deparser's output, as a list of byte strings."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []


class Stack:
    """A header stack ``H[n]``: ``elems`` (header objects) and ``nxt`` (nextIndex)."""

    __slots__ = ("elems", "nxt", "size", "_new")

    def __init__(self, new: Callable[[], Any], size: int):
        self._new = new
        self.size = size
        self.elems = [new() for _ in range(size)]
        self.nxt = 0

    def _copy(self) -> "Stack":
        c = Stack.__new__(Stack)
        c._new, c.size, c.nxt = self._new, self.size, self.nxt
        c.elems = [e._copy() for e in self.elems]
        return c

    def _set(self, other: "Stack") -> None:
        self.nxt = other.nxt
        for a, b in zip(self.elems, other.elems):
            a._set(b)

    def _eq(self, other: "Stack") -> bool:
        return all(a._eq(b) for a, b in zip(self.elems, other.elems))

    def push_front(self, n: int) -> None:
        # P4_16 spec 8.18: shift up by n; the first n become invalid; nextIndex grows (capped)
        if n <= 0:
            return
        n = min(n, self.size)
        self.elems = [self._new() for _ in range(n)] + self.elems[: self.size - n]
        self.nxt = min(self.nxt + n, self.size)

    def pop_front(self, n: int) -> None:
        if n <= 0:
            return
        n = min(n, self.size)
        self.elems = self.elems[n:] + [self._new() for _ in range(n)]
        self.nxt = max(self.nxt - n, 0)

    def at(self, i: int) -> Any:
        if 0 <= i < self.size:
            return self.elems[i]
        # out of range in a control: the spec leaves it undefined; BMv2 1.15.5 aborts
        # (std::out_of_range: simple_switch dies, checked with the real tools)
        raise P4RuntimeError(f"header stack index {i} out of range 0..{self.size - 1} "
                             f"(BMv2 aborts the switch process)")

    def next_(self) -> Any:
        if self.nxt >= self.size:
            raise ParserReject(StackOutOfBounds)
        return self.elems[self.nxt]

    def last(self) -> Any:
        if self.nxt == 0:
            raise ParserReject(StackOutOfBounds)
        return self.elems[self.nxt - 1]


class Array:
    """An array ``T[n]`` of non-header values: ``elems`` holds Python ints/bools (``scalar``)
    or generated struct/union objects."""

    __slots__ = ("elems", "size", "_new", "_scalar")

    def __init__(self, new: Callable[[], Any], size: int, scalar: bool):
        self._new, self.size, self._scalar = new, size, scalar
        self.elems = [new() for _ in range(size)]

    def _copy(self) -> Array:
        c = Array.__new__(Array)
        c._new, c.size, c._scalar = self._new, self.size, self._scalar
        c.elems = list(self.elems) if self._scalar else [e._copy() for e in self.elems]
        return c

    def _set(self, other: Array) -> None:
        if self._scalar:
            self.elems[:] = other.elems
        else:
            for a, b in zip(self.elems, other.elems):
                a._set(b)

    def _eq(self, other: Array) -> bool:
        if self._scalar:
            return self.elems == other.elems
        return all(a._eq(b) for a, b in zip(self.elems, other.elems))

    def _check(self, i: int) -> None:
        if not 0 <= i < self.size:
            raise P4RuntimeError(f"array index {i} out of range 0..{self.size - 1}")

    def at(self, i: int) -> Any:
        self._check(i)
        return self.elems[i]

    def put(self, i: int, v: Any) -> None:
        self._check(i)
        self.elems[i] = v


def div(a: int, b: int) -> int:
    if b == 0:
        raise P4RuntimeError("division by zero")
    return a // b


def mod(a: int, b: int) -> int:
    if b == 0:
        raise P4RuntimeError("modulo by zero")
    return a % b
