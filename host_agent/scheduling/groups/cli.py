"""``saatp train groups``: real data+model-parallel training of a small CNN on the digits data
set, 4 processes with CPU quotas from a trace, planned every slot by the Lyapunov planner or
a baseline, all methods interleaved slot by slot under the same quotas.

    saatp train groups --planner lyapunov --planner bsp --planner lbbsp --slots 12 --json r.json --plot r.png
"""

from __future__ import annotations

import argparse
import sys

from ..result_files import (
    add_result_file_options,
    check_result_files,
    keep_interrupted,
    write_json,
    write_result_files,
)
from ..run_options import add_run_options, exit_on_sigterm, run_options_from
from . import executor
from .executor import GroupsConfig
from .planner import BUDGET_REFS, METHODS
from .plot import plot_groups


def keep_failed(path: str | None, part: dict) -> None:
    """A failed run's finished slots (``part``, marked ``failed``) to ``--json``, said on stderr."""
    if not path:
        return
    done, slots = part["failed"]["slots_done"], part["failed"]["slots"]
    try:
        write_json(path, part)
    except OSError as e:
        print(f"saatp train groups: the {done} of {slots} slots every method finished could not be kept: {e}",
              file=sys.stderr)
        return
    if not done:
        print(f"saatp train groups: no slot had finished before the failure; its record is in {path} (marked "
              f"failed, no runs)", file=sys.stderr)
        return
    print(f"saatp train groups: the {done} of {slots} slots every method finished before the failure are in "
          f"{path} (marked failed)", file=sys.stderr)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--planner", action="append", choices=METHODS + ("all",), default=None,
                   help="repeatable; default: lyapunov, bsp, lbbsp")
    p.add_argument("--slots", type=int, default=12)
    p.add_argument("--iters", type=int, default=4, help="iterations per slot (default 4)")
    p.add_argument("--hold", type=int, default=1,
                   help="slots per trace slot: the quotas change every HOLD slots, the planners decide every slot")
    p.add_argument("--no-react", dest="react", action="store_false",
                   help="decide only at slot starts (default: decide again after a slot's first iteration when it "
                        "shows a process's speed jumped)")
    p.add_argument("--batch", type=int, default=128, help="global batch B (default 128)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--V", type=float, default=10.0)
    p.add_argument("--budget-frac", type=float, default=1.0,
                   help="the cost budget as a fraction of the reference's predicted cost (default 1)")
    p.add_argument("--budget-ref", choices=BUDGET_REFS, default="all",
                   help="all: LB-BSP on all processes (the device set as deployed, default); fastest: the fastest plan")
    add_run_options(p, "nn.Sequential (whose children the planners may cut between; another nn.Module runs as one layer, as replicas)", "process", "0.35,0.3,0.2,0.15")
    add_result_file_options(p)


def comparison_line(method: str, v: dict) -> str:
    """The planner against ``method`` (``summarise``'s ``lyapunov_vs`` entry) in words. Where
    the two ran the same plans in every slot it says the difference is not the planner's: on a
    small model every method often runs one process, and "27.6% higher" with the same plans in 6
    of 6 slots (until 2026-11-28) read as a loss of the planner's."""
    r = v["batch_time_reduction"] * 100
    line = (f"lyapunov vs {method}: batch time {abs(r):.1f}% {'lower' if r >= 0 else 'higher'} ({v['speedup']:.2f}x); "
            f"the same plans in {v['same_plan_slots']} of {v['slots']} slots")
    if v["slots"] and v["same_plan_slots"] == v["slots"]:
        line += (": every slot ran the same plans, so the difference is measurement noise (the host, the order the "
                 "methods run in a slot), not the planner's")
    elif v["same_plan_slots"] and v.get("reduction_other_plans") is not None:
        def pct(x: float) -> str:
            return f"{abs(x) * 100:.1f}% {'lower' if x >= 0 else 'higher'}"
        n_other = v["slots"] - v["same_plan_slots"]
        line += (f": {pct(v['reduction_other_plans'])} in the {n_other} slot{'s' if n_other > 1 else ''} with other "
                 f"plans (the planner's choices), {pct(v['reduction_same_plans'])} in the same-plan slots (the host's "
                 "noise)")
    return line


