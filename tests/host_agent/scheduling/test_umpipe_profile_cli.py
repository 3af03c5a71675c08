"""``saatp plan umpipe --profile``: the dual/single-chromosome comparison on one evaluator,
``--plot``, and errors that name the profile."""

import pytest

from host_agent.scheduling.profile import costs
from tests.testsupport.profiles import two_stage_profile


def test_plan_umpipe_prints_the_dual_comparison_on_one_evaluator_and_writes_the_plot(tmp_path, capsys):
    """The dual/single line compares figures of one model (the JSON holds the same ones), and
    ``--plot`` writes a figure with ``--profile`` (it was silently ignored)."""
    import json
    import re

    from host_agent.scheduling.umpipe import cli

    path = tmp_path / "prof.json"
    path.write_text(json.dumps(two_stage_profile()))
    out, png = tmp_path / "plan.json", tmp_path / "plan.png"
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "8", "--pop", "16", "--gens", "5",
                     "--json", str(out), "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    plan = json.loads(out.read_text())
    d = plan["dual_check"]
    assert d["evaluator"] == "cfs-simulation" and plan["dual_fill_drain_s"] == d["dual_s"]
    m = re.search(r"dual plan ([\d.]+) ms vs its single-chromosome plan ([\d.]+) ms", text)
    assert m and (float(m[1]), float(m[2])) == (round(d["dual_s"] * 1e3, 1), round(d["single_s"] * 1e3, 1))
    m = re.search(r"fluid recurrence ([\d.]+) vs ([\d.]+) ms", text)
    assert m and (float(m[1]), float(m[2])) == (round(d["fluid_dual_s"] * 1e3, 1), round(d["fluid_single_s"] * 1e3, 1))
    assert f"wrote {png}" in text and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the plot shows iterations of the simulation that made the predictions
    from host_agent.scheduling.orders import expected_makespan
    from host_agent.scheduling.umpipe import family
    c = costs.build(two_stage_profile(), 16, [0.5, 0.25])
    fam = family.plan(c, mmax=8, pop=8, gens=3, evals=50, dual_check=False)
    u = fam.best
    assert sum(cli._steady(c, u, i).makespan for i in range(8)) / 8 == pytest.approx(
        expected_makespan(c, u.rows, u.orders, draws=8, precision=None), rel=1e-12)
    r, i = cli._steady_iteration(c, u)
    assert r.events and r.makespan == cli._steady(c, u, i).makespan
    # --single: no dual run, no line
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "8", "--pop", "16", "--gens", "5",
                     "--single", "--json", str(out)]) == 0
    assert "dual" not in capsys.readouterr().out and json.loads(out.read_text())["dual_check"] is None
    # a plot that cannot be written: the error, before planning, not a traceback (a missing
    # directory is made; a file where its directory should be is not)
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "8", "--pop", "16", "--gens", "5",
                     "--single", "--plot", str(path / "dir.png")]) == 2
    assert f"--plot {path / 'dir.png'}: cannot make its directory" in capsys.readouterr().err


def test_plan_umpipe_names_the_profile_in_its_errors(tmp_path, capsys):
    import json

    from host_agent.scheduling.umpipe import cli

    bad = tmp_path / "broken.json"
    bad.write_text('{"model": "x"\n')
    assert cli.main(["--profile", str(bad)]) == 2
    assert f"{bad}:2:1:" in capsys.readouterr().err
    part = tmp_path / "partial.json"
    p = two_stage_profile()
    del p["stage_quotas"]
    part.write_text(json.dumps(p))
    assert cli.main(["--profile", str(part)]) == 2
    err = capsys.readouterr().err
    assert f"{part}: not a complete saatp profile" in err and "stage_quotas" in err
    p = two_stage_profile()
    del p["cpu"]["layers"][0]["fit_fwd"]
    part.write_text(json.dumps(p))
    assert cli.main(["--profile", str(part), "--batch", "16"]) == 2
    assert f"{part}: not a complete saatp profile (KeyError: 'fit_fwd')" in capsys.readouterr().err


