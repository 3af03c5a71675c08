"""What ``saatp train pipeline``, ``saatp profile`` and ``saatp plan umpipe --profile`` say about
odd option values, before anything runs; and a minibatch of one sample. Until 2026-11-28:
``--quota inf`` and ``--slow 1:inf`` failed with an OverflowError's traceback, ``nan`` as
"cuts [0, 0] do not split 5 layers into 3 stages", a stage given twice by ``--slow`` took the
last quota silently, ``--warmup -1`` failed with an IndexError's traceback, ``--microbatches 0``,
``--memory-limit 0``, ``plan umpipe --batch 0`` and ``--mmax 0`` meant the defaults, a negative
or nan ``--memory-limit`` "no schedule fits", and ``--batch 1`` "need at least two (size, time)
points"."""

import json

import pytest

from host_agent.scheduling.pipeline.cgroups import stage_quotas
from host_agent.scheduling.profile import costs
from host_agent.scheduling.profile.cli import parse_cuts, parse_quota
from tests.testsupport.profiles import six_layer_module, six_layer_profile, two_stage_profile


def _main_stopped(cli, args, stop) -> None:
    """``cli.main(args)`` in a run that ``stop`` ends: a KeyboardInterrupt goes on up (Ctrl-C),
    a failure is exit status 2."""
    if stop is KeyboardInterrupt:
        with pytest.raises(KeyboardInterrupt):
            cli.main(args)
    else:
        assert cli.main(args) == 2


def test_slow_quotas_must_be_finite_and_one_per_stage():
    assert stage_quotas(3, None, ["1:0.2", "2:4"]) == [None, 0.2, 4.0]  # above one core: allowed
    for bad, message in ((["1:nan"], "quota must be a number of CPUs > 0"),
                         (["1:inf"], "quota must be a number of CPUs > 0"),
                         (["1:0.2", "1:0.3"], r"--slow '1:0.3': stage 1 is already given a quota \(--slow 1:0.2\)")):
        with pytest.raises(ValueError, match=message):
            stage_quotas(3, None, bad)


def test_quota_and_cuts_name_their_option():
    assert parse_quota("none", 3) is None and parse_quota("0.25", 3) == 0.25
    for text, message in (("abc", "--quota abc: expected CPUs per stage"), ("nan", "--quota nan: must be"),
                          ("inf", "--quota inf: must be"), ("0", "--quota 0: must be")):
        with pytest.raises(ValueError, match=message):
            parse_quota(text, 3)
    assert parse_cuts("2,5") == [2, 5]
    with pytest.raises(ValueError, match="--cuts 2,x: expected comma-separated layer indices"):
        parse_cuts("2,x")


@pytest.mark.parametrize("args, message", [
    (["--quota", "inf"], "--quota inf: must be a number of CPUs > 0"),
    (["--quota", "none", "--slow", "1:inf"], "--slow '1:inf': quota must be a number of CPUs > 0"),
    (["--quota", "none", "--slow", "1:0.2", "--slow", "1:0.3"], "stage 1 is already given a quota"),
    (["--quota", "none", "--warmup", "-1"], "--warmup -1: expected a whole number >= 0"),
    # which of the counts was wrong, and its value, was not said until 2026-11-28
    (["--quota", "none", "--candidates", "0"], "--candidates 0: expected a whole number >= 1"),
    (["--quota", "none", "--tune-steps", "-3"], "--tune-steps -3: expected a whole number >= 1"),
    (["--quota", "none", "--steps", "0"], "--steps 0: expected a whole number >= 1"),
    (["--quota", "none", "--microbatches", "0"], "--microbatches 0: expected a whole number >= 1 or best"),
    (["--quota", "none", "--memory-limit", "0"], "--memory-limit 0: must be a number of MB"),
    (["--quota", "none", "--memory-limit", "nan"], "--memory-limit nan: must be a number of MB"),
    (["--quota", "none", "--cuts", "a,b"], "--cuts a,b: expected comma-separated layer indices"),
    # below the kernel's least cfs_quota_us (1 ms per 10 ms): raised to 0.1 CPU without a word
    (["--quota", "0.05"], "stage 0 has a CPU quota of 0.05 CPU, below 0.1 CPU, the least a cgroup takes"),
    (["--quota", "0.3", "--slow", "2:0.09"], "stage 2 has a CPU quota of 0.09 CPU, below 0.1 CPU"),
    # a count torch's schedules cannot run: after the profiling, naming neither option
    (["--quota", "none", "--batch", "10", "--microbatches", "4", "--schedule", "gpipe", "--schedule", "torch-gpipe"],
     "--microbatches 4: torch-gpipe splits the minibatch into M equal microbatches, so M must divide B=10 (--batch)"),
    (["--quota", "none", "--batch", "4", "--microbatches", "2", "--schedule", "torch-1f1b"],
     "--microbatches 2: torch-1f1b needs M >= the 3 stages"),
    # the stage count a run takes without --stages was not named ("cuts [1, 2] do not split 15
    # layers into 4 stages")
    (["--quota", "none", "--cuts", "4,9,12"], "--cuts 4,9,12 makes 4 stages, this run has 3 (--stages)"),
    (["--quota", "none", "--batch", "10", "--microbatches", "20", "--schedule", "gpipe"],
     "--microbatches 20: more microbatches than the minibatch's B=10 samples (--batch)"),
])
def test_train_pipeline_refuses_odd_values_before_anything_runs(args, message, capsys):
    from host_agent.scheduling.train import cli

    assert cli.main(["--model", "vgg-mini", "--stages", "3", *args]) == 2
    out = capsys.readouterr()
    assert message in out.err and "Traceback" not in out.err
    assert "profiling" not in out.out  # refused before the profiler started


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "--batch 0: expected a whole number >= 1"),
    (["--mmax", "0"], "--mmax 0: expected a whole number >= 1"),
    (["--memory-limit", "0"], "--memory-limit 0: must be a number of MB"),
    (["--memory-limit", "-2"], "--memory-limit -2: must be a number of MB"),
    (["--slow", "1:0.2", "--slow", "1:0.1"], "stage 1 is already given a quota"),
])
def test_plan_umpipe_refuses_odd_values(args, message, tmp_path, capsys):
    from host_agent.scheduling.umpipe import cli

    path = tmp_path / "prof.json"
    path.write_text(json.dumps(two_stage_profile()))
    assert cli.main(["--profile", str(path), "--pop", "8", "--gens", "2", *args]) == 2
    assert message in capsys.readouterr().err


