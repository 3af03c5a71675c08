"""Executable joint DP+MP plans: which process holds which layers, and what a re-plan moves.

A plan is a list of groups; a group is a chain of process ranks (one pipeline stage per rank,
a single rank = a whole replica) with layer bounds, a microbatch size and its share of the
global batch. ``from_planner`` converts the online planner's :class:`~..online.model.Plan`.
``transfers(old, new)`` lists the (src, dst, layer) moves a re-plan needs: a rank that will
hold a layer it does not hold now receives that layer's parameters and optimizer state
(momentum) from a rank that holds it now (groups are consistent, so any holder will do; the
choice spreads the sends over the holders).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Group:
    ranks: tuple[int, ...]  # pipeline order; ranks[0] is the leader
    bounds: tuple[int, ...]  # stage k holds layers [bounds[k], bounds[k+1])
    mu: int  # microbatch size
    share: int  # samples of each global batch

    def __post_init__(self) -> None:
        if len(self.bounds) != len(self.ranks) + 1 or any(b <= a for a, b in zip(self.bounds, self.bounds[1:])):
            raise ValueError(f"group {self.ranks}: bounds {self.bounds} must give each stage >= 1 layer")
        if self.mu < 1 or self.share < 1:
            raise ValueError(f"group {self.ranks}: microbatch {self.mu} and share {self.share} must be >= 1")

    @property
    def leader(self) -> int:
        return self.ranks[0]

    def stage_of(self, rank: int) -> int:
        return self.ranks.index(rank)

    def layers_of(self, rank: int) -> range:
        k = self.stage_of(rank)
        return range(self.bounds[k], self.bounds[k + 1])

    def microbatches(self) -> list[int]:
        M = -(-self.share // self.mu)
        q, r = divmod(self.share, M)
        return [q + 1] * r + [q] * (M - r)


@dataclass(frozen=True)
class ExecPlan:
    groups: tuple[Group, ...]
    n_layers: int

    def __post_init__(self) -> None:
        seen: set[int] = set()
        for g in self.groups:
            if g.bounds[0] != 0 or g.bounds[-1] != self.n_layers:
                raise ValueError(f"group {g.ranks} must hold layers 0..{self.n_layers}, got bounds {g.bounds}")
            if seen & set(g.ranks):
                raise ValueError(f"rank(s) {sorted(seen & set(g.ranks))} in two groups")
            seen |= set(g.ranks)
        if not self.groups:
            raise ValueError("a plan needs at least one group")

    @property
    def B(self) -> int:
        return sum(g.share for g in self.groups)

    @property
    def active(self) -> tuple[int, ...]:
        return tuple(sorted(r for g in self.groups for r in g.ranks))

    @property
    def leaders(self) -> tuple[int, ...]:
        return tuple(sorted(g.leader for g in self.groups))

    def group_of(self, rank: int) -> int | None:
        for i, g in enumerate(self.groups):
            if rank in g.ranks:
                return i
        return None

    def holdings(self, world: int) -> list[frozenset[int]]:
        out: list[set[int]] = [set() for _ in range(world)]
        for g in self.groups:
            for r in g.ranks:
                out[r] |= set(g.layers_of(r))
        return [frozenset(s) for s in out]

    def to_dict(self) -> dict:
        return {"n_layers": self.n_layers, "groups": [
            {"ranks": list(g.ranks), "bounds": list(g.bounds), "mu": g.mu, "share": g.share} for g in self.groups]}

    @classmethod
    def from_dict(cls, d: dict) -> ExecPlan:
        return cls(tuple(Group(tuple(int(r) for r in g["ranks"]), tuple(int(b) for b in g["bounds"]), int(g["mu"]),
                               int(g["share"])) for g in d["groups"]), int(d["n_layers"]))

    def structure(self) -> tuple:
        """What decides the placement of layers (shares and microbatches excluded)."""
        return tuple(sorted((g.ranks, g.bounds) for g in self.groups))


def from_planner(p, n_layers: int) -> ExecPlan:
    """The online planner's Plan (devices = process ranks) as an ExecPlan."""
    groups = [Group(tuple(int(d) for d in g.devices), tuple(int(c) for c in g.cuts), int(g.mu), int(s))
              for g, s in zip(p.groups, p.shares) if int(s) > 0]
    return ExecPlan(tuple(groups), n_layers)


def transfers(old: list[frozenset[int]], new: list[frozenset[int]]) -> list[tuple[int, int, int]]:
    """(src, dst, layer) for every layer a rank must newly hold, in a deterministic order."""
    holders: dict[int, list[int]] = {}
    for r, layers in enumerate(old):
        for l in layers:
            holders.setdefault(l, []).append(r)
    out = []
    for dst, layers in enumerate(new):
        for l in sorted(layers - old[dst]):
            hs = holders.get(l)
            if not hs:
                raise ValueError(f"layer {l} is held by no rank: cannot migrate it to rank {dst}")
            out.append((hs[(dst + l) % len(hs)], dst, l))
    return out


def migration_bytes(moves, layer_bytes) -> float:
    """Bytes a re-plan moves: parameters plus the optimizer state (one momentum buffer each)."""
    lb = np.asarray(layer_bytes, dtype=float)
    return float(sum(2.0 * lb[l] for _, _, l in moves))
