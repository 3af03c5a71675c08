"""Egress queues between ingress and egress, as BMv2's ``simple_switch`` has them.

BMv2's traffic manager (``bm_sim/queueing.h``, ``QueueingLogicPriRL``; ``simple_switch.cpp``,
``enqueue`` and ``egress_thread``) keeps, per egress port, one FIFO queue per priority
(one unless ``--priority-queues N``), each with

* a **depth** in packets (``set_queue_depth``; 64 by default): a packet that finds its queue
  full is dropped (tail drop; counted here per port, BMv2 only logs it);
* a **rate** in packets per second (``set_queue_rate``; unlimited until set): every packet
  gets a departure time when it is queued, ``max(now, previous departure + 1/rate)``, and
  cannot leave before it.

On enqueue BMv2 writes ``enq_timestamp`` (microseconds since the switch started) and
``enq_qdepth`` (packets queued for the port, all priorities, before this one); a packet whose
``standard_metadata.priority`` is not below the number of queues per port is dropped
("priority out of range").  Dequeue serves the highest ``priority`` whose head is due
(strict priority: BMv2 stores priority ``p`` in internal queue ``N-1-p`` and serves internal
queue 0 first) and writes ``deq_timedelta`` (now minus ``enq_timestamp``) and ``deq_qdepth``
(packets left for the port).  Packets of one queue leave in order.

Here time is the switch's clock (``Switch(clock=...)``, seconds).  :class:`EgressQueues` is
the queueing logic alone; :meth:`EgressQueues.bind` gives a :class:`~emulation.v1model.switch.Switch`
its queued packet path (``Switch.attach_queues``): ``process(port, frame)`` runs ingress,
queues what it sends, and returns what is due at once; ``advance(now)`` runs egress on what
the queues release by ``now``.  Someone has to call ``advance``: the switch process does
from its event loop (at :meth:`next_departure`), in-process users when their clock moves.
A rate of 0 means no limit (BMv2's state before any ``set_queue_rate``), so with queues
attached but no rate every packet is due as soon as it is queued.

**Held ports** (back-pressure from the link): :meth:`EgressQueues.hold` stops a port's
packets from leaving, whatever their departure time, until :meth:`EgressQueues.release`.
The switch process holds a port whose interface refuses frames (a ``tc``-shaped veth whose
socket buffer is full), so its packets stay queued, new ones see the real ``enq_qdepth``
and are tail-dropped beyond the depth, and ``deq_timedelta`` includes the wait for the
link; BMv2 gets the same from its transmit thread blocking in ``send`` (its egress threads
then block, and the queues fill).  Other ports keep being served meanwhile.
"""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Any, Callable

from .switch import NORMAL

DEFAULT_DEPTH = 64          # BMv2 simple_switch's default queue capacity (packets)
MASK32 = (1 << 32) - 1
MASK19 = (1 << 19) - 1      # enq_qdepth / deq_qdepth are bit<19> in v1model.p4


class QueueConfigError(ValueError):
    pass


class _Queue:
    """One (port, priority) FIFO: its limits, how full it is, when its last packet leaves."""
    __slots__ = ("depth", "delay", "rate", "size", "last")

    def __init__(self, depth: int, rate: float):
        self.depth = depth
        self.rate = rate
        self.delay = 1.0 / rate if rate > 0 else 0.0
        self.size = 0
        self.last = float("-inf")


def _check_depth(depth: Any) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise QueueConfigError(f"queue depth {depth!r}: expected a whole number of packets >= 0")
    return depth


def _check_rate(rate: Any) -> float:
    try:
        r = float(rate)
    except (TypeError, ValueError):
        raise QueueConfigError(f"queue rate {rate!r}: expected packets per second (0 = no limit)") from None
    if not r >= 0 or r == float("inf"):
        raise QueueConfigError(f"queue rate {rate!r}: expected packets per second >= 0 (0 = no limit)")
    return r


