"""In-process tests of the saatp torch backend: every rank is a thread of this process, so these
run in seconds. Tests across real processes are in test_backend_dist.py."""
from __future__ import annotations

import datetime
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)

from torch._C import _distributed_c10d as c10d  # noqa: E402

from host_agent.torch_backend import (  # noqa: E402
    HostRingEngine,
    ProcessGroupSAATP,
    SAATPError,
    SAATPOptions,
    SAATPTimeoutError,
    SwitchEngineUnavailable,
)
from host_agent.torch_backend import engine_choice, switch_engine, switch_job  # noqa: E402
from host_agent.torch_backend import engines as eng  # noqa: E402
from host_agent.torch_backend import ring_engine  # noqa: E402
from host_agent.torch_backend.transport import CommTimeout, Mailbox, Mesh, PeerLost  # noqa: E402
from testsupport import paths  # noqa: E402
from testsupport.torch_ranks import run_ranks  # noqa: E402

pytestmark = pytest.mark.timeout(300)
REPO = str(paths.REPO)




def make_groups(world, timeout_s=20.0, options=None, store=None):
    store = store or dist.HashStore()
    pgs = run_ranks(world, lambda r: ProcessGroupSAATP(
        dist.PrefixStore("g", store), r, world, datetime.timedelta(seconds=timeout_s),
        options if options is not None else SAATPOptions(engine="ring", log=0)))
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    return pgs


def shutdown(pgs):
    for pg in pgs:
        if isinstance(pg, ProcessGroupSAATP):
            pg.shutdown()


def ar_opts(op):
    o = c10d.AllreduceOptions()
    o.reduceOp = op
    return o


# ------------------------------------------------------------------------------------------------
# options
# ------------------------------------------------------------------------------------------------
def test_options_env_and_precedence(monkeypatch):
    monkeypatch.setenv("SAATP_CHUNK", "128")
    monkeypatch.setenv("SAATP_WINDOW", "16")
    monkeypatch.setenv("SAATP_STRAGGLER_MS", "20")
    monkeypatch.setenv("SAATP_ENGINE", "ring")
    o = SAATPOptions(window=8).resolved()
    assert (o.chunk_size, o.window, o.straggler_ms, o.engine) == (128, 8, 20.0, "ring")
    monkeypatch.delenv("SAATP_CHUNK")
    assert SAATPOptions().resolved().chunk_size is None   # unset: the engine picks the widest K


@pytest.mark.parametrize("kw, word", [
    (dict(engine="nccl"), "engine"),
    (dict(chunk_size=48), "power of two"),
    (dict(chunk_size=2048), "power of two in 1..1024"),
    (dict(window=0), "window"),
    (dict(switch="nohost"), "host:port"),
    (dict(job_id=300), "job_id"),
    (dict(quant_frac_bits=40), "quant_frac_bits"),
])
def test_options_reject_bad_values(kw, word):
    with pytest.raises(ValueError, match=word):
        SAATPOptions(**kw).resolved()


def test_options_bad_env(monkeypatch):
    monkeypatch.setenv("SAATP_CHUNK", "lots")
    with pytest.raises(ValueError, match="SAATP_CHUNK"):
        SAATPOptions().resolved()


# ------------------------------------------------------------------------------------------------
# transport and ring
# ------------------------------------------------------------------------------------------------
def test_mailbox_timeout_and_peer_loss():
    mb = Mailbox()
    mb.put(1, b"k", b"early")
    assert mb.get(1, b"k", time.monotonic() + 1) == b"early"
    t0 = time.monotonic()
    with pytest.raises(CommTimeout):
        mb.get(1, b"k", time.monotonic() + 0.2)
    assert time.monotonic() - t0 >= 0.19
    mb.put(2, b"k", b"queued")
    mb.peer_failed(2, "gone")
    assert mb.get(2, b"k", None) == b"queued"  # data that arrived before the loss is delivered
    with pytest.raises(PeerLost, match="rank 2"):
        mb.get(2, b"k", None)


