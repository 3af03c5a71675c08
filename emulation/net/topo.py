"""Topologies: descriptions that need no Mininet, and :func:`build_net` that makes them real.

Built in:

* :func:`single_switch` ``s1`` with workers ``h1..hN`` on ports 1..N (10.0.0.i/24);
* :func:`two_racks` racks ``s1`` (h1..h⌈N/2⌉) and ``s2`` (the rest) under a spine ``s3``;
  ToR port ``k+1`` is its uplink, spine port 1 goes to ``s1``, port 2 to ``s2``.
  Between racks the switches do **plain IPv4 forwarding** (one /32 route per host on every
  switch): there is one aggregation point, not a hierarchy of them; see docs/mininet.md.

Loaded: :func:`load_topology_json` reads the p4lang tutorials' ``topology.json``::

    {"hosts": {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
                      "commands": ["route add default gw 10.0.1.10 dev eth0", ...]}},
     "switches": {"s1": {"runtime_json": "pod-topo/s1-runtime.json"}},
     "links": [["h1", "s1-p1"], ["s1-p3", "s2-p3", "5ms", 10]]}

(``hosts``/``switches`` may also be plain lists of names, as older exercises have; a link's
optional latency and bandwidth become the switch ports' ``--impair delay=..,rate=..`` on
saatp switch, since tc is unavailable).  Host commands are run in the host as given, with
the word ``eth0`` replaced by the host's first interface (``h1-eth0``).
"""
from __future__ import annotations

import ipaddress
import json
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host_agent.constants import SWITCH_IP, SWITCH_MAC

AGG_IP = SWITCH_IP    # the SA-ATP switch's virtual (aggregation) address
AGG_MAC = SWITCH_MAC  # and its MAC


class TopologyError(ValueError):
    pass


@dataclass
class HostSpec:
    name: str
    ip: str                       # with prefix length, "10.0.0.1/24"
    mac: str
    commands: list[str] = field(default_factory=list)

    @property
    def addr(self) -> str:
        return self.ip.split("/")[0]


@dataclass
class SwitchSpec:
    name: str
    runtime: dict | None = None   # the tutorials' sN-runtime.json contents
    runtime_path: str | None = None
    program: str | None = None    # P4 source (saatp) or p4c JSON (bmv2), if the file names one


@dataclass
class LinkSpec:
    a: str
    a_port: int | None
    b: str
    b_port: int | None
    delay: str | None = None      # "5ms"
    bw_mbit: float | None = None


