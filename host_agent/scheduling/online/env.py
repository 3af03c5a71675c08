"""A synthetic dynamic environment for the online planner (design section 7(c)).

Per slot ``t`` the environment exposes an observation ``omega(t)`` (a :class:`SlotView`):

* device speeds ``v_n(t) = v_n * exp(x_n(t)) / s_n(t)`` where ``x`` is an AR(1) process on the
  log-speed (``x(t) = phi x(t-1) + sigma eps``) and ``s_n(t)`` the straggler factor from
  :mod:`host_agent.scheduling.workloads` (transient episodes and optional persistent ones);
* link bandwidths with their own AR(1) log-fluctuation (symmetric);
* fixed pay-per-use prices ``p_n`` ($/s) -- a straggling device still costs its price.

Everything is drawn up front from one seeded ``numpy.random.Generator`` so a run is
reproducible bit for bit and does not depend on the planner's decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..workloads import GBPS, Cluster, Combined, Device, Link, Persistent, Transient
from .model import SlotView


@dataclass(frozen=True)
class EnvConfig:
    rel_speeds: tuple[float, ...] = (1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25)
    nodes: tuple[int, ...] = (0, 0, 1, 1, 2, 2, 3, 3)
    base_speed: float = 20e12  # FLOP/s of a speed-1 device
    memory: float = 16e9
    base_price: float = 3.0  # $/h of a speed-1 device; price ~ speed ** price_exp
    price_exp: float = 1.2
    intra_bw: float = 100 * GBPS
    inter_bw: float = 10 * GBPS
    intra_lat: float = 5e-6
    inter_lat: float = 30e-6
    overhead: float = 2e-3  # s per microbatch per stage
    knee: int = 4
    ar_phi: float = 0.9
    ar_sigma: float = 0.05
    bw_sigma: float = 0.05
    transient_p: float = 0.05
    transient_factor: tuple[float, float] = (2.0, 5.0)
    transient_duration: tuple[int, int] = (1, 3)
    persistent: tuple[tuple[int, float, int], ...] = ()  # (device, factor, start slot)

    def __post_init__(self) -> None:
        if len(self.rel_speeds) == 0 or len(self.rel_speeds) != len(self.nodes):
            raise ValueError("rel_speeds and nodes must be non-empty and of equal length")
        if any(not (v > 0) for v in self.rel_speeds):
            raise ValueError("relative speeds must be > 0")
        for d, f, s in self.persistent:
            if not (0 <= d < len(self.rel_speeds)) or not f > 0 or s < 0:
                raise ValueError(f"bad persistent straggler {(d, f, s)}")


class SyntheticEnv:
    def __init__(self, n_slots: int, seed: int = 0, config: EnvConfig | None = None):
        if n_slots < 1:
            raise ValueError("n_slots must be >= 1")
        cfg = config or EnvConfig()
        self.cfg = cfg
        self.T = int(n_slots)
        n = len(cfg.rel_speeds)
        rel = np.asarray(cfg.rel_speeds, dtype=float)
        devs = [Device(f"d{i}(x{r:g})", cfg.base_speed * r, cfg.memory,
                       cfg.base_price * r ** cfg.price_exp, overhead=cfg.overhead, knee=cfg.knee)
                for i, r in enumerate(rel)]
        self.cluster = Cluster.two_level(devs, list(cfg.nodes), Link(cfg.intra_bw, cfg.intra_lat),
                                         Link(cfg.inter_bw, cfg.inter_lat), name="synthetic")
        rng = np.random.default_rng(seed)
        x = np.zeros((self.T, n))
        y = np.zeros((self.T, n, n))
        xs = rng.normal(0.0, cfg.ar_sigma / np.sqrt(1 - cfg.ar_phi ** 2), n)
        ys = np.zeros((n, n))
        for t in range(self.T):
            xs = cfg.ar_phi * xs + cfg.ar_sigma * rng.normal(size=n) if t else xs
            e = rng.normal(size=(n, n))
            ys = cfg.ar_phi * ys + cfg.bw_sigma * np.triu(e, 1)
            x[t] = xs
            y[t] = ys + ys.T
        models = [Transient(cfg.transient_p, cfg.transient_factor, cfg.transient_duration,
                            seed=int(rng.integers(2 ** 31)))]
        models += [Persistent(d, f, s) for d, f, s in cfg.persistent]
        self.straggle = Combined(tuple(models)).factors(self.T, n)
        self.log_speed = x
        self.log_bw = y
        self.speed0 = np.array([d.speed for d in devs])
        self.price = np.array([d.price_per_s for d in devs])
        self.memory = np.array([d.memory for d in devs])
        self.overhead = np.array([d.overhead for d in devs])
        self.knee = np.array([d.knee for d in devs], dtype=float)

    @property
    def n(self) -> int:
        return len(self.speed0)

    def view(self, t: int) -> SlotView:
        if not 0 <= t < self.T:
            raise IndexError(f"slot {t} outside 0..{self.T - 1}")
        speed = self.speed0 * np.exp(self.log_speed[t]) / self.straggle[t]
        bw = self.cluster.bandwidth * np.exp(self.log_bw[t])
        return SlotView(speed, self.memory, self.price, self.overhead, self.knee, bw, self.cluster.latency)

    def nominal_view(self) -> SlotView:
        return SlotView(self.speed0.copy(), self.memory, self.price, self.overhead, self.knee,
                        self.cluster.bandwidth, self.cluster.latency)
