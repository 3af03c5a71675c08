"""UMPIPE as an executable plan family: both order families, memory limits enforced."""

import numpy as np
import pytest

from host_agent.scheduling.costmodel import PipelineCosts
from host_agent.scheduling.orders import schedule
from host_agent.scheduling.umpipe import family


def _costs(B=24, static=1e6, stash=1e5):
    c = PipelineCosts.from_arrays(B, [0.004, 0.003, 0.006, 0.002], [0.002, 0.001, 0.004, 0.0015], knee=[2, 1, 4, 1],
                                  send_lat=0.002, send_beta=0.0001, tail=0.01)
    c.info.update(static_bytes=[static] * 4, stash_bytes_per_sample=[stash] * 4)
    return c


def test_umpipe_is_never_worse_than_the_equal_baselines_in_the_model():
    c = _costs()
    fam = family.plan(c, mmax=8, pop=24, gens=15, evals=300, dual_check=False)
    assert fam.best is not None
    # (a plan within TIE_REL of a faster one but with fewer microbatches counts as a tie)
    assert fam.best.predicted_s <= fam.gpipe_best.predicted_s * (1 + family.TIE_REL) + 1e-12
    assert fam.best.predicted_s <= fam.f1b_best.predicted_s * (1 + family.TIE_REL) + 1e-12
    # the returned orders are what the simulation timed
    assert schedule(c, fam.best.rows, orders=fam.best.orders).makespan == pytest.approx(fam.best.predicted_s)


def test_near_ties_go_to_the_plan_with_fewest_microbatches():
    # stages 1 and 2 cost nothing: any re-chunking of theirs predicts the same time as the
    # equal split, and must not be chosen over it (each op costs CPU and a message for real)
    c = PipelineCosts.from_arrays(16, [0.002, 0.0, 0.0], [0.001, 0.0, 0.0], knee=[1, 1, 1], send_lat=0.0,
                                  send_beta=0.0, tail=0.0)
    c.info.update(static_bytes=[0.0] * 3, stash_bytes_per_sample=[1.0] * 3)
    fam = family.plan(c, mmax=8, pop=24, gens=15, evals=400, dual_check=False)
    # what the searches scored, before the tie rule
    raw = [x for k in ("fill-drain", "1f1b") for x in family._family_search(c, k, 8, None, [], 400, 0, 24)]
    pool = raw + family.candidate_pool(c, fam)
    fastest = min(x.predicted_s for x in pool)
    ties = [x for x in pool if x.predicted_s <= fastest * (1 + family.TIE_REL)]
    assert len({family.n_ops(x) for x in ties}) > 1  # the search found busier near-ties
    least = min(family.n_ops(x) for x in ties)
    assert family.n_ops(fam.best) == least and fam.best.predicted_s <= fastest * (1 + family.TIE_REL)
    for a in fam.top:  # the plans to measure: no near-tie of a kept plan has fewer microbatches
        assert all(family.n_ops(x) >= family.n_ops(a) for x in pool
                   if abs(x.predicted_s - a.predicted_s) <= family.TIE_REL * a.predicted_s)


def test_memory_limit_is_enforced():
    c = _costs()
    # fill-drain stashes all 24 samples: 1e6 + 24e5 = 3.4e6 bytes; allow 2.5e6 -> only 1F1B-like plans fit
    limit = [2.5e6] * 4
    fam = family.plan(c, mmax=8, limit=limit, pop=24, gens=15, evals=300, dual_check=False)
    assert fam.gpipe_best is None and fam.fill_drain is None
    assert fam.best is not None and fam.best.kind == "1f1b"
    for cand in [fam.best, fam.one_f_one_b, fam.f1b_best]:
        assert all(m <= l for m, l in zip(cand.memory_bytes, limit))
        assert cand.memory_bytes == [1e6 + 1e5 * p for p in cand.peak_samples]
    unlimited = family.plan(c, mmax=8, pop=24, gens=15, evals=300, dual_check=False)
    assert unlimited.best.predicted_s <= fam.best.predicted_s + 1e-12


