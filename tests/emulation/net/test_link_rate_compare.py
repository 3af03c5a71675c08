"""--link-rate, the bottleneck report, --compare's table and the BMv2 paths (no root needed:
command lines, argument handling and the analysis of results)."""
import argparse
import shutil

import pytest

from emulation.net import runner
from emulation.net.commands import bmv2_queue_commands, p4c_command, saatp_switch_command
from emulation.switchd import parse_args as switch_parse_args


def _args(*argv):
    p = argparse.ArgumentParser()
    runner.add_arguments(p)
    return p.parse_args(list(argv))


def test_link_rate_argument():
    assert _args("--link-rate", "20k").link_rate == 20000
    assert _args("--link-rate", "1500pps").link_rate == 1500
    assert _args("--link-rate", "1.5M").link_rate == 1.5e6
    for bad in ("0", "fast", "-3", "10mbit"):
        with pytest.raises(SystemExit):
            _args("--link-rate", bad)


def test_saatp_switch_command_with_queues_parses_back():
    argv = saatp_switch_command({1: "s1-eth1", 2: "s1-eth2"}, program="p4src/basic_router.p4", grpc_port=50051,
                                queue_rate={1: 2000.0, 2: 2000.0}, queue_depth=32, control_port=9191)
    assert argv[argv.index("--queue-depth") + 1] == "32"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--queue-rate"] == ["1:2000", "2:2000"]
    assert argv[argv.index("--control-addr") + 1] == "127.0.0.1:9191"
    a = switch_parse_args(argv[4:])        # the switch accepts what the node class passes
    assert a.queues.config(1) == {"depth": 32, "rate": 2000.0} and a.queues.config(7)["rate"] == 0
    assert "--busy-poll-us" not in argv      # the switch's default unless asked
    quiet = saatp_switch_command({1: "s1-eth1"}, program=None, grpc_port=1, busy_poll_us=0)
    assert switch_parse_args(quiet[4:]).busy_poll_us == 0.0
    with pytest.raises(ValueError, match="no interface"):
        saatp_switch_command({1: "s1-eth1"}, program=None, grpc_port=1, queue_rate={5: 10.0})
    with pytest.raises(ValueError, match="packets/s"):
        saatp_switch_command({1: "s1-eth1"}, program=None, grpc_port=1, queue_rate={1: 0})


def test_bmv2_queue_and_compile_commands():
    assert bmv2_queue_commands({2: 1999.6, 1: 500.0}, 16) == [
        "set_queue_depth 16 1", "set_queue_rate 500 1", "set_queue_depth 16 2", "set_queue_rate 2000 2"]
    assert bmv2_queue_commands({1: 0.2}) == ["set_queue_rate 1 1"]
    argv, js, info = p4c_command("p4src/saatp.p4", "out/build")
    assert argv == ["p4c-bm2-ss", "--p4v", "16", "--p4runtime-files", "out/build/saatp.p4.p4info.txtpb",
                    "-o", "out/build/saatp.json", "p4src/saatp.p4"]
    assert (js, info) == ("out/build/saatp.json", "out/build/saatp.p4.p4info.txtpb")
    with pytest.raises(ValueError, match="P4 source"):
        p4c_command("build/saatp.json", "b")


@pytest.mark.skipif(shutil.which("p4c-bm2-ss") is not None, reason="p4c-bm2-ss is installed: the refusal is moot")
def test_bmv2_without_p4c_is_refused_naming_the_tool(tmp_path):
    a = _args("--switch", "bmv2", "--workload", "ring", "--out", str(tmp_path))
    with pytest.raises(runner.ToolMissing, match="p4c-bm2-ss"):
        runner.bmv2_program(a, runner.make_spec(a))
    a = _args("--switch", "bmv2", "--program", "x.json")
    with pytest.raises(ValueError, match="--p4info"):
        runner.bmv2_program(a, runner.make_spec(a))


def _results(workload, times, *, straggler=None, stats=None, cpu=None, problems=()):
    agents = {h: {"rc": 0, "result": {"ok": True, "total_s": 2.0,
                                      "iters": [{"iter": i, "time_s": t / 1000} for i, t in enumerate(ts)]}}
              for h, ts in times.items()}
    return {"workload": workload, "agents": agents, "problems": list(problems),
            "stragglers": {"delay_ms": {straggler: 250.0} if straggler else {}, "cpu": {}},
            "switch_stats": {"s1": stats} if stats else {}, "switch_cpu": {"s1": cpu} if cpu else {}}


