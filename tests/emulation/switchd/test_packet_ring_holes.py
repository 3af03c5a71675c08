"""The receive ring's reader against slots the kernel leaves empty (packet_ring.py).

A memory-only ring (no socket: the reader never makes a system call while frames wait)
with frames written as the kernel writes them: an empty slot followed by filled ones is a
*hole* when it stays empty, and the reader skips it after ``HOLE_WAIT_S`` and counts it;
one the kernel fills meanwhile (two CPUs finishing out of order) is read in order.
"""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from host_agent.channels import packet_ring as pr
from host_agent.channels.base import FramePort

SLOT, N = 2048, 8
MAC = pr.TPACKET2_HDRLEN + 2   # where the frame starts in its slot


@pytest.fixture
def ring():
    socks = []

    def make() -> pr.PacketRingPort:
        port = _ring()
        port.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)   # asked only for its error
        socks.append(port.sock)
        return port
    yield make
    for s in socks:
        s.close()


def _ring() -> pr.PacketRingPort:
    port = object.__new__(pr.PacketRingPort)
    FramePort.__init__(port)
    port.name = port.ifname = "mem"
    port.stats.update(rx_truncated=0, rx_ring_holes=0)
    port._mm = bytearray(SLOT * N)
    port.slot, port._rx_n, port._rx_i = SLOT, N, 0
    port._ignore_outgoing = True
    port._kernel_drops = 0
    port._drops_lock = threading.Lock()
    return port


def fill(port: pr.PacketRingPort, i: int, frame: bytes) -> None:
    off = i * SLOT
    port._mm[off + MAC:off + MAC + len(frame)] = frame
    pr.TPACKET2_HDR.pack_into(port._mm, off, pr.TP_STATUS_KERNEL, len(frame), len(frame), MAC, MAC + 14,
                              0, 0, 0, 0)
    pr._STATUS.pack_into(port._mm, off, pr.TP_STATUS_USER)   # status last, as the kernel


def status(port: pr.PacketRingPort, i: int) -> int:
    return pr._STATUS.unpack_from(port._mm, i * SLOT)[0]


def test_frames_in_order_and_slots_handed_back(ring):
    port = ring()
    for i in range(3):
        fill(port, i, bytes([i]) * 60)
    assert port.recv_batch(64) == [bytes([i]) * 60 for i in range(3)]
    assert [status(port, i) for i in range(3)] == [pr.TP_STATUS_KERNEL] * 3
    assert port.recv_batch(64) == []
    assert port.stats["rx_ring_holes"] == 0


def test_a_slot_left_empty_is_skipped_and_counted(ring):
    port = ring()
    fill(port, 0, b"a" * 60)
    fill(port, 2, b"c" * 60)          # slot 1 taken by the kernel, never filled
    fill(port, 3, b"d" * 60)
    assert port.recv_batch(64) == [b"a" * 60, b"c" * 60, b"d" * 60]
    assert port.stats["rx_ring_holes"] == 1
    assert port.rx_overflow() == 1    # the frame the interface counted is a counted loss
    assert port._rx_i == 4


def test_a_slot_filled_late_is_read_in_order(ring):
    port = ring()
    fill(port, 1, b"b" * 60)          # slot 0 still being copied by another CPU

    def late():
        time.sleep(pr.HOLE_WAIT_S / 4)
        fill(port, 0, b"a" * 60)
    t = threading.Thread(target=late)
    t.start()
    got = port.recv_batch(64)
    t.join()
    assert got == [b"a" * 60, b"b" * 60]
    assert port.stats["rx_ring_holes"] == 0


def test_nothing_waiting_is_not_a_hole(ring):
    port = ring()
    assert port.recv_batch(64) == []
    assert port._rx_i == 0 and port.stats["rx_ring_holes"] == 0


def test_hole_at_the_ring_end_wraps(ring):
    port = ring()
    port._rx_i = N - 1                # slot N-1 empty, slot 0 filled
    fill(port, 0, b"z" * 60)
    assert port.recv_batch(64) == [b"z" * 60]
    assert port.stats["rx_ring_holes"] == 1 and port._rx_i == 1


def test_kernel_drops_read_before_the_socket_closes():
    """The kernel's drop count (PACKET_STATISTICS, reset on each read) dies with the socket:
    close() takes its last reading, so rx_overflow() after close (the switch's final stats
    line) still counts every drop."""
    from host_agent.channels.raw import RawSocketPort

    class FakeSock:
        def __init__(self):
            self.reads, self.closed = [3, 5], False

        def getsockopt(self, *_a):
            assert not self.closed, "read after close"
            drops = self.reads.pop(0) if self.reads else 0
            return struct.pack("=II", 100, drops)

        def close(self):
            self.closed = True

    port = object.__new__(RawSocketPort)
    FramePort.__init__(port)
    port.name = port.ifname = "fake"
    port.sock = FakeSock()
    port._kernel_drops = 0
    port._drops_lock = threading.Lock()
    assert port.rx_overflow() == 3
    port.close()
    assert port.sock.closed
    assert port.rx_overflow() == 8
