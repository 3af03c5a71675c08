"""One pipeline stage: runs its op order for one minibatch.

Forward F(j) takes samples ``[a, b)`` of the minibatch: stage 0 slices its input, later stages
re-chunk what stage s-1 sent (:class:`~.wire.Inbox`, receives posted up front from the plan),
run their module and send the
output on (non-blocking). The last stage computes ``loss_sum / B`` per microbatch, so the
accumulated gradients equal the minibatch-mean loss's. Backward B(j) back-propagates the
gradients received for the same samples through the graph F(j) built and sends the input
gradients back. Parameter gradients accumulate over the microbatches; the caller steps the
optimizer once per iteration.
"""

from __future__ import annotations

import copy
import time
from typing import Callable, Sequence

import torch
from torch import nn

from .wire import TAG_ACT, TAG_GRAD, Buffers, Inbox, isend


def _starts(rows: Sequence[int]) -> list[int]:
    out = [0]
    for r in rows:
        out.append(out[-1] + int(r))
    return out


def _messages(rows: Sequence[int], order: Sequence[tuple[str, int]], kind: str) -> list[tuple[int, int]]:
    """(start, count) of the messages a stage sends, in its op order: one per op of ``kind``."""
    st = _starts(rows)
    return [(st[j], int(rows[j])) for k, j in order if k == kind]


def stage_shapes(stages: Sequence[nn.Module], x1: torch.Tensor) -> list[tuple[int, ...]]:
    """Per-sample output shape of every stage (:func:`stage_io`)."""
    return [tuple(out.shape[1:]) for _, out in stage_io(stages, x1)]


