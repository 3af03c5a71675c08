"""The SA-ATP switch engine (host_agent.torch_backend.switch_engine) under the saatp backend.

Ranks are threads of this process (as in test_backend_unit.py), each with a real
ProcessGroupSAATP; rank 0 starts a real ``saatp switch p4src/saatp.p4`` subprocess and
configures it over P4Runtime; every rank's SA-ATP worker talks to it over its UDP tunnel.
The SAATP_SWITCH tests start ``saatp switch --no-p4`` themselves, as a user would.
Runs across spawned processes (1M floats, DDP, killed rank) are in test_backend_dist.py.
"""
from __future__ import annotations

import datetime
import math
import os
import signal
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
pytest.importorskip("grpc")

from torch._C import _distributed_c10d as c10d  # noqa: E402

from host_agent import quantize as qz  # noqa: E402
from testsupport.torch_ranks import run_ranks as _run_ranks  # noqa: E402
from host_agent import constants, wire  # noqa: E402
from host_agent.torch_backend import switch_job  # noqa: E402
from testsupport import paths  # noqa: E402
from host_agent.torch_backend import ProcessGroupSAATP, SAATPError, SAATPOptions  # noqa: E402

pytestmark = pytest.mark.timeout(300)

if not os.path.exists(constants.SAATP_P4):  # pragma: no cover
    pytest.skip(f"switch program {constants.SAATP_P4} missing", allow_module_level=True)


def run_ranks(world, fn, timeout=120.0):      # the switch engine's ranks get a longer budget
    return _run_ranks(world, fn, timeout)


# Tests about failures, set-up and sharing use K = 256 (the switch compiles that program in ~2.5 s);
# the K = 1024 program the engine picks by default takes it ~8 s (test_sum_and_avg..., 8 ranks).
SETUP_K = constants.DEFAULT_K


def make_groups(world, timeout_s=30.0, **opts):
    opts.setdefault("chunk_size", SETUP_K)
    store = dist.HashStore()
    o = SAATPOptions(engine="switch", log=0, **opts)
    return run_ranks(world, lambda r: ProcessGroupSAATP(
        dist.PrefixStore("g", store), r, world, datetime.timedelta(seconds=timeout_s), o))


def shutdown(pgs):
    for pg in pgs:
        if isinstance(pg, ProcessGroupSAATP):
            pg.shutdown()


def ar(pg, t, op=dist.ReduceOp.SUM):
    o = c10d.AllreduceOptions()
    o.reduceOp = op
    return pg.allreduce([t], o).wait()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): look at its state
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ------------------------------------------------------------------------------------------------
# quantization rule and bound (pure functions)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("world", [1, 2, 3, 4, 8, 32])
def test_frac_bits_leave_room_for_world_contributions(world):
    rng = np.random.default_rng(world)
    for amax in list(10.0 ** rng.uniform(-30, 30, 200)) + [1.0, 0.5, 2.0 ** 20, 3e38]:
        e = qz.amax_exponent(amax)
        assert amax <= 2.0 ** e <= 2 * amax
        f = qz.frac_bits(e, world)
        assert f == qz.exp_for(2.0 ** e, world, headroom=1.0)
        # world contributions, each at most 2^e, quantized and summed: no int32 overflow
        assert world * (2.0 ** e * 2.0 ** f + 0.5) < 2 ** 31 or f == qz.EXP_MIN
    assert qz.frac_bits(qz.amax_exponent(0.0), 2) == qz.EXP_MAX
    assert qz.amax_exponent(float("nan")) == qz.amax_exponent(float("inf"))


def test_quantization_error_is_within_the_stated_step():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(100_000) * 7).astype(np.float32)
    f = qz.frac_bits(qz.amax_exponent(float(np.abs(x).max())), 4)
    q, clipped = qz.quantize(x, f)
    assert not clipped
    err = np.abs(np.ldexp(q.astype(np.float64), -f) - x.astype(np.float64))
    assert err.max() <= qz.quant_step_error(f)
    assert err.max() > 0.5 * qz.quant_step_error(f)  # the step is tight, not a loose guess


