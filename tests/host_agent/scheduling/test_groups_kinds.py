"""The groups planner's model-error corrections keep a plan with a straggling process apart
from plans of processes of like speeds (planner.kind_of)."""

import numpy as np
import pytest

from host_agent.scheduling.groups.costs import LayerCosts
from host_agent.scheduling.groups.plan import ExecPlan, Group
from host_agent.scheduling.groups.planner import STRAGGLER, STRAGGLER_PRIOR, Estimates, SlotPlanner, kind_of


def _costs(n=6):
    return LayerCosts(np.full(n, 1e-3), np.full(n, 1e-4), np.full(n, 4e4), np.full(n, 400.0), [(10,)] * n)


TWO = ExecPlan((Group((0,), (0, 6), 25, 25), Group((1,), (0, 6), 103, 103)), 6)
ONE = ExecPlan((Group((1,), (0, 6), 128, 128),), 6)


def test_a_plan_with_a_process_far_slower_than_the_fastest_is_a_stragglers_kind():
    assert kind_of(TWO) == (2, False, False)  # without speeds: no straggler known
    assert kind_of(TWO, np.array([0.06, 0.2, 0.1, 0.1])) == (2, False, True)
    assert kind_of(TWO, np.array([0.2 * STRAGGLER * 1.01, 0.2, 0.1, 0.1])) == (2, False, False)
    assert kind_of(TWO, np.array([0.35, 0.3, 0.01, 0.01])) == (2, False, False)  # only the active ones count
    assert kind_of(ONE, np.array([0.01, 0.3, 0.01, 0.01])) == (1, False, False)


def test_a_stragglers_error_is_learnt_apart_and_steers_the_next_choice():
    """The slots of two like processes measured as predicted, one slot with a 0.06-CPU process
    at 1.64x its prediction: pooled, the median hid it and the planner kept the straggler."""
    pl = SlotPlanner("lyapunov", _costs(), 128, [1.0] * 4, V=10.0)
    pl.t_ref, pl.budget = 0.1, 1e9  # the budget does not bind
    like = np.array([0.35, 0.3, 0.1, 0.1])
    slow = np.array([0.06, 0.2, 0.1, 0.1])
    for ratio in (1.0, 0.95):
        pl.observe(TWO, 0.05, 0.05 * ratio, kind=kind_of(TWO, like))
    # before any straggler's slot: the prior over the kinds without one
    assert pl.correction((2, False, True)) == pytest.approx(0.975 * STRAGGLER_PRIOR)
    pl.observe(TWO, 0.083, 0.136, kind=kind_of(TWO, slow))
    assert pl.correction((2, False, False)) == pytest.approx(0.975)
    assert pl.correction((2, False, True)) == pytest.approx(0.136 / 0.083)
    pl.observe(ExecPlan(tuple(Group((r,), (0, 6), 32, 32) for r in range(4)), 6), 0.05, 0.05)
    assert pl.correction((4, False, True)) == pytest.approx(0.136 / 0.083)  # untried: the stragglers' measured
    # and an untried kind without a straggler borrows from those without one (a single process
    # borrowed a straggler pair's correction and lost to the pair)
    assert pl.correction((1, False, False)) == pytest.approx(0.975)  # and of the nearest count (2, not 4)
    est = Estimates(slow.copy(), 1e12, 1e12)
    plan, info = pl.choose(est, TWO, 4)
    # nothing runs beside the slow process any more: it is left out (or works alone, never as a
    # straggler next to a faster one)
    assert tuple(info["kind"])[2] is False
    assert info["correction"] == pytest.approx(pl.correction(tuple(info["kind"])))


def test_choose_records_the_kind_it_judged_and_observe_files_the_ratio_under_it():
    pl = SlotPlanner("lbbsp", _costs(), 128, [1.0] * 2, V=10.0)
    pl.t_ref, pl.budget = 0.1, 1e9
    est = Estimates(np.array([0.06, 0.3]), 1e12, 1e12)
    plan, info = pl.choose(est, None, 2)
    assert tuple(info["kind"]) == kind_of(plan, est.speed)
    pl.observe(plan, 0.1, 0.2, kind=info["kind"])
    assert pl.ratios == {kind_of(plan, est.speed): [2.0]}


def test_a_move_must_gain_more_than_the_margin_over_staying():
    """A plan that moves layers is taken only when it scores MOVE_MARGIN below the best plan
    that moves nothing (the current holdings re-split): the planner moved between near-equal
    plans, paying migrations of 10-44 ms, in a run of 2026-11-28."""
    from host_agent.scheduling.groups import planner as P

    pl = SlotPlanner("lbbsp", _costs(), 128, [1.0] * 3, V=10.0)
    pl.t_ref, pl.budget = 0.1, 1e9
    cur = ExecPlan((Group((0,), (0, 6), 128, 128),), 6)
    # an all-reduce so slow that one process is best; process 1 is 3 % faster than process 0
    est = Estimates(np.array([1.0, 1.03, 0.5]), 1.0, 1e12)
    plan, info = pl.choose(est, cur, 3)
    assert plan.active == (0,) and info["predicted_migration_s"] == 0.0
    old = P.MOVE_MARGIN
    try:
        P.MOVE_MARGIN = 0.0  # without the margin the 3 % win: a move
        assert pl.choose(est, cur, 3)[0].active == (1,)
    finally:
        P.MOVE_MARGIN = old
    est = Estimates(np.array([0.5, 1.0, 0.5]), 1.0, 1e12)  # process 0 fell to half: a real gain
    assert pl.choose(est, cur, 3)[0].active == (1,)


def test_an_idle_processs_probe_is_paced_by_its_quota(monkeypatch):
    """An idle 0.1-CPU process's probe ends on CPU its quota has not repaid yet: it read 0.075
    against 0.053 active, and passed as no straggler beside a 0.3-CPU process. The probe's time
    is now the longer of its wall time and its CPU seconds over the slot's quota."""
    import torch
    from torch import nn

    from host_agent.scheduling.groups import worker as wk
    w = wk.Worker.__new__(wk.Worker)
    w.X, w.Y = torch.zeros(8, 4), torch.zeros(8, dtype=torch.long)
    w.probe_model, w.costs = nn.Sequential(nn.Linear(4, 3)), _costs(1)
    clock = iter([0.0, 0.1, 0.1])  # 0.1 s of wall time for the probe's one pass (its loop reads the clock too)
    cpu = iter([1.0, 1.015])  # 15 ms of CPU in it: 1.5x what 0.1 CPU sustains over 0.1 s
    monkeypatch.setattr(wk, "tick", lambda: next(clock))
    monkeypatch.setattr(wk.time, "process_time", lambda: next(cpu))
    w.quota = 0.1
    work = 1e-3 + 1e-4 * 8  # op_work of the one layer on 8 samples
    assert w.probe_speed(b=8, min_s=0.0) == pytest.approx(work / 0.15)  # paced: 15 ms / 0.1 CPU
    clock, cpu = iter([0.0, 0.1, 0.1]), iter([1.0, 1.015])
    w.quota = None  # no cgroup: the wall time
    assert w.probe_speed(b=8, min_s=0.0) == pytest.approx(work / 0.1)