def test_a_minibatch_of_one_sample_is_planned(tmp_path, capsys):
    c = costs.build(two_stage_profile(), 1, [0.5, 0.25], cuts=[3])
    assert float(c.tf(0, 1)) > 0
    from host_agent.scheduling.umpipe import cli

    path, out = tmp_path / "prof.json", tmp_path / "plan.json"
    path.write_text(json.dumps(two_stage_profile()))
    assert cli.main(["--profile", str(path), "--batch", "1", "--pop", "8", "--gens", "2", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["umpipe"]["rows"] == [[1], [1]]


def test_result_files_go_into_a_new_directory_and_a_directory_is_refused_up_front(tmp_path, capsys):
    """``--json``/``--out`` in a directory that does not exist failed with a traceback after the
    whole run (its result lost); the directory is now made, and a path that is a directory is
    refused before anything runs."""
    from emulation.cli import main
    from tests.testsupport.profiles import layer

    model = "tests.testsupport.user_models:spec"  # 3 layers, microbatches of 2 samples or more
    prof = dict(model=model, format=2, cfs_period_s=0.01, min_microbatch=2, stage_quotas=[None, None],
                cpu=dict(overhead=1e-4, layers=[layer(1e-4, 1e-5) for _ in range(3)]),
                link=dict(latency=1e-4, per_byte=1e-9))
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(prof))
    train = ["train", "pipeline", "--model", model, "--stages", "2", "--quota", "none", "--profile", str(path),
             "--batch", "3", "--schedule", "gpipe", "--schedule", "torch-1f1b", "--steps", "1", "--candidates", "1"]
    assert main(train + ["--json", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert f"--json {tmp_path}: is a directory" in out.err and "running" not in out.out
    assert main(["profile", "--model", model, "--stages", "2", "--quota", "none", "--out", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert f"--out {tmp_path}: is a directory" in out.err and "profiling" not in out.out
    assert main(["plan", "umpipe", "--profile", str(path), "--json", str(tmp_path)]) == 2
    assert f"--json {tmp_path}: is a directory" in capsys.readouterr().err

    res = tmp_path / "new" / "sub" / "train.json"
    assert main(train + ["--json", str(res)]) == 0
    assert json.loads(res.read_text())["summary"]["runs"][0]["family"] == "gpipe"
    # torch-1f1b's only count at B=3 on 2 stages is M=3, one-sample microbatches: the note says so
    assert "left out torch-1f1b" in (out := capsys.readouterr().out) and "at least 2 samples" in out
    plan = tmp_path / "new2" / "plan.json"
    assert main(["plan", "umpipe", "--pop", "8", "--gens", "2", "--json", str(plan)]) == 0  # a named scenario
    assert json.loads(plan.read_text())["umpipe"]["makespan"] > 0


@pytest.mark.parametrize("command", [["profile", "--out", "p.json"], ["train", "pipeline"]])
def test_no_stages_at_the_default_quota_is_refused_by_name(command, tmp_path, monkeypatch, capsys):
    """``--stages 0`` without ``--quota`` (``auto``: the cores shared out over the stages)
    failed with a ZeroDivisionError's traceback until 2026-11-28."""
    from emulation.cli import main

    monkeypatch.chdir(tmp_path)
    assert main([*command, "--model", "vgg-mini", "--stages", "0"]) == 2
    got = capsys.readouterr()
    assert "--stages must be >= 1" in got.err and "Traceback" not in got.err and "profiling" not in got.out


@pytest.mark.parametrize("args", [["--batch", "0"], ["--batch", "-4"], ["--min-time", "0"], ["--min-time", "nan"]])
def test_profile_refuses_a_batch_or_timing_loop_below_one_before_anything_runs(args, tmp_path, capsys):
    """``--batch 0`` skipped the calibration without a word; ``-4`` failed after the layers and the
    link were measured."""
    from emulation.cli import main

    out = tmp_path / "p.json"
    assert main(["profile", "--model", "vgg-mini", "--stages", "2", "--quota", "none", "--out", str(out), *args]) == 2
    got = capsys.readouterr()
    assert "--batch must be >= 1 and --min-time > 0 seconds" in got.err and "profiling" not in got.out
    assert not out.exists()


@pytest.mark.parametrize("command", [["profile", "--out", "p.json"], ["train", "pipeline"]])
def test_a_batch_the_calibration_cannot_split_is_refused_before_the_layers_are_timed(command, tmp_path,
                                                                                      monkeypatch, capsys):
    """``saatp profile --batch 1`` (and ``train pipeline --batch 1`` without ``--profile``) timed
    the layers and the link, then failed with "the calibration needs two microbatch counts whose
    microbatches hold >= 1 samples (B = 1)", naming neither the option nor a way out."""
    from emulation.cli import main
    from host_agent.scheduling.profile.calibrate import check_calibration_batch

    monkeypatch.chdir(tmp_path)
    assert main([*command, "--model", "vgg-mini", "--stages", "2", "--quota", "none", "--batch", "1"]) == 2
    got = capsys.readouterr()
    assert "--batch 1: the calibration runs need two microbatch counts" in got.err and "B >= 2" in got.err
    assert "--no-calibrate" in got.err and "profiling" not in got.out and not (tmp_path / "p.json").exists()
    check_calibration_batch(2)
    check_calibration_batch(4, least=2)
    with pytest.raises(ValueError, match=r"--batch 3: .* at least 2 samples each .* B >= 4; give --batch 4"):
        check_calibration_batch(3, least=2)


def test_plan_umpipe_says_when_the_batch_is_below_the_models_least_microbatch(tmp_path, capsys):
    """Every plan was "(nothing fits)", exit 1, with no reason."""
    from host_agent.scheduling.umpipe import cli

    prof = two_stage_profile()
    prof["min_microbatch"] = 2
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(prof))
    assert cli.main(["--profile", str(path), "--batch", "1", "--pop", "8", "--gens", "2"]) == 2
    assert "--batch 1: toy trains only on microbatches of 2 samples or more" in capsys.readouterr().err
    assert cli.main(["--profile", str(path), "--batch", "2", "--pop", "8", "--gens", "2"]) == 0


def test_a_result_file_that_is_the_profile_is_refused(tmp_path, capsys):
    """``--json`` naming the ``--profile`` file replaced the profile with the result."""
    from emulation.cli import main

    path = tmp_path / "prof.json"
    text = json.dumps(two_stage_profile())
    path.write_text(text)
    assert main(["plan", "umpipe", "--profile", str(path), "--json", str(tmp_path / "." / "prof.json")]) == 2
    assert "is the --profile file: the result would overwrite the profile" in capsys.readouterr().err
    assert main(["train", "pipeline", "--model", "vgg-mini", "--profile", str(path), "--json", str(path),
                 "--quota", "none", "--stages", "2"]) == 2
    assert "is the --profile file" in capsys.readouterr().err
    assert path.read_text() == text


def test_train_pipelines_json_records_what_chose_the_candidates(tmp_path, monkeypatch, capsys):
    """The JSON said which schedules were left out, not why, and nothing of --memory-limit,
    --mmax, --microbatches or --seed: a run under a memory limit read back like one without."""
    from emulation.cli import main
    from host_agent.scheduling.train import cli

    model, prof = six_layer_profile(tmp_path, monkeypatch)
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: dict(runs=[dict(iteration_s=[0.01, 0.011], losses=[1.0])
                                                                     for _ in cfg.runs]))
    out = tmp_path / "train.json"
    assert main(["train", "pipeline", "--model", model, "--stages", "2", "--quota", "none",
                 "--profile", str(prof), "--batch", "6", "--schedule", "gpipe", "--schedule", "torch-1f1b",
                 "--mmax", "1", "--memory-limit", "100", "--candidates", "1", "--steps", "2", "--seed", "3",
                 "--json", str(out)]) == 0
    assert "note: left out torch-1f1b" in capsys.readouterr().out
    got = json.loads(out.read_text())
    assert got["left_out"] == ["torch-1f1b"] and "torch-1f1b also M >= the stage count" in got["left_out_because"][0]
    assert "the memory limits" in got["left_out_because"]
    assert (got["memory_limit_mb"], got["mmax"], got["microbatches"], got["seed"]) == (100.0, 1, None, 3)


def _profiled_six_layers(tmp_path, monkeypatch):
    """A six-layer MODULE:FN with a two-stage profile of its own parameter bytes, and train
    pipeline's args on it with the stages' runs faked (10 ms iterations): (model, profile, its
    path, args)."""
    from host_agent.scheduling.pipeline.models import build_layers, load_model
    from host_agent.scheduling.train import cli

    model = six_layer_module(tmp_path, monkeypatch)
    prof = dict(two_stage_profile(), model=model)
    for rec, layer in zip(prof["cpu"]["layers"], build_layers(load_model(model))):
        rec["param_bytes"] = sum(p.numel() * 4 for p in layer.parameters())
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(prof))
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: dict(runs=[dict(iteration_s=[0.01], losses=[1.0])
                                                                     for _ in cfg.runs]))
    args = ["train", "pipeline", "--model", model, "--stages", "2", "--quota", "none", "--profile", str(path),
            "--batch", "6", "--schedule", "gpipe", "--candidates", "1", "--steps", "1"]
    return model, prof, path, args


def test_train_pipeline_says_when_the_profile_is_of_a_changed_model(tmp_path, monkeypatch, capsys):
    """A model made wider since it was profiled keeps its layer count; its profile's times were
    taken as this model's without a word."""
    from emulation.cli import main

    model, prof, path, args = _profiled_six_layers(tmp_path, monkeypatch)
    assert main(args) == 0
    assert "profiled another" not in capsys.readouterr().out
    prof["cpu"]["layers"][2]["param_bytes"] = 4 * (8 * 12 + 8)  # a Linear(12, 8) then
    path.write_text(json.dumps(prof))
    assert main(args) == 0
    assert (f"note: {path} profiled another {model} (layer 2 (Linear): 624 parameter bytes, the profile 416): its "
            f"times are not this model's; run saatp profile again") in capsys.readouterr().out
    # a layer that was frozen when profiled (its times have no weight gradients), trainable now
    prof["cpu"]["layers"][2]["param_bytes"] = 624
    prof["cpu"]["layers"][2]["trainable_bytes"] = 0
    path.write_text(json.dumps(prof))
    assert main(args) == 0
    assert (f"note: {path} profiled another {model} (layer 2 (Linear): 624 trainable parameter bytes "
            f"(requires_grad), the profile 0)") in capsys.readouterr().out


def test_the_no_fit_message_gives_a_small_models_least_memory_in_figures():
    """A model of a few kB was told it needed "0.0 MB" against a limit of 0.001 MB."""
    from host_agent.scheduling.umpipe import family

    c = costs.build(two_stage_profile(), 1, [0.5, 0.25])
    msg = family.no_fit_message(c, 0.001, 16)
    assert msg.startswith("no plan fits the memory limit of 0.001 MB per stage; the least a plan of at most 16 "
                          "microbatches needs is 0.0") and " 0.0 MB" not in msg
    assert msg.endswith("(1F1B, microbatches of 1 sample)")  # "of 1 sample or fewer" until 2026-11-28


def test_train_pipeline_says_when_it_runs_other_quotas_than_the_profiles(tmp_path, monkeypatch, capsys):
    """plan umpipe --profile plans for the profile's quotas; train pipeline --profile without
    --quota/--slow ran 'auto' quotas instead, without a word."""
    from emulation.cli import main
    from host_agent.scheduling.train import cli

    model, path = six_layer_profile(tmp_path, monkeypatch)  # quotas 0.5 and 0.25
    quotas = []
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: quotas.append(kw["quotas"]) or dict(
        runs=[dict(iteration_s=[0.01], losses=[1.0]) for _ in cfg.runs]))
    args = ["train", "pipeline", "--model", model, "--stages", "2", "--profile", str(path), "--batch", "6",
            "--schedule", "gpipe", "--candidates", "1", "--steps", "1"]
    assert main(args + ["--quota", "0.5", "--slow", "1:0.25"]) == 0
    assert "are not those" not in capsys.readouterr().out and quotas[-1] == [0.5, 0.25]
    assert main(args + ["--quota", "0.4"]) == 0
    assert (f"note: this run's CPU quotas [0.4, 0.4] are not those {path} was measured with ([0.5, 0.25], what "
            f"saatp plan umpipe --profile plans for); --quota and --slow set them") in capsys.readouterr().out


