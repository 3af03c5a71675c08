"""Parser for p4c's STF ("simple test framework") files.

The format is the one p4c's ``backends/bmv2/run-bmv2-test.py`` / ``bmv2stf.py`` and
``tools/stf`` read (rules learnt from their public description; this is our own code).
One command per line, ``#`` starts a comment, keywords are case-insensitive::

    add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...) [= ID]
    setdefault TABLE ACTION(PARAM:VALUE, ...)
    remove all | remove $ID | remove TABLE HANDLE
    packet PORT HEX...               (spaces allowed between hex digits)
    expect PORT [HEX...[$]]          (* = any nibble, $ = exact length, no data = anything)
    no_packet | wait
    mc_mgrp_create GRP | mc_mgrp_destroy GRP
    mc_node_create RID PORT... [| LAG...]      (node handles are 0, 1, 2... in creation order)
    mc_node_associate GRP HANDLE | mc_node_dissociate GRP HANDLE
    mirroring_add SESSION PORT | mirroring_add_mc SESSION GRP | mirroring_delete SESSION
    register_write NAME INDEX VALUE | register_read NAME INDEX [[==] VALUE] | register_reset NAME
    counter_read NAME INDEX [packets|bytes [OP] VALUE]... | counter_write NAME INDEX PKTS BYTES
    counter_reset NAME
    act_prof_create_member PROFILE ACTION(...) | act_prof_create_group PROFILE | ...  (action_profiles.py)
    check_counter NAME(INDEX|$ID) [packets|bytes] [OP VALUE]     (OP: == != < <= > >=)

Match values (converted by the runner, which knows each key's width and match kind):
``5``, ``0x0a``, ``0b101``, ``10.0.0.1``, ``aa:bb:cc:dd:ee:ff``, IPv6; ternary ``V&&&M`` or
nibble wildcards ``0x**0A`` / ``0b1*0*``; lpm ``V/LEN``; range ``LO..HI``.

Parsing checks the syntax only; names are resolved by the runner.  Errors are
:class:`StfError` with a ``file:line:`` prefix.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Union


class StfError(Exception):
    """A malformed or unusable STF line; ``str()`` is ``file:line: message``."""

    def __init__(self, message: str, filename: str = "<stf>", line: int = 0):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.line = line

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}: {self.message}"


# ------------------------------------------------------------------ values
@dataclass(frozen=True)
class Num:
    """A plain number.  ``digits``/``bits_per_digit`` describe how it was written
    (p4c derives ternary masks and lpm prefix lengths from the digits of hex/binary literals)."""
    value: int
    digits: int = 0
    bits_per_digit: int = 0      # 0 for decimal and dotted/colon notations


@dataclass(frozen=True)
class Pattern:
    """A hex/binary/octal literal with ``*`` wildcard digits (``0x**0A``)."""
    value: int
    mask: int
    digits: int
    bits_per_digit: int
    wild_digits: int


@dataclass(frozen=True)
class Masked:
    value: int
    mask: int


@dataclass(frozen=True)
class Prefix:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class RangeV:
    low: int
    high: int


MatchValue = Union[Num, Pattern, Masked, Prefix, RangeV]

_BASES = {"x": (16, 4), "b": (2, 1), "o": (8, 3)}
_DEC = re.compile(r"[0-9]+\Z")
_RADIX = re.compile(r"0([xXbBoO])([0-9a-fA-F_*]+)\Z")
_QUAD = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}\Z")
_MAC = re.compile(r"[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}\Z")


def parse_number(text: str, allow_wild: bool = False) -> Num | Pattern:
    """Parse one number; with ``allow_wild``, ``*`` digits give a :class:`Pattern`."""
    t = text.strip()
    if not t:
        raise ValueError("empty value")
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if _DEC.match(t):
        v = int(t)
        return Num(-v if neg else v, len(t), 0)
    m = _RADIX.match(t)
    if m:
        base, bpd = _BASES[m.group(1).lower()]
        digits = m.group(2).replace("_", "")
        alphabet = "0123456789abcdef"[:base] + "*"
        bad = [c for c in digits.lower() if c not in alphabet]
        if bad or not digits:
            raise ValueError(f"bad digit {bad[0]!r} in {text!r}" if bad else f"no digits in {text!r}")
        if "*" in digits:
            if not allow_wild:
                raise ValueError(f"wildcard '*' not allowed in {text!r}")
            if neg:
                raise ValueError(f"negative pattern {text!r}")
            v = mask = 0
            dmask = (1 << bpd) - 1
            for c in digits:
                v <<= bpd
                mask <<= bpd
                if c != "*":
                    v |= int(c, base)
                    mask |= dmask
            return Pattern(v, mask, len(digits), bpd, digits.count("*"))
        v = int(digits, base)
        return Num(-v if neg else v, len(digits), bpd)
    if neg:
        raise ValueError(f"bad number {text!r}")
    if _QUAD.match(t):
        parts = [int(p) for p in t.split(".")]
        if any(p > 255 for p in parts):
            raise ValueError(f"bad IPv4 address {text!r}")
        return Num(int.from_bytes(bytes(parts), "big"))
    if _MAC.match(t):
        return Num(int.from_bytes(bytes(int(p, 16) for p in t.split(":")), "big"))
    if ":" in t:
        try:
            return Num(int(ipaddress.IPv6Address(t)))
        except ValueError:
            pass
    raise ValueError(f"bad number {text!r}")


def parse_match_value(text: str) -> MatchValue:
    t = text.strip()
    if "&&&" in t:
        a, _, b = t.partition("&&&")
        va, vb = parse_number(a), parse_number(b)
        return Masked(va.value, vb.value)
    if ".." in t:
        a, _, b = t.partition("..")
        return RangeV(parse_number(a).value, parse_number(b).value)
    if "/" in t:
        a, _, b = t.partition("/")
        if not _DEC.match(b.strip()):
            raise ValueError(f"bad prefix length in {text!r}")
        return Prefix(parse_number(a).value, int(b))
    return parse_number(t, allow_wild=True)


# ------------------------------------------------------------------ commands
@dataclass
class Command:
    line: int


@dataclass
class Add(Command):
    table: str
    priority: int | None
    matches: list[tuple[str, MatchValue]]
    action: str
    args: list[tuple[str | None, int]]
    handle_id: str | None = None


@dataclass
class SetDefault(Command):
    table: str
    action: str
    args: list[tuple[str | None, int]]


@dataclass
class Remove(Command):
    all: bool = False
    handle_id: str | None = None
    table: str | None = None
    handle: int | None = None


@dataclass
class Packet(Command):
    port: int
    data: bytes


@dataclass
class Expect(Command):
    port: int
    pattern: str | None          # upper-case hex nibbles and '*', or None = anything
    exact: bool = False          # the data ended with '$': the length must match too


@dataclass
class Wait(Command):
    pass


@dataclass
class NoPacket(Command):
    pass


@dataclass
class McGroupCreate(Command):
    mgid: int


@dataclass
class McGroupDestroy(Command):
    mgid: int


@dataclass
class McNodeCreate(Command):
    rid: int
    ports: list[int]


@dataclass
class McNodeAssociate(Command):
    mgid: int
    handle: int


@dataclass
class McNodeDissociate(Command):
    mgid: int
    handle: int


@dataclass
class MirroringAdd(Command):
    session: int
    port: int | None = None
    mgid: int | None = None


@dataclass
class MirroringDelete(Command):
    session: int


@dataclass
class RegisterWrite(Command):
    name: str
    index: int
    value: int


@dataclass
class RegisterRead(Command):
    name: str
    index: int
    expected: int | None = None


@dataclass
class RegisterReset(Command):
    name: str


@dataclass
class CounterRead(Command):
    """``counter_read`` and ``check_counter``: optional checks ``(kind, op, value)``."""
    name: str
    index: int | None
    handle_id: str | None = None
    checks: list[tuple[str, str, int]] = field(default_factory=list)


@dataclass
class CounterWrite(Command):
    name: str
    index: int
    packets: int
    nbytes: int


@dataclass
class CounterReset(Command):
    name: str


@dataclass
class ActProf(Command):
    """``act_prof_*``: action profile members and groups (run by :mod:`emulation.stf.action_profiles`)."""
    op: str
    profile: str
    ints: list[int] = field(default_factory=list)
    action: str | None = None
    args: list = field(default_factory=list)


# act_prof_* command -> number of handles after PROFILE, and whether an ACTION(...) follows them
_ACT_PROF_COMMANDS = {
    "act_prof_create_member": (0, True),
    "act_prof_modify_member": (1, True),
    "act_prof_delete_member": (1, False),
    "act_prof_create_group": (0, False),
    "act_prof_delete_group": (1, False),
    "act_prof_add_member_to_group": (2, False),
    "act_prof_remove_member_from_group": (2, False),
}


def _parse_act_prof(cmd: str, rest: str, line: int) -> ActProf:
    nints, with_action = _ACT_PROF_COMMANDS[cmd]
    usage = f"usage: {cmd} PROFILE" + " N" * nints + (" ACTION(ARGS)" if with_action else "")
    toks = rest.split(None, nints + 1) if with_action else rest.split()
    if len(toks) != 1 + nints + (1 if with_action else 0):
        raise ValueError(usage)
    ints = [_int(t, "handle") for t in toks[1:1 + nints]]
    if any(v < 0 for v in ints):
        raise ValueError(f"negative handle in {rest!r}")
    action, args = _action(toks[-1]) if with_action else (None, [])
    return ActProf(line, cmd, toks[0], ints, action, args)


CONTROL_COMMANDS = (ActProf, Add, SetDefault, Remove, McGroupCreate, McGroupDestroy, McNodeCreate,
                    McNodeAssociate, McNodeDissociate, MirroringAdd, MirroringDelete,
                    RegisterWrite, RegisterRead, RegisterReset, CounterRead, CounterWrite,
                    CounterReset)

_NAME = re.compile(r"[A-Za-z_$.][A-Za-z0-9_$.\[\]]*\Z")
_ID = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*\Z")
_OPS = ("==", "!=", "<=", ">=", "<", ">")


def _split_top(text: str, sep: str | None = None) -> list[str]:
    """Split at whitespace (``sep=None``) or at ``sep``, outside () and [] nesting."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in text:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if depth == 0 and ((sep is None and c.isspace()) or c == sep):
            if cur or sep is not None:
                out.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    if depth != 0:
        raise ValueError("unbalanced parentheses or brackets")
    if cur or (sep is not None and out):
        out.append("".join(cur))
    return out


