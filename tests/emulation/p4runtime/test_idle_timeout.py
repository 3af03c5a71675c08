"""Idle timeouts over P4Runtime: ``idle_timeout_ns`` on entries of a ``support_timeout``
table, ``IdleTimeoutNotification`` on the primary's stream, ``time_since_last_hit`` in
reads, refusals for tables without ``support_timeout`` (program:
tests/p4runtime/programs/idle_l2.p4).

Most tests give the switch a hand-driven clock, so what ages is decided by the test's own
clock steps, not by how fast the machine runs; the sweeper thread still runs in real time,
so waits for a notification are bounded (generously) but never measured."""
from __future__ import annotations

import time

import pytest
from google.rpc import code_pb2
from testsupport import p4rt_paths
from testsupport.hand_clock import HandClock

from emulation.p4runtime.device import Device
from emulation.p4runtime.idle_timeout import MAX_SWEEP_S, MIN_SWEEP_S, sweep_period_s
from emulation.p4runtime.p4info import p4info_from_program
from emulation.p4runtime.server import P4RuntimeServer
from emulation.v1model.load import load_switch
from host_agent.p4runtime.client import P4RuntimeClient, WriteError
from host_agent.p4runtime.codec import encode_bytes

PROGRAM = p4rt_paths.PROGRAMS / "idle_l2.p4"
SOURCE = PROGRAM.read_bytes()
P4INFO = p4info_from_program(load_switch(str(PROGRAM)))
MS = 1_000_000            # ns
WAIT = 10.0               # bound on waiting for a notification (s); never reached when things work


def frame(dst: int, src: int = 0x02_00_00_00_00_99) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + b"\x88\xb5" + bytes(46)


def start(clock=None):
    sent: list = []
    kw = {"clock": clock} if clock is not None else {}
    dev = Device(device_id=1, transmit=lambda p, f: sent.append((p, f)), switch_kw=kw)
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    c = P4RuntimeClient(srv.address, device_id=1, election_id=1)
    c.set_pipeline(P4INFO, SOURCE)
    return dev, srv, c, sent


@pytest.fixture
def hand():
    clock = HandClock()
    dev, srv, c, sent = start(clock)
    yield clock, dev, srv, c, sent
    c.close()
    srv.stop(0)


@pytest.fixture
def real():
    dev, srv, c, sent = start()
    yield dev, srv, c, sent
    c.close()
    srv.stop(0)


def dsts(note) -> list[int]:
    """The exact dstAddr keys of the entries a notification names."""
    return [int.from_bytes(te.match[0].exact.value, "big") for te in note.table_entry]


def notified_until(c: P4RuntimeClient, dst: int) -> list[list[int]]:
    """Every notification (as dst lists) up to the first that names ``dst``."""
    got = []
    while True:
        note = c.idle_timeout_notification(timeout=WAIT)
        assert note is not None, f"no idle-timeout notification for {dst:#x} within {WAIT} s; got {got}"
        got.append(dsts(note))
        if dst in got[-1]:
            return got


A, B, C = 0x02_00_00_00_00_0A, 0x02_00_00_00_00_0B, 0x02_00_00_00_00_0C