def test_umpipes_reported_plan_is_always_among_its_measured_candidates():
    """plan umpipe reports fam.best (of near-ties, the fewest microbatches); train pipeline's
    UMPIPE candidates started from the pool's fastest prediction, so a near-tie with more
    microbatches could leave the reported plan unmeasured (and --candidates 1 ran another)."""
    from host_agent.scheduling.costmodel import PipelineCosts
    from host_agent.scheduling.train import candidates
    from host_agent.scheduling.umpipe import family

    c = PipelineCosts.from_arrays(24, [0.004, 0.003, 0.006, 0.002], [0.002, 0.001, 0.004, 0.0015],
                                  send_lat=0.002, tail=0.01)
    c.info.update(static_bytes=[0.0] * 4, stash_bytes_per_sample=[1.0] * 4, cuts=[1, 2, 3])
    fam = family.plan(c, mmax=8, pop=16, gens=5, evals=100, dual_check=False, top=3)
    pool = family.candidate_pool(c, fam)
    # a family whose reported best is not the fastest prediction of its pool (a near-tie won by
    # the fewer microbatches)
    slower = pool[1]
    fam2 = family.PlanFamily(slower, None, None, fam.gpipe_best, fam.f1b_best, baselines=fam.baselines, top=fam.top)
    assert not family.same_plan(candidates.spread_by_count(pool, 1, lambda x: max(map(len, x.rows)))[0], slower)
    assert family.same_plan(candidates.umpipe_candidates(c, fam2, 1)[0], slower)  # --candidates 1: the model's choice
    for k in (2, 3):
        got = candidates.umpipe_candidates(c, fam2, k)
        assert any(family.same_plan(x, slower) for x in got) and len(got) == k
        assert [x.predicted_s for x in got] == sorted(x.predicted_s for x in got)