def _port(rx, tx, overflow=0, qdrops=0):
    return {"rx": rx, "tx": tx, "forwarded": rx, "pipeline": 0, "error": 0, "tx_failed": 0,
            "rx_overflow": overflow, "queue_drops": qdrops}


def test_bottleneck_verdicts():
    quiet = {"ports": {"1": _port(1000, 1000), "2": _port(1000, 1000)},
             "queues": {"ports": {"1": {"high_water": 12}}}}
    r = _results("saatp", {"h1": [10]}, stats=quiet, cpu={"cpu_s": 0.5})
    b = runner.bottleneck(r, 2000.0)
    assert not b["switch_was_bottleneck"] and b["verdict"].startswith("neither")
    assert b["ports"]["s1:1"]["tx_pps"] == 500 and b["ports"]["s1:1"]["link_utilisation"] == 0.25
    assert b["ports"]["s1:1"]["queue_high_water"] == 12 and b["switch_busy"] == {"s1": 0.25}

    lossy = {"ports": {"1": _port(1000, 900, overflow=7), "2": _port(1000, 950, qdrops=50)}}
    b = runner.bottleneck(_results("ring", {"h1": [10]}, stats=lossy), 2000.0)
    assert b["switch_was_bottleneck"] and (b["kernel_drops"], b["queue_drops"]) == (7, 50)
    assert "kernel dropped 7" in b["verdict"] and "queues dropped 50" in b["verdict"]

    busy = runner.bottleneck(_results("saatp", {"h1": [10]}, stats=quiet, cpu={"cpu_s": 1.9}), None)
    assert busy["switch_was_bottleneck"] and "95% of a CPU" in busy["verdict"]
    assert "unknown" in runner.bottleneck(_results("saatp", {"h1": [10]}), None)["verdict"]


def test_summary_and_table_separate_stragglers():
    r = _results("saatp", {"h1": [100, 120], "h2": [20, 20], "h3": [110, 90]}, straggler="h2")
    r["bottleneck"] = runner.bottleneck(r, None)
    row = runner.summarize(r)
    assert row["iter_ms_mean"] == 105.0 and row["iter_ms_mean_all_hosts"] == 76.7 and row["ok"]
    ring = runner.summarize(dict(_results("ring", {"h1": [300], "h2": [300]}, problems=["h1: 0 of 1 exact"]),
                                 bottleneck={}))
    assert not ring["ok"]
    table = runner.format_table([row, ring])
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["workload", "iter", "ms"]
    # no compute model: the iteration is the all-reduce
    assert lines[2].split()[:6] == ["saatp", "105.0", "110.0", "76.7", "105.0", "yes"]
    # the straggler's delay is modelled compute (a sleep); the ring row has no straggler
    assert lines[2].split()[-1] == "sleep" and lines[3].split()[-1] == "-" and "model sleep:" in table
    assert lines[3].split()[:6] == ["ring", "300.0", "300.0", "300.0", "300.0", "NO"]


def test_compare_refuses_fixed_program(capsys, monkeypatch):
    monkeypatch.setattr(runner, "why_unavailable", lambda: None)
    a = _args("--compare", "--program", "p4src/basic_router.p4")
    assert runner.run(a) == 2 and "--compare picks" in capsys.readouterr().err
    a = _args("--compare", "--compare-workloads", "saatp,echo")
    assert runner.run(a) == 2 and "choose from" in capsys.readouterr().err
    assert "saatp-assist" in runner.COMPARABLE


@pytest.mark.skipif(shutil.which("p4c-bm2-ss") is None, reason="needs p4c-bm2-ss (p4c's BMv2 back end) on PATH")
def test_bmv2_program_compiles_with_p4c(tmp_path):
    a = _args("--switch", "bmv2", "--workload", "saatp", "--out", str(tmp_path))
    runner.bmv2_program(a, runner.make_spec(a))
    assert a.program == str(tmp_path / "build" / "saatp.json") and (tmp_path / "build" / "saatp.json").is_file()
    assert a.p4info.endswith("saatp.p4.p4info.txtpb") and (tmp_path / "build" / "saatp.p4.p4info.txtpb").is_file()
