"""What an outside user of ``saatp train groups`` / ``saatp train cgp`` / ``train_cgp`` may give
that used to fail late (in every rank after start-up, or after the whole run) or silently: a
data set with an empty test split or labels of shape [n, 1], test inputs the model cannot take,
a global batch larger than the training split, a target accuracy in per cent, result files in a
directory that does not exist, and two runs given one ``--log-dir``."""

import json
import os
import re
import shutil
import sys
import time

import numpy as np
import pytest
import torch
from torch import nn

from host_agent.scheduling import digits
from host_agent.scheduling.cgp.snapshots import write_snapshots
from host_agent.scheduling.groups.checks import check_model_on_data
from host_agent.scheduling.result_files import check_result_files
from host_agent.scheduling.pipeline.cgroups import unavailable_reason
from host_agent.scheduling.run_dirs import run_dir


def _blobs(n: int, d: int = 4, classes=(0, 1, 2)):
    rng = np.random.default_rng(0)
    y = rng.choice(np.array(classes), size=n)
    return (rng.normal(size=(n, d)) + y[:, None]).astype(np.float32), y


def test_a_data_set_needs_a_test_split_and_one_class_label_per_sample():
    x, y = _blobs(40)
    with pytest.raises(ValueError, match=r"empty test split"):  # the accuracy came out as NaN
        digits.Dataset(x, y, x[:0], y[:0])
    with pytest.raises(ValueError, match=r"y_train must be one class label per sample \(shape \[n\]\), got shape "
                                         r"\[30, 1\]"):
        digits.Dataset(x[:30], y[:30, None], x[30:], y[30:])
    with pytest.raises(ValueError, match=r"y_test must be one class label per sample"):
        digits.Dataset(x[:30], y[:30], x[30:], y[30:, None])
    # inputs and labels of different lengths: the message names the split and both lengths
    with pytest.raises(ValueError, match=r"the training split has 30 inputs and 29 labels"):
        digits.Dataset(x[:30], y[:29], x[30:], y[30:])
    with pytest.raises(ValueError, match=r"the test split has 10 inputs and 9 labels"):
        digits.Dataset(x[:30], y[:30], x[30:], y[31:])
    # labels need not start at 0 nor be contiguous; lists and tensors are taken as numpy arrays are
    d = digits.Dataset(x[:30].tolist(), (y[:30] * 3 + 1).tolist(), torch.as_tensor(x[30:]), torch.as_tensor(y[30:]))
    assert d.x_train.dtype == torch.float32 and d.y_train.dtype == torch.int64 and int(d.y_train.max()) <= 7


def test_inputs_with_missing_values_are_refused_naming_the_samples():
    """A NaN feature (a missing value) made every loss NaN; before, the runs ended at chance
    accuracy without a word."""
    x, y = _blobs(40)
    x[[3, 7], 1] = np.nan
    with pytest.raises(ValueError, match=r"data set: x_train holds NaN or infinite values \(2 of 30 samples, the "
                                         r"first \[3, 7\]\): every loss would be NaN"):
        digits.Dataset(x[:30], y[:30], x[30:], y[30:])
    x[3, 1], x[7, 1], x[35, 0] = 0.0, 0.0, np.inf
    with pytest.raises(ValueError, match=r"x_test holds NaN or infinite values \(1 of 10 samples, the first \[5\]"):
        digits.Dataset(x[:30], y[:30], x[30:], y[30:])


def test_text_labels_and_object_inputs_are_refused_naming_the_split():
    """scikit-learn's iris with its class names as labels: before, a TypeError traceback
    ("can't convert np.ndarray of type numpy.str_"), which the commands do not catch."""
    x, y = _blobs(40)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    with pytest.raises(ValueError, match=r"data set: y_train holds <U10, which torch cannot make a tensor of: class "
                                         r"labels are integers 0..C-1 \(text labels can be mapped"):
        digits.Dataset(x[:30], names[:30], x[30:], y[30:])
    with pytest.raises(ValueError, match=r"data set: x_test holds object, .*: inputs are numbers"):
        digits.Dataset(x[:30], y[:30], x[30:].astype(object), y[30:])


def test_the_model_is_checked_on_the_test_inputs_too():
    x, y = _blobs(40)
    data = digits.Dataset(x[:30], y[:30], x[30:, :3], y[30:])  # test inputs of 3 features, training of 4
    with pytest.raises(ValueError, match=r"model m:mlp fails on the data set's test inputs \(a batch of shape "
                                         r"\[4, 3\]\)"):
        check_model_on_data(torch.nn.Sequential(torch.nn.Linear(4, 3)), data, "m:mlp")
    # a model that takes inputs of any length (pooling) may get test inputs of another shape
    pool = torch.nn.Sequential(torch.nn.AdaptiveAvgPool1d(2), torch.nn.Flatten(), torch.nn.Linear(2, 3))
    seq = digits.Dataset(torch.randn(30, 1, 8), torch.arange(30) % 3, torch.randn(10, 1, 5), torch.arange(10) % 3)
    assert check_model_on_data(pool, seq, "m:pool") == 3


def test_every_token_id_is_checked_against_the_model():
    """An id past an nn.Embedding's rows in a sample beyond the first few: before, every rank
    failed after start-up with "index out of range in self" (or, in the test split only, the
    evaluation after the whole run)."""
    emb = torch.nn.Sequential(torch.nn.Embedding(17, 4), torch.nn.Flatten(), torch.nn.Linear(8, 3))
    x, y = torch.randint(0, 17, (40, 2)), torch.arange(40) % 3
    assert check_model_on_data(emb, digits.Dataset(x[:30], y[:30], x[30:], y[30:]), "m:emb") == 3
    bad = x.clone()
    bad[35, 1] = 25  # the sixth test sample
    with pytest.raises(ValueError, match=r"model m:emb fails on the data set's test inputs 0-9 \(of 10; integer "
                                         r"inputs up to 25, an nn.Embedding needs more rows than the largest id\): "
                                         r"IndexError"):
        check_model_on_data(emb, digits.Dataset(bad[:30], y[:30], bad[30:], y[30:]), "m:emb")


def _module(tmp_path, monkeypatch, name: str, source: str, where=None) -> str:
    """Write ``source`` as module ``name`` in ``where`` (default ``tmp_path``) and make it
    importable, as it is for a script beside it; returns the name."""
    where = where or tmp_path
    (where / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(where))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _no_rank_processes(monkeypatch) -> None:
    """A check that must refuse the run before any rank process starts: starting one fails the test."""
    from host_agent.scheduling.rank_processes import RankProcesses

    def started(*_a, **_k):
        raise AssertionError("a rank process was started")
    monkeypatch.setattr(RankProcesses, "start", started)