def test_stages_that_may_use_more_cpus_than_the_host_has_are_noted(tmp_path, monkeypatch, capsys):
    """The cost model predicts each stage at its quota; stages that together may use more CPUs
    than the host has share the cores when they compute at once (15 stages without quotas on 2
    cores ran 80 % slower than predicted), and nothing said so."""
    from emulation.cli import main
    from host_agent.scheduling.pipeline.cgroups import oversubscribed
    from host_agent.scheduling.train import cli

    assert oversubscribed([0.5, 0.5, 0.5, 0.5], cores=2) is None
    assert oversubscribed([0.3, 4.0], cores=2) is None  # above one CPU: one core (one thread)
    assert oversubscribed([None, None, 0.5], cores=2).startswith(
        "note: the 3 stages may use 2.5 CPUs together (a stage without a quota, or above one CPU, one core) on a host "
        "of 2 cores")
    model, path = six_layer_profile(tmp_path, monkeypatch)
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: dict(runs=[dict(iteration_s=[0.01], losses=[1.0])
                                                                     for _ in cfg.runs]))
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    args = ["train", "pipeline", "--model", model, "--stages", "2", "--profile", str(path), "--batch", "6",
            "--schedule", "gpipe", "--candidates", "1", "--steps", "1"]
    assert main(args + ["--quota", "0.5"]) == 0
    assert "may use" not in capsys.readouterr().out
    assert main(args + ["--quota", "none"]) == 0
    assert "note: the 2 stages may use 2 CPUs together" in capsys.readouterr().out
    # plan umpipe --profile plans for those quotas too: it said nothing until 2026-11-28
    plan = ["plan", "umpipe", "--profile", str(path), "--batch", "6", "--pop", "8", "--gens", "2"]
    assert main(plan) == 0  # the profile's quotas, 0.5 and 0.25: 0.75 CPU on the one core
    assert "may use" not in capsys.readouterr().out
    assert main(plan + ["--slow", "0:0.9", "--slow", "1:0.9"]) == 0
    assert ("note: the 2 stages may use 1.8 CPUs together (a stage without a quota, or above one CPU, one core) on a "
            "host of 1 cores" in (out := capsys.readouterr().out) and "--slow (or a profile taken at lower quotas) "
            "keeps the sum within the cores" in out)