def _colon_split(tok: str) -> tuple[str, str] | None:
    """Split ``name:value`` at the first ':' outside () and []."""
    depth = 0
    for i, c in enumerate(tok):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ":" and depth == 0:
            return tok[:i].strip(), tok[i + 1:].strip()
    return None


def _int(tok: str, what: str) -> int:
    try:
        v = parse_number(tok)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    return v.value


def _port(tok: str) -> int:
    v = _int(tok, "port")
    if v < 0:
        raise ValueError(f"negative port {tok}")
    return v


def _args(text: str) -> list[tuple[str | None, int]]:
    text = text.strip()
    if not text:
        return []
    out: list[tuple[str | None, int]] = []
    for part in _split_top(text, ","):
        part = part.strip()
        if not part:
            raise ValueError("empty action argument")
        kv = _colon_split(part)
        if kv is not None and re.match(r"[A-Za-z_$][A-Za-z0-9_$.]*\Z", kv[0]):
            out.append((kv[0], _int(kv[1], f"argument {kv[0]}")))
        else:
            out.append((None, _int(part, "argument")))
    return out


def _action(tok: str) -> tuple[str, list[tuple[str | None, int]]]:
    tok = tok.strip()
    if "(" not in tok:
        if not _NAME.match(tok):
            raise ValueError(f"bad action {tok!r}")
        return tok, []
    name, _, rest = tok.partition("(")
    name = name.strip()
    if not rest.rstrip().endswith(")"):
        raise ValueError(f"missing ')' in action {tok!r}")
    if not _NAME.match(name):
        raise ValueError(f"bad action name {name!r}")
    return name, _args(rest.rstrip()[:-1])