def _tiny_data_module(tmp_path, monkeypatch) -> str:
    return _module(tmp_path, monkeypatch, "tiny_data_saatp",
        "import numpy as np\n"
        "def data():\n"
        "    x = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)\n"
        "    y = np.array([0, 1, 2, 0, 1, 2])\n"
        "    return x[:3], y[:3], x[3:], y[3:]\n"
        "def mlp():\n"
        "    from torch import nn\n"
        "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))\n")


def test_the_groups_executor_refuses_a_batch_larger_than_the_training_split(tmp_path, monkeypatch):
    from host_agent.scheduling.groups.executor import GroupsConfig, run
    mod = _tiny_data_module(tmp_path, monkeypatch)
    _no_rank_processes(monkeypatch)
    # before: "global batch B=128 must be in 1..3" in every worker's log after start-up
    with pytest.raises(ValueError, match=r"B \(--batch\) must be at most the training split's 3 samples, got 128"):
        run(GroupsConfig(model=f"{mod}:mlp", data=f"{mod}:data", cgroups=False))


def test_train_cgp_checks_the_target_accuracy_before_any_process_starts():
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    for bad in (90, 1.5, 0, float("nan")):
        with pytest.raises(ValueError, match=r"target_acc \(--target\) must be a test accuracy in \(0, 1\]"):
            train_cgp("digits-cnn", "digits", CGPConfig(cgroups=False), target_acc=bad)


def test_train_cgps_result_has_the_documented_time_to_target_interval(tmp_path):
    from host_agent.scheduling.cgp.library import CGPConfig, _collect
    cfg = CGPConfig(workers=2, base_quotas=(0.3, 0.3), cgroups=False, mode="asp")
    model = digits.model_from("digits-cnn")
    w = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    data = digits.load()
    acc = digits.accuracy_of(model, w, data)
    for r in range(3):  # what the ranks write at their end (procs.Proc.finish)
        log = dict(groupings=[], iters=1, compute_s=0.1, wall_s=1.0, taus=[], phase_end_s=0.0)
        (tmp_path / f"rank{r}.json").write_text(json.dumps(log))
    write_snapshots(str(tmp_path), 2, [(0.5, 1, 64, w), (1.0, 2, 128, w)])
    res = _collect(cfg, "digits-cnn", data, str(tmp_path), [], acc / 2)
    assert res["time_to_target_s"] == 0.5 and res["time_to_target_interval_s"] == [0.0, 0.5]
    write_snapshots(str(tmp_path), 2, [(0.5, 1, 64, w)])
    res = _collect(cfg, "digits-cnn", data, str(tmp_path), [], min(1.0, acc + 0.5))
    assert res["time_to_target_s"] is None and res["time_to_target_interval_s"] is None


def test_result_files_are_checked_and_their_directory_made_before_the_run(tmp_path):
    out = tmp_path / "new" / "sub" / "r.json"
    check_result_files(str(out), str(tmp_path / "plots" / "r.png"))
    assert out.parent.is_dir() and (tmp_path / "plots").is_dir() and not out.exists()
    with pytest.raises(ValueError, match=r"--json .*: is a directory, not a file"):
        check_result_files(str(tmp_path), None)
    (tmp_path / "afile").write_text("")
    with pytest.raises(ValueError, match=r"--plot .*afile/r.png: cannot make its directory"):
        check_result_files(None, str(tmp_path / "afile" / "r.png"))
    with pytest.raises(ValueError, match=r"--plot r.pgn: matplotlib writes no .pgn files \(it writes .*\.png"):
        check_result_files(None, "r.pgn")
    check_result_files(None, "r.svg")
    check_result_files(None, "r")  # no suffix: a PNG


def test_train_cgp_writes_its_json_into_a_directory_that_did_not_exist(tmp_path, monkeypatch, capsys):
    import argparse

    from host_agent.scheduling.cgp import train_cli

    def fake_train(model, data, cfg, target_acc=None, log_dir=None):
        return dict(evals=[dict(t=1.0, test_acc=0.95, version=3, samples=64, final=True)], final_acc=0.95,
                    final_t_s=1.0, best_acc=0.95, config=dict(snapshot_s=0.5), samples_per_s=64.0, max_staleness=2)
    monkeypatch.setattr(train_cli, "train_cgp", fake_train)
    p = argparse.ArgumentParser()
    train_cli.add_arguments(p)
    out = tmp_path / "results" / "today" / "r.json"
    # before: FileNotFoundError with a traceback after the whole run, the result lost
    assert train_cli.run(p.parse_args(["--method", "asp", "--json", str(out)])) == 0
    assert json.loads(out.read_text())["runs"]["asp"]["final_acc"] == 0.95
    called = []
    monkeypatch.setattr(train_cli, "train_cgp", lambda *a, **k: called.append(1))
    assert train_cli.run(p.parse_args(["--method", "asp", "--plot", str(tmp_path / "r.pgn")])) == 2
    assert "matplotlib writes no .pgn files" in capsys.readouterr().err and not called  # refused before the run


def test_the_groups_command_refuses_a_result_path_before_the_run(tmp_path, monkeypatch, capsys):
    from emulation.cli import main
    from host_agent.scheduling.groups import executor
    monkeypatch.setattr(executor, "run", lambda *a, **k: pytest.fail("the run started"))
    assert main(["train", "groups", "--no-cgroups", "--json", str(tmp_path)]) == 2
    assert f"--json {tmp_path}: is a directory, not a file" in capsys.readouterr().err


