"""Measured against modelled: does a grouping with merged workers deliver what the model said?

CGP's server merges workers when its model (:func:`.grouping.throughput_loss`) rates the
merged grouping better, from the workers' compute times and its own time per update. A
model can be wrong in ways its inputs do not show: on the held-out scenario (2026-11-28) the
merged groups' steps ran 2-6x slower than the same workers' alone (an all-reduce per step
under CPU quotas, a server time per update inflated by its own throttling), and CGP ran at
0.2-0.9 of SSP's samples/s. So the server also *measures* each grouping: over the decision
intervals of a phase it sums the samples the pushes brought and the samples the model
predicted for the grouping in place (its samples/s at each decision times the interval).
Their ratio is the grouping's efficiency. The model's level of error is the same for every
grouping when it is right, so the ratio is compared with that of the last phase of
singletons: a merged grouping whose efficiency falls below ``worse`` times that, once
measured for ``least_s`` seconds, is undone, and merging is then not proposed for
``backoff_s`` seconds, doubling at every such verdict (a merge that keeps failing is
retried ever more rarely; one that measures well resets it).
"""

from __future__ import annotations

from dataclasses import dataclass, field


def merged(groups) -> bool:
    return any(len(g) > 1 for g in groups)


@dataclass
class MergeCheck:
    worse: float = 0.8
    least_s: float = 0.5
    backoff_s: float = 1.0
    single_eff: float | None = None  # the efficiency of the last phase of singletons
    ban_until: float = float("-inf")
    verdicts: int = 0
    _backoff: float | None = None
    _mark: tuple | None = None
    _sums: list = field(default_factory=lambda: [0.0, 0.0, 0.0])  # measured, predicted samples, seconds

    def new_phase(self) -> None:
        """A new grouping: its measurement starts at its first decision."""
        self._mark, self._sums = None, [0.0, 0.0, 0.0]

    def observe(self, now: float, samples: int, groups, predicted_per_s: float) -> None:
        """A decision at ``now`` (seconds), with ``samples`` pushed so far and the model's
        samples/s for ``groups``, the grouping in place: the interval since the last decision
        of the same grouping is added."""
        g = [tuple(x) for x in groups]
        if self._mark is not None and self._mark[2] == g:
            t0, s0, _, pred0 = self._mark
            dt = now - t0
            if dt > 0:
                self._sums[0] += samples - s0
                self._sums[1] += 0.5 * (pred0 + predicted_per_s) * dt
                self._sums[2] += dt
        self._mark = (now, samples, g, predicted_per_s)
        if not merged(g) and self._sums[2] >= self.least_s and self._sums[1] > 0:
            self.single_eff = self._sums[0] / self._sums[1]

    def efficiency(self) -> float | None:
        """Measured over predicted samples of the grouping in place, once measured for
        ``least_s`` seconds."""
        return self._sums[0] / self._sums[1] if self._sums[2] >= self.least_s and self._sums[1] > 0 else None

    def measured_worse(self, now: float, groups) -> bool:
        """Has the merged grouping ``groups`` measured worse than singletons did? If so the
        caller undoes it, and merging is banned for the backoff (doubled at each verdict)."""
        eff = self.efficiency()
        if not merged(groups) or eff is None or self.single_eff is None:
            return False
        if eff >= self.worse * self.single_eff:
            self._backoff = None  # a merge that measures well: the next failure starts afresh
            return False
        self._backoff = self.backoff_s if self._backoff is None else 2 * self._backoff
        self.ban_until = now + self._backoff
        self.verdicts += 1
        return True

    def banned(self, now: float) -> bool:
        """Is merging banned at ``now``?"""
        return now < self.ban_until
