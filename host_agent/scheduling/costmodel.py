"""Pipeline cost model: unequal-microbatch fill-drain, GPipe / 1F1B list schedules, DP sync.

A pipeline instance is a :class:`PipelineCosts`: per stage ``s`` (0-based, S stages) the
forward and backward compute time of a microbatch of ``b`` samples,

    tf_s(b) = f_alpha[s] + f_beta[s] * max(b, knee[s])      (0 when b == 0)
    tb_s(b) = b_alpha[s] + b_beta[s] * max(b, knee[s])

the time to send its activations to stage s+1 and its input gradients to stage s-1,

    cf_s(b) = send_lat[s] + send_beta[s] * b                 (0 for the last stage or b == 0)
    cb_s(b) = grad_lat[s] + grad_beta[s] * b                 (0 for the first stage or b == 0)

a ``tail[s]`` added after the stage's last backward (data-parallel all-reduce + optimizer
step), and a per-stage microbatch cap ``bmax[s]`` (memory). Build one from a workload,
a layer split and devices with :meth:`PipelineCosts.build`, or from arrays directly.

Plans. A plan is a pair of integer matrices ``X`` (forward) and ``Y`` (backward) of shape
``[S, Mmax]`` (or ``[P, S, Mmax]`` for a population): row ``s`` lists stage s's microbatch
sizes in processing order, padded with zeros at the end; every row sums to ``B``. Forward
microbatches take samples from the front, backward ones from the back (GPipe runs backward
from the last microbatch).

Recurrence (forward, stage s, microbatch j; P = prefix sums of X, C = send completion):
    R[s,j] = C[s-1, k*] with k* = min{k : P[s-1,k] >= P[s,j]}      (R[0,j] = 0)
    F[s,j] = max(F[s,j-1], R[s,j]) + tf_s(x[s,j])
    C[s,j] = max(C[s,j-1], F[s,j]) + cf_s(x[s,j])                   (serialised link)
Backward (stage S-1 down to 0; Q = prefix sums of Y):
    Rb[s,j] = max(CB[s+1, kb*], F[s,last])  with kb* = min{k : Q[s+1,k] >= Q[s,j]}
    G[s,j]  = max(G[s,j-1], Rb[s,j]) + tb_s(y[s,j])
    CB[s,j] = max(CB[s,j-1], G[s,j]) + cb_s(y[s,j])
    makespan = max_s (G[s,last] + tail[s])

Public API (stable)
-------------------
``PipelineCosts`` (fields above; ``.S``, ``.B``, ``.tf(s, b)``, ``.tb``, ``.cf``, ``.cb``,
``.build(...)``, ``.from_arrays(...)``, ``.scaled(...)``);
``makespan(costs, X, Y=None)`` -- vectorised (TiDGAP) evaluator, population axis first;
``makespan_scalar(costs, xrows, yrows=None)`` -- plain-Python reference;
``simulate(costs, xrows, yrows=None) -> Timeline`` -- the same recurrence with every event;
``mirror(X)`` (default backward plan: forward microbatches retraced),
``equal_sizes(B, M)``, ``equal_plan(S, B, M, mmax)``, ``rows_to_matrix(rows, mmax)``;
``gpipe_closed_form(f, b, M)``; ``gpipe_order(S, M)``, ``one_f_one_b_order(S, M)``,
``list_schedule(costs, orders, sizes) -> Timeline``; ``pipedream_async_time(costs, M)``;
``ring_allreduce_time(nbytes, n, bandwidth, latency)``, ``bsp_iteration_time(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .workloads import Device, Link, Workload

# --------------------------------------------------------------------------------------
# instance


def _vec(a, S: int, name: str, dtype=float) -> np.ndarray:
    v = np.asarray(a, dtype=dtype)
    if v.ndim == 0:
        v = np.full(S, v, dtype=dtype)
    if v.shape != (S,):
        raise ValueError(f"{name} must have {S} entries, got shape {v.shape}")
    if dtype is float and not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    if np.any(v < 0):
        raise ValueError(f"{name} must be >= 0")
    return v


@dataclass(frozen=True, eq=False)
class PipelineCosts:
    B: int
    f_alpha: np.ndarray
    f_beta: np.ndarray
    b_alpha: np.ndarray
    b_beta: np.ndarray
    knee: np.ndarray
    send_lat: np.ndarray
    send_beta: np.ndarray
    grad_lat: np.ndarray
    grad_beta: np.ndarray
    tail: np.ndarray
    bmax: np.ndarray
    names: tuple[str, ...] = ()
    info: dict = field(default_factory=dict)

    # ---- construction

    @classmethod
    def from_arrays(cls, B: int, f_alpha, f_beta, b_alpha=None, b_beta=None, knee=0, send_lat=0.0,
                    send_beta=0.0, grad_lat=None, grad_beta=None, tail=0.0, bmax=None,
                    names: Sequence[str] = (), info: dict | None = None) -> "PipelineCosts":
        """Arrays of length S (scalars broadcast). Backward defaults to 2x forward; gradient
        links default to the activation links' figures (same boundary shapes)."""
        if not isinstance(B, (int, np.integer)) or B < 1:
            raise ValueError(f"minibatch size B must be a positive integer, got {B!r}")
        S = max(np.atleast_1d(np.asarray(f_alpha, dtype=float)).shape[0],
                np.atleast_1d(np.asarray(f_beta, dtype=float)).shape[0])
        if S < 1:
            raise ValueError("need at least one stage")
        fa = _vec(f_alpha, S, "f_alpha")
        fb = _vec(f_beta, S, "f_beta")
        ba = _vec(fa if b_alpha is None else b_alpha, S, "b_alpha")
        bb = _vec(2 * fb if b_beta is None else b_beta, S, "b_beta")
        sl = _vec(send_lat, S, "send_lat").copy()
        sb = _vec(send_beta, S, "send_beta").copy()
        sl[-1] = sb[-1] = 0.0
        if grad_lat is None:
            gl = np.concatenate([[0.0], sl[:-1]])
        else:
            gl = _vec(grad_lat, S, "grad_lat").copy()
        if grad_beta is None:
            gb = np.concatenate([[0.0], sb[:-1]])
        else:
            gb = _vec(grad_beta, S, "grad_beta").copy()
        gl[0] = gb[0] = 0.0
        bm = _vec(B if bmax is None else bmax, S, "bmax", dtype=np.int64)
        if np.any(bm < 1):
            raise ValueError("bmax must be >= 1 for every stage")
        bm = np.minimum(bm, B)
        names = tuple(names) or tuple(f"stage{s}" for s in range(S))
        return cls(int(B), fa, fb, ba, bb, _vec(knee, S, "knee"), sl, sb, gl, gb, _vec(tail, S, "tail"),
                   bm, names, dict(info or {}))

    @classmethod
    def build(cls, wl: Workload, cuts: Sequence[int], devices: Sequence[Device], links: Sequence[Link],
              B: int, replicas: int = 1, dp_link: Link | None = None, recompute: bool = False,
              optimizer_flops_per_param: float = 10.0, loss_flops: float = 0.0) -> "PipelineCosts":
        """Stage s = layers between cuts, run on ``devices[s]``; ``links[s]`` joins stage s to s+1.

        ``replicas`` > 1 replicates the whole pipeline for data parallelism: each stage then
        all-reduces its weight gradients over ``dp_link`` (ring) after its last backward.
        Memory (weights + gradient + 2 Adam moments = 4x weight bytes): without recompute the
        whole minibatch's activations are stashed, which does not depend on the partition;
        with recompute (GPipe re-materialisation) the peak is B*act_in + b*act_int, which caps
        the microbatch size ``b`` at ``bmax[s]``."""
        segs = wl.segments(cuts)
        S = len(segs)
        if len(devices) != S:
            raise ValueError(f"{S} stages but {len(devices)} devices")
        if len(links) != S - 1:
            raise ValueError(f"{S} stages need {S - 1} links, got {len(links)}")
        if replicas < 1:
            raise ValueError("replicas must be >= 1")
        if replicas > 1 and dp_link is None:
            raise ValueError("replicas > 1 needs a dp_link")
        fa, fb, ba, bb, knee, tail, bmax, mem_need = [], [], [], [], [], [], [], []
        for s, (seg, d) in enumerate(zip(segs, devices)):
            fa.append(d.overhead)
            ba.append(d.overhead)
            fb.append(seg.fwd_flops / d.speed)
            extra = loss_flops if s == S - 1 else 0.0
            bb.append((seg.bwd_flops + extra) / d.speed)
            knee.append(d.knee)
            t = optimizer_flops_per_param * (seg.params / 4) / d.speed
            if replicas > 1:
                t += ring_allreduce_time(seg.params, replicas, dp_link.bandwidth, dp_link.latency)
            tail.append(t)
            free = d.memory - 4 * seg.params
            if recompute:
                cap = (free - B * seg.act_in) / max(seg.act_int, 1e-9)
                if cap < 1:
                    raise ValueError(f"stage {s} ({seg.lo}..{seg.hi}) does not fit on {d.name} "
                                     f"even with microbatches of 1 sample")
                bmax.append(int(min(B, cap)))
                mem_need.append(4 * seg.params + B * seg.act_in + min(B, cap) * seg.act_int)
            else:
                bmax.append(B)
                mem_need.append(4 * seg.params + B * (seg.act_in + seg.act_int))
        sl = [l.latency for l in links] + [0.0]
        sb = [seg.act_out / l.bandwidth for seg, l in zip(segs, links)] + [0.0]
        gl = [0.0] + [l.latency for l in links]
        gb = [0.0] + [seg.act_in / l.bandwidth for seg, l in zip(segs[1:], links)]
        fits = [m <= d.memory for m, d in zip(mem_need, devices)]
        info = dict(workload=wl.name, cuts=list(cuts), devices=[d.name for d in devices],
                    memory_needed=mem_need, fits_memory=fits, replicas=replicas, recompute=recompute)
        return cls.from_arrays(B, fa, fb, ba, bb, knee, sl, sb, gl, gb, tail, bmax,
                               names=[f"{d.name}[{g.lo}:{g.hi}]" for d, g in zip(devices, segs)], info=info)

    # ---- accessors

    @property
    def S(self) -> int:
        return int(self.f_alpha.shape[0])

    def tf(self, s: int, b) -> np.ndarray:
        b = np.asarray(b, dtype=float)
        return np.where(b > 0, self.f_alpha[s] + self.f_beta[s] * np.maximum(b, self.knee[s]), 0.0)

    def tb(self, s: int, b) -> np.ndarray:
        b = np.asarray(b, dtype=float)
        return np.where(b > 0, self.b_alpha[s] + self.b_beta[s] * np.maximum(b, self.knee[s]), 0.0)

    def cf(self, s: int, b) -> np.ndarray:
        b = np.asarray(b, dtype=float)
        return np.where(b > 0, self.send_lat[s] + self.send_beta[s] * b, 0.0)

    def cb(self, s: int, b) -> np.ndarray:
        b = np.asarray(b, dtype=float)
        return np.where(b > 0, self.grad_lat[s] + self.grad_beta[s] * b, 0.0)

    def scaled(self, compute: Sequence[float] | float = 1.0, comm: Sequence[float] | float = 1.0) -> "PipelineCosts":
        """A copy with stage compute times multiplied by ``compute`` and link times by ``comm``
        (per stage or scalar; used for stragglers and for monotonicity checks)."""
        c = _vec(compute, self.S, "compute")
        m = _vec(comm, self.S, "comm")
        mg = np.concatenate([[1.0], m[:-1]])  # grad link of stage s is link s-1
        return PipelineCosts(self.B, self.f_alpha * c, self.f_beta * c, self.b_alpha * c, self.b_beta * c,
                             self.knee, self.send_lat * m, self.send_beta * m, self.grad_lat * mg,
                             self.grad_beta * mg, self.tail * c, self.bmax, self.names, dict(self.info))

    def stages(self, lo: int, hi: int) -> "PipelineCosts":
        """The sub-pipeline of stages [lo, hi) (its first stage receives no gradients to send
        back, its last sends no activations on)."""
        if not 0 <= lo < hi <= self.S:
            raise ValueError(f"bad stage range [{lo}, {hi}) for {self.S} stages")
        sl = slice(lo, hi)
        return PipelineCosts.from_arrays(self.B, self.f_alpha[sl], self.f_beta[sl], self.b_alpha[sl],
                                         self.b_beta[sl], self.knee[sl], self.send_lat[sl], self.send_beta[sl],
                                         self.grad_lat[sl], self.grad_beta[sl], self.tail[sl], self.bmax[sl],
                                         self.names[sl], self.info)

    def describe(self) -> list[dict]:
        rows = []
        for s in range(self.S):
            rows.append(dict(stage=self.names[s], tf_B=float(self.tf(s, self.B)), tb_B=float(self.tb(s, self.B)),
                             cf_B=float(self.cf(s, self.B)), tail=float(self.tail[s]), bmax=int(self.bmax[s])))
        return rows