def test_two_runs_cannot_share_a_log_dir(tmp_path):
    import subprocess
    d = str(tmp_path / "logs")
    holder = ("import sys, time\nfrom host_agent.scheduling.run_dirs import run_dir\n"
              "with run_dir('saatp-test-', sys.argv[1]):\n    print('in', flush=True)\n    time.sleep(30)\n")
    p = subprocess.Popen([sys.executable, "-c", holder, d], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "in\n"
        with pytest.raises(ValueError, match=r"another run is using this directory"):
            with run_dir("saatp-test-", d):
                pytest.fail("a second run got the directory")
    finally:
        p.kill()
        p.wait()
    with run_dir("saatp-test-", d) as got:  # free again once the other run has ended
        assert got == d
        with pytest.raises(ValueError, match=r"another run is using"):  # and held while this one runs
            with run_dir("saatp-test-", d):
                pass
    assert os.path.isdir(d)


def test_a_run_without_cgroups_does_not_warn_about_quotas_it_never_applies(tmp_path, capsys):
    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.groups.quotas import quota_trace
    base = [0.25, 0.25, 0.2, 0.1]
    q = quota_trace(base, 40, seed=7, warn=False)
    assert (q >= 0.1).all() and capsys.readouterr().err == ""
    trace = tmp_path / "t.csv"
    trace.write_text("slot,device,quota\n0,1,0.05\n")
    quota_trace(base, 3, str(trace), warn=False)
    CGPConfig(ps_quota=0.05, cgroups=False)
    assert capsys.readouterr().err == ""
    quota_trace(base, 40, seed=7)  # with cgroups the same trace and server quota are warned
    quota_trace(base, 3, str(trace))
    CGPConfig(ps_quota=0.05)
    err = capsys.readouterr().err
    assert "generated trace (seed 7)" in err and "t.csv:2: slot 0, device 1: quota 0.05" in err
    assert "--ps-quota 0.05 is below 0.1 CPUs" in err


def test_a_model_that_does_not_train_on_one_sample_gets_no_one_sample_pass():
    from host_agent.scheduling.groups.checks import least_batch
    from host_agent.scheduling.groups.costs import LayerCosts
    from host_agent.scheduling.groups.planner import Estimates, SlotPlanner
    bn = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x = torch.randn(10, 4)
    assert least_batch(bn, x) == 2 and bn[1].num_batches_tracked == 0  # a copy ran it
    assert least_batch(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5)), x) == 1
    L = 6
    costs = LayerCosts(np.full(L, 1e-3), np.full(L, 1e-4), np.full(L, 4e4), np.full(L, 400.0), [(10,)] * L)
    est = Estimates(np.array([1.0, 1.0, 0.9, 0.8]), 1e12, 1e12)
    for method in ("lbbsp", "bsp", "hetpipe", "pipeline", "lyapunov"):
        pl = SlotPlanner(method, costs, 3, [0.1] * 4, V=10.0)  # B = 3: shares and microbatches of 1 sample
        pl.t_ref, pl.budget = 0.1, 1e9
        pl.min_microbatch = 2
        plan, _ = pl.choose(est, None, 4)
        assert min(min(g.microbatches()) for g in plan.groups) >= 2, (method, plan)
    pl = SlotPlanner("lbbsp", costs, 3, [0.1] * 4, V=10.0)
    pl.t_ref, pl.budget = 0.1, 1e9
    plan, _ = pl.choose(est, None, 4)
    assert min(min(g.microbatches()) for g in plan.groups) == 1  # what the check rules out
    st = SlotPlanner("bsp-static", costs, 3, [0.1] * 4, V=10.0)
    st.t_ref, st.budget, st.static_devices, st.min_microbatch = 0.1, 1e9, (0, 1, 2), 2
    with pytest.raises(ValueError, match=r"bsp-static: no plan for a batch of 3 gives every pass at least 2 "
                                         r"samples.*a larger --batch"):
        st.choose(est, None, 4)  # three processes, one sample each: a fixed set cannot avoid it


def _blob_data():
    x, y = _blobs(40)
    return x[:30], y[:30], x[30:], y[30:]


def test_train_cgp_takes_a_data_function_or_arrays_as_it_takes_a_model_function():
    from host_agent.scheduling.cgp.library import dataset_arg
    # before: "argument of type 'function' is not iterable" and "The truth value of an array ... is ambiguous"
    assert dataset_arg(_blob_data) == f"{__name__}:_blob_data"
    d = dataset_arg(_blob_data())
    assert isinstance(d, digits.Dataset) and d.x_train.shape == (30, 4) and d.y_test.dtype == torch.int64
    assert dataset_arg("digits") == "digits" and dataset_arg(d) is d
    with pytest.raises(ValueError, match=r"dataset must be 'digits', 'MODULE:FN', .* got int"):
        dataset_arg(5)
    with pytest.raises(ValueError, match=r"dataset must be 'MODULE:FN' or an importable top-level function"):
        dataset_arg(lambda: _blob_data())


def _blob_mlp():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


@pytest.mark.slow
def test_the_groups_executor_takes_functions_and_arrays_as_train_cgp_does(tmp_path):
    """``GroupsConfig(model=fn, data=fn)`` from a script, as ``train_cgp(fn, fn)`` is called:
    before, every such run failed with "argument of type 'function' is not iterable"."""
    from host_agent.scheduling.groups.executor import GroupsConfig, config_record, run
    cfg = GroupsConfig(methods=("lbbsp",), model=_blob_mlp, data=_blob_data, world=1, base_quotas=(1.0,),
                       slots=1, iters=1, B=8, cgroups=False)
    assert (cfg.model, cfg.data) == (f"{__name__}:_blob_mlp", f"{__name__}:_blob_data")
    arrays = GroupsConfig(model=_blob_mlp, data=_blob_data(), world=1, base_quotas=(1.0,), B=8, cgroups=False)
    assert isinstance(arrays.data, digits.Dataset) and arrays.data.x_train.shape == (30, 4)
    json.dumps(config_record(arrays))  # the result's config names the arrays, it does not hold them
    res = run(arrays, log_dir=str(tmp_path / "run"))
    assert res["config"]["data"] == "(a data set given in the call: data)" and res["config"]["model"] == cfg.model
    assert 0.0 <= res["runs"]["lyapunov"]["final_test_acc"] <= 1.0
    res.pop("final_params")
    json.dumps(res)


@pytest.mark.slow
def test_a_trace_without_cgroups_is_said_to_be_not_applied_and_no_quota_is_recorded(tmp_path, capsys):
    """``--no-cgroups --trace T.csv``: before, the trace was ignored without a word and the groups
    run's JSON gave its quotas in every slot as if they had been set."""
    from host_agent.scheduling.groups.executor import GroupsConfig, run
    trace = tmp_path / "drop.csv"
    trace.write_text("slot,device,quota\n1,0,0.1\n")
    res = run(GroupsConfig(methods=("bsp",), model=_blob_mlp, data=_blob_data, world=1, base_quotas=(1.0,), slots=2,
                           iters=1, B=8, cgroups=False, trace=str(trace)))
    assert [s["quotas"] for s in res["runs"]["bsp"]["slots"]] == [None, None]
    err = capsys.readouterr().err
    assert f"--trace {trace} is not applied: without cgroups (--no-cgroups) no process has a CPU quota" in err


