"""SA-ATP end to end: agents + the embedded switch running p4src/saatp.p4, virtual clock.

Checks the invariants of p4src/SA-ATP.md section 9: exact sums in every scenario, recovery
from the loss of each packet type, stale packets across iterations, two jobs side by
side, counters, overflow, malformed and foreign packets.
"""
import numpy as np
import pytest

from host_agent import wire
from host_agent.constants import DEFAULT_K as K   # the lanes of p4src/saatp.p4 and of add_job
from host_agent.allreduce import allreduce_float
from emulation.harness import Impairments, Network, add_job, add_ring_job
from host_agent.quantize import AdaptiveScale

from testsupport.int32_sums import exact, rand_qs

T_S = 0.05
ELEMS = K * 40 - 17         # 40 chunks, the last one partial
POOL = 8                    # 2P = 16 < 40: slots are reused within an iteration
KLOG2 = K.bit_length() - 1


def make(saatp_program, n=4, mode="saatp", impair=None, pps=20000.0, **kw):
    net = Network(saatp_program, impair or Impairments(), switch_pps=pps)
    if mode == "ring":
        job = add_ring_job(net, n, window=POOL, rto=T_S / 2)
    elif mode == "atp":
        job = add_job(net, 0, n, pool=POOL, t_s=T_S, mode="atp", switch_t_s=0.0,
                      resend_data=True, **kw)
    else:
        job = add_job(net, 0, n, pool=POOL, t_s=T_S, mode=mode, **kw)
    return net, job


def check_iter(job, qs, delays=None):
    r = job.run_iteration(qs, 0, delays, max_time=60)
    assert r.ok, "iteration did not finish"
    ref = exact(qs)
    for s in r.sums:
        np.testing.assert_array_equal(s.astype(np.int64), ref)
    return r


@pytest.mark.parametrize("mode", ["saatp", "switchml", "atp", "ring"])
def test_exact_sums_no_straggler(saatp_program, mode):
    net, job = make(saatp_program, mode=mode)
    rng = np.random.default_rng(0)
    for _ in range(2):
        check_iter(job, rand_qs(rng, 4, ELEMS))
    if mode != "ring":
        c = net.ctl.counters(0)
        assert c["complete"] == 2 * 40
        assert c["detect"] == c["evict"] == c["violation"] == 0


@pytest.mark.parametrize("mode", ["saatp", "switchml", "atp", "ring"])
def test_straggler_exact_and_counted(saatp_program, mode):
    net, job = make(saatp_program, mode=mode)
    rng = np.random.default_rng(1)
    times = []
    for _ in range(2):
        times.append(check_iter(job, rand_qs(rng, 4, ELEMS), {3: 5 * T_S}).time)
    assert all(t >= 5 * T_S for t in times)
    if mode == "ring":
        return
    c = net.ctl.counters(0)
    assert c["violation"] == 0
    if mode == "saatp":
        # one detection per straggler per iteration; every round handed to the helper
        assert c["detect"] == 2
        assert c["evict"] == 2 * 40 and c["complete"] == 0
        helper = [w for w in job.workers if w.helper.stats.partials][0]
        hs = helper.helper.stats
        assert hs.partials == 2 * 40 and hs.straggler_contribs == 2 * 40
        assert hs.conflicts == 0 and hs.peak_bytes > 0 and hs.bytes_rx > 0
        # the helper is a leading worker; the straggler's bit was cleared once it caught up
        assert net.ctl.job_state(0)["helper"] == helper.wid != 3
        assert net.ctl.job_state(0)["strag"] & ~(1 << 3) == 0
    elif mode == "switchml":
        assert c["detect"] == c["evict"] == 0 and c["complete"] == 2 * 40
    else:  # atp: per-slot fallback to the parameter server
        assert c["evict"] >= 2 and job.ps.role.stats.partials == c["evict"]
        assert c["complete"] + c["evict"] == 2 * 40


def test_saatp_beats_switchml_when_switch_bound(saatp_program):
    """Deterministic virtual time: the straggler's catch-up costs SA-ATP ~2 switch passes
    per chunk instead of n+1, so with a slow switch SA-ATP finishes first."""
    rng = np.random.default_rng(2)
    qs = rand_qs(rng, 6, K * 200)
    t = {}
    for mode in ("saatp", "switchml"):
        net, job = make(saatp_program, n=6, mode=mode, pps=5000.0)
        t[mode] = check_iter(job, qs, {5: 10 * T_S}).time
    assert t["saatp"] < t["switchml"]


def _drop_first(typ, direction, count=1, cond=None):
    state = {"left": count}

    def rule(d, port, h):
        if d == direction and h.type == typ and state["left"] > 0 and (cond is None or cond(h)):
            state["left"] -= 1
            return True
        return False
    rule.state = state
    return rule


