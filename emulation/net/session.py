"""A Mininet network of P4 switches, from start to a verified teardown.

    with NetSession(single_switch(4), "saatp", program="p4src/basic_router.p4", out="results/x") as s:
        s.program_switches()          # runtime JSON or one /32 route per host, over P4Runtime
        s.ping_all()
        results = s.run_agents(commands)
    assert s.leftovers() == []        # interfaces, processes, network namespaces, cgroups

Everything created is recorded (interface names, pids, network-namespace inodes, cgroup
directories) and :meth:`stop` removes exactly that; it never runs Mininet's global clean-up.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from host_agent.controller import Controller, JobSpec
from host_agent.p4runtime.target import P4RuntimeTarget

from .control import apply_runtime, connect, ensure_pipeline, read_counters
from .hostsetup import CpuLimit, set_mtu, setup_host
from .topo import TopologyError, TopoSpec, _find_file, build_net, builtin_runtime

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PROGRAM = str(REPO / "p4src" / "basic_router.p4")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except OSError:
        return False
    return False


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a process has used (``/proc/PID/stat``), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def machine_cpu() -> tuple[float, float] | None:
    """(busy, total) CPU jiffies of the whole machine so far (``/proc/stat``), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)      # idle + iowait
    return float(sum(v) - idle), float(sum(v))


def _netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _named_netns() -> set[str]:
    try:
        return set(os.listdir("/run/netns"))
    except OSError:
        return set()


def processes_in_netns(inodes: set[int]) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            ino = _netns_inode(int(d))
            if ino in inodes and _alive(int(d)):
                out.append(int(d))
    return out


def runtime_artifacts(sp) -> tuple[str | None, str | None]:
    """(bmv2_json, p4info) named by a switch's runtime JSON, as existing paths (or None)."""
    base = Path(sp.runtime_path).parent if sp.runtime_path else Path.cwd()
    out = []
    for key in ("bmv2_json", "p4info"):
        v = sp.runtime.get(key)
        if not v:
            out.append(None)
            continue
        try:
            out.append(str(_find_file(v, [base, base.parent, Path.cwd()])))
        except TopologyError as e:
            raise TopologyError(f"{sp.name}: runtime JSON's {key}: {e}") from None
    return out[0], out[1]


def link_exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")


