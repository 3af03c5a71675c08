"""A hand-written stand-in for a compiled ``basic_router.p4``, for tests of the
P4Runtime server and the switch process that must not depend on the P4 compiler.

It has the control-plane API of :class:`~emulation.v1model.switch.Switch` (real
:class:`~emulation.v1model.tables.Table`, PRE, counter and register objects) and a
``process`` written in Python that behaves like this P4 program:

* from the CPU port: the first 2 bytes are ``packet_out{bit<9> egress_port; bit<7> pad}``;
  the rest leaves on ``egress_port``;
* IPv4: LPM on the destination in ``MyIngress.ipv4_lpm``; ``ipv4_forward(dstAddr, port)``
  sets the destination MAC to ``dstAddr``, the source MAC to the old destination,
  decrements the TTL (fixing the checksum) and sends to ``port``; ``drop`` drops;
  counts packets/bytes per ingress port in ``MyIngress.port_counter``; writes the
  last TTL seen into ``MyIngress.last_ttl[ingress_port]``;
* ARP and broadcast frames: multicast group 1, not back to the ingress port;
* EtherType 0x88B5: to the CPU with ``packet_in{bit<9> ingress_port; bit<7> pad}``;
* EtherType 0x88B6: a digest ``learn_t{srcAddr, ingress_port}``.
"""
from __future__ import annotations

from typing import Any, Sequence

from emulation.p4.info import (ActionInfoP, ControllerHeaderInfo, DigestInfo, ExternInstanceInfo,
                               HeaderFieldInfo, KeyInfoP, ParamInfo, ProgramInfo, TableActionRef, TableInfo)
from emulation.v1model.externs import PRE, Counter, PacketLength, Register
from emulation.v1model.tables import ActionInfo, KeyInfo, Table, TableEntry


def router_info() -> ProgramInfo:
    return ProgramInfo(
        source="fake_router.p4",
        actions=[ActionInfoP(name="NoAction", annotations={"noWarn": '"unused"'}),
                 ActionInfoP(name="MyIngress.drop"),
                 ActionInfoP(name="MyIngress.ipv4_forward",
                             params=[ParamInfo(name="dstAddr", width=48), ParamInfo(name="port", width=9)]),
                 ActionInfoP(name="MyIngress.set_mark", params=[ParamInfo(name="mark", width=8)])],
        tables=[TableInfo(name="MyIngress.ipv4_lpm",
                          keys=[KeyInfoP(name="hdr.ipv4.dstAddr", match_kind="lpm", width=32)],
                          actions=[TableActionRef(name="MyIngress.ipv4_forward"), TableActionRef(name="MyIngress.drop"),
                                   TableActionRef(name="NoAction")],
                          default_action="MyIngress.drop", size=1024),
                TableInfo(name="MyIngress.acl",
                          keys=[KeyInfoP(name="hdr.ipv4.srcAddr", match_kind="ternary", width=32),
                                KeyInfoP(name="hdr.ipv4.protocol", match_kind="exact", width=8)],
                          actions=[TableActionRef(name="MyIngress.set_mark"),
                                   TableActionRef(name="NoAction", default_only=True,
                                                  annotations={"defaultonly": ""})],
                          direct_counter="MyIngress.acl_counter", size=64)],
        externs=[ExternInstanceInfo(kind="counter", name="MyIngress.port_counter", size=16,
                                    unit="packets_and_bytes"),
                 ExternInstanceInfo(kind="direct_counter", name="MyIngress.acl_counter", unit="packets_and_bytes",
                                    table="MyIngress.acl"),
                 ExternInstanceInfo(kind="register", name="MyIngress.last_ttl", size=16, width=8)],
        controller_headers=[
            ControllerHeaderInfo(name="packet_in", type_name="packet_in_t",
                                 annotations={"controller_header": '"packet_in"'},
                                 fields=[HeaderFieldInfo("ingress_port", 9), HeaderFieldInfo("_pad", 7)]),
            ControllerHeaderInfo(name="packet_out", type_name="packet_out_t",
                                 annotations={"controller_header": '"packet_out"'},
                                 fields=[HeaderFieldInfo("egress_port", 9), HeaderFieldInfo("_pad", 7)])],
        digests=[DigestInfo("learn_t", [HeaderFieldInfo("srcAddr", 48), HeaderFieldInfo("ingress_port", 9)])])


class _Program:
    def __init__(self, info: ProgramInfo):
        self.info = info


