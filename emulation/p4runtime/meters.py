"""Meter entries: a config (CIR/CBURST/PIR/PBURST) per index; an entry without a config
resets the meter cell to its unconfigured state (every packet GREEN)."""
from __future__ import annotations

from typing import Any, Iterator

from google.rpc import code_pb2

from emulation.v1model.externs import Meter
from host_agent.p4runtime import p4runtime_pb2 as pb

from .errors import P4RTError
from .state import ServerState


class Meters:
    def __init__(self, state: ServerState):
        self.state = state
        self._cfg: dict[tuple[int, int], Any] = {}   # (meter id, index) -> MeterConfig as written
        state.on_pipeline_change(self._cfg.clear)

    def _meter(self, mid: int) -> Any:
        idx = self.state.need_pipeline()
        m = idx.meters.get(mid)
        if m is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown meter id {mid}")
        return m

    def write(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "meter entries can only be MODIFY'd")
        m = self._meter(e.meter_id)
        indices = [e.index.index] if e.HasField("index") else range(m.size)
        cfg = e.config if e.HasField("config") else None
        if cfg is not None and (cfg.cir > cfg.pir or cfg.cburst < 0 or cfg.pburst < 0):
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"meter {m.preamble.name}: need cir <= pir")
        sw = self.state.device.switch
        for i in indices:
            if not 0 <= i < m.size:
                raise P4RTError(code_pb2.OUT_OF_RANGE, f"meter {m.preamble.name}: index {i} out of range "
                                f"0..{m.size - 1}")
            if cfg is not None:
                sw.meter_configure(m.preamble.name, i, float(cfg.cir), int(cfg.cburst), float(cfg.pir),
                                   int(cfg.pburst))
                self._cfg[(m.preamble.id, i)] = pb.MeterConfig.FromString(cfg.SerializeToString())
            else:
                try:
                    sw._extern(m.preamble.name, Meter).configure(i, None)
                except AttributeError:
                    raise P4RTError(code_pb2.UNIMPLEMENTED, "resetting a meter is not supported by this target") \
                        from None
                self._cfg.pop((m.preamble.id, i), None)

    def read(self, e: Any) -> Iterator[Any]:
        idx = self.state.need_pipeline()
        ms = [self._meter(e.meter_id)] if e.meter_id else list(idx.meters.values())
        for m in ms:
            indices = [e.index.index] if e.HasField("index") else range(m.size)
            for i in indices:
                out = pb.Entity()
                me = out.meter_entry
                me.meter_id = m.preamble.id
                me.index.index = i
                cfg = self._cfg.get((m.preamble.id, i))
                if cfg is not None:
                    me.config.CopyFrom(cfg)
                yield out