class EgressQueues:
    """Per (egress port, priority) FIFO queues with a depth and a rate (see the module doc)."""

    def __init__(self, *, depth: int = DEFAULT_DEPTH, rate: float = 0.0, priorities: int = 1):
        if isinstance(priorities, bool) or not isinstance(priorities, int) or not 1 <= priorities <= 8:
            raise QueueConfigError(f"priority queues {priorities!r}: expected 1..8 (standard_metadata.priority "
                                   "is 3 bits)")
        self.priorities = priorities
        self.default_depth = _check_depth(depth)
        self.default_rate = _check_rate(rate)
        self._port_cfg: dict[int, dict[str, Any]] = {}           # per-port overrides
        self._pq_cfg: dict[tuple[int, int], dict[str, Any]] = {}  # per (port, priority) overrides
        self._queues: dict[tuple[int, int], _Queue] = {}
        # one heap per priority of (departure, seq, port, item); highest priority served first
        self._heaps: list[list] = [[] for _ in range(priorities)]
        self._seq = itertools.count()
        # held ports (hold/release): their heap entries, moved aside when met at a heap's top
        self.held: set[int] = set()
        self._parked: dict[int, list[tuple[int, tuple]]] = {}
        self.holds: dict[int, int] = {}             # times each port was held
        self._budget: dict[int, int] = {}           # released ports that may send only so many
        self.port_size: dict[int, int] = {}
        # counters per port
        self.enqueued: dict[int, int] = {}
        self.dequeued: dict[int, int] = {}
        self.tail_drops: dict[int, int] = {}
        self.priority_drops: dict[int, int] = {}
        self.high_water: dict[int, int] = {}
        self.offered = 0            # packets the pipeline sent to the queues, all ports (dropped ones too)
        self.flushed = 0

    # ------------------------------------------------------------ configuration
    def _cfg(self, port: int, pri: int, key: str, default: Any) -> Any:
        v = self._pq_cfg.get((port, pri), {}).get(key)
        if v is None:
            v = self._port_cfg.get(port, {}).get(key)
        return default if v is None else v

    def _queue(self, port: int, pri: int) -> _Queue:
        q = self._queues.get((port, pri))
        if q is None:
            q = self._queues[(port, pri)] = _Queue(self._cfg(port, pri, "depth", self.default_depth),
                                                   self._cfg(port, pri, "rate", self.default_rate))
        return q

    def _check_target(self, port: int | None, priority: int | None) -> None:
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 512):
            raise QueueConfigError(f"egress port {port!r}: expected 0..511")
        if priority is not None:
            if port is None:
                raise QueueConfigError("a priority needs a port")
            if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority < self.priorities:
                raise QueueConfigError(f"priority {priority!r}: this switch has {self.priorities} queue(s) per "
                                       f"port (priorities 0..{self.priorities - 1}; --priority-queues N for more)")

    def _set(self, key: str, value: Any, port: int | None, priority: int | None) -> None:
        self._check_target(port, priority)
        if port is None:            # every queue, as BMv2's set_all_egress_queue_*
            setattr(self, "default_" + key, value)
            for d in (*self._port_cfg.values(), *self._pq_cfg.values()):
                d.pop(key, None)
            targets = list(self._queues.values())
        elif priority is None:
            self._port_cfg.setdefault(port, {})[key] = value
            for (p, pri), d in self._pq_cfg.items():
                if p == port:
                    d.pop(key, None)
            targets = [q for (p, _), q in self._queues.items() if p == port]
        else:
            self._pq_cfg.setdefault((port, priority), {})[key] = value
            targets = [self._queue(port, priority)]
        for q in targets:
            if key == "depth":
                q.depth = value
            else:
                q.rate = value
                q.delay = 1.0 / value if value > 0 else 0.0

    def set_depth(self, depth: int, port: int | None = None, priority: int | None = None) -> None:
        """``set_queue_depth DEPTH [PORT [PRIORITY]]``: packets a queue holds; without a port,
        every queue (later ones too).  Packets already queued stay."""
        self._set("depth", _check_depth(depth), port, priority)

    def set_rate(self, pps: float, port: int | None = None, priority: int | None = None) -> None:
        """``set_queue_rate PPS [PORT [PRIORITY]]``: packets per second a queue lets out (0 = no
        limit); departures already scheduled keep their time, as in BMv2."""
        self._set("rate", _check_rate(pps), port, priority)

    def config(self, port: int, priority: int = 0) -> dict[str, Any]:
        """The depth and rate a queue has (or would have once used)."""
        self._check_target(port, priority)
        q = self._queues.get((port, priority))
        if q is not None:
            return {"depth": q.depth, "rate": q.rate}
        return {"depth": self._cfg(port, priority, "depth", self.default_depth),
                "rate": self._cfg(port, priority, "rate", self.default_rate)}

    def shaping(self) -> bool:
        """Whether the queues change anything: some queue has a rate, or there are priority
        queues.  Otherwise every packet leaves as soon as it is queued, and a switch may run
        packets to completion instead (what the switch process does)."""
        if self.priorities > 1 or self.default_rate > 0:
            return True
        cfgs = (*self._port_cfg.values(), *self._pq_cfg.values())
        return any(c.get("rate") for c in cfgs) or any(q.rate > 0 for q in self._queues.values())

    # ------------------------------------------------------------ queueing logic
    def size(self, port: int, priority: int | None = None) -> int:
        """Packets queued for a port (all priorities, as BMv2's ``size(port)``), or one queue's."""
        if priority is None:
            return self.port_size.get(port, 0)
        q = self._queues.get((port, priority))
        return q.size if q is not None else 0

    def __len__(self) -> int:
        return sum(len(h) for h in self._heaps) + sum(len(v) for v in self._parked.values())

    def hold(self, port: int) -> None:
        """Keep ``port``'s packets queued (its link refuses frames) until :meth:`release`;
        packets keep arriving (and are tail-dropped when its queues are full)."""
        self._budget.pop(port, None)
        if port not in self.held:
            self.held.add(port)
            self.holds[port] = self.holds.get(port, 0) + 1

    def release(self, port: int, budget: int | None = None) -> None:
        """Let ``port``'s packets leave again, in their original order and departure times;
        with a ``budget``, only that many: then the port is held again (the switch process
        releases it packet batch by packet batch while its link takes them, so the queue,
        not the link's backlog, is where packets wait, as behind BMv2's output buffer)."""
        if budget is None:
            self._budget.pop(port, None)
        else:
            self._budget[port] = max(1, budget)
        if port in self.held:
            self.held.discard(port)
            for pri, entry in self._parked.pop(port, ()):
                heapq.heappush(self._heaps[pri], entry)

    def _top(self, pri: int) -> tuple | None:
        """The first entry of priority ``pri``'s heap that is not for a held port (entries of
        held ports met on the way are parked until release)."""
        h = self._heaps[pri]
        held = self.held
        while h:
            e = h[0]
            if e[2] not in held:
                return e
            self._parked.setdefault(e[2], []).append((pri, heapq.heappop(h)))
        return None

    def push(self, port: int, priority: int, item: Any, now: float) -> bool:
        """Queue ``item`` for ``port`` at ``priority``; False (and counted) when dropped."""
        self.offered += 1
        if not 0 <= priority < self.priorities:
            self.priority_drops[port] = self.priority_drops.get(port, 0) + 1
            return False
        q = self._queue(port, priority)
        if q.size >= q.depth:
            self.tail_drops[port] = self.tail_drops.get(port, 0) + 1
            return False
        t = q.last + q.delay
        if t < now:
            t = now
        q.last = t
        q.size += 1
        n = self.port_size.get(port, 0) + 1
        self.port_size[port] = n
        if n > self.high_water.get(port, 0):
            self.high_water[port] = n
        self.enqueued[port] = self.enqueued.get(port, 0) + 1
        heapq.heappush(self._heaps[priority], (t, next(self._seq), port, item))
        return True

    def pop(self, now: float) -> tuple[int, int, Any] | None:
        """The next packet allowed out by ``now``: ``(port, priority, item)``, or None."""
        held = self.held
        for pri in range(self.priorities - 1, -1, -1):
            h = self._heaps[pri]
            if held:
                self._top(pri)           # park the held ports' entries that are on top
            if h and h[0][0] <= now:
                _, _, port, item = heapq.heappop(h)
                self._queues[(port, pri)].size -= 1
                self.port_size[port] -= 1
                self.dequeued[port] = self.dequeued.get(port, 0) + 1
                if self._budget:
                    b = self._budget.get(port)
                    if b is not None:
                        if b <= 1:
                            del self._budget[port]
                            self.held.add(port)          # spent: held until released again
                        else:
                            self._budget[port] = b - 1
                return port, pri, item
        return None

    def next_departure(self) -> float | None:
        """When the earliest queued packet may leave (switch clock), None if all are empty;
        packets of held ports do not count (they wait for :meth:`release`)."""
        if self.held:
            tops = [e[0] for e in map(self._top, range(self.priorities)) if e is not None]
        else:
            tops = [h[0][0] for h in self._heaps if h]
        return min(tops) if tops else None

    def flush(self) -> int:
        """Forget every queued packet (the pipeline they belong to was replaced); returns how many."""
        n = len(self)
        for h in self._heaps:
            h.clear()
        self._parked.clear()
        for q in self._queues.values():
            q.size = 0
        self.port_size = dict.fromkeys(self.port_size, 0)
        self.flushed += n
        return n

    def stats(self) -> dict[str, Any]:
        """Per port: queued now, high water, enqueued, dequeued, tail drops, priority drops,
        whether the port is held now and how often it was, and each used queue's depth and rate; plus packets flushed on pipeline changes."""
        ports = sorted(set(self.enqueued) | set(self.tail_drops) | set(self.priority_drops)
                       | {p for p, _ in self._queues} | set(self.holds))
        out = {}
        for p in ports:
            out[str(p)] = {"queued": self.port_size.get(p, 0), "high_water": self.high_water.get(p, 0),
                           "enqueued": self.enqueued.get(p, 0), "dequeued": self.dequeued.get(p, 0),
                           "tail_drops": self.tail_drops.get(p, 0),
                           "priority_drops": self.priority_drops.get(p, 0),
                           "held": p in self.held, "holds": self.holds.get(p, 0),
                           "queues": {str(pri): {"depth": q.depth, "rate": q.rate, "queued": q.size}
                                      for (pp, pri), q in sorted(self._queues.items()) if pp == p}}
        return {"default": {"depth": self.default_depth, "rate": self.default_rate},
                "priorities": self.priorities, "ports": out, "flushed": self.flushed}

    def total_drops(self) -> int:
        return sum(self.tail_drops.values()) + sum(self.priority_drops.values())

    # ------------------------------------------------------------ the switch's queued path
    def bind(self, sw: Any) -> tuple[Callable[[int, bytes], list], Callable[..., list]]:
        """``(process, advance)`` for ``sw``: its packet path with these queues in between."""
        return (lambda port, frame: _process(sw, self, port, frame),
                lambda now=None: _advance(sw, self, now))


