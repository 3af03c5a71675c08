"""The profiler's fits, the profile -> cost model step and the calibration fit."""

import math

import pytest

from host_agent.scheduling.costmodel import equal_sizes
from host_agent.scheduling.pipeline.models import load_model
from host_agent.scheduling.profile import calibrate, costs, fit
from host_agent.scheduling.profile.measure import profile_layers
from host_agent.scheduling.progress import process_state
from tests.testsupport import user_models
from tests.testsupport.profiles import layer, two_stage_profile


def test_fit_knee_recovers_a_known_curve():
    b = [1, 2, 4, 8, 16, 32]
    t = [0.002 + 0.0005 * max(x, 4) for x in b]
    f = fit.fit_knee(b, t)
    assert f["knee"] == 4
    assert f["alpha"] == pytest.approx(0.002, rel=1e-6) and f["beta"] == pytest.approx(0.0005, rel=1e-6)
    assert f["max_rel_err"] < 1e-9


def test_fit_line():
    assert fit.fit_line([1, 2, 3], [1.5, 2.5, 3.5]) == pytest.approx((0.5, 1.0))


def test_choose_cuts_is_the_best_contiguous_split():
    prof = two_stage_profile()
    B, quotas = 16, [0.5, 0.25]
    cuts = costs.choose_cuts(prof, quotas, B)

    fixed = 2 * 4 * costs.DEFAULT_OP_CPU_S  # 4 forward and 4 backward ops' fixed CPU (uncalibrated)

    def worst(c):
        bounds = [0, *c, 6]
        return max((sum(float(costs.layer_time(prof["cpu"]["layers"], i, B)) for i in range(lo, hi)) + fixed) / q
                   for q, lo, hi in zip(quotas, bounds, bounds[1:]))

    assert worst(cuts) == pytest.approx(min(worst([k]) for k in range(1, 6)))
    # a calibration's measured fixed cost per op replaces the default
    prof["calibration"] = dict(cuts=[3], stages=[dict(fwd=dict(alpha=0.002), bwd=dict(alpha=0.004))] * 2)
    assert costs.op_cpu(prof) == pytest.approx(0.003)


def test_among_splits_tied_on_the_slowest_stage_the_most_even_wins():
    """A small model: the fixed op cost outweighs every layer, so the slow-quota stage is the
    bottleneck of every split that gives it one or two layers; among the splits whose slowest
    stage is within TIE_REL of the least, the least sum of squared stage times wins (the
    other stages are the pipeline's fill and drain)."""
    from itertools import combinations
    layers = [layer(1e-6, 1e-6) for _ in range(9)]
    prof = dict(model="toy", format=2, cfs_period_s=0.01, cpu=dict(overhead=0.0, layers=layers),
                link=dict(latency=1e-3, per_byte=1e-9), stage_quotas=[0.3, 0.15, 0.3, 0.3])
    B, quotas = 32, [0.3, 0.15, 0.3, 0.3]

    def times(c):
        bounds = [0, *c, len(layers)]
        return [(sum(float(costs.layer_time(layers, i, B)) for i in range(lo, hi))
                 + 2 * 4 * costs.DEFAULT_OP_CPU_S) / q for q, lo, hi in zip(quotas, bounds, bounds[1:])]

    every = [list(c) for c in combinations(range(1, len(layers)), 3)]
    slowest = min(max(times(c)) for c in every)
    near = [c for c in every if max(times(c)) <= slowest * (1 + costs.TIE_REL)]
    assert len(near) > 10  # many splits are tied on the slowest stage
    cuts = costs.choose_cuts(prof, quotas, B)
    assert cuts in near
    assert sum(t * t for t in times(cuts)) == pytest.approx(min(sum(t * t for t in times(c)) for c in near))
    bounds = [0, *cuts, len(layers)]
    sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    assert max(sizes[0], sizes[2], sizes[3]) - min(sizes[0], sizes[2], sizes[3]) <= 1  # the 0.3-CPU stages even


def test_build_turns_cpu_seconds_into_fluid_times_and_carries_the_cfs_budget():
    prof = two_stage_profile()
    c = costs.build(prof, 16, [0.5, 0.25], cuts=[3])
    # both stages hold layers of the same CPU cost; the quarter-CPU stage takes twice as long
    assert float(c.tf(1, 16)) == pytest.approx(2 * float(c.tf(0, 16)), rel=1e-6)
    assert float(c.tf(0, 16)) * 0.5 == pytest.approx(1e-4 / 2 + 3 * 1e-4 + 7 * 1e-4 * 16, rel=0.02)
    assert c.info["cfs"] == dict(quota=[0.5, 0.25], period_s=0.01)
    assert c.send_lat[0] == pytest.approx(1e-3) and c.send_beta[0] == pytest.approx(100 * 1e-9)
    assert c.info["static_bytes"] == [3 * 3000.0, 3 * 3000.0]
    assert c.info["stash_bytes_per_sample"] == [1200.0, 1200.0]
    assert not c.info["calibrated"]
    assert "cfs" not in costs.build(prof, 16, [None, None], cuts=[3]).info  # no quotas: no budget
    with pytest.raises(ValueError, match="old per-quota"):
        import json, tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dict(model="toy", devices={}, link={}), f)
        costs.load(f.name)


def _traced(S, rows_list, truth, steps=3, other=(2e-4, 3e-3)):
    """Synthetic traces: op CPU = truth[s][kind](b), process CPU = ops + other per op + per iteration."""
    runs, measured = [], []
    for rows in rows_list:
        runs.append(dict(rows=rows))
        traces = []
        for s in range(S):
            its = []
            for _ in range(steps):
                ops = [(k, j, 0.0, 0.0, 0.0, truth[s][k](rows[s][j])) for j in range(len(rows[s])) for k in "FB"]
                its.append(dict(ops=ops, cpu_s=sum(o[5] for o in ops) + other[0] * len(ops) + other[1]))
            traces.append(its)
        measured.append(dict(traces=traces))
    return runs, measured


def test_calibration_fits_the_cpu_per_op_measured_inside_the_pipeline():
    truth = [dict(F=lambda b: 1e-3 + 2e-4 * b, B=lambda b: 1.5e-3 + 4e-4 * b),
             dict(F=lambda b: 5e-4 + 3e-4 * b, B=lambda b: 8e-4 + 6e-4 * b)]
    rows_list = [[equal_sizes(16, M)] * 2 for M in (1, 2, 4, 8)]
    runs, measured = _traced(2, rows_list, truth)
    st = calibrate.fit_stages(runs, measured, 2)
    for s in range(2):
        assert st[s]["other_per_op"] == pytest.approx(2e-4)
        assert st[s]["tail"] == pytest.approx(3e-3)
        for kind, k in (("fwd", "F"), ("bwd", "B")):
            # the fit holds the op's own CPU plus the stage's other CPU per op
            for b in (1, 3, 16):
                want = truth[s][k](b) + 2e-4
                got = st[s][kind]["alpha"] + st[s][kind]["beta"] * max(b, st[s][kind]["knee"])
                assert got == pytest.approx(want, rel=1e-6)
    # build() uses the calibrated curves on the calibration's split, the layer fits elsewhere
    prof = dict(two_stage_profile(), calibration=dict(B=16, cuts=[3], quotas=[0.5, 0.25], stages=st))
    c = costs.build(prof, 16, [0.5, 0.25])
    assert c.info["calibrated"] and c.info["cuts"] == [3]
    assert float(c.tf(1, 4)) * 0.25 == pytest.approx(truth[1]["F"](4) + 2e-4, rel=1e-6)
    assert float(c.tail[0]) * 0.5 == pytest.approx(3e-3)
    assert not costs.build(prof, 16, [0.5, 0.25], cuts=[2]).info["calibrated"]


def test_the_calibration_runs_each_torch_schedule_at_a_count_torch_can_run():
    from host_agent.scheduling.costmodel import PipelineCosts

    def picks(B, S, Ms=(1, 2, 4, 8, 16)):
        c = PipelineCosts.from_arrays(B, [1e-3] * S, [1e-3] * S)
        return [(r["schedule"], r["M"]) for r in calibrate.torch_runs(c, [m for m in Ms if m <= B])]

    assert picks(32, 4) == [("torch-gpipe", 2), ("torch-1f1b", 8)]  # two sizes around the counts that win
    assert picks(12, 4) == [("torch-gpipe", 2), ("torch-1f1b", 6)]  # M must divide B
    assert picks(32, 16) == [("torch-gpipe", 2), ("torch-1f1b", 16)]  # 1F1B needs M >= S
    assert picks(5, 4) == []  # no count >= S divides B: nothing to fit torch's 1F1B from
    assert picks(4, 4, (2,)) == []  # no count >= S up to the largest calibrated one: no 1F1B check
    # the divisors of B, not only the calibration's counts: at B = 18 or 30 torch's 1F1B had
    # no count among 1, 2, 4, 8, 16 and no check run (until 2026-11-28)
    assert picks(18, 3) == [("torch-gpipe", 2), ("torch-1f1b", 6)]
    assert picks(30, 5) == [("torch-gpipe", 2), ("torch-1f1b", 6)]
    c = PipelineCosts.from_arrays(18, [1e-3] * 3, [1e-3] * 3)
    c.info["min_microbatch"] = 4  # a model that trains on 4 samples at least: M = 6 (3 each) is out
    assert [(r["schedule"], r["M"]) for r in calibrate.torch_runs(c, [1, 2, 4])] == [("torch-gpipe", 2),
                                                                                   ("torch-1f1b", 3)]


