"""Frame ports: memory pairs, UDP tunnels, pcap files, impairments."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from host_agent.channels import (Impairment, ImpairedPort, ImpairmentModel, MemoryPort, PcapTap, PcapWriter,
                             PortClosed, PortError, UdpTunnelPort, open_port, parse_impairment,
                             parse_port_spec, read_pcap)


def frame(i: int, size: int = 64) -> bytes:
    return bytes(12) + b"\x08\x00" + i.to_bytes(4, "big") + bytes(size - 18)


def free_udp_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def test_memory_pair_and_close():
    a, b = MemoryPort.pair()
    a.send(b"x" * 60)
    assert b.recv(1) == b"x" * 60
    assert b.recv(0.01) is None
    b.close()
    with pytest.raises(PortClosed):
        b.recv(0.1)
    a.send(b"lost")           # peer closed: counted as dropped, no exception
    assert a.stats["tx_dropped"] == 1


def test_udp_tunnel_round_trip_and_foreign_sources_ignored():
    pa, pb = free_udp_port(), free_udp_port()
    a = UdpTunnelPort(pa, "127.0.0.1", pb)
    b = UdpTunnelPort(pb, "127.0.0.1", pa)
    try:
        for i in range(5):
            a.send(frame(i))
        got = [b.recv(1) for _ in range(5)]
        assert got == [frame(i) for i in range(5)]
        # a datagram from a third socket is not ours
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"intruder", ("127.0.0.1", pb))
        s.close()
        assert b.recv(0.2) is None
        b.send(b"back")
        assert a.recv(1) == b"back"
        assert a.stats["tx_frames"] == 5 and b.stats["rx_frames"] == 5
    finally:
        a.close()
        b.close()
    with pytest.raises(PortClosed):
        a.recv(0.1)


def test_port_specs_and_errors():
    assert parse_port_spec("3@veth0") == (3, "veth0")
    assert parse_port_spec("1@udp:9000:127.0.0.1:9001") == (1, "udp:9000:127.0.0.1:9001")
    for bad in ("veth0", "x@veth0", "511@veth0", "1@"):
        with pytest.raises(PortError):
            parse_port_spec(bad)
    with pytest.raises(PortError, match="expected udp"):
        open_port("udp:1:2")
    with pytest.raises(PortError, match="no network interface"):
        open_port("saatpnx0")
    with pytest.raises(PortError):
        open_port("mem:nothere", {})
    a, _ = MemoryPort.pair()
    assert open_port("mem:a", {"a": a}) is a


def test_pcap_writer_reader_and_tap(tmp_path):
    a, b = MemoryPort.pair()
    rx, tx = PcapWriter(tmp_path / "a_in.pcap"), PcapWriter(tmp_path / "a_out.pcap")
    tap = PcapTap(a, rx=rx, tx=tx)
    tap.send(frame(1))
    tap.send(frame(2, 1500))
    b.send(frame(3))
    assert tap.recv(1) == frame(3)
    tap.close()
    out = read_pcap(tmp_path / "a_out.pcap")
    assert [f for _, f in out] == [frame(1), frame(2, 1500)]
    assert [f for _, f in read_pcap(tmp_path / "a_in.pcap")] == [frame(3)]
    raw = (tmp_path / "a_out.pcap").read_bytes()
    magic, vmaj, vmin, _, _, snap, link = struct.unpack("<IHHiIII", raw[:24])
    assert (magic, vmaj, vmin, link) == (0xA1B2C3D4, 2, 4, 1)
    assert abs(out[0][0] - time.time()) < 60


def test_pcap_readable_by_scapy(tmp_path):
    scapy_all = pytest.importorskip("scapy.all")
    with PcapWriter(tmp_path / "x.pcap") as w:
        w.write(frame(7), ts=1000.25)
    pk = scapy_all.rdpcap(str(tmp_path / "x.pcap"))
    assert bytes(pk[0]) == frame(7)
    assert float(pk[0].time) == pytest.approx(1000.25)


def test_parse_impairment():
    imp = parse_impairment("loss=2.5%, delay=10ms, jitter=500us, rate=1mbit, dup=1%, reorder=3%, seed=9")
    assert (imp.loss, imp.delay, imp.jitter, imp.rate, imp.duplicate, imp.reorder, imp.seed) == \
        (2.5, 0.01, 0.0005, 1e6, 1.0, 3.0, 9)
    assert parse_impairment("delay=5").delay == pytest.approx(0.005)
    for bad in ("loss=120%", "foo=1", "delay", "rate=3furlongs", "seed=1.5"):
        with pytest.raises(PortError):
            parse_impairment(bad)


def test_impairment_model_is_seeded_and_statistically_right():
    def run(seed):
        m = ImpairmentModel(Impairment(loss=10, duplicate=5, reorder=5, jitter=0.001, seed=seed))
        return [m.plan(100, i * 0.001) for i in range(4000)], m.stats
    r1, s1 = run(42)
    r2, s2 = run(42)
    r3, _ = run(43)
    assert r1 == r2 and s1 == s2
    assert r1 != r3
    assert 300 < s1["lost"] < 500            # 10 % of 4000
    assert 120 < s1["duplicated"] < 260      # 5 % of the survivors
    assert 120 < s1["reordered"] < 260


def test_rate_limit_serialises_frames():
    m = ImpairmentModel(Impairment(rate=8000))   # 1000 bytes/s
    t1, _ = m.plan(100, 0.0)
    t2, _ = m.plan(100, 0.0)
    t3, _ = m.plan(100, 5.0)
    assert t1 == [pytest.approx(0.1)] and t2 == [pytest.approx(0.2)] and t3 == [pytest.approx(5.1)]


def test_impaired_port_loss_dup_reorder_on_the_wire():
    a, b = MemoryPort.pair()
    p = ImpairedPort(a, Impairment(loss=20, duplicate=10, reorder=10, seed=5, hold=0.02))
    n = 500
    for i in range(n):
        p.send(frame(i))
    assert p.flush(5)
    got = []
    while (f := b.recv(0.05)) is not None:
        got.append(int.from_bytes(f[14:18], "big"))
    st = p.stats
    assert len(got) == n - st["lost"] + st["duplicated"]
    assert 60 < st["lost"] < 140
    assert len(set(got)) < len(got)                   # duplicates arrived
    assert any(x > y for x, y in zip(got, got[1:]))   # something overtook something
    # the same seed gives the same sequence on the wire
    a2, b2 = MemoryPort.pair()
    p2 = ImpairedPort(a2, Impairment(loss=20, duplicate=10, reorder=10, seed=5, hold=0.02))
    for i in range(n):
        p2.send(frame(i))
    assert p2.flush(5)
    got2 = []
    while (f := b2.recv(0.05)) is not None:
        got2.append(int.from_bytes(f[14:18], "big"))
    assert got2 == got
    p.close()
    p2.close()


def test_impaired_port_delay():
    a, b = MemoryPort.pair()
    p = ImpairedPort(a, Impairment(delay=0.15))
    t0 = time.monotonic()
    p.send(frame(1))
    assert b.recv(0.05) is None        # still in flight
    assert b.recv(2) == frame(1)
    assert time.monotonic() - t0 >= 0.14
    p.close()
