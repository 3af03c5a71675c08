"""A small P4Runtime client (names instead of ids), for tests, scripts and controllers.

    c = P4RuntimeClient("127.0.0.1:9559", device_id=1, election_id=1)
    c.set_pipeline(p4info, open("prog.p4", "rb").read())     # or c.load_p4info() if set
    c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0a000001, 32)},
             "MyIngress.ipv4_forward", {"dstAddr": 0x0a0000000001, "port": 1})
    c.multicast_group(1, [(1, 1), (2, 1)])
    c.packet_out(b"...", ingress_port=3); c.packet_in(timeout=1)
    c.close()

Errors of ``Write`` come back as :class:`WriteError` with one ``(code, message)`` per
update, parsed from ``grpc-status-details-bin`` as the spec defines.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Iterable, Sequence

import grpc
from google.rpc import code_pb2, status_pb2

from . import p4runtime_pb2 as pb
from .codec import encode_bytes, encode_match, encode_params, set_uint128
from .p4info_index import P4InfoIndex
from .p4runtime_pb2_grpc import P4RuntimeStub


class WriteError(Exception):
    def __init__(self, errors: list[tuple[int, str]], rpc_error: grpc.RpcError):
        self.errors = errors
        self.rpc_error = rpc_error
        bad = [(i, code_pb2.Code.Name(c), m) for i, (c, m) in enumerate(errors) if c != code_pb2.OK]
        super().__init__(f"write failed: {bad}" if bad else f"write failed: {rpc_error.details()}")

    @property
    def codes(self) -> list[int]:
        return [c for c, _ in self.errors]


class P4RuntimeClient:
    def __init__(self, address: str, device_id: int = 1, election_id: int | None = 1, role: str = "",
                 *, timeout: float = 10.0, arbitrate: bool = True):
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.timeout = timeout
        self.channel = grpc.insecure_channel(address)
        self.stub = P4RuntimeStub(self.channel)
        self.index: P4InfoIndex | None = None
        self._req: queue.Queue = queue.Queue()
        self.arbitration: queue.Queue = queue.Queue()
        self.packets: queue.Queue = queue.Queue()
        self.digests: queue.Queue = queue.Queue()
        self.idle_timeouts: queue.Queue = queue.Queue()   # p4.v1.IdleTimeoutNotification
        self.stream_errors: queue.Queue = queue.Queue()
        self.stream_status: grpc.RpcError | None = None
        self._stream = None
        self._thread: threading.Thread | None = None
        if arbitrate:
            try:
                self.open_stream()
            except BaseException:
                self.close()   # a refused arbitration leaves no channel or reader thread behind
                raise

    # -------------------------------------------------------------- stream
    def open_stream(self) -> Any:
        """Open the stream channel, send arbitration, return the first arbitration reply."""
        def requests():
            while True:
                r = self._req.get()
                if r is None:
                    return
                yield r
        self._stream = self.stub.StreamChannel(requests())
        self._thread = threading.Thread(target=self._read_stream, daemon=True, name="p4rt-client")
        self._thread.start()
        return self.send_arbitration()

    def send_arbitration(self, election_id: int | None = None) -> Any:
        if election_id is not None:
            self.election_id = election_id
        m = pb.StreamMessageRequest()
        m.arbitration.device_id = self.device_id
        if self.role:
            m.arbitration.role.name = self.role
        if self.election_id is not None:
            set_uint128(m.arbitration.election_id, self.election_id)
        self._req.put(m)
        return self.wait_arbitration()

    def wait_arbitration(self, timeout: float | None = None) -> Any:
        try:
            got = self.arbitration.get(timeout=timeout or self.timeout)
        except queue.Empty:
            got = None
        if isinstance(got, grpc.RpcError):
            raise got
        if got is not None:
            return got
        else:
            if self.stream_status is not None:
                raise self.stream_status
            raise TimeoutError("no arbitration reply") from None

    @property
    def is_primary(self) -> bool:
        return self._last_arb is not None and self._last_arb.status.code == code_pb2.OK

    _last_arb: Any = None

    def _read_stream(self) -> None:
        try:
            for resp in self._stream:
                kind = resp.WhichOneof("update")
                if kind == "arbitration":
                    self._last_arb = resp.arbitration
                    self.arbitration.put(resp.arbitration)
                elif kind == "packet":
                    self.packets.put(resp.packet)
                elif kind == "digest":
                    self.digests.put(resp.digest)
                elif kind == "idle_timeout_notification":
                    self.idle_timeouts.put(resp.idle_timeout_notification)
                elif kind == "error":
                    self.stream_errors.put(resp.error)
        except grpc.RpcError as e:
            self.stream_status = e
            self.arbitration.put(e)   # wake a waiting wait_arbitration()

    def close(self) -> None:
        self._req.put(None)
        if self._stream is not None:
            self._stream.cancel()
        if self._thread is not None:
            self._thread.join(2)
        self.channel.close()

    def __enter__(self) -> "P4RuntimeClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ pipeline
    def set_pipeline(self, p4info: Any, device_config: bytes = b"", *, action: str = "VERIFY_AND_COMMIT",
                     cookie: int | None = None) -> None:
        req = pb.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        if self.election_id is not None:
            set_uint128(req.election_id, self.election_id)
        req.action = pb.SetForwardingPipelineConfigRequest.Action.Value(action)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req, timeout=self.timeout)
        if action in ("VERIFY_AND_COMMIT", "COMMIT"):
            self.index = P4InfoIndex(p4info)

    def get_pipeline(self, response_type: str = "ALL") -> Any:
        req = pb.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=pb.GetForwardingPipelineConfigRequest.ResponseType.Value(response_type))
        return self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout).config

    def load_p4info(self) -> Any:
        p4info = self.get_pipeline("P4INFO_AND_COOKIE").p4info
        self.index = P4InfoIndex(p4info)
        return p4info

    def capabilities(self) -> str:
        return self.stub.Capabilities(pb.CapabilitiesRequest(), timeout=self.timeout).p4runtime_api_version

    # --------------------------------------------------------------- write
    def write(self, updates: Iterable[Any], *, atomicity: str = "CONTINUE_ON_ERROR") -> None:
        req = pb.WriteRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        if self.election_id is not None:
            set_uint128(req.election_id, self.election_id)
        req.atomicity = pb.WriteRequest.Atomicity.Value(atomicity)
        req.updates.extend(updates)
        try:
            self.stub.Write(req, timeout=self.timeout)
        except grpc.RpcError as e:
            errors: list[tuple[int, str]] = []
            for k, v in e.trailing_metadata() or ():
                if k == "grpc-status-details-bin":
                    st = status_pb2.Status.FromString(v)
                    for d in st.details:
                        err = pb.Error()
                        d.Unpack(err)
                        errors.append((err.canonical_code, err.message))
            if e.code() == grpc.StatusCode.UNKNOWN and errors:
                raise WriteError(errors, e) from None
            raise

    @staticmethod
    def update(kind: str, entity: Any) -> Any:
        u = pb.Update(type=pb.Update.Type.Value(kind))
        u.entity.CopyFrom(entity)
        return u

    def _idx(self) -> P4InfoIndex:
        if self.index is None:
            self.load_p4info()
        assert self.index is not None
        return self.index

    def table_entry(self, table: str, match: dict[str, Any] | None = None, action: str | None = None,
                    params: dict[str, int] | Sequence[int] | None = None, priority: int = 0,
                    *, default: bool = False, raw_match: Sequence[Any] | None = None,
                    idle_timeout_ns: int = 0) -> Any:
        """Build a ``p4.v1.Entity`` with a table entry (match specs of :mod:`host_agent.match`;
        an int is an exact match, a pair ``(value, prefix_len)`` an LPM one; ``idle_timeout_ns``
        for tables with ``support_timeout = true``)."""
        idx = self._idx()
        t = idx.get("table", table)
        ent = pb.Entity()
        te = ent.table_entry
        te.table_id = t.preamble.id
        for name, spec in (match or {}).items():
            mf = next((m for m in t.match_fields if m.name == name), None) \
                or next((m for m in t.match_fields if m.name.endswith("." + name)), None)
            if mf is None:
                raise KeyError(f"table {table}: no match field {name!r}")
            te.match.append(encode_match(mf.id, spec))
        if raw_match:
            te.match.extend(raw_match)
        if priority:
            te.priority = priority
        if default:
            te.is_default_action = True
        if idle_timeout_ns:
            te.idle_timeout_ns = idle_timeout_ns
        if action is not None:
            a = idx.get("action", action)
            if params is None:
                params = {}
            if not isinstance(params, dict):
                params = {p.name: v for p, v in zip(a.params, params)}
            encode_params(te.action.action, a, params)
        return ent

    def insert(self, table: str, match: dict[str, Any], action: str, params: Any = None, priority: int = 0,
               *, idle_timeout_ns: int = 0) -> None:
        self.write([self.update("INSERT", self.table_entry(table, match, action, params, priority,
                                                           idle_timeout_ns=idle_timeout_ns))])

    def modify(self, table: str, match: dict[str, Any], action: str, params: Any = None, priority: int = 0,
               *, idle_timeout_ns: int = 0) -> None:
        self.write([self.update("MODIFY", self.table_entry(table, match, action, params, priority,
                                                           idle_timeout_ns=idle_timeout_ns))])

    def delete(self, table: str, match: dict[str, Any], priority: int = 0) -> None:
        self.write([self.update("DELETE", self.table_entry(table, match, None, None, priority))])

    def set_default(self, table: str, action: str | None, params: Any = None) -> None:
        self.write([self.update("MODIFY", self.table_entry(table, None, action, params, default=True))])

    def multicast_group(self, mgid: int, replicas: Sequence[tuple[int, int]], kind: str = "INSERT") -> None:
        ent = pb.Entity()
        g = ent.packet_replication_engine_entry.multicast_group_entry
        g.multicast_group_id = mgid
        for port, rid in replicas:
            g.replicas.add(egress_port=port, instance=rid)
        self.write([self.update(kind, ent)])

    def clone_session(self, session: int, port: int, kind: str = "INSERT") -> None:
        ent = pb.Entity()
        c = ent.packet_replication_engine_entry.clone_session_entry
        c.session_id = session
        c.replicas.add(egress_port=port, instance=0)
        self.write([self.update(kind, ent)])

    def write_counter(self, name: str, index: int, packets: int, nbytes: int) -> None:
        ent = pb.Entity()
        c = ent.counter_entry
        c.counter_id = self._idx().id("counter", name)
        c.index.index = index
        c.data.packet_count, c.data.byte_count = packets, nbytes
        self.write([self.update("MODIFY", ent)])

    def write_register(self, name: str, index: int | None, value: int) -> None:
        idx = self._idx()
        r = idx.get("register", name)
        w = r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth
        ent = pb.Entity()
        e = ent.register_entry
        e.register_id = r.preamble.id
        if index is not None:
            e.index.index = index
        e.data.bitstring = encode_bytes(value & ((1 << w) - 1))
        self.write([self.update("MODIFY", ent)])

    def enable_digest(self, name: str) -> None:
        ent = pb.Entity()
        ent.digest_entry.digest_id = self._idx().id("digest", name)
        ent.digest_entry.config.max_list_size = 1
        self.write([self.update("INSERT", ent)])

    # ---------------------------------------------------------------- read
    def read(self, entities: Iterable[Any]) -> list[Any]:
        req = pb.ReadRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        req.entities.extend(entities)
        out = []
        for resp in self.stub.Read(req, timeout=self.timeout):
            out.extend(resp.entities)
        return out

    def read_table(self, table: str | None = None, *, time_since_last_hit: bool = False) -> list[Any]:
        """The table's entries (all tables' if None); ``time_since_last_hit`` asks for each
        entry's idle time (``entry.time_since_last_hit.elapsed_ns``)."""
        ent = pb.Entity()
        ent.table_entry.table_id = self._idx().id("table", table) if table else 0
        if time_since_last_hit:
            ent.table_entry.time_since_last_hit.SetInParent()
        return [e.table_entry for e in self.read([ent])]

    def read_counter(self, name: str, index: int | None = None) -> dict[int, tuple[int, int]]:
        ent = pb.Entity()
        ent.counter_entry.counter_id = self._idx().id("counter", name)
        if index is not None:
            ent.counter_entry.index.index = index
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count, e.counter_entry.data.byte_count)
                for e in self.read([ent])}

    def read_register(self, name: str, index: int | None = None) -> dict[int, int]:
        ent = pb.Entity()
        ent.register_entry.register_id = self._idx().id("register", name)
        if index is not None:
            ent.register_entry.index.index = index
        return {e.register_entry.index.index: int.from_bytes(e.register_entry.data.bitstring, "big")
                for e in self.read([ent])}

    def read_multicast_groups(self) -> dict[int, list[tuple[int, int]]]:
        ent = pb.Entity()
        ent.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        out = {}
        for e in self.read([ent]):
            g = e.packet_replication_engine_entry.multicast_group_entry
            out[g.multicast_group_id] = [(r.egress_port, r.instance) for r in g.replicas]
        return out

    # ---------------------------------------------------------- packet I/O
    def packet_out(self, payload: bytes, **metadata: int) -> None:
        idx = self._idx()
        m = pb.StreamMessageRequest()
        m.packet.payload = payload
        hdr = idx.cpm.get("packet_out")
        for name, v in metadata.items():
            md = next((x for x in hdr.metadata if x.name == name), None) if hdr else None
            if md is None:
                raise KeyError(f"no packet_out metadata {name!r}")
            m.packet.metadata.add(metadata_id=md.id, value=encode_bytes(v))
        self._req.put(m)

    def packet_in(self, timeout: float = 2.0) -> tuple[bytes, dict[str, int]] | None:
        """The next packet-in as (payload, {metadata name: value}), or None."""
        try:
            p = self.packets.get(timeout=timeout)
        except queue.Empty:
            return None
        idx = self._idx()
        hdr = idx.cpm.get("packet_in")
        names = {m.id: m.name for m in hdr.metadata} if hdr else {}
        return p.payload, {names.get(m.metadata_id, str(m.metadata_id)): int.from_bytes(m.value, "big")
                           for m in p.metadata}

    def idle_timeout_notification(self, timeout: float = 2.0) -> Any:
        """The next ``p4.v1.IdleTimeoutNotification`` (its ``table_entry`` list names the idle
        entries), or None if none came within ``timeout`` seconds."""
        try:
            return self.idle_timeouts.get(timeout=timeout)
        except queue.Empty:
            return None