@pytest.mark.slow
def test_an_interrupted_groups_run_carries_the_slots_every_method_finished(tmp_path):
    """Ctrl-C after the second of three slots (the progress callback runs after each slot):
    before, the run's slots were lost with it."""
    from host_agent.scheduling.groups.executor import GroupsConfig, run

    def progress(t, _):
        if t == 1:
            raise KeyboardInterrupt
    cfg = GroupsConfig(methods=("bsp", "lbbsp"), model=_blob_mlp, data=_blob_data, world=1, base_quotas=(1.0,),
                       slots=3, iters=1, B=8, cgroups=False)
    with pytest.raises(KeyboardInterrupt) as e:
        run(cfg, progress=progress, log_dir=str(tmp_path / "run"))
    part = e.value.partial_result
    assert part["interrupted"] == {"slots_done": 2, "slots": 3}
    assert [len(r["slots"]) for r in part["runs"].values()] == [2, 2] and "lyapunov_vs" not in part
    json.dumps(part)


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_an_interrupted_train_groups_writes_the_finished_slots_to_json(tmp_path, monkeypatch, capsys, stop):
    from host_agent.scheduling.groups import executor
    from testsupport.interrupted_cli import run_interrupted

    def interrupted_run(cfg, progress=None, log_dir=None):
        e = KeyboardInterrupt() if stop == "ctrl-c" else SystemExit(143)
        e.partial_result = {"runs": {"bsp": {"slots": [{}, {}]}}, "interrupted": {"slots_done": 2, "slots": 12}}
        raise e
    monkeypatch.setattr(executor, "run", interrupted_run)
    out = tmp_path / "new" / "groups.json"
    run_interrupted(["train", "groups", "--planner", "bsp", "--no-cgroups", "--json", str(out)], stop)
    assert json.loads(out.read_text())["interrupted"] == {"slots_done": 2, "slots": 12}
    assert (f"saatp train groups: interrupted; the 2 of 12 slots every method finished are in {out}"
            in capsys.readouterr().err)


@pytest.mark.parametrize("stop", ["failed", "ctrl-c"])
def test_a_train_groups_run_stopped_before_any_slot_replaces_an_earlier_result_with_its_record(
        tmp_path, monkeypatch, capsys, stop):
    """A rank killed (or Ctrl-C) before the first slot ended: nothing was written to --json, and the
    result an earlier run had written there read as this run's (until 2026-11-28)."""
    from emulation.cli import main
    from host_agent.scheduling.groups import executor
    from testsupport.interrupted_cli import run_interrupted
    part = executor.finished_slots(executor.GroupsConfig(methods=("bsp",), slots=12), {})
    assert part["runs"] == {} and part["interrupted"] == {"slots_done": 0, "slots": 12}
    assert part["config"]["slots"] == 12

    def stopped_run(cfg, progress=None, log_dir=None):
        rec = executor.finished_slots(cfg, {})
        if stop == "failed":
            e = RuntimeError("groups run failed: worker(s) [2] of 4 exited: worker 2 (killed by SIGKILL)")
            rec["failed"] = dict(rec.pop("interrupted"), error=str(e))
        else:
            e = KeyboardInterrupt()
        e.partial_result = rec
        raise e
    monkeypatch.setattr(executor, "run", stopped_run)
    out = tmp_path / "groups.json"
    out.write_text(json.dumps({"runs": {"bsp": {"mean_batch_s": 0.05}}}))  # an earlier run's
    argv = ["train", "groups", "--planner", "bsp", "--no-cgroups", "--json", str(out)]
    if stop == "failed":
        assert main(argv) == 2
    else:
        run_interrupted(argv, "ctrl-c")
    res = json.loads(out.read_text())
    assert res["runs"] == {} and res["config"]["methods"] == ["bsp"]
    err = capsys.readouterr().err
    if stop == "failed":
        assert res["failed"]["slots_done"] == 0 and "worker 2 (killed by SIGKILL)" in res["failed"]["error"]
        assert f"no slot had finished before the failure; its record is in {out} (marked failed, no runs)" in err
    else:
        assert res["interrupted"] == {"slots_done": 0, "slots": 12}
        assert f"interrupted; no slot had finished: the run's record, with no runs, is in {out}" in err


def test_a_config_of_the_wrong_kind_or_one_quota_number_is_refused_saying_what_is_expected():
    """``train_cgp(fn, data, {"duration_s": 1})`` failed with "'dict' object has no attribute
    'seed'", ``run(CGPConfig())`` with "... has no attribute 'data'", and ``base_quotas=0.5``
    with "object of type 'float' has no len()" (until 2026-11-28); no process starts."""
    from host_agent.scheduling.cgp import CGPConfig, train_cgp
    from host_agent.scheduling.groups import GroupsConfig, run
    with pytest.raises(TypeError, match=r"cfg must be a CGPConfig \(from host_agent.scheduling.cgp import CGPConfig; "
                                        r"CGPConfig\(duration_s=5.0, ...\)\), got dict"):
        train_cgp("digits-cnn", "digits", {"duration_s": 1.0})
    with pytest.raises(TypeError, match="cfg must be a CGPConfig .*, got GroupsConfig"):
        train_cgp("digits-cnn", "digits", GroupsConfig(cgroups=False))
    with pytest.raises(TypeError, match=r"cfg must be a GroupsConfig \(from host_agent.scheduling.groups import "
                                        r"GroupsConfig; GroupsConfig\(slots=4, ...\)\), got CGPConfig"):
        run(CGPConfig(cgroups=False))
    for make in (CGPConfig, GroupsConfig):
        with pytest.raises(ValueError, match=r"base_quotas \(--quotas\) must be a sequence of CPU quotas, one per "
                                             r"rank process \(base_quotas=\(0.5, 0.5\) for two\), got 0.5"):
            make(base_quotas=0.5)
        assert make(base_quotas=[0.5, 0.5]).base_quotas == (0.5, 0.5)


def test_saatp_train_cgp_gives_every_method_the_same_split(tmp_path, monkeypatch):
    """A data function without a seed (``train_test_split`` without ``random_state``): before,
    the command called it once per method, so CGP and BSP were trained and tested on
    different splits."""
    from emulation.cli import main
    from host_agent.scheduling.cgp import train_cli
    name = _module(tmp_path, monkeypatch, "unseeded_split_saatp",
                   "import numpy as np\n"
                   "calls = []\n"
                   "def data():\n"
                   "    calls.append(1)\n"
                   "    x = np.random.default_rng().normal(size=(40, 4)).astype(np.float32)\n"
                   "    y = np.random.default_rng().integers(0, 3, 40)\n"
                   "    return x[:30], y[:30], x[30:], y[30:]\n")
    got = []

    def fake_train_cgp(model, data, cfg, target_acc, log_dir):
        got.append(data)
        return {"mode": cfg.mode, "final_acc": 0.5, "final_t_s": 1.0, "best_acc": 0.5, "evals": [],
                "max_staleness": None, "samples_per_s": 1.0}
    monkeypatch.setattr(train_cli, "train_cgp", fake_train_cgp)
    assert main(["train", "cgp", "--method", "cgp", "--method", "bsp", "--no-cgroups", "--data", f"{name}:data"]) == 0
    assert len(sys.modules[name].calls) == 1 and len(got) == 2 and got[0] is got[1]
    assert isinstance(got[0], digits.Dataset)