def test_mesh_rendezvous_survives_a_stale_address():
    """A leftover address of an earlier group (dead port) must not break the rendezvous."""
    store = dist.HashStore()
    pre = dist.PrefixStore("m", store)
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    pre.set("saatp/mesh/0", f"127.0.0.1:{dead_port}:1")

    def body(r):
        if r == 0:
            time.sleep(0.5)  # rank 1 reads the stale entry first
        return Mesh(dist.PrefixStore("m", store), r, 2, 20.0)

    meshes = run_ranks(2, body)
    try:
        assert all(isinstance(m, Mesh) for m in meshes), meshes
        meshes[1].send(0, b"k", b"hello")
        assert meshes[0].recv(1, b"k", time.monotonic() + 5) == b"hello"
    finally:
        for m in meshes:
            if isinstance(m, Mesh):
                m.close()


def test_a_send_on_a_closed_mesh_says_why_it_closed():
    """A send racing a peer loss finds the mesh closed by the failure handler; its error must
    still name the lost peer (the reason the mesh closed), not only "closed"."""
    from host_agent.torch_backend.transport import MeshClosed
    store = dist.HashStore()
    meshes = run_ranks(2, lambda r: Mesh(dist.PrefixStore("m", store), r, 2, 20.0))
    try:
        meshes[0].close("rank 0 aborted after: saatp: rank 1 is gone: connection closed")
        with pytest.raises(MeshClosed, match=r"allreduce: host-path mesh is closed \(rank 0 aborted .*rank 1 is gone"):
            meshes[0].send(1, b"k", b"x", "allreduce")
    finally:
        for m in meshes:
            m.close()


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("ufunc", [np.add, np.maximum])
def test_ring_allreduce_matches_numpy(world, ufunc):
    store = dist.HashStore()
    meshes = run_ranks(world, lambda r: Mesh(dist.PrefixStore("m", store), r, world, 20.0))
    rng = np.random.default_rng(5)
    data = [rng.standard_normal(1001).astype(np.float64) for _ in range(world)]
    try:
        outs = run_ranks(world, lambda r: ring_engine.ring_allreduce(meshes[r], b"t", data[r], ufunc,
                                                             time.monotonic() + 20, "test"))
    finally:
        for m in meshes:
            m.close()
    expect = data[0].copy()
    for d in data[1:]:
        expect = ufunc(expect, d)
    for o in outs:
        assert not isinstance(o, BaseException), o
        np.testing.assert_allclose(o, expect, rtol=1e-12, atol=1e-12)
    assert all(np.array_equal(outs[0], o) for o in outs)  # identical on every rank


def test_ring_engine_error_bound_holds_and_is_not_trivial():
    world = 4
    store = dist.HashStore()
    meshes = run_ranks(world, lambda r: Mesh(dist.PrefixStore("m", store), r, world, 20.0))
    engines = [HostRingEngine(m) for m in meshes]
    rng = np.random.default_rng(9)
    data = np.stack([(rng.standard_normal(20000) * 10 ** rng.uniform(-3, 3, 20000)).astype(np.float32)
                     for _ in range(world)])
    try:
        outs = run_ranks(world, lambda r: engines[r].allreduce(data[r], "sum"))
        avgs = run_ranks(world, lambda r: engines[r].allreduce(data[r], "avg"))
    finally:
        for m in meshes:
            m.close()
    exact = data.astype(np.float64).sum(axis=0)
    bound = engines[0].error_bound(data, world)
    err = np.abs(outs[0].astype(np.float64) - exact)
    assert np.all(err <= bound)
    assert err.max() > 0  # float32 rounding really happens, so the assertion above has teeth
    assert np.all(bound < 1e-5 * np.abs(data).sum(axis=0) + 1e-30)  # and the bound is tight-ish
    err_avg = np.abs(avgs[0].astype(np.float64) - exact / world)
    assert np.all(err_avg <= engines[0].error_bound(data, world, "avg"))