def test_nothing_fits_returns_no_plan():
    c = _costs(static=5e6)
    fam = family.plan(c, mmax=8, limit=[4e6] * 4, pop=24, gens=5, evals=50, dual_check=False)
    assert fam.best is None and fam.gpipe_best is None and fam.f1b_best is None


def test_the_least_memory_a_plan_needs_is_the_boundary_of_nothing_fits():
    c = _costs()
    need, b = family.least_memory(c, mmax=8)
    assert b == 3  # 24 samples in 8 microbatches
    below = family.plan(c, mmax=8, limit=[need * 0.99] * 4, pop=24, gens=5, evals=50, dual_check=False)
    at = family.plan(c, mmax=8, limit=[need] * 4, pop=24, gens=5, evals=50, dual_check=False)
    assert below.best is None and at.best is not None
    msg = family.no_fit_message(c, need * 0.99 / 2**20, 8)
    assert msg.startswith("no plan fits the memory limit of") and f"needs is {need / 2**20:.1f} MB" in msg
    assert "(1F1B, microbatches of 3 samples or fewer)" in msg


def test_memory_limits_need_memory_figures():
    c = PipelineCosts.from_arrays(8, [0.1, 0.1], [0.01, 0.01])
    with pytest.raises(ValueError, match="memory figures"):
        family.evaluate(c, [[8], [8]], "fill-drain", limit=[1e9, 1e9])


def test_unequal_plans_can_beat_equal_ones_under_1f1b():
    # a slow, overhead-heavy last stage wants few large microbatches, the fast first stages
    # many small ones to fill the pipeline early
    c = PipelineCosts.from_arrays(32, [0.0005, 0.0005, 0.02], [0.001, 0.001, 0.004], knee=[1, 1, 1])
    c.info.update(static_bytes=[0.0] * 3, stash_bytes_per_sample=[1.0] * 3)
    fam = family.plan(c, mmax=16, pop=24, gens=20, evals=800, dual_check=False)
    best_equal = min(fam.gpipe_best.predicted_s, fam.f1b_best.predicted_s)
    assert fam.best.predicted_s < best_equal * 0.995
    assert len({len(r) for r in fam.best.rows}) > 1  # stages really use different microbatch counts


def test_ramps_and_shaped_rows_are_valid_splits():
    for B in (7, 16, 32, 64):
        for M in range(1, min(B, 12) + 1):
            for r in (0.6, 1.0, 1.6):
                x = family.ramp(B, M, r)
                assert sum(x) == B and len(x) == M and min(x) >= 1
        if B >= 8:
            assert family.ramp(B, 4, 1.6) == sorted(family.ramp(B, 4, 1.6))  # growing
        for row in family.shaped_rows(B, 8):
            assert sum(row) == B and min(row) >= 1 and len(row) <= 8


def test_top_plans_are_distinct_and_ranked_and_quota_stages_use_the_budget_model():
    c = _costs()
    c.info["cfs"] = dict(quota=[0.3, 0.15, 0.3, 0.3], period_s=0.01)
    fam = family.plan(c, mmax=8, pop=16, gens=10, evals=150, dual_check=False, top=4)
    assert 1 <= len(fam.top) <= 4
    ts = [x.predicted_s for x in fam.top]
    assert ts == sorted(ts) and fam.top[0].predicted_s == pytest.approx(fam.best.predicted_s)
    keys = {(x.kind, tuple(map(tuple, x.rows)), tuple(map(tuple, x.orders))) for x in fam.top}
    assert len(keys) == len(fam.top)
    assert fam.best.predicted_s <= min(fam.gpipe_best.predicted_s, fam.f1b_best.predicted_s) + 1e-12
    # the prediction is the CFS simulation's (steady state, mean over phase draws), not the fluid one
    from host_agent.scheduling.orders import expected_makespan

    assert fam.best.predicted_s == pytest.approx(expected_makespan(c, fam.best.rows, fam.best.orders))
    assert fam.best.predicted_s != pytest.approx(schedule(c, fam.best.rows, orders=fam.best.orders).makespan)


