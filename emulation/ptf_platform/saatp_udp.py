"""PTF platform ``saatp_udp``: PTF's dataplane ports are UDP tunnels to ``saatp switch``.

``-i [DEVICE-]PORT@udp:LOCAL_PORT:HOST:REMOTE_PORT`` binds LOCAL_PORT and exchanges frames
with the switch port listening on HOST:REMOTE_PORT (``saatp switch -i N@udp:REMOTE_PORT:...:LOCAL_PORT``).
PTF loads this file by name (``--platform-dir DIR --platform saatp_udp``) and calls
:func:`platform_config_update`; the dataplane then builds one :class:`UdpTunnelDataPlanePort`
per port.  The tunnel itself is :class:`host_agent.channels.udp.UdpTunnelPort`.
"""
from __future__ import annotations

import time

from host_agent.channels.udp import UdpTunnelPort


def parse_spec(spec: str) -> tuple[int, str, int]:
    """``udp:LOCAL:HOST:REMOTE`` (or ``udp:LOCAL:REMOTE`` for 127.0.0.1) -> (local, host, remote)."""
    parts = spec.split(":")
    if parts[0] != "udp" or len(parts) not in (3, 4):
        raise ValueError(f"saatp_udp platform: interface {spec!r} is not udp:LOCAL_PORT:HOST:REMOTE_PORT")
    try:
        if len(parts) == 3:
            return int(parts[1]), "127.0.0.1", int(parts[2])
        return int(parts[1]), parts[2], int(parts[3])
    except ValueError:
        raise ValueError(f"saatp_udp platform: bad port number in {spec!r}") from None


class UdpTunnelDataPlanePort:
    """PTF's port interface (``fileno``, ``recv``, ``send``, ``get_packet_source``, ``up``,
    ``down``, ``mac``) over a UDP tunnel."""

    def __init__(self, interface_name: str, device_number: int, port_number: int, config: dict | None = None):
        local, host, remote = parse_spec(interface_name)
        self.interface_name = interface_name
        self.device_number = device_number
        self.port_number = port_number
        self.port = UdpTunnelPort(local, host, remote, name=f"ptf{port_number}")

    def fileno(self) -> int:
        return self.port.fileno()

    def recv(self):
        frame = self.port.recv(0)
        if frame is None:
            return None
        return (self.device_number, self.port_number, frame, time.time())

    def get_packet_source(self) -> UdpTunnelDataPlanePort:
        return self

    def send(self, packet: bytes) -> int:
        data = bytes(packet)
        self.port.send(data)
        return len(data)

    def up(self) -> None:
        pass

    def down(self) -> None:
        pass

    def mac(self) -> str:
        return "00:00:00:00:00:00"

    def __del__(self) -> None:
        port = getattr(self, "port", None)
        if port is not None:
            port.close()


def platform_config_update(config: dict) -> None:
    port_map = {}
    for device, port, interface in config.get("interfaces") or []:
        parse_spec(interface)              # refuse a bad spec before PTF starts
        port_map[(device, port)] = interface
    config["port_map"] = port_map
    config.setdefault("dataplane", {})["portclass"] = UdpTunnelDataPlanePort
