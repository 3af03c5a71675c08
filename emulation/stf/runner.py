"""Run p4c STF tests on the embedded v1model switch (``saatp p4 stf PROGRAM STF``).

The semantics follow p4c's BMv2 STF runner (``backends/bmv2/bmv2stf.py``), re-implemented:

* Commands run in file order.  ``packet`` lines go through ``Switch.process`` at once
  (the embedded switch is synchronous, so ``wait`` has nothing to wait for).
* Every emitted packet is recorded per egress port.  At the end, for each *interface of
  the test* -- a port named by some ``packet`` or ``expect`` line, as p4c only creates
  those interfaces -- the packets that came out must match that port's ``expect`` lines
  in order and in number (order is per port, never across ports).  A port of the test
  with no ``expect`` must see no packet.  Packets sent to ports that no line mentions are
  ignored: BMv2 has no such interface.
* ``expect PORT`` without data accepts any number of packets on that port (p4c's
  ``expectedAny``).  Expected data is compared nibble by nibble, ``*`` matching any
  nibble; it is a prefix match unless it ends with ``$``.
* ``add`` priorities follow the STF convention that p4c converts for BMv2
  (``10000 - prio``, smallest BMv2 value wins): **a larger STF priority wins**, which is
  the convention of our tables, so priorities are passed through.  A priority given for
  a table that needs none (exact/lpm) is ignored, as p4c does; a ternary/range entry
  without one gets priority 1 (entries of equal priority: the earlier one wins).
* As in p4c, a hex/binary ternary value without ``&&&`` masks only the digits written
  (``0x0A`` is ``0x0A&&&0xFF`` whatever the key width, ``*`` digits are wildcards), and an
  lpm value without ``/LEN`` gets the prefix length of its non-``*`` digits (capped at
  the key width; decimal and dotted values are full-width).

* Table and key names resolve as p4c's runner resolves them: the full name, then a unique
  suffix; a key ``K`` also matches a key named ``K$`` or ``K.$valid$`` and ``X.valid`` matches
  ``X.$valid$`` (p4c's P4_14 converter names validity keys ``data.$valid$``; its STF files
  write ``data:1`` or ``data.$valid:0b1``).
* ``check_counter`` values are checked (p4c's BMv2 runner ignores these lines).  Byte counts
  are BMv2's: the packet as received, without an Ethernet FCS.

The runner only uses the public ``Switch`` API (``process``, ``table_*``, ``mc_*``,
``mirroring_add``, ``register_*``, ``counter_*``, ``direct_counter_read``) and
``sw.program.info`` for the names, widths and match kinds of table keys.

Exit codes of :func:`main`: 0 pass, 1 fail, 2 bad input (program or STF error).
"""
from __future__ import annotations

import argparse
import operator
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from emulation.p4.errors import P4Error
from emulation.v1model.load import load_switch
from host_agent.match import Exact, Lpm, Optional_, Range, Ternary

from .action_profiles import INDIRECT_ACTIONS, indirect_action, run_action_profile_command
from .p4c_forms import check_p4c_forms, p4c_table_key_problem, wants_lenient
from .parser import (ActProf, Add, Command, CounterRead, CounterReset, CounterWrite, Expect, Masked,
                     McGroupCreate, McGroupDestroy, McNodeAssociate, McNodeCreate,
                     McNodeDissociate, MirroringAdd, MirroringDelete, NoPacket, Num, Packet,
                     Pattern, Prefix, RangeV, RegisterRead, RegisterReset, RegisterWrite, Remove,
                     SetDefault, StfError, Wait, parse_stf)

__all__ = ["StfResult", "StfError", "run_stf", "run_stf_text", "apply_commands", "main",
           "compare_packet"]

_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


@dataclass
class StfResult:
    ok: bool
    messages: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------ names