def test_a_quota_below_what_a_cgroup_takes_is_refused_not_raised(tmp_path, capsys):
    """The kernel takes no cfs_quota_us below 1 ms: a quota below 0.1 CPU (10 ms period) was
    written as 1 ms without a word, and a stage given 0.05 CPU ran at 0.1 while the cost model
    predicted it at 0.05 (2026-11-28: measured 10.2 ms, predicted 32.6). ``--quota auto`` stays
    at 0.1 or more however many stages."""
    from emulation.cli import main
    from host_agent.scheduling.pipeline import cgroups

    cgroups.check_settable([0.1, None, 0.25, 2.0])
    with pytest.raises(ValueError, match="stage 1 has a CPU quota of 0.099 CPU, below 0.1 CPU"):
        cgroups.check_settable([0.3, 0.099])
    with pytest.raises(ValueError, match="a CPU quota of 0.05 CPU, below 0.1 CPU"):
        cgroups.CpuQuotas(prefix="saatp-test-never-made").create("x", 0.05)
    assert cgroups.default_quota(40) == 0.1 and cgroups.default_quota(1) <= 1.0
    out = tmp_path / "p.json"
    assert main(["profile", "--model", "vgg-mini", "--quota", "0.3", "--slow", "1:0.05", "--out", str(out)]) == 2
    assert "stage 1 has a CPU quota of 0.05 CPU" in capsys.readouterr().err and not out.exists()


def test_train_pipeline_on_a_profile_trains_the_profiles_batch_by_default(tmp_path, monkeypatch, capsys):
    """plan umpipe --profile plans for the profile's calibration B; train pipeline --profile
    without --batch trained B = 64 instead, without a word."""
    from emulation.cli import main
    from host_agent.scheduling.train import cli

    cal = dict(B=10, cuts=[1], quotas=[0.9, 0.9], stages=[])  # another split's: applies to nothing here
    model, path = six_layer_profile(tmp_path, monkeypatch, calibration=cal)
    Bs = []
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: Bs.append(cfg.B) or dict(
        runs=[dict(iteration_s=[0.01], losses=[1.0]) for _ in cfg.runs]))
    args = ["train", "pipeline", "--model", model, "--stages", "2", "--quota", "0.5", "--slow", "1:0.25",
            "--schedule", "gpipe", "--candidates", "1", "--steps", "1", "--json", str(tmp_path / "t.json")]
    assert main(args + ["--profile", str(path)]) == 0
    assert Bs == [10] and json.loads((tmp_path / "t.json").read_text())["B"] == 10
    assert main(args + ["--profile", str(path), "--batch", "6"]) == 0 and Bs[-1] == 6
    path.write_text(json.dumps(dict(two_stage_profile(), model=model)))  # no calibration: the default
    assert main(args + ["--profile", str(path)]) == 0 and Bs[-1] == cli.DEFAULT_BATCH == 64


@pytest.mark.parametrize("times", [[0.005, 0.034], [0.02, 0.01, 0.05], [0.3, 0.1, 0.2, 0.9, 0.4]])
def test_the_reported_quartiles_lie_between_the_least_and_the_most_time_measured(times):
    # --steps 2 reported q1..q3 "-3.5..42.6" ms for iterations of 5.3 and 34 ms (extrapolated)
    from host_agent.scheduling.train import tuning

    sp = tuning.spread_of(times)
    assert min(times) <= sp["q1_s"] <= sp["median_s"] <= sp["q3_s"] <= max(times)
    assert (sp["min_s"], sp["max_s"], sp["n"]) == (min(times), max(times), len(times))


