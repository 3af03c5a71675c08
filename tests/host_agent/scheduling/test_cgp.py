"""Acceptance checks of CGP: grouping unit cases, policies, and the discrete-event simulator
(design section 7(d))."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import combinations

import numpy as np
import pytest

from host_agent.scheduling.cgp.grouping import (grouping_cost, predicted_staleness, segment_groups,
                                                segment_periods, straggler_flags)
from host_agent.scheduling.cgp.policy import damping, gate_allows
from host_agent.scheduling.cgp.sim import METHODS, MLP, SimConfig, Simulator, make_dataset

TAU = [1, 1, 1.05, 1, 3.2, 1.1, 1, 0.95]


# ------------------------------------------------------------------------- grouping
@pytest.mark.parametrize("lam", [0.0, 0.05, 0.1, 0.5])
def test_straggler_isolated_as_singleton(lam):
    g = segment_groups(TAU, lam=lam, s_max=4, g_max=4, c_push=0.2)
    assert (4,) in g.groups
    assert sorted(i for grp in g.groups for i in grp) == list(range(8))
    assert all(s <= 4 + 1e-9 for s in g.staleness)


def test_one_group_without_stragglers():
    tau = [1, 1.1, 1.2, 0.95, 1.05, 1.0, 1.15, 1.2]
    assert max(tau) / min(tau) < 1.3
    g = segment_groups(tau, lam=0.1, s_max=4)
    assert g.G == 1 and sorted(g.groups[0]) == list(range(8))


def test_staleness_cap_binds():
    """With s_max = 1 the straggler cannot be alone next to a fast group (it would see ~2.9
    updates per period), so it must share a group."""
    g = segment_groups(TAU, lam=0.1, s_max=1, g_max=4, c_push=0.2)
    assert (4,) not in g.groups
    assert all(s <= 1 + 1e-9 for s in g.staleness)


def _brute_force(tau, lam, s_max, g_max, c_push):
    t = np.asarray(tau, float)
    order = np.argsort(t, kind="stable")
    n = len(t)
    best = None
    for k in range(0, min(g_max, n) ):
        for cuts in combinations(range(1, n), k):
            b = [0, *cuts, n]
            groups = [tuple(order[b[i]:b[i + 1]]) for i in range(len(b) - 1)]
            per = [t[list(g)].max() for g in groups]
            if predicted_staleness(per).max() > s_max + 1e-9:
                continue
            c = grouping_cost(t, groups, lam, c_push)
            if best is None or c < best - 1e-12:
                best = c
    return best


def test_segment_groups_is_optimal_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(3, 9))
        tau = rng.uniform(0.8, 1.2, n)
        tau[rng.integers(n)] *= rng.uniform(2, 4)  # at least one straggler
        lam, s_max, g_max, c = rng.uniform(0, 1), int(rng.integers(1, 6)), int(rng.integers(1, 5)), rng.uniform(0.05, 0.5)
        g = segment_groups(tau, lam=lam, s_max=s_max, g_max=g_max, c_push=c)
        ref = _brute_force(tau, lam, s_max, g_max, c)
        if ref is None:  # nothing feasible: the fewest updates, one group
            assert g.G == 1
        else:
            assert abs(g.cost - ref) <= 1e-9 * max(1, ref)
            assert g.G <= g_max and max(g.staleness) <= s_max + 1e-9


def test_segment_periods_with_samples():
    """With time samples a group's period is the expected maximum, so it grows with size."""
    rng = np.random.default_rng(1)
    samples = [np.where(rng.random(20) < 0.1, 3.0, 1.0) for _ in range(6)]
    tau = [float(np.median(s)) for s in samples]
    order, P = segment_periods(tau, samples)
    assert np.all(np.diff(P[0]) >= -1e-12)  # adding members never shortens the period
    assert P[0, 5] > 1.0 and np.isclose(P[0, 0], np.mean(samples[order[0]]), atol=0.3)
    with pytest.raises(ValueError):
        segment_periods(tau, samples[:3])


def test_flags_and_bad_input():
    assert straggler_flags(TAU, 0.3).tolist() == [False] * 4 + [True] + [False] * 3
    for bad in ([], [1, -1], [1, float("nan")]):
        with pytest.raises(ValueError):
            straggler_flags(bad)
    with pytest.raises(ValueError):
        segment_groups(TAU, lam=-1)


