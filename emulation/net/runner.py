"""``saatp experiment mininet``: a protocol experiment in Mininet with P4 switches.

    saatp experiment mininet --switch saatp --topo single --workers 4 --workload ring \\
        --straggler h2:delay=50ms --impair h3:loss=1% --out results/mininet
    saatp experiment mininet --topo racks --workers 4 --interactive
    saatp experiment mininet --topo path/to/topology.json --program basic.p4 --interactive

Steps: build the topology (Mininet ``Host`` s, veth ``Link`` s, ``SaatpSwitch`` or
``Bmv2Switch``), set hosts up (offloads off, IPv6 off, static ARP including the aggregation
address), program every switch over P4Runtime (the topology's runtime JSON, else one /32
IPv4 route per host for ``basic_router.p4``), check connectivity (ping between all hosts),
run the per-host agent command in every worker host, then collect per-host metrics and
switch counters (P4 counters over P4Runtime, per-port interface counters), write
``results.json`` and plots, and tear down exactly what was created (checked afterwards).

Agents are pluggable: ``--workload ring|echo|ddp`` pick built-in commands, ``--agent-cmd``
gives any command line (a Python format string; fields: {python} {repo} {rank} {n} {host}
{ip} {hosts} {out} {seed} {iters} {elements} {delay_ms} {start_at} {agg_ip}); it runs in
each worker host and must write a JSON object with at least ``"ok"`` to ``{out}``.

Stragglers: ``--straggler HOST:delay=50ms`` (sleep before each iteration) and/or
``cpu=0.3`` (a cgroup CPU quota of 0.3 CPU).  Impairments: ``--impair HOST:SPEC`` impairs
what the switch sends to HOST (``loss=1%,delay=5ms,jitter=1ms,rate=10mbit``), through
saatp switch's per-port ``--impair`` (tc netem is not available here).

``--link-rate PPS`` shapes every host-facing switch port with the switch's egress queues
(BMv2's ``set_queue_rate``); every run reports whether the switch itself was the bottleneck
(``bottleneck``: kernel and queue drops, the switch process's CPU use, link utilisation).
``--compare`` runs SA-ATP, SwitchML-like and ring on the same topology and writes one table
and one plot; with a delayed straggler and ``--compute-ms`` it adds SA-ATP with compute assist.
``--switch bmv2`` compiles P4 source with ``p4c-bm2-ss`` from PATH.

``--compute-ms T`` gives every host T of (modelled) compute per iteration before it
all-reduces; a ``--straggler HOST:delay=D`` computes T + D.  ``--workload saatp-assist``
(or ``switchml-assist``) learns the straggler's lag in a warm-up iteration, then has a
leading worker compute part of its mini-batch and contribute it as a virtual worker
(SA-ATP.md §14; :mod:`emulation.net.assist`).
See docs/mininet.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from host_agent.channels import parse_impairment
from host_agent import wire
from host_agent.constants import DEFAULT_K, SAATP_P4
from host_agent.switch_program import saatp_program

from . import assist as assist_mod
from .agent import digest, expected_sum
from .commands import bmv2_binary, p4c_binary, p4c_command
from .mn import why_unavailable
from .session import DEFAULT_PROGRAM, REPO, NetSession
from .topo import TopologyError, TopoSpec, load_topology_json, single_switch, two_racks

ASSIST = ("saatp-assist", "switchml-assist")   # compute assist on top of the SA-ATP program's modes
WORKLOADS = ("saatp", "switchml", "ring", "echo", "ddp", *ASSIST)
ETH_MTU, JUMBO_MTU = 1500, 9000
SWITCH_AGG = ("saatp", "switchml", *ASSIST)     # workloads that configure an SA-ATP job on the switch
COMPUTE = ("ring", *SWITCH_AGG)                 # workloads whose agents model compute (--compute-ms)
COMPARABLE = ("saatp", "switchml", "ring", *ASSIST)


def switch_mode(workload: str) -> str:
    """The SA-ATP program's mode a workload configures (assist runs on top of a mode)."""
    return workload.removesuffix("-assist")