def test_train_pipeline_on_a_profile_runs_its_stages_and_quotas_by_default(tmp_path, monkeypatch, capsys):
    """plan umpipe --profile plans for the profile's stages and quotas; train pipeline --profile
    without --stages and --quota ran 4 stages at 'auto' quotas (with a note)."""
    from emulation.cli import main
    from host_agent.scheduling.train import cli

    model, path = six_layer_profile(tmp_path, monkeypatch)  # 2 stages, quotas 0.5 and 0.25
    quotas = []
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: quotas.append(kw["quotas"]) or dict(
        runs=[dict(iteration_s=[0.01], losses=[1.0]) for _ in cfg.runs]))
    args = ["train", "pipeline", "--model", model, "--profile", str(path), "--batch", "6", "--schedule", "gpipe",
            "--candidates", "1", "--steps", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert quotas[-1] == [0.5, 0.25] and "2 stages" in out and "are not those" not in out
    assert main(args + ["--slow", "1:0.3"]) == 0 and quotas[-1] == [0.5, 0.3]  # --slow overrides one
    assert main(args + ["--quota", "0.4"]) == 0 and quotas[-1] == [0.4, 0.4]  # --quota: every stage
    assert main(args + ["--stages", "3", "--cuts", "2,4"]) == 0 and len(quotas[-1]) == 3  # not the profile's: auto
    assert "are not those" in capsys.readouterr().out
    # --cuts for 3 stages without --stages: the profile's 2 ("cuts [2, 4] do not split 6 layers
    # into 2 stages" until 2026-11-28, naming neither where the 2 came from nor the option)
    assert main(args + ["--cuts", "2,4"]) == 2
    assert ("--cuts 2,4 makes 3 stages, this run has 2 (without --stages: the --profile's stage count, else 4)"
            in capsys.readouterr().err)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_or_failed_final_session_keeps_the_tuning_sessions_measurements(stop, tmp_path, monkeypatch,
                                                                                       capsys):
    """A Ctrl-C or a failed stage in the final session lost the tuning session (minutes of
    measurements) until 2026-11-28; in the run-off, the first tuning session is kept."""
    from host_agent.scheduling.train import cli

    model, path = six_layer_profile(tmp_path, monkeypatch)
    for phase, stop_at in (("final session", 3), ("run-off", 2)):
        sessions = []

        def fake_run(cfg, **kw):
            sessions.append(len(cfg.runs))
            if len(sessions) == stop_at:  # the tuning session, the run-off (all alike), the final
                raise stop("stage 1 (exit status 1) ended the run")
            return dict(runs=[dict(iteration_s=[0.01, 0.012], losses=[1.0, 1.0]) for _ in cfg.runs])

        monkeypatch.setattr(cli.launch, "run", fake_run)
        out = tmp_path / "res" / phase / "t.json"
        args = ["--model", model, "--profile", str(path), "--batch", "6", "--schedule", "gpipe", "--schedule",
                "1f1b", "--candidates", "2", "--tune-steps", "2", "--steps", "2", "--json", str(out)]
        _main_stopped(cli, args, stop)
        assert len(sessions) == stop_at
        got = json.loads(out.read_text())
        assert got["summary"] is None and len(got["tuning"]["runs"]) >= 3 and got["B"] == 6
        # the run-off's finalists have both sessions' iterations; an interrupted run-off, the first's
        ro = set(got["tuning"].get("runoff", []))
        assert bool(ro) == (phase == "final session")  # all measured alike: every candidate is a finalist
        assert all(len(r["iterations_s"]) == (4 if r["label"] in ro else 2) for r in got["tuning"]["runs"])
        err = capsys.readouterr().err
        if stop is KeyboardInterrupt:
            assert got["interrupted"] == phase
            assert f"interrupted during the {phase}; the tuning session's measurements are in {out}" in err
        else:
            assert got["failed"] == phase and got["error"] == "stage 1 (exit status 1) ended the run"
            assert f"the {phase} failed; the tuning session's measurements are in {out}" in err
            assert "saatp train pipeline: stage 1 (exit status 1) ended the run" in err
    # stopped in the tuning session, or in the only session (--candidates 1): nothing was written,
    # and a result an earlier run had left at the path read as this run's; now the run's record
    for phase, candidates in (("tuning session", "2"), ("final session", "1")):
        monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: (_ for _ in ()).throw(stop("stage 1 ended the run")))
        out = tmp_path / "res" / f"{phase} {candidates}.json"
        out.write_text(json.dumps(dict(summary="an earlier run's")))
        args = ["--model", model, "--profile", str(path), "--batch", "6", "--schedule", "gpipe", "--schedule",
                "1f1b", "--candidates", candidates, "--steps", "2", "--json", str(out)]
        _main_stopped(cli, args, stop)
        got = json.loads(out.read_text())
        assert got["tuning"] is None and got["summary"] is None and got["model"] == model
        err = capsys.readouterr().err
        if stop is KeyboardInterrupt:
            assert got["interrupted"] == phase
            assert (f"saatp train pipeline: interrupted during the {phase}; no session had finished: the run's "
                    f"record, with no measurements, is in {out}") in err, err
        else:
            assert got["failed"] == phase and got["error"] == "stage 1 ended the run"
            assert f"the {phase} failed; no session had finished: the run's record" in err, err


def test_microbatches_with_umpipe_alone_is_noted(capsys):
    """``--microbatches`` sets the baselines' M; with ``--schedule umpipe`` alone it was dropped
    without a word."""
    from emulation.cli import main

    args = ["train", "pipeline", "--model", "vgg-mini", "--stages", "2", "--quota", "none", "--microbatches", "4",
            "--steps", "0"]  # --steps 0 stops the command before anything runs
    assert main(args + ["--schedule", "umpipe"]) == 2
    assert "note: --microbatches 4 sets the baselines' count; --schedule umpipe alone runs none" in capsys.readouterr().out
    assert main(args + ["--schedule", "umpipe", "--schedule", "gpipe"]) == 2
    assert "--microbatches 4 sets" not in capsys.readouterr().out


