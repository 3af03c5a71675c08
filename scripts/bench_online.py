#!/usr/bin/env python3
"""Benchmark of the online joint DP+MP planner (saatp plan lyapunov).

Prints, for the named scenario (default: ``default``, 2000 slots):
* average batch time of the planner vs the baselines at matched average cost, the
  reductions and the per-slot maximum reduction (the paper claims "up to 68.59%");
* the V trade-off (budget satisfaction, average queue);
* the design's gates (section 7(c)) with PASS/MISS next to each;
* the heuristic-vs-exhaustive ratio on N=4 slots;
* the planner's per-slot decision time.

Usage: .venv/bin/python scripts/bench_online.py [--scenario default] [--slots N] [--exhaustive-slots 30]
                                                [--json out.json] [--plot out.png]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from host_agent.scheduling.online.cli import plot, print_report  # noqa: E402
from host_agent.scheduling.online.env import EnvConfig, SyntheticEnv  # noqa: E402
from host_agent.scheduling.online.lyapunov import get_scenario, run_scenario  # noqa: E402
from host_agent.scheduling.online.model import SystemModel  # noqa: E402
from host_agent.scheduling.online.search import TentativeSearch, exhaustive_best  # noqa: E402
from host_agent.scheduling.workloads import Layer, Workload  # noqa: E402


def gate(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def exhaustive_check(n_slots: int) -> np.ndarray:
    spec = [(3, 2, 4), (5, 8, 2), (4, 30, 2), (6, 10, 1), (2, 60, 1)]
    wl = Workload("toy5", tuple(Layer(f"l{i}", f * 1e9, 2 * f * 1e9, p * 1e6, a * 1e6, a * 1e6)
                                for i, (f, p, a) in enumerate(spec)))
    env = SyntheticEnv(n_slots, seed=11, config=EnvConfig(rel_speeds=(1.0, 0.5, 0.5, 0.25), nodes=(0, 0, 1, 1)))
    m = SystemModel(wl, 32, mu_grid=(4, 8))
    s = TentativeSearch(m, gmax=4, nominal_speed=env.speed0)
    rng = np.random.default_rng(0)
    out = []
    for t in range(n_slots):
        v = env.view(t)
        Q, C = float(rng.uniform(0, 5)), 0.05 * env.price.sum()

        def score(p):
            return 10.0 * p.batch_time + Q * p.cost / C
        out.append(score(min(s.candidates(v, t), key=score)) / score(exhaustive_best(m, v, score)))
    return np.array(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="default")
    ap.add_argument("--slots", type=int, default=None)
    ap.add_argument("--exhaustive-slots", type=int, default=30)
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None)
    a = ap.parse_args()
    sc = get_scenario(a.scenario, slots=a.slots)
    sc.calib_slots = min(sc.calib_slots, sc.slots)
    t0 = time.perf_counter()
    res = run_scenario(sc, progress=lambda t: print(f"  slot {t}/{sc.slots}", file=sys.stderr))
    print_report(res)
    cmp = res["comparison"]
    print("\nHeadline (paper A: batch training time up to -68.59% vs state of the art):")
    for m, d in cmp.items():
        print(f"  vs {m:14s}: average {d['avg_reduction']:+.1%}  (speed-up {d['speedup']:.2f}x), "
              f"best slot {d['max_slot_reduction']:+.1%}")
    print("\nDesign gates (7(c)):")
    joint = sorted((x for x in res["runs"] if x["method"] == "joint"), key=lambda x: x["V"])
    for x in joint:
        if x["V"] <= 100:
            ok = x["cost_over_budget"] <= 1.02 and x["final_Q"] / res["slots"] <= 0.01
            print(f"  budget V={x['V']:g}: cost/budget {x['cost_over_budget']:.3f} (<= 1.02), "
                  f"Q(T)/T {x['final_Q'] / res['slots']:.4f} (<= 0.01 budget)  {gate(ok)}")
    T = [x["avg_batch_time"] for x in joint]
    Qs = [x["avg_Q"] for x in joint]
    print(f"  batch time non-increasing in V (5% tol.): {[round(t, 4) for t in T]}  "
          f"{gate(all(b <= a_ * 1.05 for a_, b in zip(T, T[1:])))}")
    print(f"  average Q grows with V: {[round(q, 2) for q in Qs]}  {gate(all(b > a_ for a_, b in zip(Qs, Qs[1:])))}")
    for m, g in (("bsp", 0.30), ("lbbsp", 0.10), ("pipeline", 0.20),
                 ("bsp+lyap", 0.30), ("lbbsp+lyap", 0.10), ("pipeline+lyap", 0.20)):
        if m in cmp:
            print(f"  vs {m:14s} reduction {cmp[m]['avg_reduction']:+.1%} (gate >= {g:.0%})  "
                  f"{gate(cmp[m]['avg_reduction'] >= g)}")
    if a.exhaustive_slots > 0:
        t1 = time.perf_counter()
        r = exhaustive_check(a.exhaustive_slots)
        print(f"\nHeuristic vs exhaustive (N=4, 5 layers, {len(r)} slots): mean ratio {r.mean():.4f}, "
              f"max {r.max():.4f}, within 5% on {np.mean(r <= 1.05):.0%} of slots "
              f"{gate(bool(np.all(r <= 1.05)))}  [{time.perf_counter() - t1:.0f} s]")
    per_slot = res["wall_s"] / res["slots"]
    print(f"\nPlanner decision time: {1000 * per_slot:.1f} ms per slot (all methods of this run together), "
          f"{res['plans_evaluated'] / res['slots']:.0f} structures evaluated per slot; total {time.perf_counter() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh)
    if a.plot:
        plot(res, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
