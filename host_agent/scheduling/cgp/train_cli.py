"""``saatp train cgp``: CGP and its baselines (BSP, ASP, SSP) on real processes, one after the
other under the same CPU-quota trace, with test accuracy over time, the time to a target
accuracy and the server's staleness; ``--ablation`` adds CGP runs without damping, with
inverse damping, without the staleness bound, with a barrier at every regrouping decision and
with a group's samples split by its members' speeds.

    saatp train cgp --model host_agent.scheduling.digits:cnn --method all --duration 15 --json r.json --plot r.png
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

from .. import digits
from ..groups.plot import plot_cgp
from ..result_files import (
    add_result_file_options,
    check_result_files,
    keep_interrupted,
    write_json,
    write_result_files,
)
from ..run_options import add_run_options, exit_on_sigterm, require, run_options_from
from .library import MODES, CGPConfig, compare, train_cgp

# CGP variants of the ablation: each maps the run's configuration to the fields it changes
ABLATION = {"cgp-no-damping": lambda c: dict(damping="none"), "cgp-inverse": lambda c: dict(damping="inverse"),
            # no bound: 10 000 versions, or the run's own --s-max where that is larger (until
            # 2026-11-28 --s-max 1e9 gave "cgp-no-bound" the tighter bound of the two)
            "cgp-no-bound": lambda c: dict(s_max=max(10_000, c.s_max)),
            "cgp-barrier-every-phase": lambda c: dict(barrier_every_phase=True),
            "cgp-balanced": lambda c: dict(balance=True),
            "cgp-no-accumulate": lambda c: dict(accumulate=0),
            "cgp-unchecked-merges": lambda c: dict(check_merges=False)}


def time_ratio(c: dict) -> str:
    """A comparison's time to the target (:func:`.library.compare_times`) for the report: the
    ratio with its bounds where the snapshots resolve it, else why not."""
    sp, b = c["speedup_to_target"], c.get("speedup_bounds")
    if sp is None:
        return c["note"]
    hi = "?" if b[1] is None else f"{b[1]:.3g}"
    return f"{sp:.2f}x ({c['note']}; between {b[0]:.3g}x and {hi}x given the snapshots)"


# a variant the run's own options already make (``--balance``: "cgp-balanced", ``--damping
# none``: "cgp-no-damping", ``--damping inverse``: "cgp-inverse", ``--s-max 10000``:
# "cgp-no-bound") is CGP itself run again; it becomes the other side of its mechanism instead
COUNTERPART = {"cgp-balanced": lambda c: ("cgp-equal-batches", dict(balance=False)),
               "cgp-no-damping": lambda c: ("cgp-excess-damping", dict(damping="excess")),
               "cgp-inverse": lambda c: ("cgp-excess-damping", dict(damping="excess")),
               "cgp-no-bound": lambda c: (f"cgp-bound-{CGPConfig.s_max}", dict(s_max=CGPConfig.s_max)),
               "cgp-no-accumulate": lambda c: (f"cgp-accumulate-{CGPConfig.accumulate}",
                                               dict(accumulate=CGPConfig.accumulate))}


def ran_ungrouped(run: dict) -> bool:
    """Whether a CGP run kept every worker in a group of its own in every grouping it used:
    then it ran as SSP runs (its own staleness bound), with only its damping and accumulation
    besides, and no group synchronised."""
    gs = run.get("groupings") or []
    return bool(gs) and all(len(g) == 1 for x in gs for g in x["groups"])


UNGROUPED_NOTE = ("note: cgp kept every worker in a group of its own for the whole run (no grouping paid off): it "
                  "ran as ssp does, with its damping and accumulation besides, so its margins over asp and ssp are "
                  "those and the host's, not grouping's")


def ablation_configs(base: CGPConfig) -> dict[str, CGPConfig]:
    """The ablation's CGP runs, each ``base`` with one mechanism changed. Where the run's own
    options already make a variant (``--balance --ablation``), its counterpart runs instead
    (``cgp-equal-batches``): until 2026-11-28 that variant ran CGP's configuration a second
    time under another name, and the ablation had no run without the mechanism."""
    cgp = replace(base, mode="cgp")
    out = {}
    for k, f in ABLATION.items():
        cfg = replace(cgp, **f(base))
        if cfg == cgp and k in COUNTERPART:
            k, change = COUNTERPART[k](base)
            cfg = replace(cgp, **change)
        if cfg != cgp and cfg not in out.values():
            out[k] = cfg
    return out


def keep_finished(runs: dict, interrupted: str, planned: list[str], args: argparse.Namespace) -> None:
    """The command was interrupted during method ``interrupted``: write the methods that had
    finished to ``--json`` (no comparison, no plot), marked ``interrupted``. Until 2026-11-28
    a Ctrl-C in the last of eight methods (`--method all --ablation`) lost the seven finished ones.
    With none finished the file records the interruption (``runs`` empty): until 2026-11-28 it was
    not written, and a result of an earlier run at that path read as this run's."""
    res = dict(runs=runs, target_acc=args.target, interrupted=interrupted, not_run=planned[planned.index(interrupted):])
    what, verb = _finished(runs)
    keep_interrupted("saatp train cgp", args.json, res, f" during {interrupted}", what, verb=verb)