# ------------------------------------------------------------------------------------------------
# process group, in threads
# ------------------------------------------------------------------------------------------------
def test_pg_allreduce_routes_and_work_api():
    world = 3
    pgs = make_groups(world)
    try:
        def body(r):
            pg = pgs[r]
            res = {}
            t = torch.full((10,), float(r + 1))
            w = pg.allreduce([t], ar_opts(dist.ReduceOp.SUM))
            fut = w.get_future()
            assert w.wait() is True
            res["sum"] = t.tolist()
            res["fut"] = fut.wait()[0] is t
            res["ok"] = (w.is_completed(), w.is_success(), w.exception())
            t = torch.full((4,), r, dtype=torch.int64)
            pg.allreduce([t], ar_opts(dist.ReduceOp.MAX)).wait()
            res["max"] = t.tolist()
            t = torch.full((4,), float(r), dtype=torch.float64)
            pg.allreduce([t], ar_opts(dist.ReduceOp.AVG)).wait()
            res["avg64"] = t.tolist()
            ts = [torch.full((2, 2), float(r)), torch.full((3,), float(2 * r))]
            o = c10d.AllreduceCoalescedOptions()
            pg.allreduce_coalesced(ts, o).wait()
            res["coalesced"] = [x.reshape(-1).tolist() for x in ts]
            return res

        outs = run_ranks(world, body)
    finally:
        shutdown(pgs)
    for o in outs:
        assert not isinstance(o, BaseException), o
        assert o["sum"] == [6.0] * 10
        assert o["fut"] is True
        assert o["ok"] == (True, True, None)
        assert o["max"] == [2] * 4
        assert o["avg64"] == [1.0] * 4
        assert o["coalesced"] == [[3.0] * 4, [6.0] * 3]


def test_pg_input_errors_are_clear():
    pgs = make_groups(2)
    try:
        pg = pgs[0]
        with pytest.raises(NotImplementedError, match="PREMUL_SUM"):
            pg.allreduce([torch.ones(2)], ar_opts(dist._make_nccl_premul_sum(2.0)))
        with pytest.raises(NotImplementedError, match="AVG"):
            pg.allreduce([torch.ones(2, dtype=torch.int32)], ar_opts(dist.ReduceOp.AVG))
        with pytest.raises(NotImplementedError, match="sparse|Sparse"):
            pg.allreduce([torch.ones(2).to_sparse()], ar_opts(dist.ReduceOp.SUM))
        with pytest.raises(ValueError, match="one output list per input tensor"):
            pg.allgather_coalesced([[torch.ones(1)] * 2], [torch.ones(1), torch.ones(1)])
        with pytest.raises(NotImplementedError, match="monitored_barrier"):
            pg.monitored_barrier()
        with pytest.raises(ValueError, match="root rank 5"):
            o = c10d.BroadcastOptions()
            o.rootRank = 5
            pg.broadcast([torch.ones(1)], o)
        with pytest.raises(ValueError, match="peer rank 0"):
            pg.send([torch.ones(1)], 0, 0)  # to itself
    finally:
        shutdown(pgs)


def test_pg_peer_loss_fails_fast_and_poisons_group():
    pgs = make_groups(2, timeout_s=30.0)
    try:
        pgs[1].abort()  # rank 1 goes away: its sockets close
        t0 = time.monotonic()
        t = torch.ones(1000)
        w = pgs[0].allreduce([t], ar_opts(dist.ReduceOp.SUM))
        # noticed by the reader thread ("is gone") or by the allreduce's own send ("lost connection")
        with pytest.raises(SAATPError, match="allreduce.*(rank 1 .*is gone|lost connection to rank 1)"):
            w.wait()
        assert time.monotonic() - t0 < 10  # not the 30 s timeout: the lost peer is noticed at once
        assert w.is_completed() and not w.is_success()
        with pytest.raises(RuntimeError, match="allreduce"):
            w.get_future().wait()
        # the group is unusable afterwards, and says why
        w2 = pgs[0].broadcast([torch.ones(1)], c10d.BroadcastOptions())
        with pytest.raises(SAATPError, match="unusable after an earlier failure"):
            w2.wait()
    finally:
        shutdown(pgs)


def test_pg_mismatched_sizes_fail_clearly():
    pgs = make_groups(2)
    try:
        outs = run_ranks(2, lambda r: pgs[r].allreduce([torch.ones(10 + 2 * r)], ar_opts(dist.ReduceOp.SUM)))
        errs = []
        for w in outs:
            with pytest.raises(SAATPError) as ei:
                w.wait()
            errs.append(str(ei.value))
        assert any("sizes or dtypes differ between ranks" in e for e in errs), errs
    finally:
        shutdown(pgs)


def test_pg_timeout_follows_group_timeout():
    pgs = make_groups(2, timeout_s=1.0)
    try:
        t0 = time.monotonic()
        w = pgs[0].allreduce([torch.ones(3)], ar_opts(dist.ReduceOp.SUM))  # rank 1 never joins
        with pytest.raises(SAATPTimeoutError, match="timed out after 1.0 s"):
            w.wait()
        assert time.monotonic() - t0 >= 0.95
    finally:
        shutdown(pgs)


