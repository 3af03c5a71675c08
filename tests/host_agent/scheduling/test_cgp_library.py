"""CGP as a library: the server's bounded staleness and update rule, and a real short run."""

import numpy as np
import pytest
import torch

from host_agent.scheduling.cgp.server import ServerState


def _simulate(s_max, periods, steps=400, seed=0):
    """Groups with fixed compute periods push in time order; returns the server."""
    rng = np.random.default_rng(seed)
    st = ServerState(torch.zeros(3), lr=0.1, B_ref=4, s_max=s_max, damping_kind="none")
    G = len(periods)
    st.begin(G)
    base = {g: 0 for g in range(G)}
    ready = {g: periods[g] * (1 + 0.1 * rng.random()) for g in range(G)}
    waiting = set()
    for _ in range(steps):
        g = min((h for h in ready if h not in waiting), key=lambda h: ready[h])
        now = ready[g]
        waiting.add(g)
        for h, v in st.push(g, base[g], 1, torch.ones(3)):
            base[h] = v
            waiting.discard(h)
            ready[h] = now + periods[h] * (1 + 0.1 * rng.random())
    return st


def test_gate_bounds_staleness_and_asp_does_not():
    periods = [1.0, 1.0, 1.0, 6.0]  # one persistent straggler
    ssp = _simulate(2, periods)
    asp = _simulate(float("inf"), periods)
    assert ssp.max_staleness <= 2 and max(ssp.staleness) <= 2
    assert asp.max_staleness > 2  # without the gate the straggler's updates are stale
    # every pushed update is applied exactly once, one version each or merged
    assert ssp.applied >= ssp.v


def test_update_rule_scales_by_share_and_damping():
    st = ServerState(torch.zeros(2), lr=0.5, B_ref=8, s_max=10, damping_kind="inverse")
    st.begin(2)
    st.push(0, 0, 4, torch.ones(2))  # s = 0: w -= 0.5 * 4/8 * 1
    torch.testing.assert_close(st.w, torch.full((2,), -0.25))
    st.push(1, 0, 8, torch.ones(2))  # s = 1: h = 1/2, w -= 0.5 * 1 * 0.5
    torch.testing.assert_close(st.w, torch.full((2,), -0.5))
    with pytest.raises(ValueError, match="pushed on version"):
        st.push(1, 0, 8, torch.ones(2))


def test_retire_releases_held_updates():
    st = ServerState(torch.zeros(1), lr=1.0, B_ref=1, s_max=0, damping_kind="none")
    st.begin(2)
    assert st.push(0, 0, 1, torch.ones(1)) == []  # group 1 would fall behind: held
    assert st.retire(1) == [(0, 1)]


@pytest.mark.slow
def test_train_cgp_runs_real_processes_within_the_staleness_bound():
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    res = train_cgp("host_agent.scheduling.digits:cnn", "digits",
                    CGPConfig(mode="ssp", duration_s=3.0, s_max=2, R=8, cgroups=False, snapshot_s=0.2),
                    target_acc=0.5)
    assert res["evals"] and res["applied"] > 0
    assert res["max_staleness"] <= 2
    assert all(n > 0 for n in res["iterations"])
    assert res["evals"][-1]["test_acc"] > 0.2  # it learns (chance is 0.1)


def test_push_cost_is_measured_unless_configured():
    from host_agent.scheduling.cgp.procs import push_cost
    assert push_cost(None, 0.012) == 0.012  # the server's measured time per update
    assert push_cost(0.003, 0.012) == 0.003  # a configured cost wins
    assert push_cost(None, 0.0) == 0.005  # nothing measured yet
    assert push_cost(0, 0.02) == 0.02