# ------------------------------------------------------------------------------------------------
# through the real switch process
# ------------------------------------------------------------------------------------------------
def _switch_counters(layout):
    """The group's event counters, summed over its lanes (one SA-ATP job each)."""
    from host_agent.controller import Controller
    from host_agent.p4runtime.target import P4RuntimeTarget
    c = switch_job.connect(layout["grpc"], 0)
    try:
        ctl = Controller(P4RuntimeTarget(c))
        total: dict[str, int] = {}
        for job in layout.get("jobs") or [layout["job"]]:
            for name, v in ctl.counters(job).items():
                total[name] = total.get(name, 0) + v
        return total
    finally:
        c.close()


def test_sum_and_avg_through_the_switch_within_the_bound():
    world, n = 2, 20_000
    pgs = make_groups(world, timeout_s=60.0, chunk_size=None)   # the default K
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    layout = pgs[0].engine.layout
    pid = layout["pid"]
    try:
        assert all(pg.engine.name == "switch" for pg in pgs)
        # no chunk_size given: the widest K the engine's UDP tunnels carry
        assert layout["k"] == wire.MAX_LANES and all(pg.engine.k == wire.MAX_LANES for pg in pgs)
        assert alive(pid)
        rng = np.random.default_rng(5)
        data = [(rng.standard_normal(n) * 3).astype(np.float32) for _ in range(world)]
        data[1][7] = 1000.0  # a large element sets the scale of the whole tensor
        exact = np.sum(np.stack(data).astype(np.float64), axis=0)
        for op, div in ((dist.ReduceOp.SUM, 1), (dist.ReduceOp.AVG, world)):
            ts = [torch.from_numpy(d.copy()) for d in data]
            res = run_ranks(world, lambda r: ar(pgs[r], ts[r], op))
            assert all(r is True for r in res), res
            np.testing.assert_array_equal(ts[0].numpy(), ts[1].numpy())  # same result on every rank
            err = np.abs(ts[0].numpy().astype(np.float64) - exact / div)
            bound = pgs[0].engine.error_bound(np.stack(data), world, "avg" if div > 1 else "sum")
            assert np.all(err <= bound), float(np.max(err / bound))
            f = pgs[0].engine.last_f
            assert f == qz.exp_for(2.0 ** qz.amax_exponent(1000.0), world, 1.0)
            assert err.max() > 1e-3 * qz.quant_step_error(f)  # it was quantized, not a float path
        # the scale is agreed in-band: the first allreduce of each lane has no scale to go on
        # (it guesses |x| <= 1, which the 1000.0 refutes) and is redone with the agreed one; a
        # later one of the same size on that lane speculates right and runs once
        eng = pgs[0].engine
        assert eng.redone == 2 and all(pg.engine.redone == 2 for pg in pgs)
        for _ in range(4):  # (the guess is the agreed scale minus one bit: it does not drift)
            ts = [torch.from_numpy(d.copy()) for d in data]
            assert all(r is True for r in run_ranks(world, lambda r: ar(pgs[r], ts[r])))
            assert np.all(np.abs(ts[0].numpy().astype(np.float64) - exact) <= eng.error_bound(np.stack(data), world))
        assert eng.redone == 2
        # every chunk was aggregated by the switch: per iteration ceil((3 world + n) / K) rounds
        # (3 world lanes of meta: exponents, sizes, clip flags), redone iterations included
        k = layout["k"]
        assert eng.rounds == (6 + eng.redone) * math.ceil((3 * world + n) / k)
        cnt = _switch_counters(layout)
        # every chunk was aggregated exactly once: finished in the switch, or (when a rank was
        # slow past T_s under machine load) handed to a helper as an evicted partial
        assert cnt["complete"] + cnt["evict"] == eng.rounds, cnt
        assert cnt["violation"] == 0 and cnt["overflow"] == 0
    finally:
        shutdown(pgs)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid), "group shutdown did not stop the switch it started"