def test_policies():
    assert damping(0) == 1.0 and damping(3) == 0.25 and damping(5, "none") == 1.0
    assert damping(3, "excess", expected=1.4) == 1.0 and damping(5, "excess", expected=1.4) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        damping(-1)
    with pytest.raises(ValueError):
        damping(1, "bogus")
    assert gate_allows(10, 0, {0: 9, 1: 7}, s_max=4)
    assert not gate_allows(10, 0, {0: 9, 1: 7}, s_max=3)
    assert gate_allows(10, 1, {0: 9, 1: 7}, s_max=2)  # its own staleness is not gated


# ------------------------------------------------------------------------- model
def test_mlp_gradient_matches_finite_differences():
    X, y, _, _ = make_dataset(200, 10, dim=5, classes=3, seed=0)
    for hidden in (0, 7):
        m = MLP(5, 3, hidden=hidden, seed=0)
        w = m.w0 + np.random.default_rng(0).normal(0, 0.1, m.w0.size)
        _, g = m.loss_grad(w, X[:50], y[:50])
        eps = 1e-6
        for i in np.random.default_rng(1).choice(w.size, 10, replace=False):
            e = np.zeros_like(w)
            e[i] = eps
            num = (m.loss_grad(w + e, X[:50], y[:50], False)[0] - m.loss_grad(w - e, X[:50], y[:50], False)[0]) / (2 * eps)
            assert abs(num - g[i]) < 1e-6


# ------------------------------------------------------------------------- simulator
@pytest.fixture(scope="module")
def small_runs():
    cfg = SimConfig(duration=60.0, n_train=4000, n_test=1000)
    sim = Simulator(cfg)
    return cfg, {m: sim.run(m) for m in METHODS}


def test_sim_all_methods_learn(small_runs):
    cfg, res = small_runs
    for m, r in res.items():
        assert r.loss[-1] < 0.8 * r.loss[0], m
        assert r.times[-1] == pytest.approx(cfg.duration, abs=cfg.log_every)
        assert r.total_samples > 0


def test_sim_cgp_vs_bsp_and_asp(small_runs):
    cfg, res = small_runs
    cgp, bsp, asp = res["cgp"], res["bsp"], res["asp"]
    assert cgp.throughput >= 1.35 * bsp.throughput
    assert cgp.max_staleness <= cfg.s_max
    assert asp.max_staleness > cfg.s_max  # ASP has no bound
    assert abs(cgp.acc[-1] - bsp.acc[-1]) <= 0.01 + 1e-12 or cgp.acc[-1] > bsp.acc[-1]
    # the persistent straggler (worker 7) ends up alone
    assert [7] in res["cgp"].groupings[-1][1]
    assert cgp.regroups >= 1


def test_sim_reproducible():
    cfg = SimConfig(duration=20.0, n_train=2000, n_test=500)
    a, b = Simulator(cfg).run("cgp"), Simulator(cfg).run("cgp")
    assert a.loss == b.loss and a.samples == b.samples and a.groupings == b.groupings
    c = Simulator(replace(cfg, seed=3)).run("cgp")
    assert c.loss != a.loss


def test_sim_rejects_bad_config():
    with pytest.raises(ValueError):
        SimConfig(n_workers=1)
    with pytest.raises(ValueError):
        SimConfig(straggler=9)
    with pytest.raises(ValueError):
        Simulator(SimConfig(duration=5.0, n_train=500, n_test=100)).run("bogus")


@pytest.mark.slow
def test_deviation_from_bsp_is_bounded_logreg():
    """Convex case: at matched sample counts the CGP model stays within c * lr * s_max * G_max
    of the BSP model (G_max = the largest full-batch gradient norm seen on the CGP path). c was
    fitted once on seed 0 with s_max = 8 (observed worst ratio 0.22, so c = 0.35 with margin)
    and is frozen; seeds 1 and 2 are checked here (observed 0.24 and 0.05 when written)."""
    C_FROZEN = 0.35
    for seed in (1, 2):
        cfg = SimConfig(hidden=0, lr=0.5, duration=60.0, n_train=4000, n_test=1000, seed=seed)
        sim = Simulator(cfg, track=True)
        rb, rc = sim.run("bsp"), sim.run("cgp")
        sb = np.array([s for s, _ in rb.traj])
        X, y = sim.Xtr, sim.ytr
        gmax = 0.0
        for s, w in rc.traj[::10]:
            gmax = max(gmax, float(np.linalg.norm(sim.model.loss_grad(w, X[:2000], y[:2000])[1])))
        bound = C_FROZEN * cfg.lr * cfg.s_max * gmax
        worst = 0.0
        for s, w in rc.traj:
            k = int(np.argmin(np.abs(sb - s)))
            worst = max(worst, float(np.linalg.norm(w - rb.traj[k][1])))
        assert worst <= bound, (worst, bound)


