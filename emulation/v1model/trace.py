"""Per-packet trace lines in the shape BMv2 prints them with ``--log-console``/``--log-file``.

BMv2 (``src/bm_sim/logger.h``) prefixes every line with ``[HH:MM:SS.mmm] [bmv2] [L] [thread N]``
(L: T trace, D debug, I info, W warn, E error) and, for a line about a packet,
``[packet_id.copy_id] [cxt 0]``; a line tied to a place in the program (a condition) also
carries ``file(line)`` (``BMLOG_TRACE_SI_PKT``).  The messages follow BMv2's own texts:

* ``simple_switch.cpp``: ``Processing packet received on port N``, ``Egress port is N``,
  ``Dropping packet at the end of ingress``/``egress``, ``Cloning packet at ingress``,
  ``Resubmitting packet``, ``Multicast requested for packet``, ``Replicating packet on port N``,
  ``Recirculating packet``, ``Transmitting packet of size N out of port N``;
* ``parser.cpp``: ``Parser 'parser': start``, ``Parser 'parser' entering state 'S'``,
  ``Extracting header 'H'``, ``Parser state 'S': key is HEX``, ``Parser state 'S' has no switch,
  going to default next state``, ``Exception while parsing: E``, ``Parser 'parser': end``;
* ``pipeline.cpp``: ``Pipeline 'ingress': start``/``end``;
* ``tables.cpp``/``match_tables.cpp``/``match_units.cpp``: ``Applying table 'T'``,
  ``Looking up key:`` (one ``* name : hex`` line per key, names padded to 20),
  ``Table 'T': hit with handle N`` or ``Table 'T': miss``, ``Action entry is A - d1,d2,``;
* ``conditionals.cpp``: ``file(line) Condition "text" (node_N) is true``;
* ``deparser.cpp``: ``Deparser 'deparser': start``, ``Deparsing header 'H'``, ``... end``.

The per-construct lines (states, extracts, select keys, tables, actions, conditions) come from
code the compiler generates only for a program compiled with ``trace=True``
(``emulation.v1model.load``); a program compiled without it has no trace calls at all.  The
packet-level lines come from :class:`~emulation.v1model.switch.Switch`, only when it has a log.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

KEY_NAME_WIDTH = 20     # BMv2 pads key names to max(20, longest name)


_per_thread = threading.local()     # (second, "HH:MM:SS", thread id): formatted once a second


def bmv2_prefix(level: str) -> str:
    """``[HH:MM:SS.mmm] [bmv2] [L] [thread N] `` for the current time and thread."""
    t = time.time()
    sec = int(t)
    c = getattr(_per_thread, "c", None)
    if c is None or c[0] != sec:
        tid = c[2] if c is not None else threading.get_native_id()
        c = _per_thread.c = (sec, time.strftime("%H:%M:%S", time.localtime(t)), tid)
    return f"[{c[1]}.{int((t - sec) * 1000):03d}] [bmv2] [{level}] [thread {c[2]}] "


def bmv2_line(level: str, msg: str) -> str:
    """A BMv2-style line not tied to a packet (``BMLOG_DEBUG``)."""
    return bmv2_prefix(level) + msg


LEVELS = "TDIWE"        # trace, debug, info, warn, error: BMv2's -L levels in order


def trace_levels(lowest: str) -> str:
    """The level letters shown at ``-L lowest`` (``trace`` ... ``error``; ``off``: none)."""
    if lowest == "off":
        return ""
    return LEVELS[LEVELS.index({"warn": "W"}.get(lowest, lowest[:1].upper())):]


def line_level(line: str) -> str:
    """The level letter of a line made here (``[..] [bmv2] [D] ...``); "I" for any other line."""
    i = line.find("] [bmv2] [")
    return line[i + 10] if i >= 0 and len(line) > i + 10 else "I"


def _hex_bytes(v: Any, width: int) -> str:
    """A value as BMv2 dumps a field: its bytes ((width + 7) // 8 of them) in hex."""
    v = int(v) if isinstance(v, (int, bool)) else 0     # bool keys are bit<1>
    return f"{v & ((1 << width) - 1):0{((width + 7) // 8) * 2}x}"


class Tracer:
    """Writes BMv2-style lines for the packet in flight to ``sink`` (one call per line).

    ``pkt`` and ``copy`` are the packet id and copy id BMv2 prints as ``[pkt.copy]``; the switch
    sets them.  The generated code of a program compiled with tracing calls the methods below.
    """

    def __init__(self, sink: Callable[[str], None], errors: Sequence[str] = ()):
        self.sink = sink
        self.errors = list(errors)
        self.pkt = 0
        self.copy = 0
        self._action_names: dict[int, dict[int, str]] = {}
        self._key: Any = None           # the key of the table being applied

    # ---------------------------------------------------------------- lines
    def line(self, level: str, msg: str) -> None:
        self.sink(f"{bmv2_prefix(level)}[{self.pkt}.{self.copy}] [cxt 0] {msg}")

    def debug(self, msg: str) -> None:
        self.line("D", msg)

    def trace(self, msg: str) -> None:
        self.line("T", msg)

    def error(self, msg: str) -> None:
        self.line("E", msg)

    def error_name(self, code: int) -> str:
        return self.errors[code] if 0 <= code < len(self.errors) else str(code)

    # --------------------------------------------------------------- parser
    def state(self, name: str) -> None:
        self.debug(f"Parser 'parser' entering state '{name}'")

    def extract(self, header: str) -> None:
        self.debug(f"Extracting header '{header}'")

    def select_key(self, state: str, keys: Sequence[tuple[int, int]]) -> None:
        self.debug(f"Parser state '{state}': key is {''.join(_hex_bytes(v, w) for v, w in keys)}")

    def no_switch(self, state: str) -> None:
        self.debug(f"Parser state '{state}' has no switch, going to default next state")

    # ------------------------------------------------------------- controls
    def condition(self, where: str, text: str, node: str, value: Any) -> Any:
        """``where``: ``"file(line) "`` or empty; returns ``value`` (the generated ``if`` tests it)."""
        self.trace(f'{where}Condition "{text}" ({node}) is {"true" if value else "false"}')
        return value

    def table_lookup(self, table: Any, key: Any) -> None:
        self.trace(f"Applying table '{table.name}'")
        vals = key if len(table.keys) != 1 else (key,)
        w = max([KEY_NAME_WIDTH] + [len(k.name) for k in table.keys])
        rows = "".join(f"* {k.name:<{w}}: {_hex_bytes(v, k.width)}\n" for k, v in zip(table.keys, vals))
        self.debug(f"Looking up key:\n{rows}")
        self._key = key

    def table_result(self, table: Any, r: tuple) -> None:
        if r[2]:
            entry = table.entry_for_key(self._key)
            handle = entry.handle if entry is not None else -1
            self.debug(f"Table '{table.name}': hit with handle {handle}")
            if entry is not None:
                self.debug(self._dump_entry(table, entry, r))
        else:
            self.debug(f"Table '{table.name}': miss")
        self.debug(f"Action entry is {self._action_entry(table, r)}")

    def _action_entry(self, table: Any, r: tuple) -> str:
        names = self._action_names.get(id(table))
        if names is None:
            names = self._action_names[id(table)] = {a.index: a.name for a in table.actions.values()}
        return f"{names.get(r[3], '?')} - {''.join(f'{v:x},' for v in r[1])}"

    def _dump_entry(self, table: Any, entry: Any, r: tuple) -> str:
        """BMv2's ``Dumping entry N`` block: the entry's match key and action."""
        w = max([KEY_NAME_WIDTH] + [len(k.name) for k in table.keys])
        rows = []
        for k in table.keys:
            m = entry.match.get(k.name)
            v = getattr(m, "value", m)
            if hasattr(m, "prefix_len"):
                rows.append(f"* {k.name:<{w}}: LPM       {_hex_bytes(v, k.width)}/{m.prefix_len}")
            elif hasattr(m, "mask"):
                rows.append(f"* {k.name:<{w}}: TERNARY   {_hex_bytes(v, k.width)} &&& {_hex_bytes(m.mask, k.width)}")
            elif hasattr(m, "low"):
                rows.append(f"* {k.name:<{w}}: RANGE     {_hex_bytes(m.low, k.width)} -> "
                            f"{_hex_bytes(m.high, k.width)}")
            elif isinstance(v, int):
                rows.append(f"* {k.name:<{w}}: {k.match_kind.upper():<10}{_hex_bytes(v, k.width)}")
            else:
                rows.append(f"* {k.name:<{w}}: {k.match_kind.upper():<10}*")
        prio = f"Priority: {entry.priority}\n" if entry.priority is not None else ""
        body = "".join(row + "\n" for row in rows)
        return f"Dumping entry {entry.handle}\nMatch key:\n{body}{prio}Action entry: {self._action_entry(table, r)}\n"

    def action(self, name: str) -> None:
        self.trace(f"Action {name}")

    # ------------------------------------------------------------- deparser
    def deparse(self, header: str) -> None:
        self.debug(f"Deparsing header '{header}'")


class NullTracer(Tracer):
    """A tracer that writes nothing: for a program compiled with tracing on a switch without a
    log (the generated code calls it; ``condition`` still returns the value it tests)."""

    def __init__(self, errors: Sequence[str] = ()):
        super().__init__(lambda _line: None, errors)

    def line(self, level: str, msg: str) -> None:
        pass

    def state(self, name: str) -> None:
        pass

    def extract(self, header: str) -> None:
        pass

    def select_key(self, state: str, keys: Sequence[tuple[int, int]]) -> None:
        pass

    def no_switch(self, state: str) -> None:
        pass

    def condition(self, where: str, text: str, node: str, value: Any) -> Any:
        return value

    def table_lookup(self, table: Any, key: Any) -> None:
        pass

    def table_result(self, table: Any, r: tuple) -> None:
        pass

    def action(self, name: str) -> None:
        pass

    def deparse(self, header: str) -> None:
        pass