LOSS_CASES = [
    ("DATA", wire.DATA, "up", None),
    ("RESULT", wire.RESULT, "down", None),
    ("PARTIAL", wire.PARTIAL, "down", None),
    ("PACK", wire.PACK, "down", None),
    ("HRESULT", wire.HRESULT, "up", None),
    ("redirected DATA", wire.DATA, "down", lambda h: h.flags & wire.F_REDIRECT),
    ("PROBE", wire.PROBE, "up", None),
    ("NACK", wire.NACK, "down", None),
    ("FLUSH", wire.FLUSH, "up", None),
]


@pytest.mark.parametrize("name,typ,direction,cond", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_recovers_from_loss_of_each_packet_type(saatp_program, name, typ, direction, cond):
    net, job = make(saatp_program)
    rule = _drop_first(typ, direction, count=3, cond=cond)
    net.drop_rules.append(rule)
    if typ == wire.NACK:      # NACKs only exist after a lost DATA
        net.drop_rules.append(_drop_first(wire.DATA, "up", count=3))
    rng = np.random.default_rng(3)
    for _ in range(2):
        check_iter(job, rand_qs(rng, 4, ELEMS), {3: 3 * T_S})
    assert rule.state["left"] < 3, f"no {name} packet was dropped: scenario did not exercise it"
    assert net.ctl.counters(0)["violation"] == 0


def test_lost_nack_in_switchml_mode(saatp_program):
    """DATA lost then its NACK lost: the probe timer recovers both."""
    net, job = make(saatp_program, mode="switchml")
    net.drop_rules += [_drop_first(wire.DATA, "up", 2), _drop_first(wire.NACK, "down", 1)]
    rng = np.random.default_rng(4)
    check_iter(job, rand_qs(rng, 4, ELEMS))
    c = net.ctl.counters(0)
    assert c["nack"] >= 2 and c["violation"] == 0


@pytest.mark.parametrize("mode", ["saatp", "switchml", "atp"])
@pytest.mark.parametrize("seed", [11, 12])
def test_random_loss_dup_reorder_exact(saatp_program, mode, seed):
    imp = Impairments(loss=0.02, dup=0.02, reorder=0.1, reorder_delay=300e-6, seed=seed)
    net, job = make(saatp_program, mode=mode, impair=imp)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        check_iter(job, rand_qs(rng, 4, ELEMS), {2: 2 * T_S})
    assert net.dropped["loss"] > 0 and net.duplicated > 0
    assert net.ctl.counters(0)["violation"] == 0
    hs = [w.helper.stats.conflicts for w in job.workers]
    assert sum(hs) == 0


def test_ring_under_loss_exact(saatp_program):
    net, job = make(saatp_program, mode="ring", impair=Impairments(loss=0.02, dup=0.01, seed=5))
    rng = np.random.default_rng(5)
    check_iter(job, rand_qs(rng, 4, ELEMS), {1: T_S})
    assert net.dropped["loss"] > 0 and sum(w.resent for w in job.workers) > 0


def test_stale_packets_across_iterations(saatp_program):
    net, job = make(saatp_program)
    rng = np.random.default_rng(6)
    qs1 = rand_qs(rng, 4, ELEMS)
    check_iter(job, qs1)
    # replay worker 2's iteration-1 DATA for chunk 0 while iteration 2 runs
    w2 = job.workers[2]
    old = w2.cur
    stale = w2._data_bytes(old, 0, wire.F_RESEND)
    ep = job.endpoints[2]
    qs2 = rand_qs(rng, 4, ELEMS)
    net.clock.call_later(0.002, ep.send, stale)
    net.clock.call_later(0.004, ep.send, stale)
    check_iter(job, qs2, {3: 2 * T_S})
    c = net.ctl.counters(0)
    assert c["stale"] >= 2 and c["violation"] == 0
    # the stale request was answered from a result cache (HRESULT to worker 2, ignored)
    assert sum(w.stats.served for w in job.workers) + \
        sum(w.helper.stats.hresult_ucasts for w in job.workers) >= 1
    assert w2.stats.dup_results >= 1


def test_two_jobs_side_by_side(saatp_program):
    net = Network(saatp_program, Impairments(loss=0.01, seed=7), switch_pps=20000.0)
    a = add_job(net, 1, 3, pool=POOL, t_s=T_S, mode="saatp")
    b = add_job(net, 2, 4, pool=POOL, t_s=T_S, mode="switchml")
    assert a.spec.base != b.spec.base
    rng = np.random.default_rng(7)
    qa, qb = rand_qs(rng, 3, ELEMS), rand_qs(rng, 4, ELEMS + 100)
    for job, qs, delay in ((a, qa, {2: 3 * T_S}), (b, qb, None)):
        job.iteration += 1
        for w, q in zip(job.workers, qs):
            d = (delay or {}).get(w.wid, 0.0)
            net.clock.call_later(d, w.start, job.iteration, q, 0)
    assert net.clock.run(until=lambda: all(w.done for w in a.workers + b.workers), max_time=30)
    for job, qs in ((a, qa), (b, qb)):
        for w in job.workers:
            s, o = w.result()
            np.testing.assert_array_equal(s.astype(np.int64), exact(qs))
            assert not o
    ca, cb = net.ctl.counters(1), net.ctl.counters(2)
    assert ca["detect"] == 1 and cb["detect"] == 0
    assert ca["violation"] == cb["violation"] == 0
    assert cb["complete"] == -(-(ELEMS + 100) // K)


def test_overflow_flagged_and_handled(saatp_program):
    net, job = make(saatp_program, n=3)
    big = np.full(ELEMS, (1 << 30) + 5, dtype=np.int32)
    big[::7] = -big[::7]                      # both directions saturate
    qs = [big, big, big // 2]
    r = job.run_iteration(qs, 0, max_time=30)
    assert r.ok and all(r.overflow)
    assert net.ctl.counters(0)["overflow"] >= 1
    for s in r.sums:                          # saturated, not wrapped
        np.testing.assert_array_equal(s.astype(np.int64), exact(qs))
    # the float layer lowers the exponent and redoes the iteration: correct sums
    xs = [np.full(ELEMS, 3.0e3), np.full(ELEMS, 2.5e3), np.linspace(-1, 1, ELEMS)]
    scale = AdaptiveScale(n=3, f=20)          # 3e3 * 2^20 > 2^31: overflows at first
    fr = allreduce_float(job, xs, scale)
    assert fr.attempts >= 2 and fr.overflowed and fr.f < 20
    want = xs[0] + xs[1] + xs[2]
    for s in fr.sums:
        np.testing.assert_allclose(s, want, atol=2.0 ** -fr.f * 3)


def test_straggler_with_saatp_float_allreduce(saatp_program):
    net, job = make(saatp_program)
    rng = np.random.default_rng(8)
    scale = AdaptiveScale(n=4, f=16)
    for _ in range(3):
        xs = [rng.normal(size=ELEMS) * 0.1 for _ in range(4)]
        fr = allreduce_float(job, xs, scale, delays={0: 2 * T_S})
        want = np.sum(xs, axis=0)
        for s in fr.sums:
            np.testing.assert_allclose(s, want, atol=4 * 2.0 ** -fr.f * 4)
    assert scale.f > 16          # adapted to the small magnitudes
    # FLUSHes carry the iteration's scale, so no straggler contribution looks mis-scaled
    assert all(w.helper.stats.exp_mismatch == 0 for w in job.workers)


BAD_FRAMES = {
    "version": (lambda h: setattr(h, "version", 2), "version"),
    "klog2": (lambda h: setattr(h, "klog2", KLOG2 - 1), "klog2"),
    "job": (lambda h: setattr(h, "job", 77), "job"),
    "slot": (lambda h: setattr(h, "slot", POOL), "slot"),
    "wid": (lambda h: setattr(h, "wid", 9), "wid"),
    "type": (lambda h: setattr(h, "type", wire.PARTIAL), "type"),
}


def test_malformed_and_foreign_packets_dropped_and_counted(saatp_program):
    net, job = make(saatp_program, n=3)
    ep = job.endpoints[0]
    tpl = ep.to_switch
    vals = np.arange(K, dtype=np.int32)
    sent = {}
    for name, (mut, reason) in BAD_FRAMES.items():
        h = wire.Header(type=wire.DATA, job=0, wid=0, nworkers=3, iter=1, seq=0, bitmap=1,
                        klog2=KLOG2)
        mut(h)
        h.flags |= wire.F_PAYLOAD
        net.inject(ep.port, tpl.frame(h.pack() + vals.astype(">i4").tobytes()))
        sent[reason] = sent.get(reason, 0) + 1
    good = wire.pack(wire.Header(type=wire.DATA, job=0, wid=0, iter=1, klog2=KLOG2, bitmap=1), vals)
    # bad lengths: a truncated payload (parser error), trailing bytes, PAYLOAD flag missing
    fr = tpl.frame(good)
    net.inject(ep.port, fr[:-10])                  # IPv4/UDP lengths now lie: PacketTooShort
    trunc = wire.FrameTemplate(ep.mac, net.switch_mac, ep.ip, net.switch_ip).frame(good[:-8])
    net.inject(ep.port, trunc)                     # consistent lengths, payload too short
    net.inject(ep.port, tpl.frame(good + b"\0\0\0\0"))
    hdr_only_data = wire.Header(type=wire.DATA, job=0, wid=0, iter=1, klog2=KLOG2).pack()
    net.inject(ep.port, tpl.frame(hdr_only_data))
    # foreign traffic: garbage, ARP-like, UDP to an unknown host, short frames
    net.inject(ep.port, b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\0" * 28)
    net.inject(ep.port, b"\x01\x02")
    net.inject(ep.port, wire.FrameTemplate(ep.mac, net.switch_mac, ep.ip, "192.168.9.9",
                                           1234, 1234).frame(b"hello"))
    net.clock.run(max_time=net.clock.now() + 0.01)
    d = net.ctl.drops()
    for reason, n in sent.items():
        assert d[reason] == n, (reason, d)
    assert d["parse"] + d["length"] == 4, d
    assert d["noroute"] >= 2, d
    c = net.ctl.counters(0)
    assert c["complete"] == 0 and c["violation"] == 0
    # nothing reached a worker, and the job still works afterwards
    rng = np.random.default_rng(9)
    check_iter(job, rand_qs(rng, 3, ELEMS))


def test_agents_survive_garbage(saatp_program):
    net, job = make(saatp_program, n=2)
    w = job.workers[0]
    for junk in (b"", b"\x10", b"\x99" * 28, wire.Header(job=5).pack(),
                 wire.Header(type=wire.RESULT, iter=1).pack(),
                 wire.Header(type=wire.PARTIAL).pack(),
                 wire.Header(type=wire.PACK, iter=3, seq=10**6, bitmap=1).pack()):
        w.on_message(junk)
    job.endpoints[1].deliver(b"\x00" * 10)
    assert w.stats.bad >= 5 and job.endpoints[1].bad == 1
    rng = np.random.default_rng(10)
    check_iter(job, rand_qs(rng, 2, ELEMS))


def test_trace_to_pcap_dissects(saatp_program, tmp_path):
    from scapy.utils import rdpcap
    net, job = make(saatp_program, n=2)
    net.trace = []
    rng = np.random.default_rng(12)
    check_iter(job, rand_qs(rng, 2, K * 3))
    path = tmp_path / "saatp.pcap"
    assert net.write_pcap(str(path)) == len(net.trace) > 0
    cls = wire.scapy_layer()
    pkts = rdpcap(str(path))
    types = {int(p[cls].type) for p in pkts if p.haslayer(cls)}
    assert {wire.DATA, wire.RESULT} <= types


def test_controller_cli_commands_for_bmv2(saatp_program):
    net, job = make(saatp_program, n=2)
    cli = net.ctl.cli_commands().splitlines()
    assert any(c.startswith("table_add SaIngress.job_cfg SaIngress.set_job 0 => ") for c in cli)
    assert sum(c.startswith("table_add SaIngress.wid_port") for c in cli) == 2
    assert sum(c.startswith("table_add SaEgress.port_addr") for c in cli) == 2
    assert "mc_mgrp_create 1" in cli and "mc_node_associate 1 1" in cli
    # threshold update in place, as a controller tuning T_s would do
    net.ctl.set_threshold(0, 0.2)
    assert net.sw.table_entries("job_cfg")[0].args["t_s_us"] == 200000


@pytest.mark.parametrize("impair", [None, Impairments(loss=0.02, dup=0.01, seed=21)],
                         ids=["clean", "lossy"])
def test_compute_assist_exact_and_faster(saatp_program, impair):
    """Reading B (SA-ATP.md section 14): the helper contributes part of the straggler's
    vector as a virtual worker; sums stay exact and the straggler's lag shrinks."""
    net, job = make(saatp_program, impair=impair)
    rng = np.random.default_rng(13)
    check_iter(job, rand_qs(rng, 4, ELEMS), {3: 10 * T_S})
    helper = net.ctl.job_state(0)["helper"]
    assert 0 <= helper < 3
    v = job.enable_assist(3, helper)
    assert v == 28
    assert net.sw.table_entries("job_cfg")[0].args["full"] == 0b1111 | 1 << 28
    qs = rand_qs(rng, 4, ELEMS)
    r = job.run_iteration(qs, 0, {3: 2 * T_S}, assist_share=0.7, assist_delay=T_S, max_time=60)
    assert r.ok
    for s in r.sums:
        np.testing.assert_array_equal(s.astype(np.int64), exact(qs))
    vw = job.assist[3]
    assert vw.done and vw.stats.data_sent >= 40
    assert net.ctl.counters(0)["violation"] == 0
