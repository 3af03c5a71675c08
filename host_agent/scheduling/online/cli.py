"""``saatp plan lyapunov``: run a named scenario, print the comparison, write JSON and plots."""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from ..result_files import check_result_files, write_result_files
from .lyapunov import METHODS, SCENARIOS, get_scenario, run_scenario


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", default="default", choices=sorted(SCENARIOS),
                   help="named scenario (default: %(default)s)")
    p.add_argument("--slots", type=int, default=None, help="override the number of slots")
    p.add_argument("--seed", type=int, default=None, help="override the seed")
    p.add_argument("--V", type=float, default=None, dest="V_main", help="the V of the headline run")
    p.add_argument("--Vs", default=None, help="comma-separated V values for the trade-off sweep")
    p.add_argument("--budget-frac", type=float, default=None,
                   help="budget as a fraction of the fastest plan's cost")
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of: " + ",".join(METHODS))
    p.add_argument("--json", default=None, help="write the full result (with per-slot series) here")
    p.add_argument("--plot", default=None, help="write a PNG (batch time and virtual queue over time)")
    p.add_argument("--quiet", action="store_true")


def _parse_vs(s):
    if s is None:
        return None
    try:
        vs = tuple(float(x) for x in s.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--Vs must be comma-separated numbers, got {s!r}") from None
    if not vs:
        raise ValueError("--Vs needs at least one value >= 0")
    bad = [v for v in vs if not (math.isfinite(v) and v >= 0)]
    if bad:  # nan passed "v < 0" and failed in the planner with a traceback ("need V >= 0, ...")
        raise ValueError(f"--Vs must be finite numbers >= 0, got {bad[0]:g} in {s!r}")
    return vs


def run(args) -> int:
    try:
        methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
        bad = [m for m in methods if m not in METHODS]
        if bad or "joint" not in methods:
            raise ValueError(f"--methods must include 'joint' and only: {', '.join(METHODS)} (bad: {bad})")
        if args.seed is not None and args.seed < 0:  # numpy's "expected non-negative integer" traceback
            raise ValueError(f"--seed must be >= 0, got {args.seed}")
        if args.slots is not None and args.slots < 2:
            raise ValueError("--slots must be >= 2")
        if args.V_main is not None and not (math.isfinite(args.V_main) and args.V_main >= 0):
            # until 2026-11-28 a traceback from the planner: "ValueError: need V >= 0, budget > 0 and t_ref > 0"
            raise ValueError(f"--V must be a finite number >= 0, got {args.V_main:g}")
        if args.budget_frac is not None and not 0 < args.budget_frac <= 10:
            raise ValueError("--budget-frac must be in (0, 10]")
        Vs = _parse_vs(args.Vs)
        sc = get_scenario(args.scenario, slots=args.slots, seed=args.seed, V_main=args.V_main,
                          budget_frac=args.budget_frac, Vs=Vs)
        if sc.V_main not in sc.Vs:
            sc.Vs = tuple(sorted(set(sc.Vs) | {sc.V_main}))
        sc.calib_slots = min(sc.calib_slots, sc.slots)
        check_result_files(args.json, args.plot)
    except ValueError as e:
        print(f"saatp plan lyapunov: {e}", file=sys.stderr)
        return 2
    prog = None if args.quiet else (lambda t: print(f"  slot {t}/{sc.slots}", file=sys.stderr))
    res = run_scenario(sc, methods=methods, progress=prog)
    print_report(res)
    write_result_files(res, args.json, args.plot, plot)
    return 0


def print_report(res: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    con = Console(width=140)
    con.print(f"[bold]scenario {res['scenario']}[/]: {res['description']}")
    con.print(f"slots={res['slots']} seed={res['seed']} budget={res['budget']:.3e} $/slot "
              f"(= {res['budget_frac']:.0%} of the fastest plan's {res['all_devices_cost']:.3e}), "
              f"T_ref={res['t_ref']:.3f} s, wall {res['wall_s']:.1f} s")
    t = Table(title="average batch time at matched average cost (V = %g)" % res["V_main"])
    for c in ("method", "avg batch s", "cost/budget", "final Q", "avg active", "reduction by ours", "max slot reduction"):
        t.add_column(c, justify="right" if c != "method" else "left")
    for x in res["runs"]:
        if x["V"] != res["V_main"]:
            continue
        cmp = res["comparison"].get(x["method"])
        label = x["label"] + (f" {x['static_set']}" if x.get("static_set") else "")
        t.add_row(label, f"{x['avg_batch_time']:.4f}", f"{x['cost_over_budget']:.3f}", f"{x['final_Q']:.1f}",
                  f"{x['avg_active']:.2f}", "-" if cmp is None else f"{cmp['avg_reduction']:+.1%}",
                  "-" if cmp is None else f"{cmp['max_slot_reduction']:+.1%}")
    floor = res.get("cheapest_cost_over_budget")
    if floor is not None and floor > 1.0 + 1e-9:
        con.print(f"warning: the budget cannot be met: the cheapest plan of each slot (the candidate device sets, "
                  f"each at its fastest plan) averages {floor:.3g}x it, so every method runs above it (a larger "
                  f"--budget-frac than {res['budget_frac']:g}?)", markup=False, highlight=False)
    else:
        # the table's title says "at matched average cost": say which runs are not (until
        # 2026-11-28 a 20-slot run's planner at 1.62x the budget against a baseline at 1.08x
        # was shown as a +88 % reduction without a word)
        over = [x for x in res["runs"] if x["V"] == res["V_main"] and x["cost_over_budget"] > 1.05]
        if over:
            con.print("warning: above the budget by more than 5 %: "
                      + ", ".join(f"{x['method']} {x['cost_over_budget']:.2f}x" for x in over)
                      + f" over {res['slots']} slots: the online planners meet it only up to O(V/slots) (more "
                      f"--slots or a smaller --V); a static set spends above it when none meets it; the "
                      f"comparison is not at matched cost", markup=False, highlight=False)
    con.print(t)
    t2 = Table(title="trade-off in V (ours)")
    for c in ("V", "avg batch s", "cost/budget", "avg Q", "final Q / slots"):
        t2.add_column(c, justify="right")
    for x in sorted((x for x in res["runs"] if x["method"] == "joint"), key=lambda x: x["V"]):
        t2.add_row(f"{x['V']:g}", f"{x['avg_batch_time']:.4f}", f"{x['cost_over_budget']:.3f}",
                   f"{x['avg_Q']:.2f}", f"{x['final_Q'] / res['slots']:.4f}")
    con.print(t2)


def plot(res: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    w = max(1, res["slots"] // 100)
    k = np.ones(w) / w
    styles = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1)), (0, (1, 2)), (0, (8, 3))]
    for i, x in enumerate(r for r in res["runs"] if r["V"] == res["V_main"]):
        T = np.convolve(x["series"]["T"], k, mode="valid")
        a1.plot(np.arange(len(T)) + w - 1, T, label=x["label"] + (f" {x['static_set']}" if x.get("static_set") else ""),
                lw=2.0 if x["method"] == "joint" else 1.0, ls=styles[i % len(styles)],
                color="black" if x["method"] == "joint" else None)
    a1.set_yscale("log")
    a1.set_ylabel(f"batch time [s] (moving avg {w})")
    a1.legend(fontsize=7)
    a1.set_title(f"saatp plan lyapunov: scenario {res['scenario']}")
    for x in sorted((x for x in res["runs"] if x["method"] == "joint"), key=lambda x: x["V"]):
        a2.plot(x["series"]["Q"], label=f"V={x['V']:g}")
    a2.set_ylabel("virtual queue Q (budget units)")
    a2.set_xlabel("slot")
    a2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