@dataclass
class TopoSpec:
    name: str
    hosts: dict[str, HostSpec]
    switches: dict[str, SwitchSpec]
    links: list[LinkSpec]
    agg_ip: str = AGG_IP
    agg_mac: str = AGG_MAC
    forwarding: str = "ipv4"      # what switches do between each other (docs/mininet.md)

    # ------------------------------------------------------------ queries
    def ports(self) -> dict[str, dict[int, tuple[str, int | None]]]:
        """Per switch: port -> (peer node, peer port).  Host ports are assigned in link order."""
        out: dict[str, dict[int, tuple[str, int | None]]] = {s: {} for s in self.switches}
        for ln in self.links:
            for me, mp, peer, pp in ((ln.a, ln.a_port, ln.b, ln.b_port), (ln.b, ln.b_port, ln.a, ln.a_port)):
                if me in self.switches:
                    out[me][mp] = (peer, pp)
        return out

    def host_port(self, host: str) -> tuple[str, int]:
        """(switch, port) the host's first link attaches to."""
        for ln in self.links:
            if ln.a == host and ln.b in self.switches:
                return ln.b, ln.b_port
            if ln.b == host and ln.a in self.switches:
                return ln.a, ln.a_port
        raise TopologyError(f"host {host} is not linked to a switch")

    def routes(self) -> dict[str, list[tuple[str, str, int]]]:
        """Per switch, ``(host ip, host mac, egress port)`` for every reachable host (shortest path)."""
        adj: dict[str, list[tuple[str, int]]] = {n: [] for n in [*self.hosts, *self.switches]}
        for ln in self.links:
            adj[ln.a].append((ln.b, ln.a_port))
            adj[ln.b].append((ln.a, ln.b_port))
        out: dict[str, list[tuple[str, str, int]]] = {}
        for sw in self.switches:
            first: dict[str, int] = {}
            seen = {sw}
            q: deque[tuple[str, int | None]] = deque([(sw, None)])
            while q:
                node, via = q.popleft()
                for peer, port in adj[node]:
                    if peer in seen:
                        continue
                    seen.add(peer)
                    p = port if via is None else via
                    if peer in self.hosts:
                        first[peer] = p
                    elif peer in self.switches:
                        q.append((peer, p))
            out[sw] = [(self.hosts[h].addr, self.hosts[h].mac, first[h]) for h in self.hosts if h in first]
        return out

    def arp_table(self, with_agg: bool = True) -> dict[str, str]:
        t = {h.addr: h.mac for h in self.hosts.values()}
        if with_agg:
            t[self.agg_ip] = self.agg_mac
        return t

    def port_impairments(self) -> dict[str, dict[int, str]]:
        """Link latency/bandwidth as ``--impair`` specs on the switch ends of each link."""
        out: dict[str, dict[int, str]] = {s: {} for s in self.switches}
        for ln in self.links:
            parts = []
            if ln.delay:
                parts.append(f"delay={ln.delay}")
            if ln.bw_mbit:
                parts.append(f"rate={ln.bw_mbit:g}mbit")
            if not parts:
                continue
            for node, port in ((ln.a, ln.a_port), (ln.b, ln.b_port)):
                if node in self.switches:
                    out[node][port] = ",".join(parts)
        return out

    def validate(self) -> "TopoSpec":
        names = [*self.hosts, *self.switches]
        if len(set(names)) != len(names):
            raise TopologyError("a name is used for both a host and a switch")
        for n in names:
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,9}", n):
                raise TopologyError(f"node name {n!r}: use a letter then up to 9 letters/digits "
                                    "(interface names are NAME-ethN, at most 15 characters)")
        used: dict[tuple[str, int], int] = {}
        for i, ln in enumerate(self.links):
            for node, port in ((ln.a, ln.a_port), (ln.b, ln.b_port)):
                if node not in self.hosts and node not in self.switches:
                    raise TopologyError(f"link {i} ({ln.a}, {ln.b}): unknown node {node!r}")
                if port is not None:
                    if node in self.switches and not 0 < port < 511:
                        raise TopologyError(f"link {i}: switch {node} port {port} must be in 1..510")
                    if (node, port) in used:
                        raise TopologyError(f"link {i}: port {port} of {node} is already used by link {used[(node, port)]}")
                    used[(node, port)] = i
            if ln.a == ln.b:
                raise TopologyError(f"link {i} connects {ln.a} to itself")
        macs = [h.mac.lower() for h in self.hosts.values()]
        if len(set(macs)) != len(macs):
            raise TopologyError("two hosts have the same MAC address")
        ips = [h.addr for h in self.hosts.values()]
        if len(set(ips)) != len(ips):
            raise TopologyError("two hosts have the same IP address")
        return self


def _host(i: int, name: str | None = None) -> HostSpec:
    if not 1 <= i <= 250:
        raise TopologyError(f"host index {i}: 1..250 hosts")
    return HostSpec(name or f"h{i}", f"10.0.0.{i}/24", f"08:00:00:00:00:{i:02x}")


def _assign_switch_ports(spec: TopoSpec) -> None:
    nxt: dict[str, int] = {}
    for ln in spec.links:
        for attr_n, attr_p in (("a", "a_port"), ("b", "b_port")):
            node = getattr(ln, attr_n)
            if node in spec.switches and getattr(ln, attr_p) is None:
                used = {p for l2 in spec.links for n, p in ((l2.a, l2.a_port), (l2.b, l2.b_port))
                        if n == node and p is not None}
                k = nxt.get(node, 1)
                while k in used:
                    k += 1
                setattr(ln, attr_p, k)
                nxt[node] = k + 1


def single_switch(n: int) -> TopoSpec:
    if not 1 <= n <= 250:
        raise TopologyError(f"{n} workers: 1..250")
    hosts = {f"h{i}": _host(i) for i in range(1, n + 1)}
    links = [LinkSpec(f"h{i}", None, "s1", i) for i in range(1, n + 1)]
    return TopoSpec(f"single-{n}", hosts, {"s1": SwitchSpec("s1")}, links).validate()


def two_racks(n: int) -> TopoSpec:
    """``n`` workers in two racks (``s1``: the first ⌈n/2⌉, ``s2``: the rest) under spine ``s3``."""
    if not 2 <= n <= 250:
        raise TopologyError(f"{n} workers: two racks need 2..250")
    k1 = (n + 1) // 2
    hosts = {f"h{i}": _host(i) for i in range(1, n + 1)}
    links = [LinkSpec(f"h{i}", None, "s1", i) for i in range(1, k1 + 1)]
    links += [LinkSpec(f"h{i}", None, "s2", i - k1) for i in range(k1 + 1, n + 1)]
    links += [LinkSpec("s1", k1 + 1, "s3", 1), LinkSpec("s2", n - k1 + 1, "s3", 2)]
    sws = {s: SwitchSpec(s) for s in ("s1", "s2", "s3")}
    return TopoSpec(f"racks-{n}", hosts, sws, links).validate()


