"""Register entries: read and written per index, or every index at once (unlike BMv2's
``simple_switch_grpc``, which cannot read or write registers over P4Runtime)."""
from __future__ import annotations

from typing import Any, Iterator

from google.rpc import code_pb2

from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import decode_bytes, encode_bytes

from .errors import P4RTError
from .state import ServerState


def _width(r: Any) -> tuple[int, bool]:
    """(bit width, signed) of a register's cells."""
    bs = r.type_spec.bitstring
    if bs.HasField("int"):
        return bs.int.bitwidth, True
    return bs.bit.bitwidth, False


class Registers:
    def __init__(self, state: ServerState):
        self.state = state

    def _register(self, rid: int) -> Any:
        idx = self.state.need_pipeline()
        r = idx.registers.get(rid)
        if r is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown register id {rid}")
        return r

    def write(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "register entries can only be MODIFY'd")
        r = self._register(e.register_id)
        w, signed = _width(r)
        if e.data.WhichOneof("data") != "bitstring":
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"register {r.preamble.name}: data must be a bitstring")
        v = decode_bytes(e.data.bitstring, w, f"register {r.preamble.name}")
        if signed and v >> (w - 1):
            v -= 1 << w
        indices = [e.index.index] if e.HasField("index") else range(r.size)
        for i in indices:
            if not 0 <= i < r.size:
                raise P4RTError(code_pb2.OUT_OF_RANGE, f"register {r.preamble.name}: index {i} out of range "
                                f"0..{r.size - 1}")
            self.state.device.switch.register_write(r.preamble.name, i, v)

    def read(self, e: Any) -> Iterator[Any]:
        idx = self.state.need_pipeline()
        rs = [self._register(e.register_id)] if e.register_id else list(idx.registers.values())
        for r in rs:
            w, _ = _width(r)
            if e.HasField("index"):
                if not 0 <= e.index.index < r.size:
                    raise P4RTError(code_pb2.OUT_OF_RANGE, f"register {r.preamble.name}: index {e.index.index} "
                                    f"out of range 0..{r.size - 1}")
                indices = [e.index.index]
            else:
                indices = range(r.size)
            for i in indices:
                v = self.state.device.switch.register_read(r.preamble.name, i)
                ent = pb.Entity()
                re_ = ent.register_entry
                re_.register_id = r.preamble.id
                re_.index.index = i
                re_.data.bitstring = encode_bytes(v & ((1 << w) - 1))
                yield ent
