"""A ``saatp switch`` process with named UDP-tunnel ports and a :class:`PacketTester` on them.

    with start_switch("prog.p4", {"h1": 1, "h2": 2}) as sw:
        sw.send("h1", pkt)
        sw.expect("h2", pkt)
        c = sw.p4runtime()          # a P4Runtime client (primary), pipeline info loaded

No root is needed: each switch port is a UDP tunnel on 127.0.0.1 whose other end is ours.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from host_agent.channels.udp import UdpTunnelPort
from host_agent.free_ports import free_udp_ports

from .packets import DEFAULT_TIMEOUT, NO_PACKET_WAIT, PacketTester
from .switch_process import SwitchProcess


class SwitchUnderTest:
    def __init__(self, program: str | Path | None, ports: dict[str, int] | Sequence[str], *,
                 cpu_port: int | None = None, extra_args: Sequence[str] = ()):
        if not isinstance(ports, dict):
            ports = {name: i for i, name in enumerate(ports)}
        self.port_numbers = dict(ports)
        udp = free_udp_ports(2 * len(ports))
        specs, ours = {}, {}
        for i, (name, num) in enumerate(sorted(ports.items(), key=lambda kv: kv[1])):
            sw_udp, our_udp = udp[2 * i], udp[2 * i + 1]
            specs[num] = f"udp:{sw_udp}:127.0.0.1:{our_udp}"
            ours[name] = UdpTunnelPort(our_udp, "127.0.0.1", sw_udp, name=name)
        self._clients: list[Any] = []
        try:
            self.process = SwitchProcess(program, specs, cpu_port=cpu_port, extra_args=extra_args)
        except BaseException:
            for p in ours.values():
                p.close()
            raise
        self.packets = PacketTester(ours, self.port_numbers)

    @property
    def grpc_address(self) -> str:
        return self.process.grpc_address or ""

    def send(self, port: str, pkt: Any) -> None:
        self.packets.send(port, pkt)

    def expect(self, port: str, pkt: Any, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        return self.packets.expect(port, pkt, timeout)

    def expect_no_packet(self, port: str, timeout: float = NO_PACKET_WAIT) -> None:
        self.packets.expect_no_packet(port, timeout)

    def stats(self) -> dict:
        return self.process.stats()

    def p4runtime(self, election_id: int = 1) -> Any:
        """A P4Runtime client of this switch (device 0), with the running pipeline's P4Info."""
        from host_agent.p4runtime.client import P4RuntimeClient
        c = P4RuntimeClient(self.grpc_address, device_id=0, election_id=election_id)
        self._clients.append(c)
        c.load_p4info()
        return c

    def close(self) -> None:
        for c in self._clients:
            c.close()
        self.packets.close()
        self.process.stop()

    def __enter__(self) -> SwitchUnderTest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_switch(program: str | Path | None, ports: dict[str, int] | Sequence[str], **kw: Any) -> SwitchUnderTest:
    return SwitchUnderTest(program, ports, **kw)
