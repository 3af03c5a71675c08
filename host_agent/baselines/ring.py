"""Host-only ring all-reduce over the same transports (the switch only forwards IPv4).

Reduce-scatter then all-gather, ``2(n-1)`` steps, pipelined per chunk: worker ``w`` sends
chunk ``c`` of step ``t`` to ``w+1`` as soon as it received chunk ``c`` of step ``t-1``
from ``w-1``.  Chunk ``c`` belongs to segment ``c * n // C``; at step ``t`` worker ``w``
sends segment ``(w - t) mod n`` during reduce-scatter and ``(w + 1 - t') mod n`` during
all-gather (``t' = t - (n-1)``).  Partial sums are saturating int32, like the switch's.

Reliability: a window of unacknowledged chunks, coalesced selective ACKs (a 32-bit bitmap
per group of 32 chunks of a step, sent after 8 new chunks or a short delay) and a
retransmission timer per chunk (RFC 6298 estimate, Karn's rule, exponential back-off).
Packets of the next iteration that arrive before ``start`` are kept and replayed.  Messages reuse the SA-ATP header (types RING_DATA and
RING_ACK, ``slot`` = step) on UDP port RING_PORT, so the switch's P4 program forwards them
by IPv4 destination and never parses them as SA-ATP.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import wire
from ..clock import EventLoop
from ..quantize import sat_add
from ..rtt import RttEstimator


class RingWorker:
    def __init__(self, wid: int, n: int, k: int, loop: EventLoop,
                 send_to: Callable[[int, bytes], None], window: int = 32, rto: float = 0.025,
                 ack_every: int = 8, ack_delay: float | None = None, job: int = 0):
        if n < 1 or not 0 <= wid < n:
            raise ValueError("bad ring size or rank")
        self.wid, self.n, self.k = wid, n, k
        self.klog2 = k.bit_length() - 1
        self.loop = loop
        self.send_to = send_to
        self.window = window
        self.rto = rto
        self.ack_every = ack_every
        self.ack_delay = rto / 10 if ack_delay is None else ack_delay
        self.job = job
        self.it = 0
        self.t_done: float | None = None
        self.t_start = 0.0
        self.bad = 0
        self.sent = 0
        self.resent = 0
        self.on_done = None
        self.early: list[bytes] = []      # packets of the next iteration, kept until start()
        self.rtt = RttEstimator(rto, 16 * rto)

    # ----------------------------------------------------------------- api
    def start(self, it: int, q: np.ndarray, f: int = 0, on_done=None) -> None:
        q = np.ascontiguousarray(q, dtype=np.int32).ravel()
        self.it, self.f, self.len = it, f, len(q)
        self.c = max(1, -(-len(q) // self.k))
        pad = np.zeros(self.c * self.k, np.int32)
        pad[:len(q)] = q
        self.acc = pad.reshape(self.c, self.k).copy()
        self.res = np.zeros_like(self.acc)
        self.have = np.zeros(self.c, bool)
        self.ovf = False
        self.nsteps = 2 * (self.n - 1)
        self.got: set[tuple[int, int]] = set()
        self.unacked: dict[tuple[int, int], tuple[bytes, object]] = {}
        self.queue: list[tuple[int, int]] = []
        self.pending_acks: dict[tuple[int, int], int] = {}
        self.ack_timer = None
        self.t_start = self.loop.now()
        self.t_done = None
        self.on_done = on_done
        self.missing = self.c
        self.sent_at: dict[tuple[int, int], float] = {}
        self.retried: set[tuple[int, int]] = set()
        if self.n == 1:
            self.res[:] = self.acc
            self.have[:] = True
            self._finish()
            return
        for c in range(self.c):
            if self._seg(c) == self.wid:   # step 0 sends segment w
                self.queue.append((0, c))
        self._pump()
        early, self.early = self.early, []
        for data in early:
            self.on_message(data)

    @property
    def done(self) -> bool:
        return self.t_done is not None

    def result(self) -> tuple[np.ndarray, bool]:
        return self.res.ravel()[:self.len].copy(), self.ovf

    # ----------------------------------------------------------------- internals
    def _seg(self, c: int) -> int:
        return c * self.n // self.c

    def _finish(self) -> None:
        self.t_done = self.loop.now()
        if self.on_done:
            self.on_done(self.it, self.res.ravel()[:self.len], self.ovf)

    def _set_result(self, c: int, vals: np.ndarray) -> None:
        if not self.have[c]:
            self.res[c] = vals
            self.have[c] = True
            self.missing -= 1
            if self.missing == 0:
                self._finish()

    def _pump(self) -> None:
        while self.queue and len(self.unacked) < self.window:
            t, c = self.queue.pop(0)
            vals = self.acc[c] if t < self.n - 1 else self.res[c]
            h = wire.Header(type=wire.RING_DATA, job=self.job, wid=self.wid, nworkers=self.n,
                            slot=t, seq=c, iter=self.it, klog2=self.klog2, exp=self.f)
            b = wire.pack(h, vals)
            self.sent += 1
            self.send_to((self.wid + 1) % self.n, b)
            self.sent_at[(t, c)] = self.loop.now()
            self.unacked[(t, c)] = (b, self.loop.call_later(self._rto(), self._on_rto, self.it,
                                                             t, c, self._rto()))

    def _rto(self) -> float:
        # RFC 6298 with Karn's rule and a kept back-off, as the SA-ATP worker does
        return self.rtt.rto

    def _on_rto(self, it: int, t: int, c: int, rto: float) -> None:
        if it != self.it or (t, c) not in self.unacked:
            return
        b, _ = self.unacked[(t, c)]
        self.resent += 1
        self.retried.add((t, c))
        self.rtt.back_off(2 * rto)
        self.send_to((self.wid + 1) % self.n, b)
        nxt = min(self.rtt.max_rto, 2 * rto)
        self.unacked[(t, c)] = (b, self.loop.call_later(nxt, self._on_rto, it, t, c, nxt))

    def _ack(self, t: int, c: int) -> None:
        key = (t, c & ~31)
        self.pending_acks[key] = self.pending_acks.get(key, 0) | (1 << (c & 31))
        if bin(self.pending_acks[key]).count("1") >= self.ack_every:
            self._send_ack(key)
        elif self.ack_timer is None:
            self.ack_timer = self.loop.call_later(self.ack_delay, self._flush_acks, self.it)

    def _send_ack(self, key: tuple[int, int]) -> None:
        bm = self.pending_acks.pop(key, 0)
        if not bm:
            return
        h = wire.Header(type=wire.RING_ACK, job=self.job, wid=self.wid, nworkers=self.n,
                        slot=key[0], seq=key[1], iter=self.it, bitmap=bm, klog2=self.klog2)
        self.send_to((self.wid - 1) % self.n, h.pack())

    def _flush_acks(self, it: int) -> None:
        self.ack_timer = None
        if it != self.it:
            return
        for key in list(self.pending_acks):
            self._send_ack(key)

    def on_message(self, data: bytes) -> None:
        try:
            h, vals = wire.unpack(data)
        except wire.WireError:
            self.bad += 1
            return
        if h.job == self.job and h.iter == self.it % 0xFFFF + 1 and len(self.early) < 4096:
            self.early.append(bytes(data))   # a peer already started the next iteration
            return
        if h.iter != self.it or h.job != self.job:
            self.bad += 1
            return
        if h.type == wire.RING_ACK:
            bm = h.bitmap
            while bm:
                low = bm & -bm
                key = (h.slot, h.seq + low.bit_length() - 1)
                ent = self.unacked.pop(key, None)
                if ent is not None:
                    ent[1].cancel()
                    if key not in self.retried:
                        self.rtt.sample(self.loop.now() - self.sent_at[key])
                bm ^= low
            self._pump()
            return
        if h.type != wire.RING_DATA or vals is None or h.seq >= self.c or h.slot >= self.nsteps:
            self.bad += 1
            return
        t, c = h.slot, h.seq
        self._ack(t, c)
        if (t, c) in self.got:
            return
        self.got.add((t, c))
        if t < self.n - 1:
            self.acc[c], o = sat_add(self.acc[c], vals)
            self.ovf |= o
            if t == self.n - 2:              # this worker now owns the final sum of c
                self._set_result(c, self.acc[c])
        else:
            self._set_result(c, vals)
        if t + 1 < self.nsteps:
            self.queue.append((t + 1, c))
        self._pump()