def stage_io(stages: Sequence[nn.Module], x1: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(input, output) of every stage for the one sample ``x1``: a dry forward in eval mode (a
    BatchNorm in training mode refuses one sample and would count it in its running
    statistics, a Dropout would draw from the random stream)."""
    return [(h, y) for h, y, _ in _dry_forward(stages, x1)]


def writes_input(stages: Sequence[nn.Module], x2: torch.Tensor) -> list[bool]:
    """Per stage (or per layer, given the layers), whether its training forward changes its
    input in place (a ``ReLU(inplace=True)`` or a ``Dropout(inplace=True)`` first), seen by the
    input's version counter in a forward of copies of the stages in training mode on ``x2``
    (two samples: a BatchNorm in training refuses one), the random stream put back; where that
    fails (a model that needs more samples), in the eval-mode dry forward of :func:`stage_io`.
    Such a stage is given a copy of its input (:func:`copy_input_first`)."""
    try:
        with torch.random.fork_rng(devices=[]):
            return [wrote for *_, wrote in _dry_forward(copy.deepcopy(list(stages)), x2, training=True)]
    except (RuntimeError, ValueError):
        return [wrote for *_, wrote in _dry_forward(stages, x2[:1])]


def copy_input_first(module: nn.Module) -> None:
    """Call ``module`` on a copy of its input from now on (a forward pre-hook; its parameters
    keep their names), for a stage or layer that changes its input in place
    (:func:`writes_input`): autograd refuses an in-place change of a leaf that needs a gradient
    (a later stage's received input: until 2026-11-28 a stage starting with a
    ``ReLU(inplace=True)`` failed, in our runtime, torch's schedules and the profiler, with "a
    leaf Variable that requires grad is being used in an in-place operation"), and stage 0
    would change the minibatch that every run of a session uses."""
    module.register_forward_pre_hook(lambda _m, args: tuple(a.clone() if isinstance(a, torch.Tensor) else a
                                                            for a in args))


def _dry_forward(stages: Sequence[nn.Module], x: torch.Tensor,
                 training: bool = False) -> list[tuple[torch.Tensor, torch.Tensor, bool]]:
    """(input, output, whether the stage changed its input) of every stage, run in eval mode
    (or ``training``) without gradients; the modules' training flags are put back."""
    out = []
    modes = [[m.training for m in st.modules()] for st in stages]
    try:
        with torch.no_grad():
            h = x.clone()
            for st in stages:
                st.train(training)
                version = h._version
                y = st(h)
                out.append((h, y, h._version != version))
                h = y
    finally:
        for st, flags in zip(stages, modes):
            for m, f in zip(st.modules(), flags):
                m.training = f
    return out


def run_iteration(module: nn.Module, rank: int, world: int, rows_all: Sequence[Sequence[int]],
                  orders_all: Sequence[Sequence[tuple[str, int]]], B: int, x: torch.Tensor | None,
                  y: torch.Tensor | None, loss_sum: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                  shapes: Sequence[tuple[int, ...]], peers: Sequence[int] | None = None,
                  clock: list[float] | None = None, trace: list | None = None,
                  buffers: Buffers | None = None) -> float:
    """Run stage ``rank``'s ops of the plan (every stage's rows and orders: a stage posts its
    receives from what its neighbours will send); returns the summed loss on the last stage
    (0.0 elsewhere). ``x`` is needed on stage 0, ``y`` on the last stage; ``shapes[s]`` is
    stage s's per-sample output shape. ``peers[s]`` is the torch.distributed rank of stage s
    (default: rank s), so a pipeline may be a sub-chain of a larger world. ``clock[0]``, when
    given, accumulates the seconds spent in this stage's forward and backward computations.
    ``trace``, when given, gets one ``(kind, j, t_take, t_start, t_end, cpu_s)`` per op: when
    the op began waiting for its input, when its computation started and ended (after the send
    was posted), on the shared monotonic clock, and the thread CPU seconds of the computation.
    ``buffers``, when given, keeps the receive buffers for the next iteration of the same plan
    (:class:`~.wire.Buffers`: fresh ones cost page faults)."""
    last = rank == world - 1
    peers = list(range(world)) if peers is None else list(peers)
    tick = time.perf_counter
    rows, order = rows_all[rank], orders_all[rank]
    starts = _starts(rows)
    if starts[-1] != B:
        raise ValueError(f"stage {rank}: microbatch sizes {list(rows)} do not sum to B={B}")
    acts = Inbox(peers[rank - 1], TAG_ACT, _messages(rows_all[rank - 1], orders_all[rank - 1], "F"),
                 shapes[rank - 1], buffers) if rank > 0 else None
    grads = Inbox(peers[rank + 1], TAG_GRAD, _messages(rows_all[rank + 1], orders_all[rank + 1], "B"),
                  shapes[rank], buffers) if not last else None

    saved: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    pending: list = []
    total = 0.0
    cpu = time.thread_time
    for kind, j in order:
        a, b = starts[j], starts[j + 1]
        if trace is not None:
            tw = tick()
        if kind == "F":
            if rank == 0:
                inp = x[a:b]
            else:
                inp = acts.take(a, b).requires_grad_()
            t0 = tick() if clock is not None or trace is not None else 0.0  # compute only, not the wait
            c0 = cpu() if trace is not None else 0.0
            out = module(inp)
            if last:
                out = loss_sum(out, y[a:b]) / B
                total += float(out.detach())
            if clock is not None:
                clock[0] += tick() - t0
            if not last:
                pending += isend(out, peers[rank + 1], TAG_ACT)
            saved[j] = (inp, out)
        elif kind == "B":
            inp, out = saved.pop(j)
            g = None if last else grads.take(a, b)
            t0 = tick() if clock is not None or trace is not None else 0.0
            c0 = cpu() if trace is not None else 0.0
            # an output that needs no gradient (a first stage with no trainable parameter: a
            # Flatten, frozen layers) has nothing to back-propagate; its backward failed with
            # "element 0 of tensors does not require grad" until 2026-11-28
            if out.requires_grad:
                if last:
                    out.backward()
                else:
                    out.backward(g)
            if clock is not None:
                clock[0] += tick() - t0
            if rank > 0:
                pending += isend(inp.grad if inp.grad is not None else torch.zeros_like(inp), peers[rank - 1], TAG_GRAD)
        else:
            raise ValueError(f"unknown op {kind!r}")
        if trace is not None:
            trace.append((kind, j, tw, t0, tick(), cpu() - c0))
    if saved:
        raise ValueError(f"stage {rank}: forwards without backward: {sorted(saved)}")
    for box in (acts, grads):
        if box is not None:
            box.close()
    for w in pending[::2]:  # (work, buffer) pairs
        w.wait()
    return total
