"""``saatp train pipeline``: real pipeline training on one process per stage, each in its own
CPU-quota cgroup, with the measured iteration time next to the cost model's prediction.

    saatp train pipeline --model vgg-mini --stages 4 --slow 2:0.25 --schedule all --steps 5 --json out.json

Schedules: ``umpipe`` (the plan-family winner: unequal microbatches per stage, fill-drain or
1F1B order), ``gpipe`` / ``1f1b`` (our runtime, M equal microbatches), ``torch-gpipe`` /
``torch-1f1b`` (torch.distributed.pipelining's ScheduleGPipe / Schedule1F1B), or ``all``.
With ``--microbatches best`` (default) each baseline runs every candidate M (divisors of B up
to ``--mmax``, plus the cost model's best M) and reports its best *measured* M. All schedules
of one command run in the same processes on the same stage split, one after the other, each
from the same initial weights. The cost model comes from ``--profile FILE`` (``saatp profile``)
or, without it, from a profile measured first.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from ..costmodel import equal_sizes
from ..profile import cli as profile_cli
from ..profile import costs as profile_costs
from ..pipeline import cgroups, launch
from ..pipeline.models import load_model
from ..pipeline.torch_schedules import TORCH_SCHEDULES
from ..pipeline.worker import StageConfig
from ..umpipe import family

SCHEDULES = ("umpipe", "gpipe", "1f1b", "torch-gpipe", "torch-1f1b")


def _baseline_ms(B: int, mmax: int, model_best: int | None, divisors_only: bool) -> list[int]:
    ms = {m for m in range(1, min(B, mmax) + 1) if B % m == 0}
    if model_best and not divisors_only:
        ms.add(model_best)
    return sorted(ms)


def build_runs(costs, fam: family.PlanFamily, schedules: list[str], M: int | None, mmax: int,
               limit=None) -> list[dict]:
    """The runs of one session, each with the cost model's predicted time and memory."""
    B, S = costs.B, costs.S
    runs = []
    for sch in schedules:
        if sch == "umpipe":
            if fam.best is None:
                raise ValueError("no UMPIPE plan fits the memory limits")
            # the winner of each order family (the baselines get their best of several M too)
            for c in [x for x in (fam.fill_drain, fam.one_f_one_b) if x is not None and x.fits]:
                runs.append(dict(schedule="ours", label=f"umpipe {c.kind}", family="umpipe", rows=c.rows,
                                 orders=c.orders, predicted_s=c.predicted_s, peak_samples=c.peak_samples,
                                 memory_bytes=c.memory_bytes))
            continue
        kind = "fill-drain" if sch in ("gpipe", "torch-gpipe") else "1f1b"
        best = fam.gpipe_best if kind == "fill-drain" else fam.f1b_best
        ms = [M] if M else _baseline_ms(B, mmax, len(best.rows[0]) if best is not None else None,
                                        sch in TORCH_SCHEDULES)
        for m in ms:
            if sch in TORCH_SCHEDULES and B % m:
                raise ValueError(f"{sch}: M={m} must divide B={B}")
            if sch == "torch-1f1b" and m < S:
                if M:
                    raise ValueError(f"torch-1f1b needs M >= stages ({S}), got M={m}")
                continue  # torch's Schedule1F1B rejects fewer microbatches than stages
            rows = [equal_sizes(B, m)] * S
            cand = family.evaluate(costs, rows, kind, limit=limit)
            if not cand.fits:
                continue
            run = dict(label=f"{sch} M={m}", family=sch, M=m, predicted_s=cand.predicted_s,
                       peak_samples=cand.peak_samples, memory_bytes=cand.memory_bytes)
            if sch in TORCH_SCHEDULES:
                run["schedule"] = sch
            else:
                run.update(schedule="ours", rows=rows, orders=cand.orders)
            runs.append(run)
    return runs


