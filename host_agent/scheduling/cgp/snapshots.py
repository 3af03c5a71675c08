"""The model holder's weight snapshots, written to its run directory as they are taken and read
back one at a time by :func:`.library.train_cgp`'s evaluation.

``snapshots{rank}.bin`` holds the weight vectors one after another, raw; ``snapshots{rank}.json``
the ``(t, version, samples)`` of each, their dtype and length, written when the holder ends.
Until 2026-11-28 the holder kept every snapshot in memory to the end of the run (two a second:
1.6 MB/s for the digits CNN, 40 MB/s for a model of 5M parameters) and the parent loaded them
all at once.
"""

from __future__ import annotations

import json
import os
from typing import Iterator

import numpy as np
import torch


def paths(out_dir: str, rank: int) -> tuple[str, str]:
    """(weights, index) of ``rank``'s snapshots in ``out_dir``."""
    base = os.path.join(out_dir, f"snapshots{rank}")
    return base + ".bin", base + ".json"


class SnapshotWriter:
    """Appends ``(t, version, samples, weights)`` snapshots to ``rank``'s files in ``out_dir``."""

    def __init__(self, out_dir: str, rank: int):
        self.bin_path, self.index_path = paths(out_dir, rank)
        self.index: list[tuple[float, int, int]] = []
        self.dtype: str | None = None
        self.numel = 0
        self._f = None

    def add(self, t: float, version: int, samples: int, w: torch.Tensor) -> None:
        a = w.detach().contiguous().numpy()
        if self._f is None:
            self._f = open(self.bin_path, "wb")
            self.dtype, self.numel = a.dtype.str, a.size
        if a.dtype.str != self.dtype or a.size != self.numel:
            raise ValueError(f"snapshot of {a.size} {a.dtype} values, the earlier ones {self.numel} {self.dtype}")
        a.tofile(self._f)
        self.index.append((float(t), int(version), int(samples)))

    def close(self) -> None:
        """Flush the weights and write the index (nothing if no snapshot was taken)."""
        if self._f is None:
            return
        self._f.close()
        self._f = None
        with open(self.index_path, "w") as f:
            json.dump(dict(dtype=self.dtype, numel=self.numel, snapshots=self.index), f)


def write_snapshots(out_dir: str, rank: int, snaps) -> None:
    """Write ``[(t, version, samples, weights), ...]`` as the holder would."""
    w = SnapshotWriter(out_dir, rank)
    for s in snaps:
        w.add(*s)
    w.close()


def read_snapshots(out_dir: str, rank: int) -> Iterator[tuple[float, int, int, torch.Tensor]]:
    """``rank``'s snapshots in order, one weight vector in memory at a time (a memory map)."""
    bin_path, index_path = paths(out_dir, rank)
    with open(index_path) as f:
        index = json.load(f)
    n, dtype = int(index["numel"]), np.dtype(index["dtype"])
    data = np.memmap(bin_path, dtype=dtype, mode="r")
    for k, (t, v, samples) in enumerate(index["snapshots"]):
        yield t, v, samples, torch.from_numpy(np.array(data[k * n:(k + 1) * n]))


def remove_snapshots(out_dir: str, rank: int) -> None:
    for p in paths(out_dir, rank):
        if os.path.exists(p):
            os.remove(p)
