"""Agent units without a switch: helper PACK batching, worker windows and PACK masks."""
import numpy as np

from host_agent import wire
from host_agent.clock import VirtualClock
from host_agent.helper import HelperRole
from host_agent.worker import AgentConfig, Worker


def _partial(seq, bitmap=0b011, strag=0b100, it=1, pool=32):
    h = wire.Header(type=wire.PARTIAL, flags=wire.F_PAYLOAD | (wire.F_SET if (seq // pool) & 1
                                                              else 0),
                    job=0, wid=0xFF, slot=seq % pool, seq=seq, iter=it, bitmap=bitmap,
                    strag=strag, klog2=6)
    return h, np.full(64, seq, np.int32)


def test_helper_batches_packs_and_completes_rounds():
    clock = VirtualClock()
    out = []
    role = HelperRole(0, 0, 3, 64, 32, lambda b: out.append(wire.unpack(b)), loop=clock,
                      pack_batch=8, pack_delay=0.005)
    role.in_flight = lambda it: [3, 4]          # our own unreleased chunks
    for seq in range(10):
        h, v = _partial(seq)
        role.on_partial(h, v, 100)
    packs = [h for h, _ in out if h.type == wire.PACK]
    flushes = [h for h, _ in out if h.type == wire.FLUSH]
    assert len(packs) == 1 and packs[0].seq == 0 and packs[0].strag == 0xFF
    assert [f.seq for f in flushes] == [3, 4]    # only rounds we are part of
    clock.run(max_time=0.01)
    packs = [h for h, _ in out if h.type == wire.PACK]
    assert len(packs) == 2 and packs[1].seq == 8 and packs[1].strag == 0b11
    # the straggler's redirected DATA completes round 5: HRESULT = partial + its values
    d = wire.Header(type=wire.DATA, flags=wire.F_REDIRECT | wire.F_PAYLOAD, wid=2, seq=5,
                    slot=5, iter=1, bitmap=4, klog2=6)
    role.on_redirect_data(d, np.full(64, 7, np.int32), 100)
    hr = [(h, v) for h, v in out if h.type == wire.HRESULT]
    assert len(hr) == 1 and hr[0][0].seq == 5 and np.all(hr[0][1] == 5 + 7)
    # the same contribution again is ignored (exactly once), a duplicate PARTIAL re-PACKs
    role.on_redirect_data(d, np.full(64, 7, np.int32), 100)
    assert len([h for h, _ in out if h.type == wire.HRESULT]) == 2   # answered from result
    h, v = _partial(6)
    h.wid = 1                                   # re-emitted because worker 1 probed
    role.on_partial(h, v, 100)
    last = out[-1][0]
    assert last.type == wire.PACK and last.flags & wire.F_UCAST and last.dst == 1
    assert role.stats.conflicts == 0 and role.stats.dup_partials == 1


def test_worker_window_and_pack_mask_release():
    clock = VirtualClock()
    sent = []
    cfg = AgentConfig(job=0, nworkers=2, k=64, pool=4, t_s=0.05)  # the packets below carry klog2=6
    w = Worker(1, cfg, clock, sent.append)
    q = np.arange(64 * 10, dtype=np.int32)
    w.start(1, q, 3)
    data = [wire.unpack(b)[0] for b in sent]
    assert [h.seq for h in data] == [0, 1, 2, 3] and all(h.exp == 3 for h in data)
    assert [bool(h.flags & wire.F_SET) for h in data] == [False] * 4
    sent.clear()
    pack = wire.Header(type=wire.PACK, seq=0, iter=1, bitmap=0b11, strag=0b101, klog2=6)
    w.on_message(pack.pack())                    # releases rounds 0 and 2
    assert sorted(wire.unpack(b)[0].seq for b in sent) == [4, 6]
    assert all(wire.unpack(b)[0].flags & wire.F_SET for b in sent)
    sent.clear()
    # a RESULT releases and stores; a NACK for an unfinished chunk resends it
    res = wire.pack(wire.Header(type=wire.RESULT, seq=1, iter=1, wid=0xFF, klog2=6),
                    np.full(64, 9, np.int32))
    w.on_message(res)
    assert [wire.unpack(b)[0].seq for b in sent] == [5]
    sent.clear()
    w.on_message(wire.Header(type=wire.NACK, seq=3, iter=1, klog2=6, wid=0xFF).pack())
    h, v = wire.unpack(sent[0])
    assert h.type == wire.DATA and h.seq == 3 and h.flags & wire.F_RESEND
    np.testing.assert_array_equal(v, q[3 * 64:4 * 64])
    # the probe timer fires for unreleased chunks
    sent.clear()
    clock.run(max_time=0.2)
    assert any(wire.unpack(b)[0].type == wire.PROBE for b in sent)


def test_flush_carries_the_iterations_scale():
    """The switch copies the evicting packet's exp into the PARTIAL it emits; a FLUSH with
    exp 0 made every later straggler contribution (exp f) look mis-scaled and dropped."""
    import numpy as np

    from host_agent import wire
    from host_agent.helper import HelperRole

    sent = []
    role = HelperRole(wid=0, job=1, nworkers=4, k=64, pool=8, send=sent.append)
    role.in_flight = lambda it: [3, 4]
    h = wire.Header(type=wire.PARTIAL, job=1, wid=0, nworkers=4, helper=0, slot=2, seq=2, iter=5,
                    klog2=6, exp=13, bitmap=0b0111, strag=0b1000)
    role.on_partial(h, np.zeros(64, dtype=np.int32), 300)
    flushes = [wire.unpack(b)[0] for b in sent]
    flushes = [f for f in flushes if f.type == wire.FLUSH]
    assert [f.seq for f in flushes] == [3, 4]
    assert all(f.exp == 13 for f in flushes)


def test_worker_on_chunk_sees_each_result_and_cancel_stops_the_iteration():
    """on_chunk gets every chunk's sums as it arrives; cancel() inside it ends the iteration
    (no more sends or timers) and the next one may start at once."""
    clock = VirtualClock()
    sent = []
    cfg = AgentConfig(job=0, nworkers=2, k=64, pool=4, t_s=0.05)
    w = Worker(0, cfg, clock, sent.append)
    seen = []

    def on_chunk(seq, vals):
        seen.append((seq, int(vals[0])))
        if seq == 1:
            w.cancel()
    done = []
    w.start(1, np.zeros(64 * 10, np.int32), 0, on_done=lambda *a: done.append(a), on_chunk=on_chunk)
    for seq in (0, 1, 2):
        w.on_message(wire.pack(wire.Header(type=wire.RESULT, seq=seq, iter=1, wid=0xFF, klog2=6),
                               np.full(64, 10 + seq, np.int32)))
    assert seen == [(0, 10), (1, 11)] and not done   # chunk 2 came after the cancel
    sent.clear()
    clock.run(max_time=1.0)
    assert sent == []                                 # no RTO probes, no watchdog probes
    w.start(2, np.ones(64, np.int32), 0)              # not "still running"
    assert [wire.unpack(b)[0].iter for b in sent] == [2]


def test_worker_reuses_its_buffers_and_keeps_cached_results():
    """Packet and result buffers are reused between iterations, but the results of the last
    cache_iters iterations stay intact for late peers."""
    clock = VirtualClock()
    cfg = AgentConfig(job=0, nworkers=1, k=64, pool=8, t_s=0.05, cache_iters=2)
    sent = []
    w = Worker(0, cfg, clock, sent.append)
    results = {}
    for it in range(1, 6):
        q = np.full(64 * 3, it, np.int32)
        w.start(it, q, 0)
        for b in list(sent):
            h, v = wire.unpack(b)
            assert h.iter == it and np.all(v == it)
            w.on_message(wire.pack(h.copy(type=wire.RESULT, wid=0xFF), v))
        sent.clear()
        assert w.done
        results[it] = w.cur.res
    assert results[5] is not results[4] and results[5].base is results[2].base  # 3 buffers, reused
    for it in (3, 4):                                   # the cached ones are intact
        assert np.all(w.cache[it].res == it)