def _by_name(items: Sequence[Any], name: str, what: str, where: str = "") -> Any:
    """Full name, then a unique ``.``-suffix, then (as p4c) a unique plain suffix."""
    names = [i.name for i in items]
    for i in items:
        if i.name == name:
            return i
    for pred in (lambda n: n.endswith("." + name), lambda n: n.endswith(name)):
        c = [i for i in items if pred(i.name)]
        if len(c) == 1:
            return c[0]
        if c:
            raise ValueError(f"{what} name {name!r} is ambiguous{where}: {sorted(x.name for x in c)}")
    raise ValueError(f"no {what} named {name!r}{where}; known: {sorted(names)}")


def _norm_key(name: str) -> str:
    """Spelling variants of key names: P4_14/BMv2 ``$valid$`` forms, ``$N`` stack indices."""
    n = name.replace(" ", "")
    for a, b in ((".$valid$", ".isValid()"), ("$valid$", "isValid()"), (".$valid", ".isValid()")):
        if n.endswith(a):
            n = n[:-len(a)] + b
    if n.endswith(".valid"):
        n = n[:-len(".valid")] + ".isValid()"
    n = re.sub(r"\$([0-9]+)", r"[\1]", n)
    return n


def _p4c_spellings(c: str) -> list[str]:
    """The names p4c's runner (bmv2stf.py, ``TableKeyInstance.set``) also tries for an STF
    key ``c``, in its order: ``c$``, ``c.$valid$`` (``data:1`` keys on the validity of
    ``data``, named ``data.$valid$`` by p4c's P4_14 converter) and ``X.valid`` as
    ``X.$valid$``."""
    out = [c + "$", c + ".$valid$"]
    if c.endswith(".valid"):
        out.append(c[:-len("valid")] + "$valid$")
    return out


def _resolve_key(ti: Any, raw: str) -> Any:
    keys = ti.keys
    norm = {k.name.replace(" ", ""): k for k in keys}
    cands = [raw.replace(" ", ""), _norm_key(raw)]
    # a table-qualified key (``ipv4_lpm.hdr.ipv4.dstAddr`` / ``MyIngress.ipv4_lpm.hdr...``)
    short = ti.name.rsplit(".", 1)[-1]
    for c in list(cands):
        for pre in (ti.name + ".", short + "."):
            if c.startswith(pre):
                cands.append(c[len(pre):])
    for c in cands:
        if c in norm:
            return norm[c]
    for c in cands:
        for alt in _p4c_spellings(c):
            if alt in norm:
                return norm[alt]
    for c in cands:
        m = [k for n, k in norm.items() if n.endswith("." + c) or n.endswith("." + c + "$")]
        if len(m) == 1:
            return m[0]
        if len(m) > 1:
            raise ValueError(f"table {ti.name}: key name {raw!r} is ambiguous: {[k.name for k in m]}")
    if raw.strip() == "valid":      # p4c: a lone ``valid`` names the (one) validity key
        m = [k for n, k in norm.items() if n == "$valid$" or n.endswith(".$valid$")
             or n.endswith(".isValid()")]
        if len(m) == 1:
            return m[0]
    raise ValueError(f"table {ti.name}: no key {raw!r}; keys are {[k.name for k in keys]}")


def _table_kind(ti: Any) -> str:
    kinds = {k.match_kind for k in ti.keys}
    if "range" in kinds:
        return "range"
    if kinds & {"ternary", "optional"}:
        return "ternary"
    if "lpm" in kinds:
        return "lpm"
    return "exact"


def _fcs_hint(kind: str, op: str, got: int, want: int, packets: int) -> str:
    """Explain a byte count that is off by exactly 4 bytes a packet.  BMv2 counts a packet's
    length as received (``Packet::get_ingress_length``, no Ethernet FCS); some STF files
    (p4c's ``p4_14_samples/counter3.stf``) were written for targets that count the 4-byte FCS.
    p4c's BMv2 runner never checks them: it ignores ``check_counter`` lines."""
    if kind == "bytes" and op == "==" and packets and want - got == 4 * packets:
        return (f" (4 bytes more a packet: the STF counts a 4-byte FCS; BMv2 counts the packet "
                f"as received, and p4c's BMv2 runner does not check check_counter lines)")
    return ""


