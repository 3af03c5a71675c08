#!/usr/bin/env python3
"""Pipelines that run: UMPIPE vs GPipe / 1F1B / torch's schedules (each at its best M), measured.

For every scenario (4 stage processes with unequal CPU quotas summing to about one CPU, two
model families) this runs the commands a user would:

    saatp profile --model M --stages 4 --quota Q --slow S:Q ... --batch B --out prof.json
    saatp train pipeline --model M --stages 4 --quota Q --slow S:Q ... --profile prof.json \\
        --schedule all --batch B --candidates 3 --tune-steps 5 --steps 15 --json train.json

``saatp train pipeline`` gives every method the same budget: its 3 best candidates by the
cost model are measured (5 iterations each, interleaved), the best measured one of each method
is measured again in a fresh session (15 interleaved iterations, each right after an untimed
one of the same schedule, the order rotating), and those are the reported figures: median and
quartiles, the calibrated model's prediction and its error, and UMPIPE against the best
baseline (also per step, paired). ``--repeat R`` measures each scenario R times (fresh
sessions) to show the session-to-session spread. Every scenario is reported, including those
UMPIPE loses. The host's load average is recorded before and after.

    .venv/bin/python scripts/bench_pipeline.py [--only NAME ...] [--repeat 2] [--out results/pipeline]
    .venv/bin/python scripts/bench_pipeline.py --first-session 1      # one more session, same profiles
    .venv/bin/python scripts/bench_pipeline.py --plan-only            # profile + plan: predicted gains only
    .venv/bin/python scripts/bench_pipeline.py --model-only 30        # plan family vs baselines, analytic model
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# name: (model, B, per-stage CPU quotas)
SCENARIOS = {
    "gpt-slow1": ("gpt-mini", 32, [0.3, 0.15, 0.3, 0.3]),
    "gpt-mixed": ("gpt-mini", 32, [0.4, 0.2, 0.3, 0.15]),
    "gpt-pairs-64": ("gpt-mini", 64, [0.35, 0.35, 0.15, 0.15]),
    "gpt-slow0-64": ("gpt-mini", 64, [0.15, 0.3, 0.3, 0.3]),
    "vgg-slow1": ("vgg-mini", 32, [0.3, 0.15, 0.3, 0.3]),
    "vgg-mixed": ("vgg-mini", 32, [0.4, 0.2, 0.3, 0.15]),
    "vgg-pairs": ("vgg-mini", 32, [0.15, 0.15, 0.35, 0.35]),
    "vgg-slow1-64": ("vgg-mini", 64, [0.3, 0.15, 0.3, 0.3]),
}
TRAIN = ["--schedule", "all", "--candidates", "3", "--tune-steps", "5", "--steps", "15"]


def _quota_args(quotas: list[float]) -> list[str]:
    base = max(set(quotas), key=quotas.count)
    return ["--quota", f"{base:g}", *sum((["--slow", f"{s}:{q:g}"] for s, q in enumerate(quotas) if q != base), [])]


def _saatp(args: list[str]) -> None:
    cmd = [sys.executable, "-m", "emulation.cli", *args]
    print("$ saatp " + " ".join(args), flush=True)
    r = subprocess.run(cmd)
    if r.returncode:
        raise SystemExit(f"command failed ({r.returncode}): {' '.join(cmd)}")


def profile(name: str, out: str) -> tuple[str, list[str]]:
    model, B, quotas = SCENARIOS[name]
    common = ["--model", model, "--stages", str(len(quotas)), *_quota_args(quotas)]
    prof = os.path.join(out, f"{name}.profile.json")
    if not os.path.exists(prof):
        _saatp(["profile", *common, "--batch", str(B), "--out", prof])
    return prof, common


def run_scenario(name: str, out: str, repeat: int, train_args: list[str], first: int = 0) -> list[dict]:
    model, B, quotas = SCENARIOS[name]
    t0 = time.time()
    prof, common = profile(name, out)
    res = []
    for i in range(first, first + repeat):
        train = os.path.join(out, f"{name}.train{i}.json")
        _saatp(["train", "pipeline", *common, "--profile", prof, *train_args, "--batch", str(B), "--json", train])
        with open(train) as f:
            r = json.load(f)
        r.update(scenario=name, session=i, wall_s=time.time() - t0,
                 command="saatp train pipeline " + " ".join([*common, "--profile", prof, *train_args, "--batch", str(B)]))
        res.append(r)
    return res


def _errors(r: dict) -> list[float]:
    return [x["error_pct"] for part in (r.get("tuning"), r["summary"]) if part for x in part["runs"]]


def table(results: list[dict]) -> str:
    """One markdown row per scenario session: each method's measured median (q1-q3) at its
    best measured M, UMPIPE vs the best baseline, the model's errors, the load."""
    head = ("| scenario (quotas, B) | UMPIPE plan | UMPIPE | GPipe | 1F1B | torch GPipe | torch 1F1B | "
            "UMPIPE vs best (paired, steps won) | model error: final runs / all runs within 15% | load |")
    lines = [head, "|" + "---|" * 10]
    for r in results:
        best = r["summary"]["best_by_schedule"]

        def cell(k):
            if k not in best:
                return "-"
            b = best[k]
            sp = b["spread"]
            m = f" M={b['M']}" if b.get("M") else ""
            return (f"{b['measured_s'] * 1e3:.0f} ({sp['q1_s'] * 1e3:.0f}-{sp['q3_s'] * 1e3:.0f}){m}, "
                    f"pred {b['predicted_s'] * 1e3:.0f} ({b['error_pct']:+.0f}%)")

        u = best.get("umpipe", {})
        plan = "equal split" if u.get("equal") else " / ".join(",".join(map(str, x)) for x in (u.get("rows") or []))
        v = r["summary"].get("umpipe_vs_best_baseline") or {}
        if v.get("same_configuration"):
            plan += f" (= {v['baseline']}: measured once)"
        errs = _errors(r)
        fin = [abs(x["error_pct"]) for x in r["summary"]["runs"]]
        la = r["load_average"]
        lines.append(
            f"| {r['scenario']} #{r['session'] + 1} ({'/'.join(f'{q:g}' for q in r['quotas'])}, B={r['B']}) | {plan} | "
            f"{cell('umpipe')} | {cell('gpipe')} | {cell('1f1b')} | {cell('torch-gpipe')} | {cell('torch-1f1b')} | "
            f"{v.get('speedup_pct', float('nan')):+.1f}% vs {v.get('baseline', '?')} "
            f"({v.get('paired_median_pct', float('nan')):+.1f}%, {v.get('steps_won', 0)}/{v.get('steps', 0)}) | "
            f"max {max(fin):.0f}% / {sum(abs(e) <= 15 for e in errs)} of {len(errs)} | "
            f"{la['before_1_5_15'][0]:.1f}-{la['after_1_5_15'][0]:.1f} |")
    return "\n".join(lines)


