"""Groups with names, as torch's own backends have them: functional collectives, DeviceMesh and
DTensor, FSDP2, destroying and re-creating sub-groups -- on the ring engine and the switch
engine, compared with gloo where a result is numeric."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
from torch._C import _distributed_c10d as c10d  # noqa: E402

import testsupport.torch_ranks as W  # noqa: E402
from host_agent.torch_backend import engine_choice  # noqa: E402
from host_agent.torch_backend.process_group import ProcessGroupSAATP  # noqa: E402

pytestmark = pytest.mark.timeout(600)
SWITCH_OK, SWITCH_WHY = engine_choice.switch_available()
ENGINES = ["ring", pytest.param("switch", marks=pytest.mark.skipif(
    not SWITCH_OK, reason=f"switch engine unavailable here: {SWITCH_WHY[:200]}"))]


def ok_results(res, world):
    bad = {r: v for r, v in res.items() if v[0] != "ok"}
    assert not bad, f"ranks failed: {bad}"
    return [res[r][1] for r in range(world)]


def test_every_collective_is_ours():
    """The placeholder backend that carries the group's name must never run a collective: every
    communication method of ProcessGroup is a method of ProcessGroupSAATP."""
    plumbing = {"BackendType", "rank", "size", "boxed", "unbox", "get_group_store"}
    missing = [n for n in dir(c10d.ProcessGroup)
               if not n.startswith("_") and n not in plumbing and callable(getattr(c10d.ProcessGroup, n))
               and n not in ProcessGroupSAATP.__dict__]
    assert not missing, missing


@pytest.mark.parametrize("engine", ENGINES)
def test_named_group_features(engine):
    world = 2
    outs = ok_results(W.launch("named_groups", world, timeout=300, env={"SAATP_ENGINE": engine}), world)
    for r, o in enumerate(outs):
        assert o["world_name"] != "", o
        assert o["functional_sum"] == [3.0] * 6, o
        assert o["shard_rows"] == [2, 2] and o["replicated_ok"], o
        assert [t for _, t in o["subgroups"]] == [[2.0] * 3] * 3, o
        assert len({n for n, _ in o["subgroups"]}) == 3, o  # each re-created group has its own name
    assert outs[0]["subgroups"] == outs[1]["subgroups"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_fsdp2_matches_gloo(engine):
    world = 2
    ref = ok_results(W.launch("fsdp2", world, timeout=300, backend="gloo"), world)
    got = ok_results(W.launch("fsdp2", world, timeout=300, env={"SAATP_ENGINE": engine}), world)
    np.testing.assert_array_equal(got[0], got[1])      # every rank holds the same model
    tol = 1e-6 if engine == "ring" else 1e-4            # the switch sums fixed-point values
    np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=tol)
