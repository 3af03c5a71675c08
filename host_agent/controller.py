"""Control plane for SA-ATP on the embedded target (the ``Switch`` Python API).

Configures a job (``job_cfg``, ``wid_port``, the job's multicast group with rid = wid),
the per-port host addresses (egress ``port_addr``) and plain IPv4 routes (``ipv4_fwd``),
updates the straggler threshold, and reads the counters.  Table keys are passed in key
order, so the entries are the same as ``simple_switch_CLI`` would install on BMv2
(:meth:`Controller.cli_commands` prints them in that syntax).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import wire
from .constants import SWITCH_IP, SWITCH_MAC
from .match import Lpm
from .protocol.switch_counters import DROP_REASONS, EVENT_COUNTERS

MODE_DETECT, MODE_MASK = 1, 2
MODES = {"saatp": MODE_DETECT | MODE_MASK, "atp": MODE_DETECT, "switchml": 0}
T_S_INFINITE_US = 0xFFFFFFFF



@dataclass
class Host:
    port: int
    mac: str
    ip: str
    udp_port: int = wire.SA_PORT


@dataclass
class JobSpec:
    job: int
    ports: dict[int, int]            # wid -> switch port (workers and, for ATP, the PS)
    nworkers: int
    pool: int = 32
    t_s: float = 0.050               # seconds; None/inf = never detect
    mode: str = "saatp"              # saatp | atp | switchml
    fixed_helper: int | None = None  # the PS wid for the ATP-like baseline
    mgid: int | None = None
    base: int | None = None          # first slot; allocated when None
    handles: dict = field(default_factory=dict)
    assist_mask: int = 0
    assist_ports: dict[int, int] = field(default_factory=dict)


class Controller:
    def __init__(self, sw, switch_mac: str = SWITCH_MAC, switch_ip: str = SWITCH_IP,
                 nslots: int | None = None):
        self.sw = sw
        self.switch_mac = switch_mac
        self.switch_ip = switch_ip
        self.nslots = nslots if nslots is not None else self._register_size("s_state")
        self.hosts: dict[int, Host] = {}
        self.jobs: dict[int, JobSpec] = {}
        self._next_base = 0
        self._cli: list[str] = []
        self._mc_nodes = 0

    def _register_size(self, name: str) -> int:
        try:
            return int(self.sw.register(name).size)
        except Exception:
            return 1024

    _CTL = {"job_cfg": "SaIngress", "wid_port": "SaIngress", "ipv4_fwd": "SaIngress",
            "port_addr": "SaEgress"}

    def _table_add(self, table: str, action: str, match: list, args: list) -> int:
        c = self._CTL.get(table, "SaIngress")
        self._cli.append(f"table_add {c}.{table} {c}.{action} {' '.join(map(str, match))} => "
                         f"{' '.join(str(a) for a in args)}")
        return self.sw.table_add(table, action, match, args)

    # -------------------------------------------------------------- hosts
    def add_host(self, port: int, mac: str, ip: str, udp_port: int = wire.SA_PORT) -> Host:
        """Egress address rewrite for ``port`` and a /32 route to ``ip``."""
        h = Host(port, mac, ip, udp_port)
        self.hosts[port] = h
        self._table_add("port_addr", "set_addr", [port],
                        [wire.mac_int(self.switch_mac), wire.mac_int(mac),
                         wire.ip_int(self.switch_ip), wire.ip_int(ip), udp_port])
        self.sw.table_add("ipv4_fwd", "fwd", [Lpm(wire.ip_int(ip), 32)], [port])
        self._cli.append(f"table_add SaIngress.ipv4_fwd SaIngress.fwd {ip}/32 => {port}")
        return h

    # --------------------------------------------------------------- jobs
    def configure_job(self, spec: JobSpec) -> JobSpec:
        if spec.mode not in MODES:
            raise ValueError(f"unknown mode {spec.mode!r}; one of {sorted(MODES)}")
        if spec.job in self.jobs:
            raise ValueError(f"job {spec.job} is already configured")
        if not 1 <= spec.nworkers <= wire.MAX_WORKERS:
            raise ValueError(f"1..{wire.MAX_WORKERS} workers per job")
        for w in range(spec.nworkers):
            if w not in spec.ports:
                raise ValueError(f"job {spec.job}: no port for worker {w}")
        if spec.base is None:
            spec.base = self._next_base
        if spec.base + 2 * spec.pool > self.nslots:
            raise ValueError(f"job {spec.job}: slots {spec.base}..{spec.base + 2 * spec.pool - 1}"
                             f" exceed the switch's {self.nslots}")
        for other in self.jobs.values():
            if spec.base < other.base + 2 * other.pool and other.base < spec.base + 2 * spec.pool:
                raise ValueError(f"job {spec.job}: slot range overlaps job {other.job}")
        self._next_base = max(self._next_base, spec.base + 2 * spec.pool)
        if spec.mgid is None:
            spec.mgid = spec.job + 1
        full = (1 << spec.nworkers) - 1
        fh = 0 if spec.fixed_helper is None else spec.fixed_helper + 1
        spec.handles["job"] = self._table_add(
            "job_cfg", "set_job", [spec.job],
            [spec.base, spec.pool, full, self._t_s_us(spec.t_s), spec.mgid, fh, MODES[spec.mode]])
        for w, port in spec.ports.items():
            self._table_add("wid_port", "set_port", [spec.job, w], [port])
        reps = [(spec.ports[w], w) for w in range(spec.nworkers)]
        if spec.fixed_helper is not None:
            # like ATP's parameter server, the PS sees every result, so it can answer any
            # late retransmission the switch redirects to it
            reps.append((spec.ports[spec.fixed_helper], spec.fixed_helper))
        self.sw.mc_set_group(spec.mgid, reps)
        self._cli.append(f"mc_mgrp_create {spec.mgid}")
        for port, rid in reps:
            # BMv2 numbers multicast nodes from 0 in creation order
            self._cli.append(f"mc_node_create {rid} {port}")
            self._cli.append(f"mc_node_associate {spec.mgid} {self._mc_nodes}")
            self._mc_nodes += 1
        self.jobs[spec.job] = spec
        return spec

    def _job_args(self, spec: JobSpec) -> list[int]:
        fh = 0 if spec.fixed_helper is None else spec.fixed_helper + 1
        full = ((1 << spec.nworkers) - 1) | spec.assist_mask
        return [spec.base, spec.pool, full, self._t_s_us(spec.t_s), spec.mgid, fh,
                MODES[spec.mode]]

    def _mc(self, spec: JobSpec) -> None:
        reps = [(spec.ports[w], w) for w in range(spec.nworkers)]
        if spec.fixed_helper is not None:
            reps.append((spec.ports[spec.fixed_helper], spec.fixed_helper))
        for v, port in spec.assist_ports.items():
            reps.append((port, v))
        self.sw.mc_set_group(spec.mgid, reps)

    def set_assist(self, job: int, virtual: int, port: int) -> None:
        """Compute assist (SA-ATP.md §14): a virtual contributor ``virtual`` (a wid outside
        the workers, carried by the helper on ``port``) joins the job's full mask, its
        unicast route and its multicast group."""
        spec = self.jobs[job]
        if not spec.nworkers <= virtual < wire.MAX_WORKERS or virtual == spec.fixed_helper:
            raise ValueError(f"virtual contributor {virtual} must be in {spec.nworkers}..{wire.MAX_WORKERS - 1}")
        spec.assist_mask |= 1 << virtual
        spec.assist_ports[virtual] = port
        spec.handles[("assist", virtual)] = self.sw.table_add("wid_port", "set_port",
                                                              [job, virtual], [port])
        self.sw.table_modify("job_cfg", spec.handles["job"], "set_job", self._job_args(spec))
        self._mc(spec)

    def clear_assist(self, job: int) -> None:
        spec = self.jobs[job]
        for v in list(spec.assist_ports):
            self.sw.table_delete("wid_port", spec.handles.pop(("assist", v)))
        spec.assist_ports.clear()
        spec.assist_mask = 0
        self.sw.table_modify("job_cfg", spec.handles["job"], "set_job", self._job_args(spec))
        self._mc(spec)

    @staticmethod
    def _t_s_us(t_s: float | None) -> int:
        if t_s is None or t_s == float("inf"):
            return T_S_INFINITE_US
        return max(0, min(T_S_INFINITE_US, int(round(t_s * 1e6))))

    def set_threshold(self, job: int, t_s: float | None) -> None:
        """Change a job's straggler threshold T_s (action data of job_cfg) in place."""
        spec = self.jobs[job]
        spec.t_s = t_s
        self.sw.table_modify("job_cfg", spec.handles["job"], "set_job", self._job_args(spec))

    # ------------------------------------------------------------ counters
    def counters(self, job: int) -> dict[str, int]:
        return {name: self.sw.counter_read(f"c_{name}", job)[0] for name in EVENT_COUNTERS}

    def drops(self) -> dict[str, int]:
        return {name: self.sw.counter_read("c_drop", i)[0] for i, name in enumerate(DROP_REASONS)}

    def job_state(self, job: int) -> dict[str, int]:
        return {"iter": self.sw.register_read("j_iter", job),
                "strag": self.sw.register_read("j_strag", job),
                "helper": self.sw.register_read("j_helper", job) - 1}

    def slot_state(self, job: int, setbit: int, slot: int) -> dict[str, int]:
        spec = self.jobs[job]
        g = spec.base + setbit * spec.pool + slot
        return {name: self.sw.register_read(f"s_{name}", g)
                for name in ("state", "iter", "seq", "bitmap", "first", "helper", "ovf")}

    def cli_commands(self) -> str:
        """The same configuration as ``simple_switch_CLI`` commands (for BMv2)."""
        return "\n".join(self._cli) + "\n"