# --------------------------------------------------------------------------------------
# plans


def equal_sizes(B: int, M: int) -> list[int]:
    """B split into M near-equal microbatches (sizes differ by at most 1, larger first)."""
    if not 1 <= M <= B:
        raise ValueError(f"need 1 <= M <= B, got M={M}, B={B}")
    q, r = divmod(B, M)
    return [q + 1] * r + [q] * (M - r)


def rows_to_matrix(rows: Sequence[Sequence[int]], mmax: int | None = None) -> np.ndarray:
    mmax = mmax or max(len(r) for r in rows)
    out = np.zeros((len(rows), mmax), dtype=np.int64)
    for i, r in enumerate(rows):
        if len(r) > mmax:
            raise ValueError(f"row {i} has {len(r)} microbatches > mmax={mmax}")
        out[i, :len(r)] = r
    return out


def equal_plan(S: int, B: int, M: int | Sequence[int], mmax: int | None = None) -> np.ndarray:
    """[S, mmax] matrix with stage s split into M (or M[s]) near-equal microbatches."""
    Ms = [M] * S if np.isscalar(M) else list(M)
    return rows_to_matrix([equal_sizes(B, int(m)) for m in Ms], mmax or max(Ms))


def mirror(X) -> np.ndarray:
    """The backward plan that retraces the forward microbatches: each row's non-zero prefix
    reversed (backward consumes samples from the back). Works on [..., S, Mmax]."""
    X = np.asarray(X)
    n = (X > 0).sum(axis=-1, keepdims=True)
    j = np.arange(X.shape[-1])
    idx = n - 1 - j
    valid = idx >= 0
    return np.where(valid, np.take_along_axis(X, np.where(valid, idx, 0), axis=-1), 0)


