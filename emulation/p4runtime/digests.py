"""Digests: the controller's ``DigestEntry`` configs (Write/Read), and the digest lists the
pipeline generates, sent to the primary for the digests it asked for."""
from __future__ import annotations

import itertools
import time
from typing import Any, Iterator

from google.rpc import code_pb2

from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import encode_bytes

from .arbitration import Arbiter
from .errors import P4RTError
from .state import ServerState


class Digests:
    def __init__(self, state: ServerState, arbiter: Arbiter):
        self.state = state
        self.arbiter = arbiter
        self._cfg: dict[int, Any] = {}
        self._list_id = itertools.count(1)
        state.on_pipeline_change(self._cfg.clear)

    def write(self, typ: int, e: Any) -> None:
        idx = self.state.need_pipeline()
        if e.digest_id not in idx.digests:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown digest id {e.digest_id}")
        U = pb.Update
        if typ == U.INSERT:
            if e.digest_id in self._cfg:
                raise P4RTError(code_pb2.ALREADY_EXISTS, "digest already configured")
            self._cfg[e.digest_id] = pb.DigestEntry.FromString(e.SerializeToString())
        elif typ == U.MODIFY:
            if e.digest_id not in self._cfg:
                raise P4RTError(code_pb2.NOT_FOUND, "digest not configured")
            self._cfg[e.digest_id] = pb.DigestEntry.FromString(e.SerializeToString())
        else:
            if self._cfg.pop(e.digest_id, None) is None:
                raise P4RTError(code_pb2.NOT_FOUND, "digest not configured")

    def read(self, e: Any) -> Iterator[Any]:
        for did, d in self._cfg.items():
            if e.digest_id in (0, did):
                x = pb.Entity()
                x.digest_entry.CopyFrom(d)
                yield x

    def on_digest(self, name: str, values: dict[str, int]) -> None:
        """Device listener: one digest message the pipeline generated."""
        idx = self.state.index
        prim = self.arbiter.primary("")
        if idx is None or prim is None:
            return
        try:
            d = idx.get("digest", name)
        except KeyError:
            return
        if d.preamble.id not in self._cfg:
            return  # the controller has not asked for this digest
        m = pb.StreamMessageResponse()
        dl = m.digest
        dl.digest_id = d.preamble.id
        dl.list_id = next(self._list_id)
        dl.timestamp = time.time_ns()
        data = dl.data.add()
        members = idx.p4info.type_info.structs[d.type_spec.struct.name].members \
            if d.type_spec.HasField("struct") else []
        if members:
            for mem in members:
                data.struct.members.add().bitstring = encode_bytes(values.get(mem.name, 0))
        elif d.type_spec.HasField("tuple"):     # digest of a list (p4c names it digest_<n>)
            for v in values.values():
                data.tuple.members.add().bitstring = encode_bytes(v)
        else:
            for v in values.values():
                data.struct.members.add().bitstring = encode_bytes(v)
        prim.out.put(m)