def plan_only(names: list[str], out: str) -> None:
    """Profile (with calibration) and plan each scenario; print the model's gain of UMPIPE
    over the best of GPipe / 1F1B (best M) -- no measurement of the plans."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from host_agent.scheduling.profile import costs as pc
    from host_agent.scheduling.umpipe import family

    for name in names:
        model, B, quotas = SCENARIOS[name]
        prof, _ = profile(name, out)
        c = pc.build(pc.load(prof), B, quotas)
        fam = family.plan(c, mmax=16, dual_check=False)
        base = min(fam.gpipe_best.predicted_s, fam.f1b_best.predicted_s)
        b = fam.best
        cal = pc.load(prof).get("calibration", {})
        print(f"{name}: cuts {c.info['cuts']}, GPipe {fam.gpipe_best.method} {fam.gpipe_best.predicted_s * 1e3:.0f} ms, "
              f"1F1B {fam.f1b_best.method} {fam.f1b_best.predicted_s * 1e3:.0f} ms, UMPIPE {b.method} "
              f"{b.predicted_s * 1e3:.0f} ms ({(base / b.predicted_s - 1) * 100:+.1f}%) {b.describe()}; "
              f"calibration rms {cal.get('rms_rel_err', float('nan')) * 100:.1f}%, max {cal.get('max_abs_rel_err', float('nan')) * 100:.1f}%",
              flush=True)


def model_only(n: int) -> None:
    """The plan family on random instances of the analytic model (no processes): how often
    the best unequal plan of either order family beats the best of GPipe / 1F1B (best M)."""
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from host_agent.scheduling.umpipe import family
    from host_agent.scheduling.umpipe.scenarios import random_instance

    gains, fd_vs_1f1b = [], []
    for i in range(n):
        c = random_instance(i, 4, 64)
        f = family.plan(c, mmax=16, pop=48, gens=40, evals=800, dual_check=False, seed=0)
        base = min(f.gpipe_best.predicted_s, f.f1b_best.predicted_s)
        gains.append(base / f.best.predicted_s - 1)
        fd_vs_1f1b.append(f.fill_drain.predicted_s <= f.f1b_best.predicted_s * (1 + 1e-12))
    g = np.array(gains) * 100
    print(f"{n} random 4-stage instances (B=64): plan family strictly better than the best of GPipe/1F1B "
          f"(best M) on {(g > 1e-7).sum()}/{n}, never worse; gain mean {g.mean():.2f}%, median "
          f"{np.median(g):.2f}%, max {g.max():.2f}%. Fill-drain UMPIPE alone <= 1F1B (best M) on "
          f"{sum(fd_vs_1f1b)}/{n}.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="results/pipeline")
    ap.add_argument("--only", action="append", choices=list(SCENARIOS))
    ap.add_argument("--repeat", type=int, default=1, help="measured sessions per scenario (default 1)")
    ap.add_argument("--first-session", type=int, default=0, metavar="N",
                    help="number the sessions from N (more sessions on the profiles already in --out)")
    ap.add_argument("--quick", action="store_true", help="2 candidates, 3 tuning and 8 final iterations")
    ap.add_argument("--plan-only", action="store_true", help="profile and plan only: the model's predicted gains")
    ap.add_argument("--model-only", type=int, metavar="N", help="only the cost-model check on N random instances")
    a = ap.parse_args()
    if a.model_only:
        model_only(a.model_only)
        return 0
    os.makedirs(a.out, exist_ok=True)
    names = a.only or list(SCENARIOS)
    if a.plan_only:
        plan_only(names, a.out)
        return 0
    train_args = TRAIN if not a.quick else ["--schedule", "all", "--candidates", "2", "--tune-steps", "3",
                                            "--steps", "8"]
    results = []
    for name in names:
        results += run_scenario(name, a.out, a.repeat, train_args, a.first_session)
        print(table(results[-a.repeat:]), flush=True)
    print("\n" + table(results))
    with open(os.path.join(a.out, f"summary{a.first_session or ''}.json"), "w") as f:
        json.dump([dict(scenario=r["scenario"], session=r["session"], quotas=r["quotas"], cuts=r["cuts"],
                        model=r["model"], B=r["B"], command=r["command"], load_average=r["load_average"],
                        best_by_schedule=r["summary"]["best_by_schedule"],
                        umpipe_vs_best_baseline=r["summary"].get("umpipe_vs_best_baseline"),
                        tuning=[dict(label=x["label"], measured_s=x["measured_s"], predicted_s=x["predicted_s"],
                                     error_pct=x["error_pct"]) for x in (r.get("tuning") or {}).get("runs", [])],
                        final=[dict(label=x["label"], measured_s=x["measured_s"], spread=x["spread"],
                                    predicted_s=x["predicted_s"], error_pct=x["error_pct"])
                               for x in r["summary"]["runs"]],
                        machine=r.get("machine")) for r in results], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
