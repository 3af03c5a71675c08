"""The profiler's fits, the profile -> cost model step and the calibration fit."""

import numpy as np
import pytest

from host_agent.scheduling.costmodel import equal_sizes
from host_agent.scheduling.orders import schedule
from host_agent.scheduling.pipeline.models import load_model
from host_agent.scheduling.profile import calibrate, costs, fit
from host_agent.scheduling.profile.measure import profile_layers


def test_fit_knee_recovers_a_known_curve():
    b = [1, 2, 4, 8, 16, 32]
    t = [0.002 + 0.0005 * max(x, 4) for x in b]
    f = fit.fit_knee(b, t)
    assert f["knee"] == 4
    assert f["alpha"] == pytest.approx(0.002, rel=1e-6) and f["beta"] == pytest.approx(0.0005, rel=1e-6)
    assert f["max_rel_err"] < 1e-9


def test_fit_line():
    assert fit.fit_line([1, 2, 3], [1.5, 2.5, 3.5]) == pytest.approx((0.5, 1.0))


def _layer(fa, fb, knee=0.0, out=100.0, stash=400.0, params=1000.0):
    mk = lambda a, b: dict(alpha=a, beta=b, knee=knee, max_rel_err=0.0)
    return dict(name="L", fit_fwd=mk(fa, fb), fit_bwd=mk(2 * fa, 2 * fb), opt=1e-4, param_bytes=params,
                out_bytes_per_sample=out, stash_bytes_per_sample=stash, fwd={}, bwd={})


def _profile():
    fast = [_layer(1e-4, w * 1e-4) for w in (1, 5, 1, 1, 5, 1)]
    slow = [_layer(2e-4, w * 2e-4) for w in (1, 5, 1, 1, 5, 1)]
    return dict(model="toy", devices={"0.5": dict(overhead=1e-4, layers=fast), "0.25": dict(overhead=1e-4, layers=slow)},
                link=dict(latency=1e-3, per_byte=1e-9), stage_quotas=[0.5, 0.25])


def test_choose_cuts_is_the_best_contiguous_split():
    prof = _profile()
    B, quotas = 16, [0.5, 0.25]
    cuts = costs.choose_cuts(prof, quotas, B)

    def worst(c):
        bounds = [0, *c, 6]
        return max(sum(float(costs.layer_time(prof["devices"][costs.quota_key(q)], i, B)) for i in range(lo, hi))
                   for q, lo, hi in zip(quotas, bounds, bounds[1:]))

    assert worst(cuts) == pytest.approx(min(worst([k]) for k in range(1, 6)))


def test_build_uses_the_stage_devices_and_memory_figures():
    prof = _profile()
    c = costs.build(prof, 16, [0.5, 0.25], cuts=[3])
    # the slow stage holds the same layers' shape but runs at half speed
    assert float(c.tf(1, 16)) == pytest.approx(2 * float(c.tf(0, 16)) - 1e-4 / 2, rel=0.05)
    assert c.send_lat[0] == pytest.approx(1e-3) and c.send_beta[0] == pytest.approx(100 * 1e-9)
    assert c.info["static_bytes"] == [3 * 3000.0, 3 * 3000.0]
    assert c.info["stash_bytes_per_sample"] == [1200.0, 1200.0]
    with pytest.raises(ValueError, match="no measurements for CPU quota 0.1"):
        costs.build(prof, 16, [0.5, 0.1])


def test_calibration_fit_recovers_overhead_and_latency():
    c = costs.build(_profile(), 16, [0.5, 0.25], cuts=[3])
    runs = []
    for kind in ("fill-drain", "1f1b"):
        for M in (1, 2, 4, 8):
            rows = [equal_sizes(16, M)] * 2
            runs.append(dict(rows=rows, orders=schedule(c, rows, kind).orders))
    truth = calibrate.with_calibration(c, 0.00125, 0.0015, 0.9)
    measured = [schedule(truth, r["rows"], orders=r["orders"]).makespan for r in runs]
    x, lat, k, err = calibrate.fit(c, runs, measured, extras=np.linspace(0, 0.003, 13),
                                   latencies=np.linspace(0, 0.003, 7), scales=np.linspace(0.8, 1.2, 9))
    assert (x, lat, k) == pytest.approx((0.00125, 0.0015, 0.9))
    assert err < 1e-9


def test_profile_layers_measures_every_layer():
    spec = load_model("vgg-mini")
    res = profile_layers(spec, [1, 2], min_s=0.001)
    assert len(res["layers"]) == 15
    for L in res["layers"]:
        assert all(L["fwd"][b] > 0 and L["bwd"][b] > 0 for b in (1, 2))
        assert L["out_bytes_per_sample"] > 0
    convs = [L for L in res["layers"] if L["param_bytes"] > 0]
    assert convs and all(L["opt"] > 0 and L["stash_bytes_per_sample"] > 0 for L in convs)


def test_plan_umpipe_reads_a_profile(tmp_path, capsys):
    import json

    from host_agent.scheduling.umpipe import cli

    path = tmp_path / "prof.json"
    path.write_text(json.dumps(_profile()))
    out = tmp_path / "plan.json"
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "8", "--pop", "16", "--gens", "5",
                     "--json", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["B"] == 16 and plan["quotas"] == [0.5, 0.25]
    assert plan["umpipe"]["predicted_s"] <= min(plan["gpipe_best"]["predicted_s"],
                                                plan["one_f_one_b_best"]["predicted_s"]) + 1e-12
    assert all(sum(r) == 16 for r in plan["umpipe"]["rows"])
    # a limit nothing fits: exit 1, no plan
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "8", "--pop", "16", "--gens", "5",
                     "--memory-limit", "0.001"]) == 1
    assert "nothing fits" in capsys.readouterr().out


def test_stage_quota_arguments():
    from host_agent.scheduling.pipeline.cgroups import stage_quotas

    assert stage_quotas(4, 0.3, ["2:0.15", "0:0.4"]) == [0.4, 0.3, 0.15, 0.3]
    for bad in (["4:0.1"], ["x"], ["1:-1"]):
        with pytest.raises(ValueError, match="--slow"):
            stage_quotas(4, 0.3, bad)


def test_train_pipeline_reports_bad_arguments_before_starting_anything(tmp_path, capsys):
    import json

    from host_agent.scheduling.train import cli

    assert cli.main(["--stages", "4", "--slow", "7:0.1"]) == 2
    assert "stage must be in 0..3" in capsys.readouterr().err
    assert cli.main(["--model", "no_such_module:fn"]) == 2
    assert "cannot load model" in capsys.readouterr().err
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(_profile()))
    assert cli.main(["--model", "vgg-mini", "--profile", str(path)]) == 2
    assert "profiles toy, not vgg-mini" in capsys.readouterr().err