def _finished(runs: dict) -> tuple[str, str]:
    """What a kept result holds and its verb, for the message: ("the 2 finished method(s) (cgp,
    bsp)", "are") in ..."""
    if not runs:
        return "no method had finished: the run's record, with no runs,", "is"
    return f"the {len(runs)} finished method(s) ({', '.join(runs)})", "are"


def keep_failed(runs: dict, failed: str, planned: list[str], args: argparse.Namespace, e: Exception) -> None:
    """Method ``failed`` failed (a rank exited or hung): write the methods that had finished to
    ``--json`` as :func:`keep_finished` does, marked ``failed`` (the method) with ``error`` (the
    message's first line). Until 2026-11-28 they were lost; with none finished the file records the
    failure (``runs`` empty) instead of keeping what an earlier run wrote there."""
    if not args.json:
        return
    res = dict(runs=runs, target_acc=args.target, failed=failed, error=(str(e).splitlines() or [""])[0],
               not_run=planned[planned.index(failed):])
    what, verb = _finished(runs)
    try:
        write_json(args.json, res)
    except OSError as err:
        print(f"saatp train cgp: {what} could not be kept: {err}", file=sys.stderr)
        return
    print(f"saatp train cgp: {failed} failed; {what} {verb} in {args.json} (marked failed)", file=sys.stderr)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", action="append", choices=MODES + ("all",), default=None,
                   help="repeatable; default all (cgp, bsp, asp, ssp)")
    p.add_argument("--ablation", action="store_true",
                   help="also CGP without damping / inverse damping / no bound / a barrier at every "
                        "regrouping decision / a group's samples split by its members' speeds")
    p.add_argument("--balance", action="store_true",
                   help="CGP: a group's samples are split by its members' measured speeds, half to twice --batch "
                        "each (default: every member computes --batch samples)")
    p.add_argument("--ps-quota", type=float, default=0.2, help="CPU quota of the parameter server process (default 0.2)")
    p.add_argument("--slot", type=float, default=2.0, help="seconds of training per trace slot (default 2)")
    p.add_argument("--duration", type=float, default=15.0, help="seconds of training per method (default 15)")
    p.add_argument("--batch", type=int, default=32, help="samples per worker per step (default 32)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--R", type=int, default=16,
                   help="server versions between CGP's regrouping decisions (BSP: steps per phase)")
    p.add_argument("--s-max", type=int, default=8, help="staleness bound of cgp and ssp (default 8)")
    p.add_argument("--damping", default="excess", choices=("excess", "none", "inverse", "sqrt"))
    p.add_argument("--accumulate", type=int, default=CGPConfig.accumulate, metavar="N",
                   help="cgp: a group the staleness gate holds computes up to N more batches on its weights, "
                        f"added to the held update, instead of waiting (0: it waits; default {CGPConfig.accumulate})")
    p.add_argument("--target", type=float, default=0.9, help="target test accuracy (default 0.9)")
    p.add_argument("--snapshot", type=float, default=None,
                   help="seconds of training between the model's test-accuracy snapshots, the resolution of a time "
                        "to the target (default: 0.1 s, longer for a model above 100k parameters, up to 0.5 s from "
                        "500k: the model holder writes at most 4 MB of weights per second)")
    add_run_options(p, "nn.Module", "worker", "0.25,0.25,0.2,0.1")
    add_result_file_options(p)