@pytest.mark.slow
def test_eight_ranks_sum_exactly_through_the_switch():
    """8 ranks (the engine's largest tested group), default K: integer-valued floats quantize
    exactly, so the switch's sum is exact; AVG within the stated bound; several allreduces of
    different sizes and magnitudes on both lanes, so scale guesses are refuted and redone."""
    world = 8
    pgs = make_groups(world, timeout_s=90.0, chunk_size=None)
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    try:
        rng = np.random.default_rng(8)
        for n, mag in ((30_000, 1000), (30_000, 1000), (5_000, 3), (70_001, 2 ** 20)):
            data = [rng.integers(-mag, mag + 1, n).astype(np.float32) for _ in range(world)]
            exact = np.sum(np.stack(data).astype(np.float64), axis=0)
            ts = [torch.from_numpy(d.copy()) for d in data]
            res = run_ranks(world, lambda r: ar(pgs[r], ts[r]))
            assert all(r is True for r in res), res
            for t in ts:
                np.testing.assert_array_equal(t.numpy().astype(np.float64), exact)
        ts = [torch.from_numpy(d.copy()) for d in data]
        assert all(r is True for r in run_ranks(world, lambda r: ar(pgs[r], ts[r], dist.ReduceOp.AVG)))
        err = np.abs(ts[0].numpy().astype(np.float64) - exact / world)
        assert np.all(err <= pgs[0].engine.error_bound(np.stack(data), world, "avg"))
        eng = pgs[0].engine
        assert all(pg.engine.rounds == eng.rounds and pg.engine.redone == eng.redone for pg in pgs)
        cnt = _switch_counters(eng.layout)
        assert cnt["complete"] + cnt["evict"] == eng.rounds, cnt
    finally:
        shutdown(pgs)


def test_size_mismatch_and_nonfinite_fail_on_every_rank():
    pgs = make_groups(2)
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    try:
        ts = [torch.ones(100), torch.ones(101)]
        res = run_ranks(2, lambda r: ar(pgs[r], ts[r]))
        for r in res:
            assert isinstance(r, ValueError) and "sizes differ" in str(r) and "[100, 101]" in str(r), r
    finally:
        shutdown(pgs)
    pgs = make_groups(2)
    try:
        ts = [torch.ones(100), torch.ones(100)]
        ts[1][3] = float("nan")
        res = run_ranks(2, lambda r: ar(pgs[r], ts[r]))
        for r in res:
            assert isinstance(r, ValueError) and "rank(s) [1]" in str(r) and "inf/nan" in str(r), r
    finally:
        shutdown(pgs)


