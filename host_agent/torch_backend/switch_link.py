"""One process's link to the switch, shared by every group (job) of that process.

A process has one UDP tunnel to the switch (its world rank's switch port), one event loop on a
thread of its own, and one SA-ATP worker per group it belongs to. Frames that come in are
handed to the worker of the job named in their SA-ATP header, so the world group and any number
of sub-groups share one switch and one tunnel per rank: a sub-group costs no new process.
"""
from __future__ import annotations

import threading
from typing import Callable

from .. import constants, wire
from ..channels import UdpTunnelPort
from ..clock import RealClock
from ..transport import FramePortTransport
from .engines import SwitchEngineError

_JOB_AT = wire.BYTE_FIELDS["job"][0]

# keyed by (switch address, world rank): one per process, or per rank when ranks are threads
_links: dict[tuple[str, int], "SwitchLink"] = {}
_links_lock = threading.Lock()


class SwitchLink:
    """The loop thread, the tunnel and the per-job dispatch of one (process, switch) pair."""

    def __init__(self, grpc_addr: str, world_rank: int, layout: dict):
        self.grpc_addr = grpc_addr
        self.world_rank = world_rank
        self.layout = layout            # the world's layout (ports of every world rank)
        self.loop = RealClock()
        w = world_rank
        sw_host = (layout.get("switch_hosts") or [constants.LOOPBACK] * layout["world"])[w]
        self.port = UdpTunnelPort(layout["host_ports"][w], sw_host, layout["switch_ports"][w])
        tpl = wire.FrameTemplate(constants.worker_mac(w), constants.SWITCH_MAC, constants.worker_ip(w),
                                 constants.SWITCH_IP)
        self.transport = FramePortTransport(self.loop, self.port, tpl)
        self.transport.set_receiver(self._dispatch)
        self._receivers: dict[int, Callable[[bytes], None]] = {}
        self.stray = 0                  # frames for a job this process has no worker for
        self.users = 0
        self._stop = False
        self.crashed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"saatp-switch-link-r{w}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.loop.run(lambda: self._stop)
        except BaseException as e:  # noqa: BLE001 - every engine on this link sees it
            self.crashed = e

    def _dispatch(self, data: bytes) -> None:
        if len(data) < wire.HDR_LEN:
            self.stray += 1
            return
        rx = self._receivers.get(data[_JOB_AT])
        if rx is None:
            self.stray += 1
            return
        rx(data)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def send(self, data: bytes) -> None:
        """Send an SA-ATP message (call on the loop thread)."""
        self.transport.send(data)

    def attach(self, job: int, receiver: Callable[[bytes], None]) -> None:
        if job in self._receivers:
            raise SwitchEngineError(f"job {job} already has a worker in this process")
        self._receivers[job] = receiver

    def detach(self, job: int) -> None:
        self._receivers.pop(job, None)

    def _close(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._set_stop)
        except OSError:
            self._stop = True
        self._thread.join(2.0)
        try:
            self.transport.close()
        except Exception:  # noqa: BLE001
            pass
        self.port.close()
        self.loop.close()

    def _set_stop(self) -> None:
        self._stop = True


def open_link(grpc_addr: str, world_rank: int, layout: dict) -> SwitchLink:
    """This process's link to the switch at ``grpc_addr`` (made on first use; counted)."""
    with _links_lock:
        link = _links.get((grpc_addr, world_rank))
        if link is None or not link.alive():
            link = _links[(grpc_addr, world_rank)] = SwitchLink(grpc_addr, world_rank, layout)
        link.users += 1
        return link


def find_link(grpc_addr: str, world_rank: int) -> SwitchLink | None:
    with _links_lock:
        link = _links.get((grpc_addr, world_rank))
        return link if link is not None and link.alive() else None


def release_link(link: SwitchLink) -> None:
    with _links_lock:
        link.users -= 1
        if link.users > 0:
            return
        if _links.get((link.grpc_addr, link.world_rank)) is link:
            del _links[(link.grpc_addr, link.world_rank)]
    link._close()
