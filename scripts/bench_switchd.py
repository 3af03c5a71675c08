#!/usr/bin/env python3
"""Packet rate of the switch *process* (``saatp switch``) against a minimal Python forwarder.

Two workloads (``--mode``):

* ``router``: ``p4src/basic_router.p4`` with one /24 route; 60-byte IPv4/UDP frames enter on
  port 1 and leave on port 2;
* ``saatp``: the SA-ATP program for K lanes (``--k``, default 256, generated like
  ``saatp-gen-p4``), one job of two workers.  The data packets are recorded from the
  virtual-clock harness (``emulation.harness``: real workers, real switch program, exact
  sums checked) and replayed in the same order into port 1; every pair of contributions
  completes a chunk whose result is multicast to ports 1 and 2, so outputs = inputs.

Two kinds of ports (``--ports``):

* ``veth`` (root, the default when available): the script makes a network namespace with
  two veth pairs (``sw0``-``t0``, ``sw1``-``t1``, offloads off, IPv6 off:
  ``emulation.testing.netns.VethNamespace``), runs itself inside it, and deletes it at the
  end.  The switch's ports 1 and 2 are ``sw0`` and ``sw1``.  Frames are sent on ``t0`` with a
  packet socket; what the switch delivers is read from the kernel's ``rx_packets`` counters
  of ``t0``/``t1``;
* ``udp``: UDP-tunnel ports on 127.0.0.1 (no root).

For each offered rate (``--rates``, 0 = as fast as the sender can) the switch process is
started fresh (so the SA-ATP replay meets a fresh switch), configured over P4Runtime, fed
``--packets`` frames, and the delivered rate and loss are printed.  The same is done with
a *reference forwarder*: a minimal Python process that moves frames from port 1 to port 2
with the same kind of sockets and no pipeline.  The summary gives the best rate with < 1 %
loss of each, their ratio (how much of the switch's cost is the pipeline rather than
I/O), and ``Switch.process`` measured in this process on the same frames.

With ``simple_switch_grpc`` and ``p4c-bm2-ss`` on PATH (``--bmv2 auto``, the default; veth
ports), BMv2 runs the same program (compiled by p4c-bm2-ss, pushed over P4Runtime with p4c's
P4Info and JSON, the same table entries) on the same veths with the same frames and sender, and
the summary gives our switch's rates over BMv2's.

    .venv/bin/python scripts/bench_switchd.py [--mode router,saatp] [--ports veth|udp]
        [--packets 20000] [--rates 20000,50000,100000,0] [--k 256] [--bmv2 auto|yes|no] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host_agent.free_ports import free_tcp_port, free_udp_ports  # noqa: E402
from emulation.testing.netns import VethNamespace, netns_available  # noqa: E402

ROUTER = ROOT / "p4src" / "basic_router.p4"
BMV2_REFERENCE_PPS = 15000     # simple_switch_grpc, IPv4 router, this kind of machine (not measured here)
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


# ------------------------------------------------------------------ workloads
def router_frames(n: int) -> list[bytes]:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    pool = [bytes(Ether(dst="00:00:00:00:00:fe", src="00:00:00:00:00:01") /
                  IP(src="10.0.1.1", dst=f"10.0.2.{1 + i % 200}", ttl=64) / UDP(sport=1000 + i % 50, dport=9) /
                  (b"x" * 18)) for i in range(min(n, 1000))]
    return [pool[i % len(pool)] for i in range(n)]


def saatp_frames(n: int, k: int) -> tuple[str, list[bytes], int]:
    """(program, frames, expected outputs): SA-ATP data packets of a two-worker job recorded
    from the harness, in the order the switch saw them."""
    import numpy as np
    from emulation.harness import Network, add_job
    from host_agent.switch_program import saatp_program
    prog = str(saatp_program(k))
    net = Network(program=prog)
    job = add_job(net, 0, 2, k=k, pool=32, t_s=10.0)
    seen: list[bytes] = []
    orig = net.sw.process

    def record(port: int, frame: bytes):
        seen.append(frame)
        return orig(port, frame)
    net.sw.process = record
    rng = np.random.default_rng(1)
    elems = 32 * k
    while len(seen) < n:
        qs = [rng.integers(-1000, 1000, elems, dtype=np.int32) for _ in range(2)]
        r = job.run_iteration(qs)
        if not (r.ok and all(np.array_equal(s, qs[0] + qs[1]) for s in r.sums)):
            raise SystemExit("the harness run that records the SA-ATP packets failed")
    return prog, seen, net.switch_outputs


def setup_router(client) -> None:
    from host_agent.match import Lpm
    client.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, "MyIngress.ipv4_forward",
                  {"dstAddr": 0x000000000202, "port": 2})


def setup_saatp(client) -> None:
    from host_agent.controller import Controller, JobSpec
    from host_agent.p4runtime.target import P4RuntimeTarget
    ctl = Controller(P4RuntimeTarget(client))
    for port in (1, 2):   # the harness's endpoints: port p is host 10.0.0.p
        ctl.add_host(port, f"02:00:00:00:00:{port:02x}", f"10.0.0.{port}")
    ctl.configure_job(JobSpec(job=0, ports={0: 1, 1: 2}, nworkers=2, pool=32, t_s=10.0))


def inprocess_rate(program: str, frames: list[bytes], setup_local) -> float:
    from emulation.v1model.load import load_switch
    sw = load_switch(program)
    setup_local(sw)
    t0 = time.perf_counter()
    for f in frames:
        sw.process(1, f)
    return len(frames) / (time.perf_counter() - t0)


def setup_router_local(sw) -> None:
    from host_agent.match import Lpm
    sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, [0x000000000202, 2])


def setup_saatp_local(sw) -> None:
    from host_agent.controller import Controller, JobSpec
    ctl = Controller(sw)
    for port in (1, 2):
        ctl.add_host(port, f"02:00:00:00:00:{port:02x}", f"10.0.0.{port}")
    ctl.configure_job(JobSpec(job=0, ports={0: 1, 1: 2}, nworkers=2, pool=32, t_s=10.0))


def bmv2_missing(kind: str) -> str | None:
    """Why BMv2 cannot run beside the switch here (None: it can)."""
    from emulation.net.commands import bmv2_binary, p4c_binary
    if kind != "veth":
        return "BMv2 has no UDP-tunnel ports (veth only)"
    missing = [t for t, f in (("simple_switch_grpc", bmv2_binary), ("p4c-bm2-ss", p4c_binary)) if f() is None]
    return f"{' and '.join(missing)} not on PATH" if missing else None


def bmv2_build(program: str, args, kind: str) -> tuple[str, str] | None:
    """(P4Info, JSON) of ``program`` compiled by p4c-bm2-ss, for running BMv2's
    simple_switch_grpc on the same ports, frames and sender (``--bmv2 auto``: when both tools
    are on PATH); None when BMv2 is not run."""
    if args.bmv2 == "no":
        return None
    why = bmv2_missing(kind)
    if why is not None:
        if args.bmv2 == "yes":
            raise SystemExit(f"--bmv2 yes: {why}")
        return None
    import tempfile
    from emulation.net.commands import p4c_command
    build = tempfile.mkdtemp(prefix="saatp-bench-p4c-")
    argv, json_path, p4info = p4c_command(program, build)
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"p4c-bm2-ss refused {program}:\n{r.stdout}{r.stderr}")
    return p4info, json_path


# ------------------------------------------------------------------ veth port names
# the switch's ports 1 and 2, and the tester's ends of their veth pairs
SWITCH_IFS = (VethNamespace.switch_if(0), VethNamespace.switch_if(1))
TESTER_IFS = (VethNamespace.tester_if(0), VethNamespace.tester_if(1))


# ------------------------------------------------------------------ the reference forwarder
def forward_main(kind: str, a: str, b: str) -> int:
    """Move frames from port 1 to port 2 as fast as possible: the I/O a switch cannot avoid."""
    if kind == "veth":
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        rx.bind((a, 0))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        tx.bind((b, 0))
    else:
        lport, rport = int(a), int(b)
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind(("127.0.0.1", lport))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tx.connect(("127.0.0.1", rport))
    print("forwarder ready", flush=True)
    buf = bytearray(65536)
    view = memoryview(buf)
    send = tx.send
    dontwait = socket.MSG_DONTWAIT
    while True:
        select.select([rx], [], [])
        for _ in range(64):
            try:
                n, addr = rx.recvfrom_into(buf, 65536, dontwait)
            except BlockingIOError:
                break
            if kind == "veth" and addr[2] == PACKET_OUTGOING:
                continue
            try:
                send(view[:n])
            except OSError:
                pass


# ------------------------------------------------------------------ one run
class Ports:
    """The sender and the delivered-frame count, over veths or UDP tunnels."""

    def __init__(self, kind: str):
        self.kind = kind
        if kind == "veth":
            self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            self.tx.bind((TESTER_IFS[0], 0))
            self.tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
            self.switch_ports = [f"1@{SWITCH_IFS[0]}", f"2@{SWITCH_IFS[1]}"]
            self.fwd_args = list(SWITCH_IFS)
        else:
            s1, h1, s2, h2 = free_udp_ports(4)
            self.switch_ports = [f"1@udp:{s1}:127.0.0.1:{h1}", f"2@udp:{s2}:127.0.0.1:{h2}"]
            self.fwd_args = [str(s1), str(h2)]
            self.dest = ("127.0.0.1", s1)
            self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.tx.bind(("127.0.0.1", h1))
            self.tx.connect(self.dest)
            self.rx2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.rx2.bind(("127.0.0.1", h2))
            for s in (self.tx, self.rx2):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            self._got = 0
            self._stop = threading.Event()
            self._th = threading.Thread(target=self._count_udp, daemon=True)
            self._th.start()

    def _count_udp(self) -> None:
        socks = [self.tx, self.rx2]
        while not self._stop.is_set():
            r, _, _ = select.select(socks, [], [], 0.2)
            for s in r:
                while True:
                    try:
                        s.recv(65536, socket.MSG_DONTWAIT)
                        self._got += 1
                    except (BlockingIOError, ConnectionRefusedError):
                        break

    def delivered(self) -> int:
        if self.kind == "veth":
            return sum(int(Path(f"/sys/class/net/{i}/statistics/rx_packets").read_text()) for i in TESTER_IFS)
        return self._got

    def kernel_counters(self) -> dict:
        """The kernel's per-interface counters of the four veths (frames the kernel dropped
        before any process could read them show here, not in the switch's own stats)."""
        if self.kind != "veth":
            return {}
        out = {}
        for i in (*SWITCH_IFS, *TESTER_IFS):
            d = Path(f"/sys/class/net/{i}/statistics")
            out[i] = {k: int((d / k).read_text()) for k in ("rx_packets", "rx_dropped", "tx_packets", "tx_dropped")}
        return out

    def send_all(self, frames: list[bytes], rate: float) -> float:
        from emulation.testing.traffic import send_paced
        return send_paced(self.tx.send, frames, rate)

    def close(self) -> None:
        if self.kind != "veth":
            self._stop.set()
            self._th.join()
            self.rx2.close()
        self.tx.close()


