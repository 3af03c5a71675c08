"""Which STF forms p4c's own runner reads, so that a file written here runs there too.

p4c's BMv2 runner (``backends/bmv2/run-bmv2-test.py`` with ``bmv2stf.py``, p4c 1.2.4.8) reads
an STF file with a ply lexer and grammar (``tools/stf/stf_lexer.py``, ``stf_parser.py``,
extended in ``bmv2stf.py`` with the simple_switch_CLI pass-through commands).  Read from their
sources, what it does with the forms this runner also accepts:

* numbers are decimal ``[0-9]+``, hex ``0x[0-9a-fA-F*]+`` or binary ``0b[01*]+`` only: no
  ``0o``, ``_`` separators, minus signs, dotted IPv4, MAC or IPv6 notations (parse errors);
* ``V&&&M`` masks: ``Scanning error. Illegal character '&'`` (its lexer has no ``&``); a
  ternary key is written with ``*`` digits (``0x0A**``), and a decimal value for a ternary
  key raises ``Decimal value ... not supported for ternary key``;
* ``V/LEN`` for an lpm key parses, then ``makeLpm`` crashes (``'tuple' object has no
  attribute 'find'``); an lpm prefix is written with ``*`` digits (``0x0A******``: 8 bits)
  or as a full-width value; a decimal lpm value is mangled (``"0x" + hex(v)``);
* ``LO..HI`` range keys: parse error (its key types are exact, lpm, ternary, valid);
* actions are always ``NAME(ARG:VALUE, ...)``: no bare name, no positional arguments; an
  ``add`` may end with ``= ID`` to name the entry for ``check_counter NAME($ID)``;
* packet data with an odd number of hex digits: ``Invalid packet data``, the packet is not
  sent;
* commands: ``add``, ``setdefault``, ``remove all``, ``packet``, ``expect``, ``no_packet``,
  ``wait``, ``check_counter`` (read, then ignored: BMv2's counter values are not checked
  there) and the CLI pass-throughs ``mirroring_add``,
  ``mirroring_add_mc``, ``mirroring_delete``, ``mirroring_get``, ``mc_mgrp_create``,
  ``mc_node_create`` (no ``|`` LAG list), ``mc_node_update``, ``mc_node_associate``,
  ``counter_read NAME INDEX``, ``counter_write``, ``register_read NAME INDEX`` (no expected
  value), ``register_write``, ``register_reset``, ``meter_*``; anything else is a parse error.

:func:`p4c_form_problem` names the first such form on a line; the runner refuses it unless
run leniently (``saatp p4 stf --lenient``, or a ``# saatp: lenient-stf`` comment in the file
for tests of embedded-only forms).
"""
from __future__ import annotations

import re
from typing import Any

from . import parser as P

LENIENT_PRAGMA = re.compile(r"^\s*#\s*saatp:\s*lenient-stf\b", re.MULTILINE)

P4C_COMMANDS = {
    "add", "setdefault", "remove", "packet", "expect", "no_packet", "wait", "check_counter",
    "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get", "mc_mgrp_create",
    "mc_node_create", "mc_node_update", "mc_node_associate", "counter_read", "counter_write",
    "register_read", "register_write", "register_reset", "meter_get_rates", "meter_set_rates",
    "meter_array_set_rates",
}
_P4C_NUMBER = re.compile(r"(?:[0-9]+|0[xX][0-9a-fA-F*]+|0[bB][01*]+)\Z")
HINT = "p4c's STF runner does not accept this"


def wants_lenient(text: str) -> bool:
    """The file asks for this runner's extensions (``# saatp: lenient-stf``)."""
    return bool(LENIENT_PRAGMA.search(text))


def _number_problem(tok: str, what: str) -> str | None:
    if _P4C_NUMBER.match(tok):
        return None
    return (f"{HINT}: {what} {tok!r}: numbers are decimal, 0x (hex, * digits allowed) or 0b only "
            f"(no 0o, '_', '-', dotted or colon notations)")


