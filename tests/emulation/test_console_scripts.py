"""The installed commands: each entry point exists and starts."""
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

COMMANDS = {
    "saatp": "emulation.cli:main",
    "saatp-switch": "emulation.cli:switch_main",
    # run_exercise.py of the p4lang tutorials takes a switch for a P4Runtime one by "grpc" in its path
    "saatp-switch-grpc": "emulation.cli:switch_main",
    "saatp-gen-p4": "host_agent.protocol.p4gen:main",
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_console_script_is_installed_and_starts(name):
    eps = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert eps.get(name) == COMMANDS[name], f"{name}: {eps.get(name)!r}"
    exe = Path(sys.executable).parent / name
    assert exe.exists(), f"{exe} is not installed (re-run scripts/setup.sh)"
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage" in r.stdout.lower()
