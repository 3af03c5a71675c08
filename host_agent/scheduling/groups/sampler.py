"""Uneven data assignment: each group takes its share of every global batch.

``ShareSampler(n, B, seed)`` walks seeded epoch permutations of ``n`` training samples in
global batches of ``B``; ``split(step, shares)`` cuts the batch of global step ``step`` into
contiguous pieces of sizes ``shares`` (one per group, summing to ``B``). Every process
computes the same indices from (seed, step), so no index lists cross the network, and
the groups together see each sample of an epoch exactly once whatever the shares.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class ShareSampler:
    def __init__(self, n: int, B: int, seed: int = 0):
        if not 1 <= B <= n:
            raise ValueError(f"global batch B={B} must be in 1..{n} (the training set size)")
        self.n, self.B, self.seed = int(n), int(B), int(seed)
        self.per_epoch = self.n // self.B  # the last partial batch of an epoch is dropped
        self._epoch = -1
        self._perm: torch.Tensor | None = None

    def batch(self, step: int) -> torch.Tensor:
        """Indices of global batch ``step`` (B of them)."""
        epoch, k = divmod(int(step), self.per_epoch)
        if epoch != self._epoch:
            self._perm = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed * 7919 + epoch))
            self._epoch = epoch
        return self._perm[k * self.B:(k + 1) * self.B]

    def split(self, step: int, shares: Sequence[int]) -> list[torch.Tensor]:
        shares = [int(s) for s in shares]
        if sum(shares) != self.B or min(shares, default=0) < 0:
            raise ValueError(f"shares {shares} must be >= 0 and sum to B={self.B}")
        idx = self.batch(step)
        out, a = [], 0
        for s in shares:
            out.append(idx[a:a + s])
            a += s
        return out
