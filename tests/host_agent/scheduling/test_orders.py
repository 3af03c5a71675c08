"""Op orders for unequal-microbatch pipelines: the event simulation agrees with the
fill-drain recurrence and the 1F1B list schedule, replays its own orders, and reports memory."""

import numpy as np
import pytest

from host_agent.scheduling.costmodel import (PipelineCosts, equal_sizes, list_schedule, one_f_one_b_order,
                                             simulate)
from host_agent.scheduling.orders import fill_drain_orders, schedule


def _random_instance(rng, S, B):
    return PipelineCosts.from_arrays(B, rng.uniform(0.01, 0.2, S), rng.uniform(0.001, 0.05, S),
                                     knee=rng.integers(0, 4, S), send_lat=rng.uniform(0, 0.02, S),
                                     send_beta=rng.uniform(0, 0.002, S), tail=rng.uniform(0, 0.05, S))


def _random_rows(rng, S, B, mmax=6):
    rows = []
    for _ in range(S):
        m = int(rng.integers(1, mmax + 1))
        cuts = np.sort(rng.choice(np.arange(1, B), size=m - 1, replace=False)) if m > 1 else []
        b = [0, *cuts, B]
        rows.append([int(y - x) for x, y in zip(b, b[1:])])
    return rows


@pytest.mark.parametrize("seed", range(8))
def test_fill_drain_matches_the_recurrence(seed):
    rng = np.random.default_rng(seed)
    S, B = int(rng.integers(2, 5)), int(rng.integers(6, 20))
    c, rows = _random_instance(rng, S, B), _random_rows(rng, S, B)
    r = schedule(c, rows, "fill-drain")
    assert r.makespan == pytest.approx(simulate(c, rows).makespan, rel=1e-12)
    assert r.peak_samples == [B] * S  # fill-drain stashes the whole minibatch
    assert r.orders == fill_drain_orders(rows)


@pytest.mark.parametrize("S,M", [(2, 3), (4, 4), (4, 8), (3, 1)])
def test_equal_1f1b_matches_the_list_schedule(S, M):
    rng = np.random.default_rng(S * 10 + M)
    B = 4 * M
    c = _random_instance(rng, S, B)
    sizes = equal_sizes(B, M)
    r = schedule(c, [sizes] * S, "1f1b")
    assert r.makespan == pytest.approx(list_schedule(c, one_f_one_b_order(S, M), sizes).makespan, rel=1e-12)
    # PipeDream-Flush keeps at most S - s microbatches in flight on stage s
    assert r.peak_samples == [min(S - s, M) * 4 for s in range(S)]


@pytest.mark.parametrize("seed", range(8))
def test_unequal_1f1b_orders_are_executable_and_replay(seed):
    rng = np.random.default_rng(100 + seed)
    S, B = int(rng.integers(2, 5)), int(rng.integers(8, 24))
    c, rows = _random_instance(rng, S, B), _random_rows(rng, S, B)
    r = schedule(c, rows, "1f1b")
    for s, o in enumerate(r.orders):
        assert sorted(o) == sorted([("F", j) for j in range(len(rows[s]))] + [("B", j) for j in range(len(rows[s]))])
        assert [j for k, j in o if k == "B"] == list(range(len(rows[s])))  # 1F1B: backward in forward order
    again = schedule(c, rows, orders=r.orders)
    assert again.makespan == pytest.approx(r.makespan, rel=1e-12)
    assert again.peak_samples == r.peak_samples
    assert max(r.peak_samples) <= B


def test_a_deadlocking_order_is_reported():
    c = PipelineCosts.from_arrays(4, [0.1, 0.1], [0.01, 0.01])
    rows = [[2, 2], [4]]
    bad = [[("F", 0), ("B", 0), ("F", 1), ("B", 1)], [("F", 0), ("B", 0)]]  # stage 0 waits for grads never sent
    with pytest.raises(ValueError, match="deadlocks"):
        schedule(c, rows, orders=bad)


def test_rows_must_sum_to_B():
    c = PipelineCosts.from_arrays(8, [0.1, 0.1], [0.01, 0.01])
    with pytest.raises(ValueError, match="sum to 7"):
        schedule(c, [[4, 3], [8]], "fill-drain")


def test_smaller_in_flight_cap_lowers_peak_memory():
    c = PipelineCosts.from_arrays(16, [0.01] * 4, [0.01] * 4)
    rows = [equal_sizes(16, 8)] * 4
    wide = schedule(c, rows, "1f1b", cap=[8, 8, 8, 8])
    narrow = schedule(c, rows, "1f1b", cap=[2, 2, 2, 1])
    assert max(narrow.peak_samples) < max(wide.peak_samples)


# ---- CPU-quota stages: the CFS budget as the kernel enforces it

from host_agent.scheduling.orders import CpuBandwidth, _Budget, expected_makespan  # noqa: E402

U = 1e-5  # time unit of the reference below: 10 us


def _kernel_reference(q_units: int, P: int, phase: int, T: int, tphase: int, ops: list[tuple[int, int]]) -> list[int]:
    """Unit-step reference (integer time, 1 unit = 10 us): the balance gets q*P at each period
    boundary (at most q*P); a running stage whose balance is negative at a tick is throttled,
    a stage that wakes up with a balance <= 0 too; a throttled stage runs again once a refill
    makes the balance positive. ``ops`` = (earliest start, CPU units), run one after another."""
    bal, t, ends = q_units, None, []
    for start, cpu in ops:
        t0 = start if t is None else max(t, start)
        for x in range(t0 + 1 if t is None else t + 1, t0 + 1):  # refills of the idle spell (and at t0)
            if (x - phase) % P == 0:
                bal = min(q_units, bal + q_units)
        t = t0
        throttled = bal <= 0
        while cpu > 0:
            if not throttled:
                cpu -= 1
                bal -= 1
            t += 1
            if (t - phase) % P == 0:
                bal = min(q_units, bal + q_units)
                if throttled and bal > 0:
                    throttled = False
            if cpu > 0 and not throttled and (t - tphase) % T == 0 and bal < 0:
                throttled = True
        ends.append(t)
    return ends


