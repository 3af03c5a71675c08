#!/usr/bin/env python3
"""Benchmark of the DP+MP executor (saatp train groups): the Lyapunov planner against BSP,
LB-BSP, a single pipeline and HetPipe-style groups, real training of the digits CNN on 4
processes whose CPU quotas follow a trace, every method interleaved slot by slot under the
same quotas, the same budget and the same candidate device sets.

Prints per scenario each method's mean batch time (migrations included), cost against the
budget, final test accuracy, and the Lyapunov planner's batch-time margin over each baseline
(measured in the same run). The host's load average is printed: timings are noisy when
other work shares the machine.

Usage: .venv/bin/python scripts/bench_groups.py [--seeds 0,1] [--slots 12] [--iters 4] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from host_agent.scheduling.groups.executor import GroupsConfig, run
from host_agent.scheduling.groups.planner import METHODS
from host_agent.scheduling.result_files import write_json


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0,1", help="generated quota traces (comma-separated seeds)")
    ap.add_argument("--trace", action="append", default=[], help="a trace CSV (repeatable)")
    ap.add_argument("--slots", type=int, default=12)
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--json")
    a = ap.parse_args()
    scen = [("seed%s" % s, dict(trace_seed=int(s))) for s in a.seeds.split(",") if s]
    scen += [(os.path.basename(t), dict(trace=t)) for t in a.trace]
    out = {}
    t0 = time.perf_counter()
    for name, kw in scen:
        res = run(GroupsConfig(methods=METHODS, slots=a.slots, iters=a.iters, **kw))
        res.pop("final_params")
        out[name] = res
        print(f"\nscenario {name}: budget {res['budget']:.4g}/batch, load average {res['load_avg'][0]:.1f}, "
              f"{res['wall_s']:.0f} s")
        print(f"  {'method':10s} {'batch ms':>9s} {'cost/budget':>12s} {'acc':>6s} {'migrations':>10s}")
        for m, r in res["runs"].items():
            print(f"  {m:10s} {r['mean_batch_s'] * 1e3:9.1f} {r['cost_over_budget']:12.3f} "
                  f"{r['final_test_acc']:6.3f} {r['migrations']:10d}")
        for m, v in res["lyapunov_vs"].items():
            r = v["batch_time_reduction"] * 100
            print(f"  lyapunov vs {m:9s}: batch time {abs(r):5.1f}% {'lower' if r >= 0 else 'higher'} "
                  f"({v['speedup']:.2f}x)")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if a.json:
        write_json(a.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
