"""In-process harness: agents and the embedded switch in one process on a virtual clock.

Every agent sends real Ethernet/IPv4/UDP frames; the harness carries them to
``Switch.process(port, frame)`` and the switch's output frames back to the agents, with
seeded impairments (loss, duplication, reordering, per-port latency) and optional
targeted drop rules, so packet-level scenarios run deterministically and fast.

The switch is modelled as one FIFO server: a packet costs ``(1 + egress_weight * outputs)
/ switch_pps`` seconds of switch time (BMv2's ingress thread plus its egress work), so a
switch-bound run shows the same shape as on BMv2.  ``switch_pps=None`` makes it free.

The P4 program is the real ``p4src/saatp.p4`` run by the embedded v1model target; no
switch logic is re-implemented here.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from host_agent import wire
from host_agent.constants import DEFAULT_K, SAATP_P4, SWITCH_IP, SWITCH_MAC
from host_agent.clock import VirtualClock
from host_agent.controller import Controller, JobSpec
from host_agent.helper import ParameterServer
from host_agent.worker import AgentConfig, Worker
from host_agent.baselines.ring import RingWorker
from emulation.v1model.load import compile_file
from emulation.v1model.switch import Switch

DEFAULT_PROGRAM = str(SAATP_P4)

_COMPILED: dict[str, Any] = {}


def load_switch(program: str = DEFAULT_PROGRAM, clock: Callable[[], float] | None = None):
    """An embedded ``Switch`` running ``program`` (compiled once per process)."""
    prog = _COMPILED.get(program)
    if prog is None:
        prog = _COMPILED[program] = compile_file(program)
    return Switch(prog, clock=clock)


@dataclass
class Impairments:
    loss: float = 0.0            # per packet, each direction
    dup: float = 0.0             # per packet, each direction
    reorder: float = 0.0         # probability of an extra delay of up to reorder_delay
    reorder_delay: float = 200e-6
    latency: float = 5e-6        # one-way host <-> switch
    port_latency: dict[int, float] = field(default_factory=dict)  # extra one-way delay per port
    seed: int = 0


DropRule = Callable[[str, int, wire.Header], bool]


class Endpoint:
    def __init__(self, net: "Network", port: int, mac: str, ip: str):
        self.net = net
        self.port = port
        self.mac = mac
        self.ip = ip
        self.agent: Any = None
        self.extra: dict[int, Any] = {}   # more agents on this port, by wid (compute assist)
        self.ring: Any = None
        self.to_switch = wire.FrameTemplate(mac, net.switch_mac, ip, net.switch_ip)
        self._peer_tpl: dict[str, wire.FrameTemplate] = {}
        self.rx = self.tx = 0
        self.bad = 0

    def send(self, sa: bytes) -> None:
        self.net.host_send(self, self.to_switch.frame(sa))

    def send_to(self, ip: str, data: bytes) -> None:
        t = self._peer_tpl.get(ip)
        if t is None:
            t = self._peer_tpl[ip] = wire.FrameTemplate(self.mac, self.net.switch_mac, self.ip, ip,
                                                        wire.RING_PORT, wire.RING_PORT)
        self.net.host_send(self, t.frame(data))

    def deliver(self, frame: bytes) -> None:
        self.rx += 1
        try:
            l2, payload = wire.strip_frame(frame)
        except wire.WireError:
            self.bad += 1
            return
        if l2.dport == wire.RING_PORT and self.ring is not None:
            self.ring.on_message(bytes(payload))
        elif l2.dport == wire.SA_PORT and self.agent is not None:
            agent = self.agent
            if self.extra and len(payload) >= wire.HDR_LEN:
                agent = self.extra.get(payload[26], self.agent)   # the header's dst byte
            agent.on_message(bytes(payload))
        else:
            self.bad += 1


class Network:
    """The virtual-clock network around one embedded switch."""

    def __init__(self, program: str = DEFAULT_PROGRAM, impair: Impairments | None = None,
                 switch_pps: float | None = None, egress_weight: float = 0.5,
                 switch_mac: str = SWITCH_MAC, switch_ip: str = SWITCH_IP):
        self.clock = VirtualClock()
        self.sw = load_switch(program, clock=self.clock.now)
        self.switch_mac, self.switch_ip = switch_mac, switch_ip
        self.ctl = Controller(self.sw, switch_mac, switch_ip)
        self.imp = impair or Impairments()
        self.rng = random.Random(self.imp.seed)
        self.switch_pps = switch_pps
        self.egress_weight = egress_weight
        self.endpoints: dict[int, Endpoint] = {}
        self.drop_rules: list[DropRule] = []
        self.trace: list[tuple[float, str, int, bytes]] | None = None
        self._queue: deque[tuple[int, bytes]] = deque()
        self._busy = False
        self.switch_packets = 0
        self.switch_outputs = 0
        self.switch_busy_time = 0.0
        self.dropped = {"loss": 0, "rule": 0}
        self.duplicated = 0

    # ---------------------------------------------------------------- topology
    def add_endpoint(self, port: int | None = None) -> Endpoint:
        if port is None:
            port = len(self.endpoints) + 1
        if port in self.endpoints:
            raise ValueError(f"port {port} is taken")
        mac = f"02:00:00:00:{port >> 8:02x}:{port & 0xFF:02x}"
        ip = f"10.0.{port >> 8}.{port & 0xFF}"
        ep = Endpoint(self, port, mac, ip)
        self.endpoints[port] = ep
        self.ctl.add_host(port, mac, ip)
        return ep

    # ---------------------------------------------------------------- links
    def _link_delay(self, port: int) -> float:
        d = self.imp.latency + self.imp.port_latency.get(port, 0.0)
        if self.imp.reorder and self.rng.random() < self.imp.reorder:
            d += self.rng.random() * self.imp.reorder_delay
        return d

    def _impair(self, direction: str, port: int, frame: bytes) -> int:
        """How many copies of ``frame`` to deliver (0, 1 or 2)."""
        if self.drop_rules:
            try:
                _, sa = wire.strip_frame(frame)
                h = wire.Header.unpack(sa) if len(sa) >= wire.HDR_LEN else None
            except wire.WireError:
                h = None
            if h is not None:
                for rule in self.drop_rules:
                    if rule(direction, port, h):
                        self.dropped["rule"] += 1
                        return 0
        if self.imp.loss and self.rng.random() < self.imp.loss:
            self.dropped["loss"] += 1
            return 0
        if self.imp.dup and self.rng.random() < self.imp.dup:
            self.duplicated += 1
            return 2
        return 1

    def host_send(self, ep: Endpoint, frame: bytes) -> None:
        ep.tx += 1
        if self.trace is not None:
            self.trace.append((self.clock.now(), "up", ep.port, frame))
        for _ in range(self._impair("up", ep.port, frame)):
            self.clock.call_later(self._link_delay(ep.port), self._arrive, ep.port, frame)

    def inject(self, port: int, frame: bytes) -> None:
        """Put a raw frame on ``port``'s link towards the switch (for malformed-input tests)."""
        self.clock.call_later(self._link_delay(port), self._arrive, port, frame)

    # ---------------------------------------------------------------- switch
    def _arrive(self, port: int, frame: bytes) -> None:
        self._queue.append((port, frame))
        if not self._busy:
            self._serve()

    def _serve(self) -> None:
        if not self._queue:
            self._busy = False
            return
        self._busy = True
        port, frame = self._queue.popleft()
        out = self.sw.process(port, frame)
        self.switch_packets += 1
        self.switch_outputs += len(out)
        cost = 0.0
        if self.switch_pps:
            cost = (1.0 + self.egress_weight * len(out)) / self.switch_pps
        self.switch_busy_time += cost
        for eport, data in out:
            if self.trace is not None:
                self.trace.append((self.clock.now() + cost, "down", eport, data))
            ep = self.endpoints.get(eport)
            if ep is None:
                continue
            for _ in range(self._impair("down", eport, data)):
                self.clock.call_later(cost + self._link_delay(eport), ep.deliver, data)
        if cost > 0:
            self.clock.call_later(cost, self._serve)
        else:
            self._serve_rest()

    def _serve_rest(self) -> None:
        # zero-cost switch: drain the queue without recursion
        while self._queue:
            port, frame = self._queue.popleft()
            out = self.sw.process(port, frame)
            self.switch_packets += 1
            self.switch_outputs += len(out)
            for eport, data in out:
                if self.trace is not None:
                    self.trace.append((self.clock.now(), "down", eport, data))
                ep = self.endpoints.get(eport)
                if ep is None:
                    continue
                for _ in range(self._impair("down", eport, data)):
                    self.clock.call_later(self._link_delay(eport), ep.deliver, data)
        self._busy = False

    def write_pcap(self, path: str) -> int:
        """Write the trace (both directions) as a pcap; returns the packet count."""
        from scapy.layers.l2 import Ether
        from scapy.utils import wrpcap
        wire.scapy_layer()
        pkts = []
        for t, _d, _p, frame in self.trace or []:
            p = Ether(frame)
            p.time = t
            pkts.append(p)
        wrpcap(path, pkts)
        return len(pkts)


