"""The DP+MP executor: weighted all-reduce, shares, migration moves, cgroup cleanup, and a real
run whose re-plan moves layers while every group keeps the same parameters as one process
training on the same batches."""

import os

import numpy as np
import pytest
import torch

from host_agent.scheduling import digits
from host_agent.scheduling.groups.plan import (
    ExecPlan,
    Group,
    migration_bytes,
    transfers,
)
from host_agent.scheduling.groups.sampler import ShareSampler
from host_agent.scheduling.pipeline.cgroups import CPU_ROOT, unavailable_reason


def _allreduce_rank(rank, world, port, weights, q):
    import torch.distributed as dist

    from host_agent.scheduling.groups.allreduce import weighted_allreduce
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        x = torch.arange(6, dtype=torch.float32) * (rank + 1) + rank
        leaders = dist.new_group([0, 2])  # a process group of some of the ranks, like the group leaders
        if rank in (0, 2):
            weighted_allreduce(x, weights[rank], leaders)
            q.put((rank, x.tolist()))
    finally:
        dist.destroy_process_group()


def test_weighted_allreduce_is_the_weighted_mean():
    import multiprocessing as mp

    from host_agent.scheduling.rank_processes import free_port
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    weights = {0: 0.75, 1: 0.0, 2: 0.25}
    port = free_port()
    ps = [ctx.Process(target=_allreduce_rank, args=(r, 3, port, weights, q)) for r in range(3)]
    for p in ps:
        p.start()
    got = dict(q.get(timeout=120) for _ in range(2))
    for p in ps:
        p.join(60)
        assert p.exitcode == 0
    want = sum(weights[r] * (np.arange(6) * (r + 1) + r) for r in (0, 2))
    for r in (0, 2):
        np.testing.assert_allclose(got[r], want, rtol=1e-6)


def test_sampler_gives_each_group_its_share_and_covers_the_epoch():
    s = ShareSampler(100, 20, seed=3)
    seen = []
    for step in range(5):
        parts = s.split(step, [7, 0, 13])
        assert [len(p) for p in parts] == [7, 0, 13]
        seen += torch.cat(parts).tolist()
    assert sorted(seen) == list(range(100))  # one epoch, every sample once
    assert torch.equal(torch.cat(ShareSampler(100, 20, seed=3).split(2, [20])), s.batch(2))
    with pytest.raises(ValueError, match="sum to B"):
        s.split(0, [5, 5])


def test_transfers_move_exactly_the_missing_layers():
    old = ExecPlan((Group((0, 1), (0, 3, 6), 8, 40), Group((2,), (0, 6), 8, 24)), 6)
    new = ExecPlan((Group((1,), (0, 6), 8, 30), Group((3, 2), (0, 2, 6), 8, 34)), 6)
    moves = transfers(old.holdings(4), new.holdings(4))
    got = {(d, l) for _, d, l in moves}
    assert got == {(1, 0), (1, 1), (1, 2), (3, 0), (3, 1)}  # rank 2 already holds 2..5
    for s, d, l in moves:
        assert l in old.holdings(4)[s]
    assert migration_bytes(moves, [10.0] * 6) == 2 * 10.0 * 5
    assert transfers(new.holdings(4), new.holdings(4)) == []
    with pytest.raises(ValueError, match="two groups"):
        ExecPlan((Group((0,), (0, 6), 8, 10), Group((0, 1), (0, 3, 6), 8, 10)), 6)


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"cgroup v1 CPU quotas: {unavailable_reason()}")
def test_slot_quotas_write_and_remove_their_cgroups():
    from host_agent.scheduling.groups.quotas import (
        SlotQuotas,
        generated_factors,
        quota_matrix,
    )
    q = quota_matrix([0.5, 0.2], generated_factors(10, 2, seed=1, p=0.5))
    assert q.shape == (10, 2) and (q <= np.array([0.5, 0.2])).all() and (q >= 0.1).all()
    sq = SlotQuotas(2, f"saatp-test-{os.getpid()}")
    try:
        sq.set(q[3])
        for path, want in zip(sq.paths, q[3]):
            with open(os.path.join(path, "cpu.cfs_quota_us")) as f:
                assert int(f.read()) == max(1000, int(round(want * 10_000)))
    finally:
        assert sq.remove() == []
    assert not [d for d in os.listdir(CPU_ROOT) if d.startswith(f"saatp-test-{os.getpid()}")]


def _reference(B, steps, lr, momentum):
    """One process, the same global batches, momentum SGD: what every group must hold."""
    data = digits.load(0)
    torch.manual_seed(0)
    m = digits.cnn()
    opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=momentum)
    s = ShareSampler(len(data.x_train), B, seed=0)
    for step in range(steps):
        idx = s.batch(step)
        opt.zero_grad()
        (digits.loss_sum(m(data.x_train[idx]), data.y_train[idx]) / B).backward()
        opt.step()
    return torch.nn.utils.parameters_to_vector(m.parameters()).detach()


@pytest.mark.slow
def test_executor_replans_and_groups_stay_equal_to_one_process():
    from host_agent.scheduling.groups.executor import GroupsConfig, run
    p0 = ExecPlan((Group((0, 1), (0, 3, 6), 8, 40), Group((2,), (0, 6), 16, 24)), 6).to_dict()
    p1 = ExecPlan((Group((1,), (0, 6), 32, 30), Group((3, 2), (0, 2, 6), 8, 34)), 6).to_dict()
    cfg = GroupsConfig(methods=("script",), script=(p0, p1), slots=2, iters=2, B=64, lr=0.01,
                       base_quotas=(1.0, 1.0, 1.0, 1.0), cgroups=False)
    res = run(cfg)
    slots = res["runs"]["script"]["slots"]
    assert [len(s["plan"]["groups"]) for s in slots] == [2, 2]
    assert slots[0]["migration_moves"] == 0 and slots[1]["migration_moves"] == 5  # the re-plan moved layers
    assert all(s["max_group_diff"] == 0.0 and s["finite"] for s in slots)  # the groups agree bit for bit
    want = _reference(64, 4, 0.01, 0.9)
    torch.testing.assert_close(res["final_params"]["script"], want, rtol=1e-4, atol=1e-5)


def test_quota_trace_from_csv_and_bad_rows(tmp_path):
    from host_agent.scheduling.groups.quotas import quota_matrix, trace_factors
    p = tmp_path / "t.csv"
    p.write_text("# held-out trace\nslot,device,factor\n0,1,2.0\n2,3,4\n")
    q = quota_matrix([0.4, 0.4, 0.4, 0.8], trace_factors(str(p), 5, 4))
    assert q[0].tolist() == [0.4, 0.2, 0.4, 0.8] and q[2, 3] == 0.2
    assert q[3].tolist() == q[0].tolist()  # the trace loops (3 slots)
    bad = tmp_path / "bad.csv"
    bad.write_text("slot,device,factor\n0,1,-2\n")
    with pytest.raises(ValueError, match=r"bad.csv:2"):
        trace_factors(str(bad), 5, 4)
    with pytest.raises(ValueError, match="4 processes"):
        quota_matrix([0.4, 0.4, 0.4, 0.4], trace_factors(str(p), 5, 5)[:, :5])