@pytest.mark.slow
def test_train_groups_says_when_training_diverged(capsys):
    """A learning rate far too large: before, the table showed an accuracy at chance and nothing
    else (the slots' ``finite`` flags only in the JSON)."""
    from emulation.cli import main
    assert main(["train", "groups", "--planner", "bsp", "--no-cgroups", "--quotas", "1.0", "--slots", "3", "--iters",
                 "2", "--batch", "8", "--lr", "1e30", "--model", f"{__name__}:_blob_mlp", "--data",
                 f"{__name__}:_blob_data"]) == 0
    assert re.search(r"warning: bsp: training diverged: after slot \d the parameters held NaN or infinite values",
                     capsys.readouterr().err)


def test_a_groups_slot_whose_loss_exploded_is_divergence_even_with_finite_weights():
    """``--lr 100`` took the loss to 1e21 with finite weights, and the run said nothing."""
    from host_agent.scheduling.groups.executor import diverged_slot
    ok = [dict(slot=k, finite=True, loss=x) for k, x in enumerate((2.3, 1.9, 0.8, 0.3))]
    assert diverged_slot(ok) is None
    assert diverged_slot(ok[:2] + [dict(slot=2, finite=True, loss=1e21)]) == 2
    assert diverged_slot(ok[:2] + [dict(slot=2, finite=True, loss=float("inf"))]) == 2
    assert diverged_slot(ok[:3] + [dict(slot=3, finite=False, loss=0.2)]) == 3
    assert diverged_slot([dict(slot=0, finite=True, loss=None), dict(slot=1, finite=True, loss=3.0)]) is None


def test_train_cgp_says_when_training_diverged(tmp_path):
    """The server's snapshots of a diverged run (weights NaN from 1 s): ``diverged_t_s``."""
    from host_agent.scheduling.cgp import library
    cfg = library.CGPConfig(workers=2, base_quotas=(0.5, 0.5), cgroups=False)
    for r in range(3):
        (tmp_path / f"rank{r}.json").write_text(json.dumps(
            {"groupings": [], "taus": [], "iters": 1, "compute_s": 0.1, "wall_s": 2.0}))
    w = torch.nn.utils.parameters_to_vector(_blob_mlp().parameters()).detach()
    write_snapshots(str(tmp_path), 2, [(0.5, 1, 8, w), (1.0, 2, 16, w * float("nan")), (1.5, 3, 24, w * float("nan"))])
    res = library._collect(cfg, f"{__name__}:_blob_mlp", digits.Dataset(*_blob_data()), str(tmp_path), [], None)
    assert res["diverged_t_s"] == 1.0 and res["final_t_s"] == 1.5


def test_saatp_train_cgp_warns_of_a_diverged_method(monkeypatch, capsys):
    from emulation.cli import main
    from host_agent.scheduling.cgp import train_cli

    def fake_train_cgp(model, data, cfg, target_acc, log_dir):
        return {"mode": cfg.mode, "final_acc": 0.1, "final_t_s": 2.0, "best_acc": 0.2, "evals": [],
                "max_staleness": 3, "samples_per_s": 1.0, "diverged_t_s": 1.5 if cfg.mode == "asp" else None}
    monkeypatch.setattr(train_cli, "train_cgp", fake_train_cgp)
    assert main(["train", "cgp", "--method", "cgp", "--method", "asp", "--no-cgroups"]) == 0
    err = capsys.readouterr().err
    assert "warning: asp: training diverged: the weights held NaN or infinite values from 1.5 s" in err
    assert "cgp: training diverged" not in err


@pytest.mark.parametrize("duration, slot, slots", [(15.0, 2.0, 9), (5000.0, 2.0, 2501), (1.0, 3.0, 2)])
def test_train_cgp_generates_the_slots_its_training_spans(duration, slot, slots, monkeypatch):
    from host_agent.scheduling.cgp import library
    got = []

    class Stop(Exception):
        pass

    def trace(base, n, *a, **k):
        got.append(n)
        raise Stop
    monkeypatch.setattr(library, "quota_trace", trace)
    cfg = library.CGPConfig(duration_s=duration, slot_s=slot, cgroups=False)
    with pytest.raises(Stop):
        library.train_cgp("digits-cnn", "digits", cfg)
    # before: 1000 whatever the run, so a long run's quotas froze at slot 999 and the generated
    # trace's warning counted slots that never ran
    assert got == [slots]


def test_a_spreadsheets_trace_with_a_byte_order_mark_is_read(tmp_path):
    from host_agent.scheduling.groups.quotas import quota_trace
    p = tmp_path / "t.csv"
    p.write_bytes(b"\xef\xbb\xbfslot,device,quota\r\n0,0,0.2\r\n1,1,0.15\r\n")  # Excel's "CSV UTF-8"
    q = quota_trace([0.3, 0.3], 2, str(p))  # before: "header must be ..., got '\ufeffslot,device,quota'"
    assert q.tolist() == [[0.2, 0.3], [0.3, 0.15]]
    p.write_bytes(b"\xef\xbb\xbfslot,device,quota\r\n0,0,0.2\r\n0,0,0.15\r\n")
    with pytest.raises(ValueError, match=r"t.csv:3: slot 0, device 0 is given twice \(also on line 2\)"):
        quota_trace([0.3, 0.3], 2, str(p))


def test_the_groups_executor_refuses_tied_weights_before_any_process_starts():
    from host_agent.scheduling.groups.checks import check_layers_share_no_parameter
    emb, head = torch.nn.Embedding(20, 8), torch.nn.Linear(8, 20, bias=False)
    head.weight = emb.weight  # tied, as in a small language model
    tied = torch.nn.Sequential(emb, torch.nn.Flatten(), torch.nn.Linear(48, 8), head)
    with pytest.raises(ValueError, match=r"model m:tied: layers 0 and 3 share a parameter of shape \[20, 8\] "
                                         r"\(tied weights\)"):
        check_layers_share_no_parameter(tied, "m:tied")
    check_layers_share_no_parameter(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 3)), "m:ok")
    inner = torch.nn.Linear(4, 4)  # a parameter shared inside one layer is that layer's own
    check_layers_share_no_parameter(torch.nn.Sequential(torch.nn.Sequential(inner, inner)), "m:inner")


def needs_width(width):
    return torch.nn.Linear(4, width)