def test_cli_small(tmp_path, capsys):
    import argparse
    from host_agent.scheduling.cgp import cli
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    js, png = tmp_path / "c.json", tmp_path / "c.png"
    assert cli.run(p.parse_args(["--scenario", "small", "--duration", "16", "--methods", "bsp,asp,cgp",
                                 "--json", str(js), "--plot", str(png)])) == 0
    out = capsys.readouterr().out
    assert "cgp" in out and "x BSP" in out
    d = json.loads(js.read_text())
    assert set(d["runs"]) == {"bsp", "asp", "cgp"} and d["comparison"]["methods"]["bsp"]["speedup_vs_bsp"] == 1.0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert cli.run(p.parse_args(["--scenario", "small", "--methods", "nope"])) == 2
    assert cli.run(p.parse_args(["--scenario", "small", "--json", str(tmp_path)])) == 2
    assert f"--json {tmp_path}: is a directory" in capsys.readouterr().err
    assert cli.run(p.parse_args(["--scenario", "small", "--duration", "4", "--methods", "asp",
                                 "--json", str(tmp_path / "new" / "x.json")])) == 0  # the directory is made
    assert (tmp_path / "new" / "x.json").is_file()
    assert "no target loss (BSP, whose loss halfway it is, did not run)" in capsys.readouterr().out
    assert cli.run(p.parse_args(["--scenario", "small", "--duration", "-1"])) == 2
    # an infinite duration simulated until killed, nan was "duration must be > 0" (until 2026-11-28)
    for bad in ("inf", "nan"):
        capsys.readouterr()
        assert cli.run(p.parse_args(["--scenario", "small", "--duration", bad])) == 2
        assert f"saatp plan cgp: duration (--duration) must be a finite number > 0, got {bad}" in capsys.readouterr().err
    # a negative seed was numpy's "expected non-negative integer" traceback (until 2026-11-28)
    capsys.readouterr()
    assert cli.run(p.parse_args(["--scenario", "small", "--duration", "8", "--seed", "-3"])) == 2
    assert "--seed must be >= 0, got -3" in capsys.readouterr().err


def test_cli_short_durations_and_comparisons_without_bsp(tmp_path, capsys):
    """--duration below the log interval is refused naming it (a ZeroDivisionError traceback
    until 2026-11-28); samples/s are over the time of the last log, where the final figures are
    taken (a 6-s run logged at 4 s counted 6 s of samples over 4 s); the JSON is strict (a target
    not reached was Infinity) and the table says '-' for what was not compared ('nan')."""
    import argparse
    from host_agent.scheduling.cgp import cli
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    assert cli.run(p.parse_args(["--scenario", "moving", "--duration", "3", "--methods", "bsp,cgp"])) == 2
    assert "--duration must be >= 4" in capsys.readouterr().err
    with pytest.raises(ValueError, match="shorter than the log interval"):
        SimConfig(duration=3.0)
    r = Simulator(SimConfig(duration=6.0, n_train=500, n_test=100)).run("bsp")
    assert r.times[-1] == 4.0 and r.total_samples > r.samples[-1]
    assert r.throughput == r.samples[-1] / 4.0
    js = tmp_path / "c.json"
    assert cli.run(p.parse_args(["--scenario", "moving", "--duration", "6", "--methods", "bsp,cgp",
                                 "--json", str(js)])) == 0
    d = json.loads(js.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert d["comparison"]["methods"]["cgp"]["time_to_target"] is None  # not reached in 6 s
    capsys.readouterr()
    assert cli.run(p.parse_args(["--scenario", "small", "--duration", "8", "--methods", "cgp,asp"])) == 0
    out = capsys.readouterr().out
    assert "nan" not in out and "inf" not in out
    assert any(line.startswith("│ cgp ") and "│     - │" in line for line in out.splitlines())


def test_plan_cgp_torch_table_prints_a_dash_for_bsp_staleness(capsys):
    """BSP has no server and so no staleness (None in the result): the table printed 'None'."""
    from host_agent.scheduling.cgp.cli import print_torch
    run = dict(time_to_target_s=None, samples_per_s=100.0, final_acc=0.5, groupings=[{"groups": [[0, 1]]}])
    print_torch(dict(target_acc=0.9, runs={"cgp": dict(run, max_staleness=3, time_to_target_s=2.0),
                                            "bsp": dict(run, max_staleness=None)}))
    out = capsys.readouterr().out
    bsp = next(line for line in out.splitlines() if "│  bsp" in line)
    assert "None" not in out
    assert [c.strip() for c in bsp.split("│")[1:-1]][4] == "-"