# ------------------------------------------------------------------ values
def _fit(v: int, w: int, what: str) -> int:
    if v < 0:
        if w == 0 or v < -(1 << (w - 1)):
            raise ValueError(f"{what}: {v} does not fit in {w} bits")
        v &= (1 << w) - 1          # two's complement, as for int<W> values
    if v >> w:
        raise ValueError(f"{what}: value {v:#x} does not fit in {w} bits")
    return v


def _digit_mask(digits: int, bpd: int, w: int) -> int:
    return ((1 << (digits * bpd)) - 1) & ((1 << w) - 1)


def _prefix_mask(plen: int, w: int) -> int:
    return ((1 << plen) - 1) << (w - plen)


def _prefix_len_of_mask(m: int, w: int) -> int | None:
    for plen in range(w + 1):
        if _prefix_mask(plen, w) == m:
            return plen
    return None


def to_match_spec(key: Any, mv: Any) -> Any:
    """Convert a parsed STF match value to a ``host_agent.match`` spec for ``key``."""
    kind, w, name = key.match_kind, key.width, key.name
    full = (1 << w) - 1
    what = f"key {name}"
    if kind == "exact":
        if isinstance(mv, Num):
            return Exact(_fit(mv.value, w, what))
        if isinstance(mv, Pattern) and mv.wild_digits == 0:
            return Exact(_fit(mv.value, w, what))
        raise ValueError(f"{what} is an exact key; {mv} is not a plain value")
    if kind == "ternary":
        if isinstance(mv, Num):
            if mv.bits_per_digit:      # p4c: only the digits written are significant
                return Ternary(_fit(mv.value, w, what), _digit_mask(mv.digits, mv.bits_per_digit, w))
            return Ternary(_fit(mv.value, w, what), full)
        if isinstance(mv, Pattern):
            if mv.value >> w:
                raise ValueError(f"{what}: value {mv.value:#x} does not fit in {w} bits")
            return Ternary(mv.value, mv.mask & full)
        if isinstance(mv, Masked):
            m = _fit(mv.mask, w, what + " mask")
            return Ternary(_fit(mv.value, w, what) & m, m)
        if isinstance(mv, Prefix):
            if not 0 <= mv.prefix_len <= w:
                raise ValueError(f"{what}: prefix length {mv.prefix_len} out of range 0..{w}")
            m = _prefix_mask(mv.prefix_len, w)
            return Ternary(_fit(mv.value, w, what) & m, m)
        raise ValueError(f"{what} is a ternary key; a range is not allowed")
    if kind == "lpm":
        if isinstance(mv, Prefix):
            if not 0 <= mv.prefix_len <= w:
                raise ValueError(f"{what}: prefix length {mv.prefix_len} out of range 0..{w}")
            return Lpm(_fit(mv.value, w, what) & _prefix_mask(mv.prefix_len, w), mv.prefix_len)
        if isinstance(mv, Num):
            plen = w if not mv.bits_per_digit else min(w, mv.digits * mv.bits_per_digit)
            return Lpm(_fit(mv.value, w, what) & _prefix_mask(plen, w), plen)
        if isinstance(mv, Pattern):
            written = mv.digits * mv.bits_per_digit
            plen = (mv.digits - mv.wild_digits) * mv.bits_per_digit - max(0, written - w)
            plen = max(0, min(w, plen))
            if mv.mask & full != _prefix_mask(plen, w) & mv.mask:
                raise ValueError(f"{what}: '*' digits of an lpm value must be trailing")
            return Lpm(_fit(mv.value, w, what) & _prefix_mask(plen, w), plen)
        if isinstance(mv, Masked):
            plen = _prefix_len_of_mask(mv.mask, w)
            if plen is None:
                raise ValueError(f"{what} is an lpm key; mask {mv.mask:#x} is not a prefix")
            return Lpm(_fit(mv.value, w, what) & mv.mask, plen)
        raise ValueError(f"{what} is an lpm key; a range is not allowed")
    if kind == "range":
        if isinstance(mv, RangeV):
            lo, hi = _fit(mv.low, w, what), _fit(mv.high, w, what)
            if lo > hi:
                raise ValueError(f"{what}: empty range {lo}..{hi}")
            return Range(lo, hi)
        if isinstance(mv, Num):
            v = _fit(mv.value, w, what)
            return Range(v, v)
        if isinstance(mv, (Pattern, Masked)) and (mv.mask & full) == 0:
            return Range(0, full)
        raise ValueError(f"{what} is a range key; use LO..HI or a value")
    if kind == "optional":
        if isinstance(mv, Num):
            return Optional_(_fit(mv.value, w, what))
        if isinstance(mv, (Pattern, Masked)):
            m = mv.mask & full
            if m == 0:
                return Optional_(None)
            if m == full:
                return Optional_(_fit(mv.value, w, what))
        raise ValueError(f"{what} is an optional key; use a value or a full wildcard")
    raise ValueError(f"{what}: match kind {kind!r} is not supported by the STF runner")