def test_other_chunk_size_gets_its_own_program(tmp_path, monkeypatch):
    """chunk_size 128: the switch is started with the program generated for K = 128 (the
    repository's p4src/saatp.p4 is K = 256), and sums are exact through it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    pgs = make_groups(2, timeout_s=60.0, chunk_size=128)
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    try:
        assert pgs[0].engine.k == 128
        assert list((tmp_path / "saatp" / "p4").glob("saatp_k128_*.p4"))
        ts = [torch.full((1000,), float(r + 1)) for r in range(2)]
        assert all(x is True for x in run_ranks(2, lambda r: ar(pgs[r], ts[r])))
        assert ts[0].tolist() == [3.0] * 1000 and ts[1].tolist() == [3.0] * 1000
    finally:
        shutdown(pgs)


def test_chunk_size_must_match_a_given_program():
    res = make_groups(2, timeout_s=30.0, chunk_size=128, extra={"program": str(constants.SAATP_P4)})
    try:
        for r in res:
            assert isinstance(r, Exception), r
            assert f"K = {constants.DEFAULT_K}" in str(r), r
    finally:
        shutdown(res)


# ------------------------------------------------------------------------------------------------
# a switch the user started (SAATP_SWITCH)
# ------------------------------------------------------------------------------------------------
def _free_udp(n):
    import socket
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _start_user_switch(world, switch_ports, log_path):
    """``saatp switch --no-p4`` with one UDP tunnel per rank, as a user would start it; returns
    (process, SAATP_SWITCH value)."""
    import socket
    import subprocess
    import sys

    import grpc
    udp = _free_udp(2 * world)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        gport = s.getsockname()[1]
    argv = [sys.executable, "-m", "emulation.switchd", "--no-p4", "-L", "warn"]
    entries = []
    for r in range(world):
        argv += ["-i", f"{switch_ports[r]}@udp:{udp[r]}:127.0.0.1:{udp[world + r]}"]
        entries.append(f"{switch_ports[r]}@udp:127.0.0.1:{udp[r]}:{udp[world + r]}")
    argv += ["--", "--grpc-server-addr", f"127.0.0.1:{gport}"]
    with open(log_path, "wb") as log:  # a file, not a pipe: a full pipe would stall the switch
        p = subprocess.Popen(argv, cwd=str(paths.REPO), stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(paths.REPO)))
    deadline = time.monotonic() + 60
    while True:
        if p.poll() is not None:
            raise AssertionError(f"saatp switch exited ({p.returncode}): {_tail(log_path)}")
        assert time.monotonic() < deadline, "saatp switch: P4Runtime did not answer within 60 s"
        ch = grpc.insecure_channel(f"127.0.0.1:{gport}")
        try:
            grpc.channel_ready_future(ch).result(timeout=0.5)
            break
        except grpc.FutureTimeoutError:
            pass
        finally:
            ch.close()
    return p, f"grpc=127.0.0.1:{gport},device=0,ports=" + ";".join(entries)


def _tail(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")[-1500:]
    except OSError:
        return ""


def _stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except Exception:  # noqa: BLE001
            p.kill()
            p.wait(10)


def _job_entries(spec_text, job):
    """The switch's job_cfg entries, one per lane (only this test's group ever uses that switch)."""
    from emulation.net.control import connect
    from host_agent.torch_backend.options import parse_switch_spec
    spec = parse_switch_spec(spec_text)
    c = connect(spec.grpc, spec.device, timeout=5)
    try:
        c.load_p4info()
        return [e for e in c.read_table("SaIngress.job_cfg")]
    finally:
        c.close()


@pytest.mark.timeout(240)
def test_given_switch_is_used_configured_and_left_running(monkeypatch, tmp_path):
    world, n = 2, 5000
    log = tmp_path / "switch.log"
    proc, spec = _start_user_switch(world, [3, 5], log)  # switch ports N != rank+1: the spec's N@ is used
    try:
        monkeypatch.setenv("SAATP_SWITCH", spec)
        # round 1 finds the pipeline round 0 pushed; before round 2, a "killed rank 0" leaves the
        # job configured (entries, slot and counter state), which the next group must replace
        layout = None
        for round_ in range(3):
            if round_ == 2:
                import types

                from host_agent.torch_backend.options import parse_switch_spec
                ctx = types.SimpleNamespace(rank=0, world_size=world, job_id=layout["job"], timeout_s=10.0,
                                            options=SAATPOptions(engine="switch").resolved())
                switch_job.setup_given_switch(ctx, parse_switch_spec(spec))  # never removed
                assert len(_job_entries(spec, layout["job"])) == SAATPOptions(engine="switch").resolved().lanes
            # the first group's rank 0 has the switch compile the program (seconds on a busy machine);
            # no chunk_size: the K of the program the switch has (or is given: DEFAULT_K)
            pgs = make_groups(world, timeout_s=90.0, chunk_size=None)
            for pg in pgs:
                if isinstance(pg, BaseException):
                    raise AssertionError(f"round {round_}: {pg!r}; switch log: {_tail(log)}") from pg
            try:
                layout = pgs[0].engine.layout
                assert layout["given"] and layout["pid"] is None
                assert layout["pushed_pipeline"] is (round_ == 0)
                assert layout["port_numbers"] == [3, 5]
                assert layout["k"] == constants.DEFAULT_K  # the program pushed to a switch without one
                assert pgs[1].engine.layout == layout  # rank 1 learnt it through the store
                assert len(_job_entries(spec, layout["job"])) == SAATPOptions(engine="switch").resolved().lanes
                rng = np.random.default_rng(11 + round_)
                data = [(rng.standard_normal(n) * 5).astype(np.float32) for _ in range(world)]
                exact = np.sum(np.stack(data).astype(np.float64), axis=0)
                ts = [torch.from_numpy(d.copy()) for d in data]
                res = run_ranks(world, lambda r: ar(pgs[r], ts[r]))
                assert all(r is True for r in res), (round_, res, _tail(log))
                np.testing.assert_array_equal(ts[0].numpy(), ts[1].numpy())
                err = np.abs(ts[0].numpy().astype(np.float64) - exact)
                bound = pgs[0].engine.error_bound(np.stack(data), world)
                assert np.all(err <= bound), float(np.max(err / bound))
                assert err.max() > 0  # quantized through the switch, not a float path
                cnt = _switch_counters(layout)
                eng = pgs[0].engine   # its first allreduce: no scale to go on, redone once at most
                assert eng.rounds == (1 + eng.redone) * math.ceil((3 * world + n) / layout["k"])
                assert cnt["complete"] + cnt["evict"] == eng.rounds, cnt
            finally:
                shutdown(pgs)
            assert proc.poll() is None, f"closing the group stopped a switch it did not start: {_tail(log)}"
            assert _job_entries(spec, layout["job"]) == []  # the job's configuration was removed
    finally:
        _stop(proc)


@pytest.mark.parametrize("value, words", [
    ("grpc=127.0.0.1:9559,ports=udp:127.0.0.1:5101", ["ports entry 0", "udp:HOST:SWITCH_UDP:WORKER_UDP"]),
    ("grpc=127.0.0.1:9559,prots=udp:127.0.0.1:5101:5102", ["unknown key 'prots'"]),
    ("grpc=127.0.0.1,ports=udp:127.0.0.1:5101:5102", ["grpc=", "host:port"]),
    ("grpc=127.0.0.1:9559,ports=udp:127.0.0.1:5101:5102;udp:127.0.0.1:5103:5102", ["WORKER_UDP 5102"]),
    ("grpc=127.0.0.1:9559,ports=9@udp:127.0.0.1:5101:5102;9@udp:127.0.0.1:5103:5104", ["switch port 9"]),
    ("grpc=127.0.0.1:9559,ports=x@udp:127.0.0.1:5101:5102", ["ports entry 0", "switch port N"]),
])
def test_malformed_given_switch_is_a_clear_error(monkeypatch, value, words):
    monkeypatch.setenv("SAATP_SWITCH", value)
    res = make_groups(2, timeout_s=10.0)
    try:
        for r in res:
            assert isinstance(r, ValueError), r
            for w in words:
                assert w in str(r), (w, str(r))
    finally:
        shutdown(res)


@pytest.mark.parametrize("value, words", [
    ("127.0.0.1:9559", ["gives no ports=", "UDP tunnel"]),
    ("grpc=127.0.0.1:9559,ports=udp:127.0.0.1:5101:5102", ["lists 1 tunnel(s)", "has 2 ranks"]),
])
def test_given_switch_that_does_not_fit_the_group_is_a_clear_error(value, words):
    res = make_groups(2, timeout_s=10.0, switch=value)
    try:
        for r in res:
            assert isinstance(r, Exception), r
            for w in words:
                assert w in str(r), (w, str(r))
    finally:
        shutdown(res)


def test_given_switch_that_does_not_answer_fails_every_rank_clearly():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        gport = s.getsockname()[1]  # nothing listens there
    u = _free_udp(4)
    value = f"grpc=127.0.0.1:{gport},ports=udp:127.0.0.1:{u[0]}:{u[1]};udp:127.0.0.1:{u[2]}:{u[3]}"
    t0 = time.monotonic()
    res = make_groups(2, timeout_s=5.0, switch=value)
    try:
        for r in res:
            assert isinstance(r, Exception), r
            assert f"127.0.0.1:{gport}" in str(r) and "does not answer P4Runtime" in str(r), r
        assert "rank 0 could not set the job up" in str(res[1])  # rank 1 learnt it from the store
        assert time.monotonic() - t0 < 30
    finally:
        shutdown(res)


def _next_allreduce_on_every_rank(pgs, timeout_s):
    """Every rank's next allreduce: (its exception or None, seconds from now until it ended)."""
    t0 = time.monotonic()

    def step(r):
        try:
            ar(pgs[r], torch.ones(3000))
        except Exception as e:  # noqa: BLE001
            return e, time.monotonic() - t0
        return None, time.monotonic() - t0
    return run_ranks(len(pgs), step, timeout=timeout_s + 30)


