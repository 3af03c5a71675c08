"""A model that trains only on microbatches of 2 samples or more (BatchNorm in training
mode), with a Dropout: for the profiler's and the pipeline runtime's tests
(``tests.testsupport.bn_model:spec`` as a ``MODULE:FN``)."""

import torch
from torch import nn

from host_agent.scheduling.pipeline.models import ModelSpec


def _build() -> nn.Sequential:
    return nn.Sequential(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU()),
                         nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.1)), nn.Linear(16, 4))


def _batch(B: int, step: int):
    g = torch.Generator().manual_seed(step)
    return torch.randn(B, 8, generator=g), torch.randint(0, 4, (B,), generator=g)


def spec() -> ModelSpec:
    return ModelSpec("bn-mlp", _build, _batch, lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
