"""The entry point of a stage process (started by :mod:`.launch`)."""

from __future__ import annotations

import datetime
import json
import os
import time
from dataclasses import asdict, dataclass, field

import torch
import torch.distributed as dist

from ..progress import Heartbeat
from ..rank_processes import end_rank, rank_main
from . import cgroups
from .models import build_layers, cut, draw_batch, load_model
from .stage import copy_input_first, run_iteration, stage_io, stage_shapes, writes_input
from .torch_schedules import TORCH_SCHEDULES, make_step
from .wire import Buffers


@dataclass
class StageConfig:
    model: str
    cuts: list[int]
    B: int
    steps: int
    schedule: str  # "ours" (replays rows/orders) or torch-gpipe / torch-1f1b
    rows: list[list[int]] = field(default_factory=list)  # ours: per-stage microbatch sizes
    orders: list[list[tuple[str, int]]] = field(default_factory=list)
    M: int = 0  # torch schedules: microbatch count
    warmup: int = 1
    lr: float = 0.05
    momentum: float = 0.9
    seed: int = 0
    backend: str = "gloo"
    port: int = 0
    threads: int = 1
    cgroups: list[str | None] = field(default_factory=list)  # per rank: cgroup path to join
    timeout_s: float = 300.0
    out_dir: str = ""
    save_params: bool = False
    trace: bool = False  # record every op's timestamps (stage.run_iteration's trace) per timed step
    lead: int = 0  # untimed iterations of a schedule right before each of its timed ones
    rotate: bool = False  # rotate the order of the schedules from step to step
    runs: list[dict] = field(default_factory=list)  # several schedules in one session (see runs_of)


def stage_main(cfg: StageConfig, rank: int) -> None:
    world = len(cfg.cuts) + 1
    if cfg.cgroups and cfg.cgroups[rank]:
        cgroups.join(cfg.cgroups[rank])
    torch.set_num_threads(cfg.threads)
    dist.init_process_group(cfg.backend, init_method=f"tcp://127.0.0.1:{cfg.port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=cfg.timeout_s))
    beats = Heartbeat(cfg.out_dir, rank)  # the parent's stall watch reads it (progress.py)
    try:
        spec = load_model(cfg.model)
        runs = [_Run(cfg, run, spec, rank, world) for run in runs_of(cfg)]
        # interleaved: iteration k of every schedule, then iteration k+1, ... so that a change
        # in the host's load hits every schedule alike; the order rotates from step to step.
        # With lead > 0 a schedule runs that many untimed iterations right before its timed
        # one, so the timed iteration starts in the schedule's own steady state (CPU-quota
        # debts, caches) as in a training run, not in the state the previous schedule left.
        n = len(runs)
        for step in range(cfg.warmup + cfg.steps):
            x, y = draw_batch(spec, cfg.B, step, cfg.seed)
            timed = step >= cfg.warmup
            for i in range(n):
                r = runs[(i + step) % n] if cfg.rotate else runs[i]
                for _ in range(cfg.lead if timed else 0):
                    r.iteration(step, x, y, timed=False)
                    beats.beat()
                r.iteration(step, x, y, timed=timed)
                beats.beat()
        results = []
        for i, r in enumerate(runs):
            if cfg.save_params:
                torch.save(r.module.state_dict(), os.path.join(cfg.out_dir, f"rank{rank}.run{i}.pt"))
            results.append(dict(times=r.times, losses=r.losses, **(dict(traces=r.traces) if cfg.trace else {})))
        dist.barrier()
        with open(os.path.join(cfg.out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(dict(rank=rank, pid=os.getpid(), runs=results), f)
    finally:
        beats.close()
        dist.destroy_process_group()


def runs_of(cfg: StageConfig) -> list[dict]:
    """The runs of one session: ``cfg.runs`` or the single run the top-level fields describe."""
    if cfg.runs:
        return cfg.runs
    return [dict(schedule=cfg.schedule, rows=cfg.rows, orders=cfg.orders, M=cfg.M)]


class _Run:
    """One schedule of a session: its own copy of the stage (same seed: same initial weights),
    optimizer, and timings."""

    def __init__(self, cfg: StageConfig, run: dict, spec, rank: int, world: int):
        self.cfg, self.spec, self.rank, self.world = cfg, spec, rank, world
        stages = cut(build_layers(spec, cfg.seed), cfg.cuts)
        self.module = stages[rank]
        if writes_input(stages, spec.make_batch(2, 0)[0])[rank]:
            copy_input_first(self.module)
        params = list(self.module.parameters())  # a stage of pooling layers only has none
        self.opt = torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum) if params else None
        schedule = run["schedule"]
        self.torch_step = None
        if schedule in TORCH_SCHEDULES:
            self.torch_step = make_step(schedule, self.module, rank, world, int(run["M"]), cfg.B, spec.loss_sum,
                                        example=stage_io(stages, spec.make_batch(1, 0)[0])[rank])
        elif schedule != "ours":
            raise ValueError(f"unknown schedule {schedule!r}")
        else:
            self.rows_all = [[int(v) for v in r] for r in run["rows"]]
            self.orders_all = [[(str(k), int(j)) for k, j in o] for o in run["orders"]]
            self.shapes = stage_shapes(stages, spec.make_batch(1, 0)[0])
            self.buffers = Buffers()  # this schedule's message buffers, kept across its iterations
        self.times: list[tuple[float, float]] = []
        self.losses: list[float] = []
        self.traces: list[list] = []

    def iteration(self, step: int, x, y, timed: bool) -> None:
        dist.barrier()
        trace = [] if self.cfg.trace else None
        c0 = time.process_time()
        t0 = time.perf_counter()
        if self.torch_step is not None:
            loss = self.torch_step(x, y)
        else:
            loss = run_iteration(self.module, self.rank, self.world, self.rows_all, self.orders_all, self.cfg.B,
                                 x, y, self.spec.loss_sum, self.shapes, trace=trace, buffers=self.buffers)
        t_ops = time.perf_counter()
        if self.opt is not None:
            self.opt.step()
            self.opt.zero_grad()
        t1 = time.perf_counter()
        if timed:
            self.times.append((t0, t1))
            self.losses.append(loss)
            if trace is not None:
                self.traces.append(dict(ops=trace, ops_end=t_ops, cpu_s=time.process_time() - c0))


def config_dict(cfg: StageConfig) -> dict:
    return asdict(cfg)


def config_from_dict(d: dict) -> StageConfig:
    d = dict(d)
    d["orders"] = [[(str(k), int(j)) for k, j in o] for o in d.get("orders", [])]
    return StageConfig(**d)


def main(argv: list[str] | None = None) -> int:
    return rank_main("host_agent.scheduling.pipeline.worker", lambda d, rank: stage_main(config_from_dict(d), rank),
                     argv)


if __name__ == "__main__":
    end_rank(main)