@dataclass
class Job:
    """A job on the harness: its workers (and PS) with their endpoints."""
    spec: JobSpec
    cfg: AgentConfig
    workers: list[Worker]
    endpoints: list[Endpoint]
    ps: ParameterServer | None = None
    iteration: int = 0
    assist: tuple | None = None        # (straggler, helper, virtual wid, virtual Worker)

    @property
    def net(self) -> Network:
        return self.endpoints[0].net

    def enable_assist(self, straggler: int, helper: int) -> int:
        """Compute assist (SA-ATP.md §14): ``helper`` computes part of ``straggler``'s
        mini-batch and contributes it as a virtual worker ``31 - straggler`` from its own
        port.  Returns the virtual wid."""
        if self.assist is not None:
            raise RuntimeError("assist already enabled")
        n = self.spec.nworkers
        v = 31 - straggler
        if v < n + 1 or straggler == helper:
            raise ValueError("compute assist needs at most 15 workers and two distinct workers")
        ep = self.endpoints[helper]
        self.net.ctl.set_assist(self.spec.job, v, ep.port)
        self.cfg.assist_mask |= 1 << v
        for w in self.workers:
            w.helper.assist_mask = self.cfg.assist_mask
        if self.ps is not None:
            self.ps.role.assist_mask = self.cfg.assist_mask
        vw = Worker(v, self.cfg, self.net.clock, ep.send)
        ep.extra[v] = vw
        ep.extra[helper] = self.workers[helper]
        self.assist = (straggler, helper, v, vw)
        return v

    def run_iteration(self, qs: list[np.ndarray], f: int = 0, delays: dict[int, float] | None = None,
                      max_time: float = 120.0, assist_share: float = 0.0,
                      assist_delay: float = 0.0) -> "IterationResult":
        """All-reduce one int32 vector per worker (worker w starts after ``delays[w]``).

        Returns the per-worker sums and the iteration time (from the start until the last
        worker has every result)."""
        net = self.net
        if len(qs) != len(self.workers):
            raise ValueError("one vector per worker")
        self.iteration = self.iteration % 0xFFFF + 1
        it = self.iteration
        delays = delays or {}
        t0 = net.clock.now()
        qs = list(qs)
        if self.assist is not None:
            # the helper computed `assist_share` of the straggler's mini-batch: the two parts
            # sum exactly to the straggler's vector
            s, _h, _v, vw = self.assist
            part = (qs[s].astype(np.float64) * assist_share).astype(np.int32)
            qs[s] = qs[s] - part
            net.clock.call_later(assist_delay, vw.start, it, part, f)
        for w, q in zip(self.workers, qs):
            d = delays.get(w.wid, 0.0)
            net.clock.call_later(d, w.start, it, q, f)
        everyone = self.workers + ([self.assist[3]] if self.assist is not None else [])
        ok = net.clock.run(until=lambda: all(_finished(w, it) for w in everyone),
                           max_time=t0 + max_time)
        res = IterationResult(it, ok, net.clock.now() - t0)
        if ok:
            t_end = max(_t_done(w) for w in self.workers)
            res.time = t_end - t0
            for w in self.workers:
                s, o = w.result()
                res.sums.append(s)
                res.overflow.append(o)
        return res


