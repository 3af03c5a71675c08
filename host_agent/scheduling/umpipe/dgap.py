"""DGAP: a dual-chromosome genetic algorithm for unequal microbatch partitions (UMPIPE).

An individual is a pair of integer matrices ``X`` (forward) and ``Y`` (backward), each
``[S, Mmax]``: row s holds stage s's microbatch sizes in processing order, zero-padded at
the end, summing to B, every entry at most ``bmax[s]``. The two chromosomes evolve
independently (crossover and mutation pick X or Y), because the forward and the backward
pass have independent time costs. With ``dual=False`` the backward chromosome is tied to the
forward one (``Y = mirror(X)``), which is the single-chromosome ablation.

TiDGAP = DGAP whose fitness is computed for the whole population at once by
:func:`host_agent.scheduling.costmodel.makespan` (microbatch recurrences as max-plus scans,
population as an array axis). ``evaluator="scalar"`` runs the same GA with the per-individual
Python evaluator instead, for the speed-up benchmark; the two give bit-identical plans only
up to float rounding of ties, so tests compare their fitness values, not their runs.

Operators (our design; the paper's abstract does not give them):
* initial population: every near-equal partition M = ceil(B/bmax)..Mmax applied to all
  stages (so the result is never worse than the best equal-microbatch GPipe plan),
  growing-size "ramp" partitions (:func:`ramp_seeds`), any extra seed plans given by the
  caller, then random partitions (uniform random cut points;
  in dual mode a fraction ``p_tied`` with the backward tied to the forward one, the others
  with an independent random backward chromosome);
* tournament selection (k=3) and elitism (the best ``elite``, default min(4, pop/4), survive
  unchanged);
* crossover: uniform *row* crossover, independently for X and Y, plus one-point crossover
  on the stage index;
* mutation (in dual mode: with probability ``p_tied`` a forward row with the backward row
  re-tied to it, otherwise a forward row alone or a backward row alone, evenly): shift 1..delta samples between
  two adjacent microbatches; split one microbatch; merge two adjacent ones; copy a row from
  a neighbouring stage; re-split a row into m near-equal parts; make the row's sizes grow
  (sorted ascending), which fills a pipeline fast and then amortises overheads;
* repair keeps rows valid (caps, sum, zeros last): the operators preserve validity, and
  :func:`repair_row` fixes externally supplied rows;
* stop after ``gens`` generations or ``patience`` generations without improvement;
* finally polish the best plan by best-improvement local search (:func:`polish`): every
  one-move neighbour (shift 1/2/4/8 samples, merge, halve) of X and of Y is evaluated in
  one batched call per round, until no move improves (a memetic step, our addition).
All randomness comes from one seeded ``numpy.random.Generator``: same seed, same plan.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..costmodel import PipelineCosts, equal_sizes, makespan, makespan_scalar, mirror


def repair_row(row: Sequence[int], B: int, bmax: int, mmax: int) -> np.ndarray:
    """Clip sizes to [1, bmax], fix the sum to B (adding to the smallest / taking from the
    largest entries), and pad with zeros to ``mmax``. Raises ValueError if B samples cannot
    fit into ``mmax`` microbatches of at most ``bmax``."""
    if bmax * mmax < B:
        raise ValueError(f"B={B} does not fit in {mmax} microbatches of at most {bmax}")
    r = [min(max(int(v), 1), bmax) for v in row if int(v) > 0][:mmax] or [min(B, bmax)]
    total = sum(r)
    while total > B:
        i = max(range(len(r)), key=r.__getitem__)
        take = min(total - B, r[i] - 1) if r[i] > 1 else 0
        if take == 0:  # all ones: drop microbatches
            r.pop()
            total -= 1
            continue
        r[i] -= take
        total -= take
    while total < B:
        room = [i for i in range(len(r)) if r[i] < bmax]
        if not room:
            r.append(0)
            room = [len(r) - 1]
        i = min(room, key=r.__getitem__)
        add = min(B - total, bmax - r[i])
        r[i] += add
        total += add
    out = np.zeros(mmax, dtype=np.int64)
    out[:len(r)] = r
    return out


def _random_row(rng: np.random.Generator, B: int, bmax: int, mmax: int) -> np.ndarray:
    lo = max(1, math.ceil(B / bmax))
    hi = min(B, mmax)
    m = int(rng.integers(lo, hi + 1))
    if m == 1:
        row = [B]
    else:
        cuts = np.sort(rng.choice(np.arange(1, B), size=m - 1, replace=False))
        row = np.diff(np.concatenate([[0], cuts, [B]])).tolist()
    if max(row) > bmax:
        row = repair_row(row, B, bmax, mmax)
    out = np.zeros(mmax, dtype=np.int64)
    r = [v for v in row if v > 0]
    out[:len(r)] = r
    return out


@dataclass
class Result:
    X: np.ndarray  # [S, Mmax] forward plan
    Y: np.ndarray  # [S, Mmax] backward plan
    makespan: float
    history: list[float] = field(default_factory=list)  # best makespan after each generation
    generations: int = 0
    evaluations: int = 0
    eval_seconds: float = 0.0  # CPU seconds spent in fitness evaluation
    seconds: float = 0.0  # wall-clock seconds of the whole run
    cpu_seconds: float = 0.0  # CPU seconds of the whole run

    def rows(self) -> tuple[list[list[int]], list[list[int]]]:
        f = lambda M: [[int(v) for v in r if v > 0] for r in M]
        return f(self.X), f(self.Y)


def equal_seeds(costs: PipelineCosts, mmax: int) -> list[np.ndarray]:
    """Every near-equal partition that fits the caps, applied to all stages."""
    out = []
    cap = int(costs.bmax.min())
    for M in range(max(1, math.ceil(costs.B / cap)), min(costs.B, mmax) + 1):
        sz = equal_sizes(costs.B, M)
        if sz[0] > cap:
            continue
        row = np.zeros(mmax, dtype=np.int64)
        row[:M] = sz
        out.append(np.tile(row, (costs.S, 1)))
    return out


def _neighbours(X: np.ndarray, bmax: Sequence[int], mmax: int) -> list[np.ndarray]:
    """Plans one move away from X: shift 1, 2, 4 or 8 samples between adjacent microbatches,
    merge two adjacent ones, or halve one (caps and Mmax respected)."""
    out = []
    for s in range(X.shape[0]):
        row = X[s]
        n = int(np.count_nonzero(row))
        for i in range(n - 1):
            for d in (1, 2, 4, 8):
                for a, b in ((i, i + 1), (i + 1, i)):
                    if row[a] - d >= 1 and row[b] + d <= bmax[s]:
                        Z = X.copy()
                        Z[s, a] -= d
                        Z[s, b] += d
                        out.append(Z)
            if row[i] + row[i + 1] <= bmax[s]:
                Z = X.copy()
                Z[s, i] += Z[s, i + 1]
                Z[s, i + 1:n - 1] = row[i + 2:n]
                Z[s, n - 1] = 0
                out.append(Z)
        if n < mmax:
            for i in range(n):
                if row[i] >= 2:
                    Z = X.copy()
                    Z[s, i + 2:n + 1] = row[i + 1:n]
                    Z[s, i + 1] = row[i] // 2
                    Z[s, i] = row[i] - row[i] // 2
                    out.append(Z)
    return out


def polish(costs: PipelineCosts, X: np.ndarray, Y: np.ndarray, mmax: int, dual: bool = True,
           max_rounds: int = 100, evaluate=None) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Best-improvement local search around (X, Y): each round evaluates the whole
    neighbourhood (moves on X, and on Y in dual mode) in one batched TiDGAP call and takes
    the best strict improvement. Returns (X, Y, makespan, evaluations)."""
    ev = evaluate or (lambda A, B: np.asarray(makespan(costs, A, B), dtype=float).reshape(-1))
    bmax = [int(v) for v in costs.bmax]
    best = float(ev(X[None], Y[None])[0])
    evals = 1
    for _ in range(max_rounds):
        nx = _neighbours(X, bmax, mmax)
        cand_x = [(Z, Y if dual else mirror(Z)) for Z in nx]
        cand_y = [(X, Z) for Z in _neighbours(Y, bmax, mmax)] if dual else []
        cands = cand_x + cand_y
        if not cands:
            break
        A = np.stack([c[0] for c in cands])
        Bm = np.stack([c[1] for c in cands])
        f = ev(A, Bm)
        evals += len(cands)
        i = int(np.argmin(f))
        if not f[i] < best * (1 - 1e-12):
            break
        X, Y, best = A[i], Bm[i], float(f[i])
    return X, Y, best, evals


