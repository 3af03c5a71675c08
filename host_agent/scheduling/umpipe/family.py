"""UMPIPE as a family of executable plans, with memory limits.

A candidate is (order family, per-stage microbatch sizes): ``fill-drain`` (GPipe order, the
UMPIPE paper's setting) or ``1f1b`` (backwards as early as possible, bounded in-flight
microbatches; see :mod:`..orders`). Each candidate is simulated with :func:`..orders.schedule`,
which also gives each stage's peak of stashed samples; with a cost model built from a profile
the stage's memory is ``static + peak x stash_bytes_per_sample``. A candidate whose memory
exceeds a stage's limit is never returned (``PlanFamily.best`` is None if nothing fits).

Searches:
* fill-drain: DGAP with ``dual=False`` (the runtime back-propagates through the graphs each
  forward built, so a stage's backward microbatches retrace its forward ones), seeded with
  every equal split; fill-drain stashes the whole minibatch whatever the split, so it either
  fits or not;
* 1f1b: per-stage microbatch counts by coordinate descent from the best equal 1F1B plan,
  then first-improvement local search (shift samples between adjacent microbatches, split,
  merge, change a stage's in-flight cap), seeded also with the fill-drain winner's rows.
The baselines (GPipe and 1F1B with M equal microbatches on every stage, best M) are searched
over the same memory limits, so comparisons are like for like.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..costmodel import PipelineCosts, equal_sizes
from ..orders import schedule
from .dgap import DGAP


@dataclass
class Candidate:
    method: str
    kind: str
    rows: list[list[int]]
    orders: list[list[tuple[str, int]]]
    predicted_s: float
    peak_samples: list[int]
    memory_bytes: list[float] | None
    fits: bool
    cap: list[int] | None = None

    def describe(self) -> str:
        return " | ".join(",".join(map(str, r)) for r in self.rows)

    def public(self) -> dict:
        return dict(method=self.method, kind=self.kind, rows=self.rows, orders=[[list(o) for o in st] for st in self.orders],
                    predicted_s=self.predicted_s, peak_samples=self.peak_samples, memory_bytes=self.memory_bytes,
                    fits=self.fits, cap=self.cap)


def memory_of(costs: PipelineCosts, peak: Sequence[int]) -> list[float] | None:
    st, sp = costs.info.get("static_bytes"), costs.info.get("stash_bytes_per_sample")
    if st is None or sp is None:
        return None
    return [float(a + p * b) for a, b, p in zip(st, sp, peak)]


def evaluate(costs: PipelineCosts, rows, kind: str, method: str = "", cap=None,
             limit: Sequence[float] | None = None) -> Candidate:
    r = schedule(costs, rows, kind, cap=cap)
    mem = memory_of(costs, r.peak_samples)
    fits = True
    if limit is not None:
        if mem is None:
            raise ValueError("memory limits need a cost model with memory figures (from a profile)")
        fits = all(m <= l for m, l in zip(mem, limit))
    return Candidate(method or kind, kind, [list(map(int, x)) for x in rows], r.orders, r.makespan,
                     r.peak_samples, mem, fits, None if cap is None else list(cap))


def equal_candidates(costs: PipelineCosts, kind: str, Ms: Sequence[int], limit=None) -> list[Candidate]:
    name = "GPipe" if kind == "fill-drain" else "1F1B"
    return [evaluate(costs, [equal_sizes(costs.B, M)] * costs.S, kind, f"{name} (M={M})", limit=limit)
            for M in Ms if 1 <= M <= costs.B]


def best_of(cands: Sequence[Candidate]) -> Candidate | None:
    ok = [c for c in cands if c.fits]
    return min(ok, key=lambda c: c.predicted_s) if ok else None


def _moves(rows: list[list[int]], cap: list[int], rng: np.random.Generator, mmax: int):
    S = len(rows)
    s = int(rng.integers(0, S))
    r = list(rows[s])
    op = int(rng.integers(0, 5))
    new_cap = list(cap)
    if op == 0 and len(r) >= 2:  # shift samples between adjacent microbatches
        i = int(rng.integers(0, len(r) - 1))
        a, b = (i, i + 1) if rng.random() < 0.5 else (i + 1, i)
        d = int(rng.integers(1, max(2, r[a] // 2 + 1)))
        d = min(d, r[a] - 1)
        if d < 1:
            return None
        r[a] -= d
        r[b] += d
    elif op == 1 and len(r) < mmax:  # split
        i = int(rng.integers(0, len(r)))
        if r[i] < 2:
            return None
        h = r[i] // 2
        r[i:i + 1] = [h, r[i] - h]
    elif op == 2 and len(r) >= 2:  # merge
        i = int(rng.integers(0, len(r) - 1))
        r[i:i + 2] = [r[i] + r[i + 1]]
    elif op == 3:  # re-split into m equal parts
        m = int(rng.integers(1, mmax + 1))
        if m > sum(r):
            return None
        r = equal_sizes(sum(r), m)
    else:  # in-flight cap
        new_cap[s] = max(1, cap[s] + (1 if rng.random() < 0.5 else -1))
    out = [list(x) for x in rows]
    out[s] = r
    return out, new_cap


def search_1f1b(costs: PipelineCosts, mmax: int, limit=None, starts: Sequence[list[list[int]]] = (),
                evals: int = 1500, seed: int = 0) -> Candidate | None:
    S, B = costs.S, costs.B
    rng = np.random.default_rng(seed)
    default_cap = [S - s for s in range(S)]

    def score(rows, cap):
        c = evaluate(costs, rows, "1f1b", "UMPIPE 1F1B", cap=cap, limit=limit)
        return (c.predicted_s if c.fits else float("inf")), c

    best = None
    pool = [[equal_sizes(B, M)] * S for M in range(1, min(B, mmax) + 1)] + [list(map(list, r)) for r in starts]
    for rows in pool:
        f, c = score(rows, default_cap)
        if best is None or f < best[0]:
            best = (f, rows, default_cap, c)
    # coordinate descent on per-stage microbatch counts
    for _ in range(2):
        for s in range(S):
            for M in range(1, min(B, mmax) + 1):
                rows = [list(x) for x in best[1]]
                rows[s] = equal_sizes(B, M)
                f, c = score(rows, best[2])
                if f < best[0]:
                    best = (f, rows, best[2], c)
    n = 0
    while n < evals:
        mv = _moves(best[1], best[2], rng, mmax)
        if mv is None:
            continue
        n += 1
        f, c = score(*mv)
        if f < best[0] * (1 - 1e-9):
            best = (f, mv[0], mv[1], c)
    return best[3] if np.isfinite(best[0]) else None


@dataclass
class PlanFamily:
    best: Candidate | None  # UMPIPE: the fastest fitting unequal plan of either order family
    fill_drain: Candidate | None
    one_f_one_b: Candidate | None
    gpipe_best: Candidate | None
    f1b_best: Candidate | None
    dual_fill_drain_s: float | None  # dual-chromosome DGAP's model time (not executable here)
    baselines: list[Candidate] = field(default_factory=list)

    def public(self) -> dict:
        f = lambda c: None if c is None else c.public()
        return dict(umpipe=f(self.best), umpipe_fill_drain=f(self.fill_drain), umpipe_1f1b=f(self.one_f_one_b),
                    gpipe_best=f(self.gpipe_best), one_f_one_b_best=f(self.f1b_best),
                    dual_fill_drain_s=self.dual_fill_drain_s,
                    baselines=[dict(method=c.method, predicted_s=c.predicted_s, fits=c.fits,
                                    peak_samples=c.peak_samples, memory_bytes=c.memory_bytes) for c in self.baselines])


def plan(costs: PipelineCosts, mmax: int = 16, limit: Sequence[float] | None = None, seed: int = 0,
         pop: int = 64, gens: int = 60, evals: int = 1500, dual_check: bool = True) -> PlanFamily:
    """Search both order families under the memory ``limit`` (bytes per stage, or None)."""
    mmax = min(mmax, costs.B)
    Ms = list(range(1, mmax + 1))
    g = equal_candidates(costs, "fill-drain", Ms, limit)
    o = equal_candidates(costs, "1f1b", Ms, limit)
    gb, ob = best_of(g), best_of(o)
    fd = None
    dual_s = None
    if gb is not None:  # fill-drain stashes all of B: if one fill-drain plan fits, all do
        res = DGAP(pop=pop, gens=gens, mmax=mmax, dual=False, seed=seed).run(costs)
        rows = [[int(v) for v in r if v > 0] for r in res.X]
        fd = evaluate(costs, rows, "fill-drain", "UMPIPE fill-drain", limit=limit)
        if dual_check:
            dual_s = float(DGAP(pop=pop, gens=gens, mmax=mmax, dual=True, seed=seed).run(costs).makespan)
    starts = [fd.rows] if fd is not None else []
    of = search_1f1b(costs, mmax, limit, starts, evals=evals, seed=seed)
    best = best_of([c for c in (fd, of) if c is not None])
    return PlanFamily(best, fd, of, gb, ob, dual_s, g + o)
