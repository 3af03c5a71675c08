"""Tensors over torch.distributed point-to-point messages, between pipeline stages.

A message is the tensor's values as float32, sent as they are: no header, and no copy when
the tensor is already contiguous float32 (a stage's output, an input gradient). The receiver
knows from the plan which samples each message holds and their shape (:class:`Inbox` takes
the sender's rows and op order; :func:`recv` a shape), so it receives into a buffer of
exactly that size. Messages between a pair of ranks on one tag arrive in order.

**A message of the wrong size is an error.** gloo writes a shorter message into a larger
buffer without a word, so the buffer's last value is set to a signalling NaN
(:data:`SENTINEL_BITS`, a bit pattern no arithmetic produces: a NaN result is quiet) before
the receive is posted, and still holding it afterwards means the message was short
(:func:`check_full`). A longer message aborts gloo's receiving process (SIGABRT), which the
launcher reports as that rank's exit; the ``saatp`` backend refuses any size mismatch with a
``SAATPError`` naming both sizes.

Until 2026-11-28 every message was one float32 buffer with a header ``(start, ndim, dims)``
copied in front of the payload, checked on arrival. The copy, into a freshly allocated
buffer, cost vgg-mini's second stage 2.0 ms of CPU per iteration (4 microbatches of 8),
where torch's ``PipelineStage`` (which sends the tensor itself) spent 9.4-9.8 ms in all;
under that stage's 0.15-CPU quota, 1F1B at M = 4 ran 4.6 % slower than torch's
``Schedule1F1B`` (13 of 40 paired steps faster). ``scripts/bench_wire.py`` compares the
formats.

**Buffers are kept from one iteration to the next** (:class:`Buffers`, one per schedule a
process runs): a message's receive buffer is the one of the same message in the previous
iteration. A buffer above glibc's mmap threshold is a fresh mapping each time it is
allocated, and the first write to each of its pages faults.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

TAG_ACT = 1  # activations, stage s -> s+1
TAG_GRAD = 2  # input gradients, stage s+1 -> s
SENTINEL_BITS = 0x7FA5A5A5  # a signalling NaN: what a receive buffer's last value holds until written


class Buffers:
    """Receive buffers kept across iterations: ``take(key, n)`` returns the float32 buffer of
    ``n`` values last taken under ``key`` (a new one the first time, or when ``n`` changed).
    A key names one message of an iteration (peer, tag, index); the caller must not take a key
    again before the previous use of its buffer is over (the runtime consumes every receive
    before its iteration returns)."""

    def __init__(self):
        self._held: dict = {}

    def take(self, key, n: int) -> torch.Tensor:
        buf = self._held.get(key)
        if buf is None or buf.numel() != n:
            buf = self._held[key] = torch.empty(n, dtype=torch.float32)
        return buf


def as_message(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values as a contiguous float32 tensor: ``t`` itself (detached) when it is one."""
    t = t.detach()
    if t.dtype != torch.float32:
        t = t.to(torch.float32)
    return t.contiguous()


def isend(t: torch.Tensor, dst: int, tag: int) -> list:
    """Send ``t``'s values (as float32); returns the work handle and the tensor sent, which
    must stay alive and unchanged until the handle is waited on."""
    buf = as_message(t)
    return [dist.isend(buf, dst, tag=tag), buf]


def armed(buf: torch.Tensor) -> torch.Tensor:
    """``buf`` with its last value set to the sentinel (:func:`check_full` reads it)."""
    if buf.numel():
        buf.view(torch.int32)[-1] = SENTINEL_BITS
    return buf


def check_full(buf: torch.Tensor, src: int, what: str) -> None:
    """Raise if the message received into ``buf`` (:func:`armed` first) was shorter than it."""
    if buf.numel() and int(buf.view(torch.int32)[-1]) == SENTINEL_BITS:
        raise RuntimeError(f"message from rank {src} is shorter than {what} ({buf.numel()} values): the ranks' "
                           f"plans or shapes differ")


def recv(src: int, tag: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Receive one message whose tensor has ``shape``."""
    buf = armed(torch.empty(math.prod(shape), dtype=torch.float32))
    dist.recv(buf, src, tag=tag)
    check_full(buf, src, f"a tensor of shape {list(shape)}")
    return buf.view(shape)


class Inbox:
    """All of one iteration's messages from one peer on one tag, receives posted up front.

    The receiver knows from the plan which sample ranges the peer sends, in which order
    (``msgs`` = [(start, count), ...]), and the per-sample shape; it posts every receive at
    once (``irecv``), so a transfer proceeds as soon as the peer sends, never waiting for
    this process to reach its blocking receive. ``take(a, b)`` waits for messages in order
    until samples [a, b) are there. With ``buffers`` the receive buffers are those of the
    previous iteration's same messages."""

    def __init__(self, src: int, tag: int, msgs: list[tuple[int, int]], sample_shape: tuple[int, ...],
                 buffers: Buffers | None = None):
        self.src = src
        self.posted = []
        per = math.prod(sample_shape)
        for i, (start, count) in enumerate(msgs):
            n = count * per
            buf = armed(torch.empty(n, dtype=torch.float32) if buffers is None
                        else buffers.take((src, tag, i), n))
            self.posted.append((start, [count, *sample_shape], buf, dist.irecv(buf, src, tag=tag)))
        self.next = 0
        self.pieces: list[tuple[int, torch.Tensor]] = []

    def _receive_one(self) -> None:
        if self.next >= len(self.posted):
            raise RuntimeError(f"rank {self.src} sent fewer messages than the plan says")
        start, shape, buf, work = self.posted[self.next]
        self.next += 1
        work.wait()
        check_full(buf, self.src, f"samples {start}..{start + shape[0] - 1} of shape {shape[1:]}")
        self.pieces.append((start, buf.view(shape)))

    def take(self, a: int, b: int) -> torch.Tensor:
        while not _covered(self.pieces, a, b):
            self._receive_one()
        out, self.pieces = _cut(self.pieces, a, b)
        return out

    def close(self) -> None:
        """Every posted message must have arrived and been consumed."""
        while self.next < len(self.posted):
            self._receive_one()
        if self.pieces:
            raise RuntimeError(f"samples from rank {self.src} were received but never used")


def _covered(pieces: list[tuple[int, torch.Tensor]], a: int, b: int) -> bool:
    need = a
    for s, t in sorted(pieces, key=lambda p: p[0]):
        if s <= need < s + t.shape[0]:
            need = s + t.shape[0]
        if need >= b:
            return True
    return need >= b


def _cut(pieces: list[tuple[int, torch.Tensor]], a: int, b: int):
    """(samples [a, b) stacked, the remaining pieces)."""
    out, keep = [], []
    for s, t in sorted(pieces, key=lambda p: p[0]):
        e = s + t.shape[0]
        lo, hi = max(s, a), min(e, b)
        if lo < hi:
            out.append(t[lo - s:hi - s])
            if s < lo:
                keep.append((s, t[:lo - s]))
            if hi < e:
                keep.append((hi, t[hi - s:]))
        else:
            keep.append((s, t))
    return (out[0] if len(out) == 1 else torch.cat(out)), keep
