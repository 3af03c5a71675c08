"""``saatp demo``: the project's main job on a fresh machine.

1. The embedded P4 target: checks ``p4src/basic_router.p4`` with the front end, loads it
   on the v1model target, installs routes through the control-plane API, pushes packets
   through it and prints what came out of which port.
2. SA-ATP: a straggler experiment on the embedded target running ``p4src/saatp.p4``
   (SA-ATP against SwitchML-like, ATP-like and ring all-reduce, straggler delays of 0, 1,
   5 and 20 times the threshold), printing the table and writing JSON and a PNG plot.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from emulation import experiment
from emulation.v1model.load import load_switch
from host_agent.match import Lpm

ROOT = Path(__file__).resolve().parent.parent
P4SRC = ROOT / "p4src"


def _router_demo() -> int:
    from scapy.layers.inet import IP, UDP, ICMP
    from scapy.layers.l2 import Ether
    from rich.console import Console
    from rich.table import Table as RTable


    con = Console()
    prog = P4SRC / "basic_router.p4"
    con.print(f"[bold]1. front end[/bold]: checking {prog.relative_to(ROOT)}")
    sw = load_switch(str(prog))
    con.print(f"   ok: tables {sorted(sw.tables)}")
    routes = [("10.0.1.0", 24, 1, "00:00:00:00:01:01"), ("10.0.2.0", 24, 2, "00:00:00:00:02:02"),
              ("10.0.0.0", 8, 3, "00:00:00:00:03:03")]
    con.print("[bold]2. control plane[/bold]: installing routes")
    for net, plen, port, mac in routes:
        ip = int.from_bytes(bytes(int(x) for x in net.split(".")), "big")
        sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(ip, plen)},
                     {"dstAddr": int(mac.replace(":", ""), 16), "port": port})
        con.print(f"   {net}/{plen} -> port {port} ({mac})")
    con.print("[bold]3. data plane[/bold]: packets in, packets out")
    tab = RTable("in port", "packet in", "out port", "packet out")
    pkts = [
        Ether(dst="00:00:00:00:00:fe", src="00:00:00:00:00:01") / IP(src="10.0.9.9", dst="10.0.1.5", ttl=64) / UDP(sport=1234, dport=9000) / b"hello",
        Ether(dst="00:00:00:00:00:fe", src="00:00:00:00:00:01") / IP(src="10.0.9.9", dst="10.0.2.7", ttl=3) / ICMP(),
        Ether(dst="00:00:00:00:00:fe", src="00:00:00:00:00:01") / IP(src="10.0.9.9", dst="10.200.0.1", ttl=17) / UDP(),
        Ether(dst="00:00:00:00:00:fe", src="00:00:00:00:00:01") / IP(src="10.0.9.9", dst="192.168.1.1") / UDP(),
    ]
    for p in pkts:
        outs = sw.process(0, bytes(p))
        if not outs:
            tab.add_row("0", p.summary(), "-", "(dropped)")
        for port, data in outs:
            o = Ether(data)
            ttl = o[IP].ttl if IP in o else "-"
            tab.add_row("0", f"{p.summary()} ttl={p[IP].ttl}", str(port), f"{o.summary()} ttl={ttl} dst={o.dst}")
    con.print(tab)
    return 0


def _straggler_demo(out_dir: Path, quick: bool) -> int:
    from rich.console import Console

    Console().print("\n[bold]4. SA-ATP[/bold]: straggler experiment on the embedded target "
                    "(p4src/saatp.p4; in-process harness, virtual clock)")
    out_dir.mkdir(parents=True, exist_ok=True)
    p = argparse.ArgumentParser()
    experiment.add_arguments(p)
    argv = ["--iterations", "1", "--json", str(out_dir / "straggler.json"),
            "--plot", str(out_dir / "straggler.png")]
    if quick:
        argv += ["--workers", "4", "--elements", "8192"]
    return int(experiment.run(p.parse_args(argv)) or 0)


def run(args: argparse.Namespace) -> int:
    rc = _router_demo()
    if rc:
        return rc
    return _straggler_demo(Path(args.out), getattr(args, "quick", False))
