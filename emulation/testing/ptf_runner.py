"""Run a PTF test directory against ``saatp switch``.

    saatp ptf PROGRAM.p4 --test-dir DIR [--ports N] [--mode veth|udp] [--test-params K=V;...]
              [--timeout S] [-- PTF ARGS...]
    (or python -m emulation.testing.ptf_runner ..., the same)

* ``--mode veth`` (root): a network namespace with N veth pairs (:mod:`.netns`); the switch
  takes ``swI`` as port I, PTF runs in the namespace on ``tI`` (``-i I@tI``), exactly as with
  BMv2 and veths.  The namespace is deleted afterwards.
* ``--mode udp`` (no root): the switch's ports are UDP tunnels on 127.0.0.1 and PTF uses
  our platform module ``saatp_udp`` (:mod:`emulation.ptf_platform`).

The tests get the switch's P4Runtime address in the test parameter ``grpc_addr`` (read it
with ``ptf.testutils.test_param_get("grpc_addr")``); the switch's device id is 0.  The exit
status is PTF's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from emulation.ptf_platform import DIR as PLATFORM_DIR
from emulation.ptf_platform import PLATFORM
from host_agent.free_ports import free_udp_ports

from .netns import VethNamespace
from .switch_process import SwitchProcess, SwitchStartError


def ptf_command() -> list[str]:
    beside = Path(sys.executable).parent / "ptf"
    found = str(beside) if beside.exists() else shutil.which("ptf")
    if not found:
        raise FileNotFoundError("the ptf tool is not installed (pip install ptf)")
    return [sys.executable, found]


def _params(grpc: str, extra: str) -> str:
    p = f"grpc_addr='{grpc}'"
    return f"{p};{extra}" if extra else p


def run_ptf(program: str | Path, test_dir: str | Path, *, n_ports: int = 2, mode: str = "udp",
            test_params: str = "", ptf_args: Sequence[str] = (), timeout: float = 600.0) -> int:
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([repo, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if mode == "veth":
        with VethNamespace(n_ports) as ns:
            ports = {i: ns.switch_if(i) for i in range(n_ports)}
            with SwitchProcess(program, ports, netns=ns.name) as sw:
                argv = ptf_command() + ["--test-dir", str(test_dir),
                                        "--test-params", _params(sw.grpc_address or "", test_params)]
                for i in range(n_ports):
                    argv += ["-i", f"{i}@{ns.tester_if(i)}"]
                r = subprocess.run(ns.wrap(argv + list(ptf_args)), env=env, timeout=timeout, check=False)
                return r.returncode
    if mode != "udp":
        raise ValueError(f"mode {mode!r}: expected veth or udp")
    udp = free_udp_ports(2 * n_ports)
    ports = {i: f"udp:{udp[2 * i]}:127.0.0.1:{udp[2 * i + 1]}" for i in range(n_ports)}
    with SwitchProcess(program, ports) as sw:
        argv = ptf_command() + ["--platform-dir", PLATFORM_DIR, "--platform", PLATFORM,
                                "--test-dir", str(test_dir),
                                "--test-params", _params(sw.grpc_address or "", test_params)]
        for i in range(n_ports):
            argv += ["-i", f"{i}@udp:{udp[2 * i + 1]}:127.0.0.1:{udp[2 * i]}"]
        r = subprocess.run(argv + list(ptf_args), env=env, timeout=timeout, check=False)
        return r.returncode


def main(argv: Sequence[str] | None = None, prog: str = "python -m emulation.testing.ptf_runner") -> int:
    """The command line (also ``saatp ptf``); exit status PTF's, 2 for bad usage or a missing tool."""
    argv = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, rest = argv[:k], argv[k + 1:]
    ap = argparse.ArgumentParser(prog=prog, description="run a PTF test directory against saatp switch",
                                 epilog="arguments after -- go to ptf unchanged (e.g. -- --test-case-timeout 30 "
                                        "mytests.MyTest)")
    ap.add_argument("program", help="the P4 program the switch runs (P4_16 source)")
    ap.add_argument("--test-dir", required=True, help="the directory of PTF tests")
    ap.add_argument("--ports", type=int, default=2, help="switch ports 0..N-1 (default 2)")
    ap.add_argument("--mode", choices=["veth", "udp"], default="udp",
                    help="udp: UDP tunnels, no root (default); veth: veth pairs in a network namespace (root)")
    ap.add_argument("--test-params", default="", help="extra PTF test parameters, K=V;K=V")
    ap.add_argument("--timeout", type=float, default=600.0, help="longest PTF run, seconds (default 600)")
    a = ap.parse_args(argv)
    for what, path, ok in (("program", a.program, Path(a.program).is_file()),
                           ("--test-dir", a.test_dir, Path(a.test_dir).is_dir())):
        if not ok:
            print(f"{prog}: error: {what} {path}: no such {'file' if what == 'program' else 'directory'}",
                  file=sys.stderr)
            return 2
    if a.ports < 1:
        print(f"{prog}: error: --ports {a.ports}: must be >= 1", file=sys.stderr)
        return 2
    if a.mode == "veth":
        from .netns import netns_available
        why = netns_available()
        if why:
            print(f"{prog}: error: --mode veth {why}; --mode udp needs no root", file=sys.stderr)
            return 2
    try:
        return run_ptf(a.program, a.test_dir, n_ports=a.ports, mode=a.mode, test_params=a.test_params,
                       ptf_args=rest, timeout=a.timeout)
    except FileNotFoundError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except SwitchStartError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