def p4c_form_problem(raw: str, cmd: Any) -> str | None:
    """Why p4c's runner would not take the line ``raw`` (parsed here as ``cmd``), or None."""
    text = raw.split("#", 1)[0].strip()
    if not text or cmd is None:
        return None
    word, _, rest = text.partition(" ")
    word = word.lower()
    rest = rest.strip()
    if word not in P4C_COMMANDS:
        return f"{HINT}: it has no command {word!r}"
    if isinstance(cmd, P.Packet):
        digits = "".join(rest.split()[1:])
        if len(digits) % 2:
            return (f"{HINT}: packet data with an odd number of hex digits ({len(digits)}) is "
                    f"'Invalid packet data' there and is not sent; write whole bytes")
        return _number_problem(rest.split()[0], "port")
    if isinstance(cmd, P.Expect):
        return _number_problem(rest.split()[0], "port")
    if isinstance(cmd, P.Remove) and not cmd.all:
        return f"{HINT}: only 'remove all'"
    if isinstance(cmd, (P.Add, P.SetDefault)):
        return _table_problem(rest, cmd)
    if isinstance(cmd, P.McNodeCreate) and "|" in rest:
        return f"{HINT}: mc_node_create takes no '|' LAG list"
    if isinstance(cmd, P.RegisterRead) and cmd.expected is not None:
        return f"{HINT}: register_read takes NAME INDEX only (it cannot check a value)"
    if isinstance(cmd, P.CounterRead) and word == "counter_read" and cmd.checks:
        return f"{HINT}: counter_read takes NAME INDEX only (check_counter checks values)"
    if word in ("mirroring_add", "mirroring_add_mc", "mirroring_delete", "mc_mgrp_create",
                "mc_node_create", "mc_node_associate", "register_write", "counter_write"):
        toks = rest.split()
        skip = 1 if word in ("register_write", "counter_write") else 0   # NAME first
        for t in toks[skip:]:
            p = _number_problem(t, "value")
            if p:
                return p
    if word in ("register_read", "counter_read") and len(rest.split()) >= 2:
        return _number_problem(rest.split()[1], "index")
    return None


def _table_problem(rest: str, cmd: Any) -> str | None:
    if "&&&" in rest:
        return (f"{HINT}: a V&&&M mask is 'Scanning error. Illegal character' there; write the "
                f"ternary value with * digits (0x0A**)")
    for name, v in getattr(cmd, "matches", ()):
        if isinstance(v, P.Prefix):
            return (f"{HINT}: key {name}: V/LEN crashes its makeLpm; write the prefix with * digits "
                    f"(0x0A****** is a /8 of 32 bits) or a full-width value")
        if isinstance(v, P.RangeV):
            return f"{HINT}: key {name}: it has no range keys (LO..HI)"
        if isinstance(v, P.Num) and (v.bits_per_digit == 3 or (v.bits_per_digit == 0 and v.digits == 0)):
            return (f"{HINT}: key {name}: numbers are decimal, 0x or 0b only (no 0o, dotted or colon "
                    f"notations)")
    for value in re.findall(r":\s*([^\s,()]+)", rest):      # KEY:VALUE and ARG:VALUE
        p = _number_problem(value, "value")
        if p:
            return p
    # ``add ... act(...) = A`` names the entry for check_counter (stf_parser.py: ``EQUAL ID``)
    body = re.sub(r"=\s*[A-Za-z_$][\w$]*\s*\Z", "", rest).rstrip()
    if "(" not in body or not body.endswith(")"):
        return f"{HINT}: the action is written NAME(ARG:VALUE, ...), with parentheses"
    if any(n is None for n, _ in cmd.args):
        return f"{HINT}: action arguments are named (ARG:VALUE)"
    return None


def p4c_table_key_problem(kind: str, name: str, value: Any) -> str | None:
    """Refusals that depend on the key's match kind (known to the runner, not the parser)."""
    if isinstance(value, P.Num) and value.bits_per_digit == 0:
        if kind == "ternary":
            return f"{HINT}: key {name}: a decimal value for a ternary key (write it in 0x or 0b)"
        if kind == "lpm":
            return f"{HINT}: key {name}: a decimal value for an lpm key is mangled there (write it in 0x or 0b)"
    return None


def check_p4c_forms(text: str, filename: str = "<stf>") -> None:
    """Raise :class:`~emulation.stf.parser.StfError` (``file:line: ...``) at the first line p4c's
    runner would not take (syntax errors are raised too)."""
    for n, raw in enumerate(text.splitlines(), 1):
        try:
            c = P.parse_line(raw, n)
        except ValueError as e:
            raise P.StfError(str(e), filename, n) from None
        problem = p4c_form_problem(raw, c)
        if problem:
            raise P.StfError(f"{problem} (run with --lenient, or put '# saatp: lenient-stf' in the file, "
                             f"to use this runner's extensions)", filename, n)