def test_no_microbatch_below_the_calibrated_sizes():
    # a cheap fixed cost per op: unconstrained, the search likes 1- and 2-sample microbatches
    c = PipelineCosts.from_arrays(32, [0.0002, 0.0002, 0.004], [0.001, 0.001, 0.002])
    c.info.update(static_bytes=[0.0] * 3, stash_bytes_per_sample=[1.0] * 3)
    free = family.plan(c, mmax=16, pop=16, gens=10, evals=300, dual_check=False)
    assert min(min(r) for r in free.best.rows) < 4
    c.info["bmin"] = 4
    fam = family.plan(c, mmax=16, pop=16, gens=10, evals=300, dual_check=False)
    for cand in [fam.best, *fam.top]:
        assert min(min(r) for r in cand.rows) >= 4


def test_the_best_equal_split_is_among_the_plans_to_measure():
    c = _costs()
    fam = family.plan(c, mmax=8, pop=16, gens=10, evals=150, dual_check=False, top=3)
    safe = min((fam.gpipe_best, fam.f1b_best), key=lambda x: x.predicted_s)
    assert any(x.kind == safe.kind and x.rows == safe.rows for x in fam.top)
    assert [x.predicted_s for x in fam.top] == sorted(x.predicted_s for x in fam.top)
    # an UMPIPE plan that is an equal split is named as one, whether the search found it or it was
    # added ("UMPIPE fill-drain: 12 | 12 | 12" beside "UMPIPE fill-drain (equal): 12 | 12" until 2026-11-28)
    plans = [x for x in (*fam.top, fam.best, fam.fill_drain, fam.one_f_one_b) if x is not None]
    assert any(family.is_equal_split(x.rows) for x in plans)
    for x in plans:
        assert x.method.startswith(("UMPIPE fill-drain", "UMPIPE 1F1B")), x.method
        assert x.method.endswith(" (equal)") == family.is_equal_split(x.rows), (x.method, x.rows)


def _random_instance(rng, cfs: bool):
    from host_agent.scheduling.umpipe.dgap import _random_row
    S, B = int(rng.integers(2, 6)), int(rng.integers(4, 40))
    c = PipelineCosts.from_arrays(B, rng.uniform(1e-3, 5e-3, S), rng.uniform(1e-4, 1e-3, S),
                                  knee=list(rng.integers(1, 4, S)), send_lat=float(rng.uniform(0, 1e-3)),
                                  send_beta=float(rng.uniform(0, 1e-4)), tail=float(rng.uniform(0, 5e-3)))
    if cfs:
        c.info["cfs"] = dict(quota=[float(q) if q < 0.9 else None for q in rng.uniform(0.1, 1.0, S)], period_s=0.01)
    rand = lambda: np.stack([_random_row(rng, B, B, 8) for _ in range(S)])
    return c, rand


def test_a_dual_plan_is_scored_by_the_evaluator_of_the_executable_plans():
    """umpipe.dual: on a tied plan (backward = mirror(forward)) it is the executable plans'
    evaluator (the CFS budget simulation), to the last bit; without CPU quotas, on any dual
    plan, the recurrence DGAP optimises."""
    from host_agent.scheduling.costmodel import makespan, mirror
    from host_agent.scheduling.orders import expected_makespan, fill_drain_orders
    from host_agent.scheduling.umpipe import dual

    rng = np.random.default_rng(0)
    for t in range(60):
        c, rand = _random_instance(rng, cfs=t % 2 == 1)
        X, Y = rand(), rand()
        rows = dual.rows_of(X)
        assert dual.expected_makespan(c, X, mirror(X)) == expected_makespan(c, rows, fill_drain_orders(rows))
        if "cfs" not in c.info:
            assert dual.expected_makespan(c, X, Y) == pytest.approx(float(makespan(c, X, Y)), rel=1e-12)
    with pytest.raises(ValueError, match="backward microbatch sizes"):
        dual.expected_makespan(c, X, [[1]] * c.S)