def test_pg_p2p_recv_does_not_block_collectives():
    """A pending irecv must not hold up a collective or a later send (separate lanes)."""
    pgs = make_groups(2)
    try:
        def body(r):
            pg = pgs[r]
            buf = torch.zeros(3)
            rw = pg.recv([buf], 1 - r, 5)  # both post a receive first
            t = torch.ones(2)
            pg.allreduce([t], ar_opts(dist.ReduceOp.SUM)).wait()
            pg.send([torch.full((3,), float(r))], 1 - r, 5).wait()
            rw.wait()
            return buf.tolist(), t.tolist(), rw.source_rank()
        outs = run_ranks(2, body, timeout=30)
    finally:
        shutdown(pgs)
    assert outs[0] == ([1.0] * 3, [2.0, 2.0], 1)
    assert outs[1] == ([0.0] * 3, [2.0, 2.0], 0)


def test_shutdown_waits_for_the_groups_threads():
    """shutdown() (what destroy_process_group calls) returns only once the group's lane threads
    have ended, also one that was waiting in a receive. A daemon thread that still drops a Work
    (its future and tensors: C++) while the interpreter finalizes aborts the process with
    "terminate called without an active exception" after all its work was done."""
    pgs = make_groups(2)
    lanes = [[t for t in threading.enumerate() if t.name.startswith(("saatp-coll-", "saatp-send-", "saatp-recv-"))
              and t.name.endswith(f"-r{r}")] for r in range(2)]
    assert all(len(ts) == 3 for ts in lanes), [[t.name for t in ts] for ts in lanes]
    work = pgs[0].recv([torch.zeros(4)], 1, 9)  # rank 1 never sends
    ended = []

    def slow_callback(fut):  # runs on the lane thread that completes the Work
        time.sleep(0.5)
        ended.append(True)
    work.get_future().then(slow_callback)
    time.sleep(0.2)  # the receive is running on rank 0's recv lane
    shutdown(pgs)
    assert ended, "shutdown() returned while the lane still completed the pending Work"
    alive = [t.name for ts in lanes for t in ts if t.is_alive()]
    assert alive == [], f"lane threads still running after shutdown: {alive}"
    with pytest.raises(Exception, match="closed|shut down"):
        work.wait()