def warmup_of(args: argparse.Namespace) -> int:
    """Uncounted iterations before the counted ones: at least one for assist (it learns there)."""
    w = getattr(args, "warmup", 0) or 0
    return max(1, w) if args.workload in ASSIST and not args.agent_cmd else w


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--switch", choices=["saatp", "bmv2"], default="saatp",
                   help="saatp switch (embedded target) or BMv2 simple_switch_grpc (must be on PATH)")
    p.add_argument("--topo", default="single",
                   help="single | racks | PATH to a p4lang tutorials topology.json (default single)")
    p.add_argument("--workers", type=int, default=4, help="hosts for single/racks (default 4)")
    p.add_argument("--program", default=None,
                   help="P4 program (saatp: P4 source, default p4src/basic_router.p4; bmv2: p4c JSON)")
    p.add_argument("--p4info", default=None, help="bmv2: the P4Info file p4c wrote (text or binary)")
    p.add_argument("--workload", choices=WORKLOADS, default="saatp",
                   help="saatp: SA-ATP in the switch (p4src/saatp.p4); switchml: the same program without "
                        "straggler detection (baseline); ring: host ring all-reduce baseline (switches route "
                        "IPv4); echo: UDP echo; ddp: scripts/ddp_example.py over the saatp torch backend "
                        "(ring engine); saatp-assist / switchml-assist: compute assist on top (SA-ATP.md 14: a "
                        "leading worker computes part of the straggler's mini-batch; needs --compute-ms)")
    p.add_argument("--t-s", type=float, default=0.05, help="SA-ATP straggler threshold T_s, seconds")
    p.add_argument("--pool", type=int, default=32, help="SA-ATP slots per set (window)")
    p.add_argument("--k", type=int, default=DEFAULT_K, metavar="K",
                   help=f"int32 values per packet: SA-ATP lanes (the switch runs the program generated for K) "
                        f"and ring chunks; a power of two up to {1 << wire.MAX_KLOG2} (default {DEFAULT_K}); "
                        f"frames over {ETH_MTU} bytes give every link a {JUMBO_MTU}-byte MTU")
    p.add_argument("--agent-cmd", default=None, metavar="TEMPLATE",
                   help="per-host command line instead of a built-in workload (see the module docs)")
    p.add_argument("--elements", type=int, default=4096, help="int32 values per all-reduce")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--straggler", action="append", default=[], metavar="HOST:delay=MS,cpu=FRACTION",
                   help="delay: the host's compute takes that much longer each iteration; cpu: a CPU quota")
    p.add_argument("--compute-ms", type=float, default=0.0, metavar="T",
                   help="every host computes T ms per iteration before it all-reduces (modelled as time: "
                        "see docs/mininet.md); iteration times then include it")
    p.add_argument("--warmup", type=int, default=0, metavar="N",
                   help="uncounted iterations before the --iters counted ones (assist learns in the first; "
                        "--compare with assist gives every workload one)")
    p.add_argument("--assist-results", choices=["local", "replica"], default="local",
                   help="assist: the helper's host hands results to its virtual worker (local, default) or the "
                        "switch sends the virtual worker a multicast replica of its own (replica, SA-ATP.md 14)")
    p.add_argument("--assist-threshold", choices=["lift", "keep"], default="lift",
                   help="saatp-assist: raise the switch's T_s to twice the straggler's predicted residual lag once "
                        "assist runs, so its rounds are waited for rather than evicted (lift, default), or keep T_s")
    p.add_argument("--impair", action="append", default=[], metavar="HOST:SPEC",
                   help="impair what the switch sends to HOST, e.g. h3:loss=1%%,delay=2ms")
    p.add_argument("--pcap", action="store_true", help="per-port pcap files under OUT/pcap")
    p.add_argument("--log-console", action="store_true", help="per-packet switch trace into OUT/logs")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds for all agents to finish")
    p.add_argument("--out", default="results/mininet")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--interactive", action="store_true",
                   help="drop into Mininet's CLI once the switches are programmed (no workload)")
    p.add_argument("--link-rate", type=parse_pps, default=None, metavar="PPS",
                   help="shape every host-facing switch port to PPS packets/s (e.g. 20000 or 20k): the switch's "
                        "egress queue toward the host, as BMv2's set_queue_rate")
    p.add_argument("--queue-depth", type=int, default=None, metavar="N",
                   help="egress queue depth in packets with --link-rate (default 64, BMv2's)")
    p.add_argument("--compare", action="store_true",
                   help="run SA-ATP, SwitchML-like and ring (--compare-workloads) on the same topology one after "
                        "another; write OUT/compare.json, OUT/compare.png and print one table")
    p.add_argument("--compare-workloads", default=None, metavar="W1,W2,...",
                   help="workloads for --compare (default saatp,switchml,ring; with a delayed straggler and "
                        "--compute-ms also saatp-assist, second)")


def parse_pps(v: str) -> float:
    """A packet rate: ``20000``, ``20k``, ``1.5M`` or with a ``pps`` suffix."""
    m = re.fullmatch(r"([\d.]+)\s*([kKmM]?)(pps)?", str(v).strip())
    try:
        r = float(m.group(1)) * {"": 1, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6}[m.group(2)] if m else -1.0
    except ValueError:
        r = -1.0
    if not r > 0:
        raise argparse.ArgumentTypeError(f"bad packet rate {v!r} (e.g. 20000, 20k)")
    return r


def _ms(v: str) -> float:
    m = re.fullmatch(r"([\d.]+)\s*(us|ms|s)?", v.strip())
    if not m:
        raise ValueError(f"bad duration {v!r} (e.g. 50ms)")
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1000.0, None: 1.0}[m.group(2)]


def parse_stragglers(items: list[str], hosts) -> tuple[dict[str, float], dict[str, float]]:
    delay, cpu = {}, {}
    for it in items:
        host, sep, spec = it.partition(":")
        if not sep or host not in hosts:
            raise ValueError(f"--straggler {it!r}: expected HOST:delay=50ms[,cpu=0.3] with HOST one of "
                             f"{', '.join(hosts)}")
        for kv in spec.split(","):
            k, _, v = kv.partition("=")
            if k == "delay":
                delay[host] = _ms(v)
            elif k == "cpu":
                f = float(v.rstrip("%")) / (100 if v.endswith("%") else 1)
                if not 0 < f <= 64:
                    raise ValueError(f"--straggler {it!r}: cpu must be in (0, 64] CPUs")
                cpu[host] = f
            else:
                raise ValueError(f"--straggler {it!r}: unknown key {k!r} (delay, cpu)")
    return delay, cpu


def parse_impairs(items: list[str], spec: TopoSpec) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for it in items:
        host, sep, s = it.partition(":")
        if not sep or host not in spec.hosts:
            raise ValueError(f"--impair {it!r}: expected HOST:SPEC with HOST one of {', '.join(spec.hosts)}")
        parse_impairment(s)   # raises a clear error on a bad spec
        sw, port = spec.host_port(host)
        out.setdefault(sw, {})[port] = s
    return out