def test_a_model_or_data_function_that_needs_arguments_is_named(monkeypatch):
    spec = f"{__name__}:needs_width"
    with pytest.raises(ValueError, match=r"model '.*:needs_width': FN must be callable with no arguments, it takes "
                                         r"\(width\)"):
        digits.model_from(spec)  # before: TypeError "needs_width() missing 1 required positional argument"
    with pytest.raises(ValueError, match=r"data set '.*:needs_width': FN must be callable with no arguments"):
        digits.dataset_from(spec)
    with pytest.raises(ValueError, match=r"model 'torch.nn:Linear': FN must be callable with no arguments"):
        digits.model_from("torch.nn:Linear")  # a class that needs arguments
    assert isinstance(digits.model_from("host_agent.scheduling.digits:cnn"), torch.nn.Sequential)  # defaults only


def test_sigterm_exits_during_a_library_call_and_the_callers_handler_comes_back():
    import signal

    from host_agent.scheduling.run_options import sigterm_exits
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(SystemExit) as e:
            with sigterm_exits():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
        assert e.value.code == 143 and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        seen = []
        mine = signal.signal(signal.SIGTERM, lambda *a: seen.append(1))  # noqa: F841 - a caller's own handler
        with sigterm_exits():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
        assert seen == [1]  # left alone
    finally:
        signal.signal(signal.SIGTERM, before)


LIBRARY_SCRIPT = """
import sys
from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
train_cgp("digits-cnn", "digits", CGPConfig(mode="asp", duration_s=60, workers=2, base_quotas=(0.3, 0.3)))
"""


