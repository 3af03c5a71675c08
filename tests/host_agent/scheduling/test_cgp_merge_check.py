"""CGP's merged groupings measured against the model (``cgp/merge_check.py``)."""

import pytest

from host_agent.scheduling.cgp.merge_check import MergeCheck, merged

SINGLES = [(0,), (1,), (2,)]
PAIR = [(0, 1), (2,)]


def _phase(chk: MergeCheck, groups, t0: float, rate: float, predicted: float, steps: int = 6, dt: float = 0.2):
    """Decisions every ``dt`` seconds with ``rate`` samples/s pushed and the model's ``predicted``."""
    chk.new_phase()
    samples = int(t0 * 1000)
    for k in range(steps):
        chk.observe(t0 + k * dt, samples + int(rate * k * dt), groups, predicted)
    return t0 + (steps - 1) * dt


def test_a_merged_grouping_that_delivers_less_than_singletons_did_is_undone_and_banned_with_backoff():
    chk = MergeCheck(worse=0.8, least_s=0.5, backoff_s=1.0)
    t = _phase(chk, SINGLES, 0.0, rate=800, predicted=1000)  # singletons: 0.8 of the model
    assert chk.single_eff == pytest.approx(0.8)
    t = _phase(chk, PAIR, t + 0.1, rate=300, predicted=1000)  # the pair: 0.3 of the model
    assert chk.efficiency() == pytest.approx(0.3)
    assert chk.measured_worse(t, PAIR) and chk.banned(t + 0.9) and not chk.banned(t + 1.1)
    t = _phase(chk, PAIR, t + 2.0, rate=300, predicted=1000)
    assert chk.measured_worse(t, PAIR) and chk.banned(t + 1.9) and not chk.banned(t + 2.1)  # doubled
    assert chk.verdicts == 2


def test_a_merged_grouping_within_the_models_usual_error_is_kept_and_resets_the_backoff():
    chk = MergeCheck(worse=0.8, least_s=0.5, backoff_s=1.0)
    t = _phase(chk, SINGLES, 0.0, rate=800, predicted=1000)
    t = _phase(chk, PAIR, t + 0.1, rate=300, predicted=1000)
    assert chk.measured_worse(t, PAIR)
    # the model now predicts less for the pair (the quotas moved): 0.7 of it is the singletons' level
    t = _phase(chk, PAIR, t + 1.5, rate=490, predicted=700)
    assert not chk.measured_worse(t, PAIR)
    t = _phase(chk, PAIR, t + 0.1, rate=100, predicted=1000)
    assert chk.measured_worse(t, PAIR) and not chk.banned(t + 1.1)  # the backoff started afresh


def test_nothing_is_judged_before_enough_was_measured_or_for_singletons():
    chk = MergeCheck(worse=0.8, least_s=0.5)
    t = _phase(chk, PAIR, 0.0, rate=100, predicted=1000)
    assert chk.single_eff is None and not chk.measured_worse(t, PAIR)  # no singletons to compare with
    t = _phase(chk, SINGLES, t + 0.1, rate=800, predicted=1000)
    assert not chk.measured_worse(t, SINGLES)  # singletons are the reference, never undone
    t = _phase(chk, PAIR, t + 0.1, rate=100, predicted=1000, steps=2)  # 0.2 s: too short to judge
    assert chk.efficiency() is None and not chk.measured_worse(t, PAIR)


def test_an_interval_spanning_a_change_of_grouping_is_not_counted():
    chk = MergeCheck(least_s=0.1)
    chk.observe(0.0, 0, SINGLES, 1000)
    chk.observe(1.0, 1000, PAIR, 1000)  # the grouping changed in between: nothing measured
    assert chk.efficiency() is None
    chk.observe(1.5, 1200, PAIR, 1000)
    assert chk.efficiency() == pytest.approx(0.4)


def test_merged():
    assert merged(PAIR) and not merged(SINGLES) and not merged([])
