"""Tensors with a small header over torch.distributed point-to-point messages.

A message is **one** float32 send: a header of :data:`HEADER` values ``(start, ndim, dims...)``
(``start`` is the index of the first sample in the minibatch, so the receiver can re-chunk),
then the payload. Sample indices and dimensions are exact in float32 below 2**24
(:data:`MAX_EXACT`). One message instead of a header message and a payload message halves what
gloo pays per transfer: about 100 µs of CPU on each side per message on this host
(``scripts/bench_wire.py``), which a stage under a CPU quota pays at its quota's pace.

Messages between a pair of ranks on one tag arrive in order. :class:`Inbox`, used by the
runtime, knows the sender's plan and posts every receive of an iteration up front, checking
each header against the plan; :func:`recv` receives one message of a known shape.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

HEADER = 8  # start, ndim, up to 6 dims
MAX_EXACT = 1 << 24  # integers up to here are exact in float32
TAG_ACT = 1  # activations, stage s -> s+1
TAG_GRAD = 2  # input gradients, stage s+1 -> s


def pack(t: torch.Tensor, start: int) -> torch.Tensor:
    """One float32 buffer: the header for samples ``start..`` of ``t``, then ``t``'s values."""
    if t.dim() > HEADER - 2:
        raise ValueError(f"tensor has {t.dim()} dims; the header holds at most {HEADER - 2}")
    if not 0 <= start < MAX_EXACT or any(d >= MAX_EXACT for d in t.shape):
        raise ValueError(f"start {start} or shape {list(t.shape)} not below {MAX_EXACT} (exact in float32)")
    buf = torch.empty(HEADER + t.numel(), dtype=torch.float32)
    head = [float(start), float(t.dim()), *map(float, t.shape)]
    buf[:HEADER] = torch.tensor(head + [0.0] * (HEADER - len(head)))
    buf[HEADER:].view(t.shape).copy_(t.detach())
    return buf


def unpack(buf: torch.Tensor) -> tuple[int, list[int], torch.Tensor]:
    """(start, shape, payload view) of a received buffer; raises on a header that does not
    describe the buffer."""
    head = buf[:HEADER].tolist()
    nd = int(head[1])
    dims = [int(d) for d in head[2:2 + nd]] if 0 < nd <= HEADER - 2 else []
    if not dims or math.prod(dims) != buf.numel() - HEADER or int(head[0]) != head[0] or head[0] < 0:
        raise RuntimeError(f"bad pipeline message header: {head}")
    return int(head[0]), dims, buf[HEADER:].view(dims)


def isend(t: torch.Tensor, start: int, dst: int, tag: int) -> list:
    """Send ``t`` (as float32) as samples ``start..``; returns the work handle and the buffer,
    which must stay alive until the handle is waited on."""
    buf = pack(t, start)
    return [dist.isend(buf, dst, tag=tag), buf]


def recv(src: int, tag: int, shape: tuple[int, ...]) -> tuple[int, torch.Tensor]:
    """Receive one message whose tensor has ``shape``: ``(start, tensor)``."""
    buf = torch.empty(HEADER + math.prod(shape), dtype=torch.float32)
    dist.recv(buf, src, tag=tag)
    start, dims, t = unpack(buf)
    if dims != list(shape):
        raise RuntimeError(f"message from rank {src} has shape {dims}, expected {list(shape)}")
    return start, t


class Inbox:
    """All of one iteration's messages from one peer on one tag, receives posted up front.

    The receiver knows from the plan which sample ranges the peer sends, in which order
    (``msgs`` = [(start, count), ...]), and the per-sample shape; it posts every receive at
    once (``irecv``), so a transfer proceeds as soon as the peer sends, never waiting for
    this process to reach its blocking receive. ``take(a, b)`` waits for messages in order
    until samples [a, b) are there; each header is checked against the plan."""

    def __init__(self, src: int, tag: int, msgs: list[tuple[int, int]], sample_shape: tuple[int, ...]):
        self.src = src
        self.posted = []
        for start, count in msgs:
            buf = torch.empty(HEADER + count * math.prod(sample_shape), dtype=torch.float32)
            self.posted.append((start, [count, *sample_shape], buf, dist.irecv(buf, src, tag=tag)))
        self.next = 0
        self.pieces: list[tuple[int, torch.Tensor]] = []

    def _receive_one(self) -> None:
        if self.next >= len(self.posted):
            raise RuntimeError(f"rank {self.src} sent fewer messages than the plan says")
        start, shape, buf, work = self.posted[self.next]
        self.next += 1
        work.wait()
        try:
            got, dims, t = unpack(buf)
        except RuntimeError as e:
            raise RuntimeError(f"message from rank {self.src}: {e}") from None
        if got != start or dims != shape:
            raise RuntimeError(f"message from rank {self.src} does not match the plan: start {got} shape {dims}, "
                               f"expected start {start} shape {shape}")
        self.pieces.append((start, t))

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