@pytest.mark.parametrize("quota", [-0.5, 0, "x", True, 1e400])
def test_plan_umpipe_names_a_profile_quota_that_is_not_a_quota(tmp_path, capsys, quota):
    """A stage quota edited by hand into the profile: named, with its index and value (it failed
    later as "f_alpha must be >= 0", "cuts [0] do not split ..." or a float conversion)."""
    import json

    from host_agent.scheduling.umpipe import cli

    p = two_stage_profile()
    p["stage_quotas"] = [0.5, quota]
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(p))  # 1e400 is written as Infinity
    assert cli.main(["--profile", str(path), "--batch", "16"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: stage_quotas[1] is " in err and "a positive number of CPUs, or null" in err, err
    p["stage_quotas"] = [0.5, None]  # null: no quota, fine
    path.write_text(json.dumps(p))
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "4", "--pop", "8", "--gens", "2",
                     "--single"]) == 0


def _set(p: dict, where: str, value) -> None:
    """``p``'s entry at ``where`` ("calibration.stages[1].fwd.alpha") set to ``value``, the
    dicts and lists on the way copied (the calibration's stages share one dict)."""
    keys = where.replace("]", "").replace("[", ".").split(".")
    parent = p
    for k in keys[:-1]:
        i = int(k) if k.isdigit() else k
        parent[i] = child = dict(parent[i]) if isinstance(parent[i], dict) else list(parent[i])
        parent = child
    parent[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value


@pytest.mark.parametrize("where, value", [
    # 0: a ZeroDivisionError's traceback; -0.01: plan umpipe hung in the CFS budget simulation
    ("cfs_period_s", 0), ("cfs_period_s", -0.01), ("cfs_period_s", "x"),
    ("calibration.B", -4), ("calibration.B", "16"), ("min_microbatch", 0), ("link.latency", -1.0),
    ("link.per_byte", "fast"), ("cpu.layers[0].param_bytes", "x"),
    # a NaN in a layer's fit: "cuts [0, 0] do not split ..."; in a calibration stage's: "f_alpha must be finite"
    ("cpu.layers[2].fit_fwd.beta", float("nan")), ("cpu.layers[1].fit_bwd.alpha", -1e-3),
    ("cpu.layers[0].out_bytes_per_sample", float("inf")), ("calibration.stages[1].fwd.alpha", float("nan")),
    ("calibration.stages[0].tail", "x"),
])
def test_plan_umpipe_names_a_profile_number_edited_into_what_no_profile_holds(tmp_path, capsys, where, value):
    """The numbers every plan reads, edited by hand into the profile, are named with their key
    and value (until 2026-11-28: a traceback, a hang, "--batch -4: ...", a float conversion)."""
    import json

    from host_agent.scheduling.umpipe import cli

    p = two_stage_profile()
    fit = dict(alpha=1e-4, beta=1e-5, knee=0.0)
    p["calibration"] = dict(B=16, cuts=[3], stages=[dict(fwd=dict(fit), bwd=dict(fit), tail=1e-4)] * 2)
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(p))  # as made: it plans
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "4", "--pop", "8", "--gens", "2",
                     "--single"]) == 0
    assert "calibrated=True" in capsys.readouterr().out
    _set(p, where, value)
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(p))
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "4", "--pop", "8", "--gens", "2",
                     "--single"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {where} is {value!r}: it is " in err and "Traceback" not in err, err