def start(cmd: list[str], ready: str) -> subprocess.Popen:
    """Start ``cmd``; ready when it prints a line containing ``ready``, or, for ``tcp:PORT``,
    when 127.0.0.1:PORT accepts connections (BMv2 prints nothing we could wait for)."""
    tcp = int(ready[4:]) if ready.startswith("tcp:") else None
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE if tcp is None else subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    if tcp is not None:
        from emulation.net.p4switch import wait_tcp
        if not wait_tcp("127.0.0.1", tcp, 120, lambda: proc.poll() is None):
            proc.kill()
            raise SystemExit(f"{' '.join(cmd)} did not start (no gRPC server on port {tcp})")
        return proc
    end = time.time() + 120
    while time.time() < end:
        line = proc.stdout.readline()
        if ready in line or proc.poll() is not None:
            break
    if proc.poll() is not None:
        raise SystemExit(f"{' '.join(cmd)} did not start:\n{proc.stdout.read()}")
    return proc


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        rest, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        rest, _ = proc.communicate()
    return rest or ""


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far (``/proc/PID/task/*/schedstat``, ns on a CPU)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def one_rate(ports: Ports, cmd: list[str], ready: str, setup, frames: list[bytes], expected: int,
             rate: float, grpc: str | None, pipeline: tuple[str, str] | None = None) -> dict:
    proc = start(cmd, ready)
    try:
        if grpc is not None:
            from host_agent.p4runtime.client import P4RuntimeClient
            with P4RuntimeClient(grpc, device_id=0, election_id=1) as c:
                if pipeline is not None:          # BMv2: p4c's P4Info and JSON
                    from emulation.p4runtime.p4info import read_p4info
                    c.set_pipeline(read_p4info(pipeline[0]), Path(pipeline[1]).read_bytes())
                c.load_p4info()
                setup(c)
        time.sleep(0.2)
        base = ports.delivered()
        k0 = ports.kernel_counters()
        cpu0 = cpu_seconds(proc.pid)
        t_send = ports.send_all(frames, rate)
        t0 = time.perf_counter() - t_send
        last, quiet = ports.delivered(), time.perf_counter()
        while time.perf_counter() - quiet < 0.5:      # drain until 0.5 s without progress
            time.sleep(0.05)
            now = ports.delivered()
            if now != last:
                last, quiet = now, time.perf_counter()
        got = last - base
        cpu = cpu_seconds(proc.pid) - cpu0
        k1 = ports.kernel_counters()
        kernel = {i: {k: v - k0[i][k] for k, v in c.items()} for i, c in k1.items()}
    finally:
        rest = stop(proc)
    t_all = quiet - t0
    stats = [ln for ln in rest.splitlines() if ln.startswith("saatp switch: stats ")]
    # frames the process read: the switch's own rx counters (the stats line at exit); for the
    # forwarder, the frames it delivered in proportion (it drops nothing it read)
    handled = got * len(frames) / expected
    if stats:
        try:
            handled = sum(p["rx"] for p in json.loads(stats[-1][20:])["ports"].values())
        except (ValueError, KeyError, TypeError):
            pass
    return {"offered_pps": round(len(frames) / t_send), "sent": len(frames), "expected": expected,
            "delivered": got, "delivered_pps": round(got / t_all) if t_all > 0 else 0,
            "input_pps": round(got * len(frames) / expected / t_all) if t_all > 0 else 0,
            "loss": round(1 - got / expected, 4), "cpu_s": round(cpu, 4), "handled": round(handled),
            "cpu_pps": round(handled / cpu) if cpu > 0 else 0, "switch_stats": stats[-1][20:] if stats else None,
            "kernel": kernel}


def run_mode(mode: str, args, kind: str) -> dict:
    n = args.packets
    if mode == "router":
        program, frames, expected = str(ROUTER), router_frames(n), n
        setup, setup_local = setup_router, setup_router_local
    else:
        program, frames, expected = saatp_frames(n, args.k)
        setup, setup_local = setup_saatp, setup_saatp_local
    inproc = inprocess_rate(program, frames, setup_local)
    print(f"\n== {mode}: {program}, {len(frames)} frames of {len(frames[0])} bytes, {kind} ports; "
          f"in-process Switch.process {inproc:,.0f} pps")
    ports = Ports(kind)
    out = {"program": program, "frames": len(frames), "frame_bytes": len(frames[0]), "inprocess_pps": round(inproc),
           "switch": [], "forwarder": []}
    whos = ["switch", "forwarder"]
    bmv2 = bmv2_build(program, args, kind)
    if bmv2 is not None:
        whos.append("bmv2")
        out["bmv2"] = []
    try:
        for who in whos:
            for rate in [float(r) for r in args.rates.split(",")]:
                if who == "bmv2":
                    from emulation.net.commands import bmv2_command
                    gport = free_tcp_port()
                    intfs = {int(p.split("@")[0]): p.split("@")[1] for p in ports.switch_ports}
                    cmd = bmv2_command(intfs, json_path=bmv2[1], grpc_port=gport, thrift_port=free_tcp_port())
                    r = one_rate(ports, cmd, f"tcp:{gport}", setup, frames, expected, rate, f"127.0.0.1:{gport}",
                                 pipeline=(bmv2[0], bmv2[1]))
                elif who == "switch":
                    gport = free_tcp_port()
                    cmd = [sys.executable, "-m", "emulation.switchd"]
                    for p in ports.switch_ports:
                        cmd += ["-i", p]
                    cmd += [program, "--", "--grpc-server-addr", f"127.0.0.1:{gport}"]
                    r = one_rate(ports, cmd, "P4Runtime on", setup, frames, expected, rate, f"127.0.0.1:{gport}")
                else:
                    cmd = [sys.executable, str(Path(__file__).resolve()), "--forward", kind, *ports.fwd_args]
                    r = one_rate(ports, cmd, "forwarder ready", None, frames, len(frames), rate, None)
                out[who].append(r)
                print(f"  {who:9s} offered {r['offered_pps']:9,d} pps -> delivered {r['delivered']:6d}/"
                      f"{r['expected']} ({r['input_pps']:9,d} input pps, loss {100 * r['loss']:5.1f}%); "
                      f"CPU {1e6 * r['cpu_s'] / max(1, r['handled']):5.1f} us/frame read -> {r['cpu_pps']:9,d} pps per core")
                if r["switch_stats"] and args.verbose:
                    print("            " + r["switch_stats"])
                if r["kernel"] and args.verbose:
                    print("            kernel: " + ", ".join(
                        f"{i} rx {c['rx_packets']} (dropped {c['rx_dropped']}) tx {c['tx_packets']} "
                        f"(dropped {c['tx_dropped']})" for i, c in r["kernel"].items()))
    finally:
        ports.close()
    best = {who: max((r["input_pps"] for r in out[who] if r["loss"] < 0.01), default=0) for who in whos}
    out["best_lossless_pps"] = best
    # CPU capacity: frames per second of the process's own CPU time, in the run at the
    # highest offered rate (busiest, so batching is as in overload); robust to a shared machine
    cap = {who: max((r["cpu_pps"] for r in out[who]), default=0) for who in whos}
    out["cpu_capacity_pps"] = cap
    ratio = best["switch"] / best["forwarder"] if best["forwarder"] else 0.0
    out["switch_over_forwarder"] = round(ratio, 3)
    print(f"  best with < 1% loss: switch {best['switch']:,d} pps, reference forwarder {best['forwarder']:,d} pps "
          f"-> switch/forwarder = {ratio:.2f}; switch/in-process = {best['switch'] / inproc:.2f}")
    cratio = cap["switch"] / cap["forwarder"] if cap["forwarder"] else 0.0
    out["cpu_switch_over_forwarder"] = round(cratio, 3)
    print(f"  per core of CPU time: switch {cap['switch']:,d} pps, reference forwarder {cap['forwarder']:,d} pps "
          f"-> {cratio:.2f}")
    if bmv2 is not None:
        print(f"  BMv2 simple_switch_grpc, same frames and sender: best with < 1% loss {best['bmv2']:,d} pps, "
              f"{cap['bmv2']:,d} pps per core of CPU time -> saatp switch / BMv2 = "
              f"{best['switch'] / best['bmv2'] if best['bmv2'] else float('inf'):.1f} (lossless), "
              f"{cap['switch'] / cap['bmv2'] if cap['bmv2'] else float('inf'):.1f} (per core)")
    elif mode == "router":
        print(f"  (BMv2 not run: {bmv2_missing(kind)}; its reference figure for this machine class, not measured "
              f"here: {BMV2_REFERENCE_PPS:,d} pps -> x{best['switch'] / BMV2_REFERENCE_PPS:.1f})")
    if mode != "router":
        print(f"  aggregated: {best['switch'] * args.k / 1e6:.1f}M elements/s at K={args.k}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="router,saatp", help="workloads, comma-separated: router, saatp")
    ap.add_argument("--ports", choices=["veth", "udp"], default=None,
                    help="veth (root; default when available) or udp")
    ap.add_argument("--packets", type=int, default=20000, help="frames offered per rate (20000)")
    ap.add_argument("--rates", default="20000,50000,100000,0", help="offered rates, pps (0 = max)")
    ap.add_argument("--k", type=int, default=256, help="SA-ATP lanes per packet (256)")
    ap.add_argument("--json", default=None, help="write the figures as JSON")
    ap.add_argument("--bmv2", choices=["auto", "yes", "no"], default="auto",
                    help="also run BMv2's simple_switch_grpc (program compiled by p4c-bm2-ss) on the same veths, "
                         "frames and sender: auto = when both are on PATH (default)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the switch's own counters per run")
    ap.add_argument("--in-netns", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--forward", nargs=3, metavar=("KIND", "IN", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.forward:
        return forward_main(*args.forward)
    kind = args.ports or ("veth" if netns_available() is None else "udp")
    if kind == "veth" and args.in_netns is None:
        why = netns_available()
        if why:
            raise SystemExit(f"--ports veth {why}")
        with VethNamespace(len(SWITCH_IFS), prefix="saatp-bench") as ns:
            inner = [a for a in (argv if argv is not None else sys.argv[1:])]
            return subprocess.call(ns.wrap([sys.executable, str(Path(__file__).resolve()),
                                            *inner, "--ports", "veth", "--in-netns", ns.name]))
    load = os.getloadavg()
    print(f"switch process benchmark, {kind} ports, {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start")
    results = {"ports": kind, "cpus": os.cpu_count(), "load_at_start": load, "modes": {}}
    for mode in [m.strip() for m in args.mode.split(",") if m.strip()]:
        if mode not in ("router", "saatp"):
            raise SystemExit(f"--mode {mode}: expected router or saatp")
        results["modes"][mode] = run_mode(mode, args, kind)
    results["load_at_end"] = os.getloadavg()
    print(f"\nload average at end {results['load_at_end'][0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
