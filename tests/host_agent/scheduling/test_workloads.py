"""Analytic workloads, devices, clusters and straggler models."""

import numpy as np
import pytest

from host_agent.scheduling import workloads as W


def test_vgg16_matches_published_counts():
    w = W.vgg16()
    assert w.n == 21
    # 138.36 M parameters, 15.47 GMACs per 224x224 image (Simonyan & Zisserman; torchvision)
    assert w.params.sum() / 4 == pytest.approx(138.36e6, rel=1e-3)
    assert w.fwd.sum() / 2 == pytest.approx(15.47e9, rel=0.01)
    assert all(l.bwd_flops == 2 * l.fwd_flops for l in w.layers if not l.name.startswith("pool"))
    # first conv's output: 224 x 224 x 64 floats
    assert w.layers[0].act_out == 224 * 224 * 64 * 4


def test_resnet50_matches_published_counts():
    w = W.resnet50()
    assert w.n == 18
    assert w.params.sum() / 4 == pytest.approx(25.56e6, rel=0.01)
    assert w.fwd.sum() / 2 == pytest.approx(4.1e9, rel=0.03)
    assert w.layers[-2].act_out == 7 * 7 * 2048 * 4


def test_gpt1_14_layers():
    w = W.gpt1_14()
    assert w.n == 14 and w.name == "GPT1-14"
    h, s = 768, 512
    blocks = w.layers[1:13]
    assert all(l.params == (12 * h * h + 13 * h) * 4 for l in blocks)
    assert all(l.fwd_flops == 24 * s * h * h + 4 * s * s * h for l in blocks)
    assert w.layers[-1].fwd_flops == 2 * s * h * 40478
    assert w.boundary_bytes(5) == s * h * 4


def test_segments_sum_and_bad_cuts():
    w = W.vgg16()
    segs = w.segments([5, 10, 15])
    assert [g.lo for g in segs] == [0, 5, 10, 15] and segs[-1].hi == w.n
    assert sum(g.fwd_flops for g in segs) == pytest.approx(w.fwd.sum())
    assert sum(g.params for g in segs) == pytest.approx(w.params.sum())
    assert segs[1].act_in == w.layers[4].act_out and segs[0].act_in == w.input_bytes
    for bad in ([0, 5], [5, 5], [10, 4], [21]):
        with pytest.raises(ValueError):
            w.segments(bad)
    with pytest.raises(ValueError):
        W.workload("nope")
    with pytest.raises(ValueError):
        W.gpt(n_layer=0)
    with pytest.raises(ValueError):
        W.Layer("x", -1.0, 0, 0, 0)


def test_device_compute_time_knee_and_overhead():
    d = W.Device("d", speed=1e12, memory=1e9, price=1.0, overhead=1e-3, knee=8)
    t = d.compute_time(1e9, np.array([0, 1, 8, 16]))
    assert t[0] == 0.0
    assert t[1] == pytest.approx(1e-3 + 8e-3) and t[2] == pytest.approx(t[1])
    assert t[3] == pytest.approx(1e-3 + 16e-3)
    assert d.price_per_s == pytest.approx(1 / 3600)
    with pytest.raises(ValueError):
        W.Device("bad", speed=0, memory=1, price=0)


def test_clusters_links_and_slowdown():
    c = W.cluster("hetero-8x")
    assert c.n == 8
    intra, inter = c.link(0, 1), c.link(1, 2)
    assert intra.bandwidth > inter.bandwidth and intra.latency < inter.latency
    assert inter.time(0) == 0.0 and inter.time(1e6) == pytest.approx(inter.latency + 1e6 / inter.bandwidth)
    s = c.slowed([1, 3, 1, 1, 1, 1, 1, 1])
    assert s.devices[1].speed == pytest.approx(c.devices[1].speed / 3)
    assert s.devices[0].speed == c.devices[0].speed
    sub = c.subset([0, 7])
    assert sub.n == 2 and sub.link(0, 1).bandwidth == c.link(0, 7).bandwidth
    with pytest.raises(ValueError):
        c.slowed([1, 2])
    with pytest.raises(ValueError):
        W.Cluster.uniform([W.device("t4")] * 2, bandwidth=0)
    with pytest.raises(ValueError):
        W.cluster("nope")


def test_persistent_and_transient_stragglers():
    f = W.Persistent(device=2, factor=3.0, start=5, end=8).factors(10, 4)
    assert f.shape == (10, 4)
    assert np.all(f[5:8, 2] == 3.0) and f.sum() == 40 + 3 * 2.0
    tr = W.Transient(p=0.1, factor=(2, 5), duration=(1, 3), seed=7)
    a, b = tr.factors(500, 6), tr.factors(500, 6)
    assert np.array_equal(a, b)  # reproducible
    slow = a[a != 1.0]
    assert slow.size > 0 and slow.min() >= 2 and slow.max() <= 5
    assert 0.05 < (a != 1).mean() < 0.35  # ~p * mean duration
    assert not np.array_equal(a, W.Transient(p=0.1, seed=8).factors(500, 6))
    comb = W.Combined((W.Persistent(0, 2.0), W.Persistent(0, 1.5))).factors(3, 2)
    assert np.all(comb[:, 0] == 3.0) and np.all(comb[:, 1] == 1.0)
    with pytest.raises(ValueError):
        W.Persistent(device=9, factor=2).factors(3, 2)
    with pytest.raises(ValueError):
        W.Transient(p=1.5).factors(3, 2)


def test_trace_csv_round_trip_and_errors(tmp_path):
    f = W.Transient(p=0.2, seed=1).factors(50, 3)
    path = tmp_path / "trace.csv"
    W.write_trace_csv(str(path), f)
    tr = W.TraceReplay.from_csv(str(path))
    assert np.array_equal(tr.factors(50, 3), f)
    looped = W.TraceReplay(((0, 1, 2.0),), loop=True).factors(5, 2)
    assert np.all(looped[:, 1] == 2.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("slot,device,factor\n0,0,2\n1,x,3\n")
    with pytest.raises(ValueError, match=r"bad\.csv:3"):
        W.TraceReplay.from_csv(str(bad))
    bad.write_text("t,d,f\n")
    with pytest.raises(ValueError, match="header"):
        W.TraceReplay.from_csv(str(bad))
    bad.write_text("slot,device,factor\n0,0,-1\n")
    with pytest.raises(ValueError):
        W.TraceReplay.from_csv(str(bad))
    with pytest.raises(ValueError):
        W.TraceReplay(((0, 5, 2.0),)).factors(2, 2)
