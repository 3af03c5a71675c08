"""Discrete-event simulator for BSP / ASP / SSP / local SGD / LB-BSP / CGP (design 3.3, 7(d)).

Training is real (numpy): a 2-layer MLP (or logistic regression) on a seeded synthetic
10-class dataset; only *time* is simulated. Every worker's iteration on ``b`` samples takes
``base_i * b / b0 * straggle * noise`` where ``straggle`` is a persistent factor (one worker
x3 by default, optionally moving to another worker at ``move_at``) times a transient factor
(each iteration is slowed by U[2, 5] with probability ``p``), and ``noise`` is log-normal.

Communication: a ring all-reduce among ``k`` workers takes ``2 (k-1)/k * comm``; the
parameter server serves one update at a time (FIFO) in ``ps_time`` (push, apply, pull).

Methods
* ``bsp``: all-reduce every iteration, everybody waits for the slowest.
* ``lbbsp``: BSP with per-worker batch sizes proportional to the speed predicted from the
  median of each worker's last iteration times (LB-BSP-like).
* ``localsgd``: ``H`` local steps, then model averaging.
* ``asp``: every worker pushes to the PS on its own; no damping, no bound.
* ``ssp``: ASP plus the clock bound of Ho et al.: a worker may not start an iteration more
  than ``ssp_s`` iterations ahead of the slowest worker.
* ``cgp``: groups from :func:`segment_groups` on measured iteration times; a group iterates
  synchronously (intra-group all-reduce), its leader pushes the group gradient to the PS,
  which applies ``w -= lr * (n_g / B_ref) * h(s) * g`` under the gate of :mod:`.policy`.
  Regrouping happens at a barrier every ``regroup_every`` versions when the straggler set
  (from the median of the last ``window`` iteration times) has changed.

All learning rates are per global batch ``B_ref = N * b``: BSP applies ``lr * mean grad``;
an asynchronous update of ``n`` samples is scaled by ``n / B_ref``.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import asdict, dataclass, field

import numpy as np

from .grouping import grouping_objective, segment_groups, straggler_flags
from .policy import damping, gate_allows

METHODS = ("bsp", "lbbsp", "localsgd", "asp", "ssp", "cgp")


# --------------------------------------------------------------------------- data and model
def make_dataset(n_train=12000, n_test=3000, dim=20, classes=10, clusters=2, sep=2.2, seed=0):
    """Each class is a mixture of ``clusters`` Gaussian blobs (not linearly separable)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, sep, size=(classes, clusters, dim)) / np.sqrt(dim) * 3.0
    n = n_train + n_test
    y = rng.integers(0, classes, n)
    c = rng.integers(0, clusters, n)
    X = centers[y, c] + rng.normal(0, 1.0, size=(n, dim))
    X = X.astype(np.float64)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