def _merge_colons(toks: list[str]) -> list[str]:
    """Join ``key : value`` written with spaces around the colon."""
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        while i + 1 < len(toks) and (t.endswith(":") or toks[i + 1].startswith(":")):
            i += 1
            t += toks[i]
        out.append(t)
        i += 1
    return out


def _parse_add(line: int, rest: str) -> Add:
    handle_id = None
    toks = _split_top(rest)
    # trailing "= ID" (or "=ID") names the entry for check_counter/remove
    if len(toks) >= 2 and toks[-2] == "=":
        handle_id = toks[-1]
        toks = toks[:-2]
    elif toks and toks[-1].startswith("=") and len(toks[-1]) > 1 and "(" not in toks[-1]:
        handle_id = toks[-1][1:]
        toks = toks[:-1]
    elif toks and ")=" in toks[-1]:
        a, _, handle_id = toks[-1].rpartition("=")
        toks[-1] = a
    if handle_id is not None and not _ID.match(handle_id):
        raise ValueError(f"bad entry id {handle_id!r}")
    if handle_id is not None:
        handle_id = handle_id.lstrip("$")
    if not toks:
        raise ValueError("missing table name")
    table = toks[0]
    if not _NAME.match(table):
        raise ValueError(f"bad table name {table!r}")
    toks = toks[1:]
    prio = None
    if toks and _DEC.match(toks[0]):
        prio = int(toks[0])
        toks = toks[1:]
    toks = _merge_colons(toks)
    if not toks:
        raise ValueError("missing action")
    act = toks[-1]
    if _colon_split(act) is not None:
        raise ValueError(f"missing action after the key {act!r}")
    action, args = _action(act)
    matches = []
    for t in toks[:-1]:
        kv = _colon_split(t)
        if kv is None or not kv[0] or not kv[1]:
            raise ValueError(f"expected KEY:VALUE, got {t!r}")
        try:
            matches.append((kv[0], parse_match_value(kv[1])))
        except ValueError as e:
            raise ValueError(f"key {kv[0]}: {e}") from None
    return Add(line, table, prio, matches, action, args, handle_id)


