"""Egress queues (emulation/v1model/queues.py): BMv2's depth, rate, priorities and queueing
metadata, driven by a clock the test moves by hand."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from emulation.v1model.load import load_switch
from emulation.v1model.queues import EgressQueues, QueueConfigError, parse_port_values

ECN_P4 = Path(__file__).parent / "programs" / "ecn_queue.p4"
THRESHOLD = 10        # ECN_THRESHOLD in ecn_queue.p4


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def ipv4_frame(ecn: int = 1, dscp: int = 0, ident: int = 0xFFFF) -> bytes:
    eth = bytes.fromhex("0000000000020000000000010800")
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, (dscp << 2) | ecn, 20, ident, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return eth + ip


def ecn_of(frame: bytes) -> int:
    return frame[15] & 3


def ident_of(frame: bytes) -> int:
    return struct.unpack("!H", frame[18:20])[0]


@pytest.fixture(scope="module")
def program():
    return load_switch(ECN_P4).program


def make_switch(program, clock, **qkw):
    from emulation.v1model.switch import Switch
    sw = Switch(program, clock=clock)
    q = None
    if qkw is not None and qkw.get("attach", True):
        qkw.pop("attach", None)
        q = EgressQueues(**qkw)
        sw.attach_queues(q)
    return sw, q


def test_no_queues_no_marking(program):
    """Without queues (today's path, also STF and `p4 run`) enq_qdepth stays 0: no marks."""
    clock = Clock()
    sw, _ = make_switch(program, clock, attach=False)
    outs = [sw.process(1, ipv4_frame()) for _ in range(30)]
    assert all(len(o) == 1 and o[0][0] == 4 for o in outs)
    assert {ecn_of(o[0][1]) for o in outs} == {1}
    assert {ident_of(o[0][1]) for o in outs} == {0}
    assert sw.advance() == []


def test_burst_marks_ecn_and_drains_at_rate(program):
    clock = Clock()
    sw, q = make_switch(program, clock, rate=1000)          # 1000 packets/s: one per ms
    first = sw.process(1, ipv4_frame())                      # an idle queue lets it out at once
    assert len(first) == 1 and ident_of(first[0][1]) == 0
    for _ in range(19):                                      # the rest of the burst, same instant
        assert sw.process(1, ipv4_frame()) == []
    assert q.size(4) == 19
    assert q.next_departure() == pytest.approx(clock.t + 0.001)
    got = []
    for k in range(1, 20):
        clock.t += 0.001
        out = sw.advance()
        assert len(out) == 1, f"step {k}: {len(out)} frames"
        got.append(out[0][1])
        # deq_timedelta: k ms in the queue; deq_qdepth: what is left behind it
        assert sw.register_read("last_deq_timedelta", 0) == pytest.approx(1000 * k, abs=2)
        assert sw.register_read("last_deq_qdepth", 0) == 19 - k
    assert sw.advance() == [] and len(q) == 0
    depths = [ident_of(f) for f in got]
    assert depths == list(range(19))                         # enq_qdepth as each was queued
    marks = [ecn_of(f) for f in got]
    assert marks == [1 if d < THRESHOLD else 3 for d in depths]
    assert 3 in marks and 1 in marks
    assert q.stats()["ports"]["4"]["high_water"] == 19
    assert q.tail_drops == {}


def test_unlimited_queue_passes_everything_at_once(program):
    """Queues attached but no rate (BMv2 before set_queue_rate): nothing waits, nothing marked."""
    clock = Clock()
    sw, q = make_switch(program, clock)
    outs = [sw.process(1, ipv4_frame()) for _ in range(30)]
    assert all(len(o) == 1 and ecn_of(o[0][1]) == 1 and ident_of(o[0][1]) == 0 for o in outs)
    assert sw.register_read("last_deq_timedelta", 0) == 0
    assert len(q) == 0 and q.dequeued[4] == 30


def test_tail_drops_counted(program):
    clock = Clock()
    sw, q = make_switch(program, clock, rate=100, depth=8)
    sent = sum(len(sw.process(2, ipv4_frame())) for _ in range(20))
    assert sent == 1 and q.size(4) == 8
    assert q.tail_drops == {4: 11}
    st = q.stats()["ports"]["4"]
    assert (st["enqueued"], st["tail_drops"], st["queued"]) == (9, 11, 8)
    clock.t += 1.0
    assert len(sw.advance()) == 8
    assert q.total_drops() == 11


def test_per_port_rate_and_depth(program):
    clock = Clock()
    sw, q = make_switch(program, clock)
    q.set_rate(10, port=4)            # port 4 shaped, port 1 (the reverse direction) not
    q.set_depth(3, port=4)
    assert q.config(4) == {"depth": 3, "rate": 10.0}
    assert q.config(1) == {"depth": 64, "rate": 0.0}
    for _ in range(5):
        sw.process(1, ipv4_frame())
    assert q.size(4) == 3 and q.tail_drops == {4: 1}
    assert all(len(sw.process(4, ipv4_frame())) == 1 for _ in range(5))   # to port 1: not held
    clock.t += 0.1
    assert len(sw.advance()) == 1
    q.set_rate(0)                      # every queue: no limit from now on (scheduled ones keep their time)
    assert q.config(4)["rate"] == 0.0


def test_strict_priority(program):
    """With two queues per port, a queued high-priority packet leaves before low-priority
    packets that are also due (BMv2 serves the highest priority first)."""
    clock = Clock()
    sw, q = make_switch(program, clock, rate=1000, priorities=2)
    low = ipv4_frame(ecn=0, dscp=0)
    high = ipv4_frame(ecn=0, dscp=1 << 3)        # priority = dscp[5:3] = 1
    sw.process(1, low)                           # leaves at once
    for _ in range(4):
        sw.process(1, low)                       # due at +1, +2, +3, +4 ms
    clock.t += 0.0005
    assert sw.process(1, high) != []             # its own queue is idle: out at once
    clock.t += 0.0006
    assert sw.process(1, low) != []              # +1.1 ms: the first queued low one leaves
    for _ in range(3):
        sw.process(1, high)                      # high queue: due at +1.5, +2.5, +3.5 ms
    assert q.size(4) == 7 and q.size(4, 1) == 3  # lows due at +2, +3, +4, +5 ms
    clock.t += 0.0045                            # +5.6 ms: every queued packet is due
    out = sw.advance()
    prios = [o[1][15] >> 5 for o in out]         # dscp[5:3] is the top 3 bits of the TOS byte
    assert prios == [1, 1, 1, 0, 0, 0, 0]
    assert q.stats()["ports"]["4"]["queues"].keys() == {"0", "1"}


def test_priority_out_of_range_dropped(program):
    clock = Clock()
    sw, q = make_switch(program, clock)          # one queue per port: only priority 0
    assert sw.process(1, ipv4_frame(dscp=2 << 3)) == []
    assert q.priority_drops == {4: 1}
    assert len(sw.process(1, ipv4_frame(dscp=0))) == 1


def test_detach_restores_run_to_completion(program):
    clock = Clock()
    sw, q = make_switch(program, clock, rate=1)
    sw.process(1, ipv4_frame())
    assert sw.process(1, ipv4_frame()) == []
    sw.attach_queues(None)
    assert len(sw.process(1, ipv4_frame())) == 1
    assert sw.advance() == []


def test_bad_configuration():
    q = EgressQueues()
    with pytest.raises(QueueConfigError, match="rate"):
        q.set_rate(-5)
    with pytest.raises(QueueConfigError, match="depth"):
        q.set_depth(2.5)
    with pytest.raises(QueueConfigError, match="priority"):
        q.set_depth(4, port=1, priority=1)
    with pytest.raises(QueueConfigError, match="port"):
        q.set_rate(10, port=600)
    with pytest.raises(QueueConfigError, match="1..8"):
        EgressQueues(priorities=9)
    assert parse_port_values(["100", "2:50"], "--queue-rate", float) == (100.0, {2: 50.0})
    with pytest.raises(QueueConfigError, match="PORT:VALUE"):
        parse_port_values(["x:5"], "--queue-rate", float)
