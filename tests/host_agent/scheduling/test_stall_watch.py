"""A hung rank (stopped, deadlocked) fails a run within the stall limit, naming every rank's
state, instead of keeping it silent until the process group's time-out (300 s or more); a
killed one fails it at once, saying how it ended."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from host_agent.scheduling.progress import (
    BUSY_CPU,
    GAP_FACTOR,
    STARTUP_S,
    Heartbeat,
    Stalled,
    StallWatch,
    process_state,
    read_count,
)
from host_agent.scheduling.rank_processes import RankFailure, RankProcesses
from tests.testsupport.child_ranks import rank_pid


def stop(pid: int) -> None:
    """SIGSTOP ``pid`` and wait until /proc shows it stopped."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    while process_state(pid)[0] != "T":
        assert time.monotonic() < deadline
        time.sleep(0.01)


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def sleepers():
    procs = [subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(120)"],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        assert p.stdout.readline() == "ready\n"  # in its sleep from here on
    yield procs
    for p in procs:
        p.kill()
        p.wait()
        p.stdout.close()


def test_counts_are_read_as_written(tmp_path):
    hb = Heartbeat(str(tmp_path), 3)
    assert read_count(str(tmp_path), 3) == 0
    for _ in range(12):
        hb.beat()
    hb.close()
    assert read_count(str(tmp_path), 3) == 12
    assert read_count(str(tmp_path), 0) is None  # no file yet


def test_a_run_without_progress_stalls_and_the_message_names_each_rank(tmp_path, sleepers):
    clock = Clock()
    beats = [Heartbeat(str(tmp_path), r) for r in range(2)]
    w = StallWatch(str(tmp_path), [p.pid for p in sleepers], 5.0, what="stage", clock=clock)
    for _ in range(4):  # both count, 1 s apart: no stall, and the gaps are learnt
        clock.t += 1.0
        beats[0].beat()
        beats[1].beat()
        w.check()
    assert w.count == [4, 4] and w.limit_s == 10.0  # GAP_FACTOR x the longest gap (1 s) > the floor
    clock.t += 9.0
    w.check()  # within the limit
    beats[1].beat()  # one rank still counting keeps the run alive (the other may wait for it)
    w.check()
    assert w.limit_s == 90.0  # and rank 1's gap of 9 s raised the limit
    clock.t += 89.0
    w.check()
    stop(sleepers[1].pid)
    try:
        clock.t += 1.5
        with pytest.raises(Stalled) as e:
            w.check()
    finally:
        os.kill(sleepers[1].pid, signal.SIGCONT)
    msg = str(e.value)
    assert isinstance(e.value, RankFailure)
    assert msg.startswith("no progress from stage 0, 1 for 90 s (stall limit 90 s")
    assert f"stage 0 (pid {sleepers[0].pid}): sleeping, iterations done 4" in msg
    assert f"stage 1 (pid {sleepers[1].pid}): stopped (a signal), iterations done 5" in msg
    assert "a stopped process (stage 1) holds up every process that waits for it" in msg


def test_the_message_names_where_the_limit_came_from(tmp_path, sleepers):
    """A rank stopped during start-up with ``--stall-timeout 5`` failed the run after 120 s,
    saying "(stall limit 120 s: --stall-timeout, or 10x the longest gap ...)": neither was 120."""
    clock = Clock()
    w = StallWatch(str(tmp_path), [sleepers[0].pid], 5.0, clock=clock)
    stop(sleepers[0].pid)
    try:
        clock.t += STARTUP_S + 1
        with pytest.raises(Stalled) as e:
            w.check()
        assert f"(stall limit {STARTUP_S:.0f} s: no rank had started counting iterations, and start-up" in str(e.value)
        hb = Heartbeat(str(tmp_path), 0)
        w.check()  # counting from now
        clock.t += 6.0
        with pytest.raises(Stalled) as e:
            w.check()
        assert "(stall limit 5 s: --stall-timeout); the ranks:" in str(e.value)
        w = StallWatch(str(tmp_path), [sleepers[0].pid], 5.0, clock=clock)
        w.check()
        clock.t += 3.0
        hb.beat()
        w.check()  # a gap of 3 s: the limit is now 30 s
        clock.t += 31.0
        with pytest.raises(Stalled) as e:
            w.check()
        assert "(stall limit 30 s: 10x the longest gap between two iterations seen (3.0 s), above --stall-timeout 5)" \
            in str(e.value)
    finally:
        os.kill(sleepers[0].pid, signal.SIGCONT)


def test_the_limit_follows_the_longest_gap_and_zero_means_none(tmp_path, sleepers):
    clock = Clock()
    w = StallWatch(str(tmp_path), [sleepers[0].pid], 2.0, clock=clock)
    clock.t += STARTUP_S - 1  # not counting yet: starting up (imports, joining the run) has its own floor
    w.check()
    assert w.limit_s == STARTUP_S
    hb = Heartbeat(str(tmp_path), 0)
    w.check()
    assert w.limit_s == 2.0
    clock.t += 30.0  # a long first iteration (start-up): stalls with a 2 s floor ...
    with pytest.raises(Stalled):
        w.check()
    hb.beat()
    w.check()
    assert w.limit_s == GAP_FACTOR * 30.0  # ... and is then a gap the limit allows for
    clock.t += 299.0
    w.check()
    off = StallWatch(str(tmp_path), [sleepers[0].pid], 0, clock=clock)
    clock.t += 1e6
    off.check()


def test_reset_starts_every_clock_and_dead_ranks_are_not_waited_for(tmp_path, sleepers):
    clock = Clock()
    Heartbeat(str(tmp_path), 0)
    Heartbeat(str(tmp_path), 1)
    w = StallWatch(str(tmp_path), [p.pid for p in sleepers], 5.0, clock=clock)
    w.check()
    clock.t += 100.0  # the parent planned between two commands
    w.reset()
    w.check()
    sleepers[1].kill()
    sleepers[1].wait()
    clock.t += 6.0
    with pytest.raises(Stalled) as e:
        w.check()
    assert str(e.value).startswith("no progress from rank 0 for 6 s")  # rank 1 is gone, not hung
    assert "rank 1: gone" in str(e.value)


def test_a_rank_that_computes_is_not_stalled(tmp_path, monkeypatch):
    """A long iteration (a large model under a 0.1-CPU quota) uses CPU; a hung rank does not."""
    from host_agent.scheduling import progress

    clock, cpu = Clock(), {"s": 0.0}
    monkeypatch.setattr(progress, "process_state", lambda pid: ("R", cpu["s"]))
    Heartbeat(str(tmp_path), 0)
    w = StallWatch(str(tmp_path), [12345], 5.0, clock=clock)
    w.check()
    clock.t += 50.0
    cpu["s"] += 0.1 * 50.0  # computing at a 0.1-CPU quota's pace, far past the 5 s limit
    w.check()
    clock.t += 100.0  # then nothing: 5 CPU-s in 150 s is below BUSY_CPU
    assert cpu["s"] / 150.0 < BUSY_CPU
    with pytest.raises(Stalled):
        w.check()


def test_ranks_of_different_kinds_are_named_as_such(tmp_path, sleepers):
    clock = Clock()
    Heartbeat(str(tmp_path), 0)
    w = StallWatch(str(tmp_path), [p.pid for p in sleepers], 5.0, clock=clock, unit="gradients",
                   names=["worker 0", "the server (rank 1)"])
    w.check()
    stop(sleepers[1].pid)
    try:
        clock.t += 6.0
        with pytest.raises(Stalled) as e:
            w.check([0])
    finally:
        os.kill(sleepers[1].pid, signal.SIGCONT)
    msg = str(e.value)
    assert msg.startswith("no progress from worker 0 for 6 s")
    assert f"the server (rank 1) (pid {sleepers[1].pid}): stopped (a signal), gradients done none" in msg
    assert "a stopped process (the server (rank 1)) holds up every process that waits for it" in msg


def test_process_state_reads_proc(sleepers):
    state, cpu = process_state(sleepers[0].pid)
    assert state in "RS" and cpu >= 0
    assert process_state(2**22 + 12345) is None


def test_rank_processes_report_rank_failures_with_their_logs_and_pass_the_parents_own_errors(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text("{}")
    with pytest.raises(RuntimeError) as e:
        with RankProcesses(str(tmp_path), "test run"):
            raise RankFailure("rank 1 hung")
    assert str(e.value) == f"test run failed: rank 1 hung\nthe ranks' logs are in {tmp_path} (empty)"
    with pytest.raises(KeyError):  # the parent's own error: the ranks' logs have nothing on it
        with RankProcesses(str(tmp_path), "test run"):
            raise KeyError("plan")


def _stop_when_counting(tmp_path, module: str, rank: int, run: threading.Thread, box: dict, beats: int = 2) -> int:
    """Wait until rank ``rank`` of our ``run`` has counted ``beats``, then SIGSTOP it."""
    pid = rank_pid(module, rank)
    deadline = time.monotonic() + 180
    while (read_count(str(tmp_path), rank) or 0) < beats:
        assert run.is_alive(), f"the run ended before rank {rank} counted {beats}: {box.get('error')}"
        assert time.monotonic() < deadline, "the rank never counted"
        time.sleep(0.05)
    os.kill(pid, signal.SIGSTOP)
    return pid


def _run_in_thread(fn):
    box = {}

    def target():
        try:
            box["out"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


@pytest.mark.slow
def test_a_stopped_stage_fails_the_pipeline_within_the_stall_limit(tmp_path):
    from host_agent.scheduling.pipeline import launch
    from host_agent.scheduling.pipeline.worker import StageConfig

    cfg = StageConfig(model="vgg-mini", cuts=[5], B=8, steps=100000, warmup=0, schedule="torch-gpipe", M=2)
    t, box = _run_in_thread(lambda: launch.run(cfg, keep_dir=str(tmp_path), stall_s=3.0, timeout_s=600))
    pid = _stop_when_counting(tmp_path, "host_agent.scheduling.pipeline.worker", 1, t, box)
    t0 = time.monotonic()
    t.join(timeout=300)
    waited = time.monotonic() - t0
    assert not t.is_alive()
    msg = str(box["error"])
    assert msg.startswith("pipeline run failed: no progress from stage 0, 1 for"), msg
    assert f"stage 1 (pid {pid}): stopped (a signal)" in msg, msg
    assert process_state(pid) is None  # killed and reaped
    print(f"the stopped stage was reported after {waited:.1f} s")


@pytest.mark.slow
def test_a_stopped_process_fails_a_groups_run(tmp_path):
    from host_agent.scheduling.groups import executor
    from host_agent.scheduling.groups.executor import GroupsConfig

    cfg = GroupsConfig(methods=("bsp",), world=2, base_quotas=(0.5, 0.5), slots=400, iters=2, B=32,
                       cgroups=False, stall_s=3.0)
    t, box = _run_in_thread(lambda: executor.run(cfg, log_dir=str(tmp_path)))
    pid = _stop_when_counting(tmp_path, "host_agent.scheduling.groups.worker", 0, t, box, beats=6)
    t.join(timeout=300)
    assert not t.is_alive()
    msg = str(box["error"])
    assert msg.startswith("groups run failed: no progress from process"), msg
    assert f"process 0 (pid {pid}): stopped (a signal)" in msg, msg
    assert process_state(pid) is None


@pytest.mark.slow
def test_a_stopped_worker_fails_a_cgp_run(tmp_path):
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp

    cfg = CGPConfig(mode="bsp", workers=2, base_quotas=(0.5, 0.5), duration_s=600.0, cgroups=False, stall_s=3.0)
    t, box = _run_in_thread(lambda: train_cgp("digits-cnn", "digits", cfg, log_dir=str(tmp_path)))
    pid = _stop_when_counting(tmp_path, "host_agent.scheduling.cgp.procs", 1, t, box, beats=3)
    t.join(timeout=300)
    assert not t.is_alive()
    msg = str(box["error"])
    assert "no progress from worker" in msg and f"worker 1 (pid {pid}): stopped (a signal)" in msg, msg
    assert process_state(pid) is None


@pytest.mark.slow
def test_a_killed_worker_ends_a_cgp_run_at_once(tmp_path):
    from host_agent.scheduling.cgp.library import CGPConfig, train_cgp

    cfg = CGPConfig(mode="asp", workers=2, base_quotas=(0.5, 0.5), duration_s=600.0, cgroups=False)
    t, box = _run_in_thread(lambda: train_cgp("digits-cnn", "digits", cfg, log_dir=str(tmp_path)))
    pid = rank_pid("host_agent.scheduling.cgp.procs", 1)
    while (read_count(str(tmp_path), 1) or 0) < 3:
        assert t.is_alive(), box.get("error")
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    t.join(timeout=120)
    assert not t.is_alive()
    msg = str(box["error"])
    # the killed worker is named with how it ended; its peers, which lose their connection to it,
    # may end within the settle time and be named too ("process 0 (exit status 1), process 1
    # (killed by SIGKILL), process 2 (exit status 1) ended the run")
    assert msg.startswith("train_cgp (asp) failed: ") and " ended the run" in msg, msg
    assert "process 1 (killed by SIGKILL)" in msg.split(" ended the run")[0], msg


def test_a_negative_stall_timeout_is_refused_before_any_process_starts(capsys):
    from emulation.cli import main
    from host_agent.scheduling.cgp.library import CGPConfig
    from host_agent.scheduling.groups.executor import GroupsConfig

    assert main(["train", "pipeline", "--model", "vgg-mini", "--stages", "2", "--quota", "none",
                 "--stall-timeout", "-1"]) == 2
    assert "--stall-timeout must be >= 0 seconds (0: no limit), got -1.0" in capsys.readouterr().err
    for make in (lambda: GroupsConfig(stall_s=-1.0), lambda: CGPConfig(stall_s=float("nan"))):
        with pytest.raises(ValueError, match=r"stall_s \(--stall-timeout\) must be >= 0 seconds"):
            make()
