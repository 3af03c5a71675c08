"""A P4Runtime (spec v1.4) gRPC server in front of a :class:`~emulation.p4runtime.device.Device`.

What it implements, following the P4Runtime specification (and p4runtime-shell's needs,
see ``shared/design/p4runtime-notes.md``):

* ``StreamChannel``: arbitration per (device id, role) with election ids: the highest
  id is primary; every client is told (OK for the primary, ALREADY_EXISTS for backups,
  NOT_FOUND when there is no primary) and told again when the primary changes; a
  duplicate election id ends the stream with INVALID_ARGUMENT, a wrong device id with
  NOT_FOUND.  PacketOut (primary only; others get a ``StreamError`` PERMISSION_DENIED),
  PacketIn and digest lists go to the primary.
* ``SetForwardingPipelineConfig``: VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT
  (RECONCILE_AND_COMMIT is UNIMPLEMENTED).  The device config is the P4 source or a bundle
  of it (see ``device.py``).  The P4Info must describe the compiled program: each table,
  action, field and parameter name must exist with the same width.
* ``GetForwardingPipelineConfig`` with every response type.
* ``Write``: table entries (incl. default entries via MODIFY ``is_default_action``),
  multicast group and clone session entries, counter, direct counter and register
  entries, digest configs.  Errors: gRPC UNKNOWN with one ``p4.v1.Error`` per update in
  ``grpc-status-details-bin`` (OK for the updates that succeeded).  Validation: exact
  fields present, don't-care ternary/LPM/range/optional fields omitted, ternary
  ``value & ~mask == 0``, LPM trailing bits 0, priority > 0 exactly for tables with
  ternary/range/optional keys, bytestrings that fit the bitwidth (canonical and
  zero-padded forms are both accepted; replies are canonical).
* ``Read`` with wildcards (table id 0, empty match, counter id 0, unset index...).
* ``Capabilities``.

Unlike BMv2's ``simple_switch_grpc``, register entries can be read and written.
"""
from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Iterator

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2

from . import p4info_pb2 as p4i
from . import p4runtime_pb2 as pb
from .device import Device, DeviceConfigError
from .p4info import P4InfoIndex, p4info_from_program
from .p4runtime_pb2_grpc import P4RuntimeServicer, add_P4RuntimeServicer_to_server

log = logging.getLogger("saatp.p4runtime")

API_VERSION = "1.4.1"


