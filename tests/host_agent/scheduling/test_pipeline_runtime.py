"""The unequal-microbatch pipeline runtime trains exactly like one process would."""

import os

import pytest
import torch
from torch import nn

from host_agent.scheduling.costmodel import PipelineCosts
from host_agent.scheduling.orders import schedule
from host_agent.scheduling.pipeline import launch, reference
from host_agent.scheduling.pipeline.cgroups import CpuQuotas, QuotaReader, read_quota, unavailable_reason
from host_agent.scheduling.pipeline.worker import StageConfig

WARMUP, STEPS = 1, 2


def _params_after(out_dir: str, world: int, run: int = 0) -> list[dict]:
    return [torch.load(os.path.join(out_dir, f"rank{r}.run{run}.pt")) for r in range(world)]


def _assert_same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for k in g:
            torch.testing.assert_close(g[k], w[k], rtol=1e-4, atol=1e-5, msg=k)


def _plan(B: int, rows, kind: str):
    costs = PipelineCosts.from_arrays(B, [0.1] * len(rows), [0.01] * len(rows), send_lat=0.01)
    return schedule(costs, rows, kind).orders


def test_pipeline_matches_single_process_both_order_families(tmp_path):
    """3 stages, unequal and differently chunked microbatches; one session runs a fill-drain
    plan and a 1F1B-family plan, each from the same initial weights."""
    B, cuts = 12, [4, 9]
    fd = [[3, 5, 4], [2, 2, 8], [12]]
    ofb = [[2, 2, 2, 6], [5, 7], [3, 3, 3, 3]]
    runs = [dict(schedule="ours", rows=fd, orders=_plan(B, fd, "fill-drain")),
            dict(schedule="ours", rows=ofb, orders=_plan(B, ofb, "1f1b"))]
    # interleaved with the order rotating, and each timed iteration after an untimed one of the
    # same schedule on the same batch (lead): batches 0, 1, 1, 2, 2
    cfg = StageConfig(model="vgg-mini", cuts=cuts, B=B, steps=STEPS, warmup=WARMUP, schedule="ours", runs=runs,
                      save_params=True, lead=1, rotate=True)
    out = launch.run(cfg, keep_dir=str(tmp_path))
    want = reference.train("vgg-mini", cuts, B, 0, batches=[*range(WARMUP), *(k for k in range(WARMUP, WARMUP + STEPS)
                                                                           for _ in range(2))])
    before = reference.train("vgg-mini", cuts, B, 0)
    for i in range(2):
        got = _params_after(out["out_dir"], 3, run=i)
        # the parameters moved, and exactly as single-process training moved them
        assert any(not torch.equal(got[0][k], before[0][k]) for k in got[0])
        _assert_same(got, want)
        assert len(out["runs"][i]["iteration_s"]) == STEPS and all(t > 0 for t in out["runs"][i]["iteration_s"])
    assert out["runs"][0]["losses"] == pytest.approx(out["runs"][1]["losses"], rel=1e-5)


@pytest.mark.slow
def test_gpt_pipeline_matches_single_process(tmp_path):
    rows = [[1, 3, 2, 4], [6, 4]]
    cfg = StageConfig(model="gpt-mini", cuts=[3], B=10, steps=STEPS, warmup=WARMUP, schedule="ours", rows=rows,
                      orders=_plan(10, rows, "1f1b"), save_params=True)
    out = launch.run(cfg, keep_dir=str(tmp_path))
    _assert_same(_params_after(out["out_dir"], 2), reference.train("gpt-mini", [3], 10, WARMUP + STEPS))


def test_mismatched_rows_fail_clearly(tmp_path):
    rows = [[4, 4], [5, 4]]  # second stage sums to 9, not 8
    cfg = StageConfig(model="vgg-mini", cuts=[5], B=8, steps=1, warmup=0, schedule="ours", rows=rows,
                      orders=[[("F", 0), ("F", 1), ("B", 1), ("B", 0)]] * 2)
    with pytest.raises(ValueError, match="do not sum to B=8"):
        launch.run(cfg, keep_dir=str(tmp_path), timeout_s=120)


FAILING_BATCH = '''
from torch import nn


def spec():
    def batch(B, step):
        raise RuntimeError("make_batch has no data on this host")
    return (lambda: nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2)), batch, lambda out, y: out.sum())
'''


def test_a_failing_stage_fails_the_run_with_its_log(tmp_path, monkeypatch):
    """Every stage exits with the model's error (its make_batch fails in the stages): the run
    fails at once, naming the stages and quoting their logs."""
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "saatp_failing_batch_xyz.py").write_text(FAILING_BATCH)
    monkeypatch.syspath_prepend(str(tmp_path / "mod"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "mod"), os.environ.get("PYTHONPATH", "")]))
    cfg = StageConfig(model="saatp_failing_batch_xyz:spec", cuts=[1], B=4, steps=1, warmup=0,
                      schedule="torch-gpipe", M=2)
    run = tmp_path / "run"
    with pytest.raises(RuntimeError) as e:
        launch.run(cfg, keep_dir=str(run), timeout_s=120)
    msg = str(e.value)
    assert msg.startswith("pipeline run failed: stage 0 (exit status 1), stage 1 (exit status 1) ended the run"), msg
    assert f"the ranks' logs are in {run}, their ends:" in msg and "--- rank 1 ---" in msg
    assert "make_batch has no data on this host" in msg