# ------------------------------------------------------------------ packets
def compare_packet(pattern: str, exact: bool, data: bytes) -> str | None:
    """``None`` if ``data`` matches the expect pattern, else a one-line reason."""
    got = data.hex().upper()
    n = len(pattern)
    if len(got) < n:
        # find a real difference within what we have, it is more useful than "too short"
        for i, (e, g) in enumerate(zip(pattern, got)):
            if e != "*" and e != g:
                return f"differs at byte {i // 2} (nibble {i})"
        return f"too short: {len(data)} bytes, expected at least {(n + 1) // 2}"
    for i in range(n):
        e = pattern[i]
        if e != "*" and e != got[i]:
            return f"differs at byte {i // 2} (nibble {i})"
    if exact and len(got) > n:
        return f"too long: {len(data)} bytes, expected exactly {(n + 1) // 2} ($)"
    return None


def _first_diff(pattern: str, got: str) -> int | None:
    for i, e in enumerate(pattern):
        if i >= len(got):
            return i
        if e != "*" and e != got[i]:
            return i
    return None


def _spaced(h: str) -> str:
    return " ".join(h[i:i + 2] for i in range(0, len(h), 2))


# ------------------------------------------------------------------ the run
class _Run:
    def __init__(self, sw: Any, filename: str, log: Callable[[str], None] | None, p4c_forms: bool = False):
        self.sw = sw
        self.filename = filename
        self.log = log
        self.p4c_forms = p4c_forms      # refuse key values p4c's runner refuses (p4c_forms.py)
        info = getattr(getattr(sw, "program", None), "info", None)
        self.info = info
        self.ids: dict[str, tuple[str, int]] = {}
        self.mc_nodes: list[int] = []
        self.failures: list[str] = []
        self.notes: list[str] = []
        self.outputs: dict[int, list[tuple[bytes, int]]] = {}
        self.expected: dict[int, list[Expect]] = {}
        self.expect_any: set[int] = set()
        self.interfaces: set[int] = set()
        self.counts = {"packets_in": 0, "packets_out": 0, "expects": 0, "checks": 0,
                       "control": 0}

    # -- helpers
    def err(self, c: Command, msg: str) -> StfError:
        return StfError(msg, self.filename, c.line)

    def fail(self, c: Command | None, msg: str) -> None:
        where = f"{self.filename}:{c.line}: " if c is not None else f"{self.filename}: "
        self.failures.append(where + msg)

    def _log(self, msg: str) -> None:
        if self.log:
            self.log(msg)

    def table_info(self, c: Command, name: str) -> Any:
        if self.info is None:
            raise self.err(c, "the switch exposes no program info (sw.program.info)")
        try:
            return _by_name(self.info.tables, name, "table")
        except ValueError as e:
            raise self.err(c, str(e)) from None

    def action_name(self, c: Command, ti: Any, name: str) -> str:
        try:
            return _by_name(ti.actions, name, "action", f" in table {ti.name}").name
        except ValueError as e:
            raise self.err(c, str(e)) from None

    def action_args(self, c: Command, action: str, args: list) -> dict[str, int] | list[int]:
        ai = None
        for a in self.info.actions:
            if a.name == action:
                ai = a
        if ai is None:
            return [v for _, v in args]
        params = {p.name: p.width for p in ai.params}
        if all(n is None for n, _ in args):
            if len(args) != len(ai.params):
                raise self.err(c, f"action {action} takes {len(ai.params)} argument(s) "
                                  f"{list(params)}, got {len(args)}")
            named = list(zip(params, (v for _, v in args)))
        else:
            if any(n is None for n, _ in args):
                raise self.err(c, f"action {action}: mix of named and positional arguments")
            named = [(str(n), v) for n, v in args]
        out: dict[str, int] = {}
        for n, v in named:
            if n not in params:
                raise self.err(c, f"action {action} has no parameter {n!r}; it takes {list(params)}")
            if n in out:
                raise self.err(c, f"action {action}: parameter {n!r} given twice")
            try:
                out[n] = _fit(v, params[n], f"parameter {n}")
            except ValueError as e:
                raise self.err(c, f"action {action}: {e}") from None
        missing = [p for p in params if p not in out]
        if missing:
            raise self.err(c, f"action {action}: missing parameter(s) {missing}")
        return out

    def call(self, c: Command, fn: Callable, *a: Any, **kw: Any) -> Any:
        """A control-plane call; the switch's refusals become ``file:line:`` errors."""
        try:
            return fn(*a, **kw)
        except KeyError as e:
            raise self.err(c, str(e.args[0]) if e.args else "unknown name") from None
        except ValueError as e:
            raise self.err(c, str(e)) from None
        except (TypeError, IndexError) as e:
            raise self.err(c, f"{type(e).__name__}: {e}") from None

    # -- commands
    def execute(self, c: Command, control_only: bool = False) -> None:
        sw = self.sw
        if isinstance(c, (Packet, Expect, Wait, NoPacket)):
            if control_only:
                raise self.err(c, "only control-plane commands are allowed here")
        else:
            self.counts["control"] += 1
        if isinstance(c, Add):
            ti = self.table_info(c, c.table)
            if c.action.lower() in INDIRECT_ACTIONS:
                action, args = indirect_action(self, c, c.action, c.args)
            else:
                action = self.action_name(c, ti, c.action)
                args = self.action_args(c, action, c.args)
            match: dict[str, Any] = {}
            for kname, mv in c.matches:
                try:
                    k = _resolve_key(ti, kname)
                    if k.name in match:
                        raise ValueError(f"key {k.name} given twice")
                    if self.p4c_forms:
                        problem = p4c_table_key_problem(k.match_kind, kname, mv)
                        if problem:
                            raise ValueError(f"{problem} (or run leniently: --lenient)")
                    match[k.name] = to_match_spec(k, mv)
                except ValueError as e:
                    raise self.err(c, str(e)) from None
            for k in ti.keys:
                if k.name not in match and k.match_kind == "exact":
                    raise self.err(c, f"table {ti.name}: exact key {k.name} needs a value")
            prio = c.priority
            if _table_kind(ti) in ("ternary", "range"):
                if prio is None:
                    prio = 1
            else:
                prio = None
            h = self.call(c, sw.table_add, ti.name, action, match, args, priority=prio)
            if c.handle_id is not None:
                self.ids[c.handle_id] = (ti.name, h)
            self._log(f"  add {ti.name} {match} -> {action}{args} prio={prio} handle={h}")
        elif isinstance(c, SetDefault):
            ti = self.table_info(c, c.table)
            if c.action.lower() in INDIRECT_ACTIONS:
                action, args = indirect_action(self, c, c.action, c.args)
            else:
                action = self.action_name(c, ti, c.action)
                args = self.action_args(c, action, c.args)
            self.call(c, sw.table_set_default, ti.name, action, args)
        elif isinstance(c, ActProf):
            run_action_profile_command(self, c)
        elif isinstance(c, Remove):
            if c.all:
                for ti in self.info.tables if self.info else []:
                    if getattr(ti, "has_const_entries", False):
                        continue
                    for e in list(self.call(c, sw.table_entries, ti.name)):
                        self.call(c, sw.table_delete, ti.name, e.handle)
                self.ids.clear()
            elif c.handle_id is not None:
                if c.handle_id not in self.ids:
                    raise self.err(c, f"no entry named ${c.handle_id}")
                t, h = self.ids.pop(c.handle_id)
                self.call(c, sw.table_delete, t, h)
            else:
                ti = self.table_info(c, c.table or "")
                self.call(c, sw.table_delete, ti.name, c.handle)
        elif isinstance(c, Packet):
            self.interfaces.add(c.port)
            self.counts["packets_in"] += 1
            self._log(f"packet in  port {c.port}: {_spaced(c.data.hex())}")
            try:
                outs = sw.process(c.port, c.data)
            except Exception as e:  # noqa: BLE001 - the program may assert; BMv2 would abort
                self.fail(c, f"processing the packet on port {c.port} raised "
                             f"{type(e).__name__}: {e}")
                return
            for p, data in outs:
                self.counts["packets_out"] += 1
                self._log(f"packet out port {p}: {_spaced(bytes(data).hex())}")
                self.outputs.setdefault(p, []).append((bytes(data), c.line))
        elif isinstance(c, Expect):
            self.interfaces.add(c.port)
            if c.pattern is None:
                self.expect_any.add(c.port)
            else:
                self.counts["expects"] += 1
                self.expected.setdefault(c.port, []).append(c)
        elif isinstance(c, (Wait, NoPacket)):
            pass
        elif isinstance(c, McGroupCreate):
            self.call(c, sw.mc_group_create, c.mgid)
        elif isinstance(c, McGroupDestroy):
            fn = getattr(sw, "mc_group_delete", None)
            if fn is None:
                raise self.err(c, "this switch cannot destroy multicast groups")
            self.call(c, fn, c.mgid)
        elif isinstance(c, McNodeCreate):
            h = self.call(c, sw.mc_node_create, c.rid, list(c.ports))
            self._log(f"  mc node {len(self.mc_nodes)} (rid {c.rid}, ports {c.ports})")
            self.mc_nodes.append(h)
        elif isinstance(c, (McNodeAssociate, McNodeDissociate)):
            if not 0 <= c.handle < len(self.mc_nodes):
                raise self.err(c, f"no multicast node with handle {c.handle} "
                                  f"({len(self.mc_nodes)} created)")
            if isinstance(c, McNodeAssociate):
                self.call(c, sw.mc_node_associate, c.mgid, self.mc_nodes[c.handle])
            else:
                fn = getattr(sw, "mc_node_dissociate", None)
                if fn is None:
                    raise self.err(c, "this switch cannot dissociate multicast nodes")
                self.call(c, fn, c.mgid, self.mc_nodes[c.handle])
        elif isinstance(c, MirroringAdd):
            if c.mgid is not None:
                self.call(c, sw.mirroring_add, c.session, mgid=c.mgid)
            else:
                self.call(c, sw.mirroring_add, c.session, egress_port=c.port)
        elif isinstance(c, MirroringDelete):
            self.call(c, sw.mirroring_delete, c.session)
        elif isinstance(c, RegisterWrite):
            self.call(c, sw.register_write, c.name, c.index, c.value)
        elif isinstance(c, RegisterRead):
            v = self.call(c, sw.register_read, c.name, c.index)
            self._log(f"  register {c.name}[{c.index}] = {v} ({v:#x})")
            if c.expected is not None:
                self.counts["checks"] += 1
                if v != c.expected:
                    self.fail(c, f"register {c.name}[{c.index}] is {v} ({v:#x}), "
                                 f"expected {c.expected} ({c.expected:#x})")
        elif isinstance(c, RegisterReset):
            fn = getattr(sw, "register_reset", None)
            if fn is None:
                raise self.err(c, "this switch cannot reset registers")
            self.call(c, fn, c.name)
        elif isinstance(c, CounterRead):
            pk, by = self.read_counter(c)
            self._log(f"  counter {c.name}({c.index if c.handle_id is None else '$' + c.handle_id})"
                      f" = {pk} packets, {by} bytes")
            for kind, op, want in c.checks:
                self.counts["checks"] += 1
                got = pk if kind == "packets" else by
                if not _OPS[op](got, want):
                    idx = f"${c.handle_id}" if c.handle_id is not None else str(c.index)
                    self.fail(c, f"counter {c.name}({idx}) {kind} is {got}, expected {op} {want}"
                                 f"{_fcs_hint(kind, op, got, want, pk)}")
        elif isinstance(c, CounterWrite):
            self.call(c, sw.counter_write, c.name, c.index, c.packets, c.nbytes)
        elif isinstance(c, CounterReset):
            fn = getattr(sw, "counter_reset", None)
            if fn is None:
                raise self.err(c, "this switch cannot reset counters")
            self.call(c, fn, c.name)
        else:  # pragma: no cover - the parser produces nothing else
            raise self.err(c, f"unsupported command {type(c).__name__}")

    def read_counter(self, c: CounterRead) -> tuple[int, int]:
        sw = self.sw
        if c.handle_id is not None:
            if c.handle_id not in self.ids:
                raise self.err(c, f"no entry named ${c.handle_id} (name one with 'add ... = ID')")
            t, h = self.ids[c.handle_id]
            return self.call(c, sw.direct_counter_read, t, h)
        ext = None
        if self.info is not None:
            counters = [e for e in self.info.externs if e.kind in ("counter", "direct_counter")]
            try:
                ext = _by_name(counters, c.name, "counter")
            except ValueError:
                ext = None
        if ext is not None and ext.kind == "direct_counter":
            if not ext.table:
                raise self.err(c, f"direct counter {ext.name} is bound to no table")
            return self.call(c, sw.direct_counter_read, ext.table, c.index)
        return self.call(c, sw.counter_read, c.name, c.index)

    # -- the final comparison
    def check_outputs(self) -> None:
        ports = sorted(set(self.outputs) | set(self.expected) | self.expect_any)
        for p in ports:
            got = self.outputs.get(p, [])
            if p not in self.interfaces:
                self.notes.append(f"ignored {len(got)} packet(s) on port {p}: no packet/expect "
                                  f"line names it (BMv2 would have no such interface)")
                continue
            if p in self.expect_any:
                if p in self.expected:
                    self.notes.append(f"port {p} has both 'expect {p}' without data and with data; "
                                      f"any packets are accepted there (as p4c does)")
                continue
            exp = self.expected.get(p, [])
            if len(exp) != len(got):
                lines = [f"port {p}: expected {len(exp)} packet(s), got {len(got)}"]
                for i, e in enumerate(exp):
                    lines.append(f"    expected #{i + 1} (line {e.line}): {_spaced(e.pattern or '')}"
                                 f"{' $' if e.exact else ''}")
                for i, (d, ln) in enumerate(got):
                    lines.append(f"    got      #{i + 1} (from packet at line {ln}): {_spaced(d.hex().upper())}")
                self.fail(None, "\n".join(lines))
                # still compare the common prefix: it shows which packet went missing
            for i, (e, (d, ln)) in enumerate(zip(exp, got)):
                why = compare_packet(e.pattern or "", e.exact, d)
                if why is None:
                    continue
                g = d.hex().upper()
                pos = _first_diff(e.pattern or "", g)
                exp_s, got_s = _spaced(e.pattern or ""), _spaced(g)
                caret = ""
                if pos is not None:
                    col = pos + pos // 2      # one space every two nibbles
                    caret = "\n              " + " " * col + "^"
                self.failures.append(
                    f"{self.filename}:{e.line}: port {p}, packet #{i + 1} (from packet at line {ln}) "
                    f"{why}\n    expected: {exp_s}{' $' if e.exact else ''}\n    got:      {got_s}{caret}")


