"""A second Ctrl-C (or SIGTERM) during a command's clean-up: the clean-up still finishes. Until
2026-11-28 ``saatp profile`` interrupted during its calibration by four SIGINTs 10-100 ms apart
left two stage processes running and their three cgroups behind, and more Ctrl-C's after the
"saatp: interrupted" line printed a traceback from an atexit callback."""

import os
import signal
import subprocess
import sys
import time

import pytest

from host_agent.scheduling.interrupts import held_interrupts
from host_agent.scheduling.pipeline import cgroups
from host_agent.scheduling.rank_processes import RankProcesses


def test_held_interrupts_finish_the_block_then_raise():
    done = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with held_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here: without the hold, KeyboardInterrupt now
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            done.append(1)
    assert done == [1]
    assert signal.getsignal(signal.SIGINT) is before


def test_held_interrupts_without_a_signal_raise_nothing():
    with held_interrupts():
        pass


def test_a_second_ctrl_c_while_killing_the_ranks_kills_them_all(tmp_path, monkeypatch):
    ranks = RankProcesses(str(tmp_path))
    ranks.procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(3)]
    first = ranks.procs[0]
    real_wait = first.wait

    def wait_interrupted(*a, **k):  # Ctrl-C again while the first rank is being reaped
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        return real_wait(*a, **k)

    monkeypatch.setattr(first, "wait", wait_interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            ranks.kill()
        assert [p.poll() is not None for p in ranks.procs] == [True, True, True]
    finally:
        monkeypatch.undo()
        for p in ranks.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.skipif(cgroups.unavailable_reason() is not None,
                    reason=f"cgroup v1 CPU quotas: {cgroups.unavailable_reason()}")
def test_a_second_ctrl_c_while_removing_the_groups_removes_them_all(monkeypatch):
    groups = cgroups.CpuQuotas(prefix=f"saatp-test-{os.getpid()}-held")
    paths = [groups.create(f"stage{r}", 0.5) for r in range(3)]
    real_rmdir = os.rmdir
    calls = []

    def rmdir_interrupted(path):
        if not calls:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        calls.append(path)
        return real_rmdir(path)

    monkeypatch.setattr(cgroups.os, "rmdir", rmdir_interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            groups.remove()
        assert [os.path.exists(p) for p in paths] == [False, False, False]
    finally:
        monkeypatch.undo()
        for p in paths:
            if os.path.exists(p):
                os.rmdir(p)


COMMAND = """
import atexit, os, signal, sys, time
from emulation import cli

def more_ctrl_c():  # the user keeps pressing Ctrl-C while the interpreter exits
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.1)

def command(group, name, rest):
    atexit.register(more_ctrl_c)
    raise KeyboardInterrupt

cli._run_lazy = command
sys.exit(cli.main(["plan", "umpipe"]))
"""


def test_ctrl_c_after_the_interrupted_line_prints_nothing_more():
    r = subprocess.run([sys.executable, "-c", COMMAND], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (130, "saatp: interrupted\n")


TERMINATED = """
import atexit, os, signal, sys, time

def more_sigterm():  # a supervisor that keeps sending SIGTERM while the interpreter exits
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.1)

INSTALL
atexit.register(more_sigterm)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(30)
"""

INSTALLS = {
    # saatp profile and train pipeline
    "exit_143": "from host_agent.scheduling.interrupts import exit_143; signal.signal(signal.SIGTERM, exit_143)",
    # saatp train groups and train cgp
    "exit_on_sigterm": "from host_agent.scheduling.run_options import exit_on_sigterm; exit_on_sigterm()",
    # train_cgp and groups.executor.run called from a script
    "sigterm_exits": "from host_agent.scheduling.run_options import sigterm_exits; held = sigterm_exits(); held.__enter__()",
}


@pytest.mark.parametrize("install", sorted(INSTALLS))
def test_sigterm_after_sigterm_prints_nothing(install):
    code = TERMINATED.replace("INSTALL", INSTALLS[install])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (143, "")


HUNG_UP = """
import signal, sys
IGNORE
INSTALL
try:
    signal.raise_signal(signal.SIGHUP)
    print("went on")
finally:
    print("cleaned up", flush=True)
"""


@pytest.mark.parametrize("install", ["exit_on_sigterm", "sigterm_exits"])
@pytest.mark.parametrize("nohup", [False, True])
def test_train_groups_and_cgp_clean_up_when_the_terminal_hangs_up(nohup, install):
    """SIGHUP (a closed terminal, a dropped ssh session) killed ``saatp train groups`` / ``train
    cgp`` (or a script calling ``train_cgp`` / ``executor.run``) at once, leaving its cgroups and
    run directory and the finished methods or slots unwritten (until 2026-11-28): now it ends as
    SIGTERM does, through the finally blocks, with 129. Under ``nohup`` (SIGHUP ignored) it is
    still ignored."""
    code = HUNG_UP.replace("IGNORE", "signal.signal(signal.SIGHUP, signal.SIG_IGN)" if nohup else "")
    code = code.replace("INSTALL", INSTALLS[install])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if nohup:
        assert (r.returncode, r.stdout) == (0, "went on\ncleaned up\n")
    else:
        assert (r.returncode, r.stdout, r.stderr) == (129, "cleaned up\n", "")