@pytest.mark.parametrize("cfg, message", [
    # the model's error: every stage failed with it, and the caller read "stage 0 (exit status 1), ..."
    (dict(model="tests.testsupport.user_models:net", cuts=[1]), r"user_models:net\(\) must return a ModelSpec"),
    (dict(model="vgg-mini", cuts=[5, 15]), r"cuts \[5, 15\]: model vgg-mini has 15 layers .* within 1\.\.14"),
    (dict(model="vgg-mini", cuts=[5, 5]), r"cuts \[5, 5\]: .* must be increasing"),
    (dict(model="vgg-mini", cuts=[4, 9], schedule="torch-1f1b", M=2),
     r"torch-1f1b: microbatch count M=2 must be at least the 3 stages"),
    (dict(model="vgg-mini", cuts=[4], schedule="torch-zb", M=2), r"unknown schedule 'torch-zb'"),
    # warmup=-1 ran and returned no iteration times, lead=-1 ran as 0, steps=0 returned nothing,
    # B=0 with torch's GPipe was "M=2 must be at least the 2 stages (torch's Schedule1F1B)"
    (dict(model="vgg-mini", cuts=[4], warmup=-1), r"StageConfig.warmup = -1: expected a whole number >= 0"),
    (dict(model="vgg-mini", cuts=[4], lead=-1), r"StageConfig.lead = -1: expected a whole number >= 0"),
    (dict(model="vgg-mini", cuts=[4], steps=0), r"StageConfig.steps = 0: expected a whole number >= 1"),
    (dict(model="vgg-mini", cuts=[4], B=0), r"StageConfig.B = 0: expected a whole number >= 1")])
def test_what_the_stages_would_fail_on_is_refused_before_they_start(cfg, message, tmp_path):
    """A model that does not load, cuts beyond its layers, torch's 1F1B with fewer microbatches
    than stages: until 2026-11-28 launch.run started the stages, which each failed, and the
    reason was only in every stage's log tail."""
    cfg = StageConfig(**dict(dict(B=4, steps=1, warmup=0, schedule="torch-gpipe", M=2), **cfg))
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match=message):
        launch.run(cfg, keep_dir=str(tmp_path / "run"), timeout_s=120)
    assert not (tmp_path / "run" / "rank0.log").exists()  # no stage started
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's random stream as it was


@pytest.mark.slow
def test_torch_schedule_baseline_matches_single_process(tmp_path):
    cfg = StageConfig(model="vgg-mini", cuts=[6], B=8, steps=STEPS, warmup=WARMUP, schedule="torch-1f1b", M=4,
                      save_params=True)
    out = launch.run(cfg, keep_dir=str(tmp_path))
    _assert_same(_params_after(out["out_dir"], 2), reference.train("vgg-mini", [6], 8, WARMUP + STEPS))


def test_torch_schedule_on_one_stage_matches_single_process(tmp_path):
    """One stage is both the first and the last: it feeds the input and the target."""
    cfg = StageConfig(model="vgg-mini", cuts=[], B=8, steps=STEPS, warmup=WARMUP, schedule="torch-gpipe", M=2,
                      save_params=True)
    out = launch.run(cfg, keep_dir=str(tmp_path))
    _assert_same(_params_after(out["out_dir"], 1), reference.train("vgg-mini", [], 8, WARMUP + STEPS))


@pytest.mark.slow
def test_pipeline_on_saatp_backend(tmp_path):
    rows = [[3, 5], [2, 2, 4]]
    cfg = StageConfig(model="vgg-mini", cuts=[5], B=8, steps=1, warmup=1, schedule="ours", rows=rows,
                      orders=_plan(8, rows, "1f1b"), backend="saatp", save_params=True)
    out = launch.run(cfg, keep_dir=str(tmp_path))
    _assert_same(_params_after(out["out_dir"], 2), reference.train("vgg-mini", [5], 8, 2))


