"""``saatp plan cgp``: simulate CGP against BSP/ASP/SSP/local SGD/LB-BSP; optionally run the
real 4-process torch.distributed trainer; print the comparison, write JSON and plots."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace

import numpy as np

from ..result_files import check_result_files, plot_file, write_json
from .sim import METHODS, SimConfig, Simulator

SCENARIOS = {
    "default": (SimConfig(), "N=8, one persistent x3 straggler (worker 7), transient p=0.05 x[2,5], "
                             "2-layer MLP on synthetic 10-class data, PS 0.3 s/update, all-reduce 0.1 s"),
    "moving": (SimConfig(move_to=2, move_at=100.0), "default, the persistent straggler moves to worker 2 at t=100"),
    "logreg": (SimConfig(hidden=0, lr=0.5), "default with multinomial logistic regression (convex)"),
    "cheap-ps": (SimConfig(ps_time=0.1), "default with a 3x faster parameter server (ASP's best case)"),
    "small": (SimConfig(duration=60.0, n_train=4000, n_test=1000), "default, 60 s simulated (for tests)"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", default="default", choices=sorted(SCENARIOS))
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--duration", type=float, default=None, help="simulated seconds")
    p.add_argument("--damping", default=None, choices=["none", "inverse", "sqrt", "excess"])
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of " + ",".join(METHODS))
    p.add_argument("--torch", action="store_true",
                   help="also run CGP vs BSP for real (saatp train cgp's library: 4 CPU-quota workers + a server)")
    p.add_argument("--json", default=None)
    p.add_argument("--plot", default=None, help="PNG: throughput, loss and accuracy curves")


def compare(results: dict, cfg: SimConfig) -> dict:
    """Headline figures against BSP and ASP."""
    out = {}
    bsp = results.get("bsp")
    target = None
    if bsp is not None:
        target = float(bsp.loss[len(bsp.loss) // 2])  # what BSP reaches halfway through
    for m, r in results.items():
        d = {"throughput": r.throughput, "final_loss": r.loss[-1], "final_acc": r.acc[-1],
             "max_staleness": r.max_staleness, "versions": r.versions, "regroups": r.regroups,
             "mean_acc_2nd_half": float(np.mean(r.acc[len(r.acc) // 2:]))}
        if bsp is not None:
            d["speedup_vs_bsp"] = r.throughput / bsp.throughput if bsp.throughput > 0 else float("nan")
            d["time_to_target"] = r.time_to_loss(target)
            tb = bsp.time_to_loss(target)
            d["ttl_ratio_vs_bsp"] = d["time_to_target"] / tb if np.isfinite(tb) and tb > 0 else float("nan")
            d["acc_minus_bsp_pp"] = 100 * (r.acc[-1] - bsp.acc[-1])
        out[m] = d
    asp = results.get("asp")
    if asp is not None:
        for m, d in out.items():
            d["acc_minus_asp_pp"] = 100 * (results[m].acc[-1] - asp.acc[-1])
            d["acc_rel_asp"] = results[m].acc[-1] / asp.acc[-1] - 1.0
    return {"target_loss": target, "methods": out}


def run(args) -> int:
    try:
        if args.seed is not None and args.seed < 0:  # numpy's "expected non-negative integer" traceback
            raise ValueError(f"--seed must be >= 0, got {args.seed}")
        cfg, desc = SCENARIOS[args.scenario]
        cfg = replace(cfg, **{k: v for k, v in dict(seed=args.seed, duration=args.duration,
                                                    damping=args.damping).items() if v is not None})
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        bad = [m for m in methods if m not in METHODS]
        if bad or not methods:
            raise ValueError(f"--methods: unknown {bad}; known: {', '.join(METHODS)}")
        check_result_files(args.json, args.plot)
    except (ValueError, TypeError) as e:
        print(f"saatp plan cgp: {e}", file=sys.stderr)
        return 2
    sim = Simulator(cfg)
    results = {m: sim.run(m) for m in methods}
    cmp = compare(results, cfg)
    out = {"scenario": args.scenario, "description": desc, "config": asdict(cfg), "comparison": cmp,
           "runs": {m: r.to_dict() for m, r in results.items()}}
    print_report(out)
    if args.torch:
        out["torch"] = run_torch()
        print_torch(out["torch"])
    if args.json:
        # strict JSON as the other commands write it: a target not reached was 'Infinity', a
        # comparison without BSP 'NaN' (until 2026-11-28); numpy numbers through float
        write_json(args.json, json.loads(json.dumps(out, default=float)))
        print(f"wrote {args.json}")
    if args.plot:
        png = plot_file(args.plot)
        plot(out, png)
        print(f"wrote {png}")
    return 0


def run_torch(duration: float = 10.0, target: float = 0.9) -> dict:
    """CGP vs BSP with real compute (the digits CNN), 4 workers with CPU quotas from the
    generated trace and the parameter server as its own process (:mod:`.library`)."""
    from .library import CGPConfig, compare, train_cgp
    runs = {m: train_cgp("digits-cnn", "digits", CGPConfig(mode=m, duration_s=duration), target_acc=target)
            for m in ("cgp", "bsp")}
    return dict(runs=runs, target_acc=target, comparison=compare(runs, target))


def print_report(out: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    con = Console(width=150)
    con.print(f"[bold]scenario {out['scenario']}[/]: {out['description']}")
    cmp = out["comparison"]
    # the target is BSP's: without it in --methods there is none (until 2026-11-28 such a run
    # failed with a TypeError after simulating)
    target = ("no target loss (BSP, whose loss halfway it is, did not run)" if cmp["target_loss"] is None
              else f"target loss {cmp['target_loss']:.4f} (BSP's loss halfway)")
    t = Table(title=f"simulated {out['config']['duration']:g} s; {target}")
    cols = ("method", "samples/s", "x BSP", "t to target", "t ratio vs BSP", "final loss", "final acc",
            "acc - BSP (pp)", "acc - ASP (pp)", "max stale", "regroups")
    for c in cols:
        t.add_column(c, justify="left" if c == "method" else "right")
    def cell(d: dict, key: str, fmt: str) -> str:
        # a comparison with a method that did not run, or a target not reached, is '-' (it
        # read 'nan', '+nan' and 'inf' until 2026-11-28)
        v = d.get(key)
        return "-" if v is None or not np.isfinite(v) else format(v, fmt)

    for m, d in cmp["methods"].items():
        t.add_row(m, f"{d['throughput']:.1f}", cell(d, "speedup_vs_bsp", ".2f"), cell(d, "time_to_target", ".0f"),
                  cell(d, "ttl_ratio_vs_bsp", ".2f"), f"{d['final_loss']:.4f}", f"{d['final_acc']:.4f}",
                  cell(d, "acc_minus_bsp_pp", "+.2f"), cell(d, "acc_minus_asp_pp", "+.2f"), str(d["max_staleness"]),
                  str(d["regroups"]))
    con.print(t)


def print_torch(r: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"real run (saatp train cgp): digits CNN, 4 workers with CPU quotas, server process; "
                    f"target accuracy {r['target_acc']}")
    for c in ("mode", "samples/s", "final acc", "t to target", "max staleness", "groupings"):
        t.add_column(c, justify="right")
    for m, d in r["runs"].items():
        tt = d["time_to_target_s"]
        t.add_row(m, f"{d.get('samples_per_s', 0):.0f}", f"{d['final_acc']:.3f}", "-" if tt is None else f"{tt:.1f} s",
                  "-" if d["max_staleness"] is None else str(d["max_staleness"]),  # BSP: no server, no staleness
                  str([g["groups"] for g in d["groupings"]][:6]))
    Console(width=150).print(t)


def plot(out: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for m, r in out["runs"].items():
        lw = 2.0 if m == "cgp" else 1.0
        axes[0].plot(r["times"], r["samples"], label=m, lw=lw)
        axes[1].plot(r["times"], r["loss"], label=m, lw=lw)
        axes[2].plot(r["times"], r["acc"], label=m, lw=lw)
    axes[0].set_ylabel("samples processed")
    axes[1].set_ylabel("training loss (eval subset)")
    axes[1].set_yscale("log")
    axes[2].set_ylabel("test accuracy")
    tl = out["comparison"]["target_loss"]
    if tl:
        axes[1].axhline(tl, color="grey", ls=":", lw=1)
    for a in axes:
        a.set_xlabel("simulated wall-clock [s]")
        a.legend(fontsize=7)
    fig.suptitle(f"saatp plan cgp: scenario {out['scenario']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
