"""``Device.process_batch``: the switch process's event loop runs a port's batch under one
acquisition of the device lock; per frame it gets what the pipeline emitted or the error,
in order, and the outputs are transmitted / delivered to the CPU in order afterwards."""
from __future__ import annotations

from emulation.p4runtime.device import Device
from emulation.v1model.load import load_switch
from host_agent.match import Lpm
from testsupport import paths

ROUTER = paths.REPO / "p4src" / "basic_router.p4"


def _frame(last_octet: int, dst_net: int = 2) -> bytes:
    ip = bytearray(20)
    ip[0], ip[8], ip[9] = 0x45, 64, 17
    ip[16:20] = bytes([10, 0, dst_net, last_octet])
    return b"\x02\0\0\0\0\xfe\x02\0\0\0\0\x01\x08\x00" + bytes(ip) + bytes([last_octet]) * 8


class Failing:
    """A pipeline that fails on frames whose last byte is 0xEE (a target bug)."""

    def __init__(self, inner):
        self.inner = inner
        self.program = inner.program
        self.digests = inner.digests

    def process(self, port, frame):
        if frame[-1] == 0xEE:
            raise RuntimeError("bad frame")
        return self.inner.process(port, frame)


def _device(cpu_port=None):
    sw = load_switch(str(ROUTER))
    sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, [0x020000000202, 2])
    sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0A000300, 24)}, [0x020000000303, 7])
    sent: list[tuple[int, bytes]] = []
    dev = Device(device_id=0, cpu_port=cpu_port, transmit=lambda p, f: sent.append((p, f)))
    dev.switch = Failing(sw)
    return dev, sent


def test_batch_results_in_order_with_errors_and_misses():
    dev, sent = _device()
    frames = [_frame(1), _frame(0xEE), _frame(3, dst_net=9), _frame(4), _frame(5, dst_net=3)]
    res = dev.process_batch(1, frames)
    assert len(res) == 5
    assert [p for p, _ in res[0]] == [2]
    assert isinstance(res[1], RuntimeError) and "bad frame" in str(res[1])
    assert res[2] == []                                 # no route: the default drop()
    assert [p for p, _ in res[3]] == [2] and [p for p, _ in res[4]] == [7]
    # transmitted after the batch, in arrival order, the same bytes as returned
    assert sent == res[0] + res[3] + res[4]
    # the same frames one at a time give the same bytes
    dev2, sent2 = _device()
    for f in frames:
        try:
            dev2.process(1, f)
        except RuntimeError:
            pass
    assert sent2 == sent


def test_batch_delivers_cpu_port_frames_as_packet_in():
    dev, sent = _device(cpu_port=7)       # the route to 10.0.3.0/24 leaves on the CPU port
    got = []
    dev.packet_in_listeners.append(got.append)
    res = dev.process_batch(1, [_frame(5, dst_net=3), _frame(1)])
    assert [p for p, _ in res[0]] == [7] and [p for p, _ in res[1]] == [2]
    assert [p for p, _ in sent] == [2]
    assert len(got) == 1 and got[0].payload == res[0][0][1]


def test_batch_without_a_pipeline():
    dev = Device(device_id=0)
    assert dev.process_batch(1, [_frame(1)]) is None
