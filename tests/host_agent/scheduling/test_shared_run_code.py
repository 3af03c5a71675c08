"""The code the real-process runs (saatp train groups / cgp, the pipeline stages) share: rank
processes and their command line, the run options, MODULE:FN names and the result files."""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from host_agent.scheduling.fn_specs import load_fn, spec_of
from host_agent.scheduling.rank_processes import RankProcesses, rank_main
from host_agent.scheduling.result_files import (
    add_result_file_options,
    write_result_files,
)
from host_agent.scheduling.run_options import add_run_options, run_options_from


def test_rank_main_passes_config_and_rank_and_rejects_other_arguments(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"k": [1, 2]}))
    got = []
    assert rank_main("some.module", lambda cfg, rank: got.append((cfg, rank)), [str(path), "3"]) == 0
    assert got == [({"k": [1, 2]}, 3)]
    assert rank_main("some.module", lambda cfg, rank: got.append(rank), [str(path)]) == 2
    assert "usage: python -m some.module CONFIG.json RANK" in capsys.readouterr().err
    assert len(got) == 1


def test_a_failing_rank_fails_the_run_with_its_log(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text("{}")
    with pytest.raises(RuntimeError) as e:
        with RankProcesses(str(tmp_path), "test run") as ranks:
            ranks.start("no_such_module_for_saatp", str(cfg), 2)
            deadline = time.monotonic() + 60
            while ranks.running() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert ranks.failed() and ranks.exited() == [0, 1]
            raise RuntimeError("a rank exited")
    msg = str(e.value)
    assert msg.startswith("test run failed: a rank exited")
    assert "--- rank 0 ---" in msg and "--- rank 1 ---" in msg and "no_such_module_for_saatp" in msg
    assert os.path.isfile(tmp_path / "rank1.log")


def test_settling_waits_for_the_other_ranks_to_fail(tmp_path):
    with RankProcesses(str(tmp_path)) as ranks:
        ranks.procs += [subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"]),
                        subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(1.0); sys.exit(4)"])]
        while not ranks.failed():
            time.sleep(0.01)
        ranks.settle(seconds=60)
        assert ranks.failed_ranks() == [0, 1] and not ranks.running()
        assert ranks.exits() == "rank 0 (exit status 3), rank 1 (exit status 4)"
        ranks.procs.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        ranks.procs[2].kill()
        ranks.procs[2].wait()
        assert ranks.exits("worker").endswith("worker 2 (killed by SIGKILL)")


def test_leaving_the_ranks_kills_those_still_running(tmp_path):
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(60)\n")
    with RankProcesses(str(tmp_path)) as ranks:
        ranks.procs.append(subprocess.Popen([sys.executable, str(script)]))
        assert ranks.running()
    assert not ranks.running() and ranks.procs[0].returncode != 0


def test_waiting_for_the_ranks_exit_kills_and_names_those_that_outlast_it(tmp_path):
    """A rank that has not exited when the wait ends is killed and named, not raised about:
    its work is done (a rank's slow exit under a 0.1 CPU quota failed a finished groups run)."""
    with RankProcesses(str(tmp_path)) as ranks:
        ranks.procs += [subprocess.Popen([sys.executable, "-c", "pass"]),
                        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])]
        assert ranks.wait(timeout_s=5) == [1]
        assert not ranks.running() and ranks.procs[0].returncode == 0 and ranks.procs[1].returncode != 0