def run_stf_text(sw: Any, text: str, filename: str = "<stf>",
                 log: Callable[[str], None] | None = None, *, p4c_forms: bool = False) -> StfResult:
    """Run an STF text on an existing switch.  Raises :class:`StfError` on bad input; with
    ``p4c_forms``, also on forms p4c's own runner refuses (:mod:`~emulation.stf.p4c_forms`)."""
    if p4c_forms:
        check_p4c_forms(text, filename)
    cmds = parse_stf(text, filename)
    r = _Run(sw, filename, log, p4c_forms)
    lines = text.splitlines()
    for c in cmds:
        if log:
            log(f"{filename}:{c.line}: {lines[c.line - 1].split('#', 1)[0].strip()}")
        r.execute(c)
    r.check_outputs()
    return StfResult(not r.failures, r.failures + r.notes, r.counts)


def run_stf(program_path: str, stf_path: str, include_dirs: Sequence[str] = (),
            log: Callable[[str], None] | None = None, *, allow_target_extensions: bool = False,
            lenient: bool = False) -> StfResult:
    """Compile ``program_path``, run the STF file on a fresh switch.

    The file must use forms p4c's own runner reads too (:mod:`~emulation.stf.p4c_forms`), unless
    ``lenient`` or the file says ``# saatp: lenient-stf``.
    Raises ``P4Error`` (program), :class:`StfError` (test file) or ``OSError``.
    """
    with open(stf_path) as f:
        text = f.read()
    p4c_forms = not lenient and not wants_lenient(text)
    if p4c_forms:
        check_p4c_forms(text, stf_path)  # report STF syntax errors before compiling
    else:
        parse_stf(text, stf_path)
    # with a log (``-v``), the switch prints BMv2-style per-packet lines too (a traced compile)
    sw = load_switch(program_path, include_dirs=list(include_dirs), allow_target_extensions=allow_target_extensions,
                     log=log)
    return run_stf_text(sw, text, stf_path, log, p4c_forms=p4c_forms)


