"""Pipeline cost model: closed forms, vectorised == scalar, list schedules, monotonicity."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_agent.scheduling import costmodel as CM
from host_agent.scheduling import workloads as W


def _rand_row(rng, B, m):
    if m == 1:
        return np.array([B])
    cuts = np.sort(rng.choice(np.arange(1, B), m - 1, replace=False))
    return np.diff(np.concatenate([[0], cuts, [B]]))


def _rand_costs(rng, S, B):
    return CM.PipelineCosts.from_arrays(
        B, rng.uniform(0, .1, S), rng.uniform(0, .1, S), rng.uniform(0, .1, S), rng.uniform(0, .2, S),
        rng.integers(0, 6, S), rng.uniform(0, .05, S), rng.uniform(0, .05, S),
        rng.uniform(0, .05, S), rng.uniform(0, .05, S), tail=rng.uniform(0, .1, S))


def test_equal_partitions_match_gpipe_closed_form():
    rng = np.random.default_rng(1)
    for _ in range(200):
        S = int(rng.integers(1, 9))
        M = int(rng.integers(1, 17))
        b = int(rng.integers(1, 5))
        f, g = rng.uniform(0.01, 2, S), rng.uniform(0.01, 2, S)
        c = CM.PipelineCosts.from_arrays(M * b, 0.0, f / b, 0.0, g / b)
        X = CM.equal_plan(S, M * b, M)
        want = CM.gpipe_closed_form(f, g, M)
        assert float(CM.makespan(c, X)) == pytest.approx(want, rel=1e-12)
        assert CM.makespan_scalar(c, X) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("order", [CM.gpipe_order, CM.one_f_one_b_order])
def test_list_schedules_homogeneous_closed_form(order):
    for S in (1, 2, 3, 5, 8, 16):
        for M in (1, 2, 4, 7, 16, 64):
            c = CM.PipelineCosts.from_arrays(M, 0.0, np.full(S, 1.0), 0.0, np.full(S, 2.0))
            tl = CM.list_schedule(c, order(S, M), [1] * M)
            assert tl.makespan == pytest.approx((M + S - 1) * 3.0, rel=1e-12), (S, M)
            assert len([e for e in tl.events if e[1] in "FB"]) == 2 * S * M


def test_one_f_one_b_order_shape():
    o = CM.one_f_one_b_order(4, 6)
    assert o[0][:4] == [("F", 0), ("F", 1), ("F", 2), ("F", 3)]  # 3 warm-up forwards then 1F1B
    assert o[0][4] == ("B", 0)
    assert o[3][:4] == [("F", 0), ("B", 0), ("F", 1), ("B", 1)]  # last stage: no warm-up


def test_list_schedule_deadlock_and_bad_orders_raise():
    c = CM.PipelineCosts.from_arrays(2, 0.0, [1.0, 1.0])
    bad = [[("B", 0), ("F", 0), ("F", 1), ("B", 1)], [("F", 0), ("F", 1), ("B", 0), ("B", 1)]]
    with pytest.raises(ValueError, match="deadlock"):
        CM.list_schedule(c, bad, [1, 1])
    with pytest.raises(ValueError):
        CM.list_schedule(c, [[("F", 0)], [("F", 0)]], [1, 1])
    with pytest.raises(ValueError):
        CM.list_schedule(c, CM.gpipe_order(2, 2), [1, 2])


def test_gpipe_list_schedule_equals_recurrence_with_communication():
    rng = np.random.default_rng(2)
    for _ in range(100):
        S, B = int(rng.integers(1, 7)), int(rng.integers(2, 50))
        c = _rand_costs(rng, S, B)
        M = int(rng.integers(1, B + 1))
        sizes = CM.equal_sizes(B, M)
        lt = CM.list_schedule(c, CM.gpipe_order(S, M), sizes).makespan
        assert float(CM.makespan(c, CM.equal_plan(S, B, M))) == pytest.approx(lt, rel=1e-12)


def test_vectorised_equals_scalar_on_random_individuals():
    rng = np.random.default_rng(3)
    n = 0
    while n < 1000:
        S, B, mm = int(rng.integers(2, 9)), int(rng.integers(2, 80)), int(rng.integers(1, 33))
        c = _rand_costs(rng, S, B)
        P = 50
        mk = lambda: CM.rows_to_matrix([_rand_row(rng, B, int(rng.integers(1, min(B, mm) + 1))) for _ in range(S)], mm)
        X = np.stack([mk() for _ in range(P)])
        Y = np.stack([mk() for _ in range(P)])
        v = CM.makespan(c, X, Y)
        s = np.array([CM.makespan_scalar(c, X[i], Y[i]) for i in range(P)])
        np.testing.assert_allclose(v, s, rtol=1e-9, atol=0)
        v2 = CM.makespan(c, X)  # default backward plan = mirror(X)
        s2 = np.array([CM.makespan_scalar(c, X[i]) for i in range(P)])
        np.testing.assert_allclose(v2, s2, rtol=1e-9, atol=0)
        n += P
    # a single plan gives a 0-d result; stage ends are consistent
    out, ends, fwd = CM.makespan(c, X[0], Y[0], return_stage_ends=True)
    assert out.shape == () and ends.shape == (S,) and float(out) == pytest.approx(ends.max())
    assert np.all(fwd <= ends)


def test_mirror_and_plan_checks():
    X = np.array([[3, 2, 1, 0], [4, 2, 0, 0]])
    assert CM.mirror(X).tolist() == [[1, 2, 3, 0], [2, 4, 0, 0]]
    c = CM.PipelineCosts.from_arrays(6, 0.0, [1.0, 1.0], bmax=[4, 4])
    CM.check_plan(c, X)
    for bad in ([[3, 2, 1, 0], [6, 0, 0, 0]], [[3, 0, 3, 0], [4, 2, 0, 0]], [[3, 2, 2, 0], [4, 2, 0, 0]]):
        with pytest.raises(ValueError):
            CM.check_plan(c, np.array(bad))
    assert CM.equal_sizes(10, 4) == [3, 3, 2, 2]
    with pytest.raises(ValueError):
        CM.equal_sizes(3, 4)
    with pytest.raises(ValueError):
        CM.makespan(c, np.zeros((3, 4), dtype=int))
    with pytest.raises(ValueError, match="sum to B"):
        CM.makespan(c, np.array([[3, 2, 0, 0], [4, 2, 0, 0]]))
    with pytest.raises(ValueError):
        CM.makespan(c, np.array([[7, -1, 0, 0], [4, 2, 0, 0]]))
    with pytest.raises(ValueError):
        CM.makespan_scalar(c, [[3, 2], [4, 2]])
    with pytest.raises(ValueError):
        CM.PipelineCosts.from_arrays(0, 0.0, [1.0])
    with pytest.raises(ValueError):
        CM.PipelineCosts.from_arrays(4, 0.0, [1.0, -1.0])


def test_simulate_timeline_is_consistent():
    rng = np.random.default_rng(4)
    c = _rand_costs(rng, 4, 32)
    X = CM.rows_to_matrix([_rand_row(rng, 32, 5) for _ in range(4)], 8)
    tl = CM.simulate(c, X)
    assert tl.makespan == pytest.approx(float(CM.makespan(c, X)))
    fs = tl.by_stage("F")
    for s, evs in fs.items():
        assert sum(e[5] for e in evs) == 32
        assert all(e[3] <= e[4] for e in evs)
        assert all(a[4] <= b[3] + 1e-15 for a, b in zip(evs, evs[1:]))  # one op at a time
    assert all(0 < f <= 1 for f in tl.busy_fraction())


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), stage=st.integers(0, 5), factor=st.floats(1.0, 4.0),
       slow_link=st.booleans())
def test_makespan_is_monotone_in_stage_time_and_bandwidth(seed, stage, factor, slow_link):
    rng = np.random.default_rng(seed)
    S, B = 6, int(rng.integers(4, 64))
    c = _rand_costs(rng, S, B)
    X = np.stack([CM.rows_to_matrix([_rand_row(rng, B, int(rng.integers(1, min(B, 12) + 1)))
                                      for _ in range(S)], 12) for _ in range(8)])
    Y = np.stack([CM.rows_to_matrix([_rand_row(rng, B, int(rng.integers(1, min(B, 12) + 1)))
                                      for _ in range(S)], 12) for _ in range(8)])
    mult = np.ones(S)
    mult[stage] = factor
    slower = c.scaled(comm=mult) if slow_link else c.scaled(compute=mult)
    assert np.all(CM.makespan(slower, X, Y) >= CM.makespan(c, X, Y) - 1e-12)


def test_build_from_workload_and_memory_caps():
    wl = W.vgg16()
    cl = W.cluster("hetero-4x")
    links = [cl.link(i, i + 1) for i in range(3)]
    c = CM.PipelineCosts.build(wl, [8, 13, 17], list(cl.devices), links, 64)
    segs = wl.segments([8, 13, 17])
    d0 = cl.devices[0]
    assert float(c.tf(0, 32)) == pytest.approx(d0.overhead + segs[0].fwd_flops * 32 / d0.speed)
    assert float(c.cf(0, 4)) == pytest.approx(links[0].latency + 4 * segs[0].act_out / links[0].bandwidth)
    assert float(c.cb(1, 4)) == pytest.approx(links[0].latency + 4 * segs[1].act_in / links[0].bandwidth)
    assert float(c.cf(3, 4)) == 0.0 and float(c.cb(0, 4)) == 0.0
    assert np.all(c.bmax == 64) and len(c.info["fits_memory"]) == 4
    small = [W.device("t4", memory=1.2e9)] + list(cl.devices[1:])
    r = CM.PipelineCosts.build(wl, [8, 13, 17], small, links, 64, recompute=True)
    # stage 0 stashes B*act_in plus b*act_int: b is capped well below B
    free = 1.2e9 - 4 * segs[0].params - 64 * segs[0].act_in
    assert r.bmax[0] == int(free / segs[0].act_int) and 1 <= r.bmax[0] < 64
    assert np.all(r.bmax[1:] == 64)
    with pytest.raises(ValueError):
        CM.PipelineCosts.build(wl, [8, 13, 17], [W.device("t4", memory=1e6)] * 4, links, 64, recompute=True)
    rep = CM.PipelineCosts.build(wl, [8, 13, 17], list(cl.devices), links, 64, replicas=4, dp_link=links[0])
    assert np.all(rep.tail > c.tail)
    sub = c.stages(1, 3)
    assert sub.S == 2 and float(sub.cf(1, 4)) == 0.0 and float(sub.cb(0, 4)) == 0.0


def test_data_parallel_and_async_times():
    assert CM.ring_allreduce_time(8e6, 1, 1e9) == 0.0
    assert CM.ring_allreduce_time(8e6, 4, 1e9, 1e-5) == pytest.approx(2 * 3 / 4 * 8e-3 + 6e-5)
    assert CM.bsp_iteration_time([1.0, 2.0], 0.0, 1e9) == 2.0
    with pytest.raises(ValueError):
        CM.ring_allreduce_time(1.0, 0, 1e9)
    c = CM.PipelineCosts.from_arrays(8, 0.0, np.full(4, 1.0), 0.0, np.full(4, 2.0))
    assert CM.pipedream_async_time(c, 8) == pytest.approx(8 * 3.0)
