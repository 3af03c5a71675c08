"""Host and interface set-up that users of P4 switches in Mininet expect.

* offloads off (checksum/segmentation): the switch reads frames through raw sockets, and
  a veth with TX checksum offload hands it frames with unfinished checksums;
* IPv6 off: no router solicitations or MLD reports wandering into the P4 pipeline;
* jumbo MTU on every link when SA-ATP chunks are wider than a 1500-byte frame holds;
* static ARP: for every other host and for the aggregation (virtual) address of the switch;
* CPU limits for stragglers: a cgroup (v1 ``cpu`` controller, or v2) per limited process,
  removed afterwards.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro")


def _ethtool_args(intf: str) -> list[str]:
    out = ["ethtool", "-K", intf]
    for o in OFFLOADS:
        out += [o, "off"]
    return out


def root_intf_setup(intf: str) -> None:
    """Offloads and IPv6 off on an interface of the root namespace (switch side)."""
    subprocess.run(_ethtool_args(intf), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    p = Path("/proc/sys/net/ipv6/conf") / intf / "disable_ipv6"
    try:
        p.write_text("1")
    except OSError:
        pass


def set_mtu(net, mtu: int) -> None:
    """Every link interface of ``net`` (hosts' and switches') gets ``mtu`` (jumbo frames for wide
    SA-ATP chunks); call it before the switches open their ports (ring slots follow the MTU)."""
    for node in net.hosts + net.switches:
        for intf in node.intfList():
            if intf.name != "lo":
                r = node.cmd(f"ip link set dev {intf.name} mtu {int(mtu)}")
                if r.strip():
                    raise RuntimeError(f"{intf.name}: cannot set MTU {mtu}: {r.strip()}")


def setup_host(host, arp: dict[str, str] | None = None) -> None:
    """Offloads off on every interface, IPv6 off, and static ARP entries ``{ip: mac}`` on
    the host's default interface."""
    for intf in host.intfList():
        if intf.name == "lo":
            continue
        host.cmd(" ".join(_ethtool_args(intf.name)) + " >/dev/null 2>&1")
    for k in ("all", "default", "lo"):
        host.cmd(f"sysctl -qw net.ipv6.conf.{k}.disable_ipv6=1")
    dev = host.defaultIntf()
    for ip, mac in (arp or {}).items():
        if ip == host.IP():
            continue
        host.cmd(f"ip neigh replace {ip} lladdr {mac} dev {dev} nud permanent")


def neighbours(host) -> dict[str, str]:
    """The host's permanent neighbour entries ``{ip: mac}`` (for checks and tests)."""
    out = {}
    for line in host.cmd("ip -4 neigh show nud permanent").splitlines():
        parts = line.split()
        if "lladdr" in parts:
            out[parts[0]] = parts[parts.index("lladdr") + 1]
    return out


class CpuLimit:
    """Limit a set of pids to ``fraction`` of one CPU with a cgroup; :meth:`remove` undoes it."""

    V1 = Path("/sys/fs/cgroup/cpu")
    V2 = Path("/sys/fs/cgroup")

    def __init__(self, name: str, fraction: float, period_us: int = 100_000):
        if not 0 < fraction <= 64:
            raise ValueError(f"CPU limit {fraction} must be in (0, 64] CPUs")
        self.quota = max(1000, int(fraction * period_us))
        self.period = period_us
        if (self.V1 / "cpu.cfs_quota_us").exists():
            self.path = self.V1 / name
            self.path.mkdir(exist_ok=False)
            (self.path / "cpu.cfs_period_us").write_text(str(period_us))
            (self.path / "cpu.cfs_quota_us").write_text(str(self.quota))
            self._procs = self.path / "tasks"
        elif (self.V2 / "cgroup.controllers").exists():
            self.path = self.V2 / name
            self.path.mkdir(exist_ok=False)
            (self.path / "cpu.max").write_text(f"{self.quota} {period_us}")
            self._procs = self.path / "cgroup.procs"
        else:
            raise OSError("no cgroup cpu controller under /sys/fs/cgroup: CPU limits are unavailable")

    def add(self, pid: int) -> None:
        self._procs.write_text(str(pid))

    def remove(self) -> None:
        if not self.path.exists():
            return
        parent_procs = self.path.parent / ("tasks" if self._procs.name == "tasks" else "cgroup.procs")
        try:
            for pid in self._procs.read_text().split():
                try:
                    parent_procs.write_text(pid)
                except OSError:
                    pass
        except OSError:
            pass
        try:
            os.rmdir(self.path)
        except OSError:
            pass
