"""Models as users write them, for the tests that take a ``MODULE:FN``:
``tests.testsupport.user_models:spec`` trains only on microbatches of 2 samples or more
(BatchNorm in training mode) and has a Dropout; ``...:net`` is a module with its own
``forward``, not an ``nn.Sequential``."""

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


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x):
        return self.body(x)


def net() -> nn.Module:
    return Net()


def module_list() -> nn.ModuleList:
    """A list of layers as an nn.ModuleList, which has no forward of its own."""
    return nn.ModuleList([nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10)])


def list_with_a_function() -> list:
    return [nn.Flatten(), torch.relu, nn.Linear(64, 10)]
