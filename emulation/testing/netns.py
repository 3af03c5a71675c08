"""A network namespace with veth pairs, for running a switch and its tester (root).

``VethNamespace(n)`` creates namespace ``saatp-t-<random>`` holding ``n`` veth pairs
``swI`` (given to the switch) and ``tI`` (given to the tester), up, with IPv6 and offloads
off (so frames are what the test sent: no router solicitations, no segmentation offload);
leaving the ``with`` block deletes the namespace, which deletes the veths.  Nothing is
created outside the namespace.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Sequence


class NetnsError(RuntimeError):
    pass


def netns_available() -> str | None:
    """None when namespaces can be made here, else the reason why not."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if shutil.which("ip") is None:
        return "needs the ip tool (iproute2)"
    return None


class VethNamespace:
    def __init__(self, n_ports: int, prefix: str = "saatp-t"):
        self.name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.ports = list(range(n_ports))
        self.created = False

    @staticmethod
    def switch_if(i: int) -> str:
        return f"sw{i}"

    @staticmethod
    def tester_if(i: int) -> str:
        return f"t{i}"

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.name, *argv], check=check, capture_output=True,
                              text=True, timeout=30)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace."""
        return ["ip", "netns", "exec", self.name, *argv]

    def __enter__(self) -> VethNamespace:
        why = netns_available()
        if why:
            raise NetnsError(why)
        subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True, timeout=30)
        self.created = True
        try:
            self.run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
            self.run("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1", check=False)
            self.run("ip", "link", "set", "lo", "up")
            for i in self.ports:
                a, b = self.switch_if(i), self.tester_if(i)
                self.run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
                for dev in (a, b):
                    if shutil.which("ethtool"):
                        self.run("ethtool", "-K", dev, "rx", "off", "tx", "off", "sg", "off", "tso", "off",
                                 "gso", "off", "gro", "off", check=False)
                    self.run("ip", "link", "set", dev, "mtu", "9500", check=False)
                    self.run("ip", "link", "set", dev, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.created:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)
            self.created = False