class MLP:
    """Flat-parameter 2-layer tanh MLP (hidden=0 gives multinomial logistic regression)."""

    def __init__(self, dim, classes, hidden=64, seed=0):
        self.dim, self.classes, self.hidden = dim, classes, hidden
        rng = np.random.default_rng(seed + 1000)
        if hidden:
            self.shapes = [(dim, hidden), (hidden,), (hidden, classes), (classes,)]
            parts = [rng.normal(0, 1 / np.sqrt(dim), (dim, hidden)), np.zeros(hidden),
                     rng.normal(0, 1 / np.sqrt(hidden), (hidden, classes)), np.zeros(classes)]
        else:
            self.shapes = [(dim, classes), (classes,)]
            parts = [np.zeros((dim, classes)), np.zeros(classes)]
        self.w0 = np.concatenate([p.ravel() for p in parts])

    def _unpack(self, w):
        out, i = [], 0
        for s in self.shapes:
            k = int(np.prod(s))
            out.append(w[i:i + k].reshape(s))
            i += k
        return out

    def loss_grad(self, w, X, y, need_grad=True):
        p = self._unpack(w)
        n = X.shape[0]
        if self.hidden:
            W1, b1, W2, b2 = p
            H = np.tanh(X @ W1 + b1)
            Z = H @ W2 + b2
        else:
            W2, b2 = p
            H = X
            Z = X @ W2 + b2
        Z = Z - Z.max(axis=1, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(axis=1, keepdims=True)
        loss = float(-np.mean(np.log(P[np.arange(n), y] + 1e-12)))
        if not need_grad:
            return loss, P
        dZ = P
        dZ[np.arange(n), y] -= 1.0
        dZ /= n
        gW2, gb2 = H.T @ dZ, dZ.sum(axis=0)
        if not self.hidden:
            return loss, np.concatenate([gW2.ravel(), gb2])
        dH = (dZ @ W2.T) * (1 - H * H)
        gW1, gb1 = X.T @ dH, dH.sum(axis=0)
        return loss, np.concatenate([gW1.ravel(), gb1, gW2.ravel(), gb2])

    def evaluate(self, w, X, y):
        loss, P = self.loss_grad(w, X, y, need_grad=False)
        return loss, float(np.mean(P.argmax(axis=1) == y))


# --------------------------------------------------------------------------- configuration
@dataclass
class SimConfig:
    n_workers: int = 8
    local_batch: int = 32
    lr: float = 1.0
    hidden: int = 64  # 0 = logistic regression
    dim: int = 20
    classes: int = 10
    n_train: int = 12000
    n_test: int = 3000
    base_time: float = 1.0  # s per iteration of local_batch samples on a nominal worker
    hetero: tuple[float, ...] = ()  # per-worker multipliers of base_time (default all 1)
    straggler: int = 7
    straggler_factor: float = 3.0
    move_to: int = -1  # the persistent straggler moves to this worker at move_at (-1: never)
    move_at: float = 0.0
    transient_p: float = 0.05
    transient_factor: tuple[float, float] = (2.0, 5.0)
    noise: float = 0.05
    comm: float = 0.1  # s to send the model once (all-reduce = 2 (k-1)/k comm)
    ps_time: float = 0.3  # PS service time per update (push + apply + pull)
    duration: float = 200.0  # simulated seconds
    log_every: float = 4.0
    s_max: int = 8  # must admit a singleton straggler's natural staleness (~ x3 * fast groups)
    lam: float = 0.1
    theta: float = 0.3
    regroup_every: int = 2
    window: int = 9
    review_every: int = 40  # versions between periodic reviews of the grouping
    review_gain: float = 0.1  # regroup on review only if J improves by this fraction
    g_max: int = 4
    damping: str = "excess"
    sep: float = 1.4  # class-centre spread of the synthetic data (smaller = harder)
    ssp_s: int = 4
    local_steps: int = 4
    seed: int = 0

    def __post_init__(self):
        if self.n_workers < 2:
            raise ValueError("need at least 2 workers")
        if not 0 <= self.straggler < self.n_workers or self.move_to >= self.n_workers:
            raise ValueError("straggler/move_to must name a worker")
        if self.hetero and len(self.hetero) != self.n_workers:
            raise ValueError("hetero needs one multiplier per worker")
        for k in ("lr", "base_time", "duration", "log_every", "straggler_factor"):
            v = getattr(self, k)
            if not (v > 0 and math.isfinite(v)):
                # an infinite duration (saatp plan cgp --duration inf) simulated until killed (until 2026-11-28)
                opt = " (--duration)" if k == "duration" else ""
                raise ValueError(f"{k}{opt} must be a finite number > 0, got {v:g}")
        if self.comm < 0 or self.ps_time < 0 or not 0 <= self.transient_p <= 1:
            raise ValueError("comm/ps_time must be >= 0 and transient_p in [0, 1]")
        if self.duration < self.log_every:
            # every figure is taken at the log times: a shorter run had only the start's (until
            # 2026-11-28 saatp plan cgp --duration 3 failed with a ZeroDivisionError traceback)
            raise ValueError(f"duration {self.duration:g} s is shorter than the log interval ({self.log_every:g} s), "
                             f"at which every figure is taken: --duration must be >= {self.log_every:g}")


@dataclass
class SimResult:
    method: str
    times: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    acc: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    versions: int = 0
    total_samples: int = 0
    max_staleness: int = 0
    regroups: int = 0
    groupings: list = field(default_factory=list)  # (time, groups)
    w: np.ndarray | None = None
    traj: list = field(default_factory=list)  # (samples, w copy) when tracking is on

    @property
    def throughput(self) -> float:
        """Samples per second up to the last log time, where the final loss and accuracy are
        taken. Until 2026-11-28 the samples of the whole run over the last log time: a
        6-s run logged at 4 s reported BSP at 128 samples/s for 512 samples in 6 s."""
        return self.samples[-1] / self.times[-1] if self.times and self.times[-1] > 0 else 0.0

    def time_to_loss(self, target: float) -> float:
        for t, l in zip(self.times, self.loss):
            if l <= target:
                return t
        return float("inf")

    def to_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("w", "traj")}
        d["throughput"] = self.throughput
        return d