def summarize(runs: list[dict], measured: list[dict]) -> dict:
    rows = []
    for r, m in zip(runs, measured):
        err = (r["predicted_s"] - m["median_s"]) / m["median_s"] * 100
        rows.append(dict(label=r["label"], family=r["family"], measured_s=m["median_s"], iterations_s=m["iteration_s"],
                         predicted_s=r["predicted_s"], error_pct=err, loss=m["losses"][-1] if m["losses"] else None,
                         rows=r.get("rows"), M=r.get("M")))
    best = {}
    for r in rows:
        f = r["family"]
        if f not in best or r["measured_s"] < best[f]["measured_s"]:
            best[f] = r
    out = dict(runs=rows, best_by_schedule={k: dict(label=v["label"], measured_s=v["measured_s"],
                                                     predicted_s=v["predicted_s"], error_pct=v["error_pct"])
                                            for k, v in best.items()})
    if "umpipe" in best and len(best) > 1:
        others = [v for k, v in best.items() if k != "umpipe"]
        b = min(others, key=lambda v: v["measured_s"])
        out["umpipe_vs_best_baseline"] = dict(baseline=b["label"], baseline_s=b["measured_s"],
                                              umpipe_s=best["umpipe"]["measured_s"],
                                              speedup_pct=(b["measured_s"] / best["umpipe"]["measured_s"] - 1) * 100)
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="vgg-mini", help="vgg-mini, gpt-mini or MODULE:FN (default vgg-mini)")
    p.add_argument("--stages", type=int, default=4)
    p.add_argument("--schedule", action="append", choices=SCHEDULES + ("all",), default=None,
                   help="repeatable; default umpipe")
    p.add_argument("--quota", default="auto",
                   help="CPUs per stage (cgroup v1 quota); 'auto' = 60%% of the cores / stages, 'none' = no cgroups")
    p.add_argument("--slow", action="append", default=[], metavar="STAGE:QUOTA",
                   help="give one stage a different CPU quota, e.g. 2:0.2 (repeatable)")
    p.add_argument("--batch", type=int, default=64, help="minibatch size B (default 64)")
    p.add_argument("--steps", type=int, default=5, help="timed iterations per schedule (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed iterations first (default 1)")
    p.add_argument("--microbatches", default="best", help="M for the baselines, or 'best' (measured sweep)")
    p.add_argument("--mmax", type=int, default=16, help="most microbatches per stage (default 16)")
    p.add_argument("--profile", metavar="FILE", help="profile from saatp profile (default: profile now)")
    p.add_argument("--cuts", help="layer cuts, comma-separated (default: chain DP on the profile)")
    p.add_argument("--memory-limit", type=float, metavar="MB", help="per-stage memory limit for plans")
    p.add_argument("--backend", default="gloo", help="torch.distributed backend (gloo or saatp)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", help="write everything as JSON")


def _print(out: dict) -> None:
    print(f"{out['model']}: {out['stages']} stages, B={out['B']}, cuts {out['cuts']}, CPU quotas "
          f"{['none' if q is None else q for q in out['quotas']]}")
    print(f"{'schedule':22s} {'measured ms':>12s} {'predicted ms':>13s} {'error':>7s}  microbatches")
    for r in out["summary"]["runs"]:
        mb = " | ".join(",".join(map(str, x)) for x in r["rows"]) if r["rows"] else f"{r['M']} equal"
        print(f"{r['label']:22s} {r['measured_s'] * 1e3:12.1f} {r['predicted_s'] * 1e3:13.1f} "
              f"{r['error_pct']:+6.1f}%  {mb}")
    v = out["summary"].get("umpipe_vs_best_baseline")
    if v:
        print(f"UMPIPE {v['umpipe_s'] * 1e3:.1f} ms vs best baseline {v['baseline']} {v['baseline_s'] * 1e3:.1f} ms: "
              f"{v['speedup_pct']:+.1f}%")


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run finally blocks: remove our cgroups
    try:
        load_model(args.model)
        quotas = cgroups.stage_quotas(args.stages, profile_cli.parse_quota(args.quota, args.stages), args.slow)
        schedules = list(dict.fromkeys(s for x in (args.schedule or ["umpipe"])
                                       for s in (SCHEDULES if x == "all" else (x,))))
        M = None if args.microbatches == "best" else int(args.microbatches)
        if args.steps < 1 or args.batch < 1 or args.mmax < 1:
            raise ValueError("--steps, --batch and --mmax must be >= 1")
        if args.profile:
            prof = profile_costs.load(args.profile)
            if prof["model"] != args.model:
                raise ValueError(f"{args.profile} profiles {prof['model']}, not {args.model}")
        else:
            prof = profile_cli.run_profile(args.model, quotas, B=args.batch)
        cuts = [int(c) for c in args.cuts.split(",")] if args.cuts else None
        costs = profile_costs.build(prof, args.batch, quotas, cuts)
        limit = [args.memory_limit * 2**20] * args.stages if args.memory_limit else None
        fam = family.plan(costs, mmax=args.mmax, limit=limit, seed=args.seed, dual_check=False)
        runs = build_runs(costs, fam, schedules, M, args.mmax, limit)
        if not runs:
            raise ValueError("no schedule fits the memory limits")
        cfg = StageConfig(model=args.model, cuts=costs.info["cuts"], B=args.batch, steps=args.steps,
                          warmup=args.warmup, schedule="ours", backend=args.backend, seed=args.seed,
                          runs=[{k: v for k, v in r.items() if k in ("schedule", "rows", "orders", "M", "label")}
                                for r in runs])
        print(f"running {len(runs)} schedule(s) x {args.warmup}+{args.steps} iterations ...", flush=True)
        res = launch.run(cfg, quotas=[q for q in quotas])
    except (ValueError, RuntimeError) as e:
        print(f"saatp train pipeline: {e}", file=sys.stderr)
        return 2
    out = dict(model=args.model, stages=args.stages, B=args.batch, quotas=quotas, cuts=costs.info["cuts"],
               backend=args.backend, steps=args.steps, warmup=args.warmup, machine=prof.get("machine"),
               profile=args.profile, plan=fam.public(), summary=summarize(runs, res["runs"]))
    _print(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp train pipeline", description=__doc__.split("\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
