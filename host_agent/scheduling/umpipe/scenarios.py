"""Named UMPIPE scenarios (workload + cluster + minibatch) and random instances.

Every scenario builds a :class:`PipelineCosts`: the layers are split over the devices of the
cluster, in cluster order, by PipeDream's chain DP (:func:`baselines.chain_partition`), and
all methods then plan microbatches on that same split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..costmodel import PipelineCosts
from ..workloads import Cluster, Persistent, Workload, cluster, gpt1_14, resnet50, vgg16
from .baselines import ordered_partition

# the UMPIPE paper's reported speed-ups of UMPIPE over (GPipe, PipeDream), in percent
PAPER = {"gpt1-14": (13.89, 11.09), "vgg16": (17.11, 7.96)}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    build: Callable[[], PipelineCosts] = field(repr=False)
    mmax: int = 32
    paper: tuple[float, float] | None = None  # paper's (vs GPipe, vs PipeDream) speed-ups, %

    def costs(self) -> PipelineCosts:
        return self.build()


def _chain(wl: Workload, cl: Cluster, B: int, recompute: bool = False, cuts=None, order=None) -> PipelineCosts:
    if cuts is None:
        order, cuts = ordered_partition(wl, list(cl.devices), cl.bandwidth, cl.latency)
    order = list(range(cl.n)) if order is None else list(order)
    devs = [cl.devices[i] for i in order]
    links = [cl.link(order[i], order[i + 1]) for i in range(cl.n - 1)]
    c = PipelineCosts.build(wl, cuts, devs, links, B, recompute=recompute)
    c.info["order"] = order
    return c


def _toy() -> PipelineCosts:
    # the design's toy: 4 stages with relative costs 1.0/1.6/0.8/2.2 per minibatch, a
    # per-microbatch overhead of 0.05, link latency 0.01, B=128, backward = 2x forward
    c = np.array([1.0, 1.6, 0.8, 2.2])
    return PipelineCosts.from_arrays(128, 0.05, c / 128, 0.05, 2 * c / 128, 0, 0.01, 0.0,
                                     names=[f"toy{s}" for s in range(4)])


def _straggler() -> PipelineCosts:
    cl = cluster("hetero-4x")
    f = Persistent(device=1, factor=3.0).factors(1, cl.n)[0]
    # the split is planned for the nominal cluster; the straggler appears afterwards
    order, cuts = ordered_partition(vgg16(), list(cl.devices), cl.bandwidth, cl.latency)
    return _chain(vgg16(), cl.slowed(f), 128, cuts=cuts, order=order)


def _gpt_slow_links() -> PipelineCosts:
    cl = cluster("hetero-4x")
    cl = Cluster.uniform(list(cl.devices), 10e9 / 8, 50e-6, name="hetero-4x-10g")
    return _chain(gpt1_14(), cl, 64)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("gpt1-14", "GPT1-14 (GPT-1 as 14 layers) on hetero-4x (a100, v100, p100, t4; 25 Gb/s), B=64",
             lambda: _chain(gpt1_14(), cluster("hetero-4x"), 64), 32, PAPER["gpt1-14"]),
    Scenario("vgg16", "VGG16 on hetero-4x (a100, v100, p100, t4; 25 Gb/s), B=128",
             lambda: _chain(vgg16(), cluster("hetero-4x"), 128), 32, PAPER["vgg16"]),
    Scenario("resnet50", "ResNet-50 on hetero-4x, B=128",
             lambda: _chain(resnet50(), cluster("hetero-4x"), 128), 32),
    Scenario("gpt1-14-8", "GPT1-14 on hetero-8x (2x a100/v100/p100/t4, 100 Gb/s in a node, 10 Gb/s across), B=64",
             lambda: _chain(gpt1_14(), cluster("hetero-8x"), 64), 32),
    Scenario("gpt1-14-10g", "GPT1-14 on hetero-4x with 10 Gb/s, 50 us links, B=64", _gpt_slow_links, 32),
    Scenario("vgg16-homo", "VGG16 on homo-4x (4x v100), B=128: UEDP should gain ~nothing",
             lambda: _chain(vgg16(), cluster("homo-4x"), 128), 32),
    Scenario("vgg16-straggler", "VGG16 on hetero-4x, split for the nominal cluster, v100 then slowed x3, B=128",
             _straggler, 32),
    Scenario("toy", "the design's 4-stage toy (stage costs 1/1.6/0.8/2.2, overhead 0.05, latency 0.01), B=128",
             _toy, 32),
]}

DEFAULT_SCENARIO = "gpt1-14"


def scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None


def random_instance(seed: int, S: int = 4, B: int = 128, hetero: bool = True) -> PipelineCosts:
    """A random heterogeneous pipeline: stage compute per sample log-uniform over a 6x
    range (1x if not ``hetero``), per-microbatch overheads of 2-20% of a stage's
    per-sample time x B/8, knees 1-8 samples, links with latency and per-sample cost."""
    rng = np.random.default_rng(seed)
    base = 1e-3
    spread = rng.uniform(np.log(1.0), np.log(6.0), S) if hetero else np.zeros(S)
    fb = base * np.exp(spread)
    alpha = rng.uniform(0.02, 0.2, S) * fb * B / 8 if hetero else np.full(S, 0.1 * base * B / 8)
    knee = rng.integers(1, 9, S) if hetero else np.full(S, 4)
    send_beta = rng.uniform(0.0, 0.5, S) * base
    send_lat = rng.uniform(0.0, 0.05, S) * base * B / 8
    if not hetero:
        send_beta[:] = 0.25 * base
        send_lat[:] = 0.025 * base * B / 8
    return PipelineCosts.from_arrays(B, alpha, fb, alpha, 2 * fb, knee, send_lat, send_beta,
                                     names=[f"s{s}" for s in range(S)], info=dict(seed=seed))