def _csum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class FakeRouterSwitch:
    """See the module docstring.  ``FakeRouterSwitch(program=None, cpu_port=None)``."""

    def __init__(self, program: Any = None, *, cpu_port: int | None = None, **_: Any):
        self.program = program if program is not None else _Program(router_info())
        self.cpu_port = cpu_port
        self.plen = PacketLength()
        self.pre = PRE()
        self.digests: list[tuple[str, int, dict[str, int]]] = []
        info = self.program.info
        self.tables: dict[str, Table] = {}
        for t in info.tables:
            acts = []
            for i, ref in enumerate(t.actions):
                a = info.action(ref.name)
                acts.append(ActionInfo(a.name, i, [(p.name, p.width) for p in a.params], None,
                                       default_only=ref.default_only, table_only=ref.table_only))
            self.tables[t.name] = Table(t.name, [KeyInfo(k.name, k.match_kind, k.width) for k in t.keys], acts,
                                        (t.default_action, t.default_args), size=t.size,
                                        direct_counter=self if t.direct_counter else None)
        self.counters = {"MyIngress.port_counter": Counter("MyIngress.port_counter", 16, "packets_and_bytes",
                                                           self.plen)}
        self.registers = {"MyIngress.last_ttl": Register("MyIngress.last_ttl", 16, 8)}

    def packet_bytes(self) -> int:   # direct-counter protocol of Table
        return self.plen.value

    # ---------------------------------------------------------- control plane
    @staticmethod
    def _res(d: dict, name: str) -> Any:
        if name in d:
            return d[name]
        c = [k for k in d if k.endswith("." + name)]
        if len(c) == 1:
            return d[c[0]]
        raise KeyError(name)

    def table(self, name: str) -> Table:
        return self._res(self.tables, name)

    def table_add(self, table: str, action: str, match: Any = (), args: Any = (), priority: int | None = None) -> int:
        return self.table(table).add(match, action, args, priority)

    def table_modify(self, table: str, handle: int, action: str, args: Any = ()) -> None:
        self.table(table).modify(handle, action, args)

    def table_delete(self, table: str, handle: int) -> None:
        self.table(table).delete(handle)

    def table_set_default(self, table: str, action: str, args: Any = ()) -> None:
        self.table(table).set_default(action, args)

    def table_entries(self, table: str) -> list[TableEntry]:
        return self.table(table).entries()

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self._res(self.counters, name).read(index)

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        self._res(self.counters, name).write(index, packets, nbytes)

    def register_read(self, name: str, index: int) -> int:
        return self._res(self.registers, name).get(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        self._res(self.registers, name).set(index, value)

    def mc_group_create(self, mgid: int) -> None:
        self.pre.group_create(mgid)

    def mc_group_delete(self, mgid: int) -> None:
        self.pre.group_delete(mgid)

    def mc_set_group(self, mgid: int, replicas: Sequence[tuple[int, int]]) -> None:
        self.pre.set_group(mgid, list(replicas))

    def mirroring_add(self, session: int, egress_port: int | None = None, mgid: int | None = None) -> None:
        self.pre.mirroring_add(session, egress_port, mgid)

    def mirroring_delete(self, session: int) -> None:
        self.pre.mirroring_delete(session)

    # ------------------------------------------------------------ data plane
    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        self.plen.value = len(frame)
        if self.cpu_port is not None and port == self.cpu_port:
            if len(frame) < 2:
                return []
            eport = int.from_bytes(frame[:2], "big") >> 7
            return [(eport, frame[2:])]
        if len(frame) < 14:
            return []
        if 0 <= port < 16:
            self.counters["MyIngress.port_counter"].count(port)
        etype = int.from_bytes(frame[12:14], "big")
        if etype == 0x88B5 and self.cpu_port is not None:
            return [(self.cpu_port, ((port << 7) & 0xFFFF).to_bytes(2, "big") + frame)]
        if etype == 0x88B6:
            self.digests.append(("learn_t", 0, {"srcAddr": int.from_bytes(frame[6:12], "big"), "ingress_port": port}))
            return []
        if etype == 0x0806 or frame[:6] == b"\xff" * 6:
            return [(p, frame) for p, _ in self.pre.replicas(1) if p != port]
        if etype != 0x0800 or len(frame) < 34:
            return []
        ip = bytearray(frame[14:34])
        ttl = ip[8]
        if 0 <= port < 16:
            self.registers["MyIngress.last_ttl"].cells[port] = ttl
        self.tables["MyIngress.acl"].lookup((int.from_bytes(ip[12:16], "big"), ip[9]))
        _, args, hit, idx = self.tables["MyIngress.ipv4_lpm"].lookup(int.from_bytes(ip[16:20], "big"))
        name = list(self.tables["MyIngress.ipv4_lpm"].actions)[idx]
        if name != "MyIngress.ipv4_forward" or ttl <= 1:
            return []
        dst, eport = args
        ip[8] = ttl - 1
        ip[10:12] = b"\0\0"
        ip[10:12] = _csum16(bytes(ip)).to_bytes(2, "big")
        out = dst.to_bytes(6, "big") + frame[0:6] + frame[12:14] + bytes(ip) + frame[34:]
        return [(eport, out)]
