"""``saatp plan umpipe``: plan unequal microbatches with DGAP/TiDGAP for a named scenario and
compare with GPipe, PipeDream(-Flush), local greedy and global greedy DP.

``compare(...)`` does the work and returns a JSON-able dict (also used by
``scripts/bench_umpipe.py``); ``add_arguments`` / ``run`` are the CLI hook.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from ..costmodel import PipelineCosts, simulate
from ..result_files import check_result_files, plot_file, write_json
from . import baselines as bl
from . import family
from .dgap import DGAP
from .scenarios import DEFAULT_SCENARIO, SCENARIOS, scenario


def _speedup(base: float, ours: float) -> float:
    """Speed-up of ours over base in percent: base/ours - 1 (the paper's convention)."""
    return (base / ours - 1.0) * 100.0


def compare(name: str = DEFAULT_SCENARIO, seed: int = 0, pop: int = 128, gens: int = 300,
            patience: int | None = None, mmax: int | None = None, dual: bool = True,
            costs: PipelineCosts | None = None, seed_baselines: bool = True) -> dict:
    sc = scenario(name)
    c = costs or sc.costs()
    mm = int(sc.mmax if mmax is None else mmax)
    lg, gd = bl.local_greedy(c, mm), bl.global_greedy_dp(c, mm)
    t0 = time.perf_counter()
    # the greedy plans join the initial population (with every equal partition), so
    # UMPIPE is never worse than GPipe (any M), local greedy or global greedy DP
    seeds = [(lg.X, lg.Y), (gd.X, gd.Y)] if seed_baselines else []
    res = DGAP(pop=pop, gens=gens, patience=patience, mmax=mm, dual=dual, seed=seed).run(c, seeds=seeds)
    t_dgap = time.perf_counter() - t0
    base = [bl.gpipe(c, 4) if 4 in bl.feasible_counts(c, mm) else None, bl.gpipe_best(c, mm),
            bl.pipedream_flush(c, 4) if 4 in bl.feasible_counts(c, mm) else None, bl.pipedream_flush_best(c, mm),
            lg, gd, bl.pipedream_async(c, mm)]
    base = [b for b in base if b is not None]
    ours = res.makespan
    xr, yr = res.rows()
    rows = [dict(method="UMPIPE (DGAP/TiDGAP)", makespan=ours, speedup_pct=0.0,
                 plan=bl.describe_counts(res.X, res.Y))]
    for b in base:
        rows.append(dict(method=b.name, makespan=b.makespan, speedup_pct=_speedup(b.makespan, ours),
                         plan=b.describe(), sync=not b.name.startswith("PipeDream async")))
    by = {r["method"]: r for r in rows}
    g_best = next(r for r in rows if r["method"].startswith("GPipe (best"))
    p_best = next(r for r in rows if r["method"].startswith("PipeDream-Flush 1F1B (best"))
    g4 = by.get("GPipe (M=4)")
    p4 = by.get("PipeDream-Flush 1F1B (M=4)")
    headline = dict(vs_gpipe_best=g_best["speedup_pct"], vs_pipedream_flush_best=p_best["speedup_pct"],
                    vs_gpipe_m4=g4["speedup_pct"] if g4 else None,
                    vs_pipedream_flush_m4=p4["speedup_pct"] if p4 else None)
    return dict(scenario=sc.name, description=sc.description, seed=seed, pop=pop, gens=gens, mmax=mm,
                dual=dual, seeded_with_baselines=seed_baselines, B=c.B, stages=c.describe(), partition=dict((k, v) for k, v in c.info.items()
                                                                   if k in ("workload", "cuts", "devices", "order")),
                umpipe=dict(makespan=ours, X=xr, Y=yr, generations=res.generations, evaluations=res.evaluations,
                            seconds=t_dgap, eval_seconds=res.eval_seconds,
                            history=[float(h) for h in res.history]),
                results=rows, headline=headline,
                paper=dict(vs_gpipe=sc.paper[0], vs_pipedream=sc.paper[1]) if sc.paper else None,
                _costs=c, _result=res, _gpipe_best=bl.gpipe_best(c, mm))


def _print_table(out: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    t = Table(title=f"UMPIPE on {out['scenario']}: {out['description']}", title_justify="left")
    t.add_column("method")
    t.add_column("iteration time (ms)", justify="right")
    t.add_column("UMPIPE speed-up", justify="right")
    t.add_column("microbatches per stage")
    for r in out["results"]:
        sp = "-" if r["method"].startswith("UMPIPE") else f"{r['speedup_pct']:+.2f}%"
        name = r["method"] + ("" if r.get("sync", True) else " *")
        t.add_row(name, f"{r['makespan'] * 1e3:.2f}", sp, r["plan"])
    con.print(t)
    h = out["headline"]
    con.print("* asynchronous steady state (no flush, stale weights): not an iteration time; reported only.")
    msg = (f"UMPIPE speed-up vs GPipe: {h['vs_gpipe_best']:+.2f}% (best M)"
           + (f", {h['vs_gpipe_m4']:+.2f}% (M=4)" if h["vs_gpipe_m4"] is not None else "")
           + f"; vs PipeDream-Flush: {h['vs_pipedream_flush_best']:+.2f}% (best M)"
           + (f", {h['vs_pipedream_flush_m4']:+.2f}% (M=4)" if h["vs_pipedream_flush_m4"] is not None else ""))
    con.print(msg)
    if out["paper"]:
        con.print(f"paper (UMPIPE abstract): vs GPipe {out['paper']['vs_gpipe']:+.2f}%, "
                  f"vs PipeDream {out['paper']['vs_pipedream']:+.2f}%")
    u = out["umpipe"]
    con.print(f"DGAP: pop {out['pop']} x {u['generations']} generations, {u['evaluations']} evaluations in "
              f"{u['seconds']:.2f} s ({u['eval_seconds']:.2f} CPU s in the TiDGAP evaluator), seed {out['seed']}")


def plot_gantt(out: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    c: PipelineCosts = out["_costs"]
    res = out["_result"]
    gb = out["_gpipe_best"]
    plans = [(f"UMPIPE (DGAP): {res.makespan * 1e3:.1f} ms", simulate(c, res.X, res.Y)),
             (f"{gb.name}: {gb.makespan * 1e3:.1f} ms", simulate(c, gb.X, gb.Y))]
    fig, axes = plt.subplots(3, 1, figsize=(13, 2.0 + 1.1 * c.S * 2 + 2.2),
                             gridspec_kw=dict(height_ratios=[c.S, c.S, 2.2]))
    span = max(p[1].makespan for p in plans) * 1e3
    colors = {"F": "#4C72B0", "B": "#DD8452", "sendF": "#55A868", "sendB": "#C44E52", "tail": "#8172B2"}
    for ax, (title, tl) in zip(axes[:2], plans):
        for s, kind, j, a, b, size in tl.events:
            a, b = a * 1e3, b * 1e3
            if kind in ("F", "B", "tail"):
                y, h = c.S - 1 - s + 0.15, 0.6
            else:
                y, h = c.S - 1 - s - 0.05, 0.15
            ax.broken_barh([(a, b - a)], (y, h), facecolors=colors[kind], edgecolors="white", linewidth=0.4)
            if kind in ("F", "B") and (b - a) > span / 70:
                ax.text((a + b) / 2, y + h / 2, str(size), ha="center", va="center", fontsize=6, color="white")
        ax.set_yticks([c.S - 1 - s + 0.45 for s in range(c.S)])
        ax.set_yticklabels(c.names, fontsize=8)
        ax.set_xlim(0, span * 1.01)
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlabel("time (ms)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[0].legend(handles=[Patch(color=colors[k], label=l) for k, l in
                            [("F", "forward (size)"), ("B", "backward (size)"), ("sendF", "send activations"),
                             ("sendB", "send gradients"), ("tail", "sync + optimizer")]],
                   fontsize=7, loc="upper right", ncol=5)
    h = np.array(out["umpipe"]["history"]) * 1e3
    ax = axes[2]
    ax.plot(np.arange(len(h)), h, label="DGAP best")
    k = 1
    for r in out["results"][1:]:
        if r.get("sync", True) and (r["method"].startswith("GPipe") or r["method"].startswith("PipeDream")
                                    or r["method"].startswith("Global")):
            ax.axhline(r["makespan"] * 1e3, ls="--", lw=1.0, label=r["method"], color=f"C{k}")
            k += 1
    lo = min(h.min(), min(r["makespan"] for r in out["results"] if r.get("sync", True)) * 1e3)
    hi = max(r["makespan"] for r in out["results"][1:5]) * 1e3
    ax.set_ylim(lo * 0.98, hi * 1.02)
    ax.set_xlabel("generation", fontsize=8)
    ax.set_ylabel("iteration (ms)", fontsize=8)
    ax.set_title("DGAP convergence vs baselines", fontsize=10, loc="left")
    ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(f"UMPIPE on {out['scenario']}: {out['description']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def public(out: dict) -> dict:
    return {k: v for k, v in out.items() if not k.startswith("_")}


SCENARIO_SEARCH = (128, 300)  # DGAP's default population and generations on a named scenario
# ... and on a profile, where the plans are then searched further in the event simulation
# (family.plan). Until 2026-11-28 these were also caps: --pop 256 --gens 300 with --profile
# searched with 64 and 80 without a word.
PROFILE_SEARCH = (family.SEARCH_POP, family.SEARCH_GENS)  # what saatp train pipeline plans with too


def search_options(args: argparse.Namespace) -> tuple[int, int]:
    """DGAP's (population, generations): ``--pop``/``--gens`` or the defaults of the mode
    (:data:`SCENARIO_SEARCH`, :data:`PROFILE_SEARCH`); ValueError unless pop >= 4, gens >= 0."""
    default = PROFILE_SEARCH if getattr(args, "profile", None) else SCENARIO_SEARCH
    pop = default[0] if args.pop is None else args.pop
    gens = default[1] if args.gens is None else args.gens
    if pop < 4 or gens < 0:
        raise ValueError("--pop must be >= 4 and --gens >= 0")
    return pop, gens


def add_arguments(p: argparse.ArgumentParser) -> None:
    names = ", ".join(SCENARIOS)
    p.add_argument("--scenario", default=None, metavar="NAME",
                   help=f"scenario to plan (default {DEFAULT_SCENARIO}); one of: {names}")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--seed", type=int, default=0, help="GA seed (same seed, same plan)")
    p.add_argument("--pop", type=int, default=None,
                   help=f"DGAP population size (default {SCENARIO_SEARCH[0]}; with --profile {PROFILE_SEARCH[0]})")
    p.add_argument("--gens", type=int, default=None,
                   help=f"DGAP generations (default {SCENARIO_SEARCH[1]}; with --profile {PROFILE_SEARCH[1]})")
    p.add_argument("--patience", type=int, default=None, help="stop after this many generations without improvement")
    p.add_argument("--mmax", type=int, default=None, help="cap on microbatches per stage (default: the scenario's)")
    p.add_argument("--single", action="store_true", help="single chromosome ablation: backward retraces forward")
    p.add_argument("--no-seed-baselines", action="store_true",
                   help="do not put the greedy baselines' plans into DGAP's initial population")
    p.add_argument("--profile", metavar="FILE",
                   help="plan on a measured cost model (saatp profile) instead of a named scenario: both order "
                        "families (fill-drain, 1F1B), memory limits enforced")
    p.add_argument("--batch", type=int, default=None, help="with --profile: minibatch size (default: the profile's)")
    p.add_argument("--slow", action="append", default=None, metavar="STAGE:QUOTA",
                   help="with --profile: stage quotas to plan for (default: the profile's)")
    p.add_argument("--memory-limit", type=float, default=None, metavar="MB",
                   help="with --profile: per-stage memory limit; plans that do not fit are never returned")
    p.add_argument("--json", metavar="OUT", help="write the plan and the comparison as JSON")
    p.add_argument("--plot", metavar="OUT.png", help="write a Gantt chart of the UMPIPE and GPipe plans (with "
                   "--profile: of UMPIPE's plan and the best GPipe and 1F1B plans)")


def dual_line(d) -> str:
    """The dual/single-chromosome comparison (a ``family.DualCheck``) in two lines: DGAP's two
    plans predicted by the evaluator of the plans above, then DGAP's own (fluid) figures.
    Nothing is compared across the two models."""
    how = "the CFS budget simulation" if d.evaluator == "cfs-simulation" else "the cost model"
    return (f"dual chromosome (an independent backward plan; model only, the runtime cannot run it): DGAP's dual "
            f"plan {d.dual_s * 1e3:.1f} ms vs its single-chromosome plan {d.single_s * 1e3:.1f} ms "
            f"({_speedup(d.single_s, d.dual_s):+.1f}% for dual)\n"
            f"  same DGAP search for both (the dual run starts from the single plan); both predicted by {how} "
            f"like the plans above (whose local search on it goes further); on DGAP's own fluid recurrence "
            f"{d.fluid_dual_s * 1e3:.1f} vs {d.fluid_single_s * 1e3:.1f} ms")


def run_profile(args: argparse.Namespace) -> int:
    from ..pipeline.cgroups import check_settable, oversubscribed, stage_quotas
    from ..pipeline.torch_schedules import can_run
    from ..profile import costs as profile_costs
    from . import family

    try:
        for option, value in (("--batch", args.batch), ("--mmax", args.mmax)):  # 0 meant the default until 2026-11-28
            if value is not None and value < 1:
                raise ValueError(f"{option} {value}: expected a whole number >= 1")
        family.check_memory_limit(args.memory_limit)
        pop, gens = search_options(args)
        if args.patience is not None or args.no_seed_baselines:  # they were ignored (2026-11-28)
            raise ValueError("--patience and --no-seed-baselines shape DGAP's run on a named scenario; with "
                             "--profile the plan family searches on (see --pop, --gens)")
        prof = profile_costs.load(args.profile)  # its errors name the file
        try:
            quotas = list(prof["stage_quotas"])
            if args.slow:
                base = [q for q in quotas]
                quotas = stage_quotas(len(base), None, args.slow)
                quotas = [q if q is not None else b for q, b in zip(quotas, base)]
                # below 0.1 CPU no cgroup can run it (profile and train pipeline refuse it): until
                # 2026-11-28 plan umpipe planned for --slow 0:0.05 without a word
                check_settable(quotas)
            cal = prof.get("calibration") or {}
            B = args.batch or cal.get("B") or 64
            least = profile_costs.least_microbatch(prof, B)
            try:
                costs = profile_costs.build(prof, B, quotas,  # no stage that cannot fit the limit
                                            limit_bytes=args.memory_limit * 2**20 if args.memory_limit else None,
                                            mmax=args.mmax or 16)
            except ValueError as e:
                raise ValueError(f"{args.profile}: {e}") from None
        except (KeyError, TypeError, IndexError, AttributeError) as e:  # a field missing or of the wrong kind
            raise ValueError(f"{args.profile}: not a complete saatp profile ({type(e).__name__}: {e}); "
                             f"rerun saatp profile") from None
        mm = args.mmax or 16
        limit = [args.memory_limit * 2**20] * costs.S if args.memory_limit else None
        fam = family.plan(costs, mmax=mm, limit=limit, seed=args.seed, pop=pop, gens=gens,
                          dual_check=not args.single)
        torch_best = {sch: family.best_of(family.equal_candidates(
            costs, kind, [m for m in range(1, mm + 1) if can_run(sch, m, B, costs.S)], limit))
            for sch, kind in (("torch-gpipe", "fill-drain"), ("torch-1f1b", "1f1b"))}
    except (ValueError, OSError, KeyError) as e:
        print(f"saatp plan umpipe: {e}", file=sys.stderr)
        return 2
    print(f"{prof['model']} from {args.profile}: B={B}, cuts {costs.info['cuts']}, quotas {quotas}, "
          f"calibrated={costs.info['calibrated']}" + (f", memory limit {args.memory_limit:g} MB/stage" if limit else ""))
    # the note saatp profile and train pipeline print for these quotas: the predictions below are
    # too fast when the stages may use more CPUs than the host has (plan umpipe said nothing
    # until 2026-11-28)
    note = oversubscribed(quotas, how="--slow (or a profile taken at lower quotas) keeps")
    if note:
        print(note)
    if cal and not costs.info["calibrated"]:
        # train pipeline says this; plan umpipe printed "calibrated=False" alone until 2026-11-28
        # (a profile whose stage_quotas list was edited to another stage count)
        print(f"note: {args.profile} was calibrated on {len(cal.get('stages') or [])} stages split at "
              f"{cal.get('cuts')}, this plan has {costs.S} split at {costs.info['cuts']}: the predictions use the "
              f"layers' tight-loop times (uncalibrated, errors of tens of per cent)")
    print(f"{'plan':28s} {'predicted ms':>12s} {'peak MB':>9s} fits  microbatches per stage")
    # torch's schedules: M dividing B (1F1B: M >= S), predicted with our runtime's curves (the
    # profile's calibration checks them on two runs of torch's schedules)
    rows = [fam.best, fam.fill_drain, fam.one_f_one_b, fam.gpipe_best, fam.f1b_best, *torch_best.values()]
    names = ["UMPIPE (best of family)", "UMPIPE fill-drain", "UMPIPE 1F1B", "GPipe best M", "1F1B best M",
             "torch GPipe best M", "torch 1F1B best M"]
    for n, c in zip(names, rows):
        if c is None:
            # torch's schedules without a count they can run were "(nothing fits)" as if over a
            # memory limit (until 2026-11-28)
            why = ("nothing fits" if limit or not n.startswith("torch") else
                   f"no microbatch count torch can run: M dividing B={B}, at most --mmax {mm}"
                   + (f", at least the {costs.S} stages" if "1F1B" in n else "")
                   + (f", microbatches of at least {least} samples (the model's least)" if least > 1 else ""))
            print(f"{n:28s} {'-':>12s} {'-':>9s}  no   ({why})")
            continue
        mem = max(c.memory_bytes) / 2**20 if c.memory_bytes else float("nan")
        # below 1 MB three decimals: a small model's plans all read "0.0" MB (until 2026-11-28)
        print(f"{n:28s} {c.predicted_s * 1e3:12.1f} {mem:9.{1 if mem >= 1 else 3}f} {'yes' if c.fits else 'no ':4s} "
              f"{c.method}: {c.describe()}")
    if fam.best is None and limit:
        print(family.no_fit_message(costs, args.memory_limit, mm))
    if fam.dual is not None:
        print(dual_line(fam.dual))
    try:
        if args.json:
            write_json(args.json, dict(model=prof["model"], B=B, cuts=costs.info["cuts"], quotas=quotas,
                                       memory_limit_mb=args.memory_limit, mmax=mm, seed=args.seed, pop=pop,
                                       gens=gens, torch_best={k: None if c is None else c.public()
                                                              for k, c in torch_best.items()},
                                       **fam.public()))
            print(f"wrote {args.json}")
        if args.plot:
            png = plot_file(args.plot)
            if plot_family(costs, fam, png, f"{prof['model']} from {args.profile}, B={B}, quotas {quotas}"):
                print(f"wrote {png}")
            else:
                print(f"{args.plot}: not written (no plan fits)", file=sys.stderr)
    except OSError as e:
        print(f"saatp plan umpipe: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0 if fam.best is not None else 1


def _steady(costs: PipelineCosts, c, i: int, record: bool = False):
    """Candidate ``c``'s steady-state iteration at phase draw ``i`` of the CPU-quota stages'
    periods, as :func:`..orders.expected_makespan` simulates it (the second of two iterations
    a barrier apart; the prediction is the mean of these over draws)."""
    from .. import orders as od

    pl = od._Plan(costs, c.rows)
    gap = 2 * max(max(pl.cf[s][0] for s in range(pl.S)), 0.0)  # as in orders.expected_makespan
    bud = pl.bw.draw(i)
    first = od._run(pl, "", None, c.orders, False, bud).makespan
    return od._run(pl, "", None, c.orders, record, bud, offset=first + gap)


def _steady_iteration(costs: PipelineCosts, c, draws: int = 8):
    """(OrderResult with events, phase draw or None) of candidate ``c``: its iteration in the
    event simulation that predicts it (:mod:`..orders`); for CPU-quota stages, of the first
    ``draws`` phase draws, the one whose steady-state iteration is closest to the prediction."""
    from ..orders import CpuBandwidth, schedule

    if CpuBandwidth.of(costs) is None:
        return schedule(costs, c.rows, orders=c.orders, record=True), None
    i = min(range(draws), key=lambda i: abs(_steady(costs, c, i).makespan - c.predicted_s))
    return _steady(costs, c, i, record=True), i


def plot_family(costs: PipelineCosts, fam, path: str, title: str) -> bool:
    """Gantt charts of UMPIPE's plan and the best GPipe and 1F1B plans (``--profile --plot``),
    each op placed by the event simulation that predicts the plans (for CPU-quota stages a
    steady-state iteration at a representative phase draw, see :func:`_steady_iteration`).
    False (nothing written) when no plan fits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    plans = [(n, c) for n, c in (("UMPIPE", fam.best), ("GPipe, best M", fam.gpipe_best),
                                 ("1F1B, best M", fam.f1b_best)) if c is not None and c.fits]
    if not plans:
        return False
    sims = [_steady_iteration(costs, c) for _, c in plans]
    S = costs.S
    span = max(r.makespan for r, _ in sims) * 1e3
    colors = {"F": "#4C72B0", "B": "#DD8452", "sendF": "#55A868", "sendB": "#C44E52", "tail": "#8172B2"}
    fig, axes = plt.subplots(len(plans), 1, figsize=(13, 1.2 + 0.75 * S * len(plans)), squeeze=False)
    for ax, (name, c), (r, draw) in zip(axes[:, 0], plans, sims):
        last = [0.0] * S
        for s, kind, j, a, b, size in r.events:
            a, b = a * 1e3, b * 1e3
            if kind in ("F", "B"):
                y, h = S - 1 - s + 0.15, 0.6
                last[s] = max(last[s], b)
            else:
                y, h = S - 1 - s - 0.05, 0.15
            ax.broken_barh([(a, b - a)], (y, h), facecolors=colors[kind], edgecolors="white", linewidth=0.4)
            if kind in ("F", "B") and (b - a) > span / 70:
                ax.text((a + b) / 2, y + h / 2, str(size), ha="center", va="center", fontsize=6, color="white")
        for s in range(S):  # the stage's work after its last op (optimizer step, bookkeeping)
            if r.stage_end[s] * 1e3 > last[s]:
                ax.broken_barh([(last[s], r.stage_end[s] * 1e3 - last[s])], (S - 1 - s + 0.15, 0.6),
                               facecolors=colors["tail"], edgecolors="white", linewidth=0.4)
        ax.set_yticks([S - 1 - s + 0.45 for s in range(S)])
        ax.set_yticklabels([str(n) for n in costs.names], fontsize=8)
        ax.set_xlim(0, span * 1.01)
        shown = "" if draw is None else (f" (the mean over phase draws of the quota periods); shown: a steady-state "
                                         f"iteration at draw {draw}, {r.makespan * 1e3:.1f} ms")
        ax.set_title(f"{name}: {c.method}, predicted {c.predicted_s * 1e3:.1f} ms{shown}", fontsize=9, loc="left")
        ax.set_xlabel("time (ms)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    fig.legend(handles=[Patch(color=colors[k], label=l) for k, l in
                        [("F", "forward (size)"), ("B", "backward (size)"), ("sendF", "send activations"),
                         ("sendB", "send gradients"), ("tail", "after the last op (optimizer step, bookkeeping)")]],
               fontsize=7, loc="lower center", ncol=5)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return True


def run(args: argparse.Namespace) -> int:
    try:  # before planning: a missing directory was a traceback after it (2026-11-28)
        check_result_files(getattr(args, "json", None), getattr(args, "plot", None))
        from ..profile.costs import check_not_the_profile

        check_not_the_profile(getattr(args, "profile", None), json=getattr(args, "json", None),
                              plot=getattr(args, "plot", None))
    except ValueError as e:
        print(f"saatp plan umpipe: {e}", file=sys.stderr)
        return 2
    try:
        # the options of one source were ignored with the other until 2026-11-28: --profile with
        # --scenario vgg16 planned the profile, a named scenario with --batch 4 --slow 0:0.2
        # --memory-limit 1 planned the scenario's own B, devices and no limit, without a word
        if getattr(args, "profile", None) and getattr(args, "scenario", None) is not None:
            raise ValueError(f"--scenario {args.scenario} plans a named scenario, --profile {args.profile} a measured "
                             "model: give one of them")
        if not getattr(args, "profile", None):
            given = [o for o, v in (("--batch", getattr(args, "batch", None)), ("--slow", getattr(args, "slow", None)),
                                    ("--memory-limit", getattr(args, "memory_limit", None))) if v is not None]
            if given:
                raise ValueError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} with --profile only: a "
                                 "named scenario plans its own minibatch and devices, with no memory limit")
    except ValueError as e:
        print(f"saatp plan umpipe: {e}", file=sys.stderr)
        return 2
    if getattr(args, "profile", None):
        return run_profile(args)
    if args.scenario is None:
        args.scenario = DEFAULT_SCENARIO
    if getattr(args, "list", False):
        for sc in SCENARIOS.values():
            print(f"{sc.name:18s} {sc.description}")
        return 0
    try:
        pop, gens = search_options(args)
        if args.mmax is not None and args.mmax < 1:
            raise ValueError("--mmax must be >= 1")
        if args.patience is not None and args.patience < 1:
            raise ValueError("--patience must be >= 1")
        out = compare(args.scenario, seed=args.seed, pop=pop, gens=gens, patience=args.patience,
                      mmax=args.mmax, dual=not args.single, seed_baselines=not args.no_seed_baselines)
    except ValueError as e:
        print(f"saatp plan umpipe: {e}", file=sys.stderr)
        return 2
    _print_table(out)
    if args.json:
        write_json(args.json, public(out))
        print(f"wrote {args.json}")
    if args.plot:
        png = plot_file(args.plot)
        plot_gantt(out, png)
        print(f"wrote {png}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp plan umpipe", description=__doc__.split("\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
