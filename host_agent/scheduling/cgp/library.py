"""CGP as a library: ``train_cgp(model_fn, dataset, ...)`` trains any model on any data set
with real processes, CPU-quota stragglers replayed from a trace, and returns accuracy over
time next to the server's staleness figures.

    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    res = train_cgp("mypkg.models:net", "digits", CGPConfig(mode="cgp", duration_s=15))

``model_fn`` is ``"MODULE:FN"`` (or an importable top-level function, turned into that
name), ``FN()`` returning an ``nn.Module`` (cross-entropy on class labels). ``dataset`` is
``"digits"``, ``"MODULE:FN"`` (or an importable top-level function), a
:class:`~..digits.Dataset` or ``(x_train, y_train, x_test, y_test)`` (saved for the processes).
The parent process hosts the TCP store, puts each worker in a cgroup whose CPU quota follows
``base_quotas / factor(slot)`` with slots of ``slot_s`` seconds of training time (the server
gets ``ps_quota``), evaluates the snapshots the model holder took every ``snapshot_s``
seconds on the test split, and removes its cgroups.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import torch

from .. import digits
from ..digits import dataset_arg
from ..fn_specs import refuse_run_during_import, spec_of
from ..groups.checks import check_model_on_data, least_batch
from ..groups.quotas import (
    SlotQuotas,
    quota_trace,
    run_prefix,
    warn_above_one_cpu,
    warn_server_quota,
    warn_trace_not_applied,
)
from ..progress import StallWatch
from ..rank_processes import RankFailure, RankProcesses, host_store
from ..run_dirs import run_dir
from ..run_options import QuotaRunOptions, require, sigterm_exits
from .policy import damping
from .snapshots import read_snapshots, remove_snapshots

MODES = ("cgp", "bsp", "asp", "ssp")
POLL_S = 0.02  # seconds between the parent's looks at the run (and its setting of the slot's quotas)
# seconds the ranks have to exit once every one has written its results (then the late are killed)
EXIT_WAIT_S = 60.0
MIN_SLOT_S = 0.05  # the shortest trace slot: a few polls and CFS periods


@dataclass
class CGPConfig(QuotaRunOptions):
    mode: str = "cgp"
    workers: int | None = None  # None: one per base quota (until 2026-11-28 4, so base_quotas of 2 were refused)
    base_quotas: tuple[float, ...] = (0.25, 0.25, 0.2, 0.1)  # with the server: 1 CPU in all (the host has 2, shared)
    ps_quota: float = 0.2
    slot_s: float = 2.0  # seconds of training time per trace slot
    duration_s: float = 15.0
    local_batch: int = 32
    lr: float = 0.01
    R: int = 16  # server versions (BSP: steps) per phase
    # CGP: a regrouping decision every R versions ends the phase (a barrier) only when the
    # groups change; True: every decision does (the ablation's "cgp-barrier-every-phase")
    barrier_every_phase: bool = False
    # CGP (throughput objective): a new grouping must lose this much less of the workers'
    # compute than the one in place (a fraction) to be worth the barrier of a change
    switch_margin: float = 0.05
    # CGP: a change must also pay for its phase end: the compute the measurements have shown
    # the grouping in place losing against a clearly better one must reach the
    # worker-seconds the server measured a phase end to cost (False: the margin alone)
    price_switch: bool = True
    # CGP: a worker's compute time for the grouping is the longer of its step's wall time and
    # its CPU seconds over its current CPU quota (the pace it sustains alone)
    sustained_periods: bool = True
    # CGP: the members of a group split its samples by their measured speeds (re-split after
    # every step), so none waits for the group's slowest (the ablation's "cgp-balanced"); off by
    # default: on the digits CNNs it measured fewer samples/s (a step's fixed part dominates)
    balance: bool = False
    s_max: int = 8  # as the simulator: with 4 the cap forces one big group whenever two workers straggle
    # CGP: a group whose update the staleness gate holds computes up to this many more batches on
    # the weights it has, added to the held update, instead of waiting (0: it waits, as SSP does;
    # the ablation's "cgp-no-accumulate")
    accumulate: int = 4
    # CGP: a grouping with merged workers is measured (samples pushed against the model's
    # samples/s) and undone when it delivers less than singletons did (cgp/merge_check.py; the
    # ablation's "cgp-unchecked-merges")
    check_merges: bool = True
    damping: str = "excess"
    lam: float = 1.0  # weight of the server's busy fraction against the workers' idle fraction
    c_push: float | None = None  # server seconds per global update; None: measured by the server each phase
    objective: str = "throughput"  # grouping: samples/s with a saturating server, or "linear" (idle + lam x busy)
    theta: float = 0.3
    # seconds between the model holder's weight snapshots, the resolution of a time to a target
    # accuracy; None: snapshot_interval's, by the model's size
    snapshot_s: float | None = None

    def __post_init__(self) -> None:
        if self.trace is not None:  # a pathlib.Path failed writing the processes' config (not JSON), until 2026-11-28
            self.trace = os.fspath(self.trace)
        self.take_quota_sequence()
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; known: {', '.join(MODES)}")
        damping(0, self.damping)
        if self.workers is None:
            self.workers = len(self.base_quotas)
        # one check at a time, each naming the field (its command-line option) and the value
        if self.workers < 2:
            # "--workers 1" read "(one per --quotas value)", an option not given (until 2026-11-28)
            raise ValueError(f"CGP needs at least 2 workers (--workers, or one per --quotas value), got {self.workers}")
        if len(self.base_quotas) != self.workers:
            raise ValueError(f"{self.workers} workers need {self.workers} base quotas, got {len(self.base_quotas)}")
        self.check_run_options("worker")
        self.require_fields((
            ("duration_s", "--duration", self.duration_s > 0, "> 0 seconds"),
            # the parent sets the quotas every POLL_S: a shorter slot skipped slots without a word
            # (until 2026-11-28: at 5 ms every fourth slot, of a looped 4-slot trace the same one for many polls)
            ("slot_s", "--slot", self.slot_s >= MIN_SLOT_S,
             f">= {MIN_SLOT_S:g} seconds (the quotas are set every {POLL_S:g} s and the kernel applies them in "
             f"10 ms periods)"),
            ("ps_quota", "--ps-quota", self.ps_quota > 0, "> 0 CPUs"),
            ("local_batch", "--batch", self.local_batch >= 1, ">= 1"),
            ("lr", "--lr", self.lr > 0, "> 0"),
            ("R", "--R", self.R >= 1, ">= 1"),
            ("s_max", "--s-max", self.s_max >= 0, ">= 0"),
            ("accumulate", "--accumulate", self.accumulate >= 0, ">= 0 batches"),
            ("snapshot_s", "--snapshot", self.snapshot_s is None or self.snapshot_s > 0, "> 0 seconds"),
            ("switch_margin", None, self.switch_margin >= 0, ">= 0")))
        if self.cgroups and self.mode != "bsp":  # BSP all-reduces: no server runs
            warn_server_quota(self.ps_quota)


SNAPSHOT_BYTES_PER_S = 4e6  # the most weight bytes the model holder writes per second by default
SNAPSHOT_S = (0.1, 0.5)  # the default interval's range, seconds


def snapshot_interval(cfg: CGPConfig, model: torch.nn.Module) -> float:
    """``cfg.snapshot_s``, else the shortest interval at which the model holder writes at most
    :data:`SNAPSHOT_BYTES_PER_S` of weights, within :data:`SNAPSHOT_S`: 0.1 s for a model of
    up to 100k parameters (small models reach a target within a second, which 0.5-s snapshots
    left unresolved between methods), 0.5 s from 500k (the writes take the holder's CPU,
    which the server's quota bounds)."""
    if cfg.snapshot_s is not None:
        return float(cfg.snapshot_s)
    nbytes = sum(p.numel() for p in model.parameters()) * 4  # float32 weights
    return float(min(max(nbytes / SNAPSHOT_BYTES_PER_S, SNAPSHOT_S[0]), SNAPSHOT_S[1]))


def train_cgp(model_fn, dataset="digits", cfg: CGPConfig | None = None, target_acc: float | None = None,
              log_dir: str | None = None) -> dict:
    """The processes' configs and logs go to ``log_dir`` (``out_dir`` in the result), else to a
    temporary directory removed after a successful run (``out_dir`` None)."""
    refuse_run_during_import("train_cgp")
    cfg = CGPConfig() if cfg is None else cfg
    if not isinstance(cfg, CGPConfig):  # a dict failed with "'dict' object has no attribute 'seed'" (until 2026-11-28)
        raise TypeError(f"cfg must be a CGPConfig (from host_agent.scheduling.cgp import CGPConfig; "
                        f"CGPConfig(duration_s=5.0, ...)), got {type(cfg).__name__}")
    if target_acc is not None:  # a test accuracy: 90 (per cent) or 1.5 ran and was never reached
        require("target_acc", target_acc, 0 < target_acc <= 1, "a test accuracy in (0, 1]", "--target")
    spec = spec_of(model_fn, "model_fn")
    digits.model_from(spec)  # fail early, in this process, with a clear error
    dataset = dataset_arg(dataset)
    with sigterm_exits(), run_dir("saatp-cgp-", log_dir) as out_dir:  # a script's SIGTERM cleans up too
        res = _train_in(out_dir, spec, dataset, cfg, target_acc)
    res["out_dir"] = log_dir
    return res


def _train_in(out_dir: str, spec: str, dataset, cfg: CGPConfig, target_acc) -> dict:
    data = digits.dataset_of(dataset, cfg.seed)
    model = digits.model_from(spec)
    check_model_on_data(model, data, spec)  # here, not in every rank after start-up
    least = least_batch(model, data.x_train)  # a batch-norm layer does not train on one sample
    require("local_batch", cfg.local_batch, cfg.local_batch >= least,
            f">= {least} for {spec} (a batch-norm layer does not train on one sample)", "--batch")
    # the slots the training time spans, and one for its last step (the run's end waits for it):
    # until 2026-11-28 always 1000, so the quotas froze after 2000 s of 2-s slots, and the
    # generated trace's warning counted a 15-s run's slots as "1154 of its 4000" quotas
    n_slots = min(math.ceil(cfg.duration_s / cfg.slot_s) + 1, 10**6)
    quotas = quota_trace(cfg.base_quotas, n_slots, cfg.trace, cfg.trace_seed, noun="workers",
                         warn=cfg.cgroups)
    warn_trace_not_applied(cfg.trace, cfg.cgroups)
    if cfg.cgroups:
        warn_above_one_cpu(quotas, "worker", "workers", planners=False)
    # saved after the checks above: a model, batch or trace they refuse left the run's directory
    # in /tmp holding only data.pt, named as "its configs and logs" (until 2026-11-28)
    data_path, data_spec = None, dataset
    if dataset != "digits":  # the ranks load this process's data: a user's FN is called once
        data_path, data_spec = digits.save_for_ranks(data, out_dir), None
    store, port = host_store(cfg.workers + 2, cfg.timeout_s)
    cg = SlotQuotas(cfg.workers + 1, run_prefix("cgp")) if cfg.cgroups else None
    applied = []
    with cg or nullcontext(), RankProcesses(out_dir, f"train_cgp ({cfg.mode})") as ranks:
        if cg:
            cg.set(list(quotas[0]) + [cfg.ps_quota])
        pcfg = dict(asdict(cfg), model=spec, data=data_spec, data_path=data_path, port=port, out_dir=out_dir,
                    cgroups=cg.paths if cg else None, least_batch=least, snapshot_s=snapshot_interval(cfg, model))
        path = os.path.join(out_dir, "config.json")
        with open(path, "w") as f:
            json.dump(pcfg, f)
        ranks.start("host_agent.scheduling.cgp.procs", path, cfg.workers + 1)
        deadline = time.monotonic() + cfg.timeout_s + cfg.duration_s
        watch = StallWatch(out_dir, [p.pid for p in ranks.procs], cfg.stall_s, unit="gradients",
                           names=[f"worker {r}" for r in range(cfg.workers)] + [f"the server (rank {cfg.workers})"])
        started = None
        slot = -1
        while ranks.running() and not ranks.failed() and not _results_written(out_dir, cfg.workers + 1):
            if time.monotonic() > deadline:
                raise RankFailure(f"the run did not end {cfg.timeout_s:g} s after its {cfg.duration_s:g} s")
            watch.check(r for r in range(cfg.workers) if ranks.procs[r].poll() is None)
            if started is None and store.check(["started"]):
                started = time.monotonic()
            if started is not None and cg:
                s = min(int((time.monotonic() - started) / cfg.slot_s), n_slots - 1)
                if s != slot:
                    slot = s
                    cg.set(list(quotas[s]) + [cfg.ps_quota])
                    applied.append((slot, quotas[s].tolist()))
            time.sleep(POLL_S)
        if _results_written(out_dir, cfg.workers + 1):
            # every rank has written its results (the holder its snapshots before them): a rank
            # slow to exit, stopped, or failing after its write costs the run nothing. As the groups
            # executor does, the late are killed and named; until 2026-11-28 such a run waited for
            # the stall limit and failed, losing a finished method
            late = ranks.wait(timeout_s=EXIT_WAIT_S)
            if late:
                print(f"warning: train_cgp ({cfg.mode}): processes {late} had not exited {EXIT_WAIT_S:g} s after "
                      f"every process wrote its results and were killed (the results are complete)",
                      file=sys.stderr, flush=True)
            bad = [r for r in ranks.failed_ranks() if r not in late]
            if bad:
                print(f"warning: train_cgp ({cfg.mode}): {ranks.exits('process', bad)} ended so after every process wrote its results "
                      f"(they are complete)", file=sys.stderr, flush=True)
        elif ranks.failed():
            ranks.settle()
            raise RankFailure(f"{ranks.exits('process')} ended the run (workers 0-{cfg.workers - 1}, "
                              f"the server {cfg.workers})")
    res = _collect(cfg, spec, data, out_dir, applied, target_acc)
    res["config"]["snapshot_s"] = pcfg["snapshot_s"]  # the interval used (given or by the model's size)
    return res


def _results_written(out_dir: str, n: int) -> bool:
    """Whether every one of the ``n`` ranks has written its results (``rank<R>.json``, whole:
    a file being written does not parse)."""
    for r in range(n):
        path = os.path.join(out_dir, f"rank{r}.json")
        if not os.path.exists(path):
            return False
        try:
            with open(path) as f:
                json.load(f)
        except (OSError, ValueError):
            return False
    return True


def _collect(cfg: CGPConfig, spec: str, data: digits.Dataset, out_dir: str, applied, target_acc) -> dict:
    logs = []
    for r in range(cfg.workers + 1):
        with open(os.path.join(out_dir, f"rank{r}.json")) as f:
            logs.append(json.load(f))
    holder = 0 if cfg.mode == "bsp" else cfg.workers
    model = digits.built_as_ranks_build(spec, cfg.seed)  # the ranks' buffers (procs.Proc's seed)
    evals = []
    diverged_t = None  # the first snapshot whose weights held NaN or infinities (None: none)
    for t, v, samples, w in read_snapshots(out_dir, holder):
        evals.append(dict(t=float(t), version=int(v), samples=int(samples),
                          test_acc=digits.accuracy_of(model, w, data)))
        if diverged_t is None and not bool(torch.isfinite(w).all()):
            diverged_t = float(t)
    remove_snapshots(out_dir, holder)  # weights, tens of MB: evaluated above, not kept with the logs
    ps = logs[cfg.workers]
    # the last snapshot is the holder's at the end of training (procs.Proc.run): the final
    # accuracy is the model's at the end, for every method (until 2026-11-27 evening it was the mean
    # of the last three periodic snapshots, the last of them up to snapshot_s before the end)
    if evals:
        evals[-1]["final"] = True
    final = evals[-1] if evals else None
    out = dict(config=asdict(cfg), model=spec, evals=evals, final_acc=final and final["test_acc"],
               final_t_s=final and final["t"],
               best_acc=max((e["test_acc"] for e in evals), default=None), diverged_t_s=diverged_t,
               quotas_applied=applied,
               groupings=logs[0]["groupings"], taus=ps["taus"], decisions=ps.get("decisions", []),
               iterations=[lg["iters"] for lg in logs[:cfg.workers]],
               max_staleness=ps.get("max_staleness"), applied=ps.get("applied"), held=ps.get("held"),
               merged_waits=ps.get("merged_waits"),
               accumulated=ps.get("accumulated"), merges_undone=ps.get("merges_undone"),
               staleness_hist=ps.get("staleness_hist"),
               # the server's memory (MiB) before it served, at its peak, and every 32 pushes
               server_rss_mb=dict(serving=ps.get("serve_rss_mb"), peak=ps.get("peak_rss_mb"),
                                  by_pushes=ps.get("rss", [])),
               phase_end_s=[lg.get("phase_end_s", 0.0) for lg in logs[:cfg.workers]],
               compute_s=[lg["compute_s"] for lg in logs[:cfg.workers]],
               wall_s=max(lg["wall_s"] for lg in logs))
    if evals:
        out["samples_per_s"] = evals[-1]["samples"] / max(evals[-1]["t"], 1e-9)
        # the batch time: seconds per global batch (workers x local batch samples), over the run
        # and between snapshots (every method holds every worker throughout, so the devices'
        # cost is the same for all and is not reported)
        B = cfg.workers * cfg.local_batch
        out["batch_time_s"] = B / max(out["samples_per_s"], 1e-9)
        for a, b in zip(evals, evals[1:]):
            b["batch_time_s"] = B * (b["t"] - a["t"]) / (b["samples"] - a["samples"]) if b["samples"] > a["samples"] else None
    if target_acc is not None:
        iv = crossing(evals, target_acc)
        out["target_acc"] = target_acc
        out["time_to_target_s"] = None if iv is None else iv[1]
        out["time_to_target_interval_s"] = None if iv is None else list(iv)  # as compare() sets it
    return out


def time_to(evals: list[dict], target: float) -> float | None:
    """The time of the first snapshot at or above ``target`` (None: never)."""
    iv = crossing(evals, target)
    return None if iv is None else iv[1]


def crossing(evals: list[dict], target: float) -> tuple[float, float] | None:
    """``(lo, hi)``: the accuracy reached ``target`` after ``lo`` and by ``hi`` seconds, the
    times of the snapshot before (0 before the first) and of the first at or above it; None:
    never. Snapshots are ``snapshot_s`` apart, so that is the resolution of a time to target."""
    prev = 0.0
    for e in evals:
        if e["test_acc"] >= target:
            return prev, e["t"]
        prev = e["t"]
    return None


def compare_times(a: str, ia, b: str, ib) -> dict:
    """``a``'s time to the target against ``b``'s from their crossing intervals (:func:`crossing`):
    the speed-up ``t_b / t_a`` only when the intervals do not overlap (one reached it before
    the other's snapshot interval began), with its bounds; else not resolved (None)."""
    out = dict(time_to_target_s={a: ia and ia[1], b: ib and ib[1]},
               interval_s={a: ia and list(ia), b: ib and list(ib)}, resolved=False, speedup_to_target=None,
               speedup_bounds=None)
    if ia is None and ib is None:
        out["note"] = "neither reached the target"
    elif ia is None or ib is None:
        won, lost, t = (a, b, ia[1]) if ib is None else (b, a, ib[1])
        out.update(resolved=True, note=f"{won} reached the target at {t:.2f} s, {lost} did not in its run")
    elif ia[1] <= ib[0] or ib[1] <= ia[0]:
        lo = ib[0] / ia[1]
        hi = ib[1] / ia[0] if ia[0] > 0 else None
        out.update(resolved=True, speedup_to_target=ib[1] / ia[1], speedup_bounds=[lo, hi],
                   note=f"{a} {ia[1]:.2f} s, {b} {ib[1]:.2f} s")
    else:
        # to 10 ms: the methods' snapshots are not taken at the same times, and at 0.1 s an
        # overlap of 23 ms read "cgp in 0.5-1.0 s, cgp-inverse in 1.0-1.5 s" (until 2026-11-28)
        out["note"] = (f"not resolved: both reached it between snapshots that overlap ({a} in "
                       f"{ia[0]:.2f}-{ia[1]:.2f} s, {b} in {ib[0]:.2f}-{ib[1]:.2f} s)")
    return out


def compare(runs: dict[str, dict], target: float) -> dict:
    """Time to ``target`` accuracy and final accuracy of CGP against every other run. A ratio
    of times to the target is given only when the snapshots resolve it (:func:`compare_times`):
    a method reached it at a snapshot time, some time after the snapshot before, so two
    methods whose crossing intervals overlap may have reached it in either order."""
    out = {}
    for name, r in runs.items():
        r["target_acc"] = target
        iv = crossing(r["evals"], target)
        r["time_to_target_s"] = None if iv is None else iv[1]
        r["time_to_target_interval_s"] = None if iv is None else list(iv)
    if "cgp" in runs:
        c = runs["cgp"]
        for name, r in runs.items():
            if name == "cgp":
                continue
            d = compare_times("cgp", crossing(c["evals"], target), name, crossing(r["evals"], target))
            d["resolution_s"] = float(c.get("config", {}).get("snapshot_s") or SNAPSHOT_S[1])
            d["acc_diff_pp"] = 100 * ((c["final_acc"] or 0) - (r["final_acc"] or 0))
            out[name] = d
    return out
