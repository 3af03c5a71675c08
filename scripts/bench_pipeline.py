#!/usr/bin/env python3
"""Pipelines that run: UMPIPE vs best-M GPipe / 1F1B / torch schedules, measured.

For every scenario (4 stage processes with unequal CPU quotas, two model families) this runs
the same commands a user would:

    saatp profile --model M --stages 4 --quota Q --slow S:Q ... --batch B --out prof.json
    saatp train pipeline --model M --stages 4 --quota Q --slow S:Q ... --profile prof.json \
        --schedule all --batch B --steps N --json train.json

and prints, per scenario, the measured iteration time (median of N) of the UMPIPE plan and of
each baseline with its best measured microbatch count, the cost model's prediction and its
error. Every scenario is reported, including those UMPIPE loses.

    .venv/bin/python scripts/bench_pipeline.py [--quick] [--out results/pipeline] [--only NAME]
    .venv/bin/python scripts/bench_pipeline.py --model-only 30   # plan family vs baselines, model only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# name: (model, B, default quota, [STAGE:QUOTA...])
SCENARIOS = {
    "vgg-slow2": ("vgg-mini", 32, 0.3, ["2:0.15"]),
    "vgg-mixed": ("vgg-mini", 32, 0.3, ["0:0.4", "1:0.2", "3:0.15"]),
    "gpt-slow1": ("gpt-mini", 32, 0.3, ["1:0.15"]),
    "gpt-mixed": ("gpt-mini", 32, 0.3, ["0:0.2", "2:0.15", "3:0.4"]),
}


def _saatp(args: list[str]) -> None:
    cmd = [sys.executable, "-m", "emulation.cli", *args]
    print("$ saatp " + " ".join(args), flush=True)
    r = subprocess.run(cmd)
    if r.returncode:
        raise SystemExit(f"command failed ({r.returncode}): {' '.join(cmd)}")


def run_scenario(name: str, out: str, steps: int) -> dict:
    model, B, q, slow = SCENARIOS[name]
    common = ["--model", model, "--stages", "4", "--quota", str(q), *sum((["--slow", s] for s in slow), [])]
    prof = os.path.join(out, f"{name}.profile.json")
    train = os.path.join(out, f"{name}.train.json")
    t0 = time.time()
    _saatp(["profile", *common, "--batch", str(B), "--out", prof])
    _saatp(["train", "pipeline", *common, "--profile", prof, "--schedule", "all", "--batch", str(B),
            "--steps", str(steps), "--json", train])
    with open(train) as f:
        res = json.load(f)
    res["scenario"] = name
    res["wall_s"] = time.time() - t0
    return res


def table(results: list[dict]) -> str:
    lines = [f"{'scenario':11s} {'quotas':24s} {'schedule':12s} {'best run':18s} {'measured ms':>11s} "
             f"{'model ms':>9s} {'err':>7s}"]
    for r in results:
        quotas = ",".join(f"{q:g}" for q in r["quotas"])
        best = r["summary"]["best_by_schedule"]
        for sch in ("umpipe", "gpipe", "1f1b", "torch-gpipe", "torch-1f1b"):
            if sch in best:
                b = best[sch]
                lines.append(f"{r['scenario']:11s} {quotas:24s} {sch:12s} {b['label']:18s} "
                             f"{b['measured_s'] * 1e3:11.1f} {b['predicted_s'] * 1e3:9.1f} {b['error_pct']:+6.1f}%")
        v = r["summary"].get("umpipe_vs_best_baseline")
        if v:
            lines.append(f"{'':11s} UMPIPE vs best baseline ({v['baseline']}): {v['speedup_pct']:+.1f}%")
    return "\n".join(lines)


def model_only(n: int) -> None:
    """The plan family on random instances of the analytic model (no processes): how often
    the best unequal plan of either order family beats the best of GPipe / 1F1B (best M)."""
    import numpy as np

    from host_agent.scheduling.umpipe import family
    from host_agent.scheduling.umpipe.scenarios import random_instance

    gains, fd_vs_1f1b = [], []
    for i in range(n):
        c = random_instance(i, 4, 64)
        f = family.plan(c, mmax=16, pop=48, gens=40, evals=800, dual_check=False, seed=0)
        base = min(f.gpipe_best.predicted_s, f.f1b_best.predicted_s)
        gains.append(base / f.best.predicted_s - 1)
        fd_vs_1f1b.append(f.fill_drain.predicted_s <= f.f1b_best.predicted_s * (1 + 1e-12))
    g = np.array(gains) * 100
    print(f"{n} random 4-stage instances (B=64): plan family strictly better than the best of GPipe/1F1B "
          f"(best M) on {(g > 1e-7).sum()}/{n}, never worse; gain mean {g.mean():.2f}%, median "
          f"{np.median(g):.2f}%, max {g.max():.2f}%. Fill-drain UMPIPE alone <= 1F1B (best M) on "
          f"{sum(fd_vs_1f1b)}/{n}.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="results/pipeline")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="3 timed steps per schedule")
    ap.add_argument("--only", action="append", choices=list(SCENARIOS))
    ap.add_argument("--model-only", type=int, metavar="N", help="only the cost-model check on N random instances")
    a = ap.parse_args()
    if a.model_only:
        model_only(a.model_only)
        return 0
    os.makedirs(a.out, exist_ok=True)
    steps = 3 if a.quick else a.steps
    results = []
    for name in a.only or SCENARIOS:
        results.append(run_scenario(name, a.out, steps))
        print(table(results[-1:]), flush=True)
    print("\n" + table(results))
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump([dict(scenario=r["scenario"], quotas=r["quotas"], cuts=r["cuts"], model=r["model"], B=r["B"],
                        best_by_schedule=r["summary"]["best_by_schedule"],
                        umpipe_vs_best_baseline=r["summary"].get("umpipe_vs_best_baseline"),
                        machine=r.get("machine")) for r in results], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
