"""Set/GetForwardingPipelineConfig.

Set: VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT (RECONCILE_AND_COMMIT is
UNIMPLEMENTED).  The device config becomes a Switch (see ``device_config.py``; an empty one
re-pushes the running program with empty tables), and the P4Info must describe that
program: each table, action, match field and parameter name must exist with the same width.
Get: every response type.
"""
from __future__ import annotations

from typing import Any

from google.rpc import code_pb2

from host_agent.p4runtime import p4info_pb2 as p4i
from host_agent.p4runtime import p4runtime_pb2 as pb

from .device import DeviceConfigError
from .errors import P4RTError
from .p4info import p4info_from_program
from .state import ServerState


def check_p4info(given: Any, sw: Any) -> None:
    """The P4Info must describe the compiled program (names and widths)."""
    ours = p4info_from_program(sw)
    ot = {t.preamble.name: t for t in ours.tables}
    oa = {a.preamble.name: a for a in ours.actions}
    problems = []
    for t in given.tables:
        o = ot.get(t.preamble.name)
        if o is None:
            problems.append(f"table {t.preamble.name} is not in the program")
            continue
        of = {(m.name, m.bitwidth, m.match_type) for m in o.match_fields}
        for m in t.match_fields:
            if (m.name, m.bitwidth, m.match_type) not in of:
                problems.append(f"table {t.preamble.name}: match field {m.name} ({m.bitwidth} bits) "
                                "differs from the program")
    for a in given.actions:
        o = oa.get(a.preamble.name)
        if o is None:
            problems.append(f"action {a.preamble.name} is not in the program")
            continue
        op = {(p.name, p.bitwidth) for p in o.params}
        for p in a.params:
            if (p.name, p.bitwidth) not in op:
                problems.append(f"action {a.preamble.name}: parameter {p.name} differs from the program")
    if problems:
        raise P4RTError(code_pb2.INVALID_ARGUMENT, "P4Info does not match the device config: "
                        + "; ".join(problems[:5]))


class Pipeline:
    def __init__(self, state: ServerState):
        self.state = state
        self._saved: tuple | None = None   # VERIFY_AND_SAVE: (switch, p4info, config, cookie)

    def set(self, request: Any) -> Any:
        """The checks of device id and primary are the caller's."""
        device = self.state.device
        act = request.action
        A = pb.SetForwardingPipelineConfigRequest
        if act == A.RECONCILE_AND_COMMIT:
            raise P4RTError(code_pb2.UNIMPLEMENTED, "RECONCILE_AND_COMMIT is not supported")
        if act == A.UNSPECIFIED:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "action is UNSPECIFIED")
        if act == A.COMMIT:
            if self._saved is None:
                raise P4RTError(code_pb2.FAILED_PRECONDITION, "COMMIT without a saved config (VERIFY_AND_SAVE)")
            device.install(*self._saved)
            self._saved = None
            return pb.SetForwardingPipelineConfigResponse()
        cfg = request.config
        if not cfg.HasField("p4info"):
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "the config has no P4Info")
        sw = self._build(cfg)
        check_p4info(cfg.p4info, sw)
        cookie = cfg.cookie.cookie if cfg.HasField("cookie") else None
        dev_cfg = cfg.p4_device_config or device.device_config
        if act == A.VERIFY_AND_SAVE:
            self._saved = (sw, p4i.P4Info.FromString(cfg.p4info.SerializeToString()), dev_cfg, cookie)
        elif act == A.VERIFY_AND_COMMIT:
            device.install(sw, p4i.P4Info.FromString(cfg.p4info.SerializeToString()), dev_cfg, cookie)
        return pb.SetForwardingPipelineConfigResponse()

    def _build(self, cfg: Any) -> Any:
        device = self.state.device
        data = cfg.p4_device_config
        try:
            if not data:
                if device.switch is None:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT,
                                    "empty p4_device_config and no program loaded: send the P4 source")
                return device.fresh_switch()
            return device.build_switch(data)
        except P4RTError:
            raise
        except DeviceConfigError as e:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(e)) from None
        except Exception as e:  # compile errors from the front end
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"cannot compile the device config: {e}") from None

    def get(self, request: Any) -> Any:
        device = self.state.device
        if device.p4info is None:
            raise P4RTError(code_pb2.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        R = pb.GetForwardingPipelineConfigRequest
        resp = pb.GetForwardingPipelineConfigResponse()
        c = resp.config
        rt = request.response_type
        if device.cookie is not None:
            c.cookie.cookie = device.cookie
        if rt in (R.ALL, R.P4INFO_AND_COOKIE):
            c.p4info.CopyFrom(device.p4info)
        if rt in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
            c.p4_device_config = device.device_config
        return resp
