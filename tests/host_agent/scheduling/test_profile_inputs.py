"""What ``saatp profile`` says about bad input: ``--sizes`` values, and a model layer whose
output is not one tensor (no stage boundary can follow it)."""

import pytest

from host_agent.scheduling.pipeline.models import load_model


def test_profile_sizes_say_what_is_wrong(tmp_path, capsys):
    from emulation.cli import main
    from host_agent.scheduling.profile.cli import parse_sizes

    assert parse_sizes("8, 4,4,1,") == [1, 4, 8]
    for text, want in (("0,4,8", "a microbatch size must be at least 1, not 0"),
                       ("4,-2,8", "at least 1, not -2"), ("4,x", "'x' is not a whole number"),
                       ("4,4", "at least two different sizes"), ("", "at least two different sizes")):
        with pytest.raises(ValueError, match=want):
            parse_sizes(text)
    out = tmp_path / "p.json"
    assert main(["profile", "--model", "vgg-mini", "--quota", "none", "--sizes", "0,4,8", "--out", str(out)]) == 2
    assert "--sizes=0,4,8: a microbatch size must be at least 1, not 0" in capsys.readouterr().err
    assert not out.exists()


TUPLE_MODEL = '''
import torch
from torch import nn
from host_agent.scheduling.pipeline.models import ModelSpec


class Pair(nn.Module):
    def forward(self, x):
        return (x, 2 * x)


class Unpair(nn.Module):
    def forward(self, t):
        return t[0] + t[1]


def spec():
    return ModelSpec("tuple-act", lambda: nn.Sequential(nn.Linear(8, 8), Pair(), Unpair(), nn.Linear(8, 3)),
                     lambda B, step: (torch.randn(B, 8), torch.randint(0, 3, (B,))),
                     lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
'''