def _now(sw: Any, now: float | None) -> tuple[float, int]:
    t = sw._clock() if now is None else now
    return t, int((t - sw._t0) * 1e6) & ((1 << 48) - 1)


def _run(sw: Any, q: EgressQueues, work: deque, t: float, t_us: int, passes: int = 0) -> None:
    """Run ingress work; queue every packet bound for egress (BMv2 ``enqueue``).  ``passes``
    counts the passes behind this work (resubmit/recirculate/clone loops are cut off as in
    Switch.process)."""
    def enqueue(item: tuple, passes: int) -> None:
        _, pp, port, _rid, inst = item
        sm = pp[0][2]
        pri = sm.priority
        sm.enq_timestamp = t_us & MASK32
        sm.enq_qdepth = min(q.size(port), MASK19)
        if not q.push(port, pri, (pp, inst, t_us, passes), t):
            if sw.log:
                why = ("priority out of range" if not 0 <= pri < q.priorities
                       else f"queue full ({q.size(port, pri)} packets)")
                sw._log(f"egress port {port}: packet dropped at enqueue: {why}")

    sw._run_work(work, None, passes, enqueue)


def _advance(sw: Any, q: EgressQueues, now: float | None = None) -> list[tuple[int, bytes]]:
    """Run egress on every packet the queues let out by ``now`` (default: the switch's clock)."""
    t, t_us = _now(sw, now)
    out: list[tuple[int, bytes]] = []
    work: deque = deque()
    while True:
        got = q.pop(t)
        if got is None:
            break
        port, _pri, (pp, inst, enq_us, passes) = got
        sm = pp[0][2]
        sm.deq_timedelta = (t_us - enq_us) & MASK32
        sm.deq_qdepth = min(q.size(port), MASK19)
        sw._egress_pass(pp, port, inst)
        sw._finish_egress(pp, port, sw.rt.frame, work, out)
        if work:                     # E2E clones and recirculated packets: back through the queues
            _run(sw, q, work, t, t_us, passes)
    _count_out(sw, out)
    return out


