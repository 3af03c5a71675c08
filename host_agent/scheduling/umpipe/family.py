"""UMPIPE as a family of executable plans, with memory limits.

A candidate is (order family, per-stage microbatch sizes): ``fill-drain`` (GPipe order, the
UMPIPE paper's setting) or ``1f1b`` (backwards as early as possible, bounded in-flight
microbatches; see :mod:`..orders`). Each candidate is simulated with :func:`..orders.schedule`,
which also gives each stage's peak of stashed samples; with a cost model built from a profile
the stage's memory is ``static + peak x stash_bytes_per_sample``. A candidate whose memory
exceeds a stage's limit, or that has a microbatch below the smallest the model trains on
(``costs.info["min_microbatch"]``, from the profile: BatchNorm needs 2), is never returned
(``PlanFamily.best`` is None if nothing fits).

Searches (both order families alike, scored by :func:`..orders.expected_makespan` -- for
CPU-quota stages the simulation of their CFS budgets): the pool holds every equal split,
shaped rows shared by all stages (:func:`shaped_rows`) and, for fill-drain, DGAP's plan on
the fluid recurrence (``dual=False``: the runtime back-propagates through the graphs each
forward built, so a stage's backward microbatches retrace its forward ones); then per-stage
coordinate descent on microbatch counts and local search (shift samples between adjacent
microbatches, split, merge, re-split, in-flight cap; a third of the moves on all stages at
once while they share a row). With a calibrated profile (``costs.info["bmin"]``) no
microbatch is smaller than the smallest size the calibration measured.
The baselines (GPipe and 1F1B with M equal microbatches on every stage, best M) are searched
over the same memory limits, so comparisons are like for like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..costmodel import PipelineCosts, equal_sizes
from ..orders import PHASE_DRAWS, PRECISION, SEARCH_FIRST_DRAW, CpuBandwidth, expected_makespan, schedule
from . import dual as dual_sim
from .dgap import DGAP


def rows_text(rows) -> str:
    """Microbatch sizes per stage as printed: ``8,8,8,8 | 11,9,7,5``."""
    return " | ".join(",".join(map(str, r)) for r in rows)


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
        return rows_text(self.rows)

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
             limit: Sequence[float] | None = None, draws: int = PHASE_DRAWS, first_draw: int = 0,
             precision: float | None = PRECISION) -> Candidate:
    """Generate the plan's op orders and predict its iteration time (for CPU-quota stages the
    mean over period-phase draws to ``precision``, see :func:`..orders.expected_makespan`)."""
    r = schedule(costs, rows, kind, cap=cap)
    t = r.makespan if CpuBandwidth.of(costs) is None else expected_makespan(costs, rows, r.orders, draws,
                                                                            first_draw, precision)
    mem = memory_of(costs, r.peak_samples)
    # a microbatch below the model's smallest trainable size cannot run (fits = executable)
    fits = min(min(x) for x in rows) >= int(costs.info.get("min_microbatch", 1))
    if limit is not None:
        if mem is None:
            raise ValueError("memory limits need a cost model with memory figures (from a profile)")
        fits = fits and all(m <= l for m, l in zip(mem, limit))
    return Candidate(method or kind, kind, [list(map(int, x)) for x in rows], r.orders, t,
                     r.peak_samples, mem, fits, None if cap is None else list(cap))


def check_memory_limit(mb: float | None) -> None:
    """``--memory-limit``: None or a finite number of MB (2^20 bytes) per stage > 0; ValueError
    otherwise (0 meant no limit, and a negative or nan limit "nothing fits", until 2026-11-28)."""
    if mb is not None and not (math.isfinite(mb) and mb > 0):
        raise ValueError(f"--memory-limit {mb:g}: must be a number of MB (2^20 bytes) per stage > 0")


def least_memory(costs: PipelineCosts, mmax: int) -> tuple[float, int] | None:
    """The least per-stage peak memory (bytes, on the fullest stage) a plan of at most
    ``mmax`` microbatches needs, and the largest microbatch of the plan that gets it: 1F1B
    with the most microbatches (of at least the model's smallest trainable size), so each
    stage holds the fewest samples' activations at once. None without memory figures."""
    b = max(1, int(costs.info.get("min_microbatch", 1)))
    rows = [equal_sizes(costs.B, max(1, min(mmax, costs.B // b)))] * costs.S
    mem = memory_of(costs, schedule(costs, rows, "1f1b").peak_samples)
    return None if mem is None else (max(mem), max(rows[0]))


def no_fit_message(costs: PipelineCosts, limit_mb: float, mmax: int) -> str:
    """Why no plan of at most ``mmax`` microbatches fits ``limit_mb`` per stage, with what the
    least would need."""
    least = least_memory(costs, mmax)
    # three significant digits: a small model's least was "0.0 MB" against a limit of 0.001 MB
    need = "" if least is None else (f"; the least a plan of at most {mmax} microbatches needs is "
                                     f"{least[0] / 2**20:.3g} MB on its fullest stage (1F1B, microbatches of "
                                     + ("1 sample)" if least[1] == 1 else f"{least[1]} samples or fewer)"))
    other = costs.info.get("least_any_split")  # the split was chosen, and no split fits (profile.costs.build)
    if least is not None and other is not None and other[0] < least[0] * (1 - 1e-9):
        need += (f" on this split of the layers, {costs.info['cuts']}; the least of any split is "
                 f"{other[0] / 2**20:.3g} MB, split at {list(other[1])}")
    return f"no plan fits the memory limit of {limit_mb:g} MB per stage{need}"


def equal_candidates(costs: PipelineCosts, kind: str, Ms: Sequence[int], limit=None) -> list[Candidate]:
    name = "GPipe" if kind == "fill-drain" else "1F1B"
    return [evaluate(costs, [equal_sizes(costs.B, M)] * costs.S, kind, f"{name} (M={M})", limit=limit)
            for M in Ms if 1 <= M <= costs.B]


TIE_REL = 0.01  # plans predicted this close (relative) are the same to the model: ~2.5 standard errors
# of the difference of two predictions made to orders.PRECISION


def n_ops(c: Candidate) -> int:
    """Microbatches over all stages: each costs a stage op's fixed CPU and a message."""
    return sum(len(r) for r in c.rows)


def best_of(cands: Sequence[Candidate]) -> Candidate | None:
    """The fastest fitting plan; of plans within :data:`TIE_REL` of it, the one with the fewest
    microbatches. Stages off the critical path can re-chunk freely in the model; on a shared
    host their extra ops still take CPU and messages."""
    ok = [c for c in cands if c.fits]
    if not ok:
        return None
    m = min(c.predicted_s for c in ok)
    return min((c for c in ok if c.predicted_s <= m * (1 + TIE_REL)), key=lambda c: (n_ops(c), c.predicted_s))


def ramp(B: int, M: int, r: float) -> list[int]:
    """B split into M microbatches with sizes growing (r > 1) or shrinking (r < 1)
    geometrically by r, each >= 1."""
    w = np.array([r ** j for j in range(M)], dtype=float)
    x = np.maximum(1, np.floor(w / w.sum() * B)).astype(int)
    i = 0
    while x.sum() < B:  # hand out the rounding remainder, largest microbatches first
        x[np.argsort(-w)[i % M]] += 1
        i += 1
    while x.sum() > B:
        j = int(np.argmax(x))
        x[j] -= 1
    return [int(v) for v in x]


def shaped_rows(B: int, mmax: int) -> list[list[int]]:
    """Shared-row seeds: ramps up and down and humps (small first and last microbatches fill
    and drain the pipeline sooner, large ones in between pay fewer per-microbatch costs)."""
    out = []
    for M in range(3, min(mmax, B) + 1):
        for r in (0.6, 0.8, 1.25, 1.6):
            out.append(ramp(B, M, r))
        if M >= 4 and B >= 2 * M:
            h = max(1, B // (2 * M))
            mid = equal_sizes(B - 2 * h, M - 2)
            out.append([h, *mid, h])
    seen, uniq = set(), []
    for r in out:
        if tuple(r) not in seen and len(r) <= mmax:
            seen.add(tuple(r))
            uniq.append(r)
    return uniq


def _moves(rows: list[list[int]], cap: list[int], rng: np.random.Generator, mmax: int, with_cap: bool = True):
    """A random neighbour (rows, cap) or None: one move on one stage's row, or (one time in
    three, when every stage has the same row) the same move on all stages."""
    S = len(rows)
    s = int(rng.integers(0, S))
    shared = all(list(r) == list(rows[0]) for r in rows) and rng.random() < 1 / 3
    r = list(rows[s])
    op = int(rng.integers(0, 5 if with_cap else 4))
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
    elif op == 4:  # in-flight cap
        new_cap[s] = max(1, cap[s] + (1 if rng.random() < 0.5 else -1))
        return [list(x) for x in rows], new_cap
    else:
        return None
    if shared:
        return [list(r) for _ in range(S)], new_cap
    out = [list(x) for x in rows]
    out[s] = r
    return out, new_cap


SEARCH_DRAWS = 4  # phase draws per evaluation during the search, its own (orders.SEARCH_FIRST_DRAW);
# the final ranking predicts every plan to orders.PRECISION on other draws


class _Search:
    """Local search of one order family; remembers every plan it scored."""

    def __init__(self, costs: PipelineCosts, kind: str, mmax: int, limit, seed: int):
        self.costs, self.kind, self.mmax, self.limit = costs, kind, mmax, limit
        self.rng = np.random.default_rng(seed)
        self.default_cap = [costs.S - s for s in range(costs.S)]
        self.bmin = int(costs.info.get("bmin", 1))
        self.seen: dict[tuple, float] = {}
        self.best: tuple | None = None  # (score, rows, cap)
        self.final: dict[tuple, Candidate] = {}  # plans re-scored on the final draws (top)

    def key(self, rows, cap) -> tuple:
        return (tuple(tuple(r) for r in rows), tuple(cap) if self.kind == "1f1b" else ())

    def score(self, rows, cap=None) -> float:
        cap = list(self.default_cap if cap is None else cap)
        k = self.key(rows, cap)
        if k not in self.seen and min(min(r) for r in rows) < self.bmin:
            self.seen[k] = float("inf")  # outside the sizes the cost model was calibrated on
        if k not in self.seen:
            c = evaluate(self.costs, rows, self.kind, cap=cap if self.kind == "1f1b" else None, limit=self.limit,
                         draws=SEARCH_DRAWS, first_draw=SEARCH_FIRST_DRAW, precision=None)
            self.seen[k] = c.predicted_s if c.fits else float("inf")
        f = self.seen[k]
        if self.best is None or f < self.best[0] * (1 - 1e-9):
            self.best = (f, [list(r) for r in rows], cap)
        return f

    def coordinate_descent(self, rounds: int = 2) -> None:
        S, B = self.costs.S, self.costs.B
        for _ in range(rounds):
            for s in range(S):
                for M in range(1, min(B, self.mmax) + 1):
                    rows = [list(x) for x in self.best[1]]
                    rows[s] = equal_sizes(B, M)
                    self.score(rows, self.best[2])

    def local(self, evals: int) -> None:
        n = tries = 0
        while n < evals and tries < 20 * evals:
            tries += 1
            mv = _moves(self.best[1], self.best[2], self.rng, self.mmax, with_cap=self.kind == "1f1b")
            if mv is None:
                continue
            if self.key(*mv) in self.seen:
                continue
            n += 1
            self.score(*mv)

    def top(self, k: int, method: str) -> list[Candidate]:
        """The k best distinct plans seen, re-scored with every phase draw (each plan once: a
        second call with a larger k re-scores only the plans beyond the first call's)."""
        ranked = sorted(((f, key) for key, f in self.seen.items() if np.isfinite(f)), key=lambda x: x[0])
        out, orders = [], set()
        final = self.final
        for _, (rows, cap) in ranked:
            if len(out) >= k:
                break
            if (rows, cap) not in final:
                # an equal split found by the search is named as one, as the family's added equal
                # splits are: plan umpipe printed "UMPIPE fill-drain: 12 | 12 | 12" for one and "UMPIPE
                # fill-drain (equal): 12 | 12" for another (until 2026-11-28)
                name = method + (" (equal)" if is_equal_split(rows) else "")
                final[rows, cap] = evaluate(self.costs, [list(r) for r in rows], self.kind, name,
                                            cap=list(cap) if self.kind == "1f1b" else None, limit=self.limit)
            c = final[rows, cap]
            o = (tuple(map(tuple, c.rows)), tuple(tuple(x) for x in c.orders))
            if c.fits and o not in orders:  # caps that give the same orders are the same plan
                orders.add(o)
                out.append(c)
        return sorted(out, key=lambda c: c.predicted_s)


def search_1f1b(costs: PipelineCosts, mmax: int, limit=None, starts: Sequence[list[list[int]]] = (),
                evals: int = 1500, seed: int = 0, top: int = 1) -> Candidate | None | list[Candidate]:
    """Unequal microbatches under the 1F1B order: every equal split, shaped shared rows and
    ``starts``, then per-stage coordinate descent on microbatch counts and local search
    (shift, split, merge, re-split, in-flight cap). Returns the best plan (or the ``top``
    best distinct plans as a list when ``top`` > 1)."""
    return _family_search(costs, "1f1b", mmax, limit, starts, evals, seed, top)


def _family_search(costs, kind, mmax, limit, starts, evals, seed, top):
    sr = _searched(costs, kind, mmax, limit, starts, evals, seed)
    if sr is None:
        return [] if top > 1 else None
    got = sr.top(max(top, 3), _name(kind))
    if top > 1:
        return got[:top]
    return best_of(got)


def _name(kind: str) -> str:
    return "UMPIPE 1F1B" if kind == "1f1b" else "UMPIPE fill-drain"


def _searched(costs, kind, mmax, limit, starts, evals, seed) -> "_Search | None":
    """The local search of one order family, run (None when no plan fits)."""
    S, B = costs.S, costs.B
    sr = _Search(costs, kind, mmax, limit, seed)
    for rows in [[equal_sizes(B, M)] * S for M in range(1, min(B, mmax) + 1)] + \
            [[r] * S for r in shaped_rows(B, mmax)] + [list(map(list, r)) for r in starts]:
        sr.score(rows)
    if sr.best is None or not np.isfinite(sr.best[0]):
        return None
    sr.coordinate_descent()
    sr.local(evals)
    return sr


@dataclass
class DualCheck:
    """What an independent backward plan (the dual chromosome) would buy, in the model only:
    DGAP with one chromosome and DGAP with two (same population, generations and seed; the
    dual run seeded with the single run's plan, so it can only improve on it in DGAP's own
    model, the fluid recurrence), both final plans predicted by the evaluator of the
    executable plans (:func:`evaluate`: the CFS budget simulation for CPU-quota stages;
    :func:`.dual.expected_makespan` for the dual plan, identical on a tied plan). ``fluid_*``
    are DGAP's own figures. Nothing here compares figures of two models."""

    single_s: float
    dual_s: float
    single_rows: list[list[int]]
    dual_forward_rows: list[list[int]]
    dual_backward_rows: list[list[int]]
    fluid_single_s: float
    fluid_dual_s: float
    evaluator: str  # "cfs-simulation" or "recurrence" (no CPU quotas: the event simulation is the recurrence)

    def public(self) -> dict:
        return dict(single_s=self.single_s, dual_s=self.dual_s, single_rows=self.single_rows,
                    dual_forward_rows=self.dual_forward_rows, dual_backward_rows=self.dual_backward_rows,
                    fluid_single_s=self.fluid_single_s, fluid_dual_s=self.fluid_dual_s, evaluator=self.evaluator)


def compare_dual(costs: PipelineCosts, single, pop: int, gens: int, mmax: int, seed: int) -> DualCheck:
    """:class:`DualCheck` for the single-chromosome DGAP result ``single`` (a ``dgap.Result``)."""
    d = DGAP(pop=pop, gens=gens, mmax=mmax, dual=True, seed=seed).run(costs, seeds=[(single.X, None)])
    srows = dual_sim.rows_of(single.X)
    return DualCheck(single_s=evaluate(costs, srows, "fill-drain").predicted_s,
                     dual_s=dual_sim.expected_makespan(costs, d.X, d.Y), single_rows=srows,
                     dual_forward_rows=dual_sim.rows_of(d.X), dual_backward_rows=dual_sim.rows_of(d.Y),
                     fluid_single_s=float(single.makespan), fluid_dual_s=float(d.makespan),
                     evaluator="recurrence" if CpuBandwidth.of(costs) is None else "cfs-simulation")


@dataclass
class PlanFamily:
    best: Candidate | None  # UMPIPE: the fastest fitting unequal plan of either order family
    fill_drain: Candidate | None
    one_f_one_b: Candidate | None
    gpipe_best: Candidate | None
    f1b_best: Candidate | None
    dual: DualCheck | None = None  # dual- vs single-chromosome DGAP on one evaluator (model only)
    baselines: list[Candidate] = field(default_factory=list)
    top: list[Candidate] = field(default_factory=list)  # UMPIPE's best distinct plans, both families, fastest first

    @property
    def dual_fill_drain_s(self) -> float | None:
        """Dual-chromosome DGAP's predicted time, by the evaluator of the plans above."""
        return None if self.dual is None else self.dual.dual_s

    def public(self) -> dict:
        f = lambda c: None if c is None else c.public()
        return dict(umpipe=f(self.best), umpipe_fill_drain=f(self.fill_drain), umpipe_1f1b=f(self.one_f_one_b),
                    gpipe_best=f(self.gpipe_best), one_f_one_b_best=f(self.f1b_best),
                    dual_fill_drain_s=self.dual_fill_drain_s,
                    dual_check=None if self.dual is None else self.dual.public(),
                    top=[dict(method=c.method, kind=c.kind, rows=c.rows, cap=c.cap, predicted_s=c.predicted_s)
                         for c in self.top],
                    baselines=[dict(method=c.method, predicted_s=c.predicted_s, fits=c.fits,
                                    peak_samples=c.peak_samples, memory_bytes=c.memory_bytes) for c in self.baselines])


SEARCH_POP, SEARCH_GENS = 64, 80  # DGAP's population and generations in plan (plan umpipe --profile's defaults)
POOL = 24  # per order family, the search's best plans re-scored on the final draws to choose the family's best


def plan(costs: PipelineCosts, mmax: int = 16, limit: Sequence[float] | None = None, seed: int = 0,
         pop: int = SEARCH_POP, gens: int = SEARCH_GENS, evals: int = 1500, dual_check: bool = True,
         top: int = 6) -> PlanFamily:
    """Search both order families under the memory ``limit`` (bytes per stage, or None).

    Fill-drain: DGAP on the cost model's recurrence (fluid times), then -- like 1F1B -- local
    search scored by the event simulation (with the CFS budget for CPU-quota stages, which the
    recurrence does not model), seeded with the DGAP plan, every equal split and shaped rows.
    ``top`` keeps the best distinct plans of both families (``PlanFamily.top``). With
    ``dual_check``, ``PlanFamily.dual`` says what an independent backward plan would buy
    (:func:`compare_dual`; model only).

    The family's best (``best``, ``fill_drain``, ``one_f_one_b``) does not depend on ``top``
    or ``dual_check``: it is chosen from the :data:`POOL` best plans of each search, re-scored,
    whatever ``top``, so ``saatp plan umpipe --profile`` (top 6) and ``saatp train pipeline``
    (top 4 x --candidates) report and measure the same plan. Until 2026-11-28 the pool was
    4 x ``top`` and train pipeline searched with 60 DGAP generations against plan umpipe's 80:
    on one profile plan umpipe reported ``1,17 | 9,4,4,1 | 18`` while train pipeline measured
    ``18 | 9,1,7,1 | 18`` (--candidates 2) or ``18 | 7,3,7,1 | 18`` (--candidates 3) as
    UMPIPE's plan."""
    mmax = min(mmax, costs.B)
    Ms = list(range(1, mmax + 1))
    g = equal_candidates(costs, "fill-drain", Ms, limit)
    o = equal_candidates(costs, "1f1b", Ms, limit)
    gb, ob = best_of(g), best_of(o)
    dual = None
    if gb is not None:  # fill-drain stashes all of B: if one fill-drain plan fits, all do
        res = DGAP(pop=pop, gens=gens, mmax=mmax, dual=False, seed=seed).run(costs)
        rows = [[int(v) for v in r if v > 0] for r in res.X]
        fds, fds_more = _pools(_searched(costs, "fill-drain", mmax, limit, [rows], evals, seed), "fill-drain",
                               4 * top)
        if dual_check:
            dual = compare_dual(costs, res, pop, gens, mmax, seed)
    else:
        fds = fds_more = []
    starts = [best_of(fds).rows] if fds else []
    ofs, ofs_more = _pools(_searched(costs, "1f1b", mmax, limit, starts, evals, seed), "1f1b", 4 * top)
    # the equal splits are plans of the family too: never worse than them in the model (they
    # are in the search pools, but a search score from fewer phase draws may rank them
    # differently from the full one), and preferred on a near-tie (fewer microbatches)
    eq = [c for c in (gb, ob) if c is not None and _measurable(costs, c)]
    as_umpipe = lambda c: Candidate(f"{_name(c.kind)} (equal)", c.kind, c.rows, c.orders, c.predicted_s,
                                    c.peak_samples, c.memory_bytes, c.fits, c.cap)
    eq_u = [as_umpipe(c) for c in eq]
    fd = best_of(fds + [c for c in eq_u if c.kind == "fill-drain"])
    of = best_of(ofs + [c for c in eq_u if c.kind == "1f1b"])
    best = best_of([c for c in (fd, of) if c is not None])
    both = sorted(fds_more + ofs_more + eq_u, key=lambda c: c.predicted_s)
    tops = _diverse(both, top)
    # The family's best equal split is always among the plans to measure: the calibrated model
    # is off by ~5 % per plan, more than most predicted gains of unequal plans (1-4 %), so a
    # measured choice needs the safe plan too (same number of candidates as the baselines').
    safe = best_of(eq)
    if top >= 2 and safe is not None and not any(same_plan(c, safe) for c in tops):
        tops = sorted(tops[:top - 1] + [as_umpipe(safe)], key=lambda c: c.predicted_s)
    return PlanFamily(best, fd, of, gb, ob, dual, g + o, tops)


def _pools(sr: "_Search | None", kind: str, more: int) -> tuple[list[Candidate], list[Candidate]]:
    """(the :data:`POOL` best plans of the search ``sr``, which the family's best is chosen
    from, and its ``more`` best (at least those), which the plans to measure are chosen from)."""
    if sr is None:
        return [], []
    return sr.top(POOL, _name(kind)), sr.top(max(POOL, more), _name(kind))


def same_plan(a: Candidate, b: Candidate) -> bool:
    """The same rows under the same order family (what a stage runs)."""
    return a.kind == b.kind and a.rows == b.rows


def is_equal_split(rows: Sequence[Sequence[int]]) -> bool:
    """Every stage has the same near-equal row (sizes at most one apart): an equal split, the
    configuration of a GPipe/1F1B baseline."""
    return len({tuple(r) for r in rows}) == 1 and max(rows[0]) - min(rows[0]) <= 1


def safe_plan(costs, fam: PlanFamily) -> Candidate | None:
    """The family's best equal split the calibration vouches for (what :func:`plan` always
    keeps in ``fam.top``): the plan to measure beside an unequal best, whose predicted gain is
    mostly within the model's error."""
    return best_of([c for c in (fam.gpipe_best, fam.f1b_best) if c is not None and _measurable(costs, c)])


def _measurable(costs, c: Candidate) -> bool:
    """An equal split the calibration vouches for: no microbatch below the smallest size the
    calibration measured (``costs.info["bmin"]``)."""
    return min(c.rows[0]) >= int(costs.info.get("bmin", 1))


def candidate_pool(costs, fam: PlanFamily) -> list[Candidate]:
    """UMPIPE's plans to choose measured candidates from, fastest first: the family's best
    distinct plans (``fam.top``) and every fitting equal split of both orders (they are plans
    of the family too), so a choice spread over microbatch counts can reach other counts."""
    have = {(c.kind, str(c.rows)) for c in fam.top}
    extra = [c for c in fam.baselines if c.fits and _measurable(costs, c) and (c.kind, str(c.rows)) not in have]
    return sorted(fam.top + extra, key=lambda c: c.predicted_s)


def _diverse(cands: list[Candidate], k: int, rel: float = TIE_REL) -> list[Candidate]:
    """The k fastest plans whose predicted times differ by more than ``rel`` from every plan
    kept before them (near-ties of the same plan with a moved sample or a different in-flight
    cap would measure the same thing k times); of near-ties, the one with the fewest
    microbatches stands for them."""
    out: list[Candidate] = []
    for c in sorted(cands, key=lambda c: c.predicted_s):
        near = [i for i, x in enumerate(out) if abs(c.predicted_s - x.predicted_s) <= rel * x.predicted_s]
        if not near:
            if len(out) == k:
                break
            out.append(c)
        elif n_ops(c) < n_ops(out[near[0]]):
            out[near[0]] = c
    return out
