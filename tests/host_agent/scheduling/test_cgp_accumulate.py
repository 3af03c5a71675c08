"""CGP's accumulation while held: a group the staleness gate holds computes more batches on
the same weights, added to its held update (``ServerState.hold_open``)."""

import pytest
import torch

from host_agent.scheduling.cgp.server import ServerState


def _held_fast_group(s_max: int = 1) -> ServerState:
    """Two groups on version 0; group 0 (fast) pushes twice, its second push is held because
    group 1 (slow, still on version 0) would fall more than ``s_max`` behind."""
    st = ServerState(torch.zeros(1), lr=1.0, B_ref=1, s_max=s_max, damping_kind="none")
    st.begin(2)
    assert st.push(0, 0, 1, torch.ones(1)) == [(0, 1)]
    assert st.push(0, 1, 1, torch.ones(1)) == []  # group 1 would be 2 behind: held
    return st


def test_a_held_update_takes_the_batches_computed_while_held_as_one_version_of_their_mean():
    st = _held_fast_group()
    assert st.holding(0) and st.hold_open(0, 4)
    assert st.push(1, 0, 1, torch.ones(1)) == [(1, 2)]  # the slow group catches up
    assert st.holding(0)  # open: not applied while group 0 computes its extra batch
    # the extra batch of 3 samples, gradient 5: the held update becomes 4 samples, mean 4
    assert st.push(0, 1, 3, torch.full((1,), 5.0)) == [(0, 3)]
    assert st.accumulated == 1 and st.applied == 3 and st.v == 3
    # w = 0 - 1 (first) - 1 (slow) - lr * (4 / B_ref) * 4 (the accumulated update)
    assert st.w.item() == pytest.approx(-2.0 - 16.0)
    assert max(st.staleness) <= 1


def test_an_open_update_is_not_applied_by_the_everybody_waits_rule_until_its_group_pushes():
    st = ServerState(torch.zeros(1), lr=1.0, B_ref=1, s_max=0, damping_kind="none")
    st.begin(2)
    # s_max 0: each group's update would leave the other behind
    assert st.push(0, 0, 1, torch.ones(1)) == []
    assert st.hold_open(0, 4)
    assert st.push(1, 0, 1, torch.ones(1)) == []  # group 0 is computing: no merged step yet
    assert st.merged_waits == 0 and st.held == 2  # both pushes held by the gate
    out = st.push(0, 0, 1, torch.ones(1))  # its batch arrives: both go as one version
    assert sorted(out) == [(0, 1), (1, 1)] and st.merged_waits == 1 and st.accumulated == 1
    assert st.held == 2  # the batch added to a held update is not a new held push


def test_a_held_update_takes_at_most_the_given_number_of_batches_then_waits():
    st = _held_fast_group()
    for _ in range(2):
        assert st.hold_open(0, 2)
        assert st.push(0, 1, 1, torch.ones(1)) == []  # still held: group 1 has not caught up
    assert not st.hold_open(0, 2) and st.accumulated == 2  # two added: it waits now
    assert st.push(1, 0, 1, torch.ones(1)) == [(1, 2), (0, 3)]  # the slow group releases it
    # its next update is held again (group 1 is 2 behind): a new held update counts afresh
    assert st.push(0, 3, 1, torch.ones(1)) == [] and st.hold_open(0, 2)


def test_hold_open_is_refused_for_a_group_without_a_held_update():
    st = ServerState(torch.zeros(1), lr=1.0, B_ref=1, s_max=4, damping_kind="none")
    st.begin(2)
    assert st.push(0, 0, 1, torch.ones(1)) == [(0, 1)]
    assert not st.hold_open(0, 4) and not st.open
    with pytest.raises(ValueError, match="pushed on version 0"):
        st.push(0, 0, 1, torch.ones(1))  # the applied update re-based the group


def test_a_new_phase_forgets_open_updates():
    st = _held_fast_group()
    st.hold_open(0, 4)
    st.begin(2)
    assert not st.open and not st.pending


def test_the_option_reaches_the_config_and_its_ablation_has_a_counterpart():
    import argparse

    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.cgp.train_cli import ablation_configs, add_arguments
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert p.parse_args([]).accumulate == CGPConfig.accumulate
    assert p.parse_args(["--accumulate", "0"]).accumulate == 0
    with pytest.raises(ValueError, match="accumulate.*--accumulate.*>= 0"):
        CGPConfig(accumulate=-1)
    # a run that does not accumulate gets the accumulating run as its ablation's counterpart
    got = ablation_configs(CGPConfig(accumulate=0))
    assert "cgp-no-accumulate" not in got and got[f"cgp-accumulate-{CGPConfig.accumulate}"].accumulate > 0


@pytest.mark.slow
def test_real_cgp_workers_held_by_the_gate_accumulate_and_the_bound_holds():
    """With a bound of 0 every push of the first phase (singletons) is held until every worker
    has pushed: the held workers compute more batches instead of waiting."""
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    res = train_cgp("host_agent.scheduling.digits:cnn", "digits",
                    CGPConfig(mode="cgp", duration_s=3.0, s_max=0, R=8, cgroups=False, snapshot_s=0.2, accumulate=2),
                    target_acc=0.5)
    assert res["accumulated"] > 0 and res["max_staleness"] == 0
    assert res["evals"][-1]["test_acc"] > 0.2  # it learns (chance is 0.1)
    # every push is an applied update or an accumulated batch, of one local batch or more (a
    # merged group pushes its members' samples together)
    assert res["evals"][-1]["samples"] >= 32 * (res["applied"] + res["accumulated"])
