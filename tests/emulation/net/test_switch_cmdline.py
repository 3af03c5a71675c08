"""Command lines of the P4 switch node classes (BMv2's simple_switch_grpc and saatp switch)."""
import sys

import pytest

from emulation.net.commands import bmv2_command, saatp_switch_command
from emulation.net.mn import MininetMissing, import_mininet


def test_bmv2_command_line():
    argv = bmv2_command({2: "s1-eth2", 1: "s1-eth1"}, json_path="build/basic.json", grpc_port=50051,
                        device_id=3, cpu_port=255, pcap_dir="pcaps", log_file="logs/s1.log", thrift_port=9091)
    assert argv == ["simple_switch_grpc", "-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "3",
                    "--pcap", "pcaps", "--log-file", "logs/s1.log", "--thrift-port", "9091", "build/basic.json",
                    "--", "--grpc-server-addr", "127.0.0.1:50051", "--cpu-port", "255"]


def test_bmv2_command_line_no_program_console_log():
    argv = bmv2_command({1: "s2-eth1"}, json_path=None, grpc_port=50052, log_console=True)
    assert argv[-4:] == ["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:50052"]
    assert "--log-console" in argv and "--cpu-port" not in argv and "--thrift-port" not in argv


@pytest.mark.parametrize("kw, msg", [
    (dict(json_path="basic.p4"), "not P4 source"),
    (dict(json_path=None, cpu_port=1), "both the CPU port"),
    (dict(json_path=None, cpu_port=600), "CPU port 600"),
    (dict(json_path=None, grpc_port=70000), "gRPC port"),
])
def test_bmv2_command_line_errors(kw, msg):
    kw = {"grpc_port": 50051, **kw}
    with pytest.raises(ValueError, match=msg):
        bmv2_command({1: "s1-eth1"}, **kw)


def test_saatp_switch_command_line():
    argv = saatp_switch_command({1: "s1-eth1", 2: "s1-eth2"}, program="p4src/basic_router.p4", grpc_port=50051,
                                device_id=1, cpu_port=64, impair={2: "loss=1%,delay=5ms"})
    assert argv[:4] == [sys.executable, "-m", "emulation.cli", "switch"]
    assert argv[4:] == ["-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "1", "--impair", "2:loss=1%,delay=5ms",
                        "p4src/basic_router.p4", "--", "--grpc-server-addr", "127.0.0.1:50051", "--cpu-port", "64"]
    # the switch's own parser accepts what the node class produces
    from emulation.switchd import parse_args
    a = parse_args(argv[4:])
    assert a.interface == ["1@s1-eth1", "2@s1-eth2"] and a.cpu_port == 64 and a.device_id == 1
    assert a.grpc_server_addr == "127.0.0.1:50051" and a.impair == ["2:loss=1%,delay=5ms"]
    with pytest.raises(ValueError, match="no interface"):
        saatp_switch_command({1: "s1-eth1"}, program=None, grpc_port=1, impair={3: "loss=1%"})


def test_bmv2_node_class_command_line():
    """The node class builds its command from its Mininet interfaces (no process started)."""
    try:
        import_mininet()
    except MininetMissing as e:
        pytest.skip(f"mininet is not installed: {e}")
    from emulation.net.p4switch import Bmv2Switch

    class FakeIntf:
        def __init__(self, name):
            self.name = name
    sw = object.__new__(Bmv2Switch)     # no shell: Node.__init__ would need root
    sw.intfs = {0: FakeIntf("lo"), 1: FakeIntf("s1-eth1"), 3: FakeIntf("s1-eth3")}
    sw.program, sw.grpc_port, sw.device_id, sw.cpu_port = "basic.json", 50055, 7, 255
    sw.pcap_dir, sw.log_console, sw.thrift_port, sw.sw_path = None, False, 9099, "simple_switch_grpc"
    assert sw.command_line() == ["simple_switch_grpc", "-i", "1@s1-eth1", "-i", "3@s1-eth3", "--device-id", "7",
                                 "--thrift-port", "9099", "basic.json", "--", "--grpc-server-addr",
                                 "127.0.0.1:50055", "--cpu-port", "255"]
    assert sw.grpc_address == "127.0.0.1:50055"


def test_why_unavailable_names_root(monkeypatch):
    from emulation.net import mn
    monkeypatch.setattr(mn.os, "geteuid", lambda: 1000)
    assert "needs root" in mn.why_unavailable()
    monkeypatch.setattr(mn.os, "geteuid", lambda: 0)
    monkeypatch.setattr(mn, "import_mininet", lambda: (_ for _ in ()).throw(MininetMissing("Mininet is not installed")))
    assert mn.why_unavailable() == "Mininet is not installed"