@pytest.mark.parametrize("seed", range(12))
def test_cfs_budget_matches_a_unit_step_reference(seed):
    rng = np.random.default_rng(seed)
    P, T = 1000, 400  # 10 ms period, 4 ms tick (HZ=250)
    q_units = int(rng.choice([100, 150, 300, 500]))
    phase, tphase = int(rng.integers(0, P)), int(rng.integers(0, T))
    ops, t = [], 0
    for _ in range(25):
        t += int(rng.integers(0, 3000))
        ops.append((t, int(rng.integers(1, 2000))))
    want = _kernel_reference(q_units, P, phase, T, tphase, ops)
    b = _Budget(q_units * U / (P * U), P * U, phase * U, T * U, tphase * U)
    got, end = [], None
    for start, cpu in ops:
        end = b.run(start * U if end is None else max(end, start * U), cpu * U)
        got.append(end)
    assert got == pytest.approx([w * U for w in want], abs=1e-9)


def test_cfs_budget_bursts_after_idle_and_averages_the_quota_when_busy():
    b = _Budget(0.15, 0.01, 0.0, 0.004, 0.001)
    assert b.run(0.0005, 0.001) == pytest.approx(0.0015)  # within the period's 1.5 ms: full speed
    busy = _Budget(0.15, 0.01, 0.0, 0.004, 0.001)
    end = busy.run(0.0, 0.3)  # 300 ms of CPU: ~2 s at 0.15 CPU
    assert 0.3 / 0.15 - 0.01 < end < 0.3 / 0.15 + 0.01
    # the overrun is repaid: an op right after a long busy spell starts throttled
    assert busy.run(end, 0.0005) > end + 0.001


def test_quota_stages_take_longer_and_unlimited_ones_match_the_plain_model():
    c = PipelineCosts.from_arrays(16, [0.002] * 3, [0.0005] * 3, send_lat=0.0002)
    rows = [equal_sizes(16, 4)] * 3
    orders = schedule(c, rows, "1f1b").orders
    plain = schedule(c, rows, orders=orders).makespan
    c.info["cfs"] = dict(quota=[None, None, None], period_s=0.01)
    assert expected_makespan(c, rows, orders) == pytest.approx(plain, rel=1e-12)
    # fluid times of stages with quota 0.25: a busy stage cannot beat its quota by more than a
    # period's budget plus a tick of overrun
    c.info["cfs"] = dict(quota=[0.25, 0.25, 0.25], period_s=0.01)
    t = expected_makespan(c, rows, orders)
    cpu_per_stage = sum(float(c.tf(0, b) + c.tb(0, b)) * 0.25 for b in rows[0]) + float(c.tail[0]) * 0.25
    assert t >= (cpu_per_stage - 0.25 * 0.01 - CpuBandwidth.of(c).tick_s) / 0.25
    assert t < plain  # idle stages run their next op at full speed (burst), which the fluid model misses


def test_phase_draws_cover_the_combinations_and_predictions_reach_their_precision():
    """The draws are points of the R_d sequence over the stages' period phases and the tick
    phase: their first 64 cover every cell of a 4 x 4 grid of two stages' phases (a shared
    lattice with fixed offsets between stages put them all on one line). A prediction adds
    draws (8, 16, ...) until its standard error is within PRECISION of it."""
    from host_agent.scheduling import orders as od

    c = PipelineCosts.from_arrays(16, [0.002] * 3, [0.0005] * 3, send_lat=0.0002)
    c.info["cfs"] = dict(quota=[0.3, 0.2, 0.3], period_s=0.01)
    bw = CpuBandwidth.of(c)
    cells = {(int(bw.draw(i)[0].phase / 0.01 * 4), int(bw.draw(i)[1].phase / 0.01 * 4)) for i in range(64)}
    assert len(cells) == 16
    assert {round(bw.draw(i)[0].phase, 9) for i in range(128)}.isdisjoint(
        {round(bw.draw(od.SEARCH_FIRST_DRAW + i)[0].phase, 9) for i in range(4)})
    stops = []
    for fa, q, M in ((0.002, [0.3, 0.2, 0.3], 4), (0.004, [0.15, 0.2, 0.3], 2)):
        c = PipelineCosts.from_arrays(16, [fa] * 3, [0.0005] * 3, send_lat=0.0002)
        c.info["cfs"] = dict(quota=q, period_s=0.01)
        rows = [equal_sizes(16, M)] * 3
        orders = schedule(c, rows, "1f1b").orders
        xs = [expected_makespan(c, rows, orders, draws=1, first_draw=i, precision=None) for i in range(od.MAX_DRAWS)]
        assert len(set(xs)) > 1  # the phases matter here

        def se(n):
            m = sum(xs[:n]) / n
            return (sum((x - m) ** 2 for x in xs[:n]) / (n - 1) / n) ** 0.5 / m

        n = od.PHASE_DRAWS
        while n < od.MAX_DRAWS and se(n) > od.PRECISION:
            n *= 2
        stops.append(n)
        assert expected_makespan(c, rows, orders) == pytest.approx(sum(xs[:n]) / n, rel=1e-12)
        assert expected_makespan(c, rows, orders, precision=None) == pytest.approx(sum(xs[:8]) / 8, rel=1e-12)
    assert stops == [od.PHASE_DRAWS, od.MAX_DRAWS]  # precise at once; never precise enough: capped