def _hexdata(toks: list[str], what: str) -> str:
    s = "".join(toks)
    if not re.fullmatch(r"[0-9a-fA-F]*", s):
        bad = re.search(r"[^0-9a-fA-F]", s)
        raise ValueError(f"bad {what} data: unexpected {bad.group(0)!r}")  # type: ignore[union-attr]
    return s


def _check_op(toks: list[str]) -> tuple[str, int]:
    if len(toks) == 1:
        return "==", _int(toks[0], "value")
    if len(toks) == 2 and toks[0] in _OPS:
        return toks[0], _int(toks[1], "value")
    raise ValueError(f"expected [OP] VALUE, got {' '.join(toks)!r}")


def _tokens_ops(text: str) -> list[str]:
    # split "==2" into "==", "2" so that operators may be glued to values
    out = []
    for t in text.split():
        m = re.match(r"(==|!=|<=|>=|<|>)([^=<>].*)\Z", t)
        if m and t not in _OPS:
            out += [m.group(1), m.group(2)]
        else:
            out.append(t)
    return out


def parse_line(text: str, line: int = 0) -> Command | None:
    """Parse one line (comments already allowed); ``None`` for blank lines."""
    text = text.split("#", 1)[0].strip()
    if not text:
        return None
    parts = text.split(None, 1)
    cmd = parts[0].lower()
    rest = parts[1] if len(parts) > 1 else ""
    toks = rest.split()

    def need(n: int, usage: str) -> None:
        if len(toks) != n:
            raise ValueError(f"usage: {usage}")

    if cmd == "add":
        return _parse_add(line, rest)
    if cmd == "setdefault":
        t = _split_top(rest)
        if len(t) < 2:
            raise ValueError("usage: setdefault TABLE ACTION(ARGS)")
        action, args = _action(" ".join(t[1:]))
        return SetDefault(line, t[0], action, args)
    if cmd == "remove":
        if len(toks) == 1 and toks[0].lower() == "all":
            return Remove(line, all=True)
        if len(toks) == 1 and toks[0].startswith("$"):
            return Remove(line, handle_id=toks[0][1:])
        if len(toks) == 2:
            return Remove(line, table=toks[0], handle=_int(toks[1], "handle"))
        raise ValueError("usage: remove all | remove $ID | remove TABLE HANDLE")
    if cmd == "packet":
        if not toks:
            raise ValueError("usage: packet PORT HEX...")
        data = _hexdata(toks[1:], "packet")
        if len(data) % 2:
            # p4c's runner converts two digits at a time, so a lone last digit X is the byte 0x0X
            data = data[:-1] + "0" + data[-1]
        return Packet(line, _port(toks[0]), bytes.fromhex(data))
    if cmd == "expect":
        if not toks:
            raise ValueError("usage: expect PORT [HEX...[$]]")
        port = _port(toks[0])
        s = "".join(toks[1:])
        if not s:
            return Expect(line, port, None)
        exact = s.endswith("$")
        if exact:
            s = s[:-1]
        if not re.fullmatch(r"[0-9a-fA-F*]*", s):
            bad = re.search(r"[^0-9a-fA-F*]", s)
            raise ValueError(f"bad expect data: unexpected {bad.group(0)!r}")  # type: ignore[union-attr]
        return Expect(line, port, s.upper(), exact)
    if cmd == "wait":
        return Wait(line)
    if cmd == "no_packet":
        return NoPacket(line)
    if cmd == "mc_mgrp_create":
        need(1, "mc_mgrp_create GROUP")
        return McGroupCreate(line, _int(toks[0], "group"))
    if cmd == "mc_mgrp_destroy":
        need(1, "mc_mgrp_destroy GROUP")
        return McGroupDestroy(line, _int(toks[0], "group"))
    if cmd == "mc_node_create":
        if not toks:
            raise ValueError("usage: mc_node_create RID PORT... [| LAG...]")
        ports_t = toks[1:]
        if "|" in ports_t:
            ports_t = ports_t[:ports_t.index("|")]   # LAGs are not modelled
        return McNodeCreate(line, _int(toks[0], "rid"), [_port(p) for p in ports_t])
    if cmd in ("mc_node_associate", "mc_node_dissociate"):
        need(2, f"{cmd} GROUP HANDLE")
        c = McNodeAssociate if cmd == "mc_node_associate" else McNodeDissociate
        return c(line, _int(toks[0], "group"), _int(toks[1], "handle"))
    if cmd == "mirroring_add":
        need(2, "mirroring_add SESSION PORT")
        return MirroringAdd(line, _int(toks[0], "session"), port=_port(toks[1]))
    if cmd == "mirroring_add_mc":
        need(2, "mirroring_add_mc SESSION GROUP")
        return MirroringAdd(line, _int(toks[0], "session"), mgid=_int(toks[1], "group"))
    if cmd == "mirroring_delete":
        need(1, "mirroring_delete SESSION")
        return MirroringDelete(line, _int(toks[0], "session"))
    if cmd == "register_write":
        need(3, "register_write NAME INDEX VALUE")
        return RegisterWrite(line, toks[0], _int(toks[1], "index"), _int(toks[2], "value"))
    if cmd == "register_read":
        t = _tokens_ops(rest)
        if len(t) < 2:
            raise ValueError("usage: register_read NAME INDEX [[==] VALUE]")
        exp = None
        if len(t) > 2:
            op, exp = _check_op(t[2:])
            if op != "==":
                raise ValueError("register_read only checks equality")
        return RegisterRead(line, t[0], _int(t[1], "index"), exp)
    if cmd == "register_reset":
        need(1, "register_reset NAME")
        return RegisterReset(line, toks[0])
    if cmd == "counter_read":
        t = _tokens_ops(rest)
        if len(t) < 2:
            raise ValueError("usage: counter_read NAME INDEX [packets|bytes [OP] VALUE]...")
        checks = _counter_checks(t[2:])
        return CounterRead(line, t[0], _int(t[1], "index"), None, checks)
    if cmd == "check_counter":
        m = re.match(r"\s*([A-Za-z_$.][A-Za-z0-9_$.\[\]]*)\s*\(\s*([^)]*?)\s*\)(.*)\Z", rest)
        if not m:
            raise ValueError("usage: check_counter NAME(INDEX|$ID) [packets|bytes] [OP VALUE]")
        name, idx, tail = m.group(1), m.group(2), m.group(3)
        t = _tokens_ops(tail)
        if t and t[0].lower() not in ("packets", "bytes"):
            t = ["packets"] + t
        checks = _counter_checks(t)
        if idx.startswith("$"):
            return CounterRead(line, name, None, idx[1:], checks)
        return CounterRead(line, name, _int(idx, "index"), None, checks)
    if cmd == "counter_write":
        need(4, "counter_write NAME INDEX PACKETS BYTES")
        return CounterWrite(line, toks[0], _int(toks[1], "index"), _int(toks[2], "packets"),
                            _int(toks[3], "bytes"))
    if cmd == "counter_reset":
        need(1, "counter_reset NAME")
        return CounterReset(line, toks[0])
    if cmd in _ACT_PROF_COMMANDS:
        return _parse_act_prof(cmd, rest, line)
    raise ValueError(f"unknown STF command {parts[0]!r}")


def _counter_checks(t: list[str]) -> list[tuple[str, str, int]]:
    checks = []
    i = 0
    while i < len(t):
        kind = t[i].lower()
        if kind not in ("packets", "bytes"):
            raise ValueError(f"expected 'packets' or 'bytes', got {t[i]!r}")
        j = i + 1
        while j < len(t) and t[j].lower() not in ("packets", "bytes"):
            j += 1
        if j == i + 1:
            raise ValueError(f"missing value after {t[i]!r}")
        op, v = _check_op(t[i + 1:j])
        checks.append((kind, op, v))
        i = j
    return checks


def parse_stf(text: str, filename: str = "<stf>") -> list[Command]:
    """Parse a whole STF text; raises :class:`StfError` (``file:line: message``)."""
    out: list[Command] = []
    for n, raw in enumerate(text.splitlines(), 1):
        try:
            c = parse_line(raw, n)
        except ValueError as e:
            raise StfError(str(e), filename, n) from None
        if c is not None:
            out.append(c)
    return out