def test_a_plan_or_a_run_result_given_as_the_profile_is_named_as_such(tmp_path, capsys):
    """plan umpipe --json's output given to --profile was "not a saatp profile (no 'link')"."""
    import json

    from host_agent.scheduling.umpipe import cli

    for made_by, result in (("saatp plan umpipe --json", dict(model="toy", B=16, umpipe={}, baselines={})),
                            ("saatp train pipeline --json", dict(model="toy", plan={}, summary={}))):
        path = tmp_path / "result.json"
        path.write_text(json.dumps(result))
        assert cli.main(["--profile", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}: not a saatp profile (no 'link'; it looks like the result of {made_by}" in err, err


def test_plan_umpipe_with_a_profile_searches_with_the_given_population_and_generations(tmp_path, capsys,
                                                                                       monkeypatch):
    """--pop and --gens were capped at 64 and 80 with --profile without a word (the defaults
    there), and --patience and --no-seed-baselines ignored; the JSON records the search."""
    import json

    from host_agent.scheduling.umpipe import cli, family

    path = tmp_path / "prof.json"
    path.write_text(json.dumps(two_stage_profile()))
    got = {}
    real = family.plan

    def plan(costs, **kw):
        got.update(kw)
        return real(costs, **dict(kw, pop=8, gens=2, evals=50))
    monkeypatch.setattr(family, "plan", plan)
    out = tmp_path / "plan.json"
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "4", "--pop", "96", "--gens", "90", "--single",
                     "--json", str(out)]) == 0
    assert (got["pop"], got["gens"]) == (96, 90)
    assert {k: json.loads(out.read_text())[k] for k in ("pop", "gens", "mmax", "seed")} == dict(pop=96, gens=90, mmax=4,
                                                                                               seed=0)
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "4", "--single"]) == 0
    assert (got["pop"], got["gens"]) == cli.PROFILE_SEARCH
    capsys.readouterr()
    for extra in (["--patience", "5"], ["--no-seed-baselines"], ["--pop", "2"]):
        assert cli.main(["--profile", str(path), "--batch", "16", *extra]) == 2
    err = capsys.readouterr().err
    assert "--patience and --no-seed-baselines shape DGAP's run on a named scenario" in err
    assert "--pop must be >= 4 and --gens >= 0" in err


def test_plan_umpipe_refuses_a_quota_no_cgroup_takes_and_says_why_torch_has_no_count(tmp_path, capsys):
    """--slow below 0.1 CPU is refused as profile and train pipeline refuse it (it was planned
    for without a word), and torch's schedules without a runnable count say so instead of
    "(nothing fits)", which reads as a memory limit."""
    import json

    from host_agent.scheduling.umpipe import cli

    path = tmp_path / "prof.json"
    path.write_text(json.dumps(two_stage_profile()))
    small = ["--profile", str(path), "--mmax", "8", "--pop", "8", "--gens", "2", "--single"]
    assert cli.main([*small, "--batch", "16", "--slow", "1:0.05"]) == 2
    assert "stage 1 has a CPU quota of 0.05 CPU, below 0.1 CPU" in capsys.readouterr().err
    # B = 1 on 2 stages: torch's 1F1B needs M >= 2 dividing B
    assert cli.main([*small, "--batch", "1"]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("torch 1F1B")][0]
    assert "nothing fits" not in line and "M dividing B=1" in line and "at least the 2 stages" in line


@pytest.mark.parametrize("args, message", [
    (["--profile", "PROF", "--scenario", "vgg16"],
     "--scenario vgg16 plans a named scenario, --profile PROF a measured model: give one of them"),
    (["--scenario", "toy", "--batch", "4", "--memory-limit", "1"],
     "--batch, --memory-limit apply with --profile only: a named scenario plans its own minibatch and devices"),
    (["--slow", "0:0.2"], "--slow applies with --profile only")])
def test_plan_umpipe_refuses_the_options_of_the_other_source(args, message, tmp_path, capsys):
    """--profile with --scenario planned the profile, a named scenario with --batch, --slow or
    --memory-limit planned its own B and devices and no limit, without a word."""
    import json

    from host_agent.scheduling.umpipe import cli

    path = tmp_path / "prof.json"
    path.write_text(json.dumps(two_stage_profile()))
    args = [str(path) if a == "PROF" else a for a in args]
    assert cli.main([*args, "--pop", "8", "--gens", "2"]) == 2
    got = capsys.readouterr()
    assert message.replace("PROF", str(path)) in got.err and got.out == ""
    assert cli.main(["--scenario", "toy", "--pop", "8", "--gens", "2"]) == 0  # each alone plans
    assert cli.main(["--profile", str(path), "--pop", "8", "--gens", "2"]) == 0