def test_a_rank_that_ends_with_exit_rank_flushes_its_output_and_gives_its_status(tmp_path):
    """``exit_rank`` skips the interpreter's and libtorch's teardown: what the rank printed
    still reaches its log, and its status is the one given."""
    script = tmp_path / "rank.py"
    script.write_text("import sys, torch\nfrom host_agent.scheduling.rank_processes import exit_rank\n"
                      "print('to stdout', end='')\nprint('to stderr', file=sys.stderr, end='')\nexit_rank(7)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    with open(tmp_path / "log", "w") as log:
        p = subprocess.run([sys.executable, str(script)], stdout=log, stderr=subprocess.PIPE, env=env, timeout=120)
    assert p.returncode == 7 and p.stderr == b"to stderr"
    assert (tmp_path / "log").read_text() == "to stdout"  # a file: buffered, not line-buffered


def test_run_options_fill_the_shared_config_fields():
    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.groups.executor import GroupsConfig

    p = argparse.ArgumentParser()
    add_run_options(p, "nn.Module", "worker", "0.4,0.3")
    add_result_file_options(p)
    args = p.parse_args(["--quotas", "0.5,0.25", "--trace-seed", "7", "--no-cgroups", "--backend", "saatp",
                         "--json", "r.json"])
    opts = run_options_from(args)
    assert opts == dict(base_quotas=(0.5, 0.25), trace=None, trace_seed=7, backend="saatp", seed=0, cgroups=False,
                        stall_s=60.0)
    assert args.model == "digits-cnn" and args.json == "r.json" and args.plot is None
    g = GroupsConfig(world=2, **opts)
    c = CGPConfig(workers=2, **opts)
    assert (g.base_quotas, g.cgroups, c.backend, c.trace_seed) == ((0.5, 0.25), False, "saatp", 7)
    assert (g.timeout_s, c.timeout_s) == (300.0, 120.0)  # each run keeps its own default
    with pytest.raises(ValueError):
        run_options_from(p.parse_args(["--quotas", "0.5,x"]))


def test_the_number_of_ranks_is_an_option_of_its_own():
    """``--workers N`` (train cgp) and ``--processes N`` (train groups): the default quotas
    repeated to N values, or checked against --quotas; argparse refused them before."""
    p = argparse.ArgumentParser()
    add_run_options(p, "nn.Module", "worker", "0.25,0.25,0.2,0.1")
    assert run_options_from(p.parse_args([]))["base_quotas"] == (0.25, 0.25, 0.2, 0.1)
    assert run_options_from(p.parse_args(["--workers", "6"]))["base_quotas"] == (0.25, 0.25, 0.2, 0.1, 0.25, 0.25)
    assert run_options_from(p.parse_args(["--workers", "2"]))["base_quotas"] == (0.25, 0.25)
    assert run_options_from(p.parse_args(["--workers", "2", "--quotas", "0.3,0.1"]))["base_quotas"] == (0.3, 0.1)
    with pytest.raises(ValueError, match=r"--workers 3 but --quotas gives 2 values \(0.3,0.1\): give one quota per "
                                         r"worker"):
        run_options_from(p.parse_args(["--workers", "3", "--quotas", "0.3,0.1"]))
    with pytest.raises(ValueError, match=r"workers \(--workers\) must be >= 1, got 0"):
        run_options_from(p.parse_args(["--workers", "0"]))
    q = argparse.ArgumentParser()
    add_run_options(q, "nn.Sequential", "process", "0.35,0.3,0.2,0.15")
    assert run_options_from(q.parse_args(["--processes", "5"]))["base_quotas"] == (0.35, 0.3, 0.2, 0.15, 0.35)
    with pytest.raises(ValueError, match="give one quota per process,"):
        run_options_from(q.parse_args(["--processes", "2", "--quotas", "0.3"]))


def top_level_fn():
    return 41


def test_a_function_of_the_script_itself_is_refused_saying_why(tmp_path):
    """``train_cgp(net, ...)`` with ``net`` defined in the script being run: the ranks cannot
    import ``__main__``'s functions; before, the error said only "must be 'MODULE:FN' or an
    importable top-level function", which ``net`` was."""
    import subprocess
    import sys
    script = tmp_path / "train_script.py"
    script.write_text("from host_agent.scheduling.fn_specs import spec_of\n"
                      "def net():\n    return 0\n"
                      "try:\n    spec_of(net, 'model_fn')\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    assert ("model_fn must be 'MODULE:FN' or an importable top-level function: net is defined in the script being "
            "run (__main__), which the rank processes do not import; define it in a module beside the script") in out
    with pytest.raises(ValueError, match=r"<lambda> is not a top-level function of a module \(a lambda"):
        spec_of(lambda: 0, "model_fn")


UNGUARDED = """import torch
from torch import nn
from host_agent.scheduling.cgp import CGPConfig, train_cgp
from host_agent.scheduling.groups import GroupsConfig, run


def model():
    return nn.Sequential(nn.Linear(4, 3))


def data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(40, 4, generator=g), torch.arange(40) % 3, torch.randn(9, 4, generator=g), torch.arange(9) % 3


print("imported as", __name__, flush=True)
if "{which}" == "cgp":
    train_cgp("{mod}:model", "{mod}:data", CGPConfig(mode="asp", duration_s=0.5, cgroups=False))
else:
    run(GroupsConfig(model="{mod}:model", data="{mod}:data", slots=1, iters=1, methods="bsp", cgroups=False))
"""


@pytest.mark.parametrize("which", ["cgp", "groups"])
def test_a_script_that_runs_at_import_is_refused_before_any_process_starts(tmp_path, which):
    """A script without ``if __name__ == "__main__":`` naming its own functions (``python
    exp.py``, ``train_cgp("exp:model", ...)`` at its top level): loading ``exp:model`` imported
    the script again, which started a run while loading, whose ranks imported it and each
    started another, and so on: it never finished. Now the nested call is refused, naming the
    module and the fix, before any rank process starts."""
    mod = f"unguarded_{which}"
    (tmp_path / f"{mod}.py").write_text(UNGUARDED.format(which=which, mod=mod))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, f"{mod}.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=240)
    what = "train_cgp" if which == "cgp" else "groups.run"
    assert p.returncode == 1
    assert (f"ValueError: {what} was called while module '{mod}' was being imported for '{mod}:") in p.stderr
    assert f"Put the call under 'if __name__ == \"__main__\":' in {mod}.py" in p.stderr
    assert p.stdout.splitlines() == ["imported as __main__", f"imported as {mod}"]  # no rank imported it
    assert not list(tmp_path.glob("rank*.log"))


def test_module_fn_names_round_trip_and_bad_names_say_what():
    spec = spec_of(top_level_fn, "model_fn")
    assert spec == f"{__name__}:top_level_fn" and load_fn(spec, "model")() == 41
    assert spec_of("a.b:c", "model_fn") == "a.b:c"
    with pytest.raises(ValueError, match="model_fn must be 'MODULE:FN'"):
        spec_of(lambda: 0, "model_fn")
    with pytest.raises(ValueError, match="data set 'nocolon': expected MODULE:FN"):
        load_fn("nocolon", "data set")
    with pytest.raises(ValueError, match="cannot load model 'no_such_mod_saatp:f'"):
        load_fn("no_such_mod_saatp:f", "model")
    with pytest.raises(ValueError, match="cannot load model 'json:no_such_fn'"):
        load_fn("json:no_such_fn", "model")


def test_result_files_write_json_and_plot_only_when_asked(tmp_path, capsys):
    plotted = []
    res = {"a": [1, 2.5]}
    out = tmp_path / "r.json"
    write_result_files(res, str(out), None, lambda r, p: plotted.append(p))
    assert json.loads(out.read_text()) == res and plotted == []
    write_result_files(res, None, str(tmp_path / "r.png"), lambda r, p: plotted.append((r, p)))
    assert plotted == [(res, str(tmp_path / "r.png"))]
    assert capsys.readouterr().out.splitlines() == [f"wrote {out}", f"wrote {tmp_path / 'r.png'}"]


def test_a_plot_path_without_a_suffix_is_named_as_the_png_written(tmp_path, capsys):
    """--plot out/run: matplotlib writes out/run.png, and the commands printed "wrote out/run",
    a file that did not exist (until 2026-11-28)."""
    from host_agent.scheduling.groups.plot import plot_groups
    res = {"budget": 0.02, "config": {"iters": 2}, "runs": {"bsp": {"slots": [dict(slot=0, T=0.002, cost=0.004,
                                                                                test_acc=0.4)]}}}
    write_result_files(res, None, str(tmp_path / "run"), plot_groups)
    assert (tmp_path / "run.png").read_bytes()[:4] == b"\x89PNG" and not (tmp_path / "run").exists()
    assert capsys.readouterr().out.splitlines() == [f"wrote {tmp_path / 'run.png'}"]
    write_result_files(res, None, str(tmp_path / "run.svg"), plot_groups)  # a suffix is kept
    assert (tmp_path / "run.svg").exists() and capsys.readouterr().out.splitlines() == [f"wrote {tmp_path / 'run.svg'}"]


def test_accuracy_of_a_parameter_vector_estimates_batch_norm_statistics_first():
    """The trainers exchange parameters only: a batch-norm model's running statistics are
    estimated from the training split before the test accuracy (else eval mode normalises
    with a fresh layer's mean 0 and variance 1)."""
    import torch
    from torch import nn

    from host_agent.scheduling import digits
    data = digits.load(0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10), nn.BatchNorm1d(10))
    w = nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    w[-10:] += 3.0  # the BatchNorm's bias: shifts every logit alike
    digits.accuracy_of(model, w, data)
    bn = model[2]
    with torch.no_grad():
        z = model[1](model[0](data.x_train))
    # update_bn averages the batches' statistics alike (the last batch is smaller): close to,
    # not exactly, the split's; a fresh layer's would be 0 and 1
    assert torch.allclose(bn.running_mean, z.mean(0), atol=0.01) and z.mean(0).abs().max() > 0.3
    assert torch.allclose(bn.running_var, z.var(0), rtol=0.03) and (z.var(0) - 1).abs().max() > 0.3
    assert torch.equal(nn.utils.parameters_to_vector(model.parameters()), w)
    plain = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))  # no batch norm: the accuracy as before
    v = nn.utils.parameters_to_vector(plain.parameters()).detach()
    assert digits.accuracy_of(plain, v, data) == digits.accuracy(plain, data.x_test, data.y_test)


