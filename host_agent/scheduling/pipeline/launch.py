"""Start one process per stage (each optionally in its own CPU-quota cgroup), wait for them,
and turn their timestamps into measured iteration times.

The iteration time of step k is ``max_r end[r][k] - min_r start[r][k]`` over the ranks (all
processes use the same monotonic clock); every step starts after a barrier.
"""

from __future__ import annotations

import json
import numbers
import os
import statistics
import sys
import time
from dataclasses import replace
from typing import Sequence

import torch

from ..progress import DEFAULT_STALL_S, StallWatch
from ..rank_processes import RankFailure, RankProcesses, check_backend, free_port
from ..run_dirs import run_dir
from .cgroups import CpuQuotas
from .models import build_layers, load_model
from .torch_schedules import TORCH_SCHEDULES, can_run
from .worker import StageConfig, config_dict, runs_of


def _wait(ranks: RankProcesses, out_dir: str, timeout_s: float, stall_s: float | None) -> None:
    """Until every stage has exited; :class:`RankFailure` when one exits with an error, when
    none has finished an iteration for the stall limit (:class:`.progress.StallWatch`), or
    after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    watch = StallWatch(out_dir, [p.pid for p in ranks.procs], stall_s, what="stage")
    while ranks.running():
        if ranks.failed():
            break
        if time.monotonic() > deadline:
            raise RankFailure(f"the stages did not finish within {timeout_s:g} s")
        watch.check([r for r, p in enumerate(ranks.procs) if p.poll() is None])
        time.sleep(0.05)
    if ranks.failed():
        first = ranks.failed_ranks()
        ranks.settle()
        # which stage failed first: a stage killed by SIGKILL was named among "stage 0 (exit status
        # 1), stage 1 (killed by SIGKILL), stage 2 (exit status 1)", the others' logs ending in
        # gloo's "Connection reset by peer" from it, and its own log empty (until 2026-11-28)
        how = lambda rs: {ranks.procs[r].returncode for r in rs}
        after = [r for r in ranks.failed_ranks() if r not in first]
        raise RankFailure(f"{ranks.exits('stage')} ended the run"
                          + (f"; {ranks.exits('stage', first)} first, the others after it"
                             if after and how(after) != how(first) else ""))


def check_config(cfg: StageConfig) -> None:
    """ValueError (before any process starts) unless the backend is one the stages support, the
    model loads and its layers split at ``cfg.cuts``, and every run's plan fits the split
    (torch's ``Schedule1F1B`` also M >= the stage count). Until 2026-11-28 a model that did not
    load, cuts beyond its layers and torch's 1F1B with fewer microbatches than stages started
    the stages, which each failed: the caller got "pipeline run failed: stage 0 (exit status 1),
    ..." and the reason only in every stage's log tail."""
    check_backend(cfg.backend)
    # until 2026-11-28 warmup=-1 ran and returned no iteration times, lead=-1 ran as 0, steps=0
    # returned nothing, and B=0 with torch's GPipe was "M=2 must be at least the 3 stages
    # (torch's Schedule1F1B)"
    for name, least in (("B", 1), ("steps", 1), ("warmup", 0), ("lead", 0)):
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < least:
            raise ValueError(f"StageConfig.{name} = {v!r}: expected a whole number >= {least}")
    world = len(cfg.cuts) + 1
    with torch.random.fork_rng(devices=[]):  # FN and build_layers draw and seed: the caller's stream stays as it was
        spec = load_model(cfg.model)
        n = len(build_layers(spec, cfg.seed))
    if list(cfg.cuts) != sorted(set(cfg.cuts)) or not all(0 < c < n for c in cfg.cuts):
        raise ValueError(f"cuts {list(cfg.cuts)}: model {spec.name} has {n} layers (children of its nn.Sequential), "
                         f"so the cuts must be increasing within 1..{n - 1}, at most {n - 1} of them")
    for run in runs_of(cfg):
        _check_run(run, world, cfg.B)


def _check_run(run: dict, world: int, B: int) -> None:
    if run["schedule"] != "ours":
        if run["schedule"] not in TORCH_SCHEDULES:
            raise ValueError(f"unknown schedule {run['schedule']!r}: ours, {', '.join(TORCH_SCHEDULES)}")
        M = int(run.get("M") or 0)
        if M < 1 or B % M:
            raise ValueError(f"{run['schedule']}: microbatch count M={M} must divide B={B}")
        if not can_run(run["schedule"], M, B, world):
            raise ValueError(f"{run['schedule']}: microbatch count M={M} must be at least the {world} stages "
                             f"(torch's Schedule1F1B)")
        return
    rows, orders = run["rows"], run["orders"]
    if len(rows) != world or len(orders) != world:
        raise ValueError(f"{world} stages need {world} microbatch rows and op orders")
    for s, (r, o) in enumerate(zip(rows, orders)):
        if sum(r) != B or min(r) < 1:
            raise ValueError(f"stage {s}: microbatch sizes {list(r)} do not sum to B={B}")
        want = sorted([("F", j) for j in range(len(r))] + [("B", j) for j in range(len(r))])
        if sorted((k, int(j)) for k, j in o) != want:
            raise ValueError(f"stage {s}: the op order must hold F and B of each of its {len(r)} microbatches once")


def run(cfg: StageConfig, quotas: Sequence[float | None] | None = None, timeout_s: float = 600.0,
        keep_dir: str | None = None, stall_s: float | None = DEFAULT_STALL_S) -> dict:
    """Run the pipeline; ``quotas[r]`` CPUs for rank r (None: no cgroup). Returns
    ``dict(iteration_s=[...], median_s, mean_s, losses=[...], out_dir)``. Raises RuntimeError
    with the stages' log tails (``rank<R>.log``) when a stage process fails, and when no stage
    has finished an iteration for ``stall_s`` (or ten times the longest gap seen; None: no
    limit but ``timeout_s``), naming each stage's state (``progress.StallWatch``). The ranks' files go to
    ``keep_dir`` (``out_dir`` in the result), else to a temporary directory removed after a
    successful run (``out_dir`` None)."""
    with run_dir("saatp-pipe-", keep_dir) as out_dir:
        out = _run(cfg, quotas, timeout_s, out_dir, stall_s)
    out["out_dir"] = keep_dir
    return out


def _run(cfg: StageConfig, quotas, timeout_s: float, out_dir: str, stall_s: float | None) -> dict:
    world = len(cfg.cuts) + 1
    quotas = list(quotas or [None] * world)
    if len(quotas) != world:
        raise ValueError(f"{world} stages but {len(quotas)} quotas")
    check_config(cfg)
    groups = CpuQuotas(prefix=f"saatp-{os.getpid()}-{int(time.time() * 1000) % 10**8}")
    try:
        paths = [groups.create(f"stage{r}", q) if q else None for r, q in enumerate(quotas)]
        cfg = replace(cfg, port=free_port(), cgroups=paths, out_dir=out_dir)
        cfg_path = os.path.join(out_dir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(config_dict(cfg), f)
        with RankProcesses(out_dir, "pipeline run") as ranks:
            ranks.start("host_agent.scheduling.pipeline.worker", cfg_path, world)
            _wait(ranks, out_dir, timeout_s, stall_s)
    finally:
        left = groups.remove()
        if left:
            print(f"warning: could not remove cgroups {left}", file=sys.stderr)
    ranks = []
    for r in range(world):
        with open(os.path.join(out_dir, f"rank{r}.json")) as f:
            ranks.append(json.load(f))
    runs = []
    for i, spec in enumerate(runs_of(cfg)):
        per = [rk["runs"][i] for rk in ranks]
        n = len(per[0]["times"])
        it = [max(p["times"][k][1] for p in per) - min(p["times"][k][0] for p in per) for k in range(n)]
        runs.append(dict(schedule=spec["schedule"], label=spec.get("label", spec["schedule"]), iteration_s=it,
                         median_s=statistics.median(it) if it else None,
                         mean_s=statistics.fmean(it) if it else None, losses=per[-1]["losses"],
                         starts=[min(p["times"][k][0] for p in per) for k in range(n)]))
        if "traces" in per[0]:
            runs[-1]["traces"] = [p["traces"] for p in per]  # [rank][step] = dict(ops, ops_end)
    return dict(runs[0], runs=runs)
