"""Tensors with a small header over torch.distributed point-to-point messages.

A message is two sends on the same tag: a header ``int64[HEADER]`` = ``(start, ndim, dims...)``
(``start`` is the index of the first sample in the minibatch, so the receiver can re-chunk),
then the float32 payload. Messages between a pair of ranks on one tag arrive in order.
:class:`SampleBuffer` receives blindly (header first, then a payload of the announced shape);
:class:`Inbox`, used by the runtime, knows the sender's plan and posts every receive of an
iteration up front, checking each header against the plan.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

HEADER = 8  # start, ndim, up to 6 dims
TAG_ACT = 1  # activations, stage s -> s+1
TAG_GRAD = 2  # input gradients, stage s+1 -> s


def header(start: int, t: torch.Tensor) -> torch.Tensor:
    if t.dim() > HEADER - 2:
        raise ValueError(f"tensor has {t.dim()} dims; the header holds at most {HEADER - 2}")
    h = torch.zeros(HEADER, dtype=torch.int64)
    h[0], h[1] = start, t.dim()
    h[2:2 + t.dim()] = torch.tensor(t.shape, dtype=torch.int64)
    return h


def isend(t: torch.Tensor, start: int, dst: int, tag: int) -> list:
    """Send ``t`` (float32, contiguous copy) as samples ``start..``; returns the work handles
    and the buffers, which must stay alive until the handles are waited on."""
    payload = t.detach().to(torch.float32).contiguous()
    h = header(start, payload)
    return [dist.isend(h, dst, tag=tag), dist.isend(payload, dst, tag=tag), h, payload]


def recv(src: int, tag: int) -> tuple[int, torch.Tensor]:
    """Receive one message: ``(start, tensor)``."""
    h = torch.empty(HEADER, dtype=torch.int64)
    dist.recv(h, src, tag=tag)
    nd = int(h[1])
    if not 0 < nd <= HEADER - 2:
        raise RuntimeError(f"bad pipeline message header from rank {src}: {h.tolist()}")
    t = torch.empty([int(d) for d in h[2:2 + nd]], dtype=torch.float32)
    dist.recv(t, src, tag=tag)
    return int(h[0]), t


class Inbox:
    """All of one iteration's messages from one peer on one tag, receives posted up front.

    The receiver knows from the plan which sample ranges the peer sends, in which order
    (``msgs`` = [(start, count), ...]), and the per-sample shape; it posts every header and
    payload receive at once (``irecv``), so a transfer proceeds as soon as the peer sends,
    never waiting for this process to reach its blocking receive. ``take(a, b)`` waits for
    messages in order until samples [a, b) are there; each header is checked against the
    plan."""

    def __init__(self, src: int, tag: int, msgs: list[tuple[int, int]], sample_shape: tuple[int, ...]):
        self.src = src
        self.posted = []
        for start, count in msgs:
            h = torch.empty(HEADER, dtype=torch.int64)
            t = torch.empty((count, *sample_shape), dtype=torch.float32)
            self.posted.append((start, h, t, dist.irecv(h, src, tag=tag), dist.irecv(t, src, tag=tag)))
        self.next = 0
        self.pieces: list[tuple[int, torch.Tensor]] = []

    def _receive_one(self) -> None:
        if self.next >= len(self.posted):
            raise RuntimeError(f"rank {self.src} sent fewer messages than the plan says")
        start, h, t, wh, wt = self.posted[self.next]
        self.next += 1
        wh.wait()
        wt.wait()
        nd = int(h[1])
        if int(h[0]) != start or nd != t.dim() or [int(d) for d in h[2:2 + nd]] != list(t.shape):
            raise RuntimeError(f"message from rank {self.src} does not match the plan: header {h.tolist()}, "
                               f"expected start {start} shape {list(t.shape)}")
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


class SampleBuffer:
    """Pieces of a minibatch-shaped tensor that arrive from a peer in arbitrary chunks;
    ``take(a, b)`` receives until samples [a, b) are all there and returns them stacked."""

    def __init__(self, src: int, tag: int):
        self.src, self.tag = src, tag
        self.pieces: list[tuple[int, torch.Tensor]] = []  # (start, tensor), disjoint

    def take(self, a: int, b: int) -> torch.Tensor:
        while not _covered(self.pieces, a, b):
            self.pieces.append(recv(self.src, self.tag))
        out, self.pieces = _cut(self.pieces, a, b)
        return out