@pytest.mark.slow
@pytest.mark.skipif(unavailable_reason() is not None, reason=f"cgroup v1 CPU quotas: {unavailable_reason()}")
def test_a_plain_script_calling_train_cgp_removes_its_cgroups_on_sigterm(tmp_path):
    import signal
    import subprocess

    from host_agent.scheduling.pipeline.cgroups import CPU_ROOT
    p = subprocess.Popen([sys.executable, "-c", LIBRARY_SCRIPT], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    prefix = f"saatp-cgp-{p.pid}-"
    try:
        t_end = time.monotonic() + 120
        while not [d for d in os.listdir(CPU_ROOT) if d.startswith(prefix)]:
            assert p.poll() is None and time.monotonic() < t_end, "the run made no cgroups"
            time.sleep(0.2)
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        time.sleep(3)
        p.send_signal(signal.SIGTERM)
        assert p.wait(60) == 143  # before: killed by SIGTERM, its three cgroups left behind
        err = p.stderr.read()
        assert "interrupted" in err
        left = re.search(r"its configs and logs are left in (\S+)", err)
        if left:  # an interrupted run leaves its directory for its logs: not this test's
            shutil.rmtree(left.group(1), ignore_errors=True)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert not [d for d in os.listdir(CPU_ROOT) if d.startswith(prefix)]
    time.sleep(1)
    assert not [k for k in kids if os.path.exists(f"/proc/{k}") and "procs" in open(f"/proc/{k}/cmdline").read()]


def test_the_ranks_find_a_model_module_where_a_script_found_it(tmp_path, monkeypatch):
    import subprocess

    from host_agent.scheduling.fn_specs import load_fn
    models = tmp_path / "models"
    models.mkdir()
    _module(tmp_path, monkeypatch, "beside_script_saatp", "def net():\n    return 7\n",
            where=models)  # on sys.path, as Python puts a script's directory
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.chdir(tmp_path)  # the ranks start here: python -m finds modules of tmp_path only
    assert load_fn("beside_script_saatp:net", "model")() == 7
    assert os.environ["PYTHONPATH"].split(os.pathsep) == [str(models.resolve()), "/somewhere/else"]
    child = subprocess.run([sys.executable, "-c", "import beside_script_saatp; print(beside_script_saatp.net())"],
                           capture_output=True, text=True)
    assert child.stdout == "7\n", child.stderr  # before: "No module named 'beside_script_saatp'" in every rank
    load_fn("beside_script_saatp:net", "model")
    assert os.environ["PYTHONPATH"].count(str(models.resolve())) == 1  # once
    load_fn("json:dumps", "model")  # the interpreter's own: nothing to add
    assert os.environ["PYTHONPATH"].split(os.pathsep) == [str(models.resolve()), "/somewhere/else"]


def test_train_cgp_refuses_a_local_batch_of_one_for_a_batch_norm_model(tmp_path, monkeypatch):
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    _module(tmp_path, monkeypatch, "bn_model_saatp",
            "from torch import nn\n"
            "def net():\n    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))\n")
    _no_rank_processes(monkeypatch)
    # before: every worker failed after start-up, "Expected more than 1 value per channel when training"
    with pytest.raises(ValueError, match=r"local_batch \(--batch\) must be >= 2 for bn_model_saatp:net \(a "
                                         r"batch-norm layer does not train on one sample\), got 1"):
        train_cgp("bn_model_saatp:net", _blob_data(), CGPConfig(local_batch=1, cgroups=False), log_dir=str(tmp_path))


def _counting_data_module(tmp_path, monkeypatch) -> str:
    return _module(tmp_path, monkeypatch, "counted_data_saatp",
        "import os\nimport numpy as np\n"
        f"LOG = {str(tmp_path / 'calls')!r}\n"
        "def data():\n"
        "    with open(LOG, 'a') as f:\n"
        "        f.write(f'{os.getpid()}\\n')\n"
        "    rng = np.random.default_rng()  # a split without a seed: each call gives another\n"
        "    x = rng.normal(size=(200, 4)).astype(np.float32)\n"
        "    y = (x[:, 0] > 0).astype(np.int64)\n"
        "    return x[:150], y[:150], x[150:], y[150:]\n"
        "def mlp():\n"
        "    from torch import nn\n"
        "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n")


@pytest.mark.slow
def test_every_rank_trains_on_the_data_the_parent_evaluates_on(tmp_path, monkeypatch):
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    from host_agent.scheduling.groups.executor import GroupsConfig, run
    mod = _counting_data_module(tmp_path, monkeypatch)
    calls = tmp_path / "calls"
    res = run(GroupsConfig(methods=("bsp",), model=f"{mod}:mlp", data=f"{mod}:data", slots=1, iters=1, B=32,
                           world=2, base_quotas=(1.0, 1.0), cgroups=False))
    assert res["runs"]["bsp"]["slots"][0]["finite"]
    # before: the parent and each of the 2 workers called the FN, each got a split of its own
    assert calls.read_text().splitlines() == [str(os.getpid())]
    calls.unlink()
    r = train_cgp(f"{mod}:mlp", f"{mod}:data", CGPConfig(mode="asp", duration_s=0.5, workers=2,
                                                        base_quotas=(1.0, 1.0), cgroups=False))
    assert r["final_acc"] is not None
    assert calls.read_text().splitlines() == [str(os.getpid())]  # before: 4 calls (2 workers and the server)


def test_a_host_without_cgroup_quotas_is_told_how_to_run_without_them(monkeypatch):
    from host_agent.scheduling.groups import quotas
    monkeypatch.setattr(quotas, "unavailable_reason", lambda: "cgroup CPU quotas need root")
    with pytest.raises(RuntimeError, match=r"cgroup CPU quotas need root: run as root .* or without CPU quotas "
                                           r"\(--no-cgroups; cgroups=False in a config\)"):
        quotas.SlotQuotas(2, "saatp-test-never-made")


def test_labels_with_gaps_are_not_called_classes_they_are_not():
    x, y = _blobs(40, classes=(1, 3, 7))
    data = digits.Dataset(x[:30], y[:30], x[30:], y[30:])
    # before: "labels go up to 7 (8 classes, 0-7)" for a data set of three classes
    with pytest.raises(ValueError, match=r"labels go up to 7 \(3 distinct labels, 1, 3, 7; a label is the index of "
                                         r"its output\): its last layer needs at least 8 outputs"):
        check_model_on_data(torch.nn.Sequential(torch.nn.Linear(4, 3)), data, "m:three")
    assert check_model_on_data(torch.nn.Sequential(torch.nn.Linear(4, 8)), data, "m:eight") == 8


def test_train_cgp_warns_of_worker_quotas_above_one_cpu_once(tmp_path, capsys, monkeypatch):
    """A quota trace in per cent (25 for a quarter of a CPU) slowed no worker, without a word;
    ``saatp train groups`` warned, ``train_cgp`` did not. Once per run: the command makes one
    ``train_cgp`` call per method."""
    from host_agent.scheduling.cgp import library

    class Stop(Exception):
        pass

    def no_cgroups(*_a, **_k):  # after the checks and the warnings, before any cgroup or process
        raise Stop
    monkeypatch.setattr(library, "SlotQuotas", no_cgroups)
    trace = tmp_path / "percent.csv"
    trace.write_text("slot,device,quota\n0,0,25\n0,1,25\n0,2,10\n1,2,40\n")
    cfg = library.CGPConfig(workers=3, base_quotas=(0.3, 0.3, 0.3), trace=str(trace), duration_s=3, slot_s=2)
    for _ in range(2):
        with pytest.raises(Stop):
            library.train_cgp("digits-cnn", "digits", cfg)
    err = capsys.readouterr().err
    assert err.count("(slot, worker) quotas are above 1 CPU (workers [0, 1, 2], up to 40): a worker computes on one "
                     "thread") == 1


def test_quotas_above_one_cpu_are_warned(tmp_path, capsys):
    from host_agent.scheduling.groups.quotas import quota_trace, warn_above_one_cpu
    trace = tmp_path / "t.csv"
    trace.write_text("slot,device,quota\n0,1,4\n")  # 4 CPUs on a 2-core host (the trace loops: both slots)
    warn_above_one_cpu(quota_trace([0.3, 0.3], 2, str(trace)))
    assert ("2 of the 4 (slot, process) quotas are above 1 CPU (processes [1], up to 4): a process computes on "
            "one thread") in capsys.readouterr().err
    warn_above_one_cpu(quota_trace([0.3, 1.0], 2, None, warn=False))  # 1 CPU is not above
    assert capsys.readouterr().err == ""


def test_a_cgp_runs_quota_warnings_name_its_workers_not_the_groups_planners(tmp_path, capsys):
    """CGP's warnings in its own words: a quota above 1 CPU did not name the groups planners'
    predictions (CGP's server regroups from measured times) and the generated trace's low
    quotas were "(slot, process)" quotas of "processes" in a run of workers (until 2026-11-28)."""
    from host_agent.scheduling.groups.quotas import quota_trace, warn_above_one_cpu
    trace = tmp_path / "t.csv"
    trace.write_text("slot,device,quota\n0,1,1.5\n")
    warn_above_one_cpu(quota_trace([0.3, 0.3], 2, str(trace), noun="workers"), "worker", "workers", planners=False)
    err = capsys.readouterr().err
    assert "(slot, worker) quotas are above 1 CPU (workers [1], up to 1.5)" in err and "planners" not in err
    warn_above_one_cpu(quota_trace([0.3, 0.4], 2, str(trace)))  # train groups: its planners' predictions
    assert "the groups planners' predictions" in capsys.readouterr().err
    quota_trace([0.25, 0.25, 0.2, 0.1], 41, seed=11, noun="workers")  # not yet warned in this process
    err = capsys.readouterr().err
    assert "(slot, worker) quotas below 0.1 CPUs (workers [" in err and "process" not in err


def test_a_model_already_built_is_refused_asking_for_the_function_that_builds_it():
    """``train_cgp(net(), ...)`` (the model, not its function) failed with "cannot load model
    'torch.nn.modules.container:': module ... has no attribute ''", and ``GroupsConfig`` took it
    until the run loaded it (until 2026-11-28)."""
    import functools

    from torch import nn

    from host_agent.scheduling import digits
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp
    from host_agent.scheduling.fn_specs import spec_of
    from host_agent.scheduling.groups.executor import GroupsConfig
    want = r"model must be .* that builds it .*got a Sequential object: pass the function itself \(f, not f\(\)\)"
    with pytest.raises(ValueError, match=want):
        GroupsConfig(model=digits.cnn(), cgroups=False)
    with pytest.raises(ValueError, match=r"model_fn must be .*got a Sequential object"):
        train_cgp(nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), "digits", CGPConfig(duration_s=1.0, cgroups=False))
    with pytest.raises(ValueError, match="got a partial object"):
        spec_of(functools.partial(digits.cnn, 16), "model")
    assert spec_of(digits.cnn, "model") == "host_agent.scheduling.digits:cnn"
    assert spec_of(digits.Dataset, "data") == "host_agent.scheduling.digits:Dataset"  # a class builds too


def test_the_number_of_processes_follows_the_base_quotas_when_not_given():
    """``GroupsConfig(base_quotas=(0.5, 0.5))`` was refused with "4 processes need 4 base quotas,
    got 2" (the command's --quotas sets both; until 2026-11-28), ``CGPConfig`` likewise."""
    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.groups.executor import GroupsConfig
    assert GroupsConfig(base_quotas=(0.5, 0.5), cgroups=False).world == 2
    assert GroupsConfig(cgroups=False).world == 4 and CGPConfig(cgroups=False).workers == 4
    assert CGPConfig(base_quotas=(0.3, 0.3, 0.3), cgroups=False).workers == 3
    with pytest.raises(ValueError, match="3 processes need 3 base quotas, got 2"):
        GroupsConfig(world=3, base_quotas=(0.5, 0.5), cgroups=False)
    with pytest.raises(ValueError, match="3 workers need 3 base quotas, got 2"):
        CGPConfig(workers=3, base_quotas=(0.5, 0.5), cgroups=False)


