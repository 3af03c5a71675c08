"""PTF tests (tests/ptf/) run by ``ptf`` against ``saatp switch``: through our UDP platform
(no root) and on veth pairs in a network namespace (root)."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from testsupport import paths

from emulation.testing.netns import netns_available
from emulation.testing.ptf_runner import run_ptf

ROUTER = paths.REPO / "p4src" / "basic_router.p4"
PTF_DIR = paths.REPO / "tests" / "ptf"

FAILING = '''
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.all import Ether, IP


class ExpectsAPacketThatNeverComes(BaseTest):
    def runTest(self):
        self.dataplane = __import__("ptf").dataplane_instance
        tu.send_packet(self, 0, Ether(dst="00:00:00:00:01:00") / IP(dst="10.0.0.1"))
        tu.verify_packet(self, Ether() / IP(), 1, timeout=1)   # no route installed: dropped
'''


def _need_ptf():
    if not (Path(sys.executable).parent / "ptf").exists() and shutil.which("ptf") is None:
        pytest.skip("needs the ptf tool (pip install ptf, a [dev] dependency)")


def test_ptf_example_over_udp_platform():
    """Through the command line users run: ``saatp ptf PROGRAM --test-dir DIR``."""
    _need_ptf()
    from emulation.cli import main
    assert main(["ptf", str(ROUTER), "--test-dir", str(PTF_DIR), "--ports", "4", "--timeout", "300"]) == 0


def test_saatp_ptf_bad_usage_is_a_clear_error(tmp_path, capsys):
    from emulation.cli import main
    assert main(["ptf", str(tmp_path / "missing.p4"), "--test-dir", str(PTF_DIR)]) == 2
    assert "missing.p4: no such file" in capsys.readouterr().err
    assert main(["ptf", str(ROUTER), "--test-dir", str(tmp_path / "nodir")]) == 2
    assert "nodir: no such directory" in capsys.readouterr().err
    assert main(["ptf", str(ROUTER), "--test-dir", str(PTF_DIR), "--ports", "0"]) == 2
    assert "--ports 0" in capsys.readouterr().err


def test_ptf_failure_is_reported(tmp_path):
    _need_ptf()
    (tmp_path / "failing_test.py").write_text(FAILING)
    assert run_ptf(ROUTER, tmp_path, n_ports=2, mode="udp", timeout=300) != 0


@pytest.mark.root
def test_ptf_example_on_veths_in_a_namespace():
    _need_ptf()
    why = netns_available()
    if why:
        pytest.skip(why)
    assert run_ptf(ROUTER, PTF_DIR, n_ports=4, mode="veth", timeout=300) == 0
