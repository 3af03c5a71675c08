"""The parameter server's state and policy, independent of any transport (so it can be
tested without processes): bounded staleness (the gate of :mod:`.policy`) and damping.

``push(group, base, n, grad)`` queues a group's update computed on version ``base`` from
``n`` samples and returns the updates applied now as ``[(group, version)]``; the caller sends
each of those groups the new weights. An update is applied when, afterwards, every other
in-flight group is still at most ``s_max`` versions behind; when every in-flight group is
waiting and none may go, they are all applied as one version (no deadlock, and every
applied update's staleness stays ``<= s_max``; ``merged_waits`` counts these merges, ``held``
the pushes the gate did not apply at once).
The rule ``w -= lr (n / B_ref) h(s) g`` follows :mod:`.policy` (``h`` = damping of the
staleness ``s``, ``expected[g]`` = the grouping's predicted staleness for ``excess``).

**Accumulating while held** (CGP's ``accumulate``): a group whose update the gate holds may
be told to compute another batch on the same weights (:meth:`ServerState.hold_open`) instead
of waiting; its next push is added to the held update (the mean gradient over all their
samples, applied as one version). While the group computes, its held update stays *open*: it
is not applied, so every push still gets exactly one reply. This is the design's
"accumulate while waiting" at the server's gate: the fast groups keep computing while the
slowest catches up, and the number of versions -- the staleness -- does not grow.
"""

from __future__ import annotations

import torch

from .policy import damping


class ServerState:
    def __init__(self, w: torch.Tensor, lr: float, B_ref: int, s_max: float = 4, damping_kind: str = "excess"):
        if lr <= 0 or B_ref < 1 or s_max < 0:
            raise ValueError("need lr > 0, B_ref >= 1, s_max >= 0")
        damping(0, damping_kind)  # validates the name
        self.w = w.clone()
        self.v = 0
        self.lr, self.B_ref, self.s_max, self.kind = float(lr), int(B_ref), float(s_max), damping_kind
        self.base: dict[int, int] = {}
        self.expected: dict[int, float] = {}
        self.pending: list[tuple[int, int, int, torch.Tensor]] = []
        self.max_staleness = 0
        self.staleness: list[int] = []
        self.applied = 0
        self.held = 0  # pushes the gate did not apply at once
        self.merged_waits = 0  # times everybody waited and all went as one version
        self.accumulated = 0  # pushes added to a held update (accumulating while held)
        self.open: set[int] = set()  # groups computing a batch to add to their held update
        self.extra: dict[int, int] = {}  # per group: the batches added to its held update so far
        self.by_group: dict[int, list[int]] = {}  # the applied staleness per group since window()

    def begin(self, groups: int, expected=None) -> None:
        """A new phase: ``groups`` groups, all computing on the current version."""
        self.base = {g: self.v for g in range(groups)}
        self.expected = dict(enumerate(expected or [0.0] * groups))
        self.pending = []
        self.open, self.extra = set(), {}
        self.by_group = {}

    def window(self) -> dict[int, list[int]]:
        """The staleness of every update applied since the last call (or the phase's start),
        per group; starts a new window."""
        out, self.by_group = self.by_group, {}
        return out

    def retire(self, group: int) -> list[tuple[int, int]]:
        """The group computes no more this phase; returns the held updates this releases."""
        self.base.pop(group, None)
        return self.drain()

    def _allowed(self, group: int) -> bool:
        return all(self.v + 1 - b <= self.s_max for h, b in self.base.items() if h != group)

    def push(self, group: int, base: int, n: int, grad: torch.Tensor) -> list[tuple[int, int]]:
        if group not in self.base:
            raise ValueError(f"group {group} is not in flight")
        if base != self.base[group]:
            raise ValueError(f"group {group} pushed on version {base}, the server sent it {self.base[group]}")
        self.open.discard(group)
        for k, (g, b, m, gr) in enumerate(self.pending):
            if g == group:  # the batch it computed while its update was held: one update of m + n samples
                gr.mul_(m / (m + n)).add_(grad, alpha=n / (m + n))
                self.pending[k] = (g, b, m + n, gr)
                self.accumulated += 1
                self.extra[group] += 1
                break
        else:
            self.pending.append((group, base, n, grad))
            self.extra[group] = 0
        out = self.drain()
        if self.holding(group) and not self.extra[group]:
            self.held += 1  # a new update, held (a batch added to a held one is not counted again)
        return out

    def holding(self, group: int) -> bool:
        """Is ``group``'s update held by the gate (pushed, not applied)?"""
        return any(g == group for g, *_ in self.pending)

    def hold_open(self, group: int, most: int) -> bool:
        """Let ``group`` compute another batch on the weights it has, to add to its held
        update (its next :meth:`push`); until then the update is not applied. False (and
        nothing changes) if the group has no held update, or ``most`` batches were added to it."""
        if not self.holding(group) or self.extra[group] >= most:
            return False
        self.open.add(group)
        return True

    def drain(self) -> list[tuple[int, int]]:
        """Apply what the gate allows now; ``[(group, version)]`` to reply to."""
        out = []
        progress = True
        while progress and self.pending:
            progress = False
            for k, (g, b, nn_, gr) in enumerate(self.pending):
                if g not in self.open and self._allowed(g):
                    self.pending.pop(k)
                    out.append(self._apply(g, b, nn_, gr))
                    progress = True
                    break
            if not progress and len(self.pending) == len(self.base) and not self.open:
                # everybody waits and none may go alone: apply them all as one version, so
                # every staleness stays <= s_max (each was <= s_max before, by induction);
                # an open update's group is computing and will push (then this applies)
                self.merged_waits += 1
                merged = [g for g, *_ in self.pending]
                for g, b, nn_, gr in self.pending:
                    self._apply(g, b, nn_, gr, bump=False)
                self.pending = []
                self.v += 1
                for g in merged:
                    self.base[g] = self.v
                    out.append((g, self.v))
        return out

    def _apply(self, g: int, b: int, n: int, grad: torch.Tensor, bump: bool = True) -> tuple[int, int]:
        s = self.v - b
        self.max_staleness = max(self.max_staleness, s)
        self.staleness.append(s)
        self.by_group.setdefault(g, []).append(s)
        h = damping(s, self.kind, self.expected.get(g, 0.0))
        self.w.sub_(grad, alpha=self.lr * (n / self.B_ref) * h)
        self.applied += 1
        if bump:
            self.v += 1
            self.base[g] = self.v
        return g, self.v
