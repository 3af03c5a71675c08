#!/usr/bin/env python3
"""Benchmark of CGP (saatp plan cgp): the simulator over scenarios and seeds, a damping
ablation, and a real 4-process run (CGP vs BSP, saatp train cgp's library).

Prints per scenario the mean over seeds of CGP's throughput speed-up over BSP (paper: 1.94x
on average over other methods), time-to-target-loss ratio, final accuracy against BSP and
ASP (paper: +16.8% accuracy vs asynchronous methods), and the design's gates (7(d)).

Usage: .venv/bin/python scripts/bench_cgp.py [--seeds 3] [--no-torch] [--scenarios default,moving,...]

Real runs (``--real SCENARIO,...``; ``--no-sim`` skips the simulator): every method of
``saatp train cgp --method all --ablation`` (CGP, BSP, ASP, SSP, CGP without damping, with
inverse damping, without the staleness bound, with a barrier at every regrouping decision) on
the digits CNN, for each real scenario (base, comm, server, lr) x quota trace (``--traces
0,1``: generated seeds) x repeat, one method after the other. Prints per run the time to
each target accuracy, the final accuracy (mean of the last three
snapshots), samples/s, the largest staleness and the groupings; then per scenario the median
over traces and repeats, CGP's wins and losses, and the host's load average.
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
from host_agent.scheduling.cgp.train_cli import ABLATION, ablation_configs  # noqa: E402
from host_agent.scheduling.cgp.sim import METHODS, Simulator  # noqa: E402
from host_agent.scheduling.run_options import exit_on_sigterm  # noqa: E402

# real scenarios: ~1 CPU in all (4 workers + the server), a slow straggler (0.1 CPU base) and
# the generated transient trace on top
REAL = {
    "base": ("local batch 32, lr 0.01, server 0.2 CPU, workers 0.25/0.25/0.2/0.1 CPU",
             dict(base_quotas=(0.25, 0.25, 0.2, 0.1), ps_quota=0.2, local_batch=32, lr=0.01)),
    "comm": ("communication-bound: local batch 8 (a push per 8 samples), server 0.15 CPU, workers 0.3/0.25/0.2/0.1",
             dict(base_quotas=(0.3, 0.25, 0.2, 0.1), ps_quota=0.15, local_batch=8, lr=0.01)),
    "server": ("server-bound: 8 workers 0.2/0.2/0.15/0.15/0.1/0.1/0.1/0.1 CPU, server 0.1 CPU, local batch 8",
               dict(workers=8, base_quotas=(0.2, 0.2, 0.15, 0.15, 0.1, 0.1, 0.1, 0.1), ps_quota=0.1, local_batch=8,
                    lr=0.01)),
    "lr": ("stale updates hurt: base with lr 0.05",
           dict(base_quotas=(0.25, 0.25, 0.2, 0.1), ps_quota=0.2, local_batch=32, lr=0.05)),
}
REAL_METHODS = ("cgp", "bsp", "asp", "ssp", *ABLATION)  # as saatp train cgp --method all --ablation


def real_runs(scenarios, traces, repeats, duration, targets, json_out=None) -> dict:
    from host_agent.scheduling.cgp.library import CGPConfig, time_to, train_cgp
    out: dict = {}
    for name in scenarios:
        desc, kw = REAL[name]
        out[name] = rows = []
        print(f"\nreal scenario {name}: {desc}; {duration:g} s per method, targets {targets}")
        for tr in traces:
            for rep in range(repeats):
                load0 = os.getloadavg()[0]
                res = {}
                base = CGPConfig(trace_seed=tr, duration_s=duration, **kw)
                cfgs = {m: replace(base, mode=m) for m in REAL_METHODS if m not in ABLATION} | ablation_configs(base)
                for m in REAL_METHODS:
                    r = train_cgp("digits-cnn", "digits", cfgs[m])
                    res[m] = dict(final_acc=r["final_acc"], samples_per_s=r.get("samples_per_s"),
                                  max_staleness=r["max_staleness"], held=r["held"],
                                  groupings=[g["groups"] for g in r["groupings"]],
                                  ttt={t: time_to(r["evals"], t) for t in targets},
                                  evals=[(e["t"], e["test_acc"]) for e in r["evals"]])
                load1 = os.getloadavg()[0]
                rows.append(dict(trace=tr, repeat=rep, load=(load0, load1), runs=res))
                print(f"  trace {tr} run {rep} (load average {load0:.1f} -> {load1:.1f})")
                for m, d in res.items():
                    tt = " ".join("-" if v is None else f"{v:4.1f}" for v in d["ttt"].values())
                    print(f"    {m:15s} t->{targets}: {tt:>12s} s  final {d['final_acc']:.3f}  "
                          f"{d['samples_per_s'] or 0:6.0f} samples/s  stale {d['max_staleness']!s:>5s}  "
                          f"{d['groupings'][:5]}")
                sys.stdout.flush()
                if json_out:
                    import json
                    with open(json_out, "w") as f:
                        json.dump(out, f, indent=1, default=float)
        print(f"\n| scenario | method | time to {' / '.join(str(t) for t in targets)} (median; runs) | "
              "final acc (median) | samples/s (median) | max staleness |")
        print("|---|---|---|---|---|---|")
        for m in REAL_METHODS:
            cells = []
            for t in targets:
                v = [r["runs"][m]["ttt"][t] for r in rows]
                med = np.median([x if x is not None else np.inf for x in v])
                cells.append(f"{'n/a' if not np.isfinite(med) else f'{med:.1f} s'} "
                             f"({', '.join('-' if x is None else f'{x:.1f}' for x in v)})")
            fa = np.median([r["runs"][m]["final_acc"] for r in rows])
            sp = np.median([r["runs"][m]["samples_per_s"] or 0 for r in rows])
            ms = max((r["runs"][m]["max_staleness"] or 0) for r in rows)
            print(f"| {name} | {m} | {' / '.join(cells)} | {fa:.3f} | {sp:.0f} | {ms if m != 'bsp' else '–'} |")
    return out


def main() -> int:
    exit_on_sigterm()  # a SIGTERM still removes the real runs' cgroups and processes
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--scenarios", default="default,moving,logreg,cheap-ps")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-ablation", action="store_true")
    ap.add_argument("--no-sim", action="store_true", help="skip the simulator")
    ap.add_argument("--real", default="", help=f"real scenarios ({','.join(REAL)}); empty: none")
    ap.add_argument("--traces", default="0,1", help="generated quota traces of the real runs (seeds)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--duration", type=float, default=12.0, help="seconds of training per real run")
    ap.add_argument("--targets", default="0.9,0.95")
    ap.add_argument("--json", help="real runs: write the results here")
    a = ap.parse_args()
    if a.no_sim:
        t0 = time.perf_counter()
        real_runs([x for x in a.real.split(",") if x], [int(x) for x in a.traces.split(",")], a.repeats,
                  a.duration, [float(x) for x in a.targets.split(",")], a.json)
        print(f"total {time.perf_counter() - t0:.0f} s")
        return 0
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
    if a.real:
        real_runs([x for x in a.real.split(",") if x], [int(x) for x in a.traces.split(",")], a.repeats,
                  a.duration, [float(x) for x in a.targets.split(",")], a.json)
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