def test_plan_umpipe_says_when_the_profiles_calibration_does_not_apply(tmp_path, capsys):
    """A profile calibrated on 2 stages whose stage_quotas name 3 (edited): the plan is for 3
    stages on the layers' tight-loop times; "calibrated=False" was all it said."""
    import json

    from host_agent.scheduling.umpipe import cli

    p = two_stage_profile()
    fit = dict(alpha=1e-4, beta=1e-5, knee=0.0)
    p["calibration"] = dict(B=16, cuts=[3], stages=[dict(fwd=fit, bwd=fit, tail=1e-4)] * 2)
    path = tmp_path / "prof.json"
    args = ["--profile", str(path), "--mmax", "4", "--pop", "8", "--gens", "2", "--single"]
    path.write_text(json.dumps(p))
    assert cli.main(args) == 0
    assert "was calibrated on" not in capsys.readouterr().out
    p["stage_quotas"] = [0.5, 0.25, 0.5]
    path.write_text(json.dumps(p))
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "calibrated=False" in out
    assert f"note: {path} was calibrated on 2 stages split at [3], this plan has 3 split at" in out, out


def test_plan_umpipe_prints_a_small_plans_peak_memory_as_the_json_has_it(tmp_path, capsys):
    """Every plan of a small model printed a peak of "0.0" MB; below 1 MB it has three decimals,
    the JSON's figure."""
    import json

    from host_agent.scheduling.umpipe import cli

    path, out = tmp_path / "prof.json", tmp_path / "plan.json"
    path.write_text(json.dumps(two_stage_profile()))
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "4", "--pop", "8", "--gens", "2", "--single",
                     "--json", str(out)]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("UMPIPE (best of family)")][0]
    mb = max(json.loads(out.read_text())["umpipe"]["memory_bytes"]) / 2**20
    assert 0.0005 < mb < 1 and line.split()[5] == f"{mb:.3f}", (line, mb)


def test_nothing_fits_names_the_least_memory_of_any_split(tmp_path, capsys):
    """When no split of the layers fits the memory limit, the split for time is taken and "no
    plan fits" said what a plan on that split needs: a CNN under 0.2 MB was told 0.604 MB where
    another split needs 0.298 (and a limit of 0.3 MB then planned). Now the least of any split
    is named too, with its cuts."""
    import itertools
    import json

    from host_agent.scheduling.profile import costs
    from host_agent.scheduling.umpipe import cli

    p = two_stage_profile()
    for layer, pb in zip(p["cpu"]["layers"], [60000, 60000, 1000, 1000, 1000, 1000]):
        layer["param_bytes"] = pb  # the two heavy-parameter layers: apart on the least-memory split
    want = min((max(costs.stage_least_bytes(p, a, b, s, 3, 16) for s, (a, b) in enumerate(zip((0, *c), (*c, 6)))), c)
               for c in itertools.combinations(range(1, 6), 2))
    assert costs.least_bytes_of_any_split(p, 3, 16) == (want[0], list(want[1]))  # the DP is the brute force's
    p["stage_quotas"] = [0.5, 0.25]
    assert costs.least_bytes_of_any_split(p, 2, 16) == (194000.0, [1])
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(p))
    args = ["--profile", str(path), "--batch", "16", "--pop", "8", "--gens", "2", "--single"]
    assert cli.main(args + ["--memory-limit", "0.1"]) == 1
    out = capsys.readouterr().out
    assert "on this split of the layers, [5]; the least of any split is 0.185 MB, split at [1]" in out, out
    assert cli.main(args + ["--memory-limit", "0.19"]) == 0  # 0.185 MB: that split plans
    assert "no plan fits" not in capsys.readouterr().out
