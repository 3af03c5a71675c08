"""The helper role (SA-ATP §7): finish rounds the switch handed over, for stragglers.

Any agent that receives a PARTIAL becomes the helper for that round.  A
:class:`HelperRole` lives inside every :class:`~host_agent.worker.Worker` and, alone,
inside the ATP-like baseline's parameter server (:class:`ParameterServer`).

Per round (iter, seq) it keeps an int64 accumulator, the set of contributions included
(``have``), whether the switch's PARTIAL arrived, and the final result once complete.
Exactly-once: a worker bit is added at most once (``have`` dedups redirected DATA; the
switch never adds after eviction, so a PARTIAL's bits cannot already be in ``have`` --
if they are, ``conflicts`` counts it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import wire
from .quantize import sat32


@dataclass
class Round:
    k: int
    acc: np.ndarray = None  # int64
    have: int = 0
    partial_seen: bool = False
    pbitmap: int = 0
    slot: int = 0
    setbit: int = 0
    exp: int = 0
    ovf: bool = False
    result: np.ndarray | None = None

    def __post_init__(self):
        if self.acc is None:
            self.acc = np.zeros(self.k, dtype=np.int64)


@dataclass
class HelperStats:
    partials: int = 0             # PARTIAL packets taken over
    dup_partials: int = 0
    straggler_contribs: int = 0   # redirected DATA added
    dup_contribs: int = 0
    hresults: int = 0             # HRESULT multicasts
    hresult_ucasts: int = 0       # results served to one late worker
    nacks: int = 0
    packs: int = 0
    flushes: int = 0
    passed_on: int = 0            # late requests passed on to a worker (§7)
    conflicts: int = 0            # a PARTIAL bit already in `have` (must stay 0)
    exp_mismatch: int = 0         # contributions made with another scale (dropped)
    bytes_rx: int = 0
    bytes_tx: int = 0
    peak_rounds: int = 0
    peak_bytes: int = 0           # accumulators + results held at once

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class HelperRole:
    def __init__(self, wid: int, job: int, nworkers: int, k: int, pool: int,
                 send: Callable[[bytes], None],
                 on_result: Callable[[wire.Header, np.ndarray], None] | None = None,
                 loop=None, pack_batch: int = 8, pack_delay: float = 0.0005):
        self.wid = wid
        # PACK batching: one PACK acknowledges up to 32 rounds with the same contributors
        # (bit i of its `strag` field = round seq + i), which saves n-1 replicas per round
        self.loop = loop
        self.pack_batch = pack_batch if loop is not None else 1
        self.pack_delay = pack_delay
        self._pending: dict[tuple[int, int], list[int]] = {}   # (iter, bitmap) -> seqs
        self.in_flight: Callable[[int], list[int] | None] | None = None
        self._pack_timer = None
        self.job = job
        self.n = nworkers
        self.k = k
        self.klog2 = k.bit_length() - 1
        self.pool = pool
        self.assist_mask = 0      # virtual contributors (compute assist)
        self._send = send
        self.on_result = on_result  # local delivery of our own HRESULTs (helper is a worker)
        self.rounds: dict[tuple[int, int], Round] = {}
        self._held = 0            # bytes of accumulators and results in `rounds` (kept as they change)
        self.flushed: dict[int, int] = {}   # iter -> straggler mask already flushed
        self.newest_iter: int | None = None
        self.stats = HelperStats()

    @property
    def full(self) -> int:
        return ((1 << self.n) - 1) | self.assist_mask

    # ------------------------------------------------------------------ io
    def send(self, h: wire.Header, vals: np.ndarray | None = None) -> None:
        b = wire.pack(h, vals)
        self.stats.bytes_tx += len(b)
        self._send(b)

    def _hdr(self, typ: int, it: int, seq: int, r: Round | None, **kw) -> wire.Header:
        slot = r.slot if r else seq % self.pool
        setbit = r.setbit if r else (seq // self.pool) & 1
        return wire.Header(type=typ, flags=wire.F_SET if setbit else 0, job=self.job,
                           wid=self.wid, nworkers=self.n, helper=self.wid, slot=slot, seq=seq,
                           iter=it, klog2=self.klog2, exp=r.exp if r else 0, **kw)

    # ------------------------------------------------------------ bookkeeping
    def _round(self, it: int, seq: int) -> Round:
        key = (it, seq)
        r = self.rounds.get(key)
        if r is None:
            if self.newest_iter is None or wire.serial_newer(it, self.newest_iter):
                self.newest_iter = it
                self._gc(it)
            r = Round(self.k, slot=seq % self.pool, setbit=(seq // self.pool) & 1)
            self.rounds[key] = r
            n = len(self.rounds)
            if n > self.stats.peak_rounds:
                self.stats.peak_rounds = n
            self._hold(self._round_bytes(r))
        return r

    @staticmethod
    def _round_bytes(r: Round) -> int:
        return 8 * r.k + (4 * r.k if r.result is not None else 0)

    def _hold(self, nbytes: int) -> None:
        """Count ``nbytes`` more held (a new accumulator, a result) and the peak.  Kept as a
        running sum: summing every round on every change made the helper's CPU quadratic in
        the rounds of an iteration (1.6 s of CPU for the 4,096 rounds of 1M values)."""
        self._held += nbytes
        if self._held > self.stats.peak_bytes:
            self.stats.peak_bytes = self._held

    def _gc(self, newest: int) -> None:
        """Forget rounds two or more iterations old (SA-ATP §7 housekeeping)."""
        old = [key for key in self.rounds if wire.serial_newer(newest, (key[0] + 1) & 0xFFFF)]
        for key in old:
            self._held -= self._round_bytes(self.rounds.pop(key))
        for it in [i for i in self.flushed if wire.serial_newer(newest, (i + 1) & 0xFFFF)]:
            del self.flushed[it]

    def result_for(self, it: int, seq: int) -> tuple[np.ndarray, bool] | None:
        r = self.rounds.get((it, seq))
        if r is not None and r.result is not None:
            return r.result, r.ovf
        return None

    # ------------------------------------------------------------ handlers
    def on_partial(self, h: wire.Header, vals: np.ndarray, nbytes: int) -> None:
        self.stats.bytes_rx += nbytes
        r = self._round(h.iter, h.seq)
        r.slot, r.setbit = h.slot, 1 if h.flags & wire.F_SET else 0
        if r.partial_seen:
            # the switch re-emitted it: a worker lost our PACK (or we lost nothing and
            # someone probed); answer with PACK again
            self.stats.dup_partials += 1
            # a re-emitted PARTIAL names the worker that probed (wid); answer it alone
            self._pack(h.iter, h.seq, r, dst=h.wid if h.wid < 32 and self.full >> h.wid & 1
                       else None)
            if r.result is not None:
                self._hresult(h.iter, h.seq, r)
            return
        if r.have & h.bitmap:
            self.stats.conflicts += 1
        r.acc += vals
        r.have |= h.bitmap
        r.partial_seen = True
        r.pbitmap = h.bitmap
        r.exp = h.exp
        r.ovf = r.ovf or bool(h.flags & wire.F_OVERFLOW)
        self.stats.partials += 1
        self._queue_pack(h.iter, h.seq, r.pbitmap)
        new = h.strag & ~self.flushed.get(h.iter, 0)
        if new:
            self.flushed[h.iter] = self.flushed.get(h.iter, 0) | h.strag
            self._flush(h.iter, h.exp)
        self._maybe_complete(h.iter, h.seq, r)

    def on_redirect_data(self, h: wire.Header, vals: np.ndarray, nbytes: int) -> None:
        self.stats.bytes_rx += nbytes
        res = self.result_for(h.iter, h.seq)
        if res is not None:
            self._hresult_ucast(h.iter, h.seq, self.rounds[(h.iter, h.seq)], h.wid)
            return
        r = self._round(h.iter, h.seq)
        bit = 1 << h.wid
        if not r.partial_seen and h.flags & wire.F_RESEND:
            self._pass_on(h)
        if r.have & bit:
            self.stats.dup_contribs += 1
            return
        if r.partial_seen and h.exp != r.exp:
            self.stats.exp_mismatch += 1
            return
        r.acc += vals
        r.have |= bit
        if not r.partial_seen:
            r.exp = h.exp
        self.stats.straggler_contribs += 1
        self._maybe_complete(h.iter, h.seq, r)

    def on_redirect_probe(self, h: wire.Header, nbytes: int) -> bool:
        """Answer a redirected PROBE; returns False if we know nothing of the round."""
        self.stats.bytes_rx += nbytes
        r = self.rounds.get((h.iter, h.seq))
        if r is not None and r.result is not None:
            self._hresult_ucast(h.iter, h.seq, r, h.wid)
            return True
        if h.flags & wire.F_UCAST:
            return False   # a request another helper passed on: we only serve results
        if r is None or not r.partial_seen:
            self._pass_on(h)
        if h.flags & wire.F_RELEASED:
            return r is not None   # it holds a PACK; the result will come
        if r is None or not (r.have & (1 << h.wid)):
            self.stats.nacks += 1
            self.send(self._nack_hdr(h, r))
            return r is not None
        return True

    def on_result_copy(self, h: wire.Header, vals: np.ndarray, nbytes: int) -> None:
        """A result finished by the switch (the PS is in the job's multicast group): keep it
        to answer late retransmissions."""
        self.stats.bytes_rx += nbytes
        if h.wid != wire.SWITCH_WID:
            return   # our own HRESULT coming back
        r = self._round(h.iter, h.seq)
        if r.result is None:
            r.result = vals.copy()
            self._hold(4 * self.k)
            r.ovf = bool(h.flags & wire.F_OVERFLOW)
            r.exp = h.exp
            r.slot, r.setbit = h.slot, 1 if h.flags & wire.F_SET else 0

    def _pass_on(self, h: wire.Header) -> None:
        """A late request for a round we never got a PARTIAL of: it may have finished in
        the switch and its slot been reused.  Ask a worker that may hold the result to
        answer the requester (PROBE | REDIRECT | UCAST, wid = requester); rotate so that a
        worker that lost the result too is not asked forever."""
        if self.n < 2:
            return
        self._rot = getattr(self, "_rot", 0) + 1
        cands = [w for w in range(self.n) if w != h.wid and w != self.wid]
        if not cands:
            return
        dst = cands[self._rot % len(cands)]
        x = wire.Header(type=wire.PROBE, flags=(h.flags & (wire.F_SET | wire.F_RELEASED))
                        | wire.F_REDIRECT | wire.F_UCAST, job=self.job, wid=h.wid,
                        nworkers=self.n, helper=self.wid, slot=h.slot, seq=h.seq, iter=h.iter,
                        bitmap=1 << h.wid, klog2=self.klog2, dst=dst)
        self.stats.passed_on += 1
        self.send(x)

    # ------------------------------------------------------------ emitters
    def _nack_hdr(self, h: wire.Header, r: Round | None) -> wire.Header:
        x = self._hdr(wire.NACK, h.iter, h.seq, r, dst=h.wid, bitmap=1 << h.wid)
        x.slot, x.flags = h.slot, (h.flags & wire.F_SET) | wire.F_UCAST
        return x

    def _queue_pack(self, it: int, seq: int, bitmap: int) -> None:
        key = (it, bitmap)
        seqs = self._pending.setdefault(key, [])
        if seqs and max(max(seqs), seq) - min(min(seqs), seq) >= 32:
            self._send_batch(key)
            seqs = self._pending.setdefault(key, [])
        seqs.append(seq)
        if len(seqs) >= self.pack_batch:
            self._send_batch(key)
        elif self._pack_timer is None:
            self._pack_timer = self.loop.call_later(self.pack_delay, self._flush_packs)

    def _flush_packs(self) -> None:
        self._pack_timer = None
        for key in list(self._pending):
            self._send_batch(key)

    def _send_batch(self, key: tuple[int, int]) -> None:
        seqs = self._pending.pop(key, None)
        if not seqs:
            return
        it, bitmap = key
        base = min(seqs)
        mask = 0
        for q in seqs:
            mask |= 1 << (q - base)
        r = self.rounds.get((it, base))
        self.stats.packs += 1
        h = self._hdr(wire.PACK, it, base, r, bitmap=bitmap, strag=mask)
        self.send(h)

    def _pack(self, it: int, seq: int, r: Round, dst: int | None = None) -> None:
        self.stats.packs += 1
        h = self._hdr(wire.PACK, it, seq, r, bitmap=r.pbitmap, strag=1)
        if dst is not None:
            h.flags |= wire.F_UCAST
            h.dst = dst
        self.send(h)

    def _flush(self, it: int, exp: int) -> None:
        """Evict the rounds that wait only for the newly known stragglers.  A helper that
        is a worker contributed to every such round and has not been released from it, so
        its own in-flight chunks name them (at most P FLUSHes); a parameter server does
        not know and flushes all 2P slots."""
        seqs = self.in_flight(it) if self.in_flight is not None else None
        if seqs is None:
            targets = [(setbit, slot, 0) for setbit in (0, 1) for slot in range(self.pool)]
        else:
            targets = [((q // self.pool) & 1, q % self.pool, q) for q in seqs]
        for setbit, slot, seq in targets:
            # the switch copies the evicting packet's exp into the PARTIAL: a FLUSH must carry
            # the iteration's scale, or later straggler contributions look mis-scaled
            h = wire.Header(type=wire.FLUSH, flags=wire.F_SET if setbit else 0, job=self.job,
                            wid=self.wid, nworkers=self.n, helper=self.wid, slot=slot,
                            seq=seq, iter=it, klog2=self.klog2, exp=exp)
            self.stats.flushes += 1
            self.send(h)

    def _maybe_complete(self, it: int, seq: int, r: Round) -> None:
        if r.result is None and r.partial_seen and r.have == self.full:
            r.result, clipped = sat32(r.acc)
            r.ovf = r.ovf or clipped
            self._hold(4 * self.k)
            self._hresult(it, seq, r)

    def _result_hdr(self, it: int, seq: int, r: Round, **kw) -> wire.Header:
        h = self._hdr(wire.HRESULT, it, seq, r, bitmap=r.have, nvalid=0, **kw)
        if r.ovf:
            h.flags |= wire.F_OVERFLOW
        return h

    def _hresult(self, it: int, seq: int, r: Round) -> None:
        self.stats.hresults += 1
        h = self._result_hdr(it, seq, r)
        self.send(h, r.result)
        if self.on_result is not None:
            local = h.copy(type=wire.RESULT, flags=h.flags | wire.F_PAYLOAD)
            self.on_result(local, r.result)

    def _hresult_ucast(self, it: int, seq: int, r: Round, dst: int) -> None:
        self.stats.hresult_ucasts += 1
        h = self._result_hdr(it, seq, r, dst=dst)
        h.flags |= wire.F_UCAST
        self.send(h, r.result)


class ParameterServer:
    """ATP-like baseline: a non-worker process that takes evicted rounds (§13)."""

    def __init__(self, wid: int, job: int, nworkers: int, k: int, pool: int,
                 send: Callable[[bytes], None], loop=None):
        self.wid = wid
        self.role = HelperRole(wid, job, nworkers, k, pool, send, loop=loop)
        self.bad = 0

    def on_message(self, data: bytes) -> None:
        try:
            h, vals = wire.unpack(data)
        except wire.WireError:
            self.bad += 1
            return
        if h.type == wire.PARTIAL and vals is not None:
            self.role.on_partial(h, vals, len(data))
        elif h.type == wire.DATA and h.flags & wire.F_REDIRECT and vals is not None:
            self.role.on_redirect_data(h, vals, len(data))
        elif h.type == wire.PROBE and h.flags & wire.F_REDIRECT:
            self.role.on_redirect_probe(h, len(data))
        elif h.type == wire.RESULT and vals is not None:
            self.role.on_result_copy(h, vals, len(data))
        else:
            self.bad += 1