def test_a_layer_that_returns_a_tuple_is_refused_by_name(tmp_path, monkeypatch, capsys):
    """Every child of the model's nn.Sequential is a place to cut, and a stage boundary carries
    one tensor: the profiler says which layer breaks that (it failed inside its subprocess with
    torch's traceback, "randn_like(): argument 'input' ... must be Tensor, not tuple")."""
    from emulation.cli import main
    from host_agent.scheduling.profile.measure import NotOneTensor, check_layer_outputs

    (tmp_path / "saatp_tuple_model_xyz.py").write_text(TUPLE_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NotOneTensor, match=r"layer 1 \(Pair\) returns a tuple, not a tensor"):
        check_layer_outputs(load_model("saatp_tuple_model_xyz:spec"), 2)
    check_layer_outputs(load_model("vgg-mini"), 1)  # every layer of ours passes one tensor on
    out = tmp_path / "p.json"
    assert main(["profile", "--model", "saatp_tuple_model_xyz:spec", "--stages", "2", "--quota", "none",
                 "--sizes", "1,2", "--min-time", "0.001", "--no-calibrate", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "layer 1 (Pair) returns a tuple" in err and "stage boundary must carry one tensor" in err
    assert "Traceback" not in err and not out.exists()


LSTM_MODEL = '''
import torch
from torch import nn


class Last(nn.Module):
    def forward(self, x):
        return x[:, -1]


def spec():
    return (lambda: nn.Sequential(nn.Linear(8, 8), nn.LSTM(8, 6, batch_first=True), Last(), nn.Linear(6, 3)),
            lambda B, step: (torch.randn(B, 4, 8), torch.randint(0, 3, (B,))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
'''


def test_a_layer_that_fails_on_a_tuple_names_the_layer_that_returned_it(tmp_path, monkeypatch, capsys):
    """A bare nn.LSTM returns (output, (h, c)): the next layer failed on it before the profiler's
    layer check ran, and the commands said only "the model fails on make_batch(64, 0)'s input
    ...: TypeError: tuple indices must be integers or slices, not tuple", naming no layer."""
    from emulation.cli import main

    (tmp_path / "saatp_bare_lstm_xyz.py").write_text(LSTM_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["train", "pipeline", "--model", "saatp_bare_lstm_xyz:spec", "--stages", "2", "--quota", "none"]) == 2
    err = capsys.readouterr().err
    assert ("TypeError: tuple indices must be integers or slices, not tuple (in layer 2, Last, whose input, the "
            "output of layer 1 (LSTM), is a tuple, not one tensor") in err and "lstm(x)[0]" in err


def test_a_last_layer_that_returns_a_dict_is_told_to_move_the_rest_into_loss_sum():
    """The last layer's output goes to loss_sum, not across a boundary: it was told to put "the
    layers that pass the dict on" into one module, when there are none after it."""
    import torch
    from torch import nn

    from host_agent.scheduling.pipeline.models import ModelSpec
    from host_agent.scheduling.profile.measure import NotOneTensor, check_layer_outputs

    class Head(nn.Module):
        def forward(self, x):
            return {"logits": x}

    m = ModelSpec("dict-head", lambda: nn.Sequential(nn.Linear(8, 3), Head()),
                  lambda B, step: (torch.randn(B, 8), torch.randint(0, 3, (B,))),
                  lambda out, y: nn.functional.cross_entropy(out["logits"], y, reduction="sum"))
    with pytest.raises(NotOneTensor) as e:
        check_layer_outputs(m, 2)
    assert "layer 1 (Head), the model's last, returns a dict" in str(e.value)
    assert "compute the rest in loss_sum" in str(e.value) and "pass the dict on" not in str(e.value)

IDS_MODEL = '''
import torch
from torch import nn


class Wrap(nn.Module):
    def forward(self, x):
        return x % 20


def spec():
    return (lambda: nn.Sequential(Wrap(), nn.Embedding(20, 4), nn.Flatten(), nn.Linear(12, 3)),
            lambda B, step: (torch.randint(0, 50, (B, 3)), torch.randint(0, 3, (B,))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))


def whole():
    return (lambda: nn.Sequential(nn.Sequential(Wrap(), nn.Embedding(20, 4)), nn.Flatten(), nn.Linear(12, 3)),
            lambda B, step: (torch.randint(0, 50, (B, 3)), torch.randint(0, 3, (B,))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
'''


def test_a_layer_that_passes_integers_on_is_refused_by_name(tmp_path, monkeypatch, capsys):
    """A layer of token ids before the Embedding: a stage boundary after it would carry integers
    (the wire sends float32, and no gradient flows back); the profiler failed inside its
    subprocess with torch's "normal_kernel_cpu not implemented for 'Long'"."""
    from emulation.cli import main
    from host_agent.scheduling.profile.measure import NotFloatBoundary, check_layer_outputs

    (tmp_path / "saatp_ids_model_xyz.py").write_text(IDS_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NotFloatBoundary, match=r"layer 0 \(Wrap\) returns a torch.int64 tensor"):
        check_layer_outputs(load_model("saatp_ids_model_xyz:spec"), 2)
    check_layer_outputs(load_model("saatp_ids_model_xyz:whole"), 2)  # the ids inside one layer: fine
    out = tmp_path / "p.json"
    assert main(["profile", "--model", "saatp_ids_model_xyz:spec", "--stages", "2", "--quota", "none",
                 "--no-calibrate", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "layer 0 (Wrap) returns a torch.int64 tensor" in err and "Traceback" not in err


def test_a_layer_profile_past_its_time_limit_is_an_error_not_a_traceback(tmp_path, monkeypatch):
    """The layer profiler (one process, no peers for the stall watch) has a time limit; reaching
    it is a RuntimeError that names the limit and the process, and the process is gone."""
    import os

    from host_agent.scheduling.profile import cli
    monkeypatch.setattr(cli, "LAYER_TIMEOUT_S", 0.3)  # the child cannot even import torch in that
    with pytest.raises(RuntimeError, match=r"did not finish in 0.3 s \(process (\d+)") as e:
        cli._profile_cpu("vgg-mini", [2], 0.01, str(tmp_path))
    pid = int(e.value.args[0].split("(process ")[1].split(":")[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped


def test_a_layer_profiler_killed_is_named_with_how_it_ended(tmp_path, monkeypatch):
    """The layer profiler killed by SIGKILL (by hand, the OOM killer): "profiling the layers
    failed:" and nothing more, until 2026-11-28."""
    import subprocess

    from host_agent.scheduling.profile import cli

    class Killed(subprocess.Popen):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.kill()

    monkeypatch.setattr(cli.subprocess, "Popen", Killed)
    with pytest.raises(RuntimeError, match=r"profiling the layers failed: its process \d+ ended \(killed by SIGKILL\) "
                                           r"and printed nothing"):
        cli._profile_cpu("vgg-mini", [2], 0.01, str(tmp_path))


DOUBLE_MODEL = '''
import torch
from torch import nn


def batch(B, step):
    return torch.randn(B, 6, dtype=torch.float64), torch.randint(0, 3, (B,))


def loss(out, y):
    return nn.functional.cross_entropy(out, y, reduction="sum")


def double():
    return (lambda: nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).double(), batch, loss)


def double_inside():  # float64 inside one layer, float32 at every boundary: fine
    return (lambda: nn.Sequential(nn.Sequential(nn.Linear(6, 8).double(), nn.ReLU(), Float()), nn.Linear(8, 3)),
            batch, loss)


class Float(nn.Module):
    def forward(self, x):
        return x.float()
'''


def test_a_float64_boundary_is_refused_by_name(tmp_path, monkeypatch, capsys):
    """The wire carries float32: a float64 model was profiled, then every pipeline run failed
    in the stages with torch's "mat1 and mat2 must have the same dtype, but got Float and
    Double" (the next stage got float32)."""
    from emulation.cli import main
    from host_agent.scheduling.profile.measure import NotFloatBoundary, check_layer_outputs

    (tmp_path / "saatp_double_model_xyz.py").write_text(DOUBLE_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NotFloatBoundary, match=r"layer 0 \(Linear\) returns a torch.float64 tensor: .* carries "
                                               r"float32 activations and gradients"):
        check_layer_outputs(load_model("saatp_double_model_xyz:double"), 2)
    check_layer_outputs(load_model("saatp_double_model_xyz:double_inside"), 2)
    out = tmp_path / "p.json"
    assert main(["profile", "--model", "saatp_double_model_xyz:double", "--stages", "2", "--quota", "none",
                 "--no-calibrate", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "layer 0 (Linear) returns a torch.float64 tensor" in err and "Traceback" not in err and not out.exists()


def test_cuts_without_a_calibration_are_refused(tmp_path, capsys):
    """--cuts is the split of the calibration runs; with --no-calibrate it was dropped without a
    word (the profile records no split, and the planners then chose their own)."""
    from emulation.cli import main

    out = tmp_path / "p.json"
    assert main(["profile", "--model", "vgg-mini", "--stages", "2", "--quota", "none", "--no-calibrate",
                 "--cuts", "3", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--cuts is the split of the calibration runs: it does nothing with --no-calibrate" in err
    assert not out.exists()


def test_the_least_microbatch_is_found_below_the_smallest_size_profiled():
    """With --sizes 2,4 vgg-mini was recorded as training only on 2 samples or more (the
    smallest size given that ran), and no plan had a microbatch of one."""
    from host_agent.scheduling.profile.measure import smallest_runnable
    from tests.testsupport import user_models

    assert smallest_runnable(load_model("vgg-mini"), [2, 4]) == 1
    assert smallest_runnable(user_models.spec(), [4, 8]) == 2  # a BatchNorm1d: 2, not 4


SEQ_FIRST_MODEL = '''
import torch
from torch import nn


class SeqFirst(nn.Module):
    def forward(self, x):
        return x.transpose(0, 1)  # (B, S, D) -> (S, B, D)


def spec():
    return (lambda: nn.Sequential(nn.Embedding(20, 8), SeqFirst(), nn.Linear(8, 8), SeqFirst(), nn.Flatten(),
                                  nn.Linear(24, 3)),
            lambda B, step: (torch.randint(0, 20, (B, 3)), torch.randint(0, 3, (B,))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))


def batch_first():
    return (lambda: nn.Sequential(nn.Embedding(20, 8), nn.Sequential(SeqFirst(), nn.Linear(8, 8), SeqFirst()),
                                  nn.Flatten(), nn.Linear(24, 3)),
            lambda B, step: (torch.randint(0, 20, (B, 3)), torch.randint(0, 3, (B,))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
'''


def test_a_layer_whose_output_is_not_batch_first_is_refused_by_name(tmp_path, monkeypatch, capsys):
    """A stage boundary cuts and sends a tensor by its first dimension: a layer that puts the
    sequence first (a transformer with batch_first=False) cannot end a stage. Until 2026-11-28
    the profiler timed the layers and its calibration then failed in a stage process, gloo
    aborting with "Received data size doesn't match expected size" (a message of S times the
    values the receiver expected). Checked at two sample counts: the sequence length may equal one."""
    from emulation.cli import main
    from host_agent.scheduling.profile.measure import NotPerSample, check_layer_outputs

    (tmp_path / "saatp_seqfirst_model_xyz.py").write_text(SEQ_FIRST_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for b in (1, 2, 3):  # at b = 3 the sequence length equals the sample count
        with pytest.raises(NotPerSample, match=r"layer 1 \(SeqFirst\) returns a tensor of shape \[3, \d, 8\] for "):
            check_layer_outputs(load_model("saatp_seqfirst_model_xyz:spec"), b)
    check_layer_outputs(load_model("saatp_seqfirst_model_xyz:batch_first"), 1)  # inside one layer: fine
    out = tmp_path / "p.json"
    assert main(["profile", "--model", "saatp_seqfirst_model_xyz:spec", "--stages", "2", "--quota", "none",
                 "--no-calibrate", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "layer 1 (SeqFirst) returns a tensor of shape [3, 1, 8] for 1 sample:" in err
    assert "first dimension, which must be the samples" in err and "Traceback" not in err and not out.exists()


NESTED_MODEL = '''
import torch
from torch import nn


def spec():
    return (lambda: nn.Sequential(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8))),
                                  nn.Linear(8, 8), nn.ModuleList([nn.ReLU(), nn.Linear(8, 3)])[1]),
            lambda B, step: (torch.randn(B, 6), torch.randint(0, 3, (B,))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
'''


def test_the_profiler_says_which_layers_are_nested_and_stay_whole(tmp_path, monkeypatch):
    """A model of nested nn.Sequentials: the profiler said "3 layers" and nothing of the nested
    ones, which no plan cuts inside; now it names them and how to let the planner cut them.
    vgg-mini, whose conv blocks are nested by design, gets no note."""
    from host_agent.scheduling.profile import cli

    (tmp_path / "saatp_nested_model_xyz.py").write_text(NESTED_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop

    monkeypatch.setattr(cli, "_profile_cpu", stop)  # the note comes before the layers are timed
    for model, want in (("saatp_nested_model_xyz:spec", "note: model saatp_nested_model_xyz:spec: layer 0 "
                         "(Sequential of 3) is nested: only the children of the model's nn.Sequential (3 layers) "
                         "are places to cut"), ("vgg-mini", None)):
        said = []
        with pytest.raises(Stop):
            cli.run_profile(model, [None, None], log=said.append)
        notes = [s for s in said if s.startswith("note: model")]
        assert notes == ([] if want is None else [notes[0]]) and (want is None or notes[0].startswith(want)), said


def test_the_profile_printout_says_what_its_calibration_figures_are(tmp_path, monkeypatch, capsys):
    """The calibration lines printed "(knee 2)" with no unit and "model 1.5 -> 4.2 ms" without
    saying which model figure was which, nor which one the error was of."""
    from emulation.cli import main
    from host_agent.scheduling.profile import cli
    from tests.testsupport.profiles import two_stage_profile

    fit = dict(alpha=2e-4, beta=1e-5, knee=2.0)
    prof = dict(two_stage_profile(), seconds=1.0, calibration=dict(
        B=8, cuts=[3], quotas=[0.5, 0.25], stages=[dict(fwd=fit, bwd=fit, tail=1e-3)] * 2, rms_rel_err=0.1,
        max_abs_rel_err=0.2, points=[dict(label="gpipe M=1", measured_s=0.010, before_s=0.005, after_s=0.012)]))
    for L in prof["cpu"]["layers"]:
        L["fwd"], L["bwd"] = {"8": 1e-4}, {"8": 2e-4}
    monkeypatch.setattr(cli, "run_profile", lambda *a, **k: prof)
    assert main(["profile", "--model", "vgg-mini", "--stages", "2", "--quota", "none", "--sizes", "4,8",
                 "--batch", "8", "--out", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "(b: samples per microbatch, at least the knee, 2)" in out, out
    assert "model: the layers' tight-loop times -> calibrated (the error is the calibrated one's)" in out
    assert "gpipe M=1       measured    10.0 ms  model     5.0 ->    12.0 ms (+20.0%)" in out
