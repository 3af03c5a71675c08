"""Single-process training on the same batches: what a pipeline run must reproduce."""

from __future__ import annotations

import torch

from .models import build_layers, cut, draw_batch, load_model


def train(model: str, cuts: list[int], B: int, steps: int, lr: float = 0.05, momentum: float = 0.9,
          seed: int = 0, batches: list[int] | None = None) -> list[dict[str, torch.Tensor]]:
    """Full-minibatch SGD for ``steps`` iterations (batches 0..steps-1, as the pipeline's
    warm-up + timed steps; or the batch of each step in ``batches``); returns the state dicts
    of the stage modules cut at ``cuts``."""
    spec = load_model(model)
    layers = build_layers(spec, seed)
    opt = torch.optim.SGD(layers.parameters(), lr=lr, momentum=momentum)
    for step in (range(steps) if batches is None else batches):
        x, y = draw_batch(spec, B, step, seed)
        loss = spec.loss_sum(layers(x), y) / B
        loss.backward()
        opt.step()
        opt.zero_grad()
    return [m.state_dict() for m in cut(layers, cuts)]
