"""The saatp backend across real processes (spawned, 2 and 4 ranks), always with hard timeouts.

Quantization bounds: the raw allreduce and the DDP comparisons assert the error bound declared by
the engine in use (``engine.error_bound``): float32 rounding for the host ring, the quantization
bound of the switch engine when the ``saatp-switch`` command is installed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

if not dist.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

import testsupport.torch_ranks as W  # noqa: E402
from testsupport import paths  # noqa: E402

from host_agent.torch_backend import engine_choice  # noqa: E402

# the launcher already terminates ranks after its own timeout; this is a second fence
pytestmark = pytest.mark.timeout(900)

REPO = str(paths.REPO)
SWITCH_OK, SWITCH_WHY = engine_choice.switch_available()
ENGINES = [
    "ring",
    pytest.param("switch", marks=pytest.mark.skipif(
        not SWITCH_OK, reason=f"switch engine unavailable here: {SWITCH_WHY[:200]}")),
]


def ok_results(res, world):
    bad = {r: v for r, v in res.items() if v[0] != "ok"}
    assert not bad, f"ranks failed: {bad}"
    return [res[r][1] for r in range(world)]


def worlds():
    return [2, pytest.param(4, marks=pytest.mark.slow)]


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("world", worlds())
def test_every_collective(world, engine):
    """Every collective on the host path; float16/bfloat16 AVG goes through the engine."""
    outs = ok_results(W.launch("collectives", world, timeout=240, env={"SAATP_ENGINE": engine}), world)
    for rank, o in enumerate(outs):
        msgs = o.pop("unsupported_msgs")
        failed = [k for k, v in o.items() if v is not True]
        assert not failed, f"rank {rank}: wrong results for {failed}"
        assert msgs[0].startswith("NotImplementedError") and "coalescing" in msgs[0]
        assert msgs[1].startswith("NotImplementedError") and "PREMUL_SUM" in msgs[1]
        assert "No backend type" not in " ".join(msgs)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("world", worlds())
def test_allreduce_1m_floats_within_engine_bound(world, engine):
    """SUM and AVG of 2^20 floats per rank: every element within the engine's declared bound.
    Through the switch engine (Python switch process) one 1M-float allreduce took about 10 s on
    2 ranks and 8-11 s on 4 ranks here (2 shared cores), so both worlds keep the full size."""
    outs = ok_results(W.launch("allreduce_big", world, timeout=240, env={"SAATP_ENGINE": engine},
                               n=1 << 20), world)
    for op in ("sum", "avg"):
        for o in outs:
            assert o["engine"] == engine
            r = o[op]
            assert r["within"], (f"{op}: error {r['max_err']} exceeds the engine bound "
                                 f"(worst err/bound {r['worst_ratio']})")
        assert len({o[op]["digest"] for o in outs}) == 1  # every rank holds the same result


# ------------------------------------------------------------------------------------------------
_gloo_cache: dict = {}


def gloo_params(world, steps):
    key = (world, steps)
    if key not in _gloo_cache:
        _gloo_cache[key] = ok_results(W.launch("ddp", world, timeout=300, backend="gloo", steps=steps), world)[0]
    return _gloo_cache[key]


def assert_matches_gloo(saatp, gloo, lr=0.1):
    """Each step's averaged gradient is within the engine's bound b_t of the exact average (and
    gloo's within its own float rounding, at most the same b_t for the ring); an SGD step moves
    the difference by lr * (both errors) plus one float32 rounding of each parameter. The factor 4
    covers the growth of an early difference through later steps of this small, smooth model."""
    steps = len(saatp["bounds"])
    pmax = float(np.max(np.abs(gloo["params"])))
    tol = 4 * lr * 2 * sum(saatp["bounds"]) + steps * 2 * float(np.finfo(np.float32).eps) * pmax
    diff = float(np.max(np.abs(saatp["params"].astype(np.float64) - gloo["params"])))
    assert diff <= tol, f"max |p_saatp - p_gloo| = {diff:.3g} > tolerance {tol:.3g}"
    np.testing.assert_allclose(saatp["losses"], gloo["losses"], rtol=1e-3)
    assert saatp["losses"][-1] < saatp["losses"][0]  # it trained


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("world", worlds())
def test_ddp_matches_gloo(world, engine):
    steps = 8
    outs = ok_results(W.launch("ddp", world, timeout=300, env={"SAATP_ENGINE": engine}, steps=steps), world)
    for o in outs[1:]:
        np.testing.assert_array_equal(o["params"], outs[0]["params"])  # replicas agree exactly
    assert_matches_gloo(outs[0], gloo_params(world, steps))


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_ddp_with_a_straggler_completes_and_matches(engine):
    """Rank 1 sleeps 150 ms before each step (3 x the switch engine's default T_s = 50 ms)."""
    steps = 8
    outs = ok_results(W.launch("ddp", 2, timeout=300, env={"SAATP_ENGINE": engine}, steps=steps,
                               straggler=1, delay=0.15), 2)
    assert len(outs[0]["times"]) == steps
    # the leading rank waited for the straggler in every synchronous step
    assert min(outs[0]["times"]) >= 0.1
    assert_matches_gloo(outs[0], gloo_params(2, steps))


@pytest.mark.slow
def test_ddp_comm_hook_chains_on_the_work_future():
    """fp16_compress_hook = all_reduce(async_op=True).get_future().then(decompress): the chained
    future must carry the result. On 2 ranks a float16 sum of two float16 values is rounded once
    by both backends, so the replicas must agree with gloo's to float32 rounding of the update."""
    kw = dict(steps=6, hook="fp16", bounds=False)
    a = ok_results(W.launch("ddp", 2, timeout=300, env={"SAATP_ENGINE": "ring"}, **kw), 2)
    b = ok_results(W.launch("ddp", 2, timeout=300, backend="gloo", **kw), 2)
    np.testing.assert_array_equal(a[0]["params"], a[1]["params"])
    np.testing.assert_allclose(a[0]["params"], b[0]["params"], rtol=0, atol=1e-6)
    assert a[0]["losses"][-1] < a[0]["losses"][0]


# ------------------------------------------------------------------------------------------------
def _setup_env(engine):
    """Failure tests with short group timeouts, which also bound set-up: the switch gets the
    K = 256 program (~2.5 s to compile) rather than the default K = 1024 one (~8 s)."""
    return {"SAATP_ENGINE": engine, "SAATP_CHUNK": "256"}


def _assert_survivors_raised(res, world, victim, timeout_s):
    assert res[victim][0] == "timeout"  # it was killed, so it never reported
    for r in range(world):
        if r == victim:
            continue
        status, o = res[r]
        assert status == "ok", o
        assert o["raised"], f"rank {r} did not get an exception"
        assert o["secs"] < timeout_s + 5, f"rank {r} took {o['secs']:.1f} s"
        assert "saatp allreduce" in o["msg"]


# The ring sees a dead peer's closed sockets at once. The switch engine only sees missing results,
# so its survivors fail at the group timeout (20 s here), which the bound below allows.
@pytest.mark.parametrize("engine", ENGINES)
def test_killed_rank_raises_on_survivors(engine):
    res = W.launch("kill_rank", 2, timeout=200, env=_setup_env(engine), victim=1, timeout_s=20.0)
    _assert_survivors_raised(res, 2, 1, 20.0)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_killed_rank_raises_from_ddp_backward_on_every_survivor(engine):
    res = W.launch("kill_rank", 4, timeout=300, env=_setup_env(engine), victim=2, timeout_s=20.0,
                   ddp=True)
    _assert_survivors_raised(res, 4, 2, 20.0)


# (a killed *switch* process: test_switch_engine.py)


@pytest.mark.parametrize("engine,timeout_s", [("ring", 3.0), pytest.param("switch", 10.0, marks=ENGINES[1].marks)])
def test_hung_rank_times_out_per_group_timeout(engine, timeout_s):
    """The group timeout also bounds set-up, so the switch variant (rank 0 starts the switch
    process during init) uses 10 s instead of 3 s."""
    res = W.launch("hang_rank", 2, timeout=200, env=_setup_env(engine), victim=1, timeout_s=timeout_s)
    status, o = res[0]
    assert status == "ok", o
    assert o["raised"] and f"timed out after {timeout_s:.1f} s" in o["msg"]
    assert timeout_s - 0.5 <= o["secs"] < 60


# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.slow
def test_default_engine_from_a_built_wheel_in_a_fresh_venv(tmp_path):
    """A wheel built from the sources, installed into a new venv (not -e, no p4src/ beside it):
    ``init_process_group("saatp")`` with no import of ours and the default engine starts the
    installed ``saatp-switch`` with a generated switch program and sums through it."""
    base = getattr(sys, "_base_executable", sys.executable)
    assert os.path.exists(base), f"base interpreter {base} not found"
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO, name), src / name)
    for pkg in ("host_agent", "emulation"):
        shutil.copytree(os.path.join(REPO, pkg), src / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # the wheel is built by this (project) venv's setuptools, offline
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "-q", "-w", str(tmp_path / "dist"), "."], cwd=src, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    wheels = list((tmp_path / "dist").glob("saatp-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = tmp_path / "venv"
    r = subprocess.run([base, "-m", "venv", str(env_dir)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"cannot create a venv with ensurepip: {r.stderr[-300:]}"
    py = str(env_dir / "bin" / "python")
    # the dependencies (torch, numpy, grpc, lark, ...) come from the project venv: a .pth line
    # appends its site-packages after the new venv's own
    site_new = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site_new, "zz_project_venv.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheels[0])],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert (env_dir / "bin" / "saatp-switch").exists()
    code = (
        "import datetime, torch, torch.distributed as dist, sys\n"
        "assert 'SAATP' in dist.Backend._plugins, 'not registered'\n"
        "import host_agent; print(host_agent.__file__)\n"
        "dist.init_process_group('saatp', store=dist.HashStore(), rank=0, world_size=1,\n"
        "                        timeout=datetime.timedelta(seconds=60))\n"
        "t = torch.ones(3); dist.all_reduce(t); print(dist.get_backend(), t.tolist())\n"
        "print(dist.group.WORLD.engine.describe())\n"
        "dist.destroy_process_group()\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SAATP_ENGINE")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    r = subprocess.run([py, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.split("\n")
    assert lines[0].startswith(str(env_dir)), f"host_agent was imported from {lines[0]}, not the new venv"
    assert lines[1] == "saatp [1.0, 1.0, 1.0]"
    assert lines[2].startswith("switch (SA-ATP job"), lines[2]
    # the default K on the engine's own UDP tunnels: the widest SA-ATP packet (wire.MAX_LANES)
    assert list((tmp_path / "cache" / "saatp" / "p4").glob("saatp_k1024_*.p4")), "the program was not generated"
