"""A P4Runtime (spec v1.4) gRPC server in front of a :class:`~emulation.p4runtime.device.Device`.

The servicer here only checks and dispatches; each job has its module (see
``shared/design/p4runtime-notes.md`` for the spec points and p4runtime-shell's needs):

* ``stream.py``, ``arbitration.py``: ``StreamChannel``, election ids and the primary per
  (device id, role); PacketOut only from the primary (others get a ``StreamError``
  PERMISSION_DENIED); PacketIn, digest lists and idle-timeout notifications
  (``idle_timeout.py``) go to the primary;
* ``pipeline.py``: ``Set``/``GetForwardingPipelineConfig`` (device configs:
  ``device_config.py``);
* entity handlers for ``Write``/``Read``: ``tables.py`` (incl. default entries),
  ``replication.py`` (multicast groups, clone sessions), ``counters.py`` (counters, direct
  counters), ``action_profiles.py`` (members, groups, one-shot action sets), ``registers.py``, ``meters.py``, ``value_sets.py``, ``digests.py``;
  ``packet_io.py`` (PacketOut/PacketIn);
* byte strings and match fields: :mod:`host_agent.p4runtime.codec`, shared with the client.

``Write`` is CONTINUE_ON_ERROR; its errors are gRPC UNKNOWN with one ``p4.v1.Error`` per
update in ``grpc-status-details-bin`` (OK for the updates that succeeded).  ``Read`` takes
wildcards (table id 0, empty match, counter id 0, unset index...).  Unlike BMv2's
``simple_switch_grpc``, register entries can be read and written.
"""
from __future__ import annotations

import logging
from concurrent import futures
from typing import Any, Iterator

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2

from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import CodecError
from host_agent.p4runtime.p4runtime_pb2_grpc import P4RuntimeServicer, add_P4RuntimeServicer_to_server

from .action_profiles import ActionProfiles
from .arbitration import Arbiter
from .counters import Counters, DirectCounters
from .device import Device
from .digests import Digests
from .errors import P4RTError, abort, as_p4rt_error
from .idle_timeout import IdleTimeoutSweeper
from .meters import Meters
from .packet_io import PacketIO
from .pipeline import Pipeline
from .registers import Registers
from .replication import Replication
from .state import ServerState
from .stream import serve_stream
from .tables import Tables
from .value_sets import ValueSets

log = logging.getLogger("saatp.p4runtime")

API_VERSION = "1.4.1"


class P4RuntimeServicerImpl(P4RuntimeServicer):
    def __init__(self, device: Device):
        self.device = device
        self.state = ServerState(device)
        self.arbiter = Arbiter(device.device_id)
        self.pipeline = Pipeline(self.state)
        self.packet_io = PacketIO(self.state, self.arbiter)
        self.digests = Digests(self.state, self.arbiter)
        self.idle_timeouts = IdleTimeoutSweeper(self.state, self.arbiter)
        action_profiles = ActionProfiles(self.state)
        # Entity oneof name -> its handler (``write(update type, message)``, ``read(message)``)
        self.entities: dict[str, Any] = {
            "table_entry": Tables(self.state, on_idle_timeout=self.idle_timeouts.wake),
            "packet_replication_engine_entry": Replication(self.state),
            "counter_entry": Counters(self.state),
            "direct_counter_entry": DirectCounters(self.state),
            "register_entry": Registers(self.state),
            "meter_entry": Meters(self.state),
            "value_set_entry": ValueSets(self.state),
            "digest_entry": self.digests,
            "action_profile_member": action_profiles,
            "action_profile_group": action_profiles,
        }
        device.packet_in_listeners.append(self.packet_io.on_packet_in)
        device.digest_listeners.append(self.digests.on_digest)
        device.pipeline_listeners.append(self.state.pipeline_changed)
        if device.p4info is not None:
            self.state.pipeline_changed()

    def close(self) -> None:
        """Stop the servicer's background work (the idle-timeout sweeper)."""
        self.idle_timeouts.stop()

    def Capabilities(self, request: Any, context: Any) -> Any:
        return pb.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def StreamChannel(self, request_iterator: Iterator[Any], context: Any) -> Iterator[Any]:
        return serve_stream(request_iterator, context, self.arbiter, self.packet_io.packet_out)

    def SetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        try:
            self.state.check_device(request.device_id)
            self.arbiter.check_primary(request.election_id, request.role, request.HasField("election_id"))
            return self.pipeline.set(request)
        except P4RTError as e:
            abort(context, e)

    def GetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        try:
            self.state.check_device(request.device_id)
            return self.pipeline.get(request)
        except P4RTError as e:
            abort(context, e)

    # --------------------------------------------------------------- write
    def Write(self, request: Any, context: Any) -> Any:
        try:
            self.state.check_device(request.device_id)
            self.arbiter.check_primary(request.election_id, request.role, request.HasField("election_id"))
            self.state.need_pipeline()
            if request.atomicity != pb.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RTError(code_pb2.UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is supported")
        except P4RTError as e:
            abort(context, e)
            return None
        errors = []
        failed = False
        with self.device.lock:
            for u in request.updates:
                try:
                    try:
                        self._update(u)
                    except CodecError as e:
                        raise as_p4rt_error(e) from None
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
        if u.type == pb.Update.UNSPECIFIED:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "update type is UNSPECIFIED")
        kind = u.entity.WhichOneof("entity")
        if kind is None:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "update has no entity")
        handler = self.entities.get(kind)
        if handler is None:
            raise P4RTError(code_pb2.UNIMPLEMENTED, f"{kind} is not supported by this target")
        handler.write(u.type, getattr(u.entity, kind))

    # ---------------------------------------------------------------- read
    def Read(self, request: Any, context: Any) -> Iterator[Any]:
        try:
            self.state.check_device(request.device_id)
            self.state.need_pipeline()
            entities = []
            with self.device.lock:
                for ent in request.entities:
                    kind = ent.WhichOneof("entity")
                    handler = self.entities.get(kind)
                    if handler is None:
                        raise P4RTError(code_pb2.UNIMPLEMENTED, f"reading {kind} is not supported")
                    entities.extend(handler.read(getattr(ent, kind)))
        except CodecError as e:
            abort(context, as_p4rt_error(e))
            return
        except P4RTError as e:
            abort(context, e)
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
        self.servicer.close()
