"""One flat vector of a model's parameter gradients, as the real-process trainers (CGP's
workers, the groups executor's stages) send them.

A parameter without a gradient after ``backward`` (frozen with ``requires_grad=False``, or
not used by ``forward``) contributes zeros, so every process's vector has the layout of
``parameters_to_vector(model.parameters())`` and an update leaves that parameter alone.
"""

from __future__ import annotations

from typing import Iterable

import torch


def grads_to_vector(params: Iterable[torch.nn.Parameter], out: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.cat`` of every parameter's gradient, flattened (zeros where there is none),
    into ``out`` if given."""
    parts = [p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel()) for p in params]
    if not parts:
        return torch.zeros(0) if out is None else out[:0]
    return torch.cat(parts) if out is None else torch.cat(parts, out=out)