@pytest.mark.parametrize("world", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_killed_switch_fails_every_rank_long_before_the_timeout(world):
    """The switch watchdog notices the killed switch: every rank's collective fails naming the
    switch, not at the group's timeout (60 s here)."""
    timeout_s = 60.0
    pgs = make_groups(world, timeout_s=timeout_s)
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    pid = pgs[0].engine.layout["pid"]
    try:
        ts = [torch.full((3000,), float(r)) for r in range(world)]
        assert all(x is True for x in run_ranks(world, lambda r: ar(pgs[r], ts[r])))
        assert float(ts[0][0]) == sum(range(world))  # it worked before the kill
        os.kill(pid, signal.SIGKILL)
        res = _next_allreduce_on_every_rank(pgs, timeout_s)
        for r, (exc, secs) in enumerate(res):
            assert isinstance(exc, SAATPError), f"rank {r}: {exc!r}"
            assert "is gone" in str(exc) and str(pid) in str(exc), str(exc)
            assert secs < timeout_s / 2, f"rank {r} waited {secs:.1f} s: the failure was not detected"
        # the group is unusable afterwards, and says why at once
        t1 = time.monotonic()
        with pytest.raises(SAATPError, match="unusable after an earlier failure"):
            ar(pgs[0], torch.ones(10))
        assert time.monotonic() - t1 < 2
    finally:
        shutdown(pgs)  # closing a dead switch must not raise


_STARTER = r"""
import json, sys, time, types
from host_agent.torch_backend import switch_job
from host_agent.torch_backend import SAATPOptions
store = {}
ctx = types.SimpleNamespace(rank=0, world_size=2, job_id=3, timeout_s=60.0,
                            options=SAATPOptions(engine="switch", chunk_size=256).resolved(),
                            store_set=lambda k, v: store.__setitem__(k, v))
addr, close = switch_job.start_switch(ctx)
print(json.loads(store[switch_job.LAYOUT_KEY])["pid"], flush=True)
time.sleep(600)
"""


def test_switch_stops_itself_when_the_rank_that_started_it_is_killed():
    """rank 0 killed by SIGKILL cannot run close(): the switch (--exit-with-parent) must stop itself."""
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(paths.REPO))
    p = subprocess.Popen([sys.executable, "-c", _STARTER], stdout=subprocess.PIPE, text=True, env=env,
                         cwd=str(paths.REPO))
    pid = None
    try:
        line = p.stdout.readline()
        assert line.strip().isdigit(), f"starter printed {line!r}"
        pid = int(line)
        assert alive(pid)
        p.kill()
        p.wait(10)
        deadline = time.monotonic() + 15
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), "the switch outlived the rank that started it"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------------------
# one switch per job: sub-groups share the world's switch
# ------------------------------------------------------------------------------------------------
def _groups_on(base, prefix, ranks, timeout_s=60.0, **opts):
    opts.setdefault("chunk_size", SETUP_K)
    o = SAATPOptions(engine="switch", log=0, **opts)
    n = len(ranks)
    return run_ranks(n, lambda r: ProcessGroupSAATP(
        dist.PrefixStore(prefix, base), r, n, datetime.timedelta(seconds=timeout_s), o, group_name=prefix,
        global_ranks=list(ranks)))


