"""Weighted all-reduce of gradients between data-parallel groups.

Group ``g`` computed the mean gradient ``grad_g`` over its ``b_g`` samples; the global mean
gradient over the batch is ``sum_g (b_g / B) grad_g``. Every group leader scales its flat
gradient by its weight ``b_g / B`` and the leaders sum (``all_reduce``) over their own process
group (gloo or saatp). The weights must sum to 1 over the leaders.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def weighted_allreduce(flat: torch.Tensor, weight: float, group=None) -> torch.Tensor:
    """In place: ``flat <- sum over the group's ranks of weight_r * flat_r``; returns ``flat``."""
    if not weight >= 0:
        raise ValueError(f"all-reduce weight must be >= 0, got {weight}")
    flat.mul_(float(weight))
    if group is not None:
        dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
    return flat
