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
