"""``saatp experiment straggler``: SA-ATP against SwitchML-like, ATP-like and ring all-reduce.

For every protocol and straggler delay D (given in multiples of the threshold T_s) it runs
a few all-reduce iterations on the in-process harness (agents + the embedded switch
running ``p4src/saatp.p4``, on a virtual clock, switch modelled at ``--switch-pps``),
with worker ``--straggler`` starting each iteration D late.  Every iteration's sums are
checked against the exact sum of the quantized inputs.  Prints a table, and optionally
writes ``--json`` results and a ``--plot`` PNG (iteration time against D, per protocol).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from host_agent.constants import DEFAULT_K

from .harness import DEFAULT_PROGRAM, Impairments, Network, add_job, add_ring_job

PROTOCOLS = ("saatp", "switchml", "atp", "ring", "assist")
DEFAULT_PROTOCOLS = ("saatp", "switchml", "atp", "ring")
LABELS = {"saatp": "SA-ATP", "switchml": "SwitchML-like", "atp": "ATP-like", "ring": "ring",
          "assist": "SA-ATP+assist"}


@dataclass
class RunResult:
    protocol: str
    delay_ts: float
    delay_s: float
    iter_time_s: float                 # mean over iterations
    iter_times_s: list[float]
    exact: bool
    switch_packets_per_iter: float
    counters: dict = field(default_factory=dict)
    helper: dict = field(default_factory=dict)
    worker_bytes_tx: float = 0.0       # mean per worker per iteration
    wall_s: float = 0.0
    error: str | None = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=8, help="workers per job (default 8)")
    p.add_argument("--elements", type=int, default=32768,
                   help="gradient elements all-reduced per iteration (default 32768)")
    p.add_argument("--delays", default="0,1,5,20",
                   help="straggler delays in multiples of T_s (default 0,1,5,20)")
    p.add_argument("--t-s", type=float, default=0.05, help="straggler threshold T_s, s (0.05)")
    p.add_argument("--protocols", default=",".join(DEFAULT_PROTOCOLS),
                   help=f"comma-separated subset of {','.join(PROTOCOLS)} (assist = SA-ATP with "
                        f"compute assist, SA-ATP.md section 14; not in the default set)")
    p.add_argument("--compute", type=float, default=0.2,
                   help="assist only: a normal worker's compute time per iteration, s (0.2); "
                        "the straggler's is compute + D")
    p.add_argument("--iterations", type=int, default=2, help="iterations per point (2)")
    p.add_argument("--loss", type=float, default=0.0, help="per-packet loss probability")
    p.add_argument("--k", type=int, default=DEFAULT_K,
                   help=f"elements per packet (the program's K; {DEFAULT_K} = p4src/saatp.p4's)")
    p.add_argument("--pool", type=int, default=32, help="slots per set = window (32)")
    p.add_argument("--switch-pps", type=float, default=20000.0,
                   help="modelled switch rate, packets/s; 0 = infinitely fast (20000)")
    p.add_argument("--straggler", type=int, default=-1,
                   help="wid of the straggler (default: the last worker)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--program", default=None, help="P4 program (default p4src/saatp.p4)")
    p.add_argument("--json", dest="json_path", default=None, help="write results as JSON")
    p.add_argument("--plot", default=None, help="write a PNG: iteration time vs delay")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run_point(protocol: str, delay_ts: float, args: argparse.Namespace) -> RunResult:
    t_wall = time.perf_counter()
    n = args.workers
    straggler = args.straggler if args.straggler >= 0 else n - 1
    delay = delay_ts * args.t_s
    net = Network(args.program or DEFAULT_PROGRAM,
                  Impairments(loss=args.loss, seed=args.seed),
                  switch_pps=args.switch_pps or None)
    assist = protocol == "assist"
    if protocol == "ring":
        job = add_ring_job(net, n, k=args.k, window=args.pool, rto=args.t_s / 2)
    elif protocol == "atp":
        # ATP: the switch hands a slot to the PS at the first retransmission it sees
        job = add_job(net, 0, n, k=args.k, pool=args.pool, t_s=args.t_s, mode="atp",
                      switch_t_s=0.0, resend_data=True)
    else:
        job = add_job(net, 0, n, k=args.k, pool=args.pool, t_s=args.t_s,
                      mode="saatp" if assist else protocol)
    rng = np.random.default_rng(args.seed)
    times, exact = [], True
    err = None
    share, lag, vdelay = 0.0, delay, 0.0
    # assist only a straggler whose reported lag is well above the threshold: for a short
    # lag the extra contributor costs more switch work than it saves
    assist = assist and delay > 2 * args.t_s
    for i in range(args.iterations + (1 if assist and delay > 0 else 0)):
        qs = [rng.integers(-1 << 20, 1 << 20, size=args.elements, dtype=np.int32)
              for _ in range(n)]
        ref = np.sum(np.stack(qs).astype(np.int64), axis=0)
        if assist and delay > 0 and i == 1:
            # the straggler reported its lag in iteration 1; the switch chose a leading
            # worker as helper.  It now computes `share` of the straggler's mini-batch
            # (balancing (1-share)(T_c + D) = T_c + share*T_c) from its stored replica.
            helper = net.ctl.job_state(0)["helper"]
            if not 0 <= helper < n or helper == straggler:
                helper = 0 if straggler != 0 else 1
            job.enable_assist(straggler, helper)
            tc = args.compute
            share = delay / (2 * tc + delay)
            lag = max(0.0, (1 - share) * (tc + delay) - tc)
            vdelay = share * tc
        r = job.run_iteration(qs, 0, {straggler: lag} if lag > 0 else None,
                              max_time=max(60.0, 200 * args.t_s + 10 * delay),
                              assist_share=share, assist_delay=vdelay)
        if not r.ok:
            err = f"iteration {r.it} did not finish"
            exact = False
            break
        if not (assist and delay > 0 and i == 0):   # the learning iteration is not counted
            times.append(r.time)
        exact &= all(np.array_equal(s.astype(np.int64), ref) for s in r.sums)
        # let stragglers' stray retransmissions drain before the next iteration
        net.clock.run(max_time=net.clock.now() + args.t_s)
    iters = max(1, len(times))
    res = RunResult(protocol, delay_ts, delay, float(np.mean(times)) if times else float("nan"),
                    times, exact, net.switch_packets / iters, error=err)
    if protocol != "ring":
        res.counters = net.ctl.counters(0)
        hs = [w.helper.stats for w in job.workers] + ([job.ps.role.stats] if job.ps else [])
        if job.assist is not None:
            hs.append(job.assist[3].helper.stats)
            res.helper["assist_share"] = share
        res.helper |= {"partials": sum(h.partials for h in hs),
                      "straggler_contribs": sum(h.straggler_contribs for h in hs),
                      "hresults": sum(h.hresults for h in hs),
                      "bytes_rx": sum(h.bytes_rx for h in hs),
                      "bytes_tx": sum(h.bytes_tx for h in hs),
                      "peak_bytes": max(h.peak_bytes for h in hs),
                      "conflicts": sum(h.conflicts for h in hs)}
    res.worker_bytes_tx = float(np.mean([ep.tx for ep in job.endpoints[:n]])) / iters
    res.wall_s = time.perf_counter() - t_wall
    return res


def _table(results: list[RunResult], args) -> None:
    from rich.console import Console
    from rich.table import Table
    delays = sorted({r.delay_ts for r in results})
    protos = [p for p in PROTOCOLS if any(r.protocol == p for r in results)]
    t = Table(title=f"iteration time (ms), {args.workers} workers, {args.elements} elements, "
                    f"T_s = {args.t_s * 1e3:g} ms, loss {args.loss:g}, "
                    f"switch {args.switch_pps:g} pps")
    t.add_column("D / T_s", justify="right")
    for p in protos:
        t.add_column(LABELS[p], justify="right")
    if "saatp" in protos:
        t.add_column("SA-ATP vs best", justify="right")
    if "assist" in protos:
        t.add_column("+assist vs best", justify="right")
    by = {(r.protocol, r.delay_ts): r for r in results}
    for d in delays:
        row = [f"{d:g}"]
        for p in protos:
            r = by.get((p, d))
            row.append("-" if r is None else
                       (f"{r.iter_time_s * 1e3:.1f}" + ("" if r.exact else " (!)")))
        if "saatp" in protos:
            s = by.get(("saatp", d))
            others = [by[(p, d)].iter_time_s for p in protos
                      if p not in ("saatp", "assist") and (p, d) in by]
            if s and others:
                best = min(others)
                row.append(f"{(s.iter_time_s / best - 1) * 100:+.1f}%")
            else:
                row.append("-")
        if "assist" in protos:
            s = by.get(("assist", d))
            others = [by[(p, d)].iter_time_s for p in protos
                      if p not in ("saatp", "assist") and (p, d) in by]
            if s and others:
                row.append(f"{(s.iter_time_s / min(others) - 1) * 100:+.1f}%")
            else:
                row.append("-")
        t.add_row(*row)
    Console().print(t)
    Console().print("vs best = change of iteration time against the fastest baseline "
                    "(SwitchML-like, ATP-like, ring); negative = faster")
    bad = [r for r in results if not r.exact]
    if bad:
        Console().print(f"[red]{len(bad)} run(s) with inexact sums or unfinished iterations "
                        f"(marked (!))[/red]")
    else:
        Console().print("all sums exact (equal to the sum of the quantized inputs)")


def _plot(results: list[RunResult], path: str, args) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for p in PROTOCOLS:
        rs = sorted((r for r in results if r.protocol == p), key=lambda r: r.delay_ts)
        if rs:
            ax.plot([r.delay_ts for r in rs], [r.iter_time_s * 1e3 for r in rs], marker="o",
                    label=LABELS[p])
    ax.set_xlabel("straggler delay D / T_s")
    ax.set_ylabel("iteration time (ms)")
    ax.set_title(f"{args.workers} workers, {args.elements} elements, T_s={args.t_s * 1e3:g} ms")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    try:
        delays = [float(x) for x in str(args.delays).split(",") if x.strip()]
    except ValueError:
        print(f"saatp experiment straggler: bad --delays {args.delays!r}", file=sys.stderr)
        return 2
    protos = [p.strip() for p in str(args.protocols).split(",") if p.strip()]
    unknown = [p for p in protos if p not in PROTOCOLS]
    if unknown or not protos:
        print(f"saatp experiment straggler: unknown protocol(s) {unknown}; "
              f"choose from {','.join(PROTOCOLS)}", file=sys.stderr)
        return 2
    if args.workers < 2 or args.workers > 31:
        print("saatp experiment straggler: --workers must be 2..31", file=sys.stderr)
        return 2
    if "assist" in protos and args.workers > 15:
        print("saatp experiment straggler: compute assist needs --workers <= 15 (virtual "
              "contributors use wids 16..31)", file=sys.stderr)
        return 2
    if args.elements < 1 or args.iterations < 1 or any(d < 0 for d in delays):
        print("saatp experiment straggler: elements, iterations >= 1 and delays >= 0",
              file=sys.stderr)
        return 2
    if args.k != DEFAULT_K and not args.program:
        print(f"saatp experiment straggler: --k other than {DEFAULT_K} needs --program generated by "
              "scripts/gen_saatp_p4.py -k K", file=sys.stderr)
        return 2
    points = [(p, d) for p in protos for d in delays]
    results: list[RunResult] = []
    if args.quiet:
        for p, d in points:
            results.append(run_point(p, d, args))
    else:
        from rich.progress import Progress
        with Progress(transient=True) as prog:
            task = prog.add_task("straggler experiment", total=len(points))
            for p, d in points:
                prog.update(task, description=f"{LABELS[p]:>13}, D = {d:g} T_s")
                results.append(run_point(p, d, args))
                prog.advance(task)
    _table(results, args)
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump({"config": {k: v for k, v in vars(args).items()
                                  if isinstance(v, (int, float, str, type(None)))},
                       "results": [asdict(r) for r in results]}, f, indent=1)
        print(f"wrote {args.json_path}")
    if args.plot:
        _plot(results, args.plot, args)
        print(f"wrote {args.plot}")
    return 0 if all(r.exact for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="saatp experiment straggler", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