@pytest.mark.slow
def test_cgp_measures_alone_first_then_groups_with_the_servers_measured_cost():
    import json
    import os

    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    res = train_cgp("host_agent.scheduling.digits:cnn", "digits",
                    CGPConfig(mode="cgp", duration_s=3.0, R=8, cgroups=False, snapshot_s=0.2))
    g = res["groupings"]
    assert g[0]["groups"] == [[0], [1], [2], [3]]  # the first phase: every worker alone, measuring
    # 2 versions per worker, then the first grouping (the others' pushes in flight are applied too)
    assert len(g) >= 2 and 8 <= g[1]["version"] <= 8 + 3
    assert all(x["versions"] == 8 for x in g)  # fixed phases by default
    log = json.load(open(os.path.join(res["out_dir"], "rank0.json")))
    assert log["c_push"] and all(c > 0 for c in log["c_push"])  # measured by the server, not the default
    assert res["max_staleness"] <= 8


@pytest.mark.slow
def test_cgp_doubles_a_phase_that_kept_its_groups():
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    res = train_cgp("host_agent.scheduling.digits:cnn", "digits",
                    CGPConfig(mode="cgp", duration_s=3.0, R=4, R_max=32, cgroups=False, snapshot_s=0.5))
    g = res["groupings"]
    assert len(g) >= 3
    for a, b in zip(g[1:], g[2:]):  # doubled while the groups stayed, R again after a change
        assert b["versions"] == (min(2 * a["versions"], 32) if b["groups"] == a["groups"] else 4)


def test_a_phase_that_kept_the_groups_doubles_the_next_up_to_the_cap():
    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.cgp.procs import next_phase_length
    r, seen = 16, []
    for same in (True, True, True, True, False, True):
        r = next_phase_length(r, 16, 128, same)
        seen.append(r)
    assert seen == [32, 64, 128, 128, 16, 32]
    assert next_phase_length(16, 16, 16, True) == 16  # R_max = R: fixed phases, as before
    with pytest.raises(ValueError, match="R_max >= R"):
        CGPConfig(R=16, R_max=8)
    assert CGPConfig(R=32).R_max is None  # the default: fixed phases of R


def test_throughput_grouping_merges_only_for_a_busy_server_or_the_staleness_bound():
    from host_agent.scheduling.cgp.grouping import segment_groups
    tau = [1.0, 1.3, 2.0, 3.5]
    # an idle server and no binding bound: nobody waits for anybody
    g = segment_groups(tau, s_max=100, c_push=0.01, objective="throughput")
    assert sorted(g.groups) == [(0,), (1,), (2,), (3,)]
    # a server that 4 singletons would saturate (rho = 2.56 x 0.5 > 1): merging pays
    g = segment_groups(tau, s_max=100, c_push=0.5, objective="throughput")
    assert g.G < 4
    # the bound: the 3.5 straggler alone sees 3.5 x (1 + 1/1.3 + 1/2 + 1/3.5) - 1 = 7.9 updates
    g = segment_groups(tau, s_max=6, c_push=0.01, objective="throughput")
    assert g.G < 4 and max(g.staleness) <= 6 + 1e-9
    # the linear objective with lam = 1 merges the idle server's workers all the same
    assert segment_groups(tau, lam=1.0, s_max=100, c_push=0.3).G < 4
    with pytest.raises(ValueError, match="objective"):
        segment_groups(tau, objective="nope")


def test_the_ablation_changes_one_mechanism_each():
    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.cgp.train_cli import ablation_configs
    base = CGPConfig(mode="asp", R=12, damping="excess", s_max=8)
    got = ablation_configs(base)
    assert set(got) == {"cgp-no-damping", "cgp-inverse", "cgp-no-bound", "cgp-doubling-phases"}
    assert all(c.mode == "cgp" for c in got.values())
    assert (got["cgp-doubling-phases"].R, got["cgp-doubling-phases"].R_max) == (12, 96)
    assert got["cgp-no-damping"].damping == "none" and got["cgp-no-damping"].R_max is None
    assert got["cgp-no-bound"].s_max > 1000 and got["cgp-inverse"].damping == "inverse"