def test_a_model_given_as_a_file_path_is_told_to_name_the_module(tmp_path, monkeypatch, capsys):
    """``--model dir/mymodels.py:fn`` read "No module named 'dir/mymodels'" alone."""
    from emulation.cli import main
    from host_agent.scheduling.fn_specs import load_fn

    model = six_layer_module(tmp_path, monkeypatch)  # saatp_six_layers_xyz.py in tmp_path
    path = f"{tmp_path}/saatp_six_layers_xyz.py:model"
    assert main(["train", "pipeline", "--model", path, "--stages", "2", "--quota", "none"]) == 2
    err = capsys.readouterr().err
    assert (f"MODULE is a module name as Python imports it, not a file: {model}, run from {tmp_path} or with it on "
            f"PYTHONPATH") in err and "profiling" not in err
    with pytest.raises(ValueError, match=r"not a file: saatp_six_layers_xyz:model, run from its directory"):
        load_fn("saatp_six_layers_xyz.py:model", "model")
    assert callable(load_fn(model, "model"))


def test_a_run_not_timed_as_the_calibration_does_not_call_the_profile_stale(tmp_path, monkeypatch, capsys):
    """With --warmup 0 --lead 0 a candidate's one timed iteration is its first ever; a fresh
    profile was called stale ("this host ran the profile's calibration configurations 198.2%
    slower ...: run saatp profile again") and the predictions were rescaled by it."""
    from emulation.cli import main
    from host_agent.scheduling.train import cli, drift

    cal = dict(B=6, cuts=[3], quotas=[0.5, 0.25], points=[dict(label="gpipe M=1", measured_s=0.001,
                                                                iterations_s=[0.001])])
    model, prof = six_layer_profile(tmp_path, monkeypatch, calibration=cal)
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: dict(runs=[dict(iteration_s=[0.01, 0.01], losses=[1.0])
                                                                     for _ in cfg.runs]))
    args = ["train", "pipeline", "--model", model, "--profile", str(prof), "--cuts", "3", "--schedule", "gpipe",
            "--microbatches", "1", "--candidates", "1", "--steps", "2"]
    out = tmp_path / "train.json"
    assert main(args + ["--json", str(out)]) == 0  # timed as calibrated: 900 % slower is a stale profile
    assert "warning: this host ran the profile's calibration configurations (gpipe M=1) 900.0% slower" in \
        capsys.readouterr().out
    assert json.loads(out.read_text())["host_drift"]["stale"]
    assert main(args + ["--warmup", "0", "--lead", "0", "--json", str(out)]) == 0
    got = capsys.readouterr().out
    assert "warning: this host ran" not in got and "note: with --warmup 0 and --lead 0 the iterations are not timed" \
        in got and json.loads(out.read_text())["host_drift"] is None
    assert drift.timed_as_calibrated(1, 1) and drift.timed_as_calibrated(2, 3)
    assert not drift.timed_as_calibrated(0, 1) and not drift.timed_as_calibrated(1, 0)


def test_tune_steps_without_anything_to_tune_is_noted(tmp_path, monkeypatch, capsys):
    """--candidates 1 leaves every method one candidate: --tune-steps was ignored without a word."""
    from emulation.cli import main

    model, prof, path, args = _profiled_six_layers(tmp_path, monkeypatch)
    assert main(args + ["--tune-steps", "9"]) == 0
    assert "note: --tune-steps 9 is unused: every method has one candidate (--candidates 1)" in capsys.readouterr().out
    assert main(args) == 0
    assert "--tune-steps" not in capsys.readouterr().out


def test_the_printout_names_an_unequal_tuning_candidates_microbatches_and_keeps_long_labels_in_line(capsys):
    """The tuning list showed "umpipe #2 fill-drain  5.3 ms" with no word of the unequal
    microbatches measured, and the final table's rows shifted right for a label over 22
    characters ("umpipe #10 fill-drain M=16")."""
    from host_agent.scheduling.train import cli, tuning

    runs = [dict(schedule="ours", label="umpipe #10 fill-drain M=16", family="umpipe", kind="fill-drain",
                 rows=[[1] * 16] * 2, orders=[[]] * 2, equal=True, predicted_s=0.02),
            dict(schedule="ours", label="umpipe #2 fill-drain", family="umpipe", kind="fill-drain",
                 rows=[[16], [8, 8]], orders=[[]] * 2, equal=False, predicted_s=0.01),
            dict(schedule="torch-gpipe", label="torch-gpipe M=1", family="torch-gpipe", M=1, predicted_s=0.01)]
    got = [dict(iteration_s=[0.01, 0.012, 0.011], losses=[0.1])] * 3
    s = tuning.summarize(runs, got)
    out = dict(model="m:f", stages=2, B=16, cuts=[1], quotas=[0.3, 0.3], profile=None, summary=s,
               tuning=dict(s, runoff=[]), candidates=2, tune_steps=3, host_drift=None,
               load_average=dict(before_1_5_15=[4.39, 2.11, 1.8], after_1_5_15=[5.38, 2.55, 1.96]))
    cli._print(out)
    lines = capsys.readouterr().out.splitlines()
    # the load average was printed as the JSON's dict
    assert lines[0] == ("m:f: 2 stages, B=16, cuts [1], CPU quotas [0.3, 0.3], load average (1, 5, 15 min) 4.39, 2.11, "
                        "1.80 before the sessions, 5.38, 2.55, 1.96 after"), lines[0]
    tuned = [ln for ln in lines if ln.startswith("  umpipe #")]
    assert tuned[1].endswith("ms,  -9.1%)  16 | 8,8") and tuned[0].endswith("%)"), tuned  # equal: its M is its label
    head = [ln for ln in lines if ln.startswith("schedule")][0]
    rows = [ln for ln in lines if ln.startswith(("umpipe #", "torch-gpipe"))]
    assert len(rows) == 3 and "q1..q3 ms" in head
    col = head.index("measured ms") + len("measured ms")  # right-aligned under the heading
    assert all(r[col - 4:col] == "11.0" for r in rows), (head, rows)


