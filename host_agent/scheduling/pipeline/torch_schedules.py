"""The standard baselines: torch.distributed.pipelining's ``ScheduleGPipe`` and
``Schedule1F1B`` on the same stage modules, with M equal microbatches (M must divide B:
torch splits the target the same way as the input and rejects mismatched sizes)."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

TORCH_SCHEDULES = ("torch-gpipe", "torch-1f1b")


def can_run(schedule: str, M: int, B: int, S: int) -> bool:
    """Whether torch's ``schedule`` runs M microbatches of a minibatch of B on S stages: M
    must divide B (torch splits the target as the input and rejects mismatched sizes), and
    ``Schedule1F1B`` needs M >= S."""
    return 1 <= M <= B and B % M == 0 and (schedule != "torch-1f1b" or M >= S)


def _contiguous_output(_module, _args, out):
    return out.contiguous() if isinstance(out, torch.Tensor) else out


def make_step(schedule: str, module: nn.Module, rank: int, world: int, M: int, B: int,
              loss_sum: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
              example: tuple[torch.Tensor, torch.Tensor] | None = None) -> Callable:
    """Returns ``step(x, y) -> loss`` running one iteration of the torch schedule on this rank.
    ``example``: this stage's (input, output) for one sample (:func:`.stage.stage_io`), from
    which the stage learns its microbatches' shapes and types. Without it torch infers them at
    the first step by running the stage on tensors of its own in training mode, which counted
    them in every BatchNorm's running statistics (one batch more in ``num_batches_tracked``
    than the same training in one process, 2026-11-28)."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    if B % M:
        raise ValueError(f"{schedule}: M={M} must divide B={B}")
    cls = {"torch-gpipe": ScheduleGPipe, "torch-1f1b": Schedule1F1B}[schedule]
    b = B // M
    meta = {}
    if example is not None:
        # activations carry gradients (the stage's input from the previous stage too); the
        # first stage's input is data
        grad = (rank > 0, True)
        meta = {f"{k}_args": torch.empty((b, *t.shape[1:]), dtype=t.dtype, device="meta").requires_grad_(
                    g and t.is_floating_point()) for k, t, g in zip(("input", "output"), example, grad)}
    # torch sends a stage's output as it is, and gloo refuses a tensor that is not contiguous
    # ("input tensor has to be contiguous"): a stage ending in a transpose or permute failed
    # torch's schedules until 2026-11-28 (our runtime sends a contiguous copy, wire.as_message)
    module.register_forward_hook(_contiguous_output)
    stage = PipelineStage(module, rank, world, torch.device("cpu"), **meta)

    def loss_fn(out, tgt):  # mean over the microbatch; scale_grads divides by M -> minibatch mean
        return loss_sum(out, tgt) / b

    sched = cls(stage, n_microbatches=M, loss_fn=loss_fn, scale_grads=True)

    def step(x, y) -> float:
        # the first stage feeds the input, the last the target (one stage: both)
        losses: list = []
        kw = dict(target=y, losses=losses) if rank == world - 1 else {}
        if rank == 0:
            sched.step(x, **kw)
        else:
            sched.step(**kw)
        return float(sum(float(l.detach()) for l in losses)) / M if rank == world - 1 else 0.0

    return step