def check_plan(costs: PipelineCosts, X: np.ndarray) -> None:
    """Raise ValueError unless every row of X is a valid partition of B for its stage."""
    X = np.asarray(X)
    if X.shape[-2] != costs.S:
        raise ValueError(f"plan has {X.shape[-2]} stages, instance has {costs.S}")
    if np.any(X < 0):
        raise ValueError("negative microbatch size")
    if np.any(X.sum(axis=-1) != costs.B):
        raise ValueError(f"every stage's microbatch sizes must sum to B={costs.B}")
    if np.any(X > costs.bmax[:, None]):
        raise ValueError("a microbatch exceeds its stage's memory cap bmax")
    nz = X > 0
    if np.any(nz[..., 1:] & ~nz[..., :-1]):
        raise ValueError("zero entries (no microbatch) must come after all non-zero ones")


# --------------------------------------------------------------------------------------
# vectorised evaluator (TiDGAP)


def _prefix(a: np.ndarray, op) -> np.ndarray:
    """Inclusive prefix ``op`` (np.add or np.maximum) along axis 0 by recursive doubling
    (Hillis-Steele): log2(M) whole-array operations instead of numpy's scalar accumulate
    loop, which is several times slower per element."""
    M = a.shape[0]
    if M <= 1:
        return a.copy()
    src, dst, spare = a, np.empty_like(a), None
    k = 1
    while k < M:  # ping-pong between two buffers: no copies of the shifted operand
        op(src[k:], src[:-k], out=dst[k:])
        dst[:k] = src[:k]
        if spare is None:
            spare = np.empty_like(a)
            src, dst = dst, spare
        else:
            src, dst = dst, src
        k *= 2
    return src