def ramp_seeds(costs: PipelineCosts, mmax: int, ratios=(1.15, 1.3, 1.5)) -> list[np.ndarray]:
    """Growing microbatches, sizes proportional to r**j (largest-remainder rounding, every
    size >= 1 and <= the smallest cap), for M = 4, 6, 8, ... <= Mmax, applied to all stages.
    Small first microbatches fill the pipeline fast, large later ones amortise the
    per-microbatch overheads: the shape good plans tend to have."""
    out = []
    B, cap = costs.B, int(costs.bmax.min())
    for r in ratios:
        for M in range(4, min(B, mmax) + 1, 2):
            w = r ** np.arange(M)
            raw = w / w.sum() * B
            sz = np.maximum(np.floor(raw).astype(np.int64), 1)
            short = B - int(sz.sum())
            order = np.argsort(-(raw - np.floor(raw)), kind="stable")
            k = 0
            while short > 0:
                sz[order[k % M]] += 1
                short -= 1
                k += 1
            while short < 0:
                i = int(np.argmax(sz))
                sz[i] -= 1
                short += 1
            if sz.min() < 1 or sz.max() > cap:
                continue
            row = np.zeros(mmax, dtype=np.int64)
            row[:M] = sz
            out.append(np.tile(row, (costs.S, 1)))
    return out