def make_spec(args: argparse.Namespace) -> TopoSpec:
    if args.topo == "single":
        return single_switch(args.workers)
    if args.topo == "racks":
        return two_racks(args.workers)
    if args.topo.endswith(".json") or Path(args.topo).exists():
        return load_topology_json(args.topo)
    raise TopologyError(f"--topo {args.topo!r}: single, racks or a topology.json")


def agent_commands(args: argparse.Namespace, spec: TopoSpec, out: Path, delay: dict[str, float],
                   start_at: float) -> dict[str, list[str]]:
    hosts = list(spec.hosts)
    ips = [spec.hosts[h].addr for h in hosts]
    if args.agent_cmd:
        tmpl = args.agent_cmd
    elif args.workload in ("ring", "echo", *SWITCH_AGG):
        kind = "saatp" if args.workload in SWITCH_AGG else args.workload
        tmpl = ("{python} -m emulation.net.agent " + kind + " --rank {rank} --hosts {hosts} "
                "--out {out} --host {host} --elements {elements} --iters {iters} --seed {seed} "
                "--delay-ms {delay_ms} --start-at {start_at}")
        if kind != "echo":
            tmpl += " --compute-ms {compute_ms} --warmup {warmup} --k {k}"
        if kind == "saatp":
            tmpl += " --agg-ip {agg_ip} --t-s {t_s} --window {pool}"
        if args.workload in ASSIST:
            tmpl += " --assist-dir {assist_dir} --assist-results " + args.assist_results
    else:  # ddp: the DDP example, torchrun-style environment through `env`
        tmpl = ("env RANK={rank} WORLD_SIZE={n} LOCAL_RANK=0 MASTER_ADDR=" + ips[0] + " MASTER_PORT=29517 "
                "SAATP_ENGINE=ring SAATP_HOST={ip} {python} -m emulation.net.ddp_wrap --out {out} -- {python} "
                "{repo}/scripts/ddp_example.py --steps {iters} --seed {seed}"
                + (" --straggler {straggler_rank} --delay-ms {straggler_delay}" if delay else ""))
    cmds = {}
    srank = hosts.index(next(iter(delay))) if delay else -1
    for r, h in enumerate(hosts):
        fields = dict(python=sys.executable, repo=str(REPO), rank=r, n=len(hosts), host=h, ip=ips[r],
                      hosts=",".join(ips), out=str(out / f"agent-{h}.json"), seed=args.seed, iters=args.iters,
                      elements=args.elements, delay_ms=delay.get(h, 0.0), start_at=f"{start_at:.3f}",
                      agg_ip=spec.agg_ip, t_s=args.t_s, pool=args.pool, straggler_rank=srank,
                      straggler_delay=next(iter(delay.values()), 0), compute_ms=args.compute_ms,
                      warmup=warmup_of(args), assist_dir=str(out / "assist"), k=args.k)
        try:
            cmds[h] = shlex.split(tmpl.format(**fields))
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"--agent-cmd: bad template ({e}); fields: {', '.join(fields)}") from None
        if "--out" not in cmds[h]:
            cmds[h] += ["--out", fields["out"]]
    return cmds


def check_results(args: argparse.Namespace, spec: TopoSpec, agents: dict[str, dict]) -> list[str]:
    """Problems found in the agents' results (empty = every agent ok; ring: sums exact)."""
    problems = []
    exact = args.workload in ("ring", *SWITCH_AGG) and not args.agent_cmd
    want = args.iters + (warmup_of(args) if exact else 0)
    for h, a in agents.items():
        r = a.get("result")
        if r is None:
            problems.append(f"{h}: no result file (exit status {a['rc']}; see {a['log']})")
            continue
        if not r.get("ok"):
            problems.append(f"{h}: agent reports failure: {r.get('error', 'see result')}")
        if exact:
            its = r.get("iters", [])
            good = sum(i.get("digest") == digest(expected_sum(args.seed, i["iter"], len(spec.hosts), args.elements))
                       for i in its)
            if len(its) != want or good != len(its):
                problems.append(f"{h}: {good} of {want} all-reduce results equal the exact sums")
    return problems


