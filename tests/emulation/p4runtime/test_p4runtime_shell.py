"""p4runtime-shell (the p4lang client, in its own venv) against our server.

p4runtime-shell pins protobuf < 3.21 and p4runtime 1.4.1, so it lives in a separate
virtual environment: ``.venv-p4sh`` beside ``.venv`` (used when it exists), or the
interpreter ``SAATP_P4RT_SHELL_PYTHON`` names:

    python3 -m venv .venv-p4sh && .venv-p4sh/bin/pip install p4runtime-shell
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from emulation.p4runtime.device import Device
from emulation.p4runtime.p4info import p4info_from_program, write_p4info
from emulation.p4runtime.server import P4RuntimeServer
from testsupport import p4rt_paths

REPO = p4rt_paths.REPO
SHELL_SCRIPTS = p4rt_paths.SHELL_SCRIPTS
PROGRAMS = p4rt_paths.PROGRAMS
ROUTER = REPO / "p4src" / "basic_router.p4"


def _shell_python() -> str:
    py = os.environ.get("SAATP_P4RT_SHELL_PYTHON", "") or str(REPO / ".venv-p4sh" / "bin" / "python")
    if not Path(py).exists():
        pytest.skip("p4runtime-shell is not installed (create .venv-p4sh with it, or set SAATP_P4RT_SHELL_PYTHON)")
    return py


@pytest.mark.slow
@pytest.mark.parametrize("canonical", ["1", "0"])
def test_p4runtime_shell_programs_router(tmp_path, canonical):
    py = _shell_python()
    from emulation.v1model.load import load_switch
    sw = load_switch(str(ROUTER))
    p4info_path = tmp_path / "router.p4info.txtpb"
    write_p4info(p4info_from_program(sw), p4info_path)
    dev = Device(device_id=1)
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    try:
        r = subprocess.run([py, str(SHELL_SCRIPTS / "p4rt_shell_script.py"), srv.address, str(p4info_path), str(ROUTER),
                            canonical], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "DONE" in r.stdout, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert sorted(ln for ln in lines if ln.startswith("READ")) == ["READ 32 02", "READ 8 01"]
        dup = next(ln for ln in lines if ln.startswith("DUP"))
        assert "ALREADY_EXISTS" in dup
        assert "MC [(1, 1), (2, 1)]" in lines
        # the entries the shell wrote are live in the data plane
        tab = dev.switch.table("MyIngress.ipv4_lpm")
        assert len(tab.entries()) == 2
    finally:
        srv.stop(0)


@pytest.mark.slow
def test_p4runtime_shell_packet_io_and_counters(tmp_path):
    py = _shell_python()
    prog = PROGRAMS / "cpu_l2.p4"
    from emulation.v1model.load import load_switch
    sw = load_switch(str(prog), cpu_port=64)
    p4info_path = tmp_path / "cpu_l2.p4info.txtpb"
    write_p4info(p4info_from_program(sw), p4info_path)
    sent = []
    dev = Device(device_id=1, cpu_port=64, transmit=lambda p, f: sent.append((p, f)))
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    frame = bytes.fromhex("020000000002" "020000000001" "88b6") + bytes(46)
    proc = subprocess.Popen([py, str(SHELL_SCRIPTS / "p4rt_shell_packetio.py"), srv.address, str(p4info_path), str(prog)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY"), line + proc.stderr.read()
        end = time.time() + 5                             # the stream is asynchronous
        while time.time() < end and not sent:
            time.sleep(0.01)
        assert sent == [(2, frame)]                       # packet-out left on port 2
        dev.process(3, frame)                             # no l2 entry: to the CPU
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "DONE" in out, out + err
        assert f"PIN {frame.hex()} 3" in out
        assert f"CTR 1 {len(frame)}" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        srv.stop(0)