def _finished(w: Any, it: int) -> bool:
    if isinstance(w, Worker):
        return w.cur is not None and w.cur.it == it and w.done
    return w.it == it and w.done


def _t_done(w: Any) -> float:
    return w.cur.t_done if isinstance(w, Worker) else w.t_done


@dataclass
class IterationResult:
    it: int
    ok: bool
    time: float
    sums: list[np.ndarray] = field(default_factory=list)
    overflow: list[bool] = field(default_factory=list)


def add_job(net: Network, job: int, nworkers: int, *, k: int = DEFAULT_K, pool: int = 32,
            t_s: float = 0.050, mode: str = "saatp", switch_t_s: float | None = None,
            resend_data: bool = False, with_ps: bool = False, **cfg_kw: Any) -> Job:
    """Create ``nworkers`` workers (and a PS for ``mode='atp'``), their ports and the job's
    switch configuration.  ``switch_t_s`` overrides the threshold the switch uses (default
    ``t_s``)."""
    cfg = AgentConfig(job=job, nworkers=nworkers, k=k, pool=pool, t_s=t_s,
                      resend_data=resend_data, **cfg_kw)
    eps = [net.add_endpoint() for _ in range(nworkers)]
    workers = [Worker(w, cfg, net.clock, eps[w].send) for w in range(nworkers)]
    for ep, wk in zip(eps, workers):
        ep.agent = wk
    ports = {w: eps[w].port for w in range(nworkers)}
    ps = None
    fixed = None
    if with_ps or mode == "atp":
        pep = net.add_endpoint()
        ps = ParameterServer(nworkers, job, nworkers, k, pool, pep.send, loop=net.clock)
        ps.role.pack_delay = cfg.pack_delay
        pep.agent = ps
        ports[nworkers] = pep.port
        fixed = nworkers
    spec = JobSpec(job=job, ports=ports, nworkers=nworkers, pool=pool,
                   t_s=t_s if switch_t_s is None else switch_t_s, mode=mode, fixed_helper=fixed)
    net.ctl.configure_job(spec)
    return Job(spec, cfg, workers, eps, ps)


def add_ring_job(net: Network, nworkers: int, *, k: int = DEFAULT_K, window: int = 32,
                 rto: float = 0.025, job: int = 0) -> Job:
    """A host-only ring all-reduce among ``nworkers`` new endpoints (switch = IPv4 router)."""
    eps = [net.add_endpoint() for _ in range(nworkers)]
    ips = [ep.ip for ep in eps]
    workers = []
    for w, ep in enumerate(eps):
        rw = RingWorker(w, nworkers, k, net.clock,
                        lambda peer, data, ep=ep: ep.send_to(ips[peer], data),
                        window=window, rto=rto, job=job)
        ep.ring = rw
        workers.append(rw)
    cfg = AgentConfig(job=job, nworkers=nworkers, k=k, pool=window, t_s=2 * rto)
    spec = JobSpec(job=job, ports={w: eps[w].port for w in range(nworkers)}, nworkers=nworkers,
                   mode="switchml")
    return Job(spec, cfg, workers, eps)