def plot(results: dict, path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    agents = results["agents"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    names = list(agents)
    means = []
    for h in names:
        r = agents[h].get("result") or {}
        ts = [iteration_s(i) * 1000 for i in r.get("iters", []) if "time_s" in i]
        means.append(sum(ts) / len(ts) if ts else 0)
        if ts:
            ax1.plot(range(len(ts)), ts, marker="o", label=h)
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("iteration time, compute included (ms)")
    ax1.set_title(f"{results['workload']} per iteration")
    if names:
        ax1.legend(fontsize=7)
    colors = ["tab:red" if h in results["stragglers"]["delay_ms"] or h in results["stragglers"]["cpu"]
              else "tab:blue" for h in names]
    ax2.bar(names, means, color=colors)
    ax2.set_ylabel("mean iteration time (ms)")
    ax2.set_title("per host (red: straggler)")
    fig.suptitle(f"{results['topology']} on {results['switch']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


BUSY_SATURATED = 0.85   # a switch process using this share of a CPU core (it is single-threaded) sets the pace


def bottleneck(results: dict, link_rate: float | None) -> dict[str, Any]:
    """Was the switch itself the bottleneck?  From the switch processes' final statistics:
    frames the kernel dropped at the switch's sockets (``rx_overflow``: the switch did not
    read fast enough), frames its egress queues dropped (the shaped links were full), frames
    it failed on or could not send; how busy each switch process was (CPU seconds per second
    of the agents' run: near 1, the single-threaded switch set the pace even without a drop);
    and per host-facing port the delivered rate against ``link_rate``."""
    stats = {n: st for n, st in (results.get("switch_stats") or {}).items() if st}
    agents = results.get("agents") or {}
    active = max([(a.get("result") or {}).get("total_s") or 0 for a in agents.values()] or [0])
    out: dict[str, Any] = {"kernel_drops": 0, "queue_drops": 0, "errors": 0, "tx_failed": 0, "active_s": active,
                           "ports": {}}
    for name, st in stats.items():
        for port, row in st.get("ports", {}).items():
            out["kernel_drops"] += row.get("rx_overflow", 0)
            out["queue_drops"] += row.get("queue_drops", 0)
            out["errors"] += row.get("error", 0)
            out["tx_failed"] += row.get("tx_failed", 0)
            r = {k: row.get(k, 0) for k in ("rx", "tx", "rx_overflow", "queue_drops")}
            if active > 0:
                r["rx_pps"] = round(row.get("rx", 0) / active)
                r["tx_pps"] = round(row.get("tx", 0) / active)
                if link_rate:
                    r["link_utilisation"] = round(row.get("tx", 0) / active / link_rate, 3)
            q = ((st.get("queues") or {}).get("ports") or {}).get(port)
            if q:
                r["queue_high_water"] = q.get("high_water", 0)
            out["ports"][f"{name}:{port}"] = r
    verdict = []
    if not stats:
        verdict.append("unknown (no switch statistics; BMv2 reports none)")
    if out["kernel_drops"]:
        verdict.append(f"switch process: the kernel dropped {out['kernel_drops']} frames it did not read in time")
    if out["errors"] or out["tx_failed"]:
        verdict.append(f"switch process: {out['errors']} frames failed in the pipeline, {out['tx_failed']} sends failed")
    if out["queue_drops"]:
        verdict.append(f"links: the egress queues dropped {out['queue_drops']} frames (link rate {link_rate:g} pps)")
    # CPU seconds over the agents' own run time (their start-up and the common start wait excluded)
    busy = {n: round(c["cpu_s"] / active, 3) if active > 0 else c.get("busy")
            for n, c in (results.get("switch_cpu") or {}).items() if c.get("cpu_s") is not None}
    busy = {n: b for n, b in busy.items() if b is not None}
    out["switch_busy"] = busy
    saturated = {n: b for n, b in busy.items() if b >= BUSY_SATURATED}
    if saturated:
        verdict.append("switch process: " + ", ".join(f"{n} used {b:.0%} of a CPU while the agents ran"
                                                      for n, b in saturated.items())
                       + " (it set the pace, with or without drops)")
    # the hosts: CPU the agents used, and how busy the machine was (an emulation shares its CPUs)
    out["agents_cpu_s"] = round(sum((a.get("result") or {}).get("cpu_s") or 0 for a in agents.values()), 3)
    out["machine_busy"] = results.get("machine_busy")
    out["cpus"] = os.cpu_count()
    if out["machine_busy"] is not None and out["machine_busy"] >= BUSY_SATURATED:
        verdict.append(f"CPU: the machine's {out['cpus']} CPUs were {out['machine_busy']:.0%} busy while the agents "
                       f"ran (agents {out['agents_cpu_s']:.1f} CPU-s in {active:.1f} s): the hosts' and switch's "
                       "processes competed for them")
    util = [r.get("link_utilisation", 0) for r in out["ports"].values()]
    if link_rate and util:
        out["max_link_utilisation"] = max(util)
    if stats and not verdict:
        verdict.append("neither: no frame dropped at the switch (kernel, queues or pipeline errors) and no switch "
                       f"process busier than {BUSY_SATURATED:.0%} of a CPU")
    out["switch_was_bottleneck"] = bool(out["kernel_drops"] or out["errors"] or out["tx_failed"] or saturated)
    out["verdict"] = "; ".join(verdict)
    return out


def counted(result: dict | None) -> list[dict]:
    """An agent's counted iteration records (warm-up iterations left out)."""
    return [i for i in ((result or {}).get("iters") or []) if "time_s" in i and not i.get("warmup")]


def iteration_s(rec: dict) -> float:
    """Iteration time, compute included (iteration start to all-reduce done); agents that
    report only the all-reduce (``time_s``) count that."""
    return rec.get("iter_s", rec["time_s"])


def model_of(results: dict) -> str:
    """What an experiment's iteration times rest on besides measurement: ``-`` (nothing),
    ``sleep`` (modelled compute: --compute-ms and straggler delays are time, not work),
    ``sleep+split`` (and compute assist's split of the straggler's mini-batch)."""
    sleeps = (results.get("compute_ms") or 0) > 0 or any((results.get("stragglers") or {}).get("delay_ms", {}).values())
    if (results.get("assist") or {}).get("assist"):
        return "sleep+split"
    return "sleep" if sleeps else "-"


def summarize(results: dict) -> dict[str, Any]:
    """One row of the comparison: iteration times in ms (compute included) of the hosts that
    are not stragglers (what a straggler-tolerant protocol improves) and of all hosts, their
    all-reduce times, exactness, drops, and what the figures rest on.  Warm-up iterations are
    left out."""
    slow = set(results.get("stragglers", {}).get("delay_ms", {})) | set(results.get("stragglers", {}).get("cpu", {}))
    per_host, per_host_ar, warm = {}, {}, []
    for h, a in (results.get("agents") or {}).items():
        r = a.get("result") or {}
        per_host[h] = [iteration_s(i) * 1000 for i in counted(r)]
        per_host_ar[h] = [i["time_s"] * 1000 for i in counted(r)]
        warm += [iteration_s(i) * 1000 for i in (r.get("iters") or []) if i.get("warmup") and "time_s" in i]

    def stats_of(d, hosts):
        xs = [t for h in hosts for t in d.get(h, [])]
        if not xs:
            return None, None
        ys = sorted(xs)
        return round(sum(xs) / len(xs), 1), round(ys[len(ys) // 2], 1)
    fast = [h for h in per_host if h not in slow]
    mean_fast, med_fast = stats_of(per_host, fast)
    mean_all, _ = stats_of(per_host, list(per_host))
    ar_fast, _ = stats_of(per_host_ar, fast)
    b = results.get("bottleneck") or {}
    row = {"workload": results.get("workload"), "iter_ms_mean": mean_fast, "iter_ms_median": med_fast,
           "iter_ms_mean_all_hosts": mean_all, "allreduce_ms_mean": ar_fast, "ok": not results.get("problems"),
           "problems": results.get("problems", []), "kernel_drops": b.get("kernel_drops"),
           "queue_drops": b.get("queue_drops"), "switch_was_bottleneck": b.get("switch_was_bottleneck"),
           "switch_busy": max((b.get("switch_busy") or {}).values(), default=None),
           "machine_busy": b.get("machine_busy"),
           "max_link_utilisation": b.get("max_link_utilisation"), "bottleneck": b.get("verdict"),
           "model": model_of(results), "compute_ms": results.get("compute_ms"),
           "warmup_ms_mean": round(sum(warm) / len(warm), 1) if warm else None,
           "per_host_ms": {h: [round(t, 1) for t in ts] for h, ts in per_host.items()},
           "per_host_allreduce_ms": {h: [round(t, 1) for t in ts] for h, ts in per_host_ar.items()}}
    plan = results.get("assist")
    if plan is not None:
        hosts = list(results.get("hosts") or {})
        name = (lambda r: hosts[r] if isinstance(r, int) and 0 <= r < len(hosts) else r)
        row["assist"] = {k: plan.get(k) for k in ("assist", "reason", "phi", "lag_s", "t_c_s", "predicted_lag_s",
                                                  "virtual", "helper_source", "reports_wait_s", "decide_s")}
        row["assist"].update(straggler=name(plan.get("straggler")), helper=name(plan.get("helper")),
                             switch_t_s=(plan.get("switch") or {}).get("t_s"))
        at = plan.get("events_at_plan")
        end = next((c.get("saatp", {}).get("events") for c in (results.get("switch_counters") or {}).values()
                    if isinstance(c.get("saatp", {}).get("events"), dict)), None)
        if at and end:
            # what the switch did in the counted iterations (its counters after the warm-up subtracted)
            row["assist"]["counted_events"] = {k: end[k] - at.get(k, 0) for k in ("complete", "evict", "detect")
                                               if k in end}
    return row


def format_table(rows: list[dict]) -> str:
    head = f"{'workload':<16} {'iter ms (mean)':>15} {'median':>8} {'all hosts':>10} {'all-reduce':>11} " \
           f"{'exact':>6} {'kernel drops':>13} {'queue drops':>12} {'link util':>10} {'switch CPU':>11} " \
           f"{'machine CPU':>12} {'model':>12}"
    lines = [head, "-" * len(head)]
    for r in rows:
        def f(v, fmt="{:.1f}"):
            return "-" if v is None else fmt.format(v)
        lines.append(f"{r['workload']:<16} {f(r['iter_ms_mean']):>15} {f(r['iter_ms_median']):>8} "
                     f"{f(r['iter_ms_mean_all_hosts']):>10} {f(r.get('allreduce_ms_mean')):>11} "
                     f"{('yes' if r['ok'] else 'NO'):>6} "
                     f"{f(r['kernel_drops'], '{}'):>13} {f(r['queue_drops'], '{}'):>12} "
                     f"{f(r['max_link_utilisation'], '{:.2f}'):>10} {f(r['switch_busy'], '{:.0%}'):>11} "
                     f"{f(r.get('machine_busy'), '{:.0%}'):>12} {r.get('model') or '-':>12}")
    lines.append("iter ms: iteration start to all-reduce done, compute included (hosts that are not stragglers; "
                 "all hosts next); all-reduce: the all-reduce alone (same hosts); warm-up iterations not counted "
                 "(drops, link utilisation and CPU cover the whole run)")
    models = {r.get("model") for r in rows}
    if "sleep" in models or "sleep+split" in models:
        lines.append("model sleep: the figure includes modelled compute (--compute-ms and straggler delays are "
                     "time, not CPU work); sleep+split: also compute assist's split (phi of the straggler's "
                     "mini-batch computed by the helper at the helper's speed); -: measured only")
    for r in rows:
        a = r.get("assist")
        if not a:
            continue
        if a.get("assist"):
            lines.append(f"{r['workload']}: learnt lag {1000 * a['lag_s']:.0f} ms of {a['straggler']} over "
                         f"T_c {1000 * a['t_c_s']:.0f} ms; {a['helper']} ({a['helper_source']}) computes phi = "
                         f"{a['phi']:.3f} of its mini-batch as virtual wid {a['virtual']} (model: lag "
                         f"{1000 * a['predicted_lag_s']:.0f} ms)"
                         + (f"; switch T_s {1000 * a['switch_t_s']:.0f} ms" if a.get("switch_t_s") else "")
                         + ("; counted iterations: {complete} rounds completed in the switch, {evict} evicted"
                            .format(**a["counted_events"]) if a.get("counted_events") else "")
                         + f"; warm-up iteration {r.get('warmup_ms_mean')} ms not counted")
        else:
            lines.append(f"{r['workload']}: no assist: {a.get('reason')}")
    return "\n".join(lines)


def plot_compare(summary: dict, path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = summary["rows"]
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [r["workload"] for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.27 for i in x], [r["iter_ms_mean"] or 0 for r in rows], width=0.27,
           label="iteration, hosts not straggling")
    ax.bar(list(x), [r["iter_ms_mean_all_hosts"] or 0 for r in rows], width=0.27, label="iteration, all hosts")
    ax.bar([i + 0.27 for i in x], [r.get("allreduce_ms_mean") or 0 for r in rows], width=0.27,
           label="all-reduce alone, hosts not straggling")
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{n}\n({r.get('model') or '-'})" for n, r in zip(names, rows)], fontsize=8)
    ax.set_ylabel("mean time (ms)")
    ax.legend(fontsize=7)
    c = summary["config"]
    ax.set_title(f"{c['workers']} workers, {c['elements']} elements, straggler {c['straggler'] or 'none'}, "
                 f"compute {c.get('compute_ms') or 0:g} ms, link {c['link_rate_pps'] or 'unshaped'} pps", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def compare_workloads(args: argparse.Namespace) -> list[str]:
    """The workloads of ``--compare``: ``--compare-workloads``, else SA-ATP, SwitchML-like and
    ring, with SA-ATP+assist second when there is a delayed straggler and compute to share."""
    if args.compare_workloads:
        return [w.strip() for w in args.compare_workloads.split(",") if w.strip()]
    delayed = any("delay=" in s for s in args.straggler)
    if delayed and args.compute_ms > 0:
        return ["saatp", "saatp-assist", "switchml", "ring"]
    return ["saatp", "switchml", "ring"]


def run_compare(args: argparse.Namespace) -> int:
    """SA-ATP (with and without assist), SwitchML-like and ring, one after another on the same
    topology and options."""
    import copy
    wls = compare_workloads(args)
    bad = [w for w in wls if w not in COMPARABLE]
    if bad or not wls:
        print(f"saatp experiment mininet: --compare-workloads {args.compare_workloads!r}: choose from "
              f"{', '.join(COMPARABLE)}", file=sys.stderr)
        return 2
    if args.program or args.agent_cmd or args.interactive:
        print("saatp experiment mininet: --compare picks each workload's program and agents; drop --program, "
              "--agent-cmd and --interactive", file=sys.stderr)
        return 2
    if any(w in ASSIST for w in wls) and not args.compute_ms > 0:
        print("saatp experiment mininet: compute assist needs --compute-ms (the compute a helper can share)",
              file=sys.stderr)
        return 2
    if not args.compare_workloads and any("delay=" in st for st in args.straggler) and not args.compute_ms > 0:
        print("*** no compute-assist row: it needs --compute-ms", flush=True)
    # the same uncounted first iteration for every workload when one of them learns in it
    warmup = max(args.warmup, 1) if any(w in ASSIST for w in wls) else args.warmup
    load0 = _loadavg()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, rcs = [], {}
    for w in wls:
        a = copy.copy(args)
        a.workload, a.out, a.program, a.p4info, a.warmup = w, str(out / w), None, args.p4info, warmup
        print(f"=== {w} ===", flush=True)
        try:
            rc, res = run_one(a)
        except Exception as e:  # noqa: BLE001 - Mininet raises bare Exceptions; the other workloads still run
            print(f"saatp experiment mininet: {w}: {type(e).__name__}: {e}", file=sys.stderr)
            rc, res = 1, {"workload": w, "problems": [f"{type(e).__name__}: {e}"]}
        rcs[w] = rc
        if rc == 2 and not res:
            return 2
        rows.append(summarize(res))
    summary = {"config": {"switch": args.switch, "topology": args.topo, "workers": args.workers,
                          "elements": args.elements, "iters": args.iters, "warmup": warmup, "t_s": args.t_s,
                          "compute_ms": args.compute_ms, "straggler": args.straggler,
                          "link_rate_pps": args.link_rate, "queue_depth": args.queue_depth,
                          "assist_results": args.assist_results, "assist_threshold": args.assist_threshold,
                          "machine": _machine(),
                          "loadavg_before": load0},
               "rows": rows, "exit_status": rcs}
    summary["config"]["loadavg_after"] = _loadavg()
    (out / "compare.json").write_text(json.dumps(summary, indent=1, default=str))
    if not args.no_plot:
        summary["plot"] = plot_compare(summary, out / "compare.png")
        (out / "compare.json").write_text(json.dumps(summary, indent=1, default=str))
    print(format_table(rows))
    for r in rows:
        print(f"  {r['workload']}: bottleneck: {r['bottleneck']}")
        for p in r["problems"]:
            print(f"  {r['workload']}: problem: {p}")
    print(f"*** load average before/after: {summary['config']['loadavg_before']} / "
          f"{summary['config']['loadavg_after']}")
    print(f"*** comparison in {out / 'compare.json'}")
    return 0 if all(v == 0 for v in rcs.values()) else 1


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _machine() -> str:
    import os
    import platform
    return f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"




def run(args: argparse.Namespace) -> int:
    reason = why_unavailable()
    if reason:
        print(f"saatp experiment mininet: {reason}", file=sys.stderr)
        return 2
    if args.switch == "bmv2" and bmv2_binary() is None:
        print("saatp experiment mininet: simple_switch_grpc (BMv2) is not on PATH; use --switch saatp",
              file=sys.stderr)
        return 2
    if args.compare:
        return run_compare(args)
    rc, _ = run_one(args)
    return rc


def bmv2_program(args: argparse.Namespace, spec: TopoSpec) -> None:
    """``--switch bmv2``: P4 source (given, or the workload's default program) is compiled with
    ``p4c-bm2-ss`` from PATH into OUT/build, as the tutorials' Makefile does; p4c's JSON and
    P4Info are what the switch and the controller get."""
    tutorial = not args.program and spec.switches and all(
        sw.runtime and sw.runtime.get("bmv2_json") for sw in spec.switches.values())
    if tutorial or (args.program and args.program.endswith(".json")):
        if args.program and not args.p4info:
            raise ValueError("--switch bmv2 --program PROG.json needs --p4info FILE (p4c-bm2-ss --p4runtime-files)")
        return
    src = args.program or str(saatp_program(args.k) if args.workload in SWITCH_AGG else DEFAULT_PROGRAM)
    if p4c_binary() is None:
        raise ToolMissing(f"--switch bmv2 compiles {src} with p4c-bm2-ss, which is not on PATH (or pass "
                          "--program PROG.json --p4info FILE compiled elsewhere)")
    argv, json_path, p4info = p4c_command(src, str(Path(args.out) / "build"))
    Path(json_path).parent.mkdir(parents=True, exist_ok=True)
    print("*** " + " ".join(shlex.quote(a) for a in argv), flush=True)
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise ValueError(f"p4c-bm2-ss failed on {src} (exit status {r.returncode}):\n{r.stderr or r.stdout}")
    args.program, args.p4info = json_path, p4info


class ToolMissing(ValueError):
    pass


def link_mtu(k: int) -> int | None:
    """The links' MTU for K lanes: None (the default 1500) when an SA-ATP data frame fits,
    else a jumbo MTU (SA-ATP frames: 14 + 20 + 8 + 28 + 4 K bytes; K = 1024 is 4,166)."""
    ip_len = 20 + 8 + wire.HDR_LEN + wire.LANE_LEN * k
    return None if ip_len <= ETH_MTU else JUMBO_MTU


def run_one(args: argparse.Namespace) -> tuple[int, dict]:
    """One experiment (one workload); returns (exit status, results)."""
    try:
        spec = make_spec(args)
        if args.switch == "bmv2":
            bmv2_program(args, spec)
        delay, cpu = parse_stragglers(args.straggler, list(spec.hosts))
        impair = parse_impairs(args.impair, spec)
    except (TopologyError, ValueError) as e:
        print(f"saatp experiment mininet: {e}", file=sys.stderr)
        return 2, {}
    if args.workload in SWITCH_AGG and len(spec.switches) != 1:
        print(f"saatp experiment mininet: --workload {args.workload} needs one aggregation switch (--topo single); "
              "between racks the switches only forward IPv4 (use --workload ring), see docs/mininet.md",
              file=sys.stderr)
        return 2, {}
    if args.compute_ms < 0 or args.warmup < 0:
        print("saatp experiment mininet: --compute-ms and --warmup must not be negative", file=sys.stderr)
        return 2, {}
    if args.compute_ms and (args.agent_cmd or args.workload not in COMPUTE):
        print(f"saatp experiment mininet: --compute-ms is for the {', '.join(COMPUTE)} workloads' agents",
              file=sys.stderr)
        return 2, {}
    if args.workload in ASSIST and not args.agent_cmd:
        if not args.compute_ms > 0:
            print(f"saatp experiment mininet: --workload {args.workload} needs --compute-ms: compute assist moves "
                  "part of the straggler's compute to a helper", file=sys.stderr)
            return 2, {}
        if len(spec.hosts) > assist_mod.MAX_ASSIST_WORKERS:
            print(f"saatp experiment mininet: compute assist needs at most {assist_mod.MAX_ASSIST_WORKERS} workers "
                  "(virtual wids are 31 - straggler)", file=sys.stderr)
            return 2, {}
    if args.k < 1 or args.k & (args.k - 1) or args.k > 1 << wire.MAX_KLOG2:
        print(f"saatp experiment mininet: --k {args.k}: a power of two up to {1 << wire.MAX_KLOG2}", file=sys.stderr)
        return 2, {}
    if args.workload in SWITCH_AGG and not args.program and args.switch == "saatp":
        args.program = str(saatp_program(args.k))
    if args.program and not Path(args.program).exists():
        print(f"saatp experiment mininet: {args.program}: no such file", file=sys.stderr)
        return 2, {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in [*out.glob("agent-*.json"), *out.glob("assist/*.json")]:
        f.unlink()
    results: dict[str, Any] = {"switch": args.switch, "topology": spec.name, "forwarding": spec.forwarding,
                               "workload": "custom" if args.agent_cmd else args.workload,
                               "hosts": {h: {"ip": s.addr, "mac": s.mac} for h, s in spec.hosts.items()},
                               "stragglers": {"delay_ms": delay, "cpu": cpu},
                               "impairments": {sw: {str(p): s for p, s in d.items()} for sw, d in impair.items()},
                               "link_rate_pps": args.link_rate, "queue_depth": args.queue_depth,
                               "elements": args.elements, "iters": args.iters, "warmup": warmup_of(args),
                               "compute_ms": args.compute_ms, "t_s": args.t_s, "k": args.k,
                               "link_mtu": link_mtu(args.k) or ETH_MTU, "loadavg_before": _loadavg()}
    rc = 0
    try:
        s = NetSession(spec, args.switch, program=args.program, out=out, pcap=args.pcap,
                       log_console=args.log_console, impair=impair, p4info=args.p4info,
                       link_rate=args.link_rate, queue_depth=args.queue_depth, mtu=link_mtu(args.k))
    except ValueError as e:
        print(f"saatp experiment mininet: {e}", file=sys.stderr)
        return 2, {}
    try:
        t0 = time.monotonic()
        s.start()
        if args.workload in SWITCH_AGG:
            results["switch_config"] = s.program_saatp(mode=switch_mode(args.workload), t_s=args.t_s,
                                                       pool=args.pool)
        else:
            results["entries"] = s.program_switches()
        results["setup_s"] = time.monotonic() - t0
        print(f"*** {spec.name}: {len(spec.hosts)} hosts, switches "
              + ", ".join(f"{n} ({sw.grpc_address}, device {sw.device_id})" for n, sw in s.switch_nodes().items()),
              flush=True)
        if args.interactive:
            from mininet.cli import CLI
            print("*** switches programmed; Mininet CLI (exit or Ctrl-D tears everything down)", flush=True)
            CLI(s.net)
        else:
            results["ping"] = s.ping_all()
            print(f"*** ping: {results['ping']['pairs'] - len(results['ping']['lost'])}/{results['ping']['pairs']} "
                  "pairs answered", flush=True)
            start_at = time.time() + 2.0
            cmds = agent_commands(args, spec, out, delay, start_at)
            results["commands"] = {h: " ".join(shlex.quote(a) for a in c) for h, c in cmds.items()}
            coord = None
            if args.workload in ASSIST and not args.agent_cmd:
                (out / "assist").mkdir(exist_ok=True)
                (swname, _), = s.switch_nodes().items()
                coord = assist_mod.Coordinator(out / "assist", len(spec.hosts), args.t_s, controller=s.controller,
                                               client=s.clients.get(swname), job=s.job,
                                               results=args.assist_results, threshold=args.assist_threshold,
                                               timeout=args.timeout)
                coord.start()
            t1 = time.monotonic()
            try:
                results["agents"] = s.run_agents(cmds, cpu=cpu, timeout=args.timeout)
            finally:
                if coord is not None:
                    coord.stop_event.set()
                    coord.join(10)
                    results["assist"] = coord.plan
            results["agents_s"] = time.monotonic() - t1
            results["switch_cpu"] = s.switch_cpu
            results["machine_busy"] = s.machine_busy
            results["switch_counters"] = s.switch_counters()
            results["problems"] = check_results(args, spec, results["agents"])
            if results["ping"]["lost"] and not impair:
                results["problems"].append(f"ping failed between {results['ping']['lost']}")
            rc = 1 if results["problems"] else 0
    except (TopologyError, ValueError, OSError, RuntimeError, KeyError) as e:
        results.setdefault("problems", []).append(f"{type(e).__name__}: {e}")
        print(f"saatp experiment mininet: {e}", file=sys.stderr)
        rc = 1
    finally:
        s.stop()
        results["leftovers"] = s.leftovers()
        results["switch_exit_status"] = s.switch_exit
        results["switch_stats"] = s.final_switch_stats()
        results["bottleneck"] = bottleneck(results, args.link_rate)
        results["loadavg_after"] = _loadavg()
        if results["leftovers"]:
            print(f"saatp experiment mininet: left behind: {results['leftovers']}", file=sys.stderr)
            rc = rc or 1
    if args.interactive:
        print(f"*** torn down; left behind: {results['leftovers'] or 'nothing'}")
        return rc, results
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    if not args.no_plot and "agents" in results:
        results["plot"] = plot(results, out / "iterations.png")
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    for h, a in results.get("agents", {}).items():
        r = a.get("result") or {}
        its = counted(r)
        ts = [i["time_s"] for i in its]
        ws = [iteration_s(i) for i in its]
        print(f"  {h}: ok={r.get('ok')} iterations={len(ts)} mean={1000 * sum(ts) / max(1, len(ts)):.1f} ms"
              + (f" (iteration with compute {1000 * sum(ws) / max(1, len(ws)):.1f} ms)" if ws != ts else "")
              + (f" exact={all(i.get('exact') for i in r.get('iters', []))}" if r.get("workload") in ("ring", "saatp")
               else ""))
    if results.get("assist") is not None:
        p = results["assist"]
        print("*** assist: " + (f"{p.get('straggler')} helped by {p.get('helper')} (phi {p.get('phi'):.3f}, "
                                f"virtual wid {p.get('virtual')})" if p.get("assist") else f"none: {p.get('reason')}"))
    for p in results.get("problems", []):
        print(f"  problem: {p}")
    print(f"*** bottleneck: {results['bottleneck']['verdict']}")
    print(f"*** results in {out / 'results.json'}; teardown left {len(results['leftovers'])} objects")
    return rc, results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp experiment mininet", description=__doc__.splitlines()[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
