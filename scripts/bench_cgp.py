#!/usr/bin/env python3
"""Benchmark of CGP (saatp plan cgp): the simulator over scenarios and seeds, a damping
ablation, and a real 4-process run (CGP vs BSP, saatp train cgp's library).

Prints per scenario the mean over seeds of CGP's throughput speed-up over BSP (paper: 1.94x
on average over other methods), time-to-target-loss ratio, final accuracy against BSP and
ASP (paper: +16.8% accuracy vs asynchronous methods), and the design's gates (7(d)).

Usage: .venv/bin/python scripts/bench_cgp.py [--seeds 3] [--no-torch] [--scenarios default,moving,...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from host_agent.scheduling.cgp.cli import SCENARIOS, compare, print_torch, run_torch  # noqa: E402
from host_agent.scheduling.cgp.sim import METHODS, Simulator  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--scenarios", default="default,moving,logreg,cheap-ps")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-ablation", action="store_true")
    a = ap.parse_args()
    from rich.console import Console
    from rich.table import Table
    con = Console(width=160)
    t0 = time.perf_counter()
    for name in a.scenarios.split(","):
        base, desc = SCENARIOS[name]
        rows = {m: [] for m in METHODS}
        for seed in range(a.seeds):
            cfg = replace(base, seed=seed)
            sim = Simulator(cfg)
            res = {m: sim.run(m) for m in METHODS}
            c = compare(res, cfg)["methods"]
            for m in METHODS:
                rows[m].append(c[m])
        t = Table(title=f"{name}: {desc} (mean over {a.seeds} seeds)")
        for col in ("method", "x BSP samples/s", "time-to-target / BSP", "final acc", "acc - BSP pp",
                    "acc - ASP pp", "acc vs ASP rel.", "max stale"):
            t.add_column(col, justify="left" if col == "method" else "right")
        for m in METHODS:
            r = rows[m]
            mean = lambda k: float(np.mean([x[k] for x in r]))  # noqa: E731
            t.add_row(m, f"{mean('speedup_vs_bsp'):.2f}", f"{mean('ttl_ratio_vs_bsp'):.2f}", f"{mean('final_acc'):.4f}",
                      f"{mean('acc_minus_bsp_pp'):+.2f}", f"{mean('acc_minus_asp_pp'):+.2f}",
                      f"{mean('acc_rel_asp'):+.1%}", f"{max(x['max_staleness'] for x in r)}")
        con.print(t)
        cg = rows["cgp"]
        others = [m for m in METHODS if m not in ("cgp", "bsp")]
        sp_other = np.mean([np.mean([c["throughput"] / o["throughput"] for c, o in zip(cg, rows[m])]) for m in others])
        s = float(np.mean([x["speedup_vs_bsp"] for x in cg]))
        ttl = float(np.mean([x["ttl_ratio_vs_bsp"] for x in cg]))
        dacc = float(np.mean([x["acc_minus_bsp_pp"] for x in cg]))
        dasp = float(np.mean([x["acc_minus_asp_pp"] for x in cg]))
        print(f"  gates: samples/s {s:.2f}x BSP (>= 1.5: {'PASS' if s >= 1.5 else 'MISS'}), "
              f"time-to-loss {ttl:.2f}x BSP (<= 0.75: {'PASS' if ttl <= 0.75 else 'MISS'}), "
              f"acc vs BSP {dacc:+.2f} pp (>= -1: {'PASS' if dacc >= -1 else 'MISS'}), "
              f"acc vs ASP {dasp:+.2f} pp (>= 0: {'PASS' if dasp >= 0 else 'MISS'}), "
              f"max staleness {max(x['max_staleness'] for x in cg)} (<= {base.s_max})")
        print(f"  CGP throughput over the mean of the other methods (paper: 1.94x on average): {sp_other:.2f}x")
    if not a.no_ablation:
        t = Table(title="damping ablation (scenario default, mean over seeds)")
        for col in ("damping", "x BSP samples/s", "time-to-target / BSP", "final acc", "acc - ASP pp"):
            t.add_column(col, justify="right")
        base, _ = SCENARIOS["default"]
        for d in ("excess", "none", "sqrt", "inverse"):
            r = []
            for seed in range(a.seeds):
                cfg = replace(base, seed=seed, damping=d)
                sim = Simulator(cfg)
                res = {m: sim.run(m) for m in ("bsp", "asp", "cgp")}
                r.append(compare(res, cfg)["methods"]["cgp"])
            t.add_row(d, f"{np.mean([x['speedup_vs_bsp'] for x in r]):.2f}",
                      f"{np.mean([x['ttl_ratio_vs_bsp'] for x in r]):.2f}",
                      f"{np.mean([x['final_acc'] for x in r]):.4f}", f"{np.mean([x['acc_minus_asp_pp'] for x in r]):+.2f}")
        con.print(t)
    if not a.no_torch:
        r = run_torch()
        print_torch(r)
        c = r["comparison"]["bsp"]
        sp = c["speedup_to_target"]
        print(f"  real run: CGP reaches {r['target_acc']} accuracy "
              f"{'n/a' if sp is None else f'{sp:.2f}x'} as fast as BSP; final accuracy {c['acc_diff_pp']:+.1f} pp "
              "(full comparison with ASP/SSP and the ablation: saatp train cgp --method all --ablation)")
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