def test_an_idle_receive_lane_ends_and_starts_again_on_its_next_receive():
    """One thread per (peer, tag) lets receives from two peers complete as their messages
    arrive; a program that receives on a new tag every step left one thread per tag until the
    group shut down. A lane idle for lane_idle_s now ends."""
    pgs = make_groups(2)
    try:
        for pg in pgs:
            pg.lane_idle_s = 0.3

        def lanes(r):
            return [t for t in threading.enumerate() if t.name.startswith("saatp-recv-") and t.name.endswith(f"-r{r}")]

        def exchange(r, tag):
            buf = torch.zeros(2)
            w = pgs[r].recv([buf], 1 - r, tag)
            pgs[r].send([torch.full((2,), float(tag))], 1 - r, tag).wait()
            w.wait()
            return buf.tolist()

        base = [len(lanes(r)) for r in range(2)]
        outs = run_ranks(2, lambda r: [exchange(r, tag) for tag in range(100, 130)], timeout=60)
        assert outs[0] == outs[1] == [[float(t)] * 2 for t in range(100, 130)]
        deadline = time.monotonic() + 10
        while any(len(lanes(r)) > base[r] for r in range(2)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [len(lanes(r)) for r in range(2)] == base, [[t.name for t in lanes(r)] for r in range(2)]
        assert all(len(pg._threads) <= 3 for pg in pgs)  # the retired lanes left the group's list too
        # a tag used before gets a lane again
        assert run_ranks(2, lambda r: exchange(r, 100), timeout=30) == [[100.0] * 2] * 2
    finally:
        shutdown(pgs)


# ------------------------------------------------------------------------------------------------
# engine selection and the switch-engine seam
# ------------------------------------------------------------------------------------------------
def _no_switch_command(monkeypatch):
    def missing(name):
        raise SwitchEngineUnavailable(f"saatp: the switch engine runs the {name!r} command, which is "
                                      f"neither beside the interpreter nor on PATH")
    monkeypatch.setattr(engine_choice, "installed_command", missing)


def test_switch_engine_without_its_command_is_a_clear_error(monkeypatch):
    _no_switch_command(monkeypatch)
    outs = run_ranks(2, lambda r: ProcessGroupSAATP(
        dist.PrefixStore("s", _SHARED), r, 2, datetime.timedelta(seconds=10), SAATPOptions(engine="switch", log=0)))
    for o in outs:  # the same error on every rank, not a timeout on rank 1
        assert isinstance(o, SwitchEngineUnavailable), o
        assert "'saatp-switch' command" in str(o)


_SHARED = dist.HashStore()


def test_auto_engine_falls_back_to_ring_and_says_so(monkeypatch, capsys):
    _no_switch_command(monkeypatch)
    pgs = make_groups(2, options=SAATPOptions(engine="auto", log=1))
    try:
        assert all(pg.engine.name == "ring" for pg in pgs)
        err = capsys.readouterr().err
        assert "allreduce engine = ring" in err and "auto" in err
    finally:
        shutdown(pgs)


class _FakeQuantEngine(eng.AllreduceEngine):
    """Stand-in for the switch engine: int32 fixed point over the host mesh (it replaces the
    switch, so the seam -- rendezvous, context, routing, bound -- is exercised)."""

    name = "switch"
    FRAC = 12

    def __init__(self, ctx, peers):
        super().__init__(ctx.world_size)
        self.ctx = ctx
        self.peers = peers

    def allreduce(self, x, op):
        q = np.round(x.astype(np.float64) * 2 ** self.FRAC).astype(np.int64)
        self.peers["vals"][self.ctx.rank] = q
        self.peers["barrier"].wait()
        total = sum(self.peers["vals"])
        self.peers["barrier"].wait()
        out = total / 2 ** self.FRAC
        return (out / self.ctx.world_size if op == "avg" else out).astype(np.float32)

    def error_bound(self, values, world, op="sum"):
        b = world * 0.5 / 2 ** self.FRAC + np.abs(eng.abs_sum(values, world)) * 2 ** -23
        return b / world if op == "avg" else b


def test_switch_engine_seam_with_a_stand_in(monkeypatch):
    started, contexts = [], []
    peers = {"vals": [None, None], "barrier": threading.Barrier(2)}

    def start_switch(ctx):
        started.append(ctx.rank)
        return "127.0.0.1:9999", lambda: started.append("closed")

    def create_engine(ctx):
        contexts.append(ctx)
        addrs = ctx.allgather_bytes("udp", f"127.0.0.1:{5000 + ctx.rank}".encode())
        ctx.worker_addrs = [a.decode() for a in addrs]
        return _FakeQuantEngine(ctx, peers)

    monkeypatch.setattr(switch_job, "start_switch", start_switch)
    monkeypatch.setattr(switch_engine, "create_engine", create_engine)
    pgs = make_groups(2, options=SAATPOptions(engine="auto", log=0, job_id=7, chunk_size=256))
    try:
        assert started == [0]  # rank 0 started the switch, once
        assert all(pg.engine.name == "switch" for pg in pgs)
        assert sorted(c.rank for c in contexts) == [0, 1]
        assert all(c.switch_addr == "127.0.0.1:9999" and c.job_id == 7 and c.options.chunk_size == 256
                   for c in contexts)
        assert all(c.worker_addrs == ["127.0.0.1:5000", "127.0.0.1:5001"] for c in contexts)
        rng = np.random.default_rng(3)
        data = [rng.standard_normal(5000).astype(np.float32) for _ in range(2)]
        ts = [torch.from_numpy(d.copy()) for d in data]
        ts64 = [torch.from_numpy(d.astype(np.float64)) for d in data]
        run_ranks(2, lambda r: pgs[r].allreduce([ts[r]], ar_opts(dist.ReduceOp.SUM)).wait())
        run_ranks(2, lambda r: pgs[r].allreduce([ts64[r]], ar_opts(dist.ReduceOp.SUM)).wait())
        exact = data[0].astype(np.float64) + data[1]
        err = np.abs(ts[0].numpy() - exact)
        assert np.all(err <= pgs[0].engine.error_bound(np.stack(data), 2))
        assert err.max() > 1e-6  # it really went through the quantizing stand-in
        np.testing.assert_allclose(ts64[0].numpy(), exact, rtol=0, atol=1e-12)  # float64: host path
    finally:
        shutdown(pgs)
    assert "closed" in started  # shutting the group down stopped the switch it started


# ------------------------------------------------------------------------------------------------
# registration
# ------------------------------------------------------------------------------------------------
def test_registered_by_import_host_agent():
    import host_agent  # noqa: F401

    assert "SAATP" in dist.Backend._plugins
    assert dist.Backend.SAATP == "saatp"
    assert dist.Backend.default_device_backend_map["cpu"] == "gloo"  # we do not take over cpu


def test_world_of_one_through_init_process_group():
    import host_agent  # noqa: F401

    if dist.is_initialized():
        pytest.skip("a default process group already exists in this process")
    dist.init_process_group("saatp", store=dist.HashStore(), rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=10), pg_options=SAATPOptions(log=0, engine="ring"))
    try:
        assert dist.get_backend() == "saatp"
        t = torch.arange(4.0)
        dist.all_reduce(t)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
        sub = dist.new_group([0])
        dist.all_reduce(t, group=sub, op=dist.ReduceOp.MAX)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
        assert isinstance(sub, ProcessGroupSAATP) and sub is not dist.group.WORLD
        assert sub.options.engine == "ring" and sub.options.log == 0  # inherited from the default group
        own = dist.new_group([0], pg_options=SAATPOptions(chunk_size=128, engine="ring"))
        assert own.options.chunk_size == 128
    finally:
        dist.destroy_process_group()