def test_the_dual_and_single_chromosome_plans_are_compared_on_one_evaluator():
    """The dual/single comparison of ``saatp plan umpipe --profile``: both DGAP plans predicted
    by the CFS simulation the family's plans are scored with (until 2026-11-27 the dual figure
    was the fluid recurrence's, 1.7-2.6x the simulation's on calibrated profiles, printed
    beside the simulation's single figure)."""
    from host_agent.scheduling.umpipe import dual

    c = _costs()
    c.info["cfs"] = dict(quota=[0.3, 0.15, 0.3, 0.3], period_s=0.01)
    fam = family.plan(c, mmax=8, pop=16, gens=10, evals=100, top=3)
    d = fam.dual
    assert d is not None and d.evaluator == "cfs-simulation"
    assert d.single_s == family.evaluate(c, d.single_rows, "fill-drain").predicted_s
    assert d.dual_s == dual.expected_makespan(c, d.dual_forward_rows, d.dual_backward_rows)
    assert fam.dual_fill_drain_s == d.dual_s and fam.public()["dual_check"]["dual_s"] == d.dual_s
    # the dual run starts from the single plan: never worse on DGAP's own model
    assert d.fluid_dual_s <= d.fluid_single_s * (1 + 1e-12)
    # and the evaluator is not the fluid model DGAP optimises
    assert d.single_s != pytest.approx(d.fluid_single_s, rel=0.01)
    assert family.plan(c, mmax=8, pop=16, gens=5, evals=50, dual_check=False).dual is None
    c.info.pop("cfs")
    d = family.plan(c, mmax=8, pop=16, gens=10, evals=100, top=3).dual
    assert d.evaluator == "recurrence" and d.dual_s == pytest.approx(d.fluid_dual_s, rel=1e-12)


@pytest.mark.slow  # ~20 s
def test_the_familys_best_does_not_depend_on_how_many_plans_are_kept():
    # saatp plan umpipe --profile keeps 6 plans, saatp train pipeline 4 x --candidates; the
    # search's pool was 4 x that, so on CPU-quota stages (phase draws) train pipeline measured
    # another plan as UMPIPE's than plan umpipe reported, and another for each --candidates
    from host_agent.scheduling.umpipe import cli as umpipe_cli

    c = PipelineCosts.from_arrays(18, [0.0004, 0.0003, 0.0006, 0.0002], [0.0008, 0.0006, 0.0012, 0.0005],
                                  send_lat=0.0003, send_beta=0.00001, tail=0.001)
    c.info.update(static_bytes=[1e6] * 4, stash_bytes_per_sample=[1e5] * 4,
                  cfs=dict(quota=[0.3, 0.15, 0.3, 0.3], period_s=0.01))
    few, many = (family.plan(c, mmax=8, pop=16, gens=10, evals=300, dual_check=False, top=k) for k in (3, 12))
    for a, b in ((few.best, many.best), (few.fill_drain, many.fill_drain), (few.one_f_one_b, many.one_f_one_b)):
        assert (a.kind, a.rows, a.predicted_s) == (b.kind, b.rows, b.predicted_s)
    assert len(many.top) > len(few.top) and any(family.same_plan(x, many.best) for x in many.top)
    # and both commands search with the same DGAP population and generations by default
    import inspect
    params = inspect.signature(family.plan).parameters
    assert (params["pop"].default, params["gens"].default) == umpipe_cli.PROFILE_SEARCH
