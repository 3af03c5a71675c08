"""Run-time state of v1model's stateful externs and of the traffic manager.

Each object here is one extern *instance*; the generated code calls its methods
on the packet path, the control-plane API calls the rest.  Semantics follow BMv2
(``v1model-semantics.md``): out-of-bounds register reads leave the destination
unchanged and out-of-bounds writes and counts do nothing; byte counters add the
packet's *ingress* length.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np


class PacketLength:
    """Holds the ingress length of the packet in flight, for byte counters."""
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class Counter:
    """``counter(size, type)`` of v1model (packets, bytes, or both)."""

    def __init__(self, name: str, size: int, unit: str, plen: PacketLength):
        self.name, self.size, self.unit = name, size, unit
        self.packets = [0] * size
        self.bytes = [0] * size
        self._plen = plen

    def count(self, index: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += self._plen.value

    def read(self, index: int) -> tuple[int, int]:
        self._check(index)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        self._check(index)
        self.packets[index], self.bytes[index] = int(packets), int(nbytes)

    def reset(self) -> None:
        self.packets = [0] * self.size
        self.bytes = [0] * self.size

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"counter {self.name}: index {index} out of range 0..{self.size - 1}")


class DirectCounter:
    """``direct_counter(type)``: counts live in the table entries; this gives the length."""

    def __init__(self, name: str, unit: str, plen: PacketLength):
        self.name, self.unit = name, unit
        self._plen = plen
        self.table = None

    def packet_bytes(self) -> int:
        return self._plen.value

    def count(self) -> None:
        """``count()`` is a no-op: BMv2 counts every hit whether or not it is called."""


class Register:
    """``register<T>(size)`` with ``bit<W>``/``int<W>`` cells."""

    def __init__(self, name: str, size: int, width: int, signed: bool = False,
                 log: Callable[[str], None] | None = None):
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self.cells = [0] * size
        self._mask = (1 << width) - 1
        self._log = log

    def read(self, index: int, current: int) -> int:
        """Value at ``index``; out of bounds, BMv2 leaves the destination as it was."""
        if 0 <= index < self.size:
            return int(self.cells[index])
        if self._log:
            self._log(f"register {self.name}: read index {index} out of bounds (size {self.size})")
        return current

    def write(self, index: int, value: int) -> None:
        if 0 <= index < self.size:
            self.cells[index] = value
        elif self._log:
            self._log(f"register {self.name}: write index {index} out of bounds (size {self.size})")

    # control plane
    def get(self, index: int) -> int:
        if not 0 <= index < self.size:
            raise IndexError(f"register {self.name}: index {index} out of range 0..{self.size - 1}")
        return int(self.cells[index])

    def set(self, index: int, value: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"register {self.name}: index {index} out of range 0..{self.size - 1}")
        value = int(value)
        if self.signed:
            half = 1 << (self.width - 1)
            if not -half <= value < half:
                raise ValueError(f"register {self.name}: {value} does not fit in int<{self.width}>")
        elif value < 0 or value > self._mask:
            raise ValueError(f"register {self.name}: {value} does not fit in bit<{self.width}>")
        self.cells[index] = value

    def reset(self) -> None:
        # in place: the generated code holds a reference to this list (or bank row)
        self.cells[:] = [0] * self.size


def bank_registers(regs: Sequence[Register]) -> np.ndarray:
    """A register bank for vectorised lanes: a (len(regs), size) int64 array whose row k
    becomes ``regs[k].cells`` (current contents kept), so scalar code, vector code and the
    control plane see the same cells.  The registers must share size and cell type, W <= 32."""
    size, width, signed = regs[0].size, regs[0].width, regs[0].signed
    if width > 32 or any((r.size, r.width, r.signed) != (size, width, signed) for r in regs):
        raise ValueError("a register bank needs registers of one size and one cell type of at most 32 bits")
    # stored slot-major, (size, K) in memory: the vector code reads and writes one slot's K
    # cells (``bank[:, i]``) as one contiguous row; a register's cells are a strided view
    bank = np.zeros((size, len(regs)), dtype=np.int64).T
    for k, r in enumerate(regs):
        bank[k] = r.cells
        r.cells = bank[k]
    return bank


@dataclass
class MeterConfig:
    cir: float  # committed rate: packets (or bytes) per second
    cburst: int
    pir: float
    pburst: int


class Meter:
    """Two-rate three-colour marker (RFC 2698), as BMv2's meters: GREEN=0, YELLOW=1, RED=2.

    An unconfigured meter marks everything GREEN, as BMv2 does.
    """

    GREEN, YELLOW, RED = 0, 1, 2

    def __init__(self, name: str, size: int, unit: str, plen: PacketLength, now_us: Callable[[], int]):
        self.name, self.size, self.unit = name, size, unit
        self._plen = plen
        self._now_us = now_us
        self.configs: list[MeterConfig | None] = [None] * size
        self._state: list[list[float]] = [[0.0, 0.0, 0.0] for _ in range(size)]  # tc, tp, last_us

    def configure(self, index: int, cfg: MeterConfig | None) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"meter {self.name}: index {index} out of range")
        self.configs[index] = cfg
        if cfg is not None:
            self._state[index] = [float(cfg.cburst), float(cfg.pburst), float(self._now_us())]

    def execute(self, index: int) -> int:
        if not 0 <= index < self.size:
            return self.GREEN
        cfg = self.configs[index]
        if cfg is None:
            return self.GREEN
        st = self._state[index]
        now = self._now_us()
        dt = (now - st[2]) / 1e6
        st[2] = now
        st[0] = min(cfg.cburst, st[0] + dt * cfg.cir)
        st[1] = min(cfg.pburst, st[1] + dt * cfg.pir)
        size = self._plen.value if self.unit == "bytes" else 1
        if st[1] < size:
            return self.RED
        if st[0] < size:
            st[1] -= size
            return self.YELLOW
        st[0] -= size
        st[1] -= size
        return self.GREEN


@dataclass
class McNode:
    rid: int
    ports: list[int]


@dataclass
class PRE:
    """Packet replication engine: multicast groups of (port, rid) and mirroring sessions."""
    groups: dict[int, list[int]] = field(default_factory=dict)          # mgid -> node handles
    nodes: dict[int, McNode] = field(default_factory=dict)
    sessions: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    _next_node: int = 0
    _cache: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def group_create(self, mgid: int) -> None:
        if mgid in self.groups:
            raise ValueError(f"multicast group {mgid} exists")
        if not 0 < mgid < 1 << 16:
            raise ValueError(f"multicast group id {mgid} out of range 1..65535")
        self.groups[mgid] = []
        self._cache.pop(mgid, None)

    def group_delete(self, mgid: int) -> None:
        if mgid not in self.groups:
            raise KeyError(f"no multicast group {mgid}")
        del self.groups[mgid]
        self._cache.pop(mgid, None)

    def node_create(self, rid: int, ports: list[int]) -> int:
        h = self._next_node
        self._next_node += 1
        self.nodes[h] = McNode(int(rid), sorted(int(p) for p in ports))
        return h

    def node_associate(self, mgid: int, handle: int) -> None:
        if mgid not in self.groups:
            raise KeyError(f"no multicast group {mgid}")
        if handle not in self.nodes:
            raise KeyError(f"no multicast node {handle}")
        self.groups[mgid].append(handle)
        self._cache.pop(mgid, None)

    def node_dissociate(self, mgid: int, handle: int) -> None:
        self.groups[mgid].remove(handle)
        self._cache.pop(mgid, None)

    def set_group(self, mgid: int, replicas: list[tuple[int, int]]) -> None:
        """Replace a group's replicas with ``(egress_port, rid)`` pairs (P4Runtime style)."""
        old = self.groups.get(mgid, [])
        for h in old:
            self.nodes.pop(h, None)
        self.groups[mgid] = []
        by_rid: dict[int, list[int]] = {}
        for port, rid in replicas:
            by_rid.setdefault(int(rid), []).append(int(port))
        for rid, ports in by_rid.items():
            self.groups[mgid].append(self.node_create(rid, ports))
        self._cache.pop(mgid, None)

    def replicas(self, mgid: int) -> list[tuple[int, int]]:
        r = self._cache.get(mgid)
        if r is None:
            r = []
            for h in self.groups.get(mgid, ()):
                n = self.nodes[h]
                r.extend((p, n.rid) for p in n.ports)
            self._cache[mgid] = r
        return r

    def mirroring_add(self, session: int, egress_port: int | None = None, mgid: int | None = None) -> None:
        if egress_port is None and mgid is None:
            raise ValueError(f"mirroring session {session} needs an egress port or a multicast group")
        self.sessions[int(session)] = (egress_port, mgid)

    def mirroring_delete(self, session: int) -> None:
        if session not in self.sessions:
            raise KeyError(f"no mirroring session {session}")
        del self.sessions[session]


class ValueSet:
    """A parser ``value_set<bit<W>>(size)``: (value, mask) members, empty until the control
    plane adds some; a select case naming the set matches a key equal to a member under its mask."""

    def __init__(self, name: str, size: int, width: int):
        self.name, self.size, self.width = name, size, width
        self.members: list[tuple[int, int]] = []

    def match(self, key: int) -> bool:
        for v, m in self.members:
            if key & m == v:
                return True
        return False

    def add(self, value: int, mask: int | None = None) -> None:
        full = (1 << self.width) - 1
        mask = full if mask is None else int(mask)
        value = int(value)
        if value < 0 or value > full or mask < 0 or mask > full:
            raise ValueError(f"value set {self.name}: {value:#x}/{mask:#x} does not fit in {self.width} bits")
        if len(self.members) >= self.size:
            raise ValueError(f"value set {self.name}: full ({self.size} members)")
        self.members.append((value & mask, mask))

    def clear(self) -> None:
        self.members.clear()