def _installed_entry_point():
    from importlib.metadata import entry_points

    return any(ep.value.startswith("host_agent.torch_backend") for ep in entry_points(group="torch.backends"))


def _run_py(code, env_extra, cwd):
    env = dict(os.environ)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.skipif(not _installed_entry_point(), reason="the torch.backends entry point is not installed "
                    "in this environment (run `pip install -e .`)")
def test_entry_point_registers_without_importing_host_agent(tmp_path):
    code = ("import sys, torch.distributed as dist; "
            "print('SAATP' in dist.Backend._plugins, 'host_agent' in sys.modules)")
    r = _run_py(code, {}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


@pytest.mark.skipif(not _installed_entry_point(), reason="the torch.backends entry point is not installed "
                    "in this environment (run `pip install -e .`)")
def test_entry_point_failure_never_breaks_import_torch(tmp_path):
    r = _run_py("import torch; print(torch.ones(1).item())",
                {"SAATP_AUTOLOAD_TEST_FAIL": "1", "SAATP_AUTOLOAD_DEBUG": "1"}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1.0"
    assert "simulated autoload failure" in r.stderr  # the hook did run and did fail


def test_import_host_agent_first_registers_when_torch_arrives(tmp_path):
    """Without the entry point (torch's autoload off), `import host_agent` must not import torch,
    yet the backend must be there once torch.distributed is imported."""
    code = ("import sys, host_agent; print('torch' in sys.modules); "
            "import torch.distributed as dist; print('SAATP' in dist.Backend._plugins)")
    env = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "PYTHONPATH": REPO}
    r = _run_py(code, env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]


def test_coalesced_collectives_equal_their_pieces():
    pgs = make_groups(2)
    try:
        ins = [[torch.full((3,), 10.0 * r + i) for i in range(2)] for r in range(2)]
        outs = [[torch.empty(6) for _ in range(2)] for _ in range(2)]
        run_ranks(2, lambda r: pgs[r].allgather_into_tensor_coalesced(outs[r], ins[r]).wait())
        for r in range(2):
            for i in range(2):
                assert outs[r][i].tolist() == [float(i)] * 3 + [10.0 + i] * 3
        rs_in = [[torch.arange(4.0) + r, torch.arange(4.0) * (r + 1)] for r in range(2)]
        rs_out = [[torch.empty(2), torch.empty(2)] for _ in range(2)]
        run_ranks(2, lambda r: pgs[r].reduce_scatter_tensor_coalesced(rs_out[r], rs_in[r]).wait())
        assert rs_out[0][0].tolist() == [1.0, 3.0] and rs_out[1][0].tolist() == [5.0, 7.0]
        assert rs_out[0][1].tolist() == [0.0, 3.0] and rs_out[1][1].tolist() == [6.0, 9.0]
        lists = [[[torch.empty(2) for _ in range(2)]] for _ in range(2)]
        run_ranks(2, lambda r: pgs[r].allgather_coalesced(lists[r], [torch.full((2,), float(r))]).wait())
        assert [t.tolist() for t in lists[1][0]] == [[0.0, 0.0], [1.0, 1.0]]
    finally:
        shutdown(pgs)