def test_sub_groups_share_the_world_switch():
    base = dist.HashStore()
    world = _groups_on(base, "world", [0, 1, 2])
    for pg in world:
        if isinstance(pg, BaseException):
            raise pg
    subs = []
    try:
        pid = world[0].engine.layout["pid"]
        assert alive(pid)
        # ranks are threads here, so rank r of a sub-group is "the process" of its global rank
        sub = run_ranks(2, lambda r: ProcessGroupSAATP(
            dist.PrefixStore("sub", base), r, 2, datetime.timedelta(seconds=60),
            SAATPOptions(engine="switch", log=0), group_name="sub", global_ranks=[2, 0]))
        for pg in sub:
            if isinstance(pg, BaseException):
                raise pg
        subs.append(sub)
        lay = sub[0].engine.layout
        assert lay["shared"] and lay["grpc"] == world[0].engine.layout["grpc"] and lay["pid"] == pid
        assert lay["job"] != world[0].engine.layout["job"]
        wb, sb, win = world[0].engine.layout["slot_base"], lay["slot_base"], 2 * lay["window"]
        assert sb >= wb + win or wb >= sb + win, (wb, sb)   # disjoint slot ranges
        # both groups sum correctly, interleaved
        ts = [torch.full((2000,), float(r + 1)) for r in range(3)]
        assert all(x is True for x in run_ranks(3, lambda r: ar(world[r], ts[r])))
        assert ts[0].tolist() == [6.0] * 2000
        us = [torch.full((2000,), 10.0 * (r + 1)) for r in range(2)]
        assert all(x is True for x in run_ranks(2, lambda r: ar(sub[r], us[r])))
        assert us[0].tolist() == [30.0] * 2000 and us[1].tolist() == [30.0] * 2000
        # destroy the sub-group and make another: its slots come back
        shutdown(sub)
        subs.clear()
        again = _groups_on(base, "sub2", [0, 1])
        subs.append(again)
        for pg in again:
            if isinstance(pg, BaseException):
                raise pg
        assert again[0].engine.layout["slot_base"] == sb
        vs = [torch.ones(500) for _ in range(2)]
        assert all(x is True for x in run_ranks(2, lambda r: ar(again[r], vs[r])))
        assert vs[0].tolist() == [2.0] * 500
    finally:
        for s in subs:
            shutdown(s)
        shutdown(world)