def test_batch_norm_statistics_are_estimated_without_a_batch_of_one_sample():
    """The evaluation estimates a batch-norm model's running statistics from the training split
    in batches of 256: a split of 257 samples left a last batch of one, and a BatchNorm1d in
    training mode refused it, failing the run at its first evaluation."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    for n in (257, 513, 256, 2):
        data = digits.Dataset(torch.randn(n, 5), torch.arange(n) % 3, torch.randn(7, 5), torch.arange(7) % 3)
        got = digits.bn_batches(data.x_train, 256)
        assert min(len(b) for b in got) > 1 and torch.equal(torch.cat(got), data.x_train)
        w = nn.utils.parameters_to_vector(model.parameters()).detach()
        assert 0.0 <= digits.accuracy_of(model, w, data) <= 1.0


class _RandomProjection(nn.Module):
    """A fixed random projection (random features): a buffer drawn at construction, not a parameter."""

    def __init__(self, d_in: int = 4, d_out: int = 64):
        super().__init__()
        self.register_buffer("W", torch.randn(d_in, d_out))

    def forward(self, x):
        return torch.relu(x @ self.W)


def _random_features():
    return nn.Sequential(_RandomProjection(), nn.Linear(64, 3))


def test_the_parents_evaluation_model_has_the_ranks_random_buffers(tmp_path):
    """The runs exchange parameters only; the parent built its evaluation model unseeded
    (train cgp) or with seed 1 (train groups, the ranks with the run's seed), so a model whose
    buffer is drawn at random was evaluated with another projection: a random-features model
    trained to 0.97 on wine was reported at 0.33 throughout."""
    from host_agent.scheduling.cgp import library
    from host_agent.scheduling.groups.worker import MethodState
    spec, seed = f"{__name__}:_random_features", 3
    # train groups: the ranks' model state (worker.MethodState) and the parent's evaluation model
    ranks = MethodState(spec, seed, 2).layers
    torch.manual_seed(1)  # what the parent's own model was built with
    parent = digits.built_as_ranks_build(spec, seed, sequential=True)
    assert torch.equal(parent[0].W, ranks[0].W)
    assert not torch.equal(digits.sequential_from(spec)[0].W, ranks[0].W)  # the draw matters
    # train cgp: weights trained with the ranks' projection, evaluated by the parent's _collect
    x, y = _blobs(200, classes=(0, 1, 2))
    x = x * 3
    data = digits.Dataset(x[:150], y[:150], x[150:], y[150:])
    torch.manual_seed(seed)
    m = _random_features()
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        nn.functional.cross_entropy(m(data.x_train), data.y_train).backward()
        opt.step()
    w = nn.utils.parameters_to_vector(m.parameters()).detach()
    right = digits.accuracy_of(m, w, data)
    other = _random_features()
    assert right > digits.accuracy_of(other, w, data) + 0.1  # another projection: another accuracy
    cfg = library.CGPConfig(workers=2, base_quotas=(0.5, 0.5), cgroups=False, seed=seed)
    for r in range(3):
        (tmp_path / f"rank{r}.json").write_text(json.dumps(
            {"groupings": [], "taus": [], "iters": 1, "compute_s": 0.1, "wall_s": 2.0}))
    write_snapshots(str(tmp_path), 2, [(0.5, 1, 8, w)])
    torch.manual_seed(12345)  # the parent's generator, wherever it happens to be
    res = library._collect(cfg, spec, data, str(tmp_path), [], None)
    assert res["evals"][0]["test_acc"] == pytest.approx(right)


def test_a_model_with_lazy_layers_is_refused_in_the_parent_naming_them():
    """nn.LazyLinear makes its parameters at the first forward; the ranks exchange parameters
    by size before any, and every rank of both commands failed after start-up with "Attempted
    to use an uninitialized parameter"."""
    lazy = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 3))
    data = digits.Dataset(*_blob_data())
    with pytest.raises(ValueError, match=r"model m:lazy: layer\(s\) 0 \(LazyLinear\) make their parameters at the "
                                         r"first forward .*nn\.Linear\(in_features"):
        check_model_on_data(lazy, data, "m:lazy")
    assert check_model_on_data(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), data, "m:mlp") == 3


def test_integer_inputs_a_model_cannot_take_are_told_to_be_floats():
    """uint8 images (integer inputs stay integers, for token ids) failed the check with torch's
    "Input type (unsigned char) and bias type (float) should be the same" and no hint."""
    x, y = _blobs(40)
    data = digits.Dataset((x * 10).astype(np.uint8), y, (x[:5] * 10).astype(np.uint8), y[:5])
    mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    with pytest.raises(ValueError, match=r"the inputs are torch\.uint8 and are passed as they are \(token ids for an "
                                         r"nn\.Embedding\): inputs to other layers must be floats"):
        check_model_on_data(mlp, data, "m:mlp")
    with pytest.raises(ValueError) as e:  # float inputs the model cannot take: no such hint
        check_model_on_data(mlp, digits.Dataset(np.zeros((8, 5), np.float32), y[:8], np.zeros((2, 5), np.float32),
                                                y[:2]), "m:mlp")
    assert "token ids" not in str(e.value)


def test_the_evaluation_of_a_model_with_dropout_before_batch_norm_is_the_same_every_time():
    """The batch-norm statistics were estimated with dropout on, drawing from the parent's random
    stream: the same parameters evaluated again gave another accuracy (0.18-0.22 on wine), so two
    methods with the same weights reported different accuracies."""
    x, y = _blobs(300, classes=(0, 1, 2))
    data = digits.Dataset(x[:200], y[:200], x[200:], y[200:])
    torch.manual_seed(3)
    m = nn.Sequential(nn.Linear(x.shape[1], 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 16), nn.BatchNorm1d(16),
                      nn.ReLU(), nn.Linear(16, 3))
    w = nn.utils.parameters_to_vector(m.parameters()).detach()
    state = torch.get_rng_state()
    accs = [digits.accuracy_of(m, w, data) for _ in range(6)]
    assert len(set(accs)) == 1
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random stream is left as it was
    assert m.training and all(c.training for c in m)  # the modes restored
    # the statistics are those of the network as evaluated (dropout off)
    with torch.no_grad():
        h = m[3](m[1](m[0](data.x_train)))
    assert torch.allclose(m[4].running_mean, h.mean(0), atol=1e-5)