class DGAP:
    """``DGAP(pop=128, gens=300, seed=0).run(costs) -> Result``."""

    def __init__(self, pop: int = 128, gens: int = 300, elite: int | None = None, tournament: int = 3,
                 p_cross: float = 0.9, p_mut: float = 0.7, delta_max: int | None = None,
                 mmax: int | None = None, patience: int | None = None, dual: bool = True,
                 seed: int = 0, evaluator: str = "vector", p_tied: float = 0.6,
                 polish_rounds: int = 100) -> None:
        elite = min(4, pop // 4) if elite is None else elite
        if pop < 4 or gens < 0 or not 0 <= elite < pop or tournament < 1:
            raise ValueError("DGAP: need pop >= 4, gens >= 0, 0 <= elite < pop, tournament >= 1")
        if evaluator not in ("vector", "scalar"):
            raise ValueError("evaluator must be 'vector' (TiDGAP) or 'scalar'")
        self.pop, self.gens, self.elite, self.k = pop, gens, elite, tournament
        self.pc, self.pm, self.delta_max, self.mmax = p_cross, p_mut, delta_max, mmax
        self.patience, self.dual, self.seed, self.evaluator = patience, dual, seed, evaluator
        if not 0 <= p_tied <= 1:
            raise ValueError("p_tied must be in [0, 1]")
        self.p_tied = p_tied
        self.polish_rounds = polish_rounds

    # ---- fitness

    def _evaluate(self, costs: PipelineCosts, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        if self.evaluator == "vector":
            return np.asarray(makespan(costs, X, Y), dtype=float).reshape(-1)
        return np.array([makespan_scalar(costs, X[i], Y[i]) for i in range(X.shape[0])])

    # ---- operators

    def _mutate_row(self, rng: np.random.Generator, M: np.ndarray, s: int, B: int, bmax: int, mmax: int) -> None:
        row = M[s]
        n = int(np.count_nonzero(row))
        op = int(rng.integers(0, 6))
        if op == 0 and n >= 2:  # shift
            i = int(rng.integers(0, n - 1))
            d = int(rng.integers(1, (self.delta_max or max(1, B // 16)) + 1))
            a, b = (i, i + 1) if rng.random() < 0.5 else (i + 1, i)
            d = min(d, row[a] - 1, bmax - row[b])
            if d > 0:
                row[a] -= d
                row[b] += d
        elif op == 1 and n < mmax:  # split
            big = np.flatnonzero(row[:n] >= 2)
            if big.size:
                i = int(rng.choice(big))
                a = int(rng.integers(1, row[i]))
                row[i + 2:n + 1] = row[i + 1:n].copy()
                row[i + 1] = row[i] - a
                row[i] = a
        elif op == 2 and n >= 2:  # merge
            i = int(rng.integers(0, n - 1))
            if row[i] + row[i + 1] <= bmax:
                row[i] += row[i + 1]
                row[i + 1:n - 1] = row[i + 2:n].copy()
                row[n - 1] = 0
        elif op == 3 and M.shape[0] > 1:  # copy a neighbour's row
            t = s - 1 if (s == M.shape[0] - 1 or (s > 0 and rng.random() < 0.5)) else s + 1
            if M[t].max() <= bmax:
                row[:] = M[t]
        elif op == 4:  # re-split into m near-equal parts
            lo = max(1, math.ceil(B / bmax))
            m = int(np.clip(n + rng.integers(-2, 3), lo, min(B, mmax)))
            row[:] = 0
            row[:m] = equal_sizes(B, m)
        elif op == 5 and n >= 2:  # growing sizes
            row[:n] = np.sort(row[:n])

    def run(self, costs: PipelineCosts, seeds: Sequence[tuple[np.ndarray, np.ndarray | None]] = ()) -> Result:
        t_start, c_start = time.perf_counter(), time.process_time()
        rng = np.random.default_rng(self.seed)
        S, B = costs.S, costs.B
        bmax = [int(v) for v in costs.bmax]
        mmax = int(self.mmax or min(B, max(4 * S, 32)))
        if max(1, math.ceil(B / min(bmax))) > mmax:
            raise ValueError(f"Mmax={mmax} is too small for B={B} with microbatch caps {bmax}")
        P = self.pop
        # ---- initial population
        Xs: list[np.ndarray] = []
        Ys: list[np.ndarray] = []
        for X in equal_seeds(costs, mmax) + ramp_seeds(costs, mmax):
            Xs.append(X)
            Ys.append(mirror(X))
        for X, Y in seeds:
            X = np.stack([repair_row(r, B, bmax[s], mmax) for s, r in enumerate(np.asarray(X))])
            Y = mirror(X) if Y is None or not self.dual else \
                np.stack([repair_row(r, B, bmax[s], mmax) for s, r in enumerate(np.asarray(Y))])
            Xs.append(X)
            Ys.append(Y)
        while len(Xs) < P:
            X = np.stack([_random_row(rng, B, bmax[s], mmax) for s in range(S)])
            Xs.append(X)
            indep = self.dual and rng.random() >= self.p_tied  # most random individuals start tied
            Ys.append(np.stack([_random_row(rng, B, bmax[s], mmax) for s in range(S)]) if indep else mirror(X))
        Xp, Yp = np.stack(Xs), np.stack(Ys)
        if Xp.shape[0] > P:  # more seeds than the population: keep the best P
            fit = self._evaluate(costs, Xp, Yp)
            keep = np.argsort(fit, kind="stable")[:P]
            Xp, Yp = Xp[keep], Yp[keep]
        t0 = time.process_time()
        fit = self._evaluate(costs, Xp, Yp)
        eval_s = time.process_time() - t0
        evals = P
        best = float(fit.min())
        history = [best]
        stale = 0
        gens_done = 0
        n_child = P - self.elite
        for g in range(self.gens):
            # selection: tournaments
            cand = rng.integers(0, P, size=(2 * n_child, self.k))
            par = cand[np.arange(2 * n_child), np.argmin(fit[cand], axis=1)]
            pa, pb = par[:n_child], par[n_child:]
            cX, cY = Xp[pa].copy(), Yp[pa].copy()
            # crossover (vectorised): uniform row masks and one-point stage cuts
            do = rng.random(n_child) < self.pc
            onept = rng.random(n_child) < 0.5
            cut = rng.integers(1, max(2, S), size=n_child)
            stage = np.arange(S)
            m_one = stage[None, :] >= cut[:, None]
            mx = np.where(onept[:, None], m_one, rng.random((n_child, S)) < 0.5) & do[:, None]
            my = np.where(onept[:, None], m_one, rng.random((n_child, S)) < 0.5) & do[:, None]
            cX = np.where(mx[:, :, None], Xp[pb], cX)
            cY = np.where(my[:, :, None], Yp[pb], cY)
            # mutation
            mut = rng.random(n_child) < self.pm
            for i in np.flatnonzero(mut):
                for _ in range(int(rng.geometric(0.5))):  # 1, 2, ... mutations
                    s = int(rng.integers(0, S))
                    u = rng.random() if self.dual else 0.0
                    if u < self.p_tied:  # forward row; in dual mode the backward row follows it
                        self._mutate_row(rng, cX[i], s, B, bmax[s], mmax)
                        if self.dual:
                            n = int(np.count_nonzero(cX[i, s]))
                            cY[i, s, :n] = cX[i, s, n - 1::-1] if n < mmax else cX[i, s, ::-1]
                            cY[i, s, n:] = 0
                    elif u < (1 + self.p_tied) / 2:  # forward row alone
                        self._mutate_row(rng, cX[i], s, B, bmax[s], mmax)
                    else:  # backward row alone
                        self._mutate_row(rng, cY[i], s, B, bmax[s], mmax)
            if not self.dual:
                cY = mirror(cX)
            t0 = time.process_time()
            cfit = self._evaluate(costs, cX, cY)
            eval_s += time.process_time() - t0
            evals += n_child
            el = np.argsort(fit, kind="stable")[:self.elite]
            Xp = np.concatenate([Xp[el], cX])
            Yp = np.concatenate([Yp[el], cY])
            fit = np.concatenate([fit[el], cfit])
            gens_done = g + 1
            nb = float(fit.min())
            if nb < best - 1e-15 * abs(best):
                best, stale = nb, 0
            else:
                stale += 1
            history.append(best)
            if self.patience is not None and stale >= self.patience:
                break
        i = int(np.argmin(fit))
        bx, by, bf = Xp[i].copy(), Yp[i].copy(), float(fit[i])
        if self.polish_rounds > 0:
            t0 = time.process_time()
            bx, by, bf, n = polish(costs, bx, by, mmax, self.dual, self.polish_rounds,
                                   lambda A, Bm: self._evaluate(costs, A, Bm))
            eval_s += time.process_time() - t0
            evals += n
            history.append(bf)
        return Result(bx, by, bf, history, gens_done, evals, eval_s,
                      time.perf_counter() - t_start, time.process_time() - c_start)