# ------------------------------------------------------------------ topology.json
_NODE_PORT = re.compile(r"^(?P<node>[A-Za-z][A-Za-z0-9_]*)-p(?P<port>\d+)$")
_LAT = re.compile(r"^\d+(\.\d+)?(us|ms|s)$")


def _node_ref(ref: Any, where: str) -> tuple[str, int | None]:
    if not isinstance(ref, str) or not ref:
        raise TopologyError(f"{where}: expected a node name like 'h1' or 's1-p2', got {ref!r}")
    m = _NODE_PORT.match(ref)
    if m:
        return m["node"], int(m["port"])
    return ref, None


def _find_file(rel: str, bases: list[Path]) -> Path:
    p = Path(rel)
    if p.is_absolute():
        if p.exists():
            return p
    else:
        for b in bases:
            if (b / p).exists():
                return b / p
    raise TopologyError(f"file {rel!r} not found (looked in {', '.join(str(b) for b in bases)})")


def load_topology_json(path: str | Path) -> TopoSpec:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise TopologyError(f"{path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise TopologyError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    return topology_from_dict(data, base=path.parent, name=path.stem)


def topology_from_dict(data: Any, base: Path | str = ".", name: str = "topology") -> TopoSpec:
    base = Path(base)
    bases = [base, base.parent, Path.cwd()]
    if not isinstance(data, dict):
        raise TopologyError("the topology must be a JSON object with hosts, switches and links")
    for k in ("hosts", "switches", "links"):
        if k not in data:
            raise TopologyError(f"the topology has no {k!r}")
    raw_hosts = data["hosts"]
    if isinstance(raw_hosts, list):
        raw_hosts = {h: {} for h in raw_hosts}
    if not isinstance(raw_hosts, dict):
        raise TopologyError("'hosts' must be an object (name -> {ip, mac, commands}) or a list of names")
    hosts: dict[str, HostSpec] = {}
    for i, (hn, h) in enumerate(raw_hosts.items(), 1):
        h = h or {}
        if not isinstance(h, dict):
            raise TopologyError(f"host {hn}: expected an object with ip, mac, commands")
        d = _host(i, hn)
        ip = h.get("ip", d.ip)
        try:
            iface = ipaddress.ip_interface(ip if "/" in ip else ip + "/24")
        except ValueError:
            raise TopologyError(f"host {hn}: bad IPv4 address {ip!r}") from None
        if iface.version != 4:
            raise TopologyError(f"host {hn}: only IPv4 addresses are supported, got {ip!r}")
        mac = h.get("mac", d.mac)
        if not re.fullmatch(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}", str(mac)):
            raise TopologyError(f"host {hn}: bad MAC address {mac!r}")
        cmds = h.get("commands", [])
        if not isinstance(cmds, list) or not all(isinstance(c, str) for c in cmds):
            raise TopologyError(f"host {hn}: 'commands' must be a list of strings")
        hosts[hn] = HostSpec(hn, str(iface), mac.lower(), list(cmds))
    raw_sw = data["switches"]
    if isinstance(raw_sw, list):
        raw_sw = {s: {} for s in raw_sw}
    if not isinstance(raw_sw, dict):
        raise TopologyError("'switches' must be an object (name -> {runtime_json}) or a list of names")
    switches: dict[str, SwitchSpec] = {}
    for sn, s in raw_sw.items():
        s = s or {}
        if not isinstance(s, dict):
            raise TopologyError(f"switch {sn}: expected an object")
        sp = SwitchSpec(sn, program=s.get("program"))
        rj = s.get("runtime_json")
        if rj:
            f = _find_file(rj, bases)
            try:
                sp.runtime = json.loads(f.read_text())
            except json.JSONDecodeError as e:
                raise TopologyError(f"{f}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
            sp.runtime_path = str(f)
            check_runtime(sp.runtime, str(f))
        switches[sn] = sp
    links: list[LinkSpec] = []
    if not isinstance(data["links"], list):
        raise TopologyError("'links' must be a list of [a, b] or [a, b, latency, bandwidth]")
    for i, ln in enumerate(data["links"]):
        if not isinstance(ln, list) or not 2 <= len(ln) <= 4:
            raise TopologyError(f"link {i}: expected [a, b] or [a, b, latency, bandwidth], got {ln!r}")
        a, ap = _node_ref(ln[0], f"link {i}")
        b, bp = _node_ref(ln[1], f"link {i}")
        delay = None
        bw = None
        if len(ln) >= 3:
            lat = ln[2]
            if isinstance(lat, (int, float)):
                lat = f"{lat}ms"
            if not isinstance(lat, str) or not _LAT.match(lat):
                raise TopologyError(f"link {i}: latency {ln[2]!r}: expected e.g. '5ms'")
            if float(re.match(r"[\d.]+", lat).group()) > 0:
                delay = lat
        if len(ln) == 4 and ln[3] is not None:
            if not isinstance(ln[3], (int, float)) or ln[3] <= 0:
                raise TopologyError(f"link {i}: bandwidth {ln[3]!r}: expected Mbit/s > 0")
            bw = float(ln[3])
        for node, port in ((a, ap), (b, bp)):
            if node in hosts and port is not None:
                raise TopologyError(f"link {i}: host {node} takes no port suffix")
        links.append(LinkSpec(a, ap, b, bp, delay, bw))
    spec = TopoSpec(name, hosts, switches, links)
    spec.validate()
    _assign_switch_ports(spec)
    return spec.validate()


_RUNTIME_KEYS = {"target", "p4info", "bmv2_json", "table_entries", "multicast_group_entries",
                 "clone_session_entries", "meter_entries", "register_entries"}


def check_runtime(rt: Any, where: str) -> None:
    """Check the shape of a tutorials' runtime JSON (what :func:`apply_runtime` uses)."""
    if not isinstance(rt, dict):
        raise TopologyError(f"{where}: the runtime file must be a JSON object")
    for i, e in enumerate(rt.get("table_entries", [])):
        if not isinstance(e, dict) or "table" not in e:
            raise TopologyError(f"{where}: table_entries[{i}] has no 'table'")
        if not e.get("default_action") and "match" not in e and "action_name" not in e:
            raise TopologyError(f"{where}: table_entries[{i}] has neither match nor action_name")
        if "match" in e and not isinstance(e["match"], dict):
            raise TopologyError(f"{where}: table_entries[{i}].match must be an object")
    for i, g in enumerate(rt.get("multicast_group_entries", [])):
        if not isinstance(g, dict) or "multicast_group_id" not in g or not isinstance(g.get("replicas"), list):
            raise TopologyError(f"{where}: multicast_group_entries[{i}] needs multicast_group_id and replicas")
    for i, c in enumerate(rt.get("clone_session_entries", [])):
        if not isinstance(c, dict) or "clone_session_id" not in c or not isinstance(c.get("replicas"), list):
            raise TopologyError(f"{where}: clone_session_entries[{i}] needs clone_session_id and replicas")


def parse_value(v: Any) -> int:
    """A runtime-JSON value: int, "10.0.1.1", "08:00:00:00:01:11", "0x1f" or "12"."""
    if isinstance(v, bool):
        raise TopologyError(f"bad value {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        s = v.strip()
        try:
            if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", s):
                return int(ipaddress.IPv4Address(s))
            if re.fullmatch(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}", s):
                return int(s.replace(":", ""), 16)
            return int(s, 0)
        except ValueError:
            pass
    raise TopologyError(f"bad value {v!r}: expected an integer, an IPv4 or a MAC address")


def builtin_runtime(spec: TopoSpec, table: str = "MyIngress.ipv4_lpm",
                    action: str = "MyIngress.ipv4_forward") -> dict[str, dict]:
    """Runtime JSON (tutorials' format) for ``basic_router.p4``: one /32 route per host."""
    out = {}
    for sw, routes in spec.routes().items():
        out[sw] = {"target": "saatp", "table_entries": [
            {"table": table, "match": {"hdr.ipv4.dstAddr": [ip, 32]}, "action_name": action,
             "action_params": {"dstAddr": mac, "port": port}} for ip, mac, port in routes]}
    return out


def build_net(spec: TopoSpec, switch_cls, switch_params: dict[str, dict] | None = None, **net_kw):
    """A (not yet started) Mininet network for ``spec``: Mininet ``Host`` nodes, plain veth
    ``Link`` s (no tc), and ``switch_cls`` switches with ``switch_params[name]``."""
    from .mn import import_mininet
    import_mininet()
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host

    net = Mininet(topo=None, switch=switch_cls, host=Host, link=Link, controller=None, build=False,
                  autoSetMacs=False, autoStaticArp=False, **net_kw)
    for h in spec.hosts.values():
        net.addHost(h.name, ip=h.ip, mac=h.mac)
    for s in spec.switches.values():
        net.addSwitch(s.name, cls=switch_cls, **(switch_params or {}).get(s.name, {}))
    host_ports: dict[str, int] = {}
    for ln in spec.links:
        kw = {}
        for end, node, port in (("port1", ln.a, ln.a_port), ("port2", ln.b, ln.b_port)):
            if node in spec.hosts:
                port = host_ports.get(node, 0)
                host_ports[node] = port + 1
            kw[end] = port
        net.addLink(ln.a, ln.b, cls=Link, **kw)
    # hosts: addresses go on the first interface (addHost's ip applies at configHost)
    for h in spec.hosts.values():
        node = net.get(h.name)
        node.setIP(h.ip)
        node.setMAC(h.mac)
    return net