class _Timing:
    """Per-worker iteration times (own RNG stream per worker, so methods see the same draws)."""

    def __init__(self, cfg: SimConfig):
        self.cfg = cfg
        self.rngs = [np.random.default_rng([cfg.seed, 7, i]) for i in range(cfg.n_workers)]
        self.base = np.asarray(cfg.hetero if cfg.hetero else [1.0] * cfg.n_workers) * cfg.base_time

    def persistent(self, i: int, now: float) -> float:
        c = self.cfg
        who = c.move_to if (c.move_to >= 0 and now >= c.move_at) else c.straggler
        return c.straggler_factor if i == who else 1.0

    def draw(self, i: int, now: float, b: float) -> float:
        c = self.cfg
        r = self.rngs[i]
        f = self.persistent(i, now)
        if r.random() < c.transient_p:
            f *= r.uniform(*c.transient_factor)
        return float(self.base[i] * (b / c.local_batch) * f * np.exp(c.noise * r.normal()))


def ring(k: int, comm: float) -> float:
    return 0.0 if k <= 1 else 2.0 * (k - 1) / k * comm


# --------------------------------------------------------------------------- simulator
class Simulator:
    def __init__(self, cfg: SimConfig, track: bool = False):
        self.cfg = cfg
        self.Xtr, self.ytr, self.Xte, self.yte = make_dataset(cfg.n_train, cfg.n_test, cfg.dim, cfg.classes,
                                                              sep=cfg.sep, seed=cfg.seed)
        self.model = MLP(cfg.dim, cfg.classes, cfg.hidden, seed=cfg.seed)
        self.track = track
        ev = np.random.default_rng(cfg.seed + 99).choice(cfg.n_train, min(2000, cfg.n_train), replace=False)
        self.Xev, self.yev = self.Xtr[ev], self.ytr[ev]

    def _batch(self, rng, b):
        idx = rng.integers(0, self.cfg.n_train, int(b))
        return self.Xtr[idx], self.ytr[idx]

    def _grad(self, w, rng, b):
        X, y = self._batch(rng, b)
        return self.model.loss_grad(w, X, y)[1]

    def _log(self, res: SimResult, t: float, w: np.ndarray, samples: int):
        loss, _ = self.model.evaluate(w, self.Xev, self.yev)
        _, acc = self.model.evaluate(w, self.Xte, self.yte)
        res.times.append(float(t))
        res.loss.append(loss)
        res.acc.append(acc)
        res.samples.append(int(samples))

    def run(self, method: str) -> SimResult:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
        return getattr(self, "_run_" + method)()

    # ------------------------------------------------------------------ synchronous family
    def _sync_loop(self, method: str) -> SimResult:
        c = self.cfg
        N, b = c.n_workers, c.local_batch
        B = N * b
        tm = _Timing(c)
        drng = [np.random.default_rng([c.seed, 11, i]) for i in range(N)]
        w = self.model.w0.copy()
        res = SimResult(method)
        now, samples, next_log = 0.0, 0, 0.0
        hist = [deque(maxlen=c.window) for _ in range(N)]  # per-sample times, for LB-BSP
        self._log(res, 0.0, w, 0)
        next_log = c.log_every
        H = c.local_steps if method == "localsgd" else 1
        while now < c.duration:
            if method == "lbbsp" and all(hist):
                speed = np.array([1.0 / np.median(h) for h in hist])
                share = B * speed / speed.sum()
                bs = np.maximum(1, np.floor(share)).astype(int)
                for i in np.argsort(-(share - bs))[:max(0, B - bs.sum())]:
                    bs[i] += 1
            else:
                bs = np.full(N, b)
            t_i = np.zeros(N)
            if method == "localsgd":
                ws = []
                for i in range(N):
                    wi = w.copy()
                    for _ in range(H):
                        t_i[i] += tm.draw(i, now, b)
                        wi -= c.lr * self._grad(wi, drng[i], b)
                    ws.append(wi)
                w = np.mean(ws, axis=0)
            else:
                g = np.zeros_like(w)
                for i in range(N):
                    t_i[i] = tm.draw(i, now, bs[i])
                    hist[i].append(t_i[i] / bs[i])
                    g += (bs[i] / bs.sum()) * self._grad(w, drng[i], bs[i])
                w = w - c.lr * g
            now += t_i.max() + ring(N, c.comm)
            samples += int(bs.sum()) * H
            res.versions += 1
            while next_log <= now and next_log <= c.duration:
                self._log(res, next_log, w, samples)
                next_log += c.log_every
            if self.track:
                res.traj.append((samples, w.copy()))
        res.total_samples = samples
        res.w = w
        return res

    def _run_bsp(self):
        return self._sync_loop("bsp")

    def _run_lbbsp(self):
        return self._sync_loop("lbbsp")

    def _run_localsgd(self):
        return self._sync_loop("localsgd")

    # ------------------------------------------------------------------ asynchronous family
    def _async_loop(self, method: str) -> SimResult:
        """Shared event loop: units are groups (one worker each for ASP/SSP)."""
        c = self.cfg
        N, b = c.n_workers, c.local_batch
        B_ref = N * b
        tm = _Timing(c)
        drng = [np.random.default_rng([c.seed, 11, i]) for i in range(N)]
        res = SimResult(method)
        w = self.model.w0.copy()
        v = 0
        samples = 0
        self._log(res, 0.0, w, 0)
        next_log = c.log_every
        hist = [deque(maxlen=c.window) for _ in range(N)]
        hist_long = [deque(maxlen=64) for _ in range(N)]
        events: list = []  # (time, seq, kind, payload)

        def pooled_samples():
            """Each worker's time distribution = its median x the pooled shape (time / own
            median) of every worker's last 64 iterations: rare transient stragglers are
            estimated from all workers together."""
            med = np.array([np.median(h) for h in hist])
            shape = np.concatenate([np.asarray(h) / np.median(h) for h in hist_long])
            return [m * shape for m in med]

        seq = [0]

        def push_event(t, kind, payload):
            seq[0] += 1
            heapq.heappush(events, (t, seq[0], kind, payload))

        if method == "cgp":
            groups = [tuple(range(N))]  # start synchronous; regroup once times are measured
        else:
            groups = [(i,) for i in range(N)]
        flags_now = np.zeros(N, dtype=bool)
        clocks = {}  # SSP clocks per unit
        in_flight: dict[int, int] = {}  # unit -> base version
        pending: list = []  # (arrival time, unit, grad, n, base)
        ps_free_at = 0.0
        barrier = False
        blocked: set = set()
        unit_members: dict[int, tuple] = {}
        gen = [0]
        last_check = [0]
        recheck = [0]
        next_review = [c.review_every]

        def start_unit(u, t):
            members = unit_members[u]
            ts = [tm.draw(i, t, b) for i in members]
            for i, x in zip(members, ts):
                hist[i].append(x)
                hist_long[i].append(x)
            g = np.zeros_like(w)
            for i in members:
                g += self._grad(w, drng[i], b) / len(members)
            in_flight[u] = v
            done = t + max(ts) + ring(len(members), c.comm)
            push_event(done, "ready", (u, g, len(members) * b, v, gen[0]))

        expected: dict[int, float] = {}

        def install(groups_, t, stale=None):
            unit_members.clear()
            expected.clear()
            if stale is not None:
                expected.update(enumerate(stale))
            gen[0] += 1
            for u, g in enumerate(groups_):
                unit_members[u] = tuple(g)
                clocks[u] = 0
            in_flight.clear()
            for u in unit_members:
                start_unit(u, t)
            res.groupings.append((float(t), [list(g) for g in groups_]))

        install(groups, 0.0)
        now = 0.0

        def try_serve(t):
            nonlocal w, v, ps_free_at, samples, barrier
            while pending and ps_free_at <= t:
                choice = None
                if method == "cgp":
                    for k, p in enumerate(pending):
                        if gate_allows(v, p[1], in_flight, c.s_max):
                            choice = [k]
                            break
                    if choice is None:
                        computing = [u for u in in_flight if u not in {p[1] for p in pending}]
                        if computing:
                            return  # wait for a computing group to arrive
                        choice = list(range(len(pending)))  # merged step
                else:
                    choice = [0]
                start = max(t, ps_free_at)
                fin = start + c.ps_time
                items = [pending[k] for k in choice]
                for k in sorted(choice, reverse=True):
                    pending.pop(k)
                for (_, u, g, n, base) in items:
                    s = v - base
                    res.max_staleness = max(res.max_staleness, s)
                    h = damping(s, c.damping, expected.get(u, 0.0)) if method == "cgp" else 1.0
                    w = w - c.lr * (n / B_ref) * h * g
                    samples += n
                    in_flight.pop(u, None)
                v += 1
                res.versions += 1
                ps_free_at = fin
                for (_, u, _, _, _) in items:
                    push_event(fin, "resume", (u, gen[0]))
                if self.track:
                    res.traj.append((samples, w.copy()))

        while events:
            t, _, kind, payload = heapq.heappop(events)
            if t > c.duration:
                break
            now = t
            while next_log <= now:
                self._log(res, next_log, w, samples)
                next_log += c.log_every
            if kind == "ready":
                u, g, n, base, gn = payload
                if gn != gen[0]:
                    continue
                pending.append((t, u, g, n, base))
                try_serve(t)
                if pending and ps_free_at > t:
                    push_event(ps_free_at, "ps", None)
            elif kind == "ps":
                try_serve(t)
                if pending and ps_free_at > t:
                    push_event(ps_free_at, "ps", None)
            elif kind == "resume":
                u, gn = payload
                if gn != gen[0]:
                    continue
                clocks[u] = clocks.get(u, 0) + 1
                if method == "cgp":
                    if not barrier and (res.versions - last_check[0]) >= c.regroup_every and all(hist):
                        last_check[0] = res.versions
                        tau = np.array([np.median(h) for h in hist])
                        fl = straggler_flags(tau, c.theta)
                        if not np.array_equal(fl, flags_now):
                            barrier = True
                        elif recheck[0] and res.versions >= recheck[0]:
                            # one follow-up after a regroup, once the windows hold fresh times
                            recheck[0] = 0
                            gr = segment_groups(tau, c.lam, c.s_max, c.g_max, c.ps_time, c.theta,
                                                samples=pooled_samples(), comm=c.comm,
                                                seed=c.seed + res.regroups)
                            # only a change in where the stragglers sit is worth a barrier
                            flagged = set(np.flatnonzero(fl).tolist())
                            cur = {frozenset(g) for g in unit_members.values() if flagged & set(g)}
                            new = {frozenset(g) for g in gr.groups if flagged & set(g)}
                            if new != cur:
                                barrier = True
                        elif res.versions >= next_review[0]:
                            # periodic review: regroup only for a clearly better grouping
                            next_review[0] = res.versions + c.review_every
                            smp = pooled_samples()
                            gr = segment_groups(tau, c.lam, c.s_max, c.g_max, c.ps_time, c.theta,
                                                samples=smp, comm=c.comm, seed=c.seed + res.regroups)
                            args = (c.lam, c.ps_time, smp, c.comm)
                            j_new = grouping_objective(tau, gr.groups, *args, seed=1)
                            j_cur = grouping_objective(tau, list(unit_members.values()), *args, seed=1)
                            if j_new < (1.0 - c.review_gain) * j_cur:
                                barrier = True
                    if barrier:
                        blocked.add(u)
                        if not in_flight and not pending:
                            tau = np.array([np.median(h) for h in hist])
                            flags_now = straggler_flags(tau, c.theta)
                            gr = segment_groups(tau, c.lam, c.s_max, c.g_max, c.ps_time, c.theta,
                                                samples=pooled_samples(), comm=c.comm,
                                                seed=c.seed + res.regroups)
                            res.regroups += 1
                            recheck[0] = res.versions + 3 * c.window
                            barrier = False
                            blocked.clear()
                            install(gr.groups, t, gr.staleness)
                        continue
                    start_unit(u, t)
                elif method == "ssp":
                    blocked.add(u)
                    lo = min(clocks.values())
                    for x in sorted(blocked):
                        if clocks[x] - lo <= c.ssp_s:
                            blocked.discard(x)
                            start_unit(x, t)
                else:
                    start_unit(u, t)
            if pending and not any(e[2] == "ps" for e in events) and ps_free_at > now:
                push_event(ps_free_at, "ps", None)
        while next_log <= c.duration:
            self._log(res, next_log, w, samples)
            next_log += c.log_every
        res.total_samples = samples
        res.w = w
        return res

    def _run_asp(self):
        return self._async_loop("asp")

    def _run_ssp(self):
        return self._async_loop("ssp")

    def _run_cgp(self):
        return self._async_loop("cgp")


def run_all(cfg: SimConfig, methods=METHODS) -> dict[str, SimResult]:
    sim = Simulator(cfg)
    return {m: sim.run(m) for m in methods}