def test_idle_entry_is_notified_and_kept(real):
    dev, srv, c, _ = real
    c.insert("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=200 * MS)
    note = c.idle_timeout_notification(timeout=WAIT)
    assert note is not None, "no notification for an entry idle past its 200 ms timeout"
    assert note.timestamp > 0
    (te,) = note.table_entry
    assert te.table_id == c._idx().id("table", "flows")
    assert te.match[0].exact.value == encode_bytes(A)
    assert te.idle_timeout_ns == 200 * MS
    # the switch does not delete it, and it is reported once per idle period
    (left,) = c.read_table("flows")
    assert left.match[0].exact.value == encode_bytes(A) and left.idle_timeout_ns == 200 * MS
    srv.servicer.idle_timeouts.sweep()
    assert c.idle_timeout_notification(timeout=0.5) is None
    # a hit re-arms it: it is reported again after a new idle period
    assert dev.process(3, frame(A))[0][0] == 1
    again = c.idle_timeout_notification(timeout=WAIT)
    assert again is not None and dsts(again) == [A]


def test_hits_keep_an_entry_from_expiring(hand):
    clock, dev, srv, c, _ = hand
    c.insert("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=200 * MS)
    c.insert("flows", {"hdr.ethernet.dstAddr": B}, "forward", {"port": 2}, idle_timeout_ns=200 * MS)
    for _ in range(6):                     # A is hit every 150 ms of switch time; B never
        clock.advance(150)
        assert dev.process(3, frame(A))[0][0] == 1
        srv.servicer.idle_timeouts.sweep()
    notes = notified_until(c, B)
    assert all(A not in n for n in notes), notes


def test_entry_without_timeout_never_notifies(hand):
    clock, _, srv, c, _ = hand
    c.insert("flows", {"hdr.ethernet.dstAddr": C}, "forward", {"port": 1})
    c.insert("flows", {"hdr.ethernet.dstAddr": B}, "forward", {"port": 2}, idle_timeout_ns=200 * MS)
    clock.advance(10_000)
    srv.servicer.idle_timeouts.sweep()
    notes = notified_until(c, B)
    assert all(C not in n for n in notes), notes
    (c_entry,) = [e for e in c.read_table("flows") if e.match[0].exact.value == encode_bytes(C)]
    assert c_entry.idle_timeout_ns == 0


def test_modify_sets_a_new_timeout(hand):
    clock, _, srv, c, _ = hand
    c.insert("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=200 * MS)
    c.modify("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=10_000 * MS)
    (a,) = c.read_table("flows")
    assert a.idle_timeout_ns == 10_000 * MS
    clock.advance(1000)                    # A idle for 1 s: past its old timeout, not its new one
    c.insert("flows", {"hdr.ethernet.dstAddr": B}, "forward", {"port": 2}, idle_timeout_ns=200 * MS)
    clock.advance(300)
    srv.servicer.idle_timeouts.sweep()
    notes = notified_until(c, B)
    assert all(A not in n for n in notes), notes
    # a shorter timeout than A's idle time: reported at the next sweep
    c.modify("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=500 * MS)
    srv.servicer.idle_timeouts.sweep()
    assert notified_until(c, A)[-1] == [A]


def test_read_time_since_last_hit(hand):
    clock, dev, _, c, _ = hand
    c.insert("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=60_000 * MS)
    clock.advance(300)
    (a,) = c.read_table("flows", time_since_last_hit=True)
    assert a.HasField("time_since_last_hit")
    assert abs(a.time_since_last_hit.elapsed_ns - 300 * MS) <= 1000   # the switch counts in µs
    dev.process(3, frame(A))
    clock.advance(100)
    (a,) = c.read_table("flows", time_since_last_hit=True)
    assert abs(a.time_since_last_hit.elapsed_ns - 100 * MS) <= 1000
    (plain,) = c.read_table("flows")
    assert not plain.HasField("time_since_last_hit")


def test_idle_timeout_refused_where_unsupported(hand):
    _, _, _, c, _ = hand
    with pytest.raises(WriteError) as e:
        c.insert("acl", {"hdr.ethernet.srcAddr": A}, "drop", idle_timeout_ns=200 * MS)
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
    assert "support_timeout" in str(e.value)
    with pytest.raises(WriteError) as e:
        c.insert("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=-1)
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
    default = c.table_entry("flows", None, "drop", default=True)
    default.table_entry.idle_timeout_ns = 200 * MS
    with pytest.raises(WriteError) as e:
        c.write([c.update("MODIFY", default)])
    assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
    assert c.read_table("acl") == [] and c.read_table("flows") == []


def test_no_primary_no_notification_until_one_arrives(hand):
    clock, _, srv, c, _ = hand
    c.insert("flows", {"hdr.ethernet.dstAddr": A}, "forward", {"port": 1}, idle_timeout_ns=200 * MS)
    c.close()                              # no controller left: nothing to tell, nothing consumed
    for _ in range(int(WAIT / 0.05)):      # the server notices the closed stream
        if srv.servicer.arbiter.primary("") is None:
            break
        time.sleep(0.05)
    assert srv.servicer.arbiter.primary("") is None
    clock.advance(1000)
    srv.servicer.idle_timeouts.sweep()
    c2 = P4RuntimeClient(srv.address, device_id=1, election_id=2)
    try:
        assert notified_until(c2, A)[-1] == [A]
    finally:
        c2.close()


def test_sweep_period_bounds():
    assert sweep_period_s(200 * MS) == pytest.approx(0.05)
    assert sweep_period_s(2000 * MS) == pytest.approx(0.5)
    assert sweep_period_s(1 * MS) == MIN_SWEEP_S
    assert sweep_period_s(3_600_000 * MS) == MAX_SWEEP_S
    assert sweep_period_s(0) == MAX_SWEEP_S