def over_budget_line(res: dict) -> str | None:
    """The methods whose time-averaged cost is more than 5 % above the budget, in words, or None:
    the comparison lines compare batch times, which are at matched cost only where every method
    kept to it (until 2026-11-28 a 4-slot run with the planner at 1.22x the budget and
    bsp-static at 0.76x said only "lyapunov vs bsp-static: batch time 4.0% lower")."""
    over = [(m, r["cost_over_budget"]) for m, r in res["runs"].items() if r["cost_over_budget"] > 1.05]
    if not over:
        return None
    floor = (res.get("budget_floor") or {}).get("predicted_cost_over_budget")
    statics = res.get("static_sets") or {}
    if floor is not None and floor > 1:
        why = ["no device set is predicted to meet it"]
    else:
        why = []
        if any(m not in statics for m, _ in over):
            why.append("an online method keeps to it on time average: its virtual queue brings the cost down "
                       "over the slots, so a short run can end above it; more --slots")
        pred = [f"{m} {statics[m]['predicted_cost_over_budget']:.2f}x" for m, _ in over
                if m in statics and statics[m].get("predicted_cost_over_budget") is not None]
        if pred:
            why.append(f"a static set is chosen once, by the cost predicted at the start ({', '.join(pred)}), "
                       f"and measured above it")
    return (f"above the budget by more than 5 %: {', '.join(f'{m} {c:.2f}x' for m, c in over)} over "
            f"{res['config']['slots']} slots ({'; '.join(why)}); batch times above the budget are not at "
            f"matched cost")


def run(args: argparse.Namespace) -> int:
    exit_on_sigterm()
    try:
        check_result_files(args.json, args.plot)  # before the run, not after it
        methods = tuple(dict.fromkeys(m for x in (args.planner or ["lyapunov", "bsp", "lbbsp"])
                                      for m in (METHODS if x == "all" else (x,))))
        opts = run_options_from(args)
        cfg = GroupsConfig(methods=methods, model=args.model, data=args.data, world=len(opts["base_quotas"]),
                           slots=args.slots, iters=args.iters, hold=args.hold, react=args.react, B=args.batch,
                           lr=args.lr, V=args.V,
                           budget_frac=args.budget_frac, budget_ref=args.budget_ref, **opts)

        def progress(t, d):
            print(f"slot {t:3d}: " + "  ".join(f"{m} {x['T'] * 1e3:6.1f} ms acc {x['test_acc']:.3f}"
                                                 for m, x in d.items()), flush=True)
        try:
            res = executor.run(cfg, progress=progress, log_dir=args.log_dir)
        except (KeyboardInterrupt, SystemExit) as e:  # Ctrl-C, SIGTERM (exit 143): keep the finished slots
            part = getattr(e, "partial_result", None)
            if part is not None:
                done = part["interrupted"]["slots_done"]
                if done:
                    keep_interrupted("saatp train groups", args.json, part, "",
                                     f"the {done} of {cfg.slots} slots every method finished")
                else:
                    keep_interrupted("saatp train groups", args.json, part, "",
                                     "no slot had finished: the run's record, with no runs,", verb="is")
            raise
        res.pop("final_params")
    except (ValueError, RuntimeError, OSError) as e:
        print(f"saatp train groups: {e}", file=sys.stderr)
        part = getattr(e, "partial_result", None)
        if part is not None:  # a rank failed: keep the slots every method had finished (lost until 2026-11-28)
            keep_failed(args.json, part)
        return 2
    print(f"budget {res['budget']:.4g} per batch; load average {res['load_avg'][0]:.1f}")
    r = res.get("budget_reference")
    if r and r.get("measured_s") is not None:
        print(f"  budget from the reference measured: LB-BSP on every process ran {r['measured_s'] * 1e3:.1f} ms per "
              f"batch under the base quotas, the start-up model said {r['predicted_s'] * 1e3:.1f} ms "
              f"(x{r['ratio']:.2f} on the model's budget and T_ref)")
    elif r:
        print(f"  budget from the start-up model alone ({r.get('skipped')})")
    print(f"{'method':12s} {'batch ms':>9s} {'cost/budget':>12s} {'acc':>6s} {'migrations':>10s} {'reacted':>7s} "
          f"{'re-plans':>8s} {'group diff':>10s}")
    for m, r in res["runs"].items():
        print(f"{m:12s} {r['mean_batch_s'] * 1e3:9.1f} {r['cost_over_budget']:12.3f} {r['final_test_acc']:6.3f} "
              f"{r['migrations']:10d} {r['reactions']:7d} {r['replans']:8d} {r['max_group_diff']:10.2g}")
    for m, r in res["runs"].items():  # an accuracy at chance is all the table shows of it
        if r["diverged_slot"] is not None:
            print(f"warning: {m}: training diverged: after slot {r['diverged_slot']} the parameters held NaN or "
                  f"infinite values or the training loss was over 100x the first slot's (a smaller --lr?)",
                  file=sys.stderr)
    line = over_budget_line(res)
    if line:
        print(line)
    if args.react:
        print("reacted: slots in which a method decided again after the slot's first iteration (it showed a speed "
              "jump); re-plans: those in which it then changed its plan")
    for m, v in res.get("lyapunov_vs", {}).items():
        print(comparison_line(m, v))
    try:
        write_result_files(res, args.json, args.plot, plot_groups)
    except OSError as e:  # checked before the run, so rare: a full disk, a file removed meanwhile
        print(f"saatp train groups: {e}", file=sys.stderr)
        return 2
    return 0
