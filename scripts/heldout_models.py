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
* ``mixer_mini`` (pipelines): an MLP-Mixer (4x4 patches of 32x32x3 synthetic images, six mixer
  blocks, a linear head; 331k parameters), 10 classes.
* ``bn_cnn`` and ``digits_60_40`` (groups and CGP): a BatchNorm/Dropout CNN of 19k parameters
  and a stratified 60/40 split of digits, with ``heldout_trace_one_slow.csv`` (12 slots: in slot
  s, process d is slowed 2-4x when (s + d) mod 5 = 0).
"""
import numpy as np
import torch
from torch import nn


def _on_random_inputs(layers, shape, seed):
    """A pipeline ``MODULE:FN``'s triple for ``layers`` on standard-normal inputs of ``shape``
    per sample and random labels of 10 classes, batch ``step`` drawn from ``seed + step``."""
    def make_batch(B, step):
        g = torch.Generator().manual_seed(seed + step)
        return torch.randn(B, *shape, generator=g), torch.randint(0, 10, (B,), generator=g)

    def loss_sum(out, y):
        return nn.functional.cross_entropy(out, y, reduction="sum")

    return nn.Sequential(*layers), make_batch, loss_sum


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

    return _on_random_inputs(layers, (16, 64), seed=1000)


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

class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.n1 = nn.LayerNorm(dim)
        self.tok = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.n2 = nn.LayerNorm(dim)
        self.ch = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):  # B x T x D
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


class Patches(nn.Module):
    def __init__(self, p, dim):
        super().__init__()
        self.p = p
        self.proj = nn.Linear(p * p * 3, dim)

    def forward(self, x):  # B x 3 x 32 x 32
        B, C, H, W = x.shape
        x = x.unfold(2, self.p, self.p).unfold(3, self.p, self.p)  # B C h w p p
        x = x.permute(0, 2, 3, 1, 4, 5).reshape(B, (H // self.p) * (W // self.p), C * self.p * self.p)
        return self.proj(x)


class MeanTokens(nn.Module):
    def forward(self, x):
        return x.mean(1)


def mixer_mini():
    dim, tokens = 96, 64
    layers = [Patches(4, dim)] + [MixerBlock(tokens, dim) for _ in range(6)] + [nn.LayerNorm(dim), MeanTokens(),
                                                                                nn.Linear(dim, 10)]

    return _on_random_inputs(layers, (3, 32, 32), seed=500)


def bn_cnn():
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AvgPool2d(2),
        nn.Flatten(), nn.Linear(32 * 16, 48), nn.ReLU(), nn.Dropout(0.1), nn.Linear(48, 10))


def digits_60_40():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.4, random_state=11, stratify=y)
    return torch.tensor(xtr), torch.tensor(ytr), torch.tensor(xte), torch.tensor(yte)
