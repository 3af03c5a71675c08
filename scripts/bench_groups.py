#!/usr/bin/env python3
"""Benchmark of the DP+MP executor (saatp train groups): the Lyapunov planner against BSP,
LB-BSP, a single pipeline and HetPipe-style groups (all choosing their device set online
under the same budget) and against static BSP/LB-BSP (one device set for the whole run,
chosen before it to meet the same budget with the operator's knowledge of the trace), real
training of the digits CNN on 4 processes whose CPU quotas follow a trace, every method
interleaved slot by slot under the same quotas.

Prints per scenario and repeat each method's mean and median batch time (migrations
included), cost against the budget (at the end and at each quarter of the run: how the
virtual queue converges), the share of time in "surprise" slots (measured > 1.5x predicted:
a quota fell after the decision), mean active processes, mean all-reduce time, and the
Lyapunov planner's margin over each baseline measured in the same run; then the mean margin
over the repeats and, per scenario, a markdown table. The host's load average is printed at
the start and end of each run: timings are noisy when other work shares the machine.

Usage: .venv/bin/python scripts/bench_groups.py [--seeds 0,1] [--trace T.csv ...] [--repeats 2]
       [--slots 40] [--iters 3] [--hold 1] [--methods all] [--no-react] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from host_agent.scheduling.groups.executor import GroupsConfig, run  # noqa: E402
from host_agent.scheduling.groups.planner import METHODS  # noqa: E402
from host_agent.scheduling.result_files import write_json  # noqa: E402
from host_agent.scheduling.run_options import exit_on_sigterm  # noqa: E402


def row(m: str, r: dict) -> str:
    runq = " ".join(f"{v:.2f}" for v in r["cost_over_budget_running"].values())
    return (f"  {m:13s} {r['mean_batch_s'] * 1e3:8.1f} {r['median_batch_s'] * 1e3:8.1f} {r['cost_over_budget']:8.2f}"
            f"  [{runq}] {r['surprise_time_share']:8.2f} {r['mean_active']:7.2f} {r['mean_sync_s'] * 1e3:7.1f}"
            f" {r['migrations']:5d} {r['final_test_acc']:6.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0,1", help="generated quota traces (comma-separated seeds)")
    ap.add_argument("--trace", action="append", default=[], help="a trace CSV (repeatable)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per scenario (the same trace)")
    ap.add_argument("--slots", type=int, default=40)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--hold", type=int, default=1)
    ap.add_argument("--quotas", default="0.35,0.3,0.2,0.15")
    ap.add_argument("--budget-frac", type=float, default=1.0)
    ap.add_argument("--budget-ref", default="all")
    ap.add_argument("--methods", default="all", help="comma-separated, or all")
    ap.add_argument("--no-react", dest="react", action="store_false",
                    help="decide only at slot starts (default: also after a slot's first iteration on a jump)")
    ap.add_argument("--json")
    a = ap.parse_args()
    exit_on_sigterm()  # a SIGTERM still removes the run's cgroups and processes
    methods = METHODS if a.methods == "all" else tuple(a.methods.split(","))
    scen = [("seed%s" % s, dict(trace_seed=int(s))) for s in a.seeds.split(",") if s]
    scen += [(os.path.basename(t), dict(trace=t)) for t in a.trace]
    base = tuple(float(q) for q in a.quotas.split(","))
    out: dict = {}
    t0 = time.perf_counter()
    for name, kw in scen:
        out[name] = []
        for rep in range(a.repeats):
            res = run(GroupsConfig(methods=methods, slots=a.slots, iters=a.iters, hold=a.hold, base_quotas=base,
                                   world=len(base), budget_frac=a.budget_frac, budget_ref=a.budget_ref, react=a.react,
                                   **kw))
            res.pop("final_params")
            out[name].append(res)
            if a.json:
                write_json(a.json, out)
            st = ", ".join(f"{m} {v['devices']}" for m, v in res["static_sets"].items())
            print(f"\nscenario {name} run {rep}: budget {res['budget']:.4g}/batch, load average "
                  f"{res['load_avg_start'][0]:.1f} -> {res['load_avg'][0]:.1f}, {res['wall_s']:.0f} s; static sets: {st}")
            print(f"  {'method':13s} {'mean ms':>8s} {'med ms':>8s} {'cost/C':>8s}  [cost/C at each quarter] "
                  f"{'surprise':>8s} {'active':>7s} {'sync ms':>7s} {'migr':>5s} {'acc':>6s}")
            for m, r in res["runs"].items():
                print(row(m, r))
            for m, v in res["lyapunov_vs"].items():
                r = v["batch_time_reduction"] * 100
                print(f"  lyapunov vs {m:13s}: batch time {abs(r):5.1f}% {'lower' if r >= 0 else 'higher'} "
                      f"({v['speedup']:.2f}x); the same plans in {v['same_plan_slots']} of {v['slots']} slots")
            sys.stdout.flush()
    print(f"\ntotal {time.perf_counter() - t0:.0f} s\n")
    print("| trace | method | mean batch ms (runs) | Lyapunov's margin (runs) | cost/budget (runs) | load avg |")
    print("|---|---|---|---|---|---|")
    for name, runs in out.items():
        loads = ", ".join(f"{r['load_avg_start'][0]:.1f}-{r['load_avg'][0]:.1f}" for r in runs)
        for m in methods:
            T = [r["runs"][m]["mean_batch_s"] * 1e3 for r in runs]
            cb = [r["runs"][m]["cost_over_budget"] for r in runs]
            if m == "lyapunov":
                mg = "–"
            else:
                red = [100 * r["lyapunov_vs"][m]["batch_time_reduction"] for r in runs]
                mg = f"{np.mean(red):+.1f} % ({', '.join(f'{x:+.1f}' for x in red)})"
            print(f"| {name} | {m} | {np.mean(T):.1f} ({', '.join(f'{x:.0f}' for x in T)}) | {mg} | "
                  f"{np.mean(cb):.2f} ({', '.join(f'{x:.2f}' for x in cb)}) | {loads} |")
    if a.json:
        write_json(a.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