@pytest.mark.slow
def test_1f1b_on_three_stages_on_saatp_backend(tmp_path):
    """A middle stage posts its receives from both neighbours up front; under 1F1B with more
    microbatches than stages it needs a gradient from the next stage before the previous one
    has sent every activation. The saatp backend ran all receives on one thread, in posting
    order, and the run hung (every saatp profile --backend saatp of 3 stages or more: its
    calibration runs 1F1B at M = 4, 8, 16). The stall watch fails a hung run."""
    rows = [[2, 2, 2, 2]] * 3
    cfg = StageConfig(model="vgg-mini", cuts=[4, 9], B=8, steps=1, warmup=1, schedule="ours", rows=rows,
                      orders=_plan(8, rows, "1f1b"), backend="saatp", save_params=True)
    out = launch.run(cfg, keep_dir=str(tmp_path), stall_s=30)
    _assert_same(_params_after(out["out_dir"], 3), reference.train("vgg-mini", [4, 9], 8, 2))


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"cgroup v1 CPU quotas: {unavailable_reason()}")
def test_stage_processes_run_in_quota_cgroups_and_groups_are_removed(tmp_path):
    rows = [[4, 4], [8]]
    cfg = StageConfig(model="vgg-mini", cuts=[5], B=8, steps=1, warmup=0, schedule="ours", rows=rows,
                      orders=_plan(8, rows, "fill-drain"), save_params=True)
    before = set(os.listdir("/sys/fs/cgroup/cpu"))
    out = launch.run(cfg, quotas=[0.5, 0.25], keep_dir=str(tmp_path))
    after = set(os.listdir("/sys/fs/cgroup/cpu"))
    assert not {d for d in after if d.startswith(f"saatp-{os.getpid()}-")}  # ours removed
    # nothing else removed (other saatp runs on the host create and remove their own meanwhile)
    assert {d for d in before if not d.startswith("saatp-")} <= after
    _assert_same(_params_after(out["out_dir"], 2), reference.train("vgg-mini", [5], 8, 1))


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"cgroup v1 CPU quotas: {unavailable_reason()}")
def test_cpu_quota_group_settings_and_cleanup():
    with CpuQuotas(prefix=f"saatp-test-{os.getpid()}") as g:
        p = g.create("stage0", 0.25)
        with open(os.path.join(p, "cpu.cfs_quota_us")) as f:
            quota = int(f.read())
        with open(os.path.join(p, "cpu.cfs_period_us")) as f:
            period = int(f.read())
        assert quota == period // 4
        assert read_quota(p) == pytest.approx(0.25)  # what a process reads of its own group
        assert read_quota(g.create("stage1", None)) is None
        r = QuotaReader(p)  # the files stay open: it sees a quota rewritten after it opened them
        with open(os.path.join(p, "cpu.cfs_quota_us"), "w") as f:
            f.write(str(period // 10))
        assert r() == pytest.approx(0.1)
        r.close()
    assert not os.path.exists(p)


def built_model_spec():
    """A model function in the tuple form with a built nn.Sequential (not a builder)."""
    torch.manual_seed(3)
    seq = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    return (seq, lambda B, step: (torch.randn(B, 4), torch.randint(0, 2, (B,))),
            lambda out, y: torch.nn.functional.cross_entropy(out, y, reduction="sum"))


def test_a_built_model_gives_every_run_its_own_copy_of_its_weights():
    from host_agent.scheduling.pipeline.models import build_layers, load_model
    spec = load_model(f"{__name__}:built_model_spec")
    a, b = build_layers(spec, seed=0), build_layers(spec, seed=1)
    assert a is not b and a[0].weight is not b[0].weight
    torch.testing.assert_close(a[0].weight, b[0].weight)  # the function's weights, whatever the seed
    with torch.no_grad():
        a[0].weight.add_(1.0)  # one run trains: the other's weights and later builds do not move
    torch.testing.assert_close(b[0].weight, build_layers(spec, seed=0)[0].weight)
    assert not torch.allclose(a[0].weight, b[0].weight)


SPEC_BUILT = '''
import torch
from torch import nn
from torch import nn
from host_agent.scheduling.pipeline.models import ModelSpec


def batch(B, step):
    return torch.randn(B, 6), torch.randint(0, 3, (B,))


def loss(out, y):
    return nn.functional.cross_entropy(out, y, reduction="sum")


def built():
    torch.manual_seed(5)
    return ModelSpec("built", nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)), batch, loss)


def listed():
    torch.manual_seed(5)
    return ModelSpec("listed", [nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)], batch, loss)
'''


@pytest.mark.parametrize("fn", ["built", "listed"])
def test_a_model_spec_holding_a_built_model_is_a_built_model(fn, tmp_path, monkeypatch):
    """ModelSpec(name, nn.Sequential(...) or [modules], make_batch, loss_sum): the tuple form took
    a built model, the ModelSpec form called it as a builder ("Sequential.forward() missing 1
    required positional argument: 'input'", "'list' object is not callable", as tracebacks)."""
    from host_agent.scheduling.pipeline.models import build_layers, check_batch, load_model

    (tmp_path / "saatp_spec_built_xyz.py").write_text(SPEC_BUILT)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = load_model(f"saatp_spec_built_xyz:{fn}")
    assert spec.name == fn
    a, b = build_layers(spec, seed=0), build_layers(spec, seed=1)
    assert isinstance(a, nn.Sequential) and len(a) == 3 and a[0].weight is not b[0].weight  # each run its own copy
    torch.testing.assert_close(a[0].weight, b[0].weight)  # the weights FN built, whatever the seed
    check_batch(spec, 4)
