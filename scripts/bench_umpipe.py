#!/usr/bin/env python3
"""UMPIPE benchmarks: every number in docs/scheduling-umpipe.md comes from this script.

    .venv/bin/python scripts/bench_umpipe.py            # all parts (a few minutes on one core)
    .venv/bin/python scripts/bench_umpipe.py --quick    # smaller populations / instance sets
    .venv/bin/python scripts/bench_umpipe.py --part tidgap --json out.json

Parts:
  tidgap     TiDGAP (vectorised) evaluator vs the scalar per-individual loop: time per
             population, ratio, and the largest difference between the two.
  ga         the whole DGAP run with each evaluator (same seed, same search).
  scenarios  UMPIPE vs GPipe / PipeDream-Flush / greedy baselines on every named scenario,
             next to the paper's headline speed-ups.
  seeds      spread of DGAP's result over seeds.
  random     50 random heterogeneous instances (S in {4, 8}, B in {64, 128, 256}): how often
             and by how much DGAP beats each baseline, and dual vs single chromosome.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from host_agent.scheduling import costmodel as CM  # noqa: E402
from host_agent.scheduling.result_files import write_json  # noqa: E402
from host_agent.scheduling.umpipe import baselines as bl  # noqa: E402
from host_agent.scheduling.umpipe.cli import compare  # noqa: E402
from host_agent.scheduling.umpipe.dgap import DGAP, _random_row  # noqa: E402
from host_agent.scheduling.umpipe.scenarios import SCENARIOS, random_instance, scenario  # noqa: E402


def _best_of(fn, reps: int) -> float:
    """Best CPU time (process_time: other processes on a shared machine do not count)."""
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def part_tidgap(quick: bool) -> list[dict]:
    print("\n== TiDGAP evaluator vs scalar loop (CPU time, best of 5 runs) ==")
    print(f"{'S':>3} {'Mmax':>5} {'P':>6} {'vector ms':>10} {'scalar ms':>10} {'speed-up':>9} {'max |diff|':>11}")
    rows = []
    rng = np.random.default_rng(0)
    for S, mm, P in [(4, 32, 32), (4, 32, 128), (4, 32, 256), (4, 32, 1024), (8, 32, 256), (8, 16, 256), (4, 8, 256)]:
        if quick and P > 256:
            continue
        c = random_instance(1, S=S, B=128)
        X = np.stack([np.stack([_random_row(rng, 128, 128, mm) for _ in range(S)]) for _ in range(P)])
        Y = np.stack([np.stack([_random_row(rng, 128, 128, mm) for _ in range(S)]) for _ in range(P)])
        CM.makespan(c, X, Y)
        tv = _best_of(lambda: CM.makespan(c, X, Y), 5)
        ts = _best_of(lambda: [CM.makespan_scalar(c, X[i], Y[i]) for i in range(P)], 5)
        v = CM.makespan(c, X, Y)
        s = np.array([CM.makespan_scalar(c, X[i], Y[i]) for i in range(P)])
        r = dict(S=S, mmax=mm, P=P, vector_ms=tv * 1e3, scalar_ms=ts * 1e3, speedup=ts / tv,
                 max_abs_diff=float(np.abs(v - s).max()))
        rows.append(r)
        print(f"{S:>3} {mm:>5} {P:>6} {tv * 1e3:>10.2f} {ts * 1e3:>10.2f} {ts / tv:>8.1f}x {r['max_abs_diff']:>11.2e}")
    return rows


def part_ga(quick: bool) -> dict:
    print("\n== whole DGAP run: TiDGAP vs scalar evaluator (gpt1-14, pop 128) ==")
    c = scenario("gpt1-14").costs()
    gens = 20 if quick else 50
    a = DGAP(pop=128, gens=gens, seed=0).run(c)
    b = DGAP(pop=128, gens=gens, seed=0, evaluator="scalar").run(c)
    r = dict(gens=gens, vector_s=a.cpu_seconds, scalar_s=b.cpu_seconds, vector_eval_s=a.eval_seconds,
             scalar_eval_s=b.eval_seconds, speedup_total=b.cpu_seconds / a.cpu_seconds,
             speedup_eval=b.eval_seconds / a.eval_seconds, same_result=abs(a.makespan - b.makespan) <= 1e-9 * a.makespan)
    print(f"{gens} generations (CPU time): TiDGAP {a.cpu_seconds:.2f} s (evaluation {a.eval_seconds:.2f} s), "
          f"scalar {b.cpu_seconds:.2f} s (evaluation {b.eval_seconds:.2f} s): total x{r['speedup_total']:.1f}, "
          f"evaluation x{r['speedup_eval']:.1f}; same best makespan: {r['same_result']}")
    return r


def part_scenarios(quick: bool) -> list[dict]:
    size = "pop 64 x 100" if quick else "pop 128 x 300"
    print(f"\n== scenarios: UMPIPE speed-up over each baseline (base/UMPIPE - 1), seed 0, {size} ==")
    hdr = (f"{'scenario':16s} {'UMPIPE ms':>10} {'GPipe M4':>9} {'GPipe best':>10} {'1F1B M4':>9} {'1F1B best':>10} "
           f"{'local gr.':>10} {'global DP':>10} {'async PD':>9} {'DGAP s':>7}  paper (GPipe, PipeDream)")
    print(hdr)
    rows = []
    for name in SCENARIOS:
        out = compare(name, seed=0, pop=64 if quick else 128, gens=100 if quick else 300)
        res = {r["method"]: r for r in out["results"]}

        def sp(prefix):
            r = next((v for k, v in res.items() if k.startswith(prefix)), None)
            return None if r is None else r["speedup_pct"]

        row = dict(scenario=name, umpipe_ms=out["umpipe"]["makespan"] * 1e3, gpipe_m4=sp("GPipe (M=4)"),
                   gpipe_best=sp("GPipe (best"), flush_m4=sp("PipeDream-Flush 1F1B (M=4)"),
                   flush_best=sp("PipeDream-Flush 1F1B (best"), local=sp("Local greedy"), global_dp=sp("Global greedy"),
                   pipedream_async=sp("PipeDream async"), dgap_s=out["umpipe"]["seconds"],
                   plan=out["results"][0]["plan"], paper=out["paper"])
        rows.append(row)
        f = lambda v: f"{v:+9.2f}%" if v is not None else f"{'-':>10}"
        paper = f"({out['paper']['vs_gpipe']:+.2f}%, {out['paper']['vs_pipedream']:+.2f}%)" if out["paper"] else ""
        print(f"{name:16s} {row['umpipe_ms']:>10.2f} {f(row['gpipe_m4'])}{f(row['gpipe_best'])} {f(row['flush_m4'])}"
              f"{f(row['flush_best'])} {f(row['local'])}{f(row['global_dp'])}{f(row['pipedream_async'])} "
              f"{row['dgap_s']:>6.1f}  {paper}")
    return rows


def part_seeds(quick: bool) -> list[dict]:
    size = "pop 64 x 100" if quick else "pop 128 x 300"
    print(f"\n== spread over seeds (as `saatp plan umpipe`: {size}, greedy plans seeded) ==")
    rows = []
    for name in ("gpt1-14", "vgg16", "resnet50", "toy"):
        outs = [compare(name, seed=s, pop=64 if quick else 128, gens=100 if quick else 300)
                for s in range(3 if quick else 5)]
        ms = [o["umpipe"]["makespan"] for o in outs]
        g = [o["headline"]["vs_gpipe_best"] for o in outs]
        p = [o["headline"]["vs_pipedream_flush_best"] for o in outs]
        r = dict(scenario=name, makespans_ms=[m * 1e3 for m in ms], vs_gpipe_best=g, vs_flush_best=p)
        rows.append(r)
        print(f"{name:10s} UMPIPE ms min {min(ms) * 1e3:.2f} mean {np.mean(ms) * 1e3:.2f} max {max(ms) * 1e3:.2f}; "
              f"vs GPipe best {min(g):+.2f}% .. {max(g):+.2f}%; vs PipeDream-Flush best {min(p):+.2f}% .. {max(p):+.2f}%")
    return rows


def part_random(quick: bool) -> dict:
    n = 20 if quick else 50
    print(f"\n== {n} random heterogeneous instances (S in {{4, 8}}, B in {{64, 128, 256}}; DGAP pop 64 x 100) ==")
    rows = []
    for i in range(n):
        S, B = [4, 8][i % 2], [64, 128, 256][i % 3]
        c = random_instance(i, S, B)
        d = DGAP(pop=64, gens=100, seed=0, mmax=32).run(c).makespan
        single = DGAP(pop=64, gens=100, seed=0, mmax=32, dual=False).run(c).makespan
        rows.append(dict(dgap=d, single=single, local=bl.local_greedy(c, 32).makespan,
                         global_dp=bl.global_greedy_dp(c, 32).makespan, gpipe_best=bl.gpipe_best(c, 32).makespan,
                         gpipe_m4=bl.gpipe(c, 4).makespan, flush_best=bl.pipedream_flush_best(c, 32).makespan))
    d = np.array([r["dgap"] for r in rows])
    out = {}
    print(f"{'baseline':24s} {'DGAP <= base':>13} {'mean speed-up':>14} {'min':>9} {'max':>9}")
    for k, label in [("gpipe_m4", "GPipe M=4"), ("gpipe_best", "GPipe best M"), ("local", "local greedy"),
                     ("global_dp", "global greedy DP"), ("flush_best", "PipeDream-Flush best M"),
                     ("single", "single chromosome")]:
        b = np.array([r[k] for r in rows])
        sp = (b / d - 1) * 100
        out[k] = dict(frac_dgap_le=float(np.mean(d <= b * (1 + 1e-12))), mean_pct=float(sp.mean()),
                      min_pct=float(sp.min()), max_pct=float(sp.max()))
        print(f"{label:24s} {out[k]['frac_dgap_le'] * 100:>12.0f}% {sp.mean():>+13.2f}% {sp.min():>+8.2f}% {sp.max():>+8.2f}%")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", action="append", choices=["tidgap", "ga", "scenarios", "seeds", "random"])
    ap.add_argument("--json", metavar="OUT")
    a = ap.parse_args()
    parts = a.part or ["tidgap", "ga", "scenarios", "seeds", "random"]
    fns = dict(tidgap=part_tidgap, ga=part_ga, scenarios=part_scenarios, seeds=part_seeds, random=part_random)
    t0 = time.perf_counter()
    res = {p: fns[p](a.quick) for p in parts}
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    if a.json:
        write_json(a.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
