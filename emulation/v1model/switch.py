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
from typing import Any, Callable, Iterable, Sequence

from emulation.p4.pyrt import P4Exit as _P4Exit
from emulation.p4.pyrt import PacketIn as _PacketIn
from emulation.p4.pyrt import PacketOut as _PacketOut
from emulation.p4.pyrt import ParserReject as _ParserReject
from host_agent.match import MatchSpec

from .action_profiles import GROUP, MEMBER, ActionProfile, IndirectTable
from .externs import PRE, Counter, Meter, MeterConfig, Register, ValueSet
from .runtime import Frame, Runtime  # Frame: the requests of one pass
from .tables import Table, TableEntry
from .trace import NullTracer, Tracer

# instance_type values (BMv2 simple_switch.h)
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6

MAX_PASSES = 64  # guard against resubmit/recirculate loops (BMv2 has none; we refuse to spin forever)


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
        # egress_spec as egress starts: drop_port + 1 in the 9-bit field (simple_switch's
        # egress_thread), 0 for the default 511 and never the drop port itself
        self._egress_spec0 = (drop_port + 1) & 0x1FF
        self.log = log
        self._clock = clock or time.monotonic
        self._t0 = self._clock()
        if clock is None:       # the real clock: integer nanoseconds, no float arithmetic per packet
            self._t0_ns = time.monotonic_ns()
            self._t0 = self._t0_ns / 1e9      # the same origin for users of _clock (queues.py)
            self.now_us = self._now_us_real
        self.pre = PRE()
        self.digests: list[tuple[str, int, dict[str, int]]] = []
        self.port_stats: dict[int, list[int]] = {}
        self.rt = Runtime(self, seed=seed)
        # BMv2-style per-packet lines (trace.py): the switch's own lines when it has a log; the
        # program's (states, tables, conditions...) when it was also compiled with trace=True
        self.tracer = None
        if log is not None or getattr(program, "traced", False):
            errors = getattr(program, "errors", ())
            self.tracer = Tracer(log, errors) if log is not None else NullTracer(errors)
            self._tr_ids: dict[int, tuple[int, int]] = {}    # id(standard metadata) -> (packet, copy)
            self._tr_next = 0
        self.rt.tracer = self.tracer
        if log is not None:     # log_msg and extern warnings: BMv2-style info lines
            self.rt.log_fn = lambda msg: self.tracer.line("I", msg)
        self.program = program
        self.dp = program.instantiate(self.rt)
        self.tables: dict[str, Table] = self.dp.tables
        self._uses_plen = getattr(program, "uses_packet_length", True)
        self._uses_ts = getattr(program, "uses_timestamps", True)
        self.externs: dict[str, Any] = self.dp.externs
        self._H, self._M, self._SM = self.dp.H, self.dp.M, self.dp.SM
        self._pkt_in, self._pkt_out = _PacketIn(b""), _PacketOut()   # reused by process

    # ------------------------------------------------------------------ time
    def now_us(self) -> int:
        return int((self._clock() - self._t0) * 1e6) & ((1 << 48) - 1)

    def _now_us_real(self, _ns=time.monotonic_ns, _mask=(1 << 48) - 1) -> int:
        return (_ns() - self._t0_ns) // 1000 & _mask

    # ------------------------------------------------------- egress queues
    queues: Any = None   # EgressQueues (emulation/v1model/queues.py) once attached

    def attach_queues(self, queues: Any) -> None:
        """Put egress queues (BMv2's traffic manager: depth, rate, priorities; see
        ``emulation/v1model/queues.py``) between ingress and egress, or take them away (None).
        With queues, ``process`` and ``advance`` are the queued path ``queues.bind`` gives;
        without (the default) every packet runs to completion in ``process``."""
        self.__dict__.pop("process", None)
        self.__dict__.pop("advance", None)
        self.queues = queues
        if queues is not None:
            self.process, self.advance = queues.bind(self)

    def advance(self, now: float | None = None) -> list[tuple[int, bytes]]:
        """Frames the egress queues release by ``now`` (switch clock); none without queues."""
        return []

    # ------------------------------------------------------------ data plane
    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Run one packet to completion; return ``(egress_port, bytes)`` in emission order.

        Without a log this is the hot path: the first ingress pass, and the egress passes and
        deparsing of its unicast copy or multicast replicas when ingress asked for nothing
        else, run here with :meth:`_ingress_pass`, :meth:`Datapath.front
        <emulation.v1model.arch.Datapath.front>`, :meth:`_finish_ingress`, :meth:`_egress_pass`
        and ``back`` written out inline (a Python call costs about as much as a table lookup;
        keep them in step).  Anything else (clone, resubmit, recirculate, truncate, in ingress
        or in a copy's egress) continues in the traffic manager's work queue, as in
        :meth:`_process_logged`."""
        if self.log:
            return self._process_logged(port, frame)
        data = frame if type(frame) is bytes else bytes(frame)
        n = len(data)
        ps = self.port_stats
        st = ps.get(port)
        if st is None:
            st = ps[port] = [0, 0, 0, 0]
        st[0] += 1
        st[1] += n
        out: list[tuple[int, bytes]] = []
        rt, dp = self.rt, self.dp
        # ---- ingress pass (_ingress_pass + Datapath.front)
        hdr, meta, sm = phv = (self._H(), self._M(), self._SM())
        sm.ingress_port = port
        sm.packet_length = n
        if self._uses_ts:
            sm.ingress_global_timestamp = self.now_us()
        rt.plen.value = n
        rt.frame = None
        pkt = self._pkt_in          # one reader object, reset per packet (nothing keeps it)
        pkt.buf = data
        pkt.off = 0
        pkt.n = n
        try:
            dp._p(pkt, hdr, meta, sm)
        except _ParserReject as e:
            sm.parser_error = e.code
        off = pkt.off
        payload = data[off:] if off else data
        uses_plen = self._uses_plen
        base = n - hdr._vsize() if uses_plen else 0
        if dp._vr_live:
            rt.cksum_error = 0
            rt.payload = payload
            dp._vr(hdr, meta)
            if rt.cksum_error:
                sm.checksum_error = 1
        rt.sm = sm
        try:
            dp._ig(hdr, meta, sm)
        except _P4Exit:
            pass
        if rt.frame is not None:
            work: deque = deque()
            self._finish_ingress(port, data, (phv, payload, base, None), rt.frame, work)
            self._run_work(work, out)
            self._count_out(out)
            return out
        # ---- the traffic manager for a unicast or multicast packet (_finish_ingress), then
        # each copy's egress pass (_egress_pass + Datapath.egress) and deparser (Datapath.back)
        drop = self.drop_port
        mgid = sm.mcast_grp
        if mgid:
            # every replica gets its own PHV, all copied before any egress runs; the last one
            # takes the packet's own
            reps = self.pre.replicas(mgid)
            copies = [dp.copy_phv(phv) for _ in range(len(reps) - 1)]
            copies.append(phv)
            inst = REPLICATION
        else:
            es = sm.egress_spec
            if es == drop:
                return out
            if not dp._eg_live:
                # unicast through an empty egress control (a router): the copy loop below for
                # its one NORMAL copy, with nothing left that egress could request
                sm.egress_port = es
                sm.egress_spec = self._egress_spec0
                sm.instance_type = NORMAL     # (current simple_switch: NORMAL)
                if self._uses_ts:
                    sm.egress_global_timestamp = self.now_us()
                if uses_plen:
                    sm.packet_length = (base + hdr._vsize()) & 0xFFFFFFFF
                if dp._ck_live:
                    rt.payload = payload
                    dp._ck(hdr, meta)
                po = self._pkt_out
                po.parts = parts = []
                dp._dep(po, hdr)
                if payload:
                    parts.append(payload)
                b = b"".join(parts) if len(parts) != 1 else parts[0]
                s = ps.get(es)
                if s is None:
                    s = ps[es] = [0, 0, 0, 0]
                s[2] += 1
                s[3] += len(b)
                return [(es, b)]
            reps, copies, inst = ((es, -1),), (phv,), NORMAL   # (current simple_switch: NORMAL)
        uses_ts, eg_live, ck_live = self._uses_ts, dp._eg_live, dp._ck_live
        po = self._pkt_out
        work = None
        spec0 = self._egress_spec0
        for (p, rid), cp in zip(reps, copies):
            hdr, meta, sm = cp
            if rid >= 0:
                sm.egress_rid = rid
            sm.egress_port = p
            sm.egress_spec = spec0
            sm.instance_type = inst
            if uses_ts:
                sm.egress_global_timestamp = self.now_us()
            if uses_plen:
                sm.packet_length = (base + hdr._vsize()) & 0xFFFFFFFF
            rt.frame = None
            if eg_live:
                rt.sm = sm
                try:
                    dp._eg(hdr, meta, sm)
                except _P4Exit:
                    pass
            if rt.frame is not None:
                # a clone, recirculation or truncation: the work queue, after the other copies
                if work is None:
                    work = deque()
                self._finish_egress((cp, payload, base, None), p, rt.frame, work, out)
                continue
            if sm.egress_spec == drop:
                continue
            if ck_live:
                rt.payload = payload
                dp._ck(hdr, meta)
            po.parts = parts = []
            dp._dep(po, hdr)
            if payload:
                parts.append(payload)
            out.append((p, b"".join(parts) if len(parts) != 1 else parts[0]))
        if work:
            self._run_work(work, out, passes=1 + len(reps))
        for p, b in out:           # _count_out, inline
            s = ps.get(p)
            if s is None:
                s = ps[p] = [0, 0, 0, 0]
            s[2] += 1
            s[3] += len(b)
        return out

    def _count_out(self, out: list[tuple[int, bytes]]) -> None:
        ps = self.port_stats
        for p, b in out:
            s = ps.get(p)
            if s is None:
                s = ps[p] = [0, 0, 0, 0]
            s[2] += 1
            s[3] += len(b)

    def _process_logged(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """:meth:`process` with BMv2-style trace lines: the common case (no clone,
        resubmit, recirculate, truncate or multicast requested) runs ingress and egress
        straight through; as soon as a pass requests any of those, the rest of the packet
        goes through the traffic manager's work queue.  Both use the same pass functions."""
        data = frame if type(frame) is bytes else bytes(frame)
        ps = self.port_stats
        st = ps.get(port)
        if st is None:
            st = ps[port] = [0, 0, 0, 0]
        st[0] += 1
        st[1] += len(data)
        out: list[tuple[int, bytes]] = []
        rt = self.rt
        pp = self._ingress_pass(port, data, NORMAL, None)
        sm = pp[0][2]
        if rt.frame is None and not sm.mcast_grp:
            es = sm.egress_spec
            if self.log: self._trace_egress_port(es)
            if es == self.drop_port:
                return out
            # current simple_switch sets instance_type NORMAL before enqueueing a unicast packet
            self._egress_pass(pp, es, NORMAL)
            if rt.frame is None:
                if sm.egress_spec == self.drop_port:
                    if self.log: self.tracer.debug("Dropping packet at the end of egress")
                    return out
                b = self._deparse(pp)
                if self.log: self.tracer.debug(f"Transmitting packet of size {len(b)} out of port {es}")
                out.append((es, b))
                s = ps.get(es)
                if s is None:
                    s = ps[es] = [0, 0, 0, 0]
                s[2] += 1
                s[3] += len(b)
                return out
            work: deque = deque()
            self._finish_egress(pp, es, rt.frame, work, out)
        else:
            work = deque()
            self._finish_ingress(port, data, pp, rt.frame, work)
        self._run_work(work, out)
        for p, b in out:
            s = ps.get(p)
            if s is None:
                s = ps[p] = [0, 0, 0, 0]
            s[2] += 1
            s[3] += len(b)
        return out

    def _run_work(self, work: deque, out: list | None, passes: int = 1,
                  egress: Callable[[tuple, int], None] | None = None) -> None:
        """The traffic manager's queue: ("i", port, bytes, instance_type, preserved) for an
        ingress pass, ("e", (phv, payload, base, truncate), port, rid, instance_type) for egress.
        ``egress`` (the egress queues, :mod:`.queues`) takes the egress items instead, with the
        number of passes behind them; ``passes`` counts the passes already made."""
        rt = self.rt
        while work:
            item = work.popleft()
            passes += 1
            if passes > MAX_PASSES * 8:
                self._log("packet dropped: too many resubmit/recirculate/clone passes")
                break
            if item[0] == "i":
                pp = self._ingress_pass(item[1], item[2], item[3], item[4])
                self._finish_ingress(item[1], item[2], pp, rt.frame, work)
            elif egress is not None:
                egress(item, passes)
            else:
                pp = item[1]
                self._egress_pass(pp, item[2], item[4])
                self._finish_egress(pp, item[2], rt.frame, work, out)

    def _log(self, msg: str) -> None:
        if self.log:
            self.tracer.debug(msg)

    # BMv2-style trace lines of the switch itself (trace.py; called only when there is a log)
    def _trace_received(self, port: int, inst: int) -> None:
        tr = self.tracer
        if inst == NORMAL:              # a new packet id; resubmit/recirculate keep theirs
            tr.pkt, tr.copy = self._tr_next, 0
            self._tr_next += 1
        tr.debug(f"Processing packet received on port {port}")
        tr.debug("Parser 'parser': start")

    def _trace_parsed(self, sm: Any) -> None:
        tr = self.tracer
        if sm.parser_error:
            tr.error(f"Exception while parsing: {tr.error_name(sm.parser_error)}")
        tr.debug("Parser 'parser': end")
        tr.debug("Pipeline 'ingress': start")

    def _trace_egress_port(self, es: int) -> None:
        self.tracer.debug(f"Egress port is {es}")
        if es == self.drop_port:
            self.tracer.debug("Dropping packet at the end of ingress")

    def _trace_egress_start(self, sm: Any) -> None:
        ids = self._tr_ids.pop(id(sm), None)
        if ids is not None:
            self.tracer.pkt, self.tracer.copy = ids
        self.tracer.debug("Pipeline 'egress': start")

    def _ingress_pass(self, port: int, data: bytes, inst: int, preserved: Any) -> tuple:
        """Parse, verify checksums and run ingress; ``rt.frame`` then holds the pass's requests.
        Returns ``(phv, payload, base, None)`` (base: packet_length minus valid header bytes)."""
        dp, rt = self.dp, self.rt
        phv = (self._H(), self._M(), self._SM())
        meta, sm = phv[1], phv[2]
        # resubmitted and recirculated packets start with all metadata reset, ingress_port
        # included (BMv2 copy_ingress_pkt); only @field_list fields come back
        n = len(data)
        if inst == NORMAL:
            sm.ingress_port = port
        else:
            sm.instance_type = inst
        sm.packet_length = n
        if self._uses_ts:
            sm.ingress_global_timestamp = self.now_us()
        if preserved is not None:
            dp.restore_fields(meta, preserved)
        rt.plen.value = n
        rt.frame = None
        if not self.log:
            # packet_length = base + valid header bytes
            payload, base = dp.front(data, phv, self._uses_plen)
            return (phv, payload, base, None)
        self._trace_received(port, inst)
        payload, base = dp.front(data, phv, self._uses_plen, self._trace_parsed)
        self.tracer.debug("Pipeline 'ingress': end")
        self._tr_ids[id(sm)] = (self.tracer.pkt, self.tracer.copy)
        return (phv, payload, base, None)

    def _finish_ingress(self, port: int, data: bytes, pp: tuple, fr: Frame | None, work: deque) -> None:
        """The traffic manager at the end of ingress, in BMv2's order."""
        dp = self.dp
        phv, payload, base, _ = pp
        meta, sm = phv[1], phv[2]
        trunc = None
        if fr is not None:
            trunc = fr.truncate
            # 1. I2E clone: the packet as received by this pass, re-parsed
            if fr.clone_session is not None:
                if self.log: self.tracer.debug("Cloning packet at ingress")
                fl = dp.save_fields(meta, fr.clone_fl)
                self._clone(fr.clone_session, lambda: self._reparse(data, port, INGRESS_CLONE, fl), work)
            # 3. resubmit
            if fr.resubmit_fl is not None:
                if self.log: self.tracer.debug("Resubmitting packet")
                work.append(("i", port, data, RESUBMIT, dp.save_fields(meta, fr.resubmit_fl)))
                return
        # 4. multicast
        mgid = sm.mcast_grp
        if mgid:
            reps = self.pre.replicas(mgid)
            if self.log: self.tracer.debug("Multicast requested for packet")
            last = len(reps) - 1 if not self.log else -1
            for i, (p, rid) in enumerate(reps):
                # every replica gets its own PHV; the last one can take the packet's own, which
                # nothing reads after this point (all copies are made before any egress runs)
                cp = phv if i == last else dp.copy_phv(phv)
                cp[2].egress_rid = rid
                if self.log:
                    self.tracer.debug(f"Replicating packet on port {p}")
                    self._tr_ids[id(cp[2])] = (self.tracer.pkt, i + 1)
                work.append(("e", (cp, payload, base, trunc), p, rid, REPLICATION))
            return
        # 5. drop
        es = sm.egress_spec
        if self.log: self._trace_egress_port(es)
        if es == self.drop_port:
            return
        # 6. unicast
        # current simple_switch sets instance_type NORMAL before enqueueing a unicast packet
        work.append(("e", (phv, payload, base, trunc), es, None, NORMAL))

    def _reparse(self, data: bytes, port: int, inst: int, fl: Any) -> tuple:
        """An I2E clone, as BMv2's ingress_thread makes it (simple_switch.cpp, INGRESS CLONING):
        the packet as received is parsed again with the real ``ingress_port`` (parsers may
        branch on it), then ``copy_field_list_and_set_type`` resets all metadata (what the
        parser wrote, ``ingress_port`` too) and copies back only the field list ``fl``."""
        dp = self.dp
        hdr, meta, sm = dp.new_phv()
        sm.ingress_port = port
        sm.packet_length = len(data)
        saved = self.rt.frame
        self.rt.frame = None
        payload, base = dp.front(data, (hdr, meta, sm), run=False)
        self.rt.frame = saved
        _hdr, meta, sm = dp.new_phv()    # reset_metadata(): only the parsed headers are kept
        sm.packet_length = len(data)
        if fl is not None:
            dp.restore_fields(meta, fl)
        sm.instance_type = inst
        return ((hdr, meta, sm), payload, base, None)

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

    def _egress_pass(self, pp: tuple, port: int, inst: int | None) -> None:
        """Run egress on ``pp`` for ``port``; ``rt.frame`` then holds the pass's requests."""
        phv, _payload, base, _trunc = pp
        hdr, sm = phv[0], phv[2]
        sm.egress_port = port
        sm.egress_spec = self._egress_spec0
        if inst is not None:
            sm.instance_type = inst
        if self._uses_ts:
            sm.egress_global_timestamp = self.now_us()
        # BMv2 refreshes packet_length at egress from its length register, which add_header and
        # remove_header (setValid/setInvalid) adjust
        if self._uses_plen:
            sm.packet_length = (base + hdr._vsize()) & 0xFFFFFFFF
        self.rt.frame = None
        if self.log: self._trace_egress_start(sm)
        self.dp.egress(phv)
        if self.log: self.tracer.debug("Pipeline 'egress': end")

    def _deparse(self, pp: tuple) -> bytes:
        """Compute checksums and deparse (the end of a pass that is not dropped)."""
        if not self.log:
            return self.dp.back(pp[0], pp[1])
        self.tracer.debug("Deparser 'deparser': start")
        data = self.dp.back(pp[0], pp[1])
        self.tracer.debug("Deparser 'deparser': end")
        return data

    def _finish_egress(self, pp: tuple, port: int, fr: Frame | None, work: deque, out: list) -> None:
        """The end of egress, in BMv2's order."""
        dp = self.dp
        phv, payload, base, trunc = pp
        meta, sm = phv[1], phv[2]
        # 1. E2E clone: a copy of the post-egress PHV goes through egress again
        if fr is not None and fr.clone_session is not None:
            if self.log: self.tracer.debug("Cloning packet at egress")
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
            if self.log: self.tracer.debug("Dropping packet at the end of egress")
            return
        # 3. deparse
        data = self._deparse(pp)
        if fr is not None and fr.truncate is not None:
            data = data[:fr.truncate]
        elif trunc is not None:             # truncate() called in ingress applies on output
            data = data[:trunc]
        # 4. recirculate
        if fr is not None and fr.recirc_fl is not None:
            if self.log: self.tracer.debug("Recirculating packet")
            work.append(("i", port, data, RECIRC, dp.save_fields(meta, fr.recirc_fl)))
            return
        if self.log: self.tracer.debug(f"Transmitting packet of size {len(data)} out of port {port}")
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

    # action profiles and selectors (simple_switch_CLI's act_prof_* / table_indirect_* commands;
    # handles as BMv2 gives them: see action_profiles.py)
    def action_profile(self, name: str) -> ActionProfile:
        """An action profile/selector by name, or the one of the indirect table ``name``."""
        try:
            return self._extern(name, ActionProfile)
        except KeyError:
            t = self.tables.get(name) or next((self.tables[n] for n in self.tables if n.endswith("." + name)), None)
            if isinstance(t, IndirectTable):
                return t.profile
            raise

    def _indirect(self, table: str) -> IndirectTable:
        t = self.table(table)
        if not isinstance(t, IndirectTable):
            raise KeyError(f"table {t.name} has no action profile implementation")
        return t

    def act_prof_create_member(self, profile: str, action: str, args: Any = ()) -> int:
        return self.action_profile(profile).create_member(action, args)

    def act_prof_modify_member(self, profile: str, member: int, action: str, args: Any = ()) -> None:
        self.action_profile(profile).modify_member(member, action, args)

    def act_prof_delete_member(self, profile: str, member: int) -> None:
        self.action_profile(profile).delete_member(member)

    def act_prof_create_group(self, profile: str) -> int:
        return self.action_profile(profile).create_group()

    def act_prof_delete_group(self, profile: str, group: int) -> None:
        self.action_profile(profile).delete_group(group)

    def act_prof_add_member_to_group(self, profile: str, member: int, group: int) -> None:
        self.action_profile(profile).add_member_to_group(member, group)

    def act_prof_remove_member_from_group(self, profile: str, member: int, group: int) -> None:
        self.action_profile(profile).remove_member_from_group(member, group)

    def table_indirect_add(self, table: str, match: Any, member: int, priority: int | None = None) -> int:
        return self._indirect(table).add(match, MEMBER, {"handle": member}, priority)

    def table_indirect_add_with_group(self, table: str, match: Any, group: int,
                                      priority: int | None = None) -> int:
        return self._indirect(table).add(match, GROUP, {"handle": group}, priority)

    def table_indirect_modify(self, table: str, handle: int, member: int) -> None:
        self._indirect(table).modify(handle, MEMBER, {"handle": member})

    def table_indirect_modify_with_group(self, table: str, handle: int, group: int) -> None:
        self._indirect(table).modify(handle, GROUP, {"handle": group})

    def table_indirect_set_default(self, table: str, member: int) -> None:
        self._indirect(table).set_default(MEMBER, {"handle": member})

    def table_indirect_set_default_with_group(self, table: str, group: int) -> None:
        self._indirect(table).set_default(GROUP, {"handle": group})

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