def test_a_users_numpy_data_set_gets_the_dtypes_the_models_take():
    import numpy as np
    import torch

    from host_agent.scheduling import digits
    rng = np.random.default_rng(0)
    d = digits.Dataset(rng.normal(size=(8, 13)), rng.integers(0, 3, 8).astype(np.int32),
                       rng.normal(size=(4, 13)), rng.integers(0, 3, 4).astype(np.int32))
    assert d.x_train.dtype == d.x_test.dtype == torch.float32  # numpy's float64 would not meet float32 weights
    assert d.y_train.dtype == d.y_test.dtype == torch.int64  # what cross_entropy takes
    torch.nn.functional.cross_entropy(torch.nn.Linear(13, 3)(d.x_train), d.y_train)
    # labels as numpy.loadtxt or pandas give them, whole numbers in floats (refused until
    # 2026-11-28), and binary labels as bools: class labels
    f = digits.Dataset(d.x_train, d.y_train.numpy().astype(np.float64), d.x_test, d.y_test.float())
    assert f.y_train.dtype == f.y_test.dtype == torch.int64
    assert torch.equal(f.y_train, d.y_train) and torch.equal(f.y_test, d.y_test)
    b = digits.Dataset(d.x_train, d.y_train > 0, d.x_test, d.y_test > 0)
    assert b.y_train.dtype == torch.int64 and torch.equal(b.y_train, (d.y_train > 0).long())
    frac = d.y_train.float()
    frac[3] = 1.5
    with pytest.raises(ValueError, match=r"integer class labels 0..C-1, got torch.float32 with 1.5 \(sample 3; 1 of 8"):
        digits.Dataset(d.x_train, frac, d.x_test, d.y_test)
    with pytest.raises(ValueError, match="with nan"):
        digits.Dataset(d.x_train, d.y_train, d.x_test, torch.tensor([0.0, float("nan"), 1.0, 2.0]))