def test_profile_layers_measures_every_layer():
    spec = load_model("vgg-mini")
    res = profile_layers(spec, [1, 2], min_s=0.001)
    assert len(res["layers"]) == 15
    for L in res["layers"]:
        assert all(L["fwd"][b] > 0 and L["bwd"][b] > 0 for b in (1, 2))
        assert L["out_bytes_per_sample"] > 0
    convs = [L for L in res["layers"] if L["param_bytes"] > 0]
    assert convs and all(L["opt"] > 0 and L["stash_bytes_per_sample"] > 0 for L in convs)


FROZEN_MODEL = '''
import torch
from torch import nn


class Table(nn.Module):  # a fixed positional table: a buffer, no parameter
    def __init__(self):
        super().__init__()
        self.register_buffer("pe", torch.ones(10))

    def forward(self, x):
        return x + self.pe


def spec():
    def build():
        m = nn.Sequential(Table(), nn.Linear(10, 20), nn.Linear(20, 20), nn.Linear(20, 3))
        m[2].requires_grad_(False)
        return m
    return (build, lambda B, step: (torch.randn(B, 10), torch.randint(0, 3, (B,))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
'''


def test_memory_counts_frozen_parameters_once_and_buffers(tmp_path, monkeypatch):
    """A frozen layer (requires_grad=False) has no gradient and no momentum, a buffer is held
    once: until 2026-11-28 every parameter counted three times and a buffer not at all, so a
    model whose fullest stage was frozen was told no plan fits a limit its plans fit."""
    (tmp_path / "saatp_frozen_model_xyz.py").write_text(FROZEN_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    res = profile_layers(load_model("saatp_frozen_model_xyz:spec"), [1, 2], min_s=0.001)
    L = res["layers"]
    assert [x["param_bytes"] for x in L] == [0, 4 * 220, 4 * 420, 4 * 63]
    assert [x["trainable_bytes"] for x in L] == [0, 4 * 220, 0, 4 * 63]
    assert [x["buffer_bytes"] for x in L] == [40, 0, 0, 0]
    assert L[2]["opt"] == 0.0  # the optimizer step skips frozen parameters
    assert [costs.static_bytes(x) for x in L] == [40.0, 3 * 4 * 220.0, 4 * 420.0, 3 * 4 * 63.0]
    old = {"param_bytes": 1000}  # a profile from before 2026-11-28: every parameter trainable
    assert costs.static_bytes(old) == 3000.0
    prof = two_stage_profile()
    for x, b in zip(prof["cpu"]["layers"], L + L[:2]):
        x.update({k: b[k] for k in ("param_bytes", "trainable_bytes", "buffer_bytes")})
    c = costs.build(prof, 16, [None, None], cuts=[3])
    assert c.info["static_bytes"] == [40.0 + 3 * 880 + 1680, 3 * 252 + 40 + 3 * 880]


def test_plan_umpipe_reads_a_profile(tmp_path, capsys):
    import json

    from host_agent.scheduling.umpipe import cli

    path = tmp_path / "prof.json"
    path.write_text(json.dumps(two_stage_profile()))
    out = tmp_path / "plan.json"
    assert cli.main(["--profile", str(path), "--batch", "16", "--mmax", "8", "--pop", "16", "--gens", "5",
                     "--json", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["B"] == 16 and plan["quotas"] == [0.5, 0.25]
    assert plan["umpipe"]["predicted_s"] <= min(plan["gpipe_best"]["predicted_s"],
                                                plan["one_f_one_b_best"]["predicted_s"]) + 1e-12
    assert all(sum(r) == 16 for r in plan["umpipe"]["rows"])
    # torch's schedules at counts torch runs (M divides B; 1F1B M >= S), by the same model
    tb = plan["torch_best"]
    assert 16 % len(tb["torch-gpipe"]["rows"][0]) == 0 and len(tb["torch-1f1b"]["rows"][0]) in (2, 4, 8)
    assert tb["torch-gpipe"]["predicted_s"] >= plan["gpipe_best"]["predicted_s"] - 1e-12
    text = capsys.readouterr().out
    assert "torch 1F1B best M" in text
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
    path.write_text(json.dumps(two_stage_profile()))
    assert cli.main(["--model", "vgg-mini", "--profile", str(path)]) == 2
    assert "profiles toy, not vgg-mini" in capsys.readouterr().err


def test_profile_refuses_more_stages_than_layers_before_timing_anything(tmp_path, capsys):
    from emulation.cli import main

    out = tmp_path / "p.json"
    # tests.testsupport.user_models:spec has 3 layers
    assert main(["profile", "--model", "tests.testsupport.user_models:spec", "--stages", "4", "--quota", "none",
                     "--out", str(out)]) == 2
    err = capsys.readouterr()
    assert "has 3 layers" in err.err and "cannot be cut into 4 stages" in err.err
    assert "profiling" not in err.out and not out.exists()  # nothing was timed
    assert main(["profile", "--model", "tests.testsupport.user_models:spec", "--stages", "2", "--quota", "none",
                     "--cuts", "3", "--out", str(out)]) == 2
    assert "need 1 increasing cuts within 1..2" in capsys.readouterr().err


def test_link_latency_is_measured_from_blocked_receivers():
    rows = [[2, 2], [4]]
    # stage 0 ends F0 at 1.0 and F1 at 2.0; stage 1 waits from 0.5 and starts F0 at 2.25
    # (it needs both of stage 0's microbatches); stage 1's B0 ends at 3.0, stage 0 waits for
    # its gradients from 2.1 and starts B1 at 3.5 -- and B0 right away (no wait: no sample)
    tr0 = [("F", 0, 0.0, 0.0, 1.0, 0.1), ("F", 1, 1.0, 1.0, 2.0, 0.1), ("B", 1, 2.1, 3.5, 4.0, 0.1),
           ("B", 0, 4.0, 4.0, 4.5, 0.1)]
    tr1 = [("F", 0, 0.5, 2.25, 2.5, 0.1), ("B", 0, 2.5, 2.5, 3.0, 0.1)]
    measured = [dict(traces=[[dict(ops=tr0, cpu_s=1.0)], [dict(ops=tr1, cpu_s=1.0)]])]
    lat, n = calibrate.link_latency([dict(rows=rows)], measured, 2)
    assert n == 2 and lat == pytest.approx(0.375)  # median of 0.25 and 0.5
    assert calibrate.link_latency([dict(rows=rows)], [dict(traces=[[dict(ops=[], cpu_s=0)]] * 2)], 2) == (None, 0)


def test_each_method_gets_the_same_number_of_model_chosen_candidates():
    from host_agent.scheduling.costmodel import PipelineCosts, equal_sizes
    from host_agent.scheduling.train import candidates, tuning
    from host_agent.scheduling.umpipe import family

    c = PipelineCosts.from_arrays(24, [0.004, 0.003, 0.006, 0.002], [0.002, 0.001, 0.004, 0.0015],
                                  send_lat=0.002, tail=0.01)
    c.info.update(static_bytes=[0.0] * 4, stash_bytes_per_sample=[1.0] * 4, cuts=[1, 2, 3])
    fam = family.plan(c, mmax=8, pop=16, gens=5, evals=100, dual_check=False, top=3)
    runs = candidates.candidate_runs(c, fam, list(candidates.SCHEDULES), 3, 8)
    by = {}
    for r in runs:
        by.setdefault(r["family"], []).append(r)
    # UMPIPE also measures, in our runtime, the equal split of every (order, count) a baseline
    # measures, so that no baseline can keep a configuration UMPIPE's tuning did not see
    extra = [r for r in by["umpipe"] if r.get("as_baseline")]
    by["umpipe"] = [r for r in by["umpipe"] if not r.get("as_baseline")]
    assert sorted(by) == sorted(candidates.SCHEDULES) and all(len(v) == 3 for v in by.values())
    measured = {(r["kind"], str([list(x) for x in r["rows"]])) for r in by["umpipe"] + extra}
    for f in candidates.BASELINES:
        for r in by[f]:
            assert (r["kind"], str([equal_sizes(24, r["M"])] * 4)) in measured, r["label"]
    assert extra and all(r["equal"] and r["schedule"] == "ours" for r in extra)
    assert len(measured) == len(by["umpipe"]) + len(extra)  # none measured twice
    assert runs.index(extra[0]) == runs.index(by["umpipe"][-1]) + 1  # listed with UMPIPE's own
    assert not any(r.get("as_baseline") for r in candidates.candidate_runs(c, fam, ["umpipe", "torch-1f1b"], 1, 8))
    # the same splits when UMPIPE runs alone: what it measures does not depend on the baselines
    # the session runs (a judge may time each schedule in a command of its own)
    alone = candidates.candidate_runs(c, fam, ["umpipe"], 3, 8)
    assert {(r["kind"], str(r["rows"])) for r in alone} == {(r["kind"], str(r["rows"])) for r in by["umpipe"] + extra}
    # with --microbatches a count torch cannot run (5 does not divide 24) only torch's splits are left out
    five = candidates.candidate_runs(c, fam, ["umpipe"], 3, 8, M=5)
    assert {r["as_baseline"] for r in five if r.get("as_baseline")} <= {"gpipe M=5", "1f1b M=5"}
    assert all(24 % r["M"] == 0 for f in ("torch-gpipe", "torch-1f1b") for r in by[f])
    assert all(r["M"] >= 4 for r in by["torch-1f1b"])
    for f in ("gpipe", "1f1b", "umpipe"):  # the model's best first
        assert [r["predicted_s"] for r in by[f]] == sorted(r["predicted_s"] for r in by[f])
    assert by["umpipe"][0]["predicted_s"] == pytest.approx(fam.best.predicted_s)
    # UMPIPE's best is unequal here (3,9,10,2 under 1F1B): its best equal split (6,6,6,6, the
    # same count) is measured beside it, though the count spread alone would leave it out
    safe = family.safe_plan(c, fam)
    assert not by["umpipe"][0]["equal"]
    assert [r for r in by["umpipe"] if r["rows"] == safe.rows and r["kind"] == safe.kind and r["equal"]]
    # an equal split's label names its count, as the ones measured beside a baseline do (the
    # tuning list shows no microbatches: "umpipe #2 1f1b" was 6,6 on every stage); unequal ones do not
    for r in by["umpipe"] + extra:
        assert r["label"].endswith(f" M={len(r['rows'][0])}") == r["equal"], r["label"]
    for f in ("gpipe", "1f1b", "umpipe"):  # spread over microbatch counts (UMPIPE: besides that equal split)
        n = sorted(max(len(r) for r in c["rows"]) for c in by[f] if f != "umpipe" or c["rows"] != safe.rows)
        assert all(b >= 1.5 * a for a, b in zip(n, n[1:])), (f, n)
    assert by["umpipe"][0]["predicted_s"] <= min(by["gpipe"][0]["predicted_s"], by["1f1b"][0]["predicted_s"]) + 1e-12
    # the summary pairs UMPIPE's iterations with the best baseline's, step by step
    pick = [by["umpipe"][0], by["gpipe"][0]]
    s = tuning.summarize(pick, [dict(iteration_s=[1.0, 1.0, 2.0], losses=[0.1]),
                             dict(iteration_s=[1.1, 0.9, 2.4], losses=[0.1])])
    v = s["umpipe_vs_best_baseline"]
    assert v["baseline"] == pick[1]["label"] and v["steps_won"] == 2 and v["steps"] == 3
    assert v["speedup_pct"] == pytest.approx(10.0) and v["paired_median_pct"] == pytest.approx(10.0)
    assert v["same_configuration"] is False


def test_the_paired_median_of_an_even_count_of_steps_is_symmetric():
    """An even number of paired steps (--steps 2): the middle two ratios' geometric mean. A step
    UMPIPE ran in a third of the baseline's time and one in three times it is a tie; the
    arithmetic mean of the ratios (statistics.median) called it +66.7 %, and with --steps 2
    printed "median +107.5%" beside a measured +16.4 %."""
    from host_agent.scheduling.train import tuning

    runs = [dict(schedule="ours", label="umpipe #1 fill-drain", family="umpipe", predicted_s=0.01, rows=[[7], [7]],
                 orders=[[("F", 0), ("B", 0)]] * 2, M=1),
            dict(schedule="torch-gpipe", label="torch-gpipe M=1", family="torch-gpipe", predicted_s=0.01, M=1)]
    v = tuning.summarize(runs, [dict(iteration_s=[0.01, 0.03], losses=[0.1]),
                                dict(iteration_s=[0.03, 0.01], losses=[0.1])])["umpipe_vs_best_baseline"]
    assert v["paired_median_pct"] == pytest.approx(0.0, abs=1e-9) and v["steps_won"] == 1
    v = tuning.summarize(runs, [dict(iteration_s=[0.0284, 0.0052], losses=[0.1]),
                                dict(iteration_s=[0.0215, 0.0176], losses=[0.1])])["umpipe_vs_best_baseline"]
    assert v["paired_median_pct"] == pytest.approx((math.sqrt(0.0215 / 0.0284 * 0.0176 / 0.0052) - 1) * 100)
    assert tuning.paired_median([0.5, 0.9, 1.2]) == pytest.approx(0.9)  # an odd count: the middle one


def test_a_configuration_two_methods_share_is_measured_once(monkeypatch):
    """UMPIPE's plan can be a baseline's equal split: one measurement for both, so the report
    shows a tie instead of the noise between two measurements of the same ops."""
    import argparse

    from host_agent.scheduling.costmodel import PipelineCosts
    from host_agent.scheduling.train import cli, tuning

    rows = [[4, 4]] * 2
    orders = [[("F", 0), ("F", 1), ("B", 0), ("B", 1)], [("F", 0), ("B", 0), ("F", 1), ("B", 1)]]
    runs = [dict(schedule="ours", label="umpipe #1 1f1b", family="umpipe", rows=rows, orders=orders, predicted_s=1.0),
            dict(schedule="ours", label="1f1b M=2", family="1f1b", M=2, rows=[list(r) for r in rows],
                 orders=[[list(o) for o in x] for x in orders], predicted_s=1.0),
            dict(schedule="ours", label="gpipe M=2", family="gpipe", M=2, rows=rows,
                 orders=[[("F", 0), ("F", 1), ("B", 1), ("B", 0)]] * 2, predicted_s=1.1),
            dict(schedule="torch-1f1b", label="torch-1f1b M=2", family="torch-1f1b", M=2, predicted_s=1.0)]
    launched = []

    def fake_run(cfg, quotas, timeout_s, stall_s):
        assert stall_s == 60.0  # --stall-timeout reaches the launcher
        launched.append([r["label"] for r in cfg.runs])
        return dict(runs=[dict(iteration_s=[1.0 + i / 10] * 3, losses=[0.1]) for i in range(len(cfg.runs))])

    monkeypatch.setattr(cli.launch, "run", fake_run)
    c = PipelineCosts.from_arrays(8, [0.004, 0.003], [0.002, 0.001])
    c.info["cuts"] = [1]
    args = argparse.Namespace(model="vgg-mini", batch=8, warmup=1, backend="gloo", seed=0, lead=1, stall_timeout=60.0)
    got = cli._session(c, args, runs, 3, [None, None])
    assert launched == [["umpipe #1 1f1b", "gpipe M=2", "torch-1f1b M=2"]]  # 1f1b M=2 is umpipe's run
    assert got[0] is got[1] and got[2] is not got[0]
    v = tuning.summarize(runs, got)["umpipe_vs_best_baseline"]
    assert v["baseline"] == "1f1b M=2" and v["same_configuration"]
    assert v["speedup_pct"] == 0.0 and v["steps_won"] == 0


def test_a_stale_profile_is_reported(capsys):
    """The session's times of the configurations the profile's calibration measured (our GPipe
    and 1F1B, same B, split and M) against the calibration's: measured over measured, no model.
    Beyond 10 % a warning says to profile again."""
    from host_agent.scheduling.train import cli, drift, tuning

    Q, RUN = [0.3, 0.3], dict(quotas=[0.3, 0.3], backend="gloo")
    prof = dict(calibration=dict(B=8, cuts=[1], quotas=Q, points=[dict(label="gpipe M=1", measured_s=1.0),
                                                        dict(label="1f1b M=2", measured_s=2.0),
                                                        dict(label="1f1b M=4", measured_s=3.0)]))
    rows = [dict(label="gpipe M=1", family="gpipe", measured_s=0.8),
            dict(label="1f1b M=2", family="1f1b", measured_s=1.5),
            dict(label="1f1b M=3", family="1f1b", measured_s=9.0),  # not calibrated: left out
            dict(label="umpipe #1 1f1b", family="umpipe", measured_s=9.0),
            dict(label="1f1b M=4", family="torch-1f1b", measured_s=9.0)]  # torch's, whatever its label
    d = drift.host_drift(prof, 8, [1], rows, **RUN)
    assert d["configurations"] == ["gpipe M=1", "1f1b M=2"] and d["median_pct"] == pytest.approx(-22.5)
    # UMPIPE's equal splits and torch's schedules are the calibration's configurations too
    # (a session of UMPIPE against torch's schedules compared nothing until 2026-11-28)
    cal3 = dict(prof, calibration=dict(prof["calibration"], points=prof["calibration"]["points"] + [
        dict(label="torch-gpipe M=2", measured_s=4.0)]))
    only = [dict(label="umpipe #4 1f1b M=4", family="umpipe", kind="1f1b", rows=[[2, 2, 2, 2]] * 2, measured_s=2.4),
            dict(label="umpipe #1 1f1b", family="umpipe", kind="1f1b", rows=[[3, 3, 2], [2, 2, 2, 2]], measured_s=1.0),
            dict(label="umpipe #2 fill-drain", family="umpipe", kind="fill-drain", rows=[[8]] * 2, measured_s=0.9),
            dict(label="torch-gpipe M=2", family="torch-gpipe", M=2, measured_s=3.2)]
    d3 = drift.host_drift(cal3, 8, [1], only, **RUN)
    assert d3["configurations"] == ["1f1b M=4", "gpipe M=1", "torch-gpipe M=2"]
    assert d3["median_pct"] == pytest.approx(-20.0)
    assert drift.host_drift(prof, 16, [1], rows, **RUN) is None and drift.host_drift(prof, 8, [2], rows, **RUN) is None
    assert drift.host_drift({}, 8, [1], rows, **RUN) is None
    # other quotas or another backend than the calibration's: not the same configurations (a run
    # at 0.3 CPU on a profile taken at 0.5 was "68 % slower: run saatp profile again")
    assert drift.host_drift(prof, 8, [1], rows, quotas=[0.5, 0.3], backend="gloo") is None
    assert drift.host_drift(prof, 8, [1], rows, quotas=Q, backend="saatp") is None
    assert drift.host_drift(dict(prof, backend="saatp"), 8, [1], rows, quotas=Q, backend="saatp") is not None
    s = tuning.summarize([dict(schedule="torch-1f1b", label="torch-1f1b M=2", family="torch-1f1b", M=2,
                            predicted_s=1.0)], [dict(iteration_s=[1.0] * 3, losses=[0.1])])
    out = dict(model="vgg-mini", stages=2, B=8, cuts=[1], quotas=[0.3, 0.3], load_average={}, profile="p.json",
               summary=s, tuning=None, host_drift=d)
    assert d["stale"] and (d["moved"], d["compared"]) == (2, 2)
    cli._print(out)
    assert "warning: this host ran the profile's calibration configurations (gpipe M=1, 1f1b M=2) 22.5% faster" \
        in capsys.readouterr().out
    out["host_drift"] = dict(d, configurations=["gpipe M=1", "1f1b M=2", "gpipe M=1"])  # tuning and final
    cli._print(out)
    assert "22.5% faster (median; 2 of 2 measurements outside the calibration's range)" in capsys.readouterr().out
    out["host_drift"] = dict(d, median_pct=6.0, stale=False)
    cli._print(out)
    assert "warning" not in capsys.readouterr().out
    # a small model's iterations run at full speed or throttled: 3 calibration iterations of
    # 4-34 ms; a session median inside what the calibration saw is no drift, however far from
    # its median
    noisy = dict(calibration=dict(B=8, cuts=[1], quotas=Q, points=[
        dict(label="gpipe M=1", measured_s=0.0047, iterations_s=[0.0047, 0.0039, 0.0341]),
        dict(label="gpipe M=2", measured_s=0.0165, iterations_s=[0.0387, 0.0116, 0.0165]),
        dict(label="1f1b M=2", measured_s=0.0103, iterations_s=[0.0106, 0.0099, 0.0103])]))
    rows = [dict(label="gpipe M=1", family="gpipe", measured_s=0.0089),
            dict(label="gpipe M=2", family="gpipe", measured_s=0.030),
            dict(label="1f1b M=2", family="1f1b", measured_s=0.0105)]
    d = drift.host_drift(noisy, 8, [1], rows, **RUN)
    assert abs(d["median_pct"]) > 10 and not d["stale"] and (d["moved"], d["compared"]) == (0, 3)
    rows[2]["measured_s"] = 0.015  # outside 9.9-10.6 ms and 46 % slower, but alone
    assert not drift.host_drift(noisy, 8, [1], rows, **RUN)["stale"]
    rows[1]["measured_s"] = 0.045  # two of three moved, the same way
    assert drift.host_drift(noisy, 8, [1], rows, **RUN)["stale"]


def test_a_measurement_shared_by_several_rows_counts_once_in_the_drift():
    """A session measures a configuration once for every row that runs it (UMPIPE's equal split
    and our GPipe at the same M): the drift's median and majority count that measurement once.
    Until 2026-11-28 a 5-stage MLP's tuning session, which measured 4 of the calibration's
    configurations, said "8 of 8 outside the calibration's range"; here a configuration three
    rows shared outvoted two that did not move."""
    from host_agent.scheduling.train import drift

    Q = [0.3, 0.3]
    prof = dict(calibration=dict(B=8, cuts=[1], quotas=Q, points=[
        dict(label="gpipe M=1", measured_s=1.0, iterations_s=[1.0, 1.0, 1.0]),
        dict(label="gpipe M=2", measured_s=1.0, iterations_s=[1.0, 1.0, 1.0]),
        dict(label="1f1b M=2", measured_s=1.0, iterations_s=[1.0, 1.0, 1.0])]))
    moved = [0.7, 0.7, 0.7]  # one measurement, 30 % faster
    rows = [dict(label="umpipe #1 fill-drain", family="umpipe", kind="fill-drain", rows=[[8]] * 2, measured_s=0.7,
                 iterations_s=moved),
            dict(label="gpipe M=1", family="gpipe", measured_s=0.7, iterations_s=moved),
            dict(label="umpipe #3 fill-drain M=1", family="umpipe", kind="fill-drain", rows=[[8]] * 2,
                 measured_s=0.7, iterations_s=moved),
            dict(label="gpipe M=2", family="gpipe", measured_s=1.0, iterations_s=[1.0, 1.0, 1.0]),
            dict(label="1f1b M=2", family="1f1b", measured_s=1.0, iterations_s=[1.0, 0.99, 1.0])]
    d = drift.host_drift(prof, 8, [1], rows, quotas=Q, backend="gloo")
    assert (d["compared"], d["moved"]) == (3, 1) and d["median_pct"] == pytest.approx(0.0) and not d["stale"]
    # the same configuration in another session (tuning, then final) is another measurement
    again = dict(rows[1], iterations_s=[0.69, 0.7, 0.71])
    assert drift.host_drift(prof, 8, [1], rows + [again], quotas=Q, backend="gloo")["compared"] == 4


def test_a_stale_profiles_predictions_are_scaled_by_the_tuning_sessions_drift(capsys):
    """The final session's predictions take the host speed the tuning session measured on the
    calibration's configurations, when the profile is stale; the model's own stay in the JSON."""
    from host_agent.scheduling.train import cli, drift, tuning

    runs = [dict(label="umpipe #1 1f1b", family="umpipe", predicted_s=0.140, schedule="ours", rows=[[6] * 4] * 3,
                 orders=[]),
            dict(label="torch-1f1b M=4", family="torch-1f1b", predicted_s=0.150, schedule="torch-1f1b", M=4)]
    assert drift.rescale_for_drift(runs, None) is None
    assert drift.rescale_for_drift(runs, dict(median_pct=-15.0, stale=False, configurations=[], compared=3,
                                            moved=1)) is None
    assert runs[0]["predicted_s"] == 0.140 and "predicted_profile_s" not in runs[0]
    k = drift.rescale_for_drift(runs, dict(median_pct=-15.0, stale=True, configurations=["1f1b M=4"], compared=3,
                                         moved=3))
    assert k["factor"] == pytest.approx(0.85)
    assert runs[0]["predicted_s"] == pytest.approx(0.119) and runs[0]["predicted_profile_s"] == 0.140
    s = tuning.summarize(runs, [dict(iteration_s=[0.12] * 3, losses=[0.1]), dict(iteration_s=[0.12] * 3, losses=[0.1])])
    row = s["runs"][0]
    assert row["error_pct"] == pytest.approx(-100 / 120) and row["error_profile_pct"] == pytest.approx(100 * 20 / 120)
    out = dict(model="gpt-mini", stages=3, B=24, cuts=[4, 5], quotas=[0.45, 0.2, 0.3], load_average={},
               candidates=3, tune_steps=5, summary=s, tuning=dict(runs=[], rescaled=k))
    cli._print(out)
    assert "the predictions below are the model's x 0.850, the drift" in capsys.readouterr().out
    # with the tuning session's rows, the model's error on the calibration's configurations is
    # the factor, not the drift: a model that matched the session is left as it is although its
    # calibration runs were slow (a digits MLP profiled under load: 0.72 made -0.7 % into -28 %)
    runs2 = [dict(label="umpipe #1 1f1b", family="umpipe", predicted_s=0.140, schedule="ours", rows=[[6] * 4] * 3,
                  orders=[])]
    tuned = [dict(label="1f1b M=4", family="1f1b", measured_s=0.100, predicted_s=0.101, iterations_s=[0.1]),
             dict(label="umpipe #2 1f1b M=4", family="umpipe", kind="1f1b", rows=[[6] * 4] * 3, measured_s=0.100,
                  predicted_s=0.101, iterations_s=[0.1]),  # the same measurement: counted once
             dict(label="gpipe M=2", family="gpipe", measured_s=0.2, predicted_s=0.19, iterations_s=[0.2]),
             dict(label="1f1b M=3", family="1f1b", measured_s=0.5, predicted_s=0.1, iterations_s=[0.5])]  # not compared
    k2 = drift.rescale_for_drift(runs2, dict(median_pct=-28.0, stale=True, configurations=["1f1b M=4", "gpipe M=2"],
                                           compared=2, moved=2), tuned, 24)
    assert k2["from_model_error"] and k2["factor"] == pytest.approx((0.100 / 0.101 + 0.2 / 0.19) / 2)
    assert runs2[0]["predicted_s"] == pytest.approx(0.140 * k2["factor"])


def test_a_methods_candidates_spread_over_microbatch_counts():
    from host_agent.scheduling.train.candidates import spread_by_count
    ms = [13, 14, 15, 12, 8, 4, 16, 2]  # fastest by the model first
    assert spread_by_count(ms, 3, lambda m: m) == [13, 8, 4]  # 13, then >= 1.5x away from all kept
    assert spread_by_count(ms, 1, lambda m: m) == [13]
    assert spread_by_count([5, 6, 7], 3, lambda m: m) == [5, 6, 7]  # too few spread ones: filled in model order
    assert spread_by_count([], 3, lambda m: m) == []


def test_umpipe_measures_its_equal_split_only_beside_an_unequal_best():
    from host_agent.scheduling.costmodel import PipelineCosts
    from host_agent.scheduling.train import candidates
    from host_agent.scheduling.umpipe import family

    c = PipelineCosts.from_arrays(24, [0.004, 0.003, 0.006, 0.002], [0.002, 0.001, 0.004, 0.0015],
                                  send_lat=0.002, tail=0.01)
    c.info.update(static_bytes=[0.0] * 4, stash_bytes_per_sample=[1.0] * 4, cuts=[1, 2, 3])
    fam = family.plan(c, mmax=8, pop=16, gens=5, evals=100, dual_check=False, top=3)
    safe = family.safe_plan(c, fam)
    assert safe is not None and family.is_equal_split(safe.rows)
    for k in (2, 3):
        got = candidates.umpipe_candidates(c, fam, k)
        assert len(got) == k and got[0].predicted_s == pytest.approx(fam.best.predicted_s)
        assert any(family.same_plan(x, safe) for x in got)
        assert [x.predicted_s for x in got] == sorted(x.predicted_s for x in got)
    assert len(candidates.umpipe_candidates(c, fam, 1)) == 1  # one candidate: the model's choice alone
    # an equal best needs no hedge: the candidates are the count spread's
    eq = family.PlanFamily(safe, None, None, fam.gpipe_best, fam.f1b_best, baselines=fam.baselines, top=[safe])
    pool = family.candidate_pool(c, eq)
    assert candidates.umpipe_candidates(c, eq, 3) == candidates.spread_by_count(pool, 3, lambda x: max(map(len, x.rows)))


def test_the_profiler_finds_the_smallest_microbatch_a_model_trains_on():
    from torch import nn

    from host_agent.scheduling.pipeline.models import ModelSpec
    from host_agent.scheduling.profile.measure import smallest_runnable
    spec = user_models.spec()
    assert smallest_runnable(spec, [1, 2, 4, 8]) == 2
    assert smallest_runnable(load_model("vgg-mini"), [1, 2]) == 1
    never = ModelSpec("needs-3-dims", lambda: nn.Sequential(nn.Conv2d(1, 1, 1)), spec.make_batch, spec.loss_sum)
    with pytest.raises(ValueError, match="trains on none of the microbatch sizes"):
        smallest_runnable(never, [1, 2])


def test_no_plan_has_a_microbatch_below_the_models_smallest():
    from host_agent.scheduling.umpipe import family
    prof = dict(two_stage_profile(), min_microbatch=3)
    c = costs.build(prof, 16, [0.5, 0.25], cuts=[3])
    assert c.info["min_microbatch"] == 3 and c.info["bmin"] == 3
    assert not family.evaluate(c, [[8, 6, 2], [16]], "1f1b").fits  # a 2-sample microbatch cannot run
    assert family.evaluate(c, [[8, 5, 3], [16]], "1f1b").fits
    fam = family.plan(c, mmax=8, pop=8, gens=3, evals=200, dual_check=False)
    for cand in [fam.best, *fam.top, *family.candidate_pool(c, fam)]:
        assert min(min(r) for r in cand.rows) >= 3, cand.rows
    assert all(not b.fits for b in fam.baselines if min(b.rows[0]) < 3)
    assert costs.build(two_stage_profile(), 16, [0.5, 0.25], cuts=[3]).info.get("min_microbatch") is None


def test_the_shape_probe_leaves_batchnorm_statistics_and_training_flags_alone():
    import torch

    from host_agent.scheduling.pipeline.models import build_layers, cut
    from host_agent.scheduling.pipeline.stage import stage_shapes
    spec = user_models.spec()
    stages = cut(build_layers(spec), [1])
    stages[1].eval()  # a user's choice the probe must keep
    bn = stages[0][0][1]
    before = (bn.running_mean.clone(), int(bn.num_batches_tracked))
    rng = torch.get_rng_state()
    # one sample: BatchNorm in training mode would refuse it
    assert stage_shapes(stages, spec.make_batch(1, 0)[0]) == [(16,), (4,)]
    assert torch.equal(bn.running_mean, before[0]) and int(bn.num_batches_tracked) == before[1]
    assert torch.equal(torch.get_rng_state(), rng)  # no Dropout draw
    assert stages[0].training and bn.training and not stages[1].training and not stages[1][0][1].training


@pytest.mark.slow
def test_profile_plan_and_train_a_model_that_needs_two_samples(tmp_path, capsys, monkeypatch):
    """saatp profile, then saatp train pipeline (ours and torch's schedules) on a BatchNorm
    model: no run uses a one-sample microbatch, and the commands finish. Every candidate is
    near enough for the run-off here: each method's are measured twice as often."""
    import json

    from emulation.cli import main
    from host_agent.scheduling.train import tuning
    monkeypatch.setattr(tuning, "RUNOFF_WITHIN", 100.0)
    model, prof, out = "tests.testsupport.user_models:spec", tmp_path / "prof.json", tmp_path / "train.json"
    assert main(["profile", "--model", model, "--stages", "2", "--quota", "none", "--sizes", "1,2,4,8",
                 "--batch", "8", "--min-time", "0.005", "--out", str(prof)]) == 0
    p = json.loads(prof.read_text())
    assert p["min_microbatch"] == 2 and p["sizes"] == [2, 4, 8]
    assert all(min(s["measured"]["sizes"]) >= 2 for s in p["calibration"]["stages"])
    # torch's schedules ran in the calibration too: check points, predicted with our curves
    assert {q["label"] for q in p["calibration"]["points"]} >= {"torch-gpipe M=2", "torch-1f1b M=4"}
    assert all(q["after_s"] > 0 for q in p["calibration"]["points"]) and "torch" not in p["calibration"]
    assert main(["train", "pipeline", "--model", model, "--stages", "2", "--quota", "none", "--batch", "8",
                 "--profile", str(prof), "--schedule", "umpipe", "--schedule", "1f1b", "--schedule", "torch-gpipe",
                 "--steps", "2", "--candidates", "2", "--tune-steps", "1", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    runs = res["summary"]["runs"]
    assert {r["family"] for r in runs} == {"umpipe", "1f1b", "torch-gpipe"}
    for r in runs + res["tuning"]["runs"]:
        assert (r.get("M") or 1) <= 4 and all(min(row) >= 2 for row in r.get("rows") or [[2]]), r
    ro = set(res["tuning"]["runoff"])
    by = {}
    for r in res["tuning"]["runs"]:
        by.setdefault(r["family"], []).append(r)
    # every method with two distinct configurations or more sent its fastest (up to 3) to the
    # run-off, and with them every candidate of any method that runs a finalist's configuration
    # (UMPIPE's fill-drain and 1F1B plans of one microbatch are one configuration)
    def config(r):
        return r["config"]

    finalists = set()
    for rs in by.values():
        keys = list(dict.fromkeys(config(r) for r in sorted(
            rs, key=lambda r: res["tuning"]["first_round_s"][r["label"]])))[:3]
        if len(keys) > 1:
            finalists |= set(keys)
    assert ro == {r["label"] for r in res["tuning"]["runs"] if config(r) in finalists} | (ro & {
        r["label"] for r in by["umpipe"] if r.get("equal")}) and ro
    assert all(len(r["iterations_s"]) == (2 if r["label"] in ro else 1) for r in res["tuning"]["runs"])
    # each method that held a run-off names its finalists, and keeps one of them
    fin = res["tuning"]["finalists"]
    assert fin and all(set(labels) <= ro and len(labels) >= 2 for labels in fin.values())
    kept = {r["family"]: r["label"] for r in res["summary"]["runs"]}
    assert all(kept[f] in labels for f, labels in fin.items() if f in kept)
    assert "trains on microbatches of 2 samples or more" in capsys.readouterr().out


def test_train_pipeline_refuses_a_profile_of_another_layer_count_and_a_batch_below_the_models_least(
        tmp_path, capsys):
    import json

    from emulation.cli import main
    from host_agent.scheduling.pipeline.models import build_layers
    n = len(build_layers(load_model("vgg-mini")))
    prof = dict(model="vgg-mini", format=2, cfs_period_s=0.01, min_microbatch=2,
                cpu=dict(overhead=0.0, layers=[layer(1e-4, 1e-5) for _ in range(n - 1)]),
                link=dict(latency=1e-3, per_byte=1e-9))
    path = tmp_path / "p.json"
    path.write_text(json.dumps(prof))
    args = ["train", "pipeline", "--model", "vgg-mini", "--stages", "2", "--quota", "none", "--profile", str(path)]
    assert main(args + ["--batch", "8"]) == 2
    assert f"profiles {n - 1} layers of vgg-mini, the model has {n} now" in capsys.readouterr().err
    prof["cpu"]["layers"].append(layer(1e-4, 1e-5))
    path.write_text(json.dumps(prof))
    assert main(args + ["--batch", "1"]) == 2
    assert "--batch 1: vgg-mini trains only on microbatches of 2 samples or more" in capsys.readouterr().err
    path.write_text("{\"model\": ")
    assert main(args + ["--batch", "8"]) == 2
    assert f"{path}:1:11: not a saatp profile (invalid JSON" in capsys.readouterr().err
    assert main(args[:-1] + [str(tmp_path / "none.json"), "--batch", "8"]) == 2
    assert "none.json: cannot read the profile" in capsys.readouterr().err
    del prof["cpu"]["layers"][0]["fit_fwd"]
    path.write_text(json.dumps(prof))
    assert main(args + ["--batch", "8"]) == 2
    assert f"{path}: not a complete saatp profile (KeyError: 'fit_fwd')" in capsys.readouterr().err


def test_a_profile_measured_with_another_backend_is_noted(tmp_path, capsys):
    import json

    from emulation.cli import main
    from host_agent.scheduling.pipeline.models import build_layers
    n = len(build_layers(load_model("vgg-mini")))
    prof = dict(model="vgg-mini", format=2, cfs_period_s=0.01, min_microbatch=1,
                cpu=dict(overhead=0.0, layers=[layer(1e-4, 1e-5) for _ in range(n)]),
                link=dict(latency=1e-3, per_byte=1e-9))
    path = tmp_path / "p.json"
    path.write_text(json.dumps(prof))  # no "backend": profiles before 2026-11-27 (22:00 UTC) measured with gloo
    # a memory limit that nothing meets ends the command right after the notes, before any process starts
    args = ["train", "pipeline", "--model", "vgg-mini", "--stages", "2", "--quota", "none", "--profile", str(path),
            "--batch", "8", "--memory-limit", "1e-6"]
    assert main(args + ["--backend", "saatp"]) == 2
    assert (f"note: {path} measured its link and calibration runs with gloo, this run uses saatp: "
            "saatp profile --backend saatp") in capsys.readouterr().out
    assert main(args) == 2
    assert "measured its link" not in capsys.readouterr().out


def test_the_profile_calibrates_again_on_the_split_its_calibration_implies(monkeypatch):
    """Six heavy layers, then three light ones: with the default fixed cost per op the
    slow-quota stage takes a light layer and the first stage all six heavy ones; the
    calibration measures a far smaller fixed cost, and the profile calibrates again on the
    split those costs give."""
    layers = [layer(0.0, 1e-5) for _ in range(6)] + [layer(0.0, 1e-7) for _ in range(3)]
    prof = dict(model="toy", format=2, cfs_period_s=0.01, cpu=dict(overhead=0.0, layers=layers),
                link=dict(latency=1e-3, per_byte=1e-9))
    quotas, calls, stalls = [0.3, 0.15, 0.3, 0.3], [], []

    def measured(c, model, quotas, steps=3, backend="gloo", prof=None, stall_s=None):
        calls.append(list(c.info["cuts"]))
        stalls.append(stall_s)
        st = dict(fwd=dict(alpha=1e-5), bwd=dict(alpha=1e-5))
        return dict(cuts=list(c.info["cuts"]), points=[dict(label="gpipe M=1")], stages=[st] * len(quotas))

    monkeypatch.setattr(calibrate, "calibrate", measured)
    cal = calibrate.calibrate_split(prof, "toy", quotas, 32, log=lambda msg: None, stall_s=7.0)
    assert calls[0] == [6, 7, 8] and len(calls) == 2 and calls[1][0] <= 3
    assert cal["cuts"] == calls[1] and cal["first_split"]["cuts"] == [6, 7, 8]
    assert stalls == [7.0, 7.0]  # the caller's stall limit reaches every calibration session
    calls.clear()
    assert calibrate.calibrate_split(prof, "toy", quotas, 32, cuts=[6, 7, 8])["cuts"] == [6, 7, 8]
    assert calls == [[6, 7, 8]]  # the user's split: calibrated once, kept


def test_train_pipeline_without_a_profile_calibrates_on_its_cuts(monkeypatch, capsys):
    """``saatp train pipeline --cuts C`` (no --profile) profiles with the calibration on C: the
    calibration on the chain DP's split (what it did until 2026-11-27 (22:00 UTC)) does not apply to C, so
    every prediction was silently uncalibrated (a 5-stage run: errors of -80 %)."""
    from emulation.cli import main
    from host_agent.scheduling.profile import cli as profile_cli
    seen = {}

    def fake_profile(model, quotas, **kw):
        seen.update(kw, stages=len(quotas))
        raise ValueError("profiled")

    monkeypatch.setattr(profile_cli, "run_profile", fake_profile)
    assert main(["train", "pipeline", "--model", "vgg-mini", "--stages", "3", "--quota", "none",
                 "--cuts", "2,7", "--batch", "30"]) == 2
    assert "profiled" in capsys.readouterr().err
    assert seen["stages"] == 3 and seen["cuts"] == [2, 7] and seen["B"] == 30 and seen["backend"] == "gloo"
    assert main(["train", "pipeline", "--model", "vgg-mini", "--stages", "2", "--quota", "none",
                 "--backend", "saatp"]) == 2
    assert seen["backend"] == "saatp"  # the link and calibration runs send as the training will


def _signal_link_rank(sig, box: dict) -> None:
    import os
    import time

    from host_agent.scheduling.progress import process_state
    from tests.testsupport.child_ranks import rank_pid
    pid = rank_pid("host_agent.scheduling.profile.link", 1, timeout_s=60)
    time.sleep(0.2)
    os.kill(pid, sig)
    box["pid"], box["t"] = pid, time.monotonic()
    if sig == __import__("signal").SIGSTOP:
        while (process_state(pid) or ("?",))[0] not in "T?":
            time.sleep(0.01)


@pytest.mark.parametrize("sig_name", ["SIGSTOP", "SIGKILL"])
def test_a_stopped_or_killed_link_rank_fails_the_link_measurement_soon(sig_name):
    """The link measurement of ``saatp profile`` (two processes, seconds of work) had no watch: a
    rank stopped or killed mid-way held the command for the process group's time-out (120 s) plus
    300 s, then failed with ``subprocess.TimeoutExpired``. Now a killed rank fails it at once,
    saying how it ended, and a stopped one within the limit, naming its state."""
    import os
    import signal
    import threading
    import time

    from host_agent.scheduling.profile.link import measure_link
    sig, box = getattr(signal, sig_name), {}
    t = threading.Thread(target=_signal_link_rank, args=(sig, box), daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(RuntimeError) as e:
            measure_link([4 << 10, 2 << 20, 8 << 20, 32 << 20], min_s=2.0, timeout_s=8.0, stall_s=None,
                         shares=False)
    finally:
        t.join(30)
        if "pid" in box and sig == signal.SIGSTOP:
            try:
                os.kill(box["pid"], signal.SIGCONT)
            except ProcessLookupError:
                pass
    took = time.monotonic() - t0
    if sig == signal.SIGSTOP:
        assert "did not finish within 8 s" in str(e.value) and "rank 1" in str(e.value), e.value
        assert "stopped (a signal)" in str(e.value) and took < 20
    else:
        assert "rank 1 (killed by SIGKILL)" in str(e.value) and time.monotonic() - box["t"] < 5, e.value
        # rank 0, killed by measure_link after rank 1 had ended (or failing on its own), read
        # "killed by SIGKILL" too until 2026-11-28
        assert "rank 0 (killed by SIGKILL)" not in str(e.value), e.value
    assert process_state(box["pid"]) is None or process_state(box["pid"])[0] in "ZX"


def test_umpipe_keeps_its_equal_split_unless_the_unequal_plan_passes_a_sign_test():
    from host_agent.scheduling.train import tuning

    runs = [dict(family="umpipe", label="umpipe #1", equal=False), dict(family="umpipe", label="umpipe #2", equal=True),
            dict(family="1f1b", label="1f1b M=4", equal=None), dict(family="1f1b", label="1f1b M=8", equal=None)]

    def rows(unequal, equal):
        its = [unequal, equal, equal, [x * 1.2 for x in equal]]
        return [dict(measured_s=sorted(i)[len(i) // 2], iterations_s=i) for i in its]

    # a lower median from 3 of 5 steps: not enough, the equal split is kept
    kept, choice = tuning.keep_tuned(runs, rows([1.0, 1.0, 1.0, 2.0, 2.0], [1.1, 1.1, 1.1, 0.9, 0.9]))
    assert [r["label"] for r in kept] == ["umpipe #2", "1f1b M=4"]
    assert choice["kept"] == "equal" and choice["unequal_steps_won"] == 3 and choice["steps"] == 5
    # 4 of 5 (sign test p = 0.19) is not enough either; 5 of 5 (p = 0.03) is
    kept, choice = tuning.keep_tuned(runs, rows([1.0, 1.0, 1.0, 1.0, 2.0], [1.1, 1.1, 1.1, 1.1, 1.1]))
    assert kept[0]["label"] == "umpipe #2" and choice["sign_test_p"] == pytest.approx(6 / 32)
    kept, choice = tuning.keep_tuned(runs, rows([1.0] * 5, [1.1] * 5))
    assert kept[0]["label"] == "umpipe #1" and choice["kept"] == "unequal"
    assert tuning.sign_test_p(9, 10) < 0.05 < tuning.sign_test_p(8, 10)
    # the equal split measured faster: nothing to decide
    kept, choice = tuning.keep_tuned(runs, rows([1.2] * 5, [1.1] * 5))
    assert kept[0]["label"] == "umpipe #2" and choice is None
    # no equal candidate: the fastest, as for every method
    kept, choice = tuning.keep_tuned(runs[:1] + runs[2:], rows([1.2] * 5, [1.1] * 5)[:1] + rows([1.2] * 5, [1.1] * 5)[2:])
    assert kept[0]["label"] == "umpipe #1" and choice is None
    # of two equal splits the faster-measured one is compared and kept (the first in the list
    # was, until 2026-11-28: gpt-mixed kept an equal split 6.5 % slower in the tuning)
    two = runs[:2] + [dict(family="umpipe", label="umpipe #3", equal=True)] + runs[2:]
    its = [[1.0] * 4 + [2.0], [1.3] * 5, [1.05] * 5, [1.1] * 5, [1.2] * 5]
    kept, choice = tuning.keep_tuned(two, [dict(measured_s=sorted(i)[2], iterations_s=i) for i in its])
    assert kept[0]["label"] == "umpipe #3" and choice["equal"] == "umpipe #3" and choice["unequal_steps_won"] == 4



def test_the_run_off_line_counts_distinct_configurations():
    from host_agent.scheduling.train import tuning
    runs = [dict(family="umpipe", label="umpipe #1 fill-drain", schedule="ours", rows=[[8], [8]], orders=[["F"]]),
            dict(family="umpipe", label="umpipe #2 1f1b", schedule="ours", rows=[[8], [8]], orders=[["F"]]),
            dict(family="torch-1f1b", label="torch-1f1b M=2", schedule="torch-1f1b", M=2)]
    assert tuning.runoff_line(runs, [0, 1, 2]) == "2 finalists (3 candidates)"
    assert tuning.runoff_line(runs, [0, 2]) == "2 finalists"
    assert tuning.runoff_line(runs, [0, 1]) == "1 finalist (2 candidates)"


def test_a_method_that_held_a_run_off_keeps_one_of_its_finalists():
    """After a run-off a method chooses among its finalists; a candidate that lost the first
    round keeps only its first-round median and must not win on it, nor be UMPIPE's equal
    split in the sign test (2026-11-28, gpt-mini: an equal split out of the run-off was paired
    with the unequal finalist over 5 steps instead of 10)."""
    from host_agent.scheduling.train import tuning

    runs = [dict(family="umpipe", label="umpipe #1", equal=True), dict(family="umpipe", label="umpipe #2", equal=False),
            dict(family="umpipe", label="umpipe #3", equal=True),
            dict(family="torch-1f1b", label="torch-1f1b M=4"), dict(family="torch-1f1b", label="torch-1f1b M=6")]
    first = [dict(measured_s=m) for m in (1.505, 1.483, 1.359, 1.40, 1.45)]
    contenders = tuning.runoff_contenders(runs, first)
    # umpipe: #3 (equal, fastest) and #2 within 10 %, #1 not; torch-1f1b: both
    assert contenders == {"umpipe": [2, 1], "torch-1f1b": [3, 4]}
    assert tuning.runoff_picks(runs, first) == [1, 2, 3, 4]
    # after the run-off: the finalists have 10 iterations, #1 its first round's 5
    its = [[1.505] * 5, [1.43] * 9 + [1.6], [1.506] * 10, [1.53] * 10, [1.52] * 5 + [1.51] * 5]
    tuned = [dict(measured_s=sorted(i)[len(i) // 2], iterations_s=i) for i in its]
    kept, choice = tuning.keep_tuned(runs, tuned, contenders)
    assert choice["equal"] == "umpipe #3" and choice["steps"] == 10 and choice["unequal_steps_won"] == 9
    assert [r["label"] for r in kept] == ["umpipe #2", "torch-1f1b M=6"]
    # without the contenders (no run-off was held) the least median of all wins, as before
    kept, choice = tuning.keep_tuned(runs, tuned)
    assert choice["equal"] == "umpipe #1" and choice["steps"] == 5
    # a method's loser of the first round does not come back on its first-round median
    tuned[4] = dict(measured_s=1.40, iterations_s=[1.40] * 5)
    contenders["torch-1f1b"] = [3]
    assert tuning.keep_tuned(runs, tuned, contenders)[0][1]["label"] == "torch-1f1b M=4"



def test_the_run_off_takes_each_methods_near_equal_finalists_and_umpipes_equal_split():
    """A method's candidates within 10 % of its fastest (at most 3) are measured again; one
    alone is not; UMPIPE's fastest equal split joins when an unequal plan leads."""
    from host_agent.scheduling.train import tuning

    runs = [dict(family="umpipe", label=f"umpipe #{i}", equal=i >= 4) for i in range(1, 6)] + \
        [dict(family="torch-1f1b", label=f"torch-1f1b M={m}") for m in (2, 4)] + \
        [dict(family="gpipe", label=f"gpipe M={m}") for m in (2, 4)]
    medians = [1.00, 1.05, 1.09, 1.30, 1.02, 2.0, 2.3, 3.0, 3.29]
    picks = tuning.runoff_picks(runs, [dict(measured_s=m) for m in medians])
    # umpipe: #1, #5 (equal, 1.02), #2 (1.05) -- #3 is the 4th within 10 %; torch-1f1b alone; gpipe both
    assert [runs[i]["label"] for i in picks] == ["umpipe #1", "umpipe #2", "umpipe #5", "gpipe M=2", "gpipe M=4"]
    # an unequal leader whose equal splits are all far behind still brings the fastest one
    medians[4] = 1.5
    picks = tuning.runoff_picks(runs, [dict(measured_s=m) for m in medians])
    assert [runs[i]["label"] for i in picks][:4] == ["umpipe #1", "umpipe #2", "umpipe #3", "umpipe #4"]
    # nothing close anywhere: no run-off (UMPIPE's sign test then pairs the tuning's steps)
    far = [1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.3, 3.0, 3.5]
    assert tuning.runoff_picks(runs, [dict(measured_s=m) for m in far]) == []
    # two candidates of one configuration (fill-drain and 1F1B of one microbatch each run the
    # same ops) are one finalist: alone, no run-off (until 2026-11-28 a session ran it against itself)
    one = [dict(family="umpipe", label="umpipe #1", schedule="ours", rows=[[13], [13]], orders=["F0 B0"] * 2),
           dict(family="umpipe", label="umpipe #2", schedule="ours", rows=[[13], [13]], orders=["F0 B0"] * 2),
           dict(family="umpipe", label="umpipe #3", schedule="ours", rows=[[7, 6], [7, 6]], orders=["x"] * 2)]
    assert tuning.runoff_picks(one, [dict(measured_s=m) for m in (1.0, 1.0, 1.5)]) == []
    # with another finalist, both copies are measured again (they read the same afterwards)
    assert tuning.runoff_picks(one, [dict(measured_s=m) for m in (1.0, 1.0, 1.05)]) == [0, 1, 2]
    # and so is another method's candidate of a finalist configuration (gpipe M=1 is UMPIPE's
    # one-microbatch plan: it read the first round alone while UMPIPE's copy read both rounds)
    gp = dict(family="gpipe", label="gpipe M=1", schedule="ours", rows=[[13], [13]], orders=["F0 B0"] * 2, M=1)
    gp2 = dict(gp, label="gpipe M=2", rows=[[7, 6], [7, 6]], orders=["y"] * 2, M=2)
    assert tuning.runoff_picks(one + [gp, gp2], [dict(measured_s=m) for m in (1.0, 1.0, 1.05, 1.0, 2.0)]) == [0, 1, 2, 3]
    # the merge appends the run-off's iterations, step by step, to its finalists' only
    tuned = [dict(iteration_s=[float(i)] * 2, losses=[0.5]) for i in range(len(runs))]
    merged = tuning.merge_runoff(tuned, [1, 3], [dict(iteration_s=[9.0, 8.0], losses=[0.4]),
                                              dict(iteration_s=[7.0, 6.0], losses=[])])
    assert merged[1]["iteration_s"] == [1.0, 1.0, 9.0, 8.0] and merged[1]["losses"] == [0.5, 0.4]
    assert merged[3]["iteration_s"] == [3.0, 3.0, 7.0, 6.0] and merged[0] is tuned[0]
    assert tuned[1]["iteration_s"] == [1.0, 1.0]  # not changed in place


def test_too_few_tuning_steps_for_the_sign_test_are_said(capsys):
    """With --tune-steps 3 an unequal plan that wins every step has p = 0.125: UMPIPE keeps its
    equal split whatever it measures. Until 2026-11-28 the line said only "an unequal plan needs
    p <= 0.05" (a CNN's unequal plan, 2 of 3 steps won)."""
    from host_agent.scheduling.train import cli, tuning

    assert tuning.sign_test_steps() == 5
    runs = [dict(family="umpipe", label="umpipe #1", equal=False), dict(family="umpipe", label="umpipe #2", equal=True)]
    for n, said in ((3, True), (5, False)):
        _, choice = tuning.keep_tuned(runs, [dict(measured_s=1.0, iterations_s=[1.0] * n),
                                          dict(measured_s=1.1, iterations_s=[1.1] * n)])
        assert choice["kept"] == ("equal" if n < 5 else "unequal")
        cli._print(dict(model="m", stages=2, B=8, cuts=[1], quotas=[0.3, 0.3], load_average={}, candidates=2,
                        tune_steps=n, tuning=dict(runs=[], umpipe_choice=choice), summary=dict(runs=[])))
        out = capsys.readouterr().out
        assert ("with 3 paired steps none can pass: --tune-steps 5 or more" in out) == said, out


def test_the_printed_sign_test_and_tuning_table_say_what_decided(capsys):
    """8 of 10 steps won is p = 0.0547: the line said "p = 0.05 ... needs p <= 0.05" (a
    held-out run's gpt-mini plan), which reads as a pass; a label longer than 22 characters
    pushed its row's figures out of their columns."""
    from host_agent.scheduling.train import cli, tuning

    runs = [dict(family="umpipe", label="umpipe #1", equal=False), dict(family="umpipe", label="umpipe #2", equal=True)]
    _, choice = tuning.keep_tuned(runs, [dict(measured_s=1.0, iterations_s=[1.0] * 8 + [1.2] * 2),
                                      dict(measured_s=1.1, iterations_s=[1.1] * 10)])
    assert choice["kept"] == "equal" and choice["unequal_steps_won"] == 8
    rows = [dict(label=lab, measured_s=0.1, predicted_s=0.1, error_pct=0.0)
            for lab in ("umpipe #4 fill-drain M=13", "torch-1f1b M=4")]
    cli._print(dict(model="m", stages=2, B=8, cuts=[1], quotas=[0.3, 0.3], load_average={}, candidates=2,
                    tune_steps=10, tuning=dict(runs=rows, umpipe_choice=choice), summary=dict(runs=[])))
    out = capsys.readouterr().out
    assert "sign test p = 0.0547" in out
    lines = [x for x in out.splitlines() if x.strip().startswith(("umpipe #4", "torch-1f1b"))]
    assert len(lines) == 2 and lines[0].index(" ms") == lines[1].index(" ms")


def test_the_split_leaves_out_stages_that_cannot_fit_the_memory_limit(tmp_path, capsys):
    """The split was chosen for time alone: under a memory limit that the time-best split's
    fullest stage cannot meet, every command said no plan fits while other splits fit."""
    import json

    from host_agent.scheduling.umpipe import cli as umpipe_cli
    from tests.testsupport.profiles import layer

    # three layers heavy in parameters (3 x 1e6 bytes each with gradients and momentum), all
    # equally fast: the time-best split puts four layers on the 0.5-CPU stage
    layers = [layer(1e-4, 1e-4, params=p, stash=100.0) for p in (1e6, 1e6, 1e6, 1e3, 1e3, 1e3)]
    prof = dict(model="toy", format=2, cfs_period_s=0.01, cpu=dict(overhead=1e-4, layers=layers),
                link=dict(latency=1e-3, per_byte=1e-9), stage_quotas=[0.5, 0.25])
    free = costs.choose_cuts(prof, [0.5, 0.25], 8)
    assert free[0] >= 3  # (the time-best split: all heavy layers on stage 0, over 7e6 bytes)
    limit = 7e6
    cut = costs.choose_cuts(prof, [0.5, 0.25], 8, limit_bytes=limit)
    assert costs.fits_at_all(prof, cut, 2, 8, limit) and not costs.fits_at_all(prof, free, 2, 8, limit)
    # a calibration on the time-best split is not used when a stage of it cannot fit
    prof["calibration"] = dict(B=8, cuts=free, quotas=[0.5, 0.25], stages=[])
    assert costs.build(prof, 8, [0.5, 0.25], limit_bytes=limit).info["cuts"] == cut
    assert costs.build(prof, 8, [0.5, 0.25]).info["cuts"] == free
    # no split fits: the split for time (and the commands say nothing fits)
    assert costs.choose_cuts(prof, [0.5, 0.25], 8, limit_bytes=1e3) == free
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(dict(prof, calibration=None)))
    args = ["--profile", str(path), "--batch", "8", "--mmax", "8", "--pop", "8", "--gens", "2", "--single"]
    assert umpipe_cli.main(args + ["--memory-limit", str(limit / 2**20)]) == 0  # it said no plan fits
    out = capsys.readouterr().out
    assert f"cuts {cut}" in out and "nothing fits" not in out


def test_our_gpipe_and_1f1b_at_one_microbatch_are_one_configuration_for_the_drift():
    """Our 1F1B at M = 1 is our GPipe at M = 1. The calibration times it under both labels (a
    held-out CNN's: 31.6/22.1/12.7 ms as GPipe, 17.6/7.9/9.8 ms as 1F1B); a session's 10.8 ms was
    compared with the GPipe label's alone, and every run on that fresh profile was told the host
    ran 51 % faster and to profile again. Both measurements are one configuration's now."""
    from host_agent.scheduling.train import drift

    Q, RUN = [0.3, 0.3], dict(quotas=[0.3, 0.3], backend="gloo")
    prof = dict(calibration=dict(B=8, cuts=[1], quotas=Q, points=[
        dict(label="gpipe M=1", measured_s=0.0221, iterations_s=[0.0316, 0.0221, 0.0127]),
        dict(label="1f1b M=1", measured_s=0.0098, iterations_s=[0.0176, 0.0079, 0.0098])]))
    for row in (dict(label="umpipe #1 fill-drain M=1", family="umpipe", kind="fill-drain", rows=[[8]] * 2),
                dict(label="umpipe #2 1f1b M=1", family="umpipe", kind="1f1b", rows=[[8]] * 2),
                dict(label="1f1b M=1", family="1f1b", M=1), dict(label="gpipe M=1", family="gpipe", M=1)):
        d = drift.host_drift(prof, 8, [1], [dict(row, measured_s=0.0108, iterations_s=[0.0108])], **RUN)
        assert d["configurations"] == ["gpipe M=1"] and not d["stale"], (row["label"], d)
        assert d["median_pct"] == pytest.approx((0.0108 / 0.01515 - 1) * 100)  # the median of the six
    # one measurement of the session, whichever labels ran it, counts once
    rows = [dict(label=lb, family=f, M=1, measured_s=0.050, iterations_s=[0.050]) for lb, f in
            (("gpipe M=1", "gpipe"), ("1f1b M=1", "1f1b"))]
    d = drift.host_drift(prof, 8, [1], rows, **RUN)
    assert d["compared"] == 1 and d["stale"]  # 50 ms: beyond every calibration iteration
    # torch's schedules at M = 1 are torch's own configurations
    assert drift.calibration_label(dict(label="torch-1f1b M=1", family="torch-1f1b", M=1), 8) == "torch-1f1b M=1"