def apply_commands(sw: Any, text: str, filename: str = "<commands>",
                   log: Callable[[str], None] | None = None) -> list[str]:
    """Run only control-plane STF commands (``add``, ``setdefault``, ``mc_*``, ``mirroring_*``,
    ``register_*``, ``counter_*``...) on ``sw``.  ``packet``/``expect`` lines are refused.

    Returns the failed checks (``register_read``/``check_counter`` with a value) as
    ``file:line:`` messages; raises :class:`StfError` for malformed or unusable lines.
    """
    cmds = parse_stf(text, filename)
    r = _Run(sw, filename, log)
    for c in cmds:
        r.execute(c, control_only=True)
    return r.failures


# ------------------------------------------------------------------ CLI
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp p4 stf",
                                 description="run a p4c STF test on the embedded v1model target")
    ap.add_argument("program")
    ap.add_argument("stf")
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--allow-target-extensions", action="store_true",
                    help="accept constructs p4c's BMv2 back end refuses (programs for the embedded target only)")
    ap.add_argument("--lenient", action="store_true",
                    help="accept STF forms p4c's own runner refuses (V&&&M, V/LEN, ranges, odd hex digits, "
                         "act_prof_* ...)")
    try:
        args = ap.parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:       # --help (0) or a usage error (2)
        return 0 if not e.code else 2
    log = print if args.verbose else None
    try:
        res = run_stf(args.program, args.stf, args.include, log=log,
                      allow_target_extensions=args.allow_target_extensions, lenient=args.lenient)
    except StfError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except P4Error as e:
        print(e, file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {getattr(e, 'filename', None) or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    for m in res.messages:
        print(m)
    c = res.counts
    summary = (f"{c.get('packets_in', 0)} packet(s) in, {c.get('packets_out', 0)} out, "
               f"{c.get('expects', 0)} expect(s), {c.get('checks', 0)} check(s)")
    print(f"{'PASS' if res.ok else 'FAIL'}: {args.stf} ({summary})")
    return 0 if res.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