def test_an_nn_module_list_is_a_list_of_layers_for_train_groups_and_cgp():
    """As the pipelines take it (build_layers): until 2026-11-28 train cgp failed with 'Module
    [ModuleList] is missing the required "forward" function' and train groups refused it as not
    an nn.Sequential."""
    from host_agent.scheduling import digits
    from host_agent.scheduling.groups.checks import check_model_on_data
    m = digits.sequential_from("tests.testsupport.user_models:module_list")
    assert isinstance(m, torch.nn.Sequential) and [type(x).__name__ for x in m] == ["Flatten", "Linear", "ReLU",
                                                                                   "Linear"]
    assert check_model_on_data(digits.model_from("tests.testsupport.user_models:module_list"), digits.load(0),
                               "m") == 10
    with pytest.raises(ValueError, match=r"item 1 \(builtin_function_or_method\) of its list is not an nn.Module"):
        digits.model_from("tests.testsupport.user_models:list_with_a_function")


def test_train_groups_runs_a_model_it_cannot_cut_as_data_parallel_replicas(capsys, tmp_path):
    """A ``class Net(nn.Module)`` with its own forward (what most users bring) is one layer:
    every method runs it as whole replicas, and the run says why no pipeline appears. Until
    2026-11-28 train groups refused it ("needs an nn.Sequential")."""
    import json

    from emulation.cli import main
    from host_agent.scheduling import digits
    m = digits.sequential_from("tests.testsupport.user_models:net")
    assert isinstance(m, torch.nn.Sequential) and len(m) == 1 and type(m[0]).__name__ == "Net"
    net, listed = "tests.testsupport.user_models:net", "tests.testsupport.user_models:module_list"
    assert digits.uncut_note(net, digits.model_from(net)).startswith("note: model")
    assert digits.uncut_note(listed, digits.model_from(listed)) is None
    out = tmp_path / "r.json"
    assert main(["train", "groups", "--model", "tests.testsupport.user_models:net", "--slots", "1", "--iters", "2",
                 "--planner", "lyapunov", "--planner", "pipeline", "--no-cgroups", "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "is a Net, not an nn.Sequential: train groups runs it as one layer" in err
    runs = json.loads(out.read_text())["runs"]
    for method in ("lyapunov", "pipeline"):
        plan = runs[method]["slots"][0]["plan"]
        assert plan["n_layers"] == 1
        assert all(len(g["ranks"]) == 1 and g["bounds"] == [0, 1] for g in plan["groups"])
        assert runs[method]["final_test_acc"] > 0


def test_a_parameter_without_a_gradient_contributes_zeros():
    from torch import nn

    from host_agent.scheduling.grad_vectors import grads_to_vector
    used, unused = nn.Linear(3, 2), nn.Linear(2, 2)
    frozen = nn.Parameter(torch.ones(4), requires_grad=False)
    params = [*used.parameters(), *unused.parameters(), frozen]
    used(torch.ones(5, 3)).sum().backward()
    v = grads_to_vector(params)
    assert v.numel() == nn.utils.parameters_to_vector(params).numel() == 8 + 6 + 4
    assert torch.equal(v[:6], torch.full((6,), 5.0)) and torch.equal(v[6:8], torch.full((2,), 5.0))
    assert not v[8:].any()  # the unused layer's and the frozen parameter's slots
    out = torch.full((20,), 7.0)
    grads_to_vector(params, out[:18])
    assert torch.equal(out[:18], v) and out[18:].eq(7).all()
    assert grads_to_vector([]).numel() == 0


def test_a_model_module_in_the_current_directory_is_found_as_python_m_finds_it(tmp_path, monkeypatch):
    """The saatp console script's path does not hold the current directory; a user's
    ``mymodel.py`` there must load all the same (the processes it starts find it there)."""
    import sys

    from host_agent.scheduling.fn_specs import load_fn
    (tmp_path / "saatp_user_model_xyz.py").write_text("def fn():\n    return 42\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_fn("saatp_user_model_xyz:fn", "model")() == 42
    with pytest.raises(ValueError, match="cannot load model"):
        load_fn("saatp_no_such_module_xyz:fn", "model")


def test_backends_other_than_gloo_and_saatp_are_refused_before_any_process_starts():
    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.groups.executor import GroupsConfig
    from host_agent.scheduling.pipeline.launch import check_config
    from host_agent.scheduling.pipeline.worker import StageConfig

    for make in (lambda: GroupsConfig(backend="nccl"), lambda: CGPConfig(backend="mpi"),
                 lambda: check_config(StageConfig(model="vgg-mini", cuts=[5], B=8, steps=1, schedule="torch-gpipe",
                                                  M=2, backend="nccl"))):
        with pytest.raises(ValueError, match=r"is not supported: gloo or saatp \(the runs keep their tensors on the CPU"):
            make()
    p = argparse.ArgumentParser()
    add_run_options(p, "nn.Module", "worker", "0.4,0.3")
    with pytest.raises(SystemExit):
        p.parse_args(["--backend", "nccl"])


def test_the_store_takes_another_port_when_its_free_port_was_taken_meanwhile(monkeypatch):
    """Two runs started at the same time: the port free_port released may be bound by the other
    before this run's store listens; before, the run failed with "address already in use"."""
    import socket

    from host_agent.scheduling import rank_processes
    taken = socket.socket()
    taken.bind((rank_processes.HOST, 0))
    taken.listen()
    try:
        ports = [taken.getsockname()[1]]  # the first port it is given is in use by then
        real = rank_processes.free_port
        monkeypatch.setattr(rank_processes, "free_port", lambda: ports.pop() if ports else real())
        store, port = rank_processes.host_store(1, 30)
        assert port != taken.getsockname()[1] and not ports
        store.set("k", "v")
        assert store.get("k") == b"v"
    finally:
        taken.close()


def test_a_store_blob_over_the_stores_8_mib_value_limit_round_trips():
    """torch's TCPStore drops a connection that sets a value over 8 MiB ("Connection reset by
    peer"); put_blob splits a value into parts, get_blob joins them and deletes the parts."""
    import os as _os

    from host_agent.scheduling.rank_processes import STORE_CHUNK, get_blob, host_store, put_blob
    store, _ = host_store(1, 30)
    data = _os.urandom(20 << 20)
    put_blob(store, "params/0/0", data)
    assert store.num_keys() >= 1 + -(-len(data) // STORE_CHUNK)
    assert get_blob(store, "params/0/0") == data
    assert not store.check([f"params/0/0/{i}" for i in range(3)])
    put_blob(store, "small", b"")
    assert get_blob(store, "small") == b""


def test_result_json_is_strict_json_with_null_for_nan_and_infinity(tmp_path):
    """A diverged run's NaN losses were written as ``NaN``, which JSON.parse refuses."""
    import json

    from host_agent.scheduling.result_files import write_json

    path = tmp_path / "new" / "r.json"
    write_json(str(path), {"loss": float("nan"), "runs": [{"t": [1.5, float("inf"), -float("inf")]}], "n": 3,
                           "pair": (float("nan"), "x")})

    def refuse(name):
        raise AssertionError(f"not JSON: {name}")

    got = json.loads(path.read_text(), parse_constant=refuse)
    assert got == {"loss": None, "runs": [{"t": [1.5, None, None]}], "n": 3, "pair": [None, "x"]}


@pytest.mark.parametrize("module", ["host_agent.scheduling.groups.worker", "host_agent.scheduling.cgp.procs",
                                    "host_agent.scheduling.pipeline.worker"])
def test_a_failing_rank_logs_its_traceback_and_skips_the_teardown(tmp_path, module):
    """A rank that raised (its parent killed by SIGKILL: the store gone) went through the
    interpreter's and libtorch's teardown, which ``end_rank`` skips as ``exit_rank`` does for a
    finished rank: under a 0.1 CPU quota a groups rank was still tearing down, holding its
    cgroup, 80 s after its parent died; CGP's ranks took 58 s."""
    import subprocess
    import sys
    cfg = tmp_path / "config.json"
    cfg.write_text("{}")  # an empty config: the rank fails at once
    code = ("import atexit, runpy, sys\n"
            "atexit.register(lambda: print('TEARDOWN', flush=True))\n"  # runs only with the interpreter's teardown
            f"sys.argv = ['rank', {str(cfg)!r}, '0']\n"
            f"runpy.run_module({module!r}, run_name='__main__')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "Traceback" in p.stderr and "Error" in p.stderr  # the log still says why
    assert "TEARDOWN" not in p.stdout


def _dead(pid: int) -> bool:
    """Gone, or a zombie nobody has reaped yet."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux's")
def test_a_rank_dies_with_its_parent(tmp_path):
    """A parent killed by SIGKILL cannot kill its ranks: they sat in the store's connect retries
    for up to the run's timeout (300 s) while starting, or until their next store call."""
    (tmp_path / "sleeper.py").write_text(
        "import time\nfrom host_agent.scheduling.rank_processes import rank_main\n"
        "if __name__ == '__main__':\n"
        "    rank_main('sleeper', lambda cfg, r: (print('up', flush=True), time.sleep(120)))\n")
    (tmp_path / "cfg.json").write_text("{}")
    parent = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom host_agent.scheduling.rank_processes import RankProcesses\n"
                               "r = RankProcesses('.', 'test'); r.start('sleeper', 'cfg.json', 1)\n"
                               "print(r.procs[0].pid, flush=True); time.sleep(120)\n"],
        cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        log = tmp_path / "rank0.log"
        deadline = time.monotonic() + 60
        while "up" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "up" in log.read_text() and not _dead(pid)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while not _dead(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not _dead(pid):
        os.kill(pid, signal.SIGKILL)  # do not leave it behind
        pytest.fail("the rank outlived its parent")


def test_the_logged_held_out_models_load_as_the_commands_load_them(monkeypatch):
    """scripts/heldout_models.py holds the models of the logged held-out-style runs: each loads
    through the commands' own loaders and trains a step (the figures name them)."""
    import os

    from host_agent.scheduling import digits
    from host_agent.scheduling.groups.checks import check_model_on_data
    from host_agent.scheduling.pipeline.models import build_layers, load_model
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts"))
    for data_fn, sizes, model_fn in (("digits_split", (1257, 540), "gelu_cnn"),
                                     ("digits_60_40", (1078, 719), "bn_cnn")):
        data = digits.dataset_from(f"heldout_models:{data_fn}")
        assert (len(data.x_train), len(data.x_test)) == sizes
        assert check_model_on_data(digits.sequential_from(f"heldout_models:{model_fn}"), data, "m") == 10
    for model_fn, n_layers in (("tcn_mini", 12), ("mixer_mini", 10)):
        spec = load_model(f"heldout_models:{model_fn}")
        layers = build_layers(spec, 0)
        x, y = spec.make_batch(4, 0)
        loss = spec.loss_sum(layers(x), y)
        loss.backward()
        assert len(layers) == n_layers and torch.isfinite(loss)
