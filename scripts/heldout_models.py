"""Models and data of the held-out-style runs logged in docs/pipeline-figures-log.md and
docs/groups-cgp-figures-log.md (2026-11-28, evening), for reproducing them: run the commands
from this directory (``cd scripts``), naming ``heldout_models:FN``.

* ``tcn_mini``: a pipeline ``MODULE:FN`` (``saatp profile / train pipeline --model
  heldout_models:tcn_mini``): a residual 1-D conv net (a Conv1d stem, eight dilated Conv1d +
  GroupNorm blocks, pooling, a linear head; 102k parameters) on synthetic sequences of 64 steps
  x 16 channels, 10 classes.
* ``gelu_cnn`` and ``digits_split``: a model and a data set for ``saatp train groups`` and
  ``saatp train cgp`` (``--model heldout_models:gelu_cnn --data heldout_models:digits_split``):
  a GELU/LayerNorm CNN on scikit-learn's digits, a 70/30 split.
"""
import numpy as np
import torch
from torch import nn


class _Residual(nn.Module):
    def __init__(self, channels: int, dilation: int):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3, padding=dilation, dilation=dilation)
        self.norm = nn.GroupNorm(4, channels)

    def forward(self, x):
        return x + torch.relu(self.norm(self.conv(x)))


def tcn_mini():
    layers = [nn.Conv1d(16, 64, 1)] + [_Residual(64, d) for d in (1, 2, 4, 8, 1, 2, 4, 8)] + [
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 10)]

    def make_batch(B, step):
        g = torch.Generator().manual_seed(1000 + step)
        return torch.randn(B, 16, 64, generator=g), torch.randint(0, 10, (B,), generator=g)

    def loss_sum(out, y):
        return nn.functional.cross_entropy(out, y, reduction="sum")

    return nn.Sequential(*layers), make_batch, loss_sum


def gelu_cnn():
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 12, 3, padding=1), nn.GELU(),
        nn.Conv2d(12, 24, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.LayerNorm(24 * 16),
        nn.Linear(24 * 16, 64), nn.GELU(), nn.Linear(64, 10))


def digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.3, random_state=7)
    return torch.tensor(xtr), torch.tensor(ytr), torch.tensor(xte), torch.tensor(yte)