class P4RTError(Exception):
    """One failed update/request: a google.rpc code and a message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _code_name(code: int) -> str:
    return code_pb2.Code.Name(code)


def _grpc_code(code: int) -> grpc.StatusCode:
    for c in grpc.StatusCode:
        if c.value[0] == code:
            return c
    return grpc.StatusCode.UNKNOWN


# ------------------------------------------------------------------ bytestrings
def decode_bytes(b: bytes, width: int, what: str) -> int:
    """A P4Runtime bytestring as an int: canonical or zero-padded, must fit ``width`` bits."""
    if len(b) == 0:
        raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: empty bytestring")
    v = int.from_bytes(b, "big")
    if width and v >> width:
        raise P4RTError(code_pb2.INVALID_ARGUMENT,
                        f"{what}: bytestring provided does not fit within {width} bits")
    return v


def encode_bytes(v: int, width: int | None = None) -> bytes:
    """Canonical bytestring: the shortest big-endian form (0 is one zero byte)."""
    v = int(v)
    if v < 0:
        v &= (1 << width) - 1 if width else 0
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


def _uint128(e: Any) -> int:
    return (e.high << 64) | e.low


@dataclass
class _Stream:
    sid: int
    device_id: int
    role: str
    election_id: int | None
    out: "queue.Queue[Any]"
    context: Any


class P4RuntimeServicerImpl(P4RuntimeServicer):
    def __init__(self, device: Device):
        self.device = device
        self._lock = threading.RLock()
        self._streams: dict[int, _Stream] = {}
        self._sid = itertools.count(1)
        self._list_id = itertools.count(1)
        self._digest_cfg: dict[int, Any] = {}
        self._clone_sessions: dict[int, Any] = {}
        self._mc_groups: dict[int, Any] = {}
        self._meter_cfg: dict[tuple[int, int], Any] = {}
        self._index: P4InfoIndex | None = None
        self._saved: tuple | None = None   # VERIFY_AND_SAVE: (switch, p4info, config, cookie)
        device.packet_in_listeners.append(self._on_packet_in)
        device.digest_listeners.append(self._on_digest)
        device.pipeline_listeners.append(self._on_pipeline)
        if device.p4info is not None:
            self._on_pipeline()

    # ------------------------------------------------------------ helpers
    def _on_pipeline(self) -> None:
        self._index = P4InfoIndex(self.device.p4info) if self.device.p4info is not None else None
        self._digest_cfg.clear()
        self._clone_sessions.clear()
        self._mc_groups.clear()
        self._meter_cfg.clear()

    def _primary(self, role: str = "") -> _Stream | None:
        with self._lock:
            cands = [s for s in self._streams.values()
                     if s.role == role and s.election_id is not None and s.election_id > 0]
            return max(cands, key=lambda s: s.election_id) if cands else None

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown device id {device_id} (this is {self.device.device_id})")

    def _check_primary(self, election: Any, role: str, has_election: bool) -> None:
        prim = self._primary(role)
        eid = _uint128(election) if has_election else None
        if prim is None or eid != prim.election_id:
            raise P4RTError(code_pb2.PERMISSION_DENIED,
                            "not the primary controller" + (f" (election id {eid})" if eid is not None else
                                                            " (no election id)"))

    def _need_pipeline(self) -> P4InfoIndex:
        if self.device.switch is None or self._index is None:
            raise P4RTError(code_pb2.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        return self._index

    @staticmethod
    def _abort(context: Any, err: P4RTError) -> None:
        context.abort(_grpc_code(err.code), err.message)

    # ------------------------------------------------------- capabilities
    def Capabilities(self, request: Any, context: Any) -> Any:
        return pb.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # --------------------------------------------------------- arbitration
    def StreamChannel(self, request_iterator: Iterator[Any], context: Any) -> Iterator[Any]:
        out: queue.Queue = queue.Queue()
        stream: _Stream | None = None
        done = threading.Event()

        def reader() -> None:
            nonlocal stream
            try:
                for req in request_iterator:
                    kind = req.WhichOneof("update")
                    if kind == "arbitration":
                        err = self._arbitrate(req.arbitration, stream, out, context)
                        if isinstance(err, P4RTError):
                            out.put(err)
                            return
                        stream = err
                    elif stream is None:
                        out.put(P4RTError(code_pb2.FAILED_PRECONDITION,
                                          "the first stream message must be an arbitration update"))
                        return
                    elif kind == "packet":
                        self._packet_out(req.packet, stream)
                    elif kind == "digest_ack":
                        pass  # lists are not retransmitted, so acks need no bookkeeping
                    else:
                        self._stream_error(stream, code_pb2.UNIMPLEMENTED, f"stream message {kind!r} not supported")
            except grpc.RpcError:
                pass
            except Exception as e:  # noqa: BLE001 - never let a reader thread die silently
                log.exception("stream reader failed")
                out.put(P4RTError(code_pb2.INTERNAL, f"internal error: {e}"))
            finally:
                done.set()
                out.put(None)

        t = threading.Thread(target=reader, name="p4rt-stream", daemon=True)
        t.start()
        try:
            while True:
                try:
                    item = out.get(timeout=0.5)
                except queue.Empty:
                    if not context.is_active():
                        break
                    continue
                if item is None:
                    if done.is_set():
                        break
                    continue
                if isinstance(item, P4RTError):
                    context.abort(_grpc_code(item.code), item.message)
                yield item
        finally:
            if stream is not None:
                self._leave(stream)

    def _arbitrate(self, arb: Any, stream: _Stream | None, out: queue.Queue, context: Any) -> Any:
        if arb.device_id != self.device.device_id:
            return P4RTError(code_pb2.NOT_FOUND, f"unknown device id {arb.device_id}")
        role = arb.role.name if arb.HasField("role") else ""
        eid = _uint128(arb.election_id) if arb.HasField("election_id") else None
        with self._lock:
            if stream is not None and (stream.role != role):
                return P4RTError(code_pb2.FAILED_PRECONDITION, "a stream cannot change its role")
            if eid is not None:
                for s in self._streams.values():
                    if s is not stream and s.role == role and s.election_id == eid:
                        return P4RTError(code_pb2.INVALID_ARGUMENT,
                                         f"election id {eid} is already used by another controller")
            old_primary = self._primary(role)
            if stream is None:
                stream = _Stream(next(self._sid), arb.device_id, role, eid, out, context)
                self._streams[stream.sid] = stream
            else:
                stream.election_id = eid
            new_primary = self._primary(role)
            if new_primary is not old_primary:
                self._notify_all(role)
            else:
                self._notify(stream)
        return stream

    def _arb_message(self, s: _Stream) -> Any:
        prim = self._primary(s.role)
        m = pb.StreamMessageResponse()
        a = m.arbitration
        a.device_id = self.device.device_id
        if s.role:
            a.role.name = s.role
        if prim is not None:
            a.election_id.high, a.election_id.low = prim.election_id >> 64, prim.election_id & ((1 << 64) - 1)
        if prim is None:
            a.status.code = code_pb2.NOT_FOUND
            a.status.message = "no primary controller"
        elif prim is s:
            a.status.code = code_pb2.OK
            a.status.message = "is primary"
        else:
            a.status.code = code_pb2.ALREADY_EXISTS
            a.status.message = "is backup"
        return m

    def _notify(self, s: _Stream) -> None:
        s.out.put(self._arb_message(s))

    def _notify_all(self, role: str) -> None:
        for s in list(self._streams.values()):
            if s.role == role:
                self._notify(s)

    def _leave(self, stream: _Stream) -> None:
        with self._lock:
            before = self._primary(stream.role)
            if self._streams.pop(stream.sid, None) is None:
                return
            if self._primary(stream.role) is not before:
                self._notify_all(stream.role)

    def _stream_error(self, s: _Stream, code: int, message: str, packet: Any = None) -> None:
        m = pb.StreamMessageResponse()
        m.error.canonical_code = code
        m.error.message = message
        if packet is not None:
            m.error.packet_out.packet_out.CopyFrom(packet)
        s.out.put(m)

    def _packet_out(self, pkt: Any, s: _Stream) -> None:
        if self._primary(s.role) is not s:
            self._stream_error(s, code_pb2.PERMISSION_DENIED, "packet-out from a backup controller", pkt)
            return
        if self._index is None:
            self._stream_error(s, code_pb2.FAILED_PRECONDITION, "no pipeline", pkt)
            return
        meta = {}
        hdr = self._index.cpm.get("packet_out")
        try:
            for m in pkt.metadata:
                md = next((x for x in hdr.metadata if x.id == m.metadata_id), None) if hdr else None
                if md is None:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"unknown packet_out metadata id {m.metadata_id}")
                meta[md.name] = decode_bytes(m.value, md.bitwidth, f"packet_out metadata {md.name}")
            self.device.packet_out(pkt.payload, meta)
        except P4RTError as e:
            self._stream_error(s, e.code, e.message, pkt)
        except (DeviceConfigError, ValueError) as e:
            self._stream_error(s, code_pb2.INVALID_ARGUMENT, str(e), pkt)

    def _on_packet_in(self, pin: Any) -> None:
        prim = self._primary("")
        if prim is None or self._index is None:
            return
        m = pb.StreamMessageResponse()
        m.packet.payload = pin.payload
        hdr = self._index.cpm.get("packet_in")
        if hdr is not None:
            for md in hdr.metadata:
                if md.name in pin.metadata:
                    e = m.packet.metadata.add()
                    e.metadata_id = md.id
                    e.value = encode_bytes(pin.metadata[md.name])
        prim.out.put(m)

    def _on_digest(self, name: str, values: dict[str, int]) -> None:
        idx = self._index
        prim = self._primary("")
        if idx is None or prim is None:
            return
        try:
            d = idx.get("digest", name)
        except KeyError:
            return
        if d.preamble.id not in self._digest_cfg:
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
        else:
            for v in values.values():
                data.struct.members.add().bitstring = encode_bytes(v)
        prim.out.put(m)

    # ---------------------------------------------------------- pipeline
    def SetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        try:
            self._check_device(request.device_id)
            self._check_primary(request.election_id, request.role, request.HasField("election_id"))
            act = request.action
            A = pb.SetForwardingPipelineConfigRequest
            if act == A.RECONCILE_AND_COMMIT:
                raise P4RTError(code_pb2.UNIMPLEMENTED, "RECONCILE_AND_COMMIT is not supported")
            if act == A.UNSPECIFIED:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, "action is UNSPECIFIED")
            if act == A.COMMIT:
                if self._saved is None:
                    raise P4RTError(code_pb2.FAILED_PRECONDITION, "COMMIT without a saved config (VERIFY_AND_SAVE)")
                self.device.install(*self._saved)
                self._saved = None
                return pb.SetForwardingPipelineConfigResponse()
            cfg = request.config
            if not cfg.HasField("p4info"):
                raise P4RTError(code_pb2.INVALID_ARGUMENT, "the config has no P4Info")
            sw = self._build(cfg)
            self._check_p4info(cfg.p4info, sw)
            cookie = cfg.cookie.cookie if cfg.HasField("cookie") else None
            dev_cfg = cfg.p4_device_config or self.device.device_config
            if act == A.VERIFY_AND_SAVE:
                self._saved = (sw, p4i.P4Info.FromString(cfg.p4info.SerializeToString()), dev_cfg, cookie)
            elif act == A.VERIFY_AND_COMMIT:
                self.device.install(sw, p4i.P4Info.FromString(cfg.p4info.SerializeToString()), dev_cfg, cookie)
            return pb.SetForwardingPipelineConfigResponse()
        except P4RTError as e:
            self._abort(context, e)

    def _build(self, cfg: Any) -> Any:
        data = cfg.p4_device_config
        try:
            if not data:
                if self.device.switch is None:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT,
                                    "empty p4_device_config and no program loaded: send the P4 source")
                return self.device.fresh_switch()
            try:
                return self.device.build_switch(data)
            except DeviceConfigError as e:
                # e.g. BMv2 JSON from a tutorial controller: accept it if the program that
                # this switch was started with is what the P4Info describes
                if self.device.switch is not None and data.lstrip()[:1] == b"{":
                    log.warning("device config is not P4 source (%s); reusing the loaded program", e)
                    return self.device.fresh_switch()
                raise
        except P4RTError:
            raise
        except DeviceConfigError as e:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(e)) from None
        except Exception as e:  # compile errors from the front end
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"cannot compile the device config: {e}") from None

    @staticmethod
    def _check_p4info(given: Any, sw: Any) -> None:
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

    def GetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        try:
            self._check_device(request.device_id)
            if self.device.p4info is None:
                raise P4RTError(code_pb2.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
            R = pb.GetForwardingPipelineConfigRequest
            resp = pb.GetForwardingPipelineConfigResponse()
            c = resp.config
            rt = request.response_type
            if self.device.cookie is not None:
                c.cookie.cookie = self.device.cookie
            if rt in (R.ALL, R.P4INFO_AND_COOKIE):
                c.p4info.CopyFrom(self.device.p4info)
            if rt in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
                c.p4_device_config = self.device.device_config
            return resp
        except P4RTError as e:
            self._abort(context, e)

    # --------------------------------------------------------------- write
    def Write(self, request: Any, context: Any) -> Any:
        try:
            self._check_device(request.device_id)
            self._check_primary(request.election_id, request.role, request.HasField("election_id"))
            self._need_pipeline()
            if request.atomicity != pb.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RTError(code_pb2.UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is supported")
        except P4RTError as e:
            self._abort(context, e)
            return None
        errors = []
        failed = False
        with self.device.lock:
            for u in request.updates:
                try:
                    self._update(u)
                    errors.append(pb.Error(canonical_code=code_pb2.OK))
                except P4RTError as e:
                    failed = True
                    errors.append(pb.Error(canonical_code=e.code, message=e.message))
                except Exception as e:  # noqa: BLE001 - report, never crash the server
                    log.exception("write failed")
                    failed = True
                    errors.append(pb.Error(canonical_code=code_pb2.INTERNAL, message=f"internal error: {e}"))
        if failed:
            st = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.")
            for err in errors:
                a = any_pb2.Any()
                a.Pack(err)
                st.details.append(a)
            context.set_trailing_metadata((("grpc-status-details-bin", st.SerializeToString()),))
            first = next(e for e in errors if e.canonical_code != code_pb2.OK)
            context.abort(grpc.StatusCode.UNKNOWN, f"Write failure: {first.message}")
        return pb.WriteResponse()

    def _update(self, u: Any) -> None:
        U = pb.Update
        if u.type == U.UNSPECIFIED:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "update type is UNSPECIFIED")
        kind = u.entity.WhichOneof("entity")
        if kind == "table_entry":
            self._write_table_entry(u.type, u.entity.table_entry)
        elif kind == "packet_replication_engine_entry":
            self._write_pre(u.type, u.entity.packet_replication_engine_entry)
        elif kind == "counter_entry":
            self._write_counter(u.type, u.entity.counter_entry)
        elif kind == "direct_counter_entry":
            self._write_direct_counter(u.type, u.entity.direct_counter_entry)
        elif kind == "register_entry":
            self._write_register(u.type, u.entity.register_entry)
        elif kind == "digest_entry":
            self._write_digest(u.type, u.entity.digest_entry)
        elif kind == "meter_entry":
            self._write_meter(u.type, u.entity.meter_entry)
        elif kind is None:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "update has no entity")
        else:
            raise P4RTError(code_pb2.UNIMPLEMENTED, f"{kind} is not supported by this target")

    # tables -----------------------------------------------------------
    def _table(self, table_id: int) -> tuple[Any, Any]:
        idx = self._need_pipeline()
        t = idx.tables.get(table_id)
        if t is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown table id {table_id}")
        try:
            return t, self.device.switch.table(t.preamble.name)
        except KeyError as e:
            raise P4RTError(code_pb2.NOT_FOUND, f"table {t.preamble.name}: {e}") from None

    @staticmethod
    def _needs_priority(t: Any) -> bool:
        MF = p4i.MatchField
        return any(m.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for m in t.match_fields)

    def _match(self, t: Any, entry: Any) -> dict[str, Any]:
        """P4Runtime FieldMatches -> {key name: match spec}, with the spec's validation."""
        from emulation.v1model.match import Exact, Lpm, Optional_, Range, Ternary
        MF = p4i.MatchField
        fields = {m.id: m for m in t.match_fields}
        out: dict[str, Any] = {}
        seen = set()
        tn = t.preamble.name
        for fm in entry.match:
            mf = fields.get(fm.field_id)
            if mf is None:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: unknown match field id {fm.field_id}")
            if fm.field_id in seen:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: match field {mf.name} given twice")
            seen.add(fm.field_id)
            w = mf.bitwidth
            what = f"table {tn}, field {mf.name}"
            kind = fm.WhichOneof("field_match_type")
            expected = {MF.EXACT: "exact", MF.LPM: "lpm", MF.TERNARY: "ternary", MF.RANGE: "range",
                        MF.OPTIONAL: "optional"}.get(mf.match_type)
            if kind != expected:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: expected a {expected} match, got {kind}")
            if kind == "exact":
                out[mf.name] = Exact(decode_bytes(fm.exact.value, w, what))
            elif kind == "lpm":
                v = decode_bytes(fm.lpm.value, w, what)
                plen = fm.lpm.prefix_len
                if plen == 0:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: a prefix length of 0 is a don't-care "
                                    "match and must be omitted")
                if not 0 < plen <= w:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: prefix length {plen} out of range 1..{w}")
                if v & ((1 << (w - plen)) - 1):
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: LPM value has bits set beyond the "
                                    f"prefix length {plen}")
                out[mf.name] = Lpm(v, plen)
            elif kind == "ternary":
                v = decode_bytes(fm.ternary.value, w, what)
                m = decode_bytes(fm.ternary.mask, w, what + " (mask)")
                if m == 0:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: a ternary mask of 0 is a don't-care "
                                    "match and must be omitted")
                if v & ~m:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: ternary value has bits set outside "
                                    "the mask (value & ~mask != 0)")
                out[mf.name] = Ternary(v, m)
            elif kind == "range":
                lo = decode_bytes(fm.range.low, w, what + " (low)")
                hi = decode_bytes(fm.range.high, w, what + " (high)")
                if lo > hi:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: range low {lo} > high {hi}")
                if lo == 0 and hi == (1 << w) - 1:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"{what}: a full range is a don't-care match "
                                    "and must be omitted")
                out[mf.name] = Range(lo, hi)
            elif kind == "optional":
                out[mf.name] = Optional_(decode_bytes(fm.optional.value, w, what))
        for mf in t.match_fields:
            if mf.match_type == MF.EXACT and mf.id not in seen:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: exact match field {mf.name} is missing")
        return out

    def _action(self, t: Any, act: Any, *, default: bool) -> tuple[str, dict[str, int]]:
        idx = self._need_pipeline()
        tn = t.preamble.name
        refs = {r.id: r for r in t.action_refs}
        r = refs.get(act.action_id)
        a = idx.actions.get(act.action_id)
        if a is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown action id {act.action_id}")
        if r is None:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: action {a.preamble.name} is not one of its actions")
        if not default and r.scope == p4i.ActionRef.DEFAULT_ONLY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: action {a.preamble.name} is @defaultonly")
        if default and r.scope == p4i.ActionRef.TABLE_ONLY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: action {a.preamble.name} is @tableonly")
        params = {p.id: p for p in a.params}
        args: dict[str, int] = {}
        for p in act.params:
            pi = params.get(p.param_id)
            if pi is None:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"action {a.preamble.name}: unknown parameter id {p.param_id}")
            if pi.name in args:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"action {a.preamble.name}: parameter {pi.name} given twice")
            args[pi.name] = decode_bytes(p.value, pi.bitwidth, f"action {a.preamble.name}, parameter {pi.name}")
        missing = [p.name for p in a.params if p.name not in args]
        if missing:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"action {a.preamble.name}: missing parameter(s) {missing}")
        return a.preamble.name, args

    def _table_action(self, t: Any, entry: Any, *, default: bool) -> tuple[str, dict[str, int]]:
        kind = entry.action.WhichOneof("type")
        if kind is None:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {t.preamble.name}: the entry has no action")
        if kind != "action":
            raise P4RTError(code_pb2.UNIMPLEMENTED, f"{kind}: action profiles are not supported")
        return self._action(t, entry.action.action, default=default)

    def _write_table_entry(self, typ: int, e: Any) -> None:
        from emulation.v1model.tables import TableError
        U = pb.Update
        t, tab = self._table(e.table_id)
        tn = t.preamble.name
        if e.is_default_action:
            if typ != U.MODIFY:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: the default entry can only be MODIFY'd")
            if len(e.match) or e.priority:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: the default entry has no match or priority")
            if t.const_default_action_id:
                raise P4RTError(code_pb2.PERMISSION_DENIED, f"table {tn}: the default action is const")
            try:
                if e.HasField("action"):
                    name, args = self._table_action(t, e, default=True)
                    tab.set_default(name, args)
                else:
                    tab.reset_default()
            except (TableError, KeyError, ValueError) as ex:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, str(ex)) from None
            return
        if t.is_const_table:
            raise P4RTError(code_pb2.PERMISSION_DENIED, f"table {tn} is const")
        if e.idle_timeout_ns and t.idle_timeout_behavior != p4i.Table.NOTIFY_CONTROL:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn} does not support idle timeouts")
        if e.HasField("meter_config"):
            raise P4RTError(code_pb2.UNIMPLEMENTED, "direct meter configs in table entries are not supported")
        match = self._match(t, e)
        prio = e.priority
        if self._needs_priority(t):
            if prio <= 0:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: entries need a priority > 0")
        elif prio != 0:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: priority must be 0 (no ternary/range/optional keys)")
        prio_arg = prio if prio else None
        try:
            existing = tab.find(match, prio_arg)
        except (TableError, KeyError, ValueError) as ex:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(ex)) from None
        try:
            if typ == U.INSERT:
                if existing is not None:
                    raise P4RTError(code_pb2.ALREADY_EXISTS, f"table {tn}: an entry with this match exists")
                name, args = self._table_action(t, e, default=False)
                if len(tab.entries()) >= t.size > 0:
                    raise P4RTError(code_pb2.RESOURCE_EXHAUSTED, f"table {tn} is full ({t.size} entries)")
                h = tab.add(match, name, args, prio_arg)
                if e.HasField("counter_data"):
                    ent = tab.entry(h)
                    ent.packets, ent.bytes = e.counter_data.packet_count, e.counter_data.byte_count
            elif typ == U.MODIFY:
                if existing is None:
                    raise P4RTError(code_pb2.NOT_FOUND, f"table {tn}: no entry with this match")
                name, args = self._table_action(t, e, default=False)
                tab.modify(existing.handle, name, args)
                if e.HasField("counter_data"):
                    existing.packets, existing.bytes = e.counter_data.packet_count, e.counter_data.byte_count
            elif typ == U.DELETE:
                if existing is None:
                    raise P4RTError(code_pb2.NOT_FOUND, f"table {tn}: no entry with this match")
                tab.delete(existing.handle)
        except (TableError, KeyError, ValueError) as ex:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(ex)) from None

    def _entry_to_pb(self, t: Any, tab: Any, ent: Any, *, default: bool = False, counters: bool = False) -> Any:
        from emulation.v1model.match import Exact, Lpm, Optional_, Range, Ternary
        idx = self._index
        out = pb.TableEntry(table_id=t.preamble.id)
        if default:
            out.is_default_action = True
        else:
            for mf in t.match_fields:
                spec = ent.match.get(mf.name)
                if spec is None:
                    continue
                w = mf.bitwidth
                if isinstance(spec, int) and not isinstance(spec, bool):
                    spec = Exact(spec)
                fm = pb.FieldMatch(field_id=mf.id)
                if isinstance(spec, Exact):
                    fm.exact.value = encode_bytes(spec.value)
                elif isinstance(spec, Lpm):
                    if spec.prefix_len == 0:
                        continue
                    fm.lpm.value = encode_bytes(spec.value)
                    fm.lpm.prefix_len = spec.prefix_len
                elif isinstance(spec, Ternary):
                    if spec.mask == 0:
                        continue
                    fm.ternary.value = encode_bytes(spec.value)
                    fm.ternary.mask = encode_bytes(spec.mask)
                elif isinstance(spec, Range):
                    if spec.low == 0 and spec.high == (1 << w) - 1:
                        continue
                    fm.range.low = encode_bytes(spec.low)
                    fm.range.high = encode_bytes(spec.high)
                elif isinstance(spec, Optional_):
                    if spec.value is None:
                        continue
                    fm.optional.value = encode_bytes(spec.value)
                out.match.append(fm)
            if ent.priority:
                out.priority = ent.priority
            if t.is_const_table:
                out.is_const = True
        a = idx.get("action", ent.action) if idx else None
        if a is not None:
            act = out.action.action
            act.action_id = a.preamble.id
            for p in a.params:
                if p.name in ent.args:
                    act.params.add(param_id=p.id, value=encode_bytes(ent.args[p.name]))
        if counters and not default and len(t.direct_resource_ids):
            out.counter_data.packet_count = getattr(ent, "packets", 0)
            out.counter_data.byte_count = getattr(ent, "bytes", 0)
        return out

    def _read_table_entries(self, req: Any) -> Iterator[Any]:
        idx = self._need_pipeline()
        tables = [idx.tables[req.table_id]] if req.table_id else list(idx.tables.values())
        if req.table_id and req.table_id not in idx.tables:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown table id {req.table_id}")
        counters = req.HasField("counter_data")
        for t in tables:
            _, tab = self._table(t.preamble.id)
            if req.is_default_action:
                yield self._entry_to_pb(t, tab, tab.default_entry, default=True)
                continue
            if len(req.match):
                if not req.table_id:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, "a match needs a table id")
                match = self._match(t, req)
                ent = tab.find(match, req.priority or None)
                if ent is not None:
                    yield self._entry_to_pb(t, tab, ent, counters=counters)
                continue
            for ent in tab.entries():
                if req.priority and ent.priority != req.priority:
                    continue
                yield self._entry_to_pb(t, tab, ent, counters=counters)

    # packet replication engine ----------------------------------------
    @staticmethod
    def _replicas(reps: Any) -> list[tuple[int, int]]:
        out = []
        for r in reps:
            kind = r.WhichOneof("port_kind")
            if kind == "port":
                port = decode_bytes(r.port, 32, "replica port")
            else:
                port = r.egress_port
            if port >= 511:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"replica port {port} out of range 0..510")
            out.append((port, r.instance))
        if len(set(out)) != len(out):
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "duplicate replicas (port, instance)")
        return out

    def _write_pre(self, typ: int, e: Any) -> None:
        U = pb.Update
        sw = self.device.switch
        kind = e.WhichOneof("type")
        if kind == "multicast_group_entry":
            g = e.multicast_group_entry
            mgid = g.multicast_group_id
            if not 0 < mgid < 1 << 16:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"multicast group id {mgid} out of range 1..65535")
            if typ == U.INSERT:
                if mgid in self._mc_groups:
                    raise P4RTError(code_pb2.ALREADY_EXISTS, f"multicast group {mgid} exists")
                reps = self._replicas(g.replicas)
                sw.mc_group_create(mgid)
                sw.mc_set_group(mgid, reps)
                self._mc_groups[mgid] = pb.MulticastGroupEntry.FromString(g.SerializeToString())
            elif typ == U.MODIFY:
                if mgid not in self._mc_groups:
                    raise P4RTError(code_pb2.NOT_FOUND, f"no multicast group {mgid}")
                sw.mc_set_group(mgid, self._replicas(g.replicas))
                self._mc_groups[mgid] = pb.MulticastGroupEntry.FromString(g.SerializeToString())
            elif typ == U.DELETE:
                if mgid not in self._mc_groups:
                    raise P4RTError(code_pb2.NOT_FOUND, f"no multicast group {mgid}")
                sw.mc_set_group(mgid, [])
                sw.mc_group_delete(mgid)
                del self._mc_groups[mgid]
        elif kind == "clone_session_entry":
            c = e.clone_session_entry
            sid = c.session_id
            if typ == U.DELETE:
                if sid not in self._clone_sessions:
                    raise P4RTError(code_pb2.NOT_FOUND, f"no clone session {sid}")
                sw.mirroring_delete(sid)
                del self._clone_sessions[sid]
                return
            if typ == U.INSERT and sid in self._clone_sessions:
                raise P4RTError(code_pb2.ALREADY_EXISTS, f"clone session {sid} exists")
            if typ == U.MODIFY and sid not in self._clone_sessions:
                raise P4RTError(code_pb2.NOT_FOUND, f"no clone session {sid}")
            reps = self._replicas(c.replicas)
            if c.packet_length_bytes:
                raise P4RTError(code_pb2.UNIMPLEMENTED, "clone session truncation (packet_length_bytes) "
                                "is not supported (as on BMv2)")
            if len(reps) != 1:
                raise P4RTError(code_pb2.UNIMPLEMENTED, "clone sessions with other than one replica are not supported")
            sw.mirroring_add(sid, egress_port=reps[0][0])
            self._clone_sessions[sid] = pb.CloneSessionEntry.FromString(c.SerializeToString())
        else:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "empty packet replication engine entry")

    def _read_pre(self, e: Any) -> Iterator[Any]:
        kind = e.WhichOneof("type")
        if kind == "multicast_group_entry":
            want = e.multicast_group_entry.multicast_group_id
            for mgid, g in sorted(self._mc_groups.items()):
                if want in (0, mgid):
                    ent = pb.Entity()
                    ent.packet_replication_engine_entry.multicast_group_entry.CopyFrom(g)
                    yield ent
        elif kind == "clone_session_entry":
            want = e.clone_session_entry.session_id
            for sid, c in sorted(self._clone_sessions.items()):
                if want in (0, sid):
                    ent = pb.Entity()
                    ent.packet_replication_engine_entry.clone_session_entry.CopyFrom(c)
                    yield ent

    # counters and registers -------------------------------------------
    def _counter(self, cid: int) -> Any:
        idx = self._need_pipeline()
        c = idx.counters.get(cid)
        if c is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown counter id {cid}")
        return c

    def _write_counter(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "counter entries can only be MODIFY'd")
        c = self._counter(e.counter_id)
        if not e.HasField("index"):
            raise P4RTError(code_pb2.UNIMPLEMENTED, "writing all indices of a counter at once is not supported")
        i = e.index.index
        if not 0 <= i < c.size:
            raise P4RTError(code_pb2.OUT_OF_RANGE, f"counter {c.preamble.name}: index {i} out of range 0..{c.size - 1}")
        self.device.switch.counter_write(c.preamble.name, i, e.data.packet_count, e.data.byte_count)

    def _read_counters(self, e: Any) -> Iterator[Any]:
        idx = self._need_pipeline()
        cs = [self._counter(e.counter_id)] if e.counter_id else list(idx.counters.values())
        for c in cs:
            if e.HasField("index"):
                if not 0 <= e.index.index < c.size:
                    raise P4RTError(code_pb2.OUT_OF_RANGE, f"counter {c.preamble.name}: index {e.index.index} "
                                    f"out of range 0..{c.size - 1}")
                indices = [e.index.index]
            else:
                indices = range(c.size)
            for i in indices:
                pk, by = self.device.switch.counter_read(c.preamble.name, i)
                ent = pb.Entity()
                ce = ent.counter_entry
                ce.counter_id = c.preamble.id
                ce.index.index = i
                if c.spec.unit in (p4i.CounterSpec.PACKETS, p4i.CounterSpec.BOTH):
                    ce.data.packet_count = pk
                if c.spec.unit in (p4i.CounterSpec.BYTES, p4i.CounterSpec.BOTH):
                    ce.data.byte_count = by
                yield ent

    def _direct_table(self, e: Any) -> tuple[Any, Any]:
        t, tab = self._table(e.table_entry.table_id)
        if not len(t.direct_resource_ids) or not any(
                r in self._index.direct_counters for r in t.direct_resource_ids):
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {t.preamble.name} has no direct counter")
        return t, tab

    def _write_direct_counter(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "direct counter entries can only be MODIFY'd")
        t, tab = self._direct_table(e)
        ent = tab.find(self._match(t, e.table_entry), e.table_entry.priority or None)
        if ent is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"table {t.preamble.name}: no entry with this match")
        ent.packets, ent.bytes = e.data.packet_count, e.data.byte_count

    def _read_direct_counters(self, e: Any) -> Iterator[Any]:
        idx = self._need_pipeline()
        if e.table_entry.table_id:
            tables = [self._direct_table(e)[0]]
        else:
            tables = [t for t in idx.tables.values()
                      if any(r in idx.direct_counters for r in t.direct_resource_ids)]
        for t in tables:
            _, tab = self._table(t.preamble.id)
            if len(e.table_entry.match):
                one = tab.find(self._match(t, e.table_entry), e.table_entry.priority or None)
                ents = [one] if one is not None else []
            else:
                ents = tab.entries()
            for ent in ents:
                out = pb.Entity()
                dc = out.direct_counter_entry
                dc.table_entry.CopyFrom(self._entry_to_pb(t, tab, ent))
                dc.table_entry.ClearField("action")
                dc.data.packet_count, dc.data.byte_count = ent.packets, ent.bytes
                yield out

    def _register(self, rid: int) -> Any:
        idx = self._need_pipeline()
        r = idx.registers.get(rid)
        if r is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown register id {rid}")
        return r

    @staticmethod
    def _reg_width(r: Any) -> tuple[int, bool]:
        bs = r.type_spec.bitstring
        if bs.HasField("int"):
            return bs.int.bitwidth, True
        return bs.bit.bitwidth, False

    def _write_register(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "register entries can only be MODIFY'd")
        r = self._register(e.register_id)
        w, signed = self._reg_width(r)
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
            self.device.switch.register_write(r.preamble.name, i, v)

    def _read_registers(self, e: Any) -> Iterator[Any]:
        idx = self._need_pipeline()
        rs = [self._register(e.register_id)] if e.register_id else list(idx.registers.values())
        for r in rs:
            w, _ = self._reg_width(r)
            if e.HasField("index"):
                if not 0 <= e.index.index < r.size:
                    raise P4RTError(code_pb2.OUT_OF_RANGE, f"register {r.preamble.name}: index {e.index.index} "
                                    f"out of range 0..{r.size - 1}")
                indices = [e.index.index]
            else:
                indices = range(r.size)
            for i in indices:
                v = self.device.switch.register_read(r.preamble.name, i)
                ent = pb.Entity()
                re_ = ent.register_entry
                re_.register_id = r.preamble.id
                re_.index.index = i
                re_.data.bitstring = encode_bytes(v & ((1 << w) - 1))
                yield ent

    def _meter(self, mid: int) -> Any:
        idx = self._need_pipeline()
        m = idx.meters.get(mid)
        if m is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown meter id {mid}")
        return m

    def _write_meter(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "meter entries can only be MODIFY'd")
        m = self._meter(e.meter_id)
        indices = [e.index.index] if e.HasField("index") else range(m.size)
        cfg = e.config if e.HasField("config") else None
        if cfg is not None and (cfg.cir > cfg.pir or cfg.cburst < 0 or cfg.pburst < 0):
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"meter {m.preamble.name}: need cir <= pir")
        for i in indices:
            if not 0 <= i < m.size:
                raise P4RTError(code_pb2.OUT_OF_RANGE, f"meter {m.preamble.name}: index {i} out of range "
                                f"0..{m.size - 1}")
            sw = self.device.switch
            if cfg is not None:
                sw.meter_configure(m.preamble.name, i, float(cfg.cir), int(cfg.cburst), float(cfg.pir),
                                   int(cfg.pburst))
                self._meter_cfg[(m.preamble.id, i)] = pb.MeterConfig.FromString(cfg.SerializeToString())
            else:
                from emulation.v1model.externs import Meter
                try:
                    sw._extern(m.preamble.name, Meter).configure(i, None)
                except AttributeError:
                    raise P4RTError(code_pb2.UNIMPLEMENTED, "resetting a meter is not supported by this target") \
                        from None
                self._meter_cfg.pop((m.preamble.id, i), None)

    def _read_meters(self, e: Any) -> Iterator[Any]:
        idx = self._need_pipeline()
        ms = [self._meter(e.meter_id)] if e.meter_id else list(idx.meters.values())
        for m in ms:
            indices = [e.index.index] if e.HasField("index") else range(m.size)
            for i in indices:
                out = pb.Entity()
                me = out.meter_entry
                me.meter_id = m.preamble.id
                me.index.index = i
                cfg = self._meter_cfg.get((m.preamble.id, i))
                if cfg is not None:
                    me.config.CopyFrom(cfg)
                yield out

    def _write_digest(self, typ: int, e: Any) -> None:
        idx = self._need_pipeline()
        if e.digest_id not in idx.digests:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown digest id {e.digest_id}")
        U = pb.Update
        if typ == U.INSERT:
            if e.digest_id in self._digest_cfg:
                raise P4RTError(code_pb2.ALREADY_EXISTS, "digest already configured")
            self._digest_cfg[e.digest_id] = pb.DigestEntry.FromString(e.SerializeToString())
        elif typ == U.MODIFY:
            if e.digest_id not in self._digest_cfg:
                raise P4RTError(code_pb2.NOT_FOUND, "digest not configured")
            self._digest_cfg[e.digest_id] = pb.DigestEntry.FromString(e.SerializeToString())
        else:
            if self._digest_cfg.pop(e.digest_id, None) is None:
                raise P4RTError(code_pb2.NOT_FOUND, "digest not configured")

    # ---------------------------------------------------------------- read
    def Read(self, request: Any, context: Any) -> Iterator[Any]:
        try:
            self._check_device(request.device_id)
            self._need_pipeline()
            entities = []
            with self.device.lock:
                for ent in request.entities:
                    kind = ent.WhichOneof("entity")
                    if kind == "table_entry":
                        for te in self._read_table_entries(ent.table_entry):
                            x = pb.Entity()
                            x.table_entry.CopyFrom(te)
                            entities.append(x)
                    elif kind == "packet_replication_engine_entry":
                        entities.extend(self._read_pre(ent.packet_replication_engine_entry))
                    elif kind == "counter_entry":
                        entities.extend(self._read_counters(ent.counter_entry))
                    elif kind == "direct_counter_entry":
                        entities.extend(self._read_direct_counters(ent.direct_counter_entry))
                    elif kind == "register_entry":
                        entities.extend(self._read_registers(ent.register_entry))
                    elif kind == "meter_entry":
                        entities.extend(self._read_meters(ent.meter_entry))
                    elif kind == "digest_entry":
                        for did, d in self._digest_cfg.items():
                            if ent.digest_entry.digest_id in (0, did):
                                x = pb.Entity()
                                x.digest_entry.CopyFrom(d)
                                entities.append(x)
                    else:
                        raise P4RTError(code_pb2.UNIMPLEMENTED, f"reading {kind} is not supported")
        except P4RTError as e:
            self._abort(context, e)
            return
        for i in range(0, len(entities), 1000):
            yield pb.ReadResponse(entities=entities[i:i + 1000])
        if not entities:
            yield pb.ReadResponse()


class P4RuntimeServer:
    """A gRPC server serving one :class:`Device`; ``start()`` then ``stop()``."""

    def __init__(self, device: Device, addr: str = "127.0.0.1:9559", max_workers: int = 16):
        self.device = device
        self.addr = addr
        self.servicer = P4RuntimeServicerImpl(device)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="p4rt"),
                                  options=[("grpc.max_receive_message_length", 256 << 20),
                                           ("grpc.max_send_message_length", 256 << 20),
                                           ("grpc.so_reuseport", 0)])
        add_P4RuntimeServicer_to_server(self.servicer, self.server)
        try:
            self.port = self.server.add_insecure_port(addr)
        except RuntimeError as e:
            raise OSError(f"cannot listen on {addr}: {e}") from None
        if self.port == 0:
            raise OSError(f"cannot listen on {addr} (address in use or invalid)")
        host = addr.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"

    def start(self) -> "P4RuntimeServer":
        self.server.start()
        return self

    def stop(self, grace: float | None = 0.5) -> None:
        self.server.stop(grace).wait(5)