class NetSession:
    def __init__(self, spec: TopoSpec, switch: str = "saatp", *, program: str | None = None,
                 out: str | Path = "results/mininet", pcap: bool = False, log_console: bool = False,
                 impair: dict[str, dict[int, str]] | None = None, p4info: str | None = None,
                 switch_params: dict[str, dict] | None = None, link_rate: float | None = None,
                 queue_depth: int | None = None, mtu: int | None = None):
        from .p4switch import SWITCH_CLASSES  # imports Mininet, which may be missing: only when used
        if switch not in SWITCH_CLASSES:
            raise ValueError(f"switch kind {switch!r}: choose saatp or bmv2")
        self.spec = spec
        self.mtu = mtu        # every link's MTU (None: the default), set before the switches open their ports
        self.kind = switch
        self.cls = SWITCH_CLASSES[switch]
        self.program = program or (DEFAULT_PROGRAM if switch == "saatp" else None)
        self.p4info = p4info
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.logs = self.out / "logs"
        self.logs.mkdir(exist_ok=True)
        imp = spec.port_impairments()
        for sw, ports in (impair or {}).items():
            imp.setdefault(sw, {}).update(ports)
        if switch != "saatp" and any(imp.values()):
            raise ValueError("link impairments need saatp switch (BMv2 has no per-port impairment; tc is unavailable)")
        self.params: dict[str, dict] = {}
        self.p4infos: dict[str, str | None] = {}
        for i, name in enumerate(spec.switches):
            sp = spec.switches[name]
            prog, self.p4infos[name] = sp.program or self.program, p4info
            if switch == "bmv2" and sp.runtime and not prog:
                # the tutorials' runtime JSON names p4c's outputs (relative to the exercise folder)
                prog, self.p4infos[name] = runtime_artifacts(sp)
            p: dict[str, Any] = {"program": prog, "device_id": i,
                                 "log_dir": str(self.logs), "log_console": log_console}
            if pcap:
                p["pcap_dir"] = str(self.out / "pcap" / name)
            if switch == "saatp" and imp.get(name):
                p["impair"] = imp[name]
            if link_rate:
                # every host-facing port: the switch's egress queue toward the host, at the link rate
                p["queue_rate"] = {port: float(link_rate) for h in spec.hosts
                                   for sw, port in [spec.host_port(h)] if sw == name}
                p["queue_depth"] = queue_depth
            p.update((switch_params or {}).get(name, {}))
            self.params[name] = p
        self.net = None
        self.clients: dict[str, Any] = {}
        self.created: dict[str, Any] = {"intfs": [], "pids": [], "netns": [], "cgroups": [],
                                        "named_netns_before": sorted(_named_netns())}
        self.agents: list[Any] = []
        self.cpu_limits: list[CpuLimit] = []
        self.stopped = False
        self.switch_exit: dict[str, int | None] = {}   # exit status of each switch process (0 = clean)
        self.switch_cpu: dict[str, dict] = {}          # each switch's CPU use while the agents ran
        self.machine_busy: float | None = None          # the machine's CPU use while the agents ran (0..1)

    # ---------------------------------------------------------------- life cycle
    def start(self) -> "NetSession":
        taken = sorted(n for n in os.listdir("/sys/class/net")
                       if any(n.startswith(f"{sw}-eth") for sw in self.spec.switches))
        if taken:
            raise RuntimeError(f"interface(s) {', '.join(taken)} exist already (another Mininet network with "
                               "the same switch names is running, or a crashed run left them): "
                               f"remove them with `ip link del NAME` or rename the switches")
        self.net = build_net(self.spec, self.cls, self.params)
        try:
            self.net.build()
            for node in self.net.hosts + self.net.switches:
                self.created["pids"].append(node.pid)
                for intf in node.intfList():
                    if intf.name != "lo":
                        self.created["intfs"].append(intf.name)
            for h in self.net.hosts:
                ino = _netns_inode(h.pid)
                if ino is not None:
                    self.created["netns"].append(ino)
            if self.mtu:
                set_mtu(self.net, self.mtu)
            self.net.start()      # starts the switches and waits for their gRPC ports
            for sw in self.net.switches:
                self.created["pids"] += sw.pids()
            arp = self.spec.arp_table()
            for h in self.net.hosts:
                setup_host(h, arp)
                for c in self.spec.hosts[h.name].commands:
                    h.cmd(re.sub(r"\beth0\b", h.defaultIntf().name, c))
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> "NetSession":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def switch_nodes(self) -> dict[str, Any]:
        return {s.name: s for s in self.net.switches}

    def program_switches(self) -> dict[str, int]:
        """Install each switch's runtime JSON (or the built-in /32 routes) over P4Runtime."""
        builtin = builtin_runtime(self.spec)
        counts = {}
        for name, node in self.switch_nodes().items():
            c = connect(node.grpc_address, node.device_id)
            self.clients[name] = c
            ensure_pipeline(c, self.kind, node.program, self.p4infos.get(name))
            rt = self.spec.switches[name].runtime or builtin[name]
            counts[name] = apply_runtime(c, rt)
        return counts

    def program_saatp(self, mode: str = "saatp", t_s: float = 0.05, pool: int = 32, job: int = 0) -> str:
        """Configure one SA-ATP job of all hosts (wid = host order) on a single switch running
        ``p4src/saatp.p4``, with :class:`host_agent.controller.Controller` over P4Runtime.
        Returns the configuration as simple_switch_CLI commands."""

        if len(self.spec.switches) != 1:
            raise ValueError("SA-ATP runs need one aggregation switch: use the single-switch topology "
                             "(between racks the switches only forward IPv4; see docs/mininet.md)")
        (name, node), = self.switch_nodes().items()
        c = connect(node.grpc_address, node.device_id)
        self.clients[name] = c
        ensure_pipeline(c, self.kind, node.program, self.p4infos.get(name))
        ctl = Controller(P4RuntimeTarget(c), self.spec.agg_mac, self.spec.agg_ip)
        ports = {}
        for w, (hn, h) in enumerate(self.spec.hosts.items()):
            _, port = self.spec.host_port(hn)
            ctl.add_host(port, h.mac, h.addr)
            ports[w] = port
        ctl.configure_job(JobSpec(job=job, ports=ports, nworkers=len(ports), pool=pool, t_s=t_s, mode=mode))
        self.controller = ctl
        self.job = job
        return ctl.cli_commands()

    def ping_all(self, count: int = 1, timeout: int = 2) -> dict[str, Any]:
        """Every host pings every other host once; returns {"pairs": n, "lost": [(a, b)]}."""
        lost = []
        hosts = self.net.hosts
        for a in hosts:
            for b in hosts:
                if a is b:
                    continue
                out = a.cmd(f"ping -c {count} -W {timeout} -q {b.IP()}")
                m = re.search(r"(\d+) received", out)
                if not m or int(m.group(1)) == 0:
                    lost.append((a.name, b.name))
        return {"pairs": len(hosts) * (len(hosts) - 1), "lost": lost}

    def run_agents(self, commands: dict[str, list[str]], *, cpu: dict[str, float] | None = None,
                   timeout: float = 120.0) -> dict[str, dict]:
        """Run ``commands[host]`` (an argv) in each host; each must write the JSON file named by
        its ``--out`` argument.  Returns {host: {"rc": .., "log": .., "result": {...}|None}}."""
        procs = {}
        # the switches' CPU use over the run: a switch busy all the time sets the pace
        sw_cpu0 = {sw.name: cpu_seconds(sw.proc.pid) for sw in self.net.switches if getattr(sw, "proc", None)}
        t_start = time.monotonic()
        m0 = machine_cpu()
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONUNBUFFERED="1")
        for hname, argv in commands.items():
            h = self.net.get(hname)
            logf = open(self.logs / f"agent-{hname}.log", "wb")
            p = h.popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                        cwd=str(REPO))
            logf.close()
            self.agents.append(p)
            self.created["pids"].append(p.pid)
            procs[hname] = p
            if cpu and hname in cpu:
                lim = CpuLimit(f"saatp-net-{os.getpid()}-{hname}", cpu[hname])
                self.cpu_limits.append(lim)
                self.created["cgroups"].append(str(lim.path))
                lim.add(p.pid)
        end = time.monotonic() + timeout
        out = {}
        for hname, p in procs.items():
            try:
                rc = p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
                rc = f"killed after {timeout}s"
            out[hname] = {"rc": rc, "log": str(self.logs / f"agent-{hname}.log")}
        wall = time.monotonic() - t_start
        m1 = machine_cpu()
        # how busy the whole machine was (every process, not only ours): near 1, the CPUs set the pace
        self.machine_busy = round((m1[0] - m0[0]) / (m1[1] - m0[1]), 3) if m0 and m1 and m1[1] > m0[1] else None
        self.switch_cpu = {}
        for sw in self.net.switches:
            c0, c1 = sw_cpu0.get(sw.name), cpu_seconds(sw.proc.pid) if getattr(sw, "proc", None) else None
            if c0 is not None and c1 is not None:
                self.switch_cpu[sw.name] = {"cpu_s": round(c1 - c0, 3), "wall_s": round(wall, 3),
                                            "busy": round((c1 - c0) / wall, 3) if wall > 0 else None}
        for hname, argv in commands.items():
            res = None
            if "--out" in argv:
                f = Path(argv[argv.index("--out") + 1])
                try:
                    res = json.loads(f.read_text())
                except (OSError, json.JSONDecodeError):
                    res = None
            out[hname]["result"] = res
        return out

    # ---------------------------------------------------------------- metrics
    def switch_counters(self) -> dict[str, Any]:
        out = {}
        for name, node in self.switch_nodes().items():
            ports = {}
            for port, intf in node.port_map().items():
                st = {}
                for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped"):
                    try:
                        st[k] = int(Path(f"/sys/class/net/{intf}/statistics/{k}").read_text())
                    except OSError:
                        pass
                ports[port] = {"intf": intf, **st}
            p4 = {}
            if name in self.clients:
                try:
                    p4 = read_counters(self.clients[name])
                except Exception as e:  # noqa: BLE001
                    p4 = {"error": str(e)}
            out[name] = {"ports": ports, "p4_counters": p4}
            if getattr(self, "controller", None) is not None:
                try:
                    out[name]["saatp"] = {"events": self.controller.counters(self.job),
                                          "drops": self.controller.drops()}
                except Exception as e:  # noqa: BLE001
                    out[name]["saatp"] = {"error": str(e)}
        return out

    # ---------------------------------------------------------------- teardown
    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        for c in self.clients.values():
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass
        for p in self.agents:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(5)
        for lim in self.cpu_limits:
            lim.remove()
        if self.net is not None:
            for sw in self.net.switches:
                if hasattr(sw, "stop_process") and sw.proc is not None:
                    self.switch_exit[sw.name] = sw.stop_process()
            self.net.stop()

    def final_switch_stats(self) -> dict[str, Any]:
        """Each saatp switch's statistics at exit (after :meth:`stop`): per port rx, forwarded,
        drops by reason, kernel receive overflows, queue drops and the queues' state."""
        out = {}
        for sw in (self.net.switches if self.net is not None else []):
            if hasattr(sw, "final_stats"):
                out[sw.name] = sw.final_stats()
        return out

    def leftovers(self) -> list[str]:
        """What this session created and is still there (empty after a clean stop)."""
        left = [f"interface {n}" for n in self.created["intfs"] if link_exists(n)]
        left += [f"process {p}" for p in self.created["pids"] if _alive(p)]
        inos = set(self.created["netns"])
        if inos:
            left += [f"network namespace of process {p}" for p in processes_in_netns(inos)]
        ours = set(self.spec.hosts) | set(self.spec.switches)
        new = (_named_netns() - set(self.created["named_netns_before"])) & ours
        left += [f"named netns {n}" for n in sorted(new)]
        left += [f"cgroup {c}" for c in self.created["cgroups"] if os.path.exists(c)]
        return left
