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
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from host_agent.channels import parse_impairment
from host_agent.constants import SAATP_P4

from .agent import digest, expected_sum
from .commands import bmv2_binary
from .mn import why_unavailable
from .session import REPO, NetSession
from .topo import TopologyError, TopoSpec, load_topology_json, single_switch, two_racks

WORKLOADS = ("saatp", "switchml", "ring", "echo", "ddp")
SWITCH_AGG = ("saatp", "switchml")      # workloads that configure an SA-ATP job on the switch


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
                        "(ring engine)")
    p.add_argument("--t-s", type=float, default=0.05, help="SA-ATP straggler threshold T_s, seconds")
    p.add_argument("--pool", type=int, default=32, help="SA-ATP slots per set (window)")
    p.add_argument("--agent-cmd", default=None, metavar="TEMPLATE",
                   help="per-host command line instead of a built-in workload (see the module docs)")
    p.add_argument("--elements", type=int, default=4096, help="int32 values per all-reduce")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--straggler", action="append", default=[], metavar="HOST:delay=MS,cpu=FRACTION")
    p.add_argument("--impair", action="append", default=[], metavar="HOST:SPEC",
                   help="impair what the switch sends to HOST, e.g. h3:loss=1%%,delay=2ms")
    p.add_argument("--pcap", action="store_true", help="per-port pcap files under OUT/pcap")
    p.add_argument("--log-console", action="store_true", help="per-packet switch trace into OUT/logs")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds for all agents to finish")
    p.add_argument("--out", default="results/mininet")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--interactive", action="store_true",
                   help="drop into Mininet's CLI once the switches are programmed (no workload)")


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
        if kind == "saatp":
            tmpl += " --agg-ip {agg_ip} --t-s {t_s} --window {pool}"
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
                      agg_ip=spec.agg_ip, t_s=args.t_s, pool=args.pool, straggler_rank=srank, straggler_delay=next(iter(delay.values()), 0))
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
            if len(its) != args.iters or good != len(its):
                problems.append(f"{h}: {good} of {args.iters} all-reduce results equal the exact sums")
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
        ts = [i["time_s"] * 1000 for i in r.get("iters", []) if "time_s" in i]
        means.append(sum(ts) / len(ts) if ts else 0)
        if ts:
            ax1.plot(range(len(ts)), ts, marker="o", label=h)
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("time (ms)")
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


def run(args: argparse.Namespace) -> int:
    reason = why_unavailable()
    if reason:
        print(f"saatp experiment mininet: {reason}", file=sys.stderr)
        return 2
    if args.switch == "bmv2" and bmv2_binary() is None:
        print("saatp experiment mininet: simple_switch_grpc (BMv2) is not on PATH; use --switch saatp",
              file=sys.stderr)
        return 2
    try:
        spec = make_spec(args)
        if args.switch == "bmv2" and not args.program and not all(
                sw.runtime and sw.runtime.get("bmv2_json") for sw in spec.switches.values()):
            raise ValueError("--switch bmv2 needs --program PROG.json and --p4info FILE (compile with "
                             "p4c-bm2-ss --p4runtime-files), or runtime JSONs naming bmv2_json and p4info")
        delay, cpu = parse_stragglers(args.straggler, list(spec.hosts))
        impair = parse_impairs(args.impair, spec)
    except (TopologyError, ValueError) as e:
        print(f"saatp experiment mininet: {e}", file=sys.stderr)
        return 2
    if args.workload in SWITCH_AGG and len(spec.switches) != 1:
        print(f"saatp experiment mininet: --workload {args.workload} needs one aggregation switch (--topo single); "
              "between racks the switches only forward IPv4 (use --workload ring), see docs/mininet.md",
              file=sys.stderr)
        return 2
    if args.workload in SWITCH_AGG and not args.program and args.switch == "saatp":
        args.program = str(SAATP_P4)
    if args.program and not Path(args.program).exists():
        print(f"saatp experiment mininet: {args.program}: no such file", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in out.glob("agent-*.json"):
        f.unlink()
    results: dict[str, Any] = {"switch": args.switch, "topology": spec.name, "forwarding": spec.forwarding,
                               "workload": "custom" if args.agent_cmd else args.workload,
                               "hosts": {h: {"ip": s.addr, "mac": s.mac} for h, s in spec.hosts.items()},
                               "stragglers": {"delay_ms": delay, "cpu": cpu},
                               "impairments": {sw: {str(p): s for p, s in d.items()} for sw, d in impair.items()}}
    rc = 0
    try:
        s = NetSession(spec, args.switch, program=args.program, out=out, pcap=args.pcap,
                       log_console=args.log_console, impair=impair, p4info=args.p4info)
    except ValueError as e:
        print(f"saatp experiment mininet: {e}", file=sys.stderr)
        return 2
    try:
        t0 = time.monotonic()
        s.start()
        if args.workload in SWITCH_AGG:
            results["switch_config"] = s.program_saatp(mode=args.workload, t_s=args.t_s, pool=args.pool)
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
            t1 = time.monotonic()
            results["agents"] = s.run_agents(cmds, cpu=cpu, timeout=args.timeout)
            results["agents_s"] = time.monotonic() - t1
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
        if results["leftovers"]:
            print(f"saatp experiment mininet: left behind: {results['leftovers']}", file=sys.stderr)
            rc = rc or 1
    if args.interactive:
        print(f"*** torn down; left behind: {results['leftovers'] or 'nothing'}")
        return rc
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    if not args.no_plot and "agents" in results:
        results["plot"] = plot(results, out / "iterations.png")
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    for h, a in results.get("agents", {}).items():
        r = a.get("result") or {}
        ts = [i["time_s"] for i in r.get("iters", []) if "time_s" in i]
        print(f"  {h}: ok={r.get('ok')} iterations={len(ts)} mean={1000 * sum(ts) / max(1, len(ts)):.1f} ms"
              + (f" exact={all(i.get('exact') for i in r.get('iters', []))}" if r.get("workload") in ("ring", "saatp")
               else ""))
    for p in results.get("problems", []):
        print(f"  problem: {p}")
    print(f"*** results in {out / 'results.json'}; teardown left {len(results['leftovers'])} objects")
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp experiment mininet", description=__doc__.splitlines()[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
