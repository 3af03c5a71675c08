"""Ctrl-C and SIGTERM during a run: the run's directory is left for its logs and named (one
line), and the command line exits with 130 (Ctrl-C) or 143 (SIGTERM) without a traceback."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from host_agent.scheduling.run_dirs import run_dir


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), SystemExit(143)])
def test_an_interrupted_run_leaves_its_directory_and_names_it(stop, capsys):
    with pytest.raises(type(stop)) as got:
        with run_dir("saatp-test-") as d:
            open(os.path.join(d, "rank0.log"), "w").close()
            raise stop
    try:
        assert os.path.exists(os.path.join(d, "rank0.log"))
        assert capsys.readouterr().err == f"saatp: the run was interrupted; its configs and logs are left in {d}\n"
        assert got.value.run_dir_left == d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_failed_run_is_named_once(capsys):
    with pytest.raises(RuntimeError):
        with run_dir("saatp-test-") as d:
            open(os.path.join(d, "rank0.log"), "w").close()
            raise RuntimeError(f"run failed (logs in {d})")  # the error names it: no second line
    shutil.rmtree(d)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError):
        with run_dir("saatp-test-") as d:
            open(os.path.join(d, "rank0.log"), "w").close()
            raise ValueError("the ranks' results disagree")
    shutil.rmtree(d)
    assert capsys.readouterr().err == f"saatp: the run failed; its configs and logs are left in {d}\n"
    with pytest.raises(KeyboardInterrupt):
        with run_dir("saatp-test-") as d:
            raise KeyboardInterrupt  # nothing written: nothing left, nothing to name
    assert not os.path.exists(d) and capsys.readouterr().err == ""


COMMAND = """
import os, signal, sys, time
from emulation import cli
from host_agent.scheduling.run_dirs import run_dir

def command(group, name, rest):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # as the commands that start processes do
    if rest == ["--no-run"]:
        os.kill(os.getpid(), signal.SIGINT)
    with run_dir("saatp-test-") as d:
        open(os.path.join(d, "rank0.log"), "w").close()
        os.kill(os.getpid(), getattr(signal, rest[0]))
        time.sleep(30)

cli._run_lazy = command
sys.exit(cli.main(["plan", "umpipe", *sys.argv[1:]]))
"""


@pytest.mark.parametrize("sig, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_the_command_line_exits_without_a_traceback_and_names_the_directory(sig, status):
    r = subprocess.run([sys.executable, "-c", COMMAND, sig], capture_output=True, text=True, timeout=120)
    m = re.fullmatch(r"saatp: the run was interrupted; its configs and logs are left in (\S+)\n", r.stderr)
    try:
        assert r.returncode == status and m, (r.returncode, r.stderr)
        assert os.path.exists(os.path.join(m[1], "rank0.log"))
    finally:
        if m:
            shutil.rmtree(m[1], ignore_errors=True)


def test_ctrl_c_outside_a_run_exits_130_with_one_line():
    r = subprocess.run([sys.executable, "-c", COMMAND, "--no-run"], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (130, "saatp: interrupted\n")
