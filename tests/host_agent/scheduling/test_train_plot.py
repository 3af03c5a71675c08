"""``saatp train pipeline --plot``: the reported iteration times per method and per step beside
the model's predictions, and the model's error over every measured configuration."""

import json

import pytest

from tests.testsupport.profiles import six_layer_profile


def _run(label, times, predicted, rows=None, equal=True):
    s = sorted(times)
    return dict(label=label, family=label.split()[0], iterations_s=times, measured_s=s[len(s) // 2],
                predicted_s=predicted, error_pct=(predicted - s[len(s) // 2]) / s[len(s) // 2] * 100,
                rows=rows, equal=equal)


def _drawn(monkeypatch, res):
    """The figure :func:`plot_pipeline` draws for ``res``, caught at ``savefig``."""
    from matplotlib.figure import Figure

    from host_agent.scheduling.train.plot import plot_pipeline

    caught = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: caught.append(fig))
    plot_pipeline(res, "unused.png")
    return caught[0]


def test_the_plot_shows_every_method_its_prediction_and_the_model_error(monkeypatch):
    final = [_run("umpipe #1 1f1b", [0.10, 0.11, 0.12], 0.105, rows=[[5, 3], [5, 3]], equal=False),
             _run("torch-1f1b M=4", [0.12, 0.13, 0.20], 0.16)]
    tuned = [_run("umpipe #1 1f1b", [0.1, 0.1], 0.105), _run("gpipe M=2", [0.3, 0.3], 0.2)]
    res = dict(summary=dict(runs=final, umpipe_vs_best_baseline=dict(
        baseline="torch-1f1b M=4", speedup_pct=18.2, steps_won=3, steps=3)), tuning=dict(runs=tuned))
    box, steps, model = _drawn(monkeypatch, res).axes
    # one box per method, its unequal microbatches in its label, a cross at each prediction
    assert [t.get_text() for t in box.get_xticklabels()] == ["umpipe #1 1f1b\n5,3", "torch-1f1b M=4"]
    crosses = [ln for ln in box.get_lines() if ln.get_label() == "model's prediction"][0]
    assert list(crosses.get_ydata()) == pytest.approx([105.0, 160.0])
    assert "+18.2 %" in box.get_xlabel() and "3/3 steps" in box.get_xlabel()
    # each method's iterations step by step, in ms
    lines = {ln.get_label(): list(ln.get_ydata()) for ln in steps.get_lines()}
    assert lines["torch-1f1b M=4"] == pytest.approx([120.0, 130.0, 200.0])
    # the model's error: 160 predicted against a 130 median is 23 % off; 105 against 110 within
    assert model.get_title() == "cost model: 1/2 reported within 15 %"
    sizes = sorted(len(c.get_offsets()) for c in model.collections if c.get_label().startswith(("tuning", "reported")))
    assert sizes == [2, 2]


def test_train_pipeline_writes_the_plot_and_refuses_it_over_the_profile(tmp_path, monkeypatch, capsys):
    from emulation.cli import main
    from host_agent.scheduling.train import cli

    model, prof = six_layer_profile(tmp_path, monkeypatch)
    monkeypatch.setattr(cli.launch, "run", lambda cfg, **kw: dict(
        runs=[dict(iteration_s=[0.01, 0.012, 0.011], losses=[1.0]) for _ in cfg.runs]))
    args = ["train", "pipeline", "--model", model, "--stages", "2", "--quota", "none", "--profile", str(prof),
            "--batch", "6", "--schedule", "gpipe", "--schedule", "umpipe", "--candidates", "1", "--steps", "3"]
    assert main(args + ["--json", "out/r.json", "--plot", "out/r"]) == 0
    assert "wrote out/r.png" in capsys.readouterr().out
    assert (tmp_path / "out" / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "out" / "r.json").read_text())["summary"]["runs"]
    text = prof.read_text()
    assert main(args + ["--plot", str(prof)]) == 2
    assert "--plot" in capsys.readouterr().err and prof.read_text() == text
