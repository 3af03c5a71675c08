"""The command line the p4lang tutorials' ``P4RuntimeSwitch.start`` builds (utils/p4runtime_switch.py,
``make run``): one shell string, options after the JSON path, ``--pcap DIR``, and after ``--``
the gRPC address on 0.0.0.0, ``--cpu-port`` and ``--priority-queues``.  ``saatp-switch-grpc``
must take it as it is (checked end to end in Mininet with the tutorials' run_exercise.py, see
docs/p4runtime-tutorials.md)."""
from __future__ import annotations

import shlex

from emulation.switchd import parse_args


def test_p4runtime_switch_command_line(tmp_path, capsys):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "flowcache.json").write_text('{"program": "flowcache.p4"}')
    (tmp_path / "flowcache.p4").write_text("// source\n")
    (tmp_path / "pcaps").mkdir()
    # the pieces P4RuntimeSwitch joins with spaces, in its order
    pieces = ["/usr/local/bin/saatp-switch-grpc", "-i", "1@s1-eth1", "-i", "2@s1-eth2",
              f"--pcap {tmp_path / 'pcaps'}", "--nanolog", "ipc:///tmp/bm-0-log.ipc", "--device-id", "0",
              str(tmp_path / "build" / "flowcache.json"), "--log-console", "--thrift-port 9090",
              "-- --grpc-server-addr 0.0.0.0:50051", "--cpu-port 510", "--priority-queues 4"]
    a = parse_args(shlex.split(" ".join(pieces))[1:])
    assert a.program == str(tmp_path / "flowcache.p4")
    assert a.grpc_server_addr == "0.0.0.0:50051" and a.cpu_port == 510 and a.device_id == 0
    assert a.pcap == str(tmp_path / "pcaps") and a.log_console
    assert a.priority_queues == 4 and a.queues is not None
    assert a.interface == ["1@s1-eth1", "2@s1-eth2"]
    err = capsys.readouterr().err
    assert "--thrift-port ignored" in err and "--nanolog ignored" in err