def run(args: argparse.Namespace) -> int:
    exit_on_sigterm()
    try:
        require("--target", args.target, 0 < args.target <= 1, "a test accuracy in (0, 1]")
        check_result_files(args.json, args.plot)  # before the run, not after it
        opts = run_options_from(args)
        base = CGPConfig(workers=len(opts["base_quotas"]), ps_quota=args.ps_quota, slot_s=args.slot,
                         duration_s=args.duration, local_batch=args.batch, lr=args.lr, R=args.R,
                         s_max=args.s_max, damping=args.damping, snapshot_s=args.snapshot,
                         balance=args.balance, accumulate=args.accumulate, **opts)
        methods = list(dict.fromkeys(m for x in (args.method or ["all"]) for m in (MODES if x == "all" else (x,))))
        plans = {m: replace(base, mode=m) for m in methods}
        if args.ablation and "cgp" not in plans:  # each variant is compared with cgp itself
            print("note: --ablation compares CGP's variants with cgp, so cgp runs too", file=sys.stderr)
            plans = {"cgp": replace(base, mode="cgp"), **plans}
        if args.ablation:
            plans.update(ablation_configs(base))
        # the data function is called once, for all the methods: until 2026-11-28 once per method,
        # so a split without a seed gave each method a split of its own (accuracies not comparable)
        data = args.data if args.data == "digits" else digits.dataset_from(args.data, base.seed)
        runs = {}
        for name, cfg in plans.items():
            print(f"{name}: {cfg.duration_s:g} s of training ...", flush=True)
            log = os.path.join(args.log_dir, name) if args.log_dir else None
            try:
                runs[name] = train_cgp(args.model, data, cfg, target_acc=args.target, log_dir=log)
            except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM (exit 143)
                keep_finished(runs, name, list(plans), args)
                raise
            except RuntimeError as e:  # a rank exited or hung: the methods before it are kept
                e.failed_method = (runs, name, list(plans))
                raise
    except (ValueError, RuntimeError, OSError) as e:
        print(f"saatp train cgp: {e}", file=sys.stderr)
        if getattr(e, "failed_method", None):
            keep_failed(*e.failed_method, args, e)
        return 2
    cmp = compare(runs, args.target)
    w = max(15, *(len(n) for n in runs))  # the ablation's names are longer than the methods'
    print(f"{'method':{w}s} {'final acc':>9s} {'at':>7s} {'best acc':>9s} {'t->' + str(args.target):>8s} "
          f"{'samples/s':>10s} {'batch ms':>9s} {'max stale':>17s}")
    for name, r in runs.items():
        tt = r["time_to_target_s"]
        stale = "n/a (synchronous)" if r["max_staleness"] is None else str(r["max_staleness"])
        print(f"{name:{w}s} {r['final_acc']:9.3f} {r['final_t_s']:6.1f}s {r['best_acc']:9.3f} "
              f"{'-' if tt is None else f'{tt:.2f} s':>8s} {r.get('samples_per_s', 0):10.0f} "
              f"{r.get('batch_time_s', float('nan')) * 1e3:9.1f} {stale:>17s}")
    for name, r in runs.items():  # an accuracy at chance is all the table shows of it
        if r.get("diverged_t_s") is not None:
            print(f"warning: {name}: training diverged: the weights held NaN or infinite values from "
                  f"{r['diverged_t_s']:.1f} s (a smaller --lr?)", file=sys.stderr)
    snap = next(iter(runs.values())).get("config", {}).get("snapshot_s")  # the interval the runs used
    print(f"(final acc: at the end of training; a time to {args.target} is the first snapshot at or above it"
          + (f", snapshots every {snap:.3g} s)" if snap else ")"))
    for name, c in cmp.items():
        print(f"cgp vs {name}: time to target {time_ratio(c)}, final accuracy {c['acc_diff_pp']:+.1f} pp")
    res = dict(runs=runs, target_acc=args.target, comparison=cmp)
    if "cgp" in runs:
        res["cgp_ungrouped"] = ran_ungrouped(runs["cgp"])
        if res["cgp_ungrouped"]:
            print(UNGROUPED_NOTE)
    try:
        write_result_files(res, args.json, args.plot, plot_cgp)
    except OSError as e:  # checked before the run, so rare: a full disk, a file removed meanwhile
        print(f"saatp train cgp: {e}", file=sys.stderr)
        return 2
    return 0