def _scan(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """F_j = max(F_{j-1}, R_j) + t_j along axis 0 (F_0 = -inf), as a max-plus scan:
    F = T + cummax(R - Tex) with T = cumsum(t), Tex = T - t."""
    T = _prefix(t, np.add)
    return T + _prefix(R - (T - t), np.maximum)


def _owner_lookup(Xpm: np.ndarray, Q: np.ndarray, B: int, tiled: np.ndarray) -> np.ndarray:
    """idx[j, p] = min{k : P[k, p] >= Q[j, p]} where P[:, p] = cumsum of row p of ``Xpm``
    ([P, M], rows sum to B) and Q in [1, B]: the upstream microbatch that holds sample
    Q[j, p]. Instead of a search, one ``np.repeat`` builds the sample -> microbatch table of
    every row at once (``tiled`` = tile(arange(M), P))."""
    owner = np.repeat(tiled, Xpm.ravel())
    return owner[Q - 1 + (np.arange(Xpm.shape[0], dtype=np.int64) * B)]


def _time_tables(costs: "PipelineCosts") -> tuple[np.ndarray, ...]:
    """tf, tb, cf, cb of every stage for every size 0..B, as [S, B+1] lookup tables."""
    b = np.arange(costs.B + 1, dtype=float)
    return tuple(np.stack([fn(s, b) for s in range(costs.S)]) for fn in (costs.tf, costs.tb, costs.cf, costs.cb))


def makespan(costs: PipelineCosts, X, Y=None, return_stage_ends: bool = False):
    """Iteration time of each plan. X, Y: [..., S, Mmax] integer arrays (Y defaults to
    ``mirror(X)``, the backward pass retracing the forward microbatches).
    Returns an array of shape X.shape[:-2] (a 0-d float for a single plan); with
    ``return_stage_ends`` also each stage's end time (last backward + tail) and forward end
    time, shaped X.shape[:-2] + (S,). Rows must be valid (non-negative, summing to B, zeros
    only at the end; see ``check_plan``).

    TiDGAP's two levels: the microbatch recurrences are max-plus scans (level 1) and the
    population is a second array axis (level 2); only stages are looped over. Internally
    the arrays are laid out [microbatch, individual] so each scan step is one contiguous
    vector operation across the population; stage times come from per-size lookup tables."""
    X = np.asarray(X)
    Y = mirror(X) if Y is None else np.asarray(Y)
    if X.ndim < 2 or Y.ndim < 2 or X.shape[-2] != costs.S or Y.shape[-2] != costs.S:
        raise ValueError(f"plans must be [..., {costs.S}, Mmax] arrays")
    lead = np.broadcast_shapes(X.shape[:-2], Y.shape[:-2])
    S, B = costs.S, costs.B
    X = np.broadcast_to(X, lead + X.shape[-2:]).reshape(-1, *X.shape[-2:]).astype(np.int64, copy=False)
    Y = np.broadcast_to(Y, lead + Y.shape[-2:]).reshape(-1, *Y.shape[-2:]).astype(np.int64, copy=False)
    if X.size and (X.min() < 0 or X.max() > B) or Y.size and (Y.min() < 0 or Y.max() > B):
        raise ValueError(f"microbatch sizes must lie in 0..B={B}")
    if np.any(X.sum(axis=-1) != B) or np.any(Y.sum(axis=-1) != B):
        raise ValueError(f"every stage's microbatch sizes must sum to B={B}")
    # drop all-zero trailing columns: the scans then cost O(largest microbatch count)
    mx = int(max((X > 0).sum(axis=-1).max(initial=1), 1))
    my = int(max((Y > 0).sum(axis=-1).max(initial=1), 1))
    X, Y = X[..., :mx], Y[..., :my]
    P = X.shape[0]
    TF, TB, CF, CB = _time_tables(costs)
    XT = np.ascontiguousarray(X.transpose(1, 2, 0))  # [S, M, P]
    YT = np.ascontiguousarray(Y.transpose(1, 2, 0))
    cols = np.arange(P, dtype=np.int64)
    tx, ty = np.tile(np.arange(mx, dtype=np.int32), P), np.tile(np.arange(my, dtype=np.int32), P)
    fl = np.empty((S, P))
    prevC = None
    for s in range(S):
        x = XT[s]
        if s == 0:
            R = np.zeros(x.shape)
        else:
            k = _owner_lookup(X[:, s - 1, :], _prefix(x, np.add), B, tx)
            R = np.take(prevC, k * np.int64(P) + cols)
        F = _scan(R, np.take(TF[s], x))
        fl[s] = F[-1]
        if s < S - 1:
            prevC = _scan(F, np.take(CF[s], x))
    ends = np.empty((S, P))
    prevCB = None
    for s in range(S - 1, -1, -1):
        y = YT[s]
        if s == S - 1:
            Rb = np.broadcast_to(fl[s], y.shape)
        else:
            k = _owner_lookup(Y[:, s + 1, :], _prefix(y, np.add), B, ty)
            Rb = np.maximum(np.take(prevCB, k * np.int64(P) + cols), fl[s])
        G = _scan(Rb, np.take(TB[s], y))
        ends[s] = G[-1] + costs.tail[s]
        if s > 0:
            prevCB = _scan(G, np.take(CB[s], y))
    out = ends.max(axis=0).reshape(lead)
    if return_stage_ends:
        return out, ends.T.reshape(lead + (S,)), fl.T.reshape(lead + (S,))
    return out


# --------------------------------------------------------------------------------------
# scalar reference and timelines


@dataclass
class Timeline:
    """Events ``(stage, kind, microbatch, start, end, size)``; kind in F, B, sendF, sendB, tail."""

    makespan: float
    events: list[tuple[int, str, int, float, float, int]]

    def by_stage(self, kind: str | None = None) -> dict[int, list[tuple]]:
        out: dict[int, list[tuple]] = {}
        for e in self.events:
            if kind is None or e[1] == kind:
                out.setdefault(e[0], []).append(e)
        return out

    def busy_fraction(self) -> list[float]:
        busy: dict[int, float] = {}
        for s, k, _, a, b, _ in self.events:
            if k in ("F", "B"):
                busy[s] = busy.get(s, 0.0) + (b - a)
        return [busy.get(s, 0.0) / self.makespan for s in range(max(busy) + 1)] if busy else []


def _rows(X) -> list[list[int]]:
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError("a single plan is a [S, Mmax] matrix or a list of rows")
    return [[int(v) for v in r if v > 0] for r in X]


def simulate(costs: PipelineCosts, xrows, yrows=None, record: bool = True) -> Timeline:
    """The fill-drain recurrence in plain Python, keeping every event (reference + Gantt)."""
    xr = _rows(rows_to_matrix(xrows) if isinstance(xrows, list) else xrows)
    yr = [r[::-1] for r in xr] if yrows is None else _rows(rows_to_matrix(yrows) if isinstance(yrows, list) else yrows)
    S = costs.S
    if len(xr) != S or len(yr) != S:
        raise ValueError(f"need {S} rows")
    for r in xr + yr:
        if sum(r) != costs.B:
            raise ValueError(f"a row sums to {sum(r)}, expected B={costs.B}")
    fa, fb, ba, bb, kn = (costs.f_alpha.tolist(), costs.f_beta.tolist(), costs.b_alpha.tolist(),
                          costs.b_beta.tolist(), costs.knee.tolist())
    sl, sb, gl, gb, tail = (costs.send_lat.tolist(), costs.send_beta.tolist(), costs.grad_lat.tolist(),
                            costs.grad_beta.tolist(), costs.tail.tolist())
    ev: list[tuple] = []
    prevC: list[float] = []
    prevP: list[int] = []
    flast = [0.0] * S
    for s in range(S):
        F = C = 0.0
        Cs: list[float] = []
        pre = 0
        k = 0
        Ps = []
        for j, x in enumerate(xr[s]):
            pre += x
            Ps.append(pre)
            if s == 0:
                R = 0.0
            else:
                while prevP[k] < pre:
                    k += 1
                R = prevC[k]
            st = max(F, R)
            F = st + fa[s] + fb[s] * max(x, kn[s])
            if record:
                ev.append((s, "F", j, st, F, x))
            if s < S - 1:
                cst = max(C, F)
                C = cst + sl[s] + sb[s] * x
                if record:
                    ev.append((s, "sendF", j, cst, C, x))
                Cs.append(C)
        flast[s] = F
        prevC, prevP = Cs, Ps
    ends = [0.0] * S
    prevCB, prevQ = [], []
    for s in range(S - 1, -1, -1):
        G = CB = 0.0
        CBs, Qs = [], []
        pre = 0
        k = 0
        for j, y in enumerate(yr[s]):
            pre += y
            Qs.append(pre)
            if s == S - 1:
                R = flast[s]
            else:
                while prevQ[k] < pre:
                    k += 1
                R = max(prevCB[k], flast[s])
            st = max(G, R)
            G = st + ba[s] + bb[s] * max(y, kn[s])
            if record:
                ev.append((s, "B", j, st, G, y))
            if s > 0:
                cst = max(CB, G)
                CB = cst + gl[s] + gb[s] * y
                if record:
                    ev.append((s, "sendB", j, cst, CB, y))
                CBs.append(CB)
        ends[s] = G + tail[s]
        if record and tail[s] > 0:
            ev.append((s, "tail", 0, G, ends[s], 0))
        prevCB, prevQ = CBs, Qs
    return Timeline(max(ends), ev)


def makespan_scalar(costs: PipelineCosts, xrows, yrows=None) -> float:
    """Scalar (per-individual) evaluator: the reference TiDGAP is checked against."""
    return simulate(costs, xrows, yrows, record=False).makespan


def gpipe_closed_form(f: Sequence[float], b: Sequence[float], M: int) -> float:
    """GPipe makespan with per-microbatch stage times f, b, no communication and no tail."""
    return float(sum(f) + (M - 1) * max(f) + sum(b) + (M - 1) * max(b))


# --------------------------------------------------------------------------------------
# list schedules (equal microbatches, any per-stage op order)


def gpipe_order(S: int, M: int) -> list[list[tuple[str, int]]]:
    """Fill-drain: all forwards, then all backwards from the last microbatch."""
    return [[("F", j) for j in range(M)] + [("B", j) for j in reversed(range(M))] for _ in range(S)]


def one_f_one_b_order(S: int, M: int) -> list[list[tuple[str, int]]]:
    """PipeDream-Flush / 1F1B: stage s runs min(S-s-1, M) warm-up forwards, then alternates
    one forward and one backward, then the cool-down backwards (Narayanan et al. 2021)."""
    out = []
    for s in range(S):
        w = min(S - s - 1, M)
        ops = [("F", j) for j in range(w)]
        for i in range(M - w):
            ops += [("F", w + i), ("B", i)]
        ops += [("B", j) for j in range(M - w, M)]
        out.append(ops)
    return out


def list_schedule(costs: PipelineCosts, orders: Sequence[Sequence[tuple[str, int]]],
                  sizes: Sequence[int]) -> Timeline:
    """Run each stage's ops in the given order as soon as their inputs have arrived.

    ``sizes[j]`` is microbatch j's size (the same at every stage). F(s,j) needs stage s-1's
    activations of j; B(s,j) needs F(s,j) and stage s+1's gradient of j. Each link direction
    is serialised in the order the messages are produced. Raises ValueError on a deadlock."""
    S, M = costs.S, len(sizes)
    if len(orders) != S:
        raise ValueError(f"need {S} op orders")
    if sum(sizes) != costs.B:
        raise ValueError(f"microbatch sizes sum to {sum(sizes)}, expected B={costs.B}")
    for s, o in enumerate(orders):
        if sorted(o) != sorted([("F", j) for j in range(M)] + [("B", j) for j in range(M)]):
            raise ValueError(f"stage {s}: order must contain F and B of each of the {M} microbatches once")
    fdone = [[None] * M for _ in range(S)]
    act_arr = [[None] * M for _ in range(S)]  # arrival of activations at stage s
    grad_arr = [[None] * M for _ in range(S)]  # arrival of gradients at stage s
    linkf = [0.0] * S
    linkb = [0.0] * S
    free = [0.0] * S
    ptr = [0] * S
    ev: list[tuple] = []
    remaining = 2 * M * S
    while remaining:
        progress = False
        for s in range(S):
            while ptr[s] < 2 * M:
                kind, j = orders[s][ptr[s]]
                b = sizes[j]
                if kind == "F":
                    ready = 0.0 if s == 0 else act_arr[s][j]
                    if ready is None:
                        break
                    st = max(free[s], ready)
                    free[s] = st + float(costs.tf(s, b))
                    fdone[s][j] = free[s]
                    ev.append((s, "F", j, st, free[s], b))
                    if s < S - 1:
                        cst = max(linkf[s], free[s])
                        linkf[s] = cst + float(costs.cf(s, b))
                        act_arr[s + 1][j] = linkf[s]
                        ev.append((s, "sendF", j, cst, linkf[s], b))
                else:
                    ready = fdone[s][j] if s == S - 1 else grad_arr[s][j]
                    if ready is None or fdone[s][j] is None:
                        break
                    st = max(free[s], ready)
                    free[s] = st + float(costs.tb(s, b))
                    ev.append((s, "B", j, st, free[s], b))
                    if s > 0:
                        cst = max(linkb[s], free[s])
                        linkb[s] = cst + float(costs.cb(s, b))
                        grad_arr[s - 1][j] = linkb[s]
                        ev.append((s, "sendB", j, cst, linkb[s], b))
                ptr[s] += 1
                remaining -= 1
                progress = True
        if not progress:
            raise ValueError("schedule deadlocks: " + ", ".join(
                f"stage {s} waits at {orders[s][ptr[s]]}" for s in range(S) if ptr[s] < 2 * M))
    ends = [free[s] + costs.tail[s] for s in range(S)]
    for s in range(S):
        if costs.tail[s] > 0:
            ev.append((s, "tail", 0, free[s], ends[s], 0))
    return Timeline(max(ends), ev)


def pipedream_async_time(costs: PipelineCosts, M: int) -> float:
    """Steady-state time per minibatch of asynchronous PipeDream (1F1B, no flush, weight
    stashing) with M equal microbatches: M x the slowest resource's per-microbatch period
    (a stage's f+b, or a full-duplex link's max of the two directions)."""
    b = equal_sizes(costs.B, M)[0]
    per = [float(costs.tf(s, b) + costs.tb(s, b)) for s in range(costs.S)]
    per += [max(float(costs.cf(s, b)), float(costs.cb(s + 1, b))) for s in range(costs.S - 1)]
    return M * max(per)  # no flush: weight sync is amortised away in the steady state


# --------------------------------------------------------------------------------------
# data parallelism


def ring_allreduce_time(nbytes: float, n: int, bandwidth: float, latency: float = 0.0) -> float:
    """Ring all-reduce: 2(n-1) steps, each sending nbytes/n (Patarasuk & Yuan 2009)."""
    if n < 1 or bandwidth <= 0 or nbytes < 0:
        raise ValueError("ring_allreduce_time: need n >= 1, bandwidth > 0, nbytes >= 0")
    if n == 1:
        return 0.0
    return 2 * (n - 1) / n * nbytes / bandwidth + 2 * (n - 1) * latency


def bsp_iteration_time(compute_times: Sequence[float], nbytes: float, bandwidth: float,
                       latency: float = 0.0) -> float:
    """Bulk-synchronous data parallelism: slowest worker, then a ring all-reduce."""
    ct = list(compute_times)
    if not ct:
        raise ValueError("need at least one worker")
    return max(ct) + ring_allreduce_time(nbytes, len(ct), bandwidth, latency)
