"""The embedded v1model switch: BMv2 ``simple_switch``'s packet flow around a compiled program.

``Switch.process(port, frame)`` runs one packet to completion and returns the frames
it emits.  The order of the traffic manager follows BMv2's ``simple_switch.cpp``
(see ``v1model-semantics.md``):

end of ingress: I2E clone -> resubmit (wins over the rest) -> multicast (``mcast_grp``)
-> drop (``egress_spec == drop_port``) -> unicast;
end of egress: E2E clone -> drop -> compute checksums + deparse -> recirculate or out.

The control-plane methods take full names (``MyIngress.ipv4_lpm``) or a unique
dot-separated suffix (``ipv4_lpm``).
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from host_agent.match import MatchSpec

from .externs import PRE, Counter, Meter, MeterConfig, Register, ValueSet
from .runtime import Runtime
from .tables import Table, TableEntry

# instance_type values (BMv2 simple_switch.h)
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6

MAX_PASSES = 64  # guard against resubmit/recirculate loops (BMv2 has none; we refuse to spin forever)


@dataclass(slots=True)
class Frame:
    """Per-pass requests made by externs (clone, resubmit, recirculate, truncate)."""
    clone_session: int | None = None
    clone_fl: int | None = None
    resubmit_fl: int | None = None
    recirc_fl: int | None = None
    truncate: int | None = None


def _resolve(names: Iterable[str], name: str, what: str) -> str:
    names = list(names)
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name)]
    if len(cands) == 1:
        return cands[0]
    if cands:
        raise KeyError(f"{what} name {name!r} is ambiguous: {sorted(cands)}")
    raise KeyError(f"no {what} named {name!r}; known: {sorted(names)}")


class Switch:
    """A v1model switch running one compiled P4 program (an :class:`~emulation.v1model.arch.Program`;
    :mod:`emulation.v1model.load` compiles files and source text)."""

    def __init__(self, program: Any, *, cpu_port: int | None = None, drop_port: int = 511,
                 log: Callable[[str], None] | None = None, clock: Callable[[], float] | None = None,
                 seed: int | None = None):
        if not hasattr(program, "instantiate"):
            raise TypeError(f"Switch takes a compiled program, not {type(program).__name__}; "
                            f"use emulation.v1model.load.load_switch(path) to compile a file")
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.log = log
        self._clock = clock or time.monotonic
        self._t0 = self._clock()
        self.pre = PRE()
        self.digests: list[tuple[str, int, dict[str, int]]] = []
        self.port_stats: dict[int, list[int]] = {}
        self.rt = Runtime(self, seed=seed)
        self.program = program
        self.dp = program.instantiate(self.rt)
        self.tables: dict[str, Table] = self.dp.tables
        self._uses_plen = getattr(program, "uses_packet_length", True)
        self._uses_ts = getattr(program, "uses_timestamps", True)
        self.externs: dict[str, Any] = self.dp.externs

    # ------------------------------------------------------------------ time
    def now_us(self) -> int:
        return int((self._clock() - self._t0) * 1e6) & ((1 << 48) - 1)

    # ------------------------------------------------------------ data plane
    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Run one packet to completion; return ``(egress_port, bytes)`` in emission order."""
        out: list[tuple[int, bytes]] = []
        st = self.port_stats.get(port)
        if st is None:
            st = self.port_stats[port] = [0, 0, 0, 0]
        st[0] += 1
        st[1] += len(frame)
        # work items: ("i", port, bytes, instance_type, preserved) or ("e", phv, port, rid, inst)
        work: deque = deque((("i", port, frame if type(frame) is bytes else bytes(frame), NORMAL, None),))
        passes = 0
        while work:
            item = work.popleft()
            passes += 1
            if passes > MAX_PASSES * 8:
                self._log("packet dropped: too many resubmit/recirculate/clone passes")
                break
            if item[0] == "i":
                self._ingress(item[1], item[2], item[3], item[4], work)
            else:
                self._egress(item[1], item[2], item[3], item[4], work, out)
        ps = self.port_stats
        for p, b in out:
            s = ps.get(p)
            if s is None:
                s = ps[p] = [0, 0, 0, 0]
            s[2] += 1
            s[3] += len(b)
        return out

    def _log(self, msg: str) -> None:
        if self.log:
            self.log(msg)

    def _ingress(self, port: int, data: bytes, inst: int, preserved: Any, work: deque) -> None:
        dp, rt = self.dp, self.rt
        phv = dp.new_phv()
        hdr, meta, sm = phv
        # resubmitted and recirculated packets start with all metadata reset, ingress_port
        # included (BMv2 copy_ingress_pkt); only @field_list fields come back
        sm.ingress_port = port if inst == NORMAL else 0
        sm.instance_type = inst
        sm.packet_length = len(data)
        if self._uses_ts:
            sm.ingress_global_timestamp = self.now_us()
        if preserved is not None:
            dp.restore_fields(meta, preserved)
        rt.plen.value = len(data)
        rt.frame = fr = Frame()
        if self.log: self._log(f"ingress: port {port}, {len(data)} bytes, instance_type {inst}")
        off = dp.parse(data, phv)
        payload = data[off:]
        base = len(data) - hdr._vsize() if self._uses_plen else 0   # packet_length = base + valid header bytes
        dp.verify_checksum(phv, payload)
        dp.ingress(phv)
        # 1. I2E clone: the packet as received by this pass, re-parsed
        if fr.clone_session is not None:
            fl = dp.save_fields(meta, fr.clone_fl)
            self._clone(fr.clone_session, lambda: self._reparse(data, port, INGRESS_CLONE, fl), work)
        # 3. resubmit
        if fr.resubmit_fl is not None:
            work.append(("i", port, data, RESUBMIT, dp.save_fields(meta, fr.resubmit_fl)))
            return
        # 4. multicast
        mgid = sm.mcast_grp
        if mgid:
            reps = self.pre.replicas(mgid)
            if self.log: self._log(f"multicast group {mgid}: {len(reps)} replica(s)")
            for i, (p, rid) in enumerate(reps):
                cp = dp.copy_phv(phv)
                cp[2].egress_rid = rid
                work.append(("e", (cp, payload, base, fr.truncate), p, rid, REPLICATION))
            return
        # 5. drop
        es = sm.egress_spec
        if es == self.drop_port:
            self._log("dropped at end of ingress (egress_spec == drop port)")
            return
        # 6. unicast
        # current simple_switch sets instance_type NORMAL before enqueueing a unicast packet
        work.append(("e", (phv, payload, base, fr.truncate), es, None, NORMAL))

    def _reparse(self, data: bytes, port: int, inst: int, fl: Any) -> tuple:
        dp = self.dp
        phv = dp.new_phv()
        hdr, meta, sm = phv
        sm.packet_length = len(data)     # metadata reset (ingress_port too), as BMv2's clone does
        saved = self.rt.frame
        self.rt.frame = Frame()
        off = dp.parse(data, phv)
        self.rt.frame = saved
        if fl is not None:
            dp.restore_fields(meta, fl)
        sm.instance_type = inst
        return (phv, data[off:], len(data) - hdr._vsize(), None)

    def _clone(self, session: int, make: Callable[[], tuple], work: deque) -> None:
        s = self.pre.sessions.get(session)
        if s is None:
            if self.log: self._log(f"clone to unknown mirroring session {session}: ignored")
            return
        port, mgid = s
        if port is not None:
            work.append(("e", make(), port, None, None))
        if mgid:
            for p, rid in self.pre.replicas(mgid):
                pp = make()
                pp[0][2].egress_rid = rid
                work.append(("e", pp, p, rid, None))

    def _egress(self, pp: tuple, port: int, rid: int | None, inst: int | None, work: deque,
                out: list) -> None:
        dp, rt = self.dp, self.rt
        phv, payload, base, trunc = pp
        hdr, meta, sm = phv
        sm.egress_port = port
        sm.egress_spec = 0  # BMv2 sets drop_port+1, truncated to 9 bits
        if inst is not None:
            sm.instance_type = inst
        if self._uses_ts:
            sm.egress_global_timestamp = self.now_us()
        # BMv2 refreshes packet_length at egress from its length register, which add_header and
        # remove_header (setValid/setInvalid) adjust
        if self._uses_plen:
            sm.packet_length = (base + hdr._vsize()) & 0xFFFFFFFF
        rt.frame = fr = Frame()
        if self.log: self._log(f"egress: port {port}, instance_type {sm.instance_type}")
        dp.egress(phv)
        # 1. E2E clone: a copy of the post-egress PHV goes through egress again
        if fr.clone_session is not None:
            fl = dp.save_fields(meta, fr.clone_fl)

            def make(phv=phv, payload=payload, fl=fl):
                # BMv2 clone_with_phv_reset_metadata: headers copied, metadata reset, then the
                # field list copied over
                cp = (phv[0]._copy(), dp.M(), dp.SM())
                if fl is not None:
                    dp.restore_fields(cp[1], fl)
                cp[2].instance_type = EGRESS_CLONE
                return (cp, payload, base, None)
            self._clone(fr.clone_session, make, work)
        # 2. drop
        if sm.egress_spec == self.drop_port:
            self._log("dropped at end of egress (mark_to_drop)")
            return
        # 3. deparse
        dp.compute_checksum(phv, payload)
        data = dp.deparse(phv, payload)
        if fr.truncate is not None:
            data = data[:fr.truncate]
        elif trunc is not None:             # truncate() called in ingress applies on output
            data = data[:trunc]
        # 4. recirculate
        if fr.recirc_fl is not None:
            work.append(("i", port, data, RECIRC, dp.save_fields(meta, fr.recirc_fl)))
            return
        out.append((port, data))

    # --------------------------------------------------------- control plane
    def table(self, name: str) -> Table:
        return self.tables[_resolve(self.tables, name, "table")]

    def _extern(self, name: str, kind: type | tuple) -> Any:
        names = [n for n, o in self.externs.items() if isinstance(o, kind)]
        return self.externs[_resolve(names, name, getattr(kind, "__name__", "extern"))]

    def table_add(self, table: str, action: str, match: dict[str, MatchSpec] | Sequence = (),
                  args: dict[str, int] | Sequence[int] = (), priority: int | None = None) -> int:
        return self.table(table).add(match, action, args, priority)

    def table_modify(self, table: str, handle: int, action: str, args: Any = ()) -> None:
        self.table(table).modify(handle, action, args)

    def table_delete(self, table: str, handle: int) -> None:
        self.table(table).delete(handle)

    def table_set_default(self, table: str, action: str, args: Any = ()) -> None:
        self.table(table).set_default(action, args)

    def table_entries(self, table: str) -> list[TableEntry]:
        return self.table(table).entries()

    def table_clear(self, table: str) -> None:
        self.table(table).clear()

    def register(self, name: str):
        return self._extern(name, Register)

    def register_read(self, name: str, index: int) -> int:
        return self.register(name).get(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        self.register(name).set(index, value)

    def register_reset(self, name: str) -> None:
        self.register(name).reset()

    def counter(self, name: str) -> Counter:
        return self._extern(name, Counter)

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self.counter(name).read(index)

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        self.counter(name).write(index, packets, nbytes)

    def counter_reset(self, name: str) -> None:
        self.counter(name).reset()

    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        e = self.table(table).entry(handle)
        return e.packets, e.bytes

    def meter_configure(self, name: str, index: int, cir: float, cburst: int, pir: float, pburst: int) -> None:
        self._extern(name, Meter).configure(index, MeterConfig(cir, cburst, pir, pburst))

    def mc_group_create(self, mgid: int) -> None:
        self.pre.group_create(mgid)

    def mc_group_delete(self, mgid: int) -> None:
        self.pre.group_delete(mgid)

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        return self.pre.node_create(rid, list(ports))

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        self.pre.node_associate(mgid, handle)

    def mc_node_dissociate(self, mgid: int, handle: int) -> None:
        self.pre.node_dissociate(mgid, handle)

    def mc_set_group(self, mgid: int, replicas: Sequence[tuple[int, int]]) -> None:
        self.pre.set_group(mgid, list(replicas))

    def mirroring_add(self, session: int, egress_port: int | None = None, mgid: int | None = None) -> None:
        self.pre.mirroring_add(session, egress_port, mgid)

    def value_set_add(self, name: str, value: int, mask: int | None = None) -> None:
        """Add a member to a parser value set (``mask`` None = exact)."""
        self._extern(name, ValueSet).add(value, mask)

    def value_set_clear(self, name: str) -> None:
        self._extern(name, ValueSet).clear()

    def mirroring_delete(self, session: int) -> None:
        self.pre.mirroring_delete(session)