def test_running_out_of_switch_slots_is_a_clear_error():
    base = dist.HashStore()
    # 1024 slots, 2 x 256 per group: the world and one sub-group fit, a third group does not
    world = _groups_on(base, "w", [0, 1], window=256, lanes=1)
    for pg in world:
        if isinstance(pg, BaseException):
            raise pg
    subs = []
    try:
        subs.append(_groups_on(base, "s1", [0, 1], window=256, lanes=1))
        assert all(isinstance(pg, ProcessGroupSAATP) for pg in subs[0]), subs[0]
        third = _groups_on(base, "s2", [0, 1], timeout_s=20.0, window=256, lanes=1)
        subs.append(third)
        for r in third:
            assert isinstance(r, Exception), r
            assert "slots are all held by other groups" in str(r) and "SAATP_WINDOW" in str(r), r
    finally:
        for s in subs:
            shutdown(s)
        shutdown(world)


def test_hung_switch_fails_every_rank_long_before_the_timeout():
    """A switch that stops answering (SIGSTOP: the process is there, P4Runtime is not)."""
    timeout_s = 60.0
    pgs = make_groups(2, timeout_s=timeout_s)
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    pid = pgs[0].engine.layout["pid"]
    try:
        os.kill(pid, signal.SIGSTOP)
        res = _next_allreduce_on_every_rank(pgs, timeout_s)
        for r, (exc, secs) in enumerate(res):
            assert isinstance(exc, SAATPError), f"rank {r}: {exc!r}"
            assert "is gone" in str(exc) and "DEADLINE_EXCEEDED" in str(exc), str(exc)
            assert secs < timeout_s / 2, f"rank {r} waited {secs:.1f} s: the hang was not detected"
    finally:
        os.kill(pid, signal.SIGCONT)
        shutdown(pgs)


def test_allreduces_are_in_flight_together_on_lanes():
    """DDP issues its buckets back to back: the second allreduce starts on its own lane while the
    first one still waits (here: for rank 1, which has not issued anything yet)."""
    pgs = make_groups(2, lanes=2)
    for pg in pgs:
        if isinstance(pg, BaseException):
            raise pg
    try:
        eng = pgs[0].engine
        assert len(eng.lanes) == 2 and len({lane.job for lane in eng.lanes}) == 2
        a0, b0 = torch.full((5000,), 1.0), torch.full((3000,), 2.0)
        wa = pgs[0].allreduce([a0], c10d.AllreduceOptions())
        wb = pgs[0].allreduce([b0], c10d.AllreduceOptions())
        deadline = time.monotonic() + 30
        while not all(lane.worker.cur is not None for lane in eng.lanes) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(lane.worker.cur is not None and lane.worker.cur.t_done is None for lane in eng.lanes), \
            "both allreduces should be running at once, one per lane"
        assert not wa.is_completed() and not wb.is_completed()
        a1, b1 = torch.full((5000,), 10.0), torch.full((3000,), 20.0)
        w1 = [pgs[1].allreduce([a1], c10d.AllreduceOptions()), pgs[1].allreduce([b1], c10d.AllreduceOptions())]
        for w in (wa, wb, *w1):
            assert w.wait()
        assert a0.tolist() == a1.tolist() == [11.0] * 5000
        assert b0.tolist() == b1.tolist() == [22.0] * 3000
    finally:
        shutdown(pgs)
