"""The SA-ATP worker (SA-ATP §6): windowed chunks, retransmission timers, probes, NACKs,
result caching for late peers, and the helper role (:mod:`host_agent.helper`).

The worker is event driven and transport agnostic: it gets SA-ATP bytes through
:meth:`Worker.on_message` and sends them with the ``send(bytes)`` callable it was given;
time comes from an :class:`~host_agent.clock.EventLoop` (virtual or real).

One iteration = one all-reduce of a flat int32 vector (:meth:`Worker.start`); the worker
reports the int32 sums and whether any chunk overflowed.  Float tensors, the adaptive
scale and the overflow retry are in :mod:`host_agent.allreduce`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import wire
from .constants import DEFAULT_K
from .rtt import RttEstimator
from .clock import EventLoop
from .helper import HelperRole

_FLAGS_AT = wire.BYTE_FIELDS["flags"][0]
_RESULT_LEN = [wire.HDR_LEN + wire.LANE_LEN * (1 << kl) for kl in range(wire.MAX_KLOG2 + 1)]


@dataclass
class AgentConfig:
    job: int = 0
    nworkers: int = 2
    k: int = DEFAULT_K
    pool: int = 32             # P: slots per set = window of outstanding chunks
    t_s: float = 0.050         # straggler threshold (s); also scales the host timers
    rto: float | None = None   # first retransmission timeout, default t_s / 2
    rto_max: float | None = None     # backoff cap, default 8 * t_s
    result_timeout: float | None = None  # released chunk without result, default 4 * t_s
    resend_data: bool = False  # on RTO resend DATA (ATP/SwitchML style) instead of a PROBE
    cache_iters: int = 2       # iterations of results kept for late peers
    assist_mask: int = 0       # virtual contributors (compute assist, SA-ATP.md §14)
    pack_batch: int = 8        # helper: rounds acknowledged by one PACK (1 = no batching)
    pack_delay: float | None = None  # helper: longest wait of a PACK batch, default t_s/10

    def __post_init__(self):
        if self.k < 1 or self.k & (self.k - 1):
            raise ValueError(f"K must be a power of two, got {self.k}")
        if not 1 <= self.nworkers <= wire.MAX_WORKERS:
            raise ValueError(f"1..{wire.MAX_WORKERS} workers per job, got {self.nworkers}")
        if self.pool < 1:
            raise ValueError("pool must be >= 1")
        if self.rto is None:
            self.rto = self.t_s / 2
        if self.rto_max is None:
            self.rto_max = 8 * self.t_s
        if self.result_timeout is None:
            self.result_timeout = 4 * self.t_s
        if self.pack_delay is None:
            self.pack_delay = self.t_s / 10


@dataclass
class WorkerStats:
    data_sent: int = 0
    resends: int = 0
    probes: int = 0
    result_probes: int = 0
    results: int = 0
    dup_results: int = 0
    packs: int = 0
    nacks: int = 0
    served: int = 0           # results served to late peers from the cache
    bad: int = 0              # malformed / foreign / unexpected packets
    bytes_tx: int = 0
    bytes_rx: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class _Iteration:
    """One iteration's state. ``pk`` holds every DATA packet, built at once
    (:func:`~host_agent.protocol.codec.data_packets`) in the worker's reused send buffer, and
    ``res`` the results, in one of the worker's reused result buffers."""

    def __init__(self, it: int, n: int, f: int, k: int, pk: np.ndarray, res: np.ndarray):
        self.it = it
        self.n = n
        self.c = max(1, -(-self.n // k))
        self.pk = pk
        self.row = pk.shape[1]
        self.pkmv = memoryview(pk.reshape(-1))
        self.f = f
        self.res = res
        self.have = np.zeros(self.c, dtype=bool)
        self.ovf = np.zeros(self.c, dtype=bool)
        self.released = np.zeros(self.c, dtype=bool)
        self.sent = np.zeros(self.c, dtype=bool)
        self.sent_at = np.zeros(self.c)
        self.fast_probed = np.full(self.c, -1e9)
        self.low = 0
        self.retried = np.zeros(self.c, dtype=bool)
        self.missing = self.c
        self.timers: dict[int, object] = {}
        self.backoff: dict[int, float] = {}
        self.t_start = 0.0
        self.t_done: float | None = None
        self.last_progress = 0.0
        self.watchdog = None
        self.in_tail = False
        self.wd_timeout = 0.0
        self.tail_timeout = 0.0


class Worker:
    """One SA-ATP worker (and, when the switch says so, the helper of its job)."""

    def __init__(self, wid: int, cfg: AgentConfig, loop: EventLoop,
                 send: Callable[[bytes], None]):
        if not (0 <= wid < cfg.nworkers or (0 <= wid < wire.MAX_WORKERS and cfg.assist_mask >> wid & 1)):
            raise ValueError(f"wid {wid} outside 0..{cfg.nworkers - 1}")
        self.wid = wid
        self.bit = 1 << wid
        self.cfg = cfg
        self.loop = loop
        self._send = send
        self.klog2 = cfg.k.bit_length() - 1
        self.stats = WorkerStats()
        self.helper = HelperRole(wid, cfg.job, cfg.nworkers, cfg.k, cfg.pool, self._send_counted,
                                 on_result=self._local_result, loop=loop,
                                 pack_batch=cfg.pack_batch, pack_delay=cfg.pack_delay)
        self.helper.in_flight = self._in_flight
        self.helper.assist_mask = cfg.assist_mask
        self.cur: _Iteration | None = None
        self.cache: dict[int, _Iteration] = {}
        self.on_done: Callable[[int, np.ndarray, bool], None] | None = None
        self.on_chunk: Callable[[int, np.ndarray], None] | None = None
        # reused between iterations: one send buffer (only the current iteration sends DATA),
        # and cache_iters + 1 result buffers (the current one and those of the cached ones)
        self._pkbuf = np.empty(0, dtype=np.uint8)
        self._resbufs: list[np.ndarray] = [np.empty(0, dtype=np.int32) for _ in range(cfg.cache_iters + 1)]
        self._starts = 0
        self.iter_times: list[float] = []
        self.rtt = RttEstimator(cfg.rto, cfg.rto_max)

    # ------------------------------------------------------------------ api
    def start(self, it: int, q: np.ndarray, f: int = 0,
              on_done: Callable[[int, np.ndarray, bool], None] | None = None,
              on_chunk: Callable[[int, np.ndarray], None] | None = None) -> None:
        """Start iteration ``it`` (1..65535) all-reducing the int32 vector ``q`` made with
        exponent ``f``.  ``on_done(it, sums, overflowed)`` is called once all results are in;
        ``sums`` is a view of the worker's result buffer, valid until ``cache_iters + 1`` more
        iterations have started (copy it to keep it).  ``on_chunk(seq, sums_of_chunk)``, if
        given, is called for every chunk result as it comes in."""
        if not 0 < it <= 0xFFFF:
            raise ValueError(f"iteration number must be in 1..65535, got {it}")
        q = np.ascontiguousarray(q, dtype=np.int32).ravel()
        if len(q) == 0:
            raise ValueError("nothing to all-reduce")
        if self.cur is not None and self.cur.t_done is None:
            raise RuntimeError(f"worker {self.wid}: iteration {self.cur.it} still running")
        if self.cur is not None:
            self._stash(self.cur)
        k = self.cfg.k
        c = max(1, -(-len(q) // k))
        row = wire.HDR_LEN + 4 * k
        if self._pkbuf.size < c * row:
            self._pkbuf = np.empty(c * row, dtype=np.uint8)
        i = self._starts % len(self._resbufs)
        self._starts += 1
        if self._resbufs[i].size < c * k:
            self._resbufs[i] = np.empty(c * k, dtype=np.int32)
        tpl = wire.Header(type=wire.DATA, flags=wire.F_PAYLOAD, job=self.cfg.job, wid=self.wid,
                          nworkers=self.cfg.nworkers, iter=it, nvalid=k, bitmap=self.bit, exp=f,
                          klog2=self.klog2)
        pk = wire.data_packets(tpl, q, self._pkbuf, self.cfg.pool, wire.F_SET)
        self.cur = st = _Iteration(it, len(q), f, k, pk, self._resbufs[i][:c * k].reshape(c, k))
        st.t_start = st.last_progress = self.loop.now()
        st.wd_timeout = cfg_rt = self.cfg.result_timeout
        st.tail_timeout = min(cfg_rt, 2 * self.cfg.rto)
        self.on_done = on_done
        self.on_chunk = on_chunk
        for seq in range(min(self.cfg.pool, st.c)):
            self._send_data(st, seq)

    def cancel(self) -> None:
        """Give up the current iteration (its caller found it cannot complete, e.g. the ranks'
        sizes differ): no more sends, timers or callbacks for it; the next :meth:`start` may
        follow at once."""
        st = self.cur
        if st is None or st.t_done is not None:
            return
        st.t_done = self.loop.now()
        if st.watchdog is not None:
            st.watchdog.cancel()
            st.watchdog = None
        for t in st.timers.values():
            t.cancel()
        st.timers.clear()
        st.released[:] = True
        self.on_done = self.on_chunk = None

    @property
    def done(self) -> bool:
        return self.cur is not None and self.cur.t_done is not None

    def result(self) -> tuple[np.ndarray, bool]:
        st = self.cur
        if st is None or st.t_done is None:
            raise RuntimeError("no finished iteration")
        return st.res.ravel()[:st.n].copy(), bool(st.ovf.any())

    # ------------------------------------------------------------------ send
    def _send_counted(self, b: bytes) -> None:
        self.stats.bytes_tx += len(b)
        self._send(b)

    def _hdr(self, st: _Iteration, typ: int, seq: int, flags: int = 0) -> wire.Header:
        p = self.cfg.pool
        if (seq // p) & 1:
            flags |= wire.F_SET
        nvalid = min(self.cfg.k, st.n - seq * self.cfg.k) if typ == wire.DATA else 0
        return wire.Header(type=typ, flags=flags, job=self.cfg.job, wid=self.wid,
                           nworkers=self.cfg.nworkers, slot=seq % p, seq=seq, iter=st.it,
                           nvalid=nvalid, bitmap=self.bit, exp=st.f, klog2=self.klog2)

    def _data_bytes(self, st: _Iteration, seq: int, flags: int = 0) -> bytes:
        b = st.pkmv[seq * st.row:(seq + 1) * st.row]
        if not flags:
            return b.tobytes()
        out = bytearray(b)
        out[_FLAGS_AT] |= flags
        return bytes(out)

    @property
    def rto(self) -> float:
        """Current first timeout: srtt + 4 rttvar (RFC 6298), within [cfg.rto, cfg.rto_max]."""
        return self.rtt.rto

    def _rtt_sample(self, st: _Iteration, seq: int) -> None:
        if st.retried[seq]:
            return   # Karn: no samples from retransmitted or probed chunks
        self.rtt.sample(self.loop.now() - st.sent_at[seq])

    def _send_data(self, st: _Iteration, seq: int, resend: bool = False) -> None:
        if not resend:
            st.sent_at[seq] = self.loop.now()
        else:
            st.retried[seq] = True
        st.sent[seq] = True
        self.stats.data_sent += 1
        if resend:
            self.stats.resends += 1
        self._send_counted(self._data_bytes(st, seq, wire.F_RESEND if resend else 0))
        self._arm_rto(st, seq, reset=not resend)

    def _arm_rto(self, st: _Iteration, seq: int, reset: bool) -> None:
        old = st.timers.pop(seq, None)
        if old is not None:
            old.cancel()
        rto = self.rto if reset else st.backoff.get(seq, self.rto)
        st.backoff[seq] = rto
        st.timers[seq] = self.loop.call_later(rto, self._on_rto, st, seq)

    def _on_rto(self, st: _Iteration, seq: int) -> None:
        if st is not self.cur or st.released[seq]:
            return
        st.timers.pop(seq, None)
        if not st.retried[seq]:
            # RFC 6298 5.5: keep a backed-off timeout until a valid RTT sample arrives, so
            # a queue longer than the RTO does not turn every chunk into a probe.  Capped
            # at T_s: rounds that wait for a straggler also time out, and that is no
            # reason to recover real losses slowly.
            self.rtt.back_off(min(max(self.cfg.t_s, 2 * self.rtt.estimate()), 2 * self.rto))
        st.retried[seq] = True
        st.backoff[seq] = min(self.cfg.rto_max, 2 * st.backoff.get(seq, self.rto))
        if self.cfg.resend_data:
            self._send_data(st, seq, resend=True)
            return
        self.stats.probes += 1
        self._send_counted(self._hdr(st, wire.PROBE, seq).pack())
        st.timers[seq] = self.loop.call_later(st.backoff[seq], self._on_rto, st, seq)

    # ------------------------------------------------------- release & results
    def _release(self, st: _Iteration, seq: int) -> None:
        if st.released[seq]:
            return
        st.released[seq] = True
        self._rtt_sample(st, seq)
        t = st.timers.pop(seq, None)
        if t is not None:
            t.cancel()
        nxt = seq + self.cfg.pool
        if nxt < st.c and not st.sent[nxt]:
            self._send_data(st, nxt)

    def _store_result(self, st: _Iteration, h: wire.Header, vals: np.ndarray) -> None:
        seq = h.seq
        if st.have[seq]:
            self.stats.dup_results += 1
            return
        self.stats.results += 1
        st.res[seq] = vals          # a native array, or the big-endian lanes of a packet
        st.have[seq] = True
        st.ovf[seq] = bool(h.flags & wire.F_OVERFLOW)
        st.missing -= 1
        st.last_progress = self.loop.now()
        st.wd_timeout = self.cfg.result_timeout      # progress: back to the first timeouts
        st.tail_timeout = min(self.cfg.result_timeout, 2 * self.cfg.rto)
        self._release(st, seq)
        self._fast_result_probe(st, seq)
        if self.on_chunk is not None:
            self.on_chunk(seq, st.res[seq])
            if st.t_done is not None:   # on_chunk cancelled the iteration
                return
        if st.missing == 0:
            st.t_done = self.loop.now()
            if st.watchdog is not None:
                st.watchdog.cancel()
            for t in st.timers.values():
                t.cancel()
            st.timers.clear()
            self.iter_times.append(st.t_done - st.t_start)
            if self.on_done is not None:
                sums = st.res.ravel()[:st.n]
                self.on_done(st.it, sums, bool(st.ovf.any()))

    def _fast_result_probe(self, st: _Iteration, seq: int) -> None:
        """Gap detection, like TCP's fast retransmit: a helper finishes rounds roughly in
        the straggler's sending order, so a released round still without a result while a
        round 2P later already has one most likely lost its HRESULT.  Probe it now rather
        than when the result watchdog notices the silence."""
        while st.low < st.c and st.have[st.low]:
            st.low += 1
        lim = min(seq - 2 * self.cfg.pool, st.low + 64)
        now = self.loop.now()
        sent = 0
        for q in range(st.low, max(st.low, lim)):
            if sent >= 4:
                break
            if not st.have[q] and st.released[q] and now - st.fast_probed[q] > self.rto:
                st.fast_probed[q] = now
                sent += 1
                self.stats.result_probes += 1
                self._send_counted(self._hdr(st, wire.PROBE, q, wire.F_RELEASED).pack())

    def _in_flight(self, it: int) -> list[int] | None:
        """Our chunks of iteration ``it`` that are sent but not released (for FLUSH)."""
        st = self.cur
        if st is None or st.it != it:
            return None
        return [int(q) for q in np.flatnonzero(st.sent & ~st.released)]

    def _local_result(self, h: wire.Header, vals: np.ndarray) -> None:
        st = self.cur
        if st is not None and h.iter == st.it and h.seq < st.c:
            self._store_result(st, h, vals)

    def _wd_timeout(self, st: _Iteration) -> float:
        # in the tail of the iteration (all our chunks released) nothing of ours is in
        # flight, so a quiet period means a lost result rather than a busy switch
        return st.tail_timeout if st.released.all() else st.wd_timeout

    def _arm_watchdog(self, st: _Iteration) -> None:
        if st.watchdog is not None and st.released.all() and not st.in_tail:
            st.watchdog.cancel()
            st.watchdog = None
        if st.watchdog is None:
            st.in_tail = bool(st.released.all())
            st.watchdog = self.loop.call_later(self._wd_timeout(st), self._on_watchdog, st)

    def _on_watchdog(self, st: _Iteration) -> None:
        st.watchdog = None
        if st is not self.cur or st.t_done is not None:
            return
        now = self.loop.now()
        idle = now - st.last_progress
        timeout = self._wd_timeout(st)
        if idle < timeout * 0.999:
            st.watchdog = self.loop.call_later(timeout - idle, self._on_watchdog, st)
            return
        # released chunks still without a result: probe the oldest few (RELEASED probes go
        # to the helper through the switch, which answers with a unicast HRESULT)
        waiting = np.flatnonzero(st.released & ~st.have)[:self.cfg.pool]
        for seq in waiting:
            self.stats.result_probes += 1
            self._send_counted(self._hdr(st, wire.PROBE, int(seq), wire.F_RELEASED).pack())
        st.last_progress = now
        cap = 4 * self.cfg.result_timeout
        if st.released.all():
            st.tail_timeout = min(cap, 2 * st.tail_timeout)
        else:
            st.wd_timeout = min(cap, 2 * st.wd_timeout)
        if len(waiting):
            st.in_tail = bool(st.released.all())
            st.watchdog = self.loop.call_later(self._wd_timeout(st), self._on_watchdog, st)

    # ------------------------------------------------------------------ recv
    def _stash(self, st: _Iteration) -> None:
        self.cache[st.it] = st
        while len(self.cache) > self.cfg.cache_iters:
            del self.cache[next(iter(self.cache))]

    def _find(self, it: int) -> _Iteration | None:
        if self.cur is not None and self.cur.it == it:
            return self.cur
        return self.cache.get(it)

    def on_message(self, data: bytes) -> None:
        """Handle one SA-ATP packet (the UDP payload).  Never raises on bad input."""
        self.stats.bytes_rx += len(data)
        # the common packet first: a RESULT of the current iteration, its lanes converted
        # straight from the packet into the result buffer
        try:
            h = wire.Header.unpack(data)
        except wire.WireError:
            self.stats.bad += 1
            return
        if h.type == wire.RESULT and h.flags & wire.F_PAYLOAD and h.job == self.cfg.job \
                and h.klog2 == self.klog2 and h.version == wire.VERSION \
                and len(data) == _RESULT_LEN[self.klog2]:
            st = self.cur
            if st is not None and h.iter == st.it and h.seq < st.c:
                self._store_result(st, h, np.frombuffer(data, dtype=wire.LANE_DTYPE, count=self.cfg.k,
                                                        offset=wire.HDR_LEN))
            else:
                self.stats.dup_results += 1   # an older iteration's result (late replica)
            return
        try:
            h, vals = wire.unpack(data)
        except wire.WireError:
            self.stats.bad += 1
            return
        if h.job != self.cfg.job or h.klog2 != self.klog2:
            self.stats.bad += 1
            return
        t = h.type
        if t == wire.RESULT:
            st = self.cur
            if vals is None:
                self.stats.bad += 1
            elif st is not None and h.iter == st.it and h.seq < st.c:
                self._store_result(st, h, vals)
            else:
                self.stats.dup_results += 1   # an older iteration's result (late replica)
        elif t == wire.PACK:
            st = self.cur
            if st is not None and h.iter == st.it and h.seq < st.c and h.bitmap & self.bit:
                self.stats.packs += 1
                mask = h.strag or 1          # bit i acknowledges round seq + i
                while mask:
                    low = mask & -mask
                    seq = h.seq + low.bit_length() - 1
                    mask ^= low
                    if seq < st.c and not st.released[seq]:
                        self._release(st, seq)
                        self._arm_watchdog(st)
        elif t == wire.NACK:
            st = self.cur
            if st is not None and h.iter == st.it and h.seq < st.c and not st.have[h.seq] \
                    and st.sent[h.seq]:
                self.stats.nacks += 1
                self._send_data(st, h.seq, resend=True)
        elif t == wire.PARTIAL:
            if vals is None:
                self.stats.bad += 1
            else:
                self.helper.on_partial(h, vals, len(data))
        elif t in (wire.DATA, wire.PROBE) and h.flags & wire.F_REDIRECT:
            if self._serve(h):
                return
            if t == wire.DATA and vals is not None:
                self.helper.on_redirect_data(h, vals, len(data))
            elif t == wire.PROBE:
                self.helper.on_redirect_probe(h, len(data))
            else:
                self.stats.bad += 1
        else:
            self.stats.bad += 1

    def _serve(self, h: wire.Header) -> bool:
        """A late peer asks for (iter, seq): answer from our own results if we have it."""
        if h.wid >= wire.MAX_WORKERS or not self.helper.full >> h.wid & 1 or h.wid == self.wid:
            return False
        st = self._find(h.iter)
        if st is None or h.seq >= st.c or not st.have[h.seq]:
            return False
        if self.helper.result_for(h.iter, h.seq) is not None:
            return False   # the helper role answers (and counts) it
        self.stats.served += 1
        x = wire.Header(type=wire.HRESULT, flags=wire.F_UCAST | wire.F_PAYLOAD, job=self.cfg.job,
                        wid=self.wid, nworkers=self.cfg.nworkers, helper=self.wid,
                        slot=h.slot, seq=h.seq, iter=h.iter, bitmap=self.helper.full,
                        exp=st.f, klog2=self.klog2, dst=h.wid)
        x.flags |= h.flags & wire.F_SET
        if st.ovf[h.seq]:
            x.flags |= wire.F_OVERFLOW
        self._send_counted(wire.pack(x, st.res[h.seq]))
        return True