def test_train_pipeline_says_when_its_batch_is_not_the_profiles_calibration_b(tmp_path, monkeypatch, capsys):
    """--batch 16 on a profile calibrated at B = 8: the run planned for 16 while plan umpipe
    --profile planned for 8, without a word (the quotas had such a note)."""
    from emulation.cli import main

    model, prof, path, args = _profiled_six_layers(tmp_path, monkeypatch)
    prof["calibration"] = dict(B=6)  # no stages: the predictions are uncalibrated, the B is the profile's
    path.write_text(json.dumps(prof))
    assert main(args) == 0  # --batch 6: the calibration's
    assert "was calibrated at" not in capsys.readouterr().out
    i = args.index("--batch")
    assert main(args[:i] + ["--batch", "12"] + args[i + 2:]) == 0
    out = capsys.readouterr().out
    assert (f"note: --batch 12 is not the B=6 {path} was calibrated at (what saatp plan umpipe --profile plans "
            f"for; its --batch 12 plans for this run); microbatches above 6 samples are predicted beyond") in out, out
    assert main(args[:i] + ["--batch", "4"] + args[i + 2:]) == 0
    out = capsys.readouterr().out
    assert "note: --batch 4 is not the B=6" in out and "beyond" not in out


def test_the_groups_of_a_command_killed_by_sigkill_are_removed_by_the_next_one(tmp_path):
    """A command killed by SIGKILL cannot remove its CPU-quota groups: they stayed in
    /sys/fs/cgroup/cpu for good. The next command removes the empty ones of a process that no
    longer exists, once they are a minute old; nothing else."""
    import os
    import subprocess
    import sys
    import time

    from host_agent.scheduling.pipeline import cgroups

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    dead, alive = p.pid, os.getpid()
    names = [f"saatp-{dead}-4820403-stage0", f"saatp-cgp-{dead}-1-rank0", f"saatp-groups-{dead}-2-rank1",
             f"saatp-{dead}-9-new", f"saatp-{alive}-3-stage0", f"saatp-{dead}-5-busy", "other-1-x", "saatp-x"]
    for n in names:
        (tmp_path / n).mkdir()
    (tmp_path / f"saatp-{dead}-5-busy" / "tasks").write_text("")  # rmdir fails as on a group with a process
    old = time.time() - 2 * cgroups.STALE_AFTER_S
    for n in names:
        if not n.endswith("-new"):
            os.utime(tmp_path / n, (old, old))
    gone = cgroups.remove_stale(str(tmp_path))
    assert sorted(gone) == sorted(names[:3])
    assert sorted(os.listdir(tmp_path)) == sorted(names[3:])


@pytest.mark.parametrize("first, then, says", [
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "import time, sys; time.sleep(0.5); sys.exit(1)",
     "stage 0 (killed by SIGKILL), stage 1 (exit status 1) ended the run; stage 0 (killed by SIGKILL) first, "
     "the others after it"),
    # the same failure on every stage (the same model and code): no first named
    ("import sys; sys.exit(1)", "import time, sys; time.sleep(0.5); sys.exit(1)",
     "stage 0 (exit status 1), stage 1 (exit status 1) ended the run"),
])
def test_a_failed_run_names_the_stage_that_failed_first(tmp_path, first, then, says):
    """A stage killed by SIGKILL mid-run was named among the others, which failed after it
    (gloo's "Connection reset by peer" in their logs, its own log empty)."""
    import subprocess
    import sys

    from host_agent.scheduling.pipeline import launch
    from host_agent.scheduling.rank_processes import RankProcesses

    with pytest.raises(RuntimeError) as e:
        with RankProcesses(str(tmp_path), "pipeline run") as ranks:
            ranks.procs = [subprocess.Popen([sys.executable, "-c", code]) for code in (first, then)]
            launch._wait(ranks, str(tmp_path), 60.0, None)
    assert str(e.value).splitlines()[0] == "pipeline run failed: " + says


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_a_run_stopped_while_profiling_records_itself_in_its_json(stop, tmp_path, monkeypatch, capsys):
    """train pipeline without --profile, stopped in its profiling (a calibration stage killed,
    Ctrl-C): nothing was written, so a result an earlier run had left at the --json path read as
    this run's."""
    from host_agent.scheduling.profile import cli as profile_cli
    from host_agent.scheduling.train import cli

    def fake_profile(*a, **k):
        raise stop("pipeline run failed: stage 1 (killed by SIGKILL) ended the run")

    monkeypatch.setattr(profile_cli, "run_profile", fake_profile)
    out = tmp_path / "t.json"
    out.write_text(json.dumps(dict(summary="an earlier run's")))
    args = ["--model", "vgg-mini", "--stages", "2", "--quota", "none", "--batch", "8", "--json", str(out)]
    _main_stopped(cli, args, stop)
    got = json.loads(out.read_text())
    assert got["summary"] is None and got["plan"] is None and got["model"] == "vgg-mini" and got["B"] == 8
    assert got.get("interrupted" if stop is KeyboardInterrupt else "failed") == "profiling"
    assert "no session had finished: the run's record, with no measurements, is in" in capsys.readouterr().err
