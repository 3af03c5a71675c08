"""What the server's handlers share: the device, the running pipeline's P4Info index, and
the hooks that clear per-pipeline state when a new pipeline is installed."""
from __future__ import annotations

from typing import Any, Callable

from google.rpc import code_pb2

from host_agent.p4runtime.p4info_index import P4InfoIndex

from .device import Device
from .errors import P4RTError


class ServerState:
    def __init__(self, device: Device):
        self.device = device
        self.index: P4InfoIndex | None = None
        self._reset_hooks: list[Callable[[], None]] = []
        self.action_profiles: Any = None   # the ActionProfiles handler (table entries use it)

    def on_pipeline_change(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` whenever a pipeline is installed (to drop state of the old one)."""
        self._reset_hooks.append(hook)

    def pipeline_changed(self) -> None:
        self.index = P4InfoIndex(self.device.p4info) if self.device.p4info is not None else None
        for hook in self._reset_hooks:
            hook()

    def check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown device id {device_id} (this is {self.device.device_id})")

    def need_pipeline(self) -> P4InfoIndex:
        if self.device.switch is None or self.index is None:
            raise P4RTError(code_pb2.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        return self.index