def _process(sw: Any, q: EgressQueues, port: int, frame: bytes) -> list[tuple[int, bytes]]:
    """Switch.process with queues: ingress now, egress for what the queues let out now."""
    st = sw.port_stats.get(port)
    if st is None:
        st = sw.port_stats[port] = [0, 0, 0, 0]
    st[0] += 1
    st[1] += len(frame)
    t, t_us = _now(sw, None)
    _run(sw, q, deque((("i", port, frame if type(frame) is bytes else bytes(frame), NORMAL, None),)), t, t_us)
    return _advance(sw, q, t)


def _count_out(sw: Any, out: list[tuple[int, bytes]]) -> None:
    ps = sw.port_stats
    for p, b in out:
        s = ps.get(p)
        if s is None:
            s = ps[p] = [0, 0, 0, 0]
        s[2] += 1
        s[3] += len(b)


def parse_port_values(items: list[str], what: str, conv: Callable[[str], Any]) -> tuple[Any, dict[int, Any]]:
    """Command-line forms ``VALUE`` (every port) and ``PORT:VALUE`` (one port), repeatable:
    returns (the all-ports value or None, {port: value})."""
    every, per = None, {}
    for it in items:
        p, sep, v = it.partition(":")
        try:
            if sep:
                port = int(p)
                if not 0 <= port < 512:
                    raise ValueError
                per[port] = conv(v)
            else:
                every = conv(it)
        except (ValueError, QueueConfigError) as e:
            raise QueueConfigError(f"{what} {it!r}: expected VALUE or PORT:VALUE ({e})") from None
    return every, per
