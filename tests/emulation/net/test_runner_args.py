"""`saatp experiment mininet` argument handling (no root needed)."""
import argparse
import shlex

import pytest

from emulation.net import runner
from emulation.net.topo import single_switch, two_racks


def _args(*argv):
    p = argparse.ArgumentParser()
    runner.add_arguments(p)
    return p.parse_args(list(argv))


def test_parse_stragglers():
    d, c = runner.parse_stragglers(["h2:delay=50ms", "h3:cpu=30%,delay=0.1s"], ["h1", "h2", "h3"])
    assert d == {"h2": 50.0, "h3": 100.0} and c == {"h3": pytest.approx(0.3)}
    for bad, msg in (["h9:delay=5ms", "HOST one of"], ["h1:speed=3", "unknown key"], ["h1:delay=fast", "bad duration"],
                     ["h1:cpu=0", r"cpu must be in"]):
        with pytest.raises(ValueError, match=msg):
            runner.parse_stragglers([bad], ["h1", "h2"])


def test_parse_impairs_maps_host_to_switch_port():
    assert runner.parse_impairs(["h4:loss=1%,delay=2ms"], two_racks(4)) == {"s2": {2: "loss=1%,delay=2ms"}}
    with pytest.raises(ValueError):
        runner.parse_impairs(["h1:colour=blue"], single_switch(2))
    with pytest.raises(ValueError, match="HOST one of"):
        runner.parse_impairs(["s1:loss=1%"], single_switch(2))


def test_agent_commands_builtin_and_template(tmp_path):
    spec = single_switch(3)
    a = _args("--workload", "saatp", "--iters", "2", "--elements", "64", "--t-s", "0.02")
    cmds = runner.agent_commands(a, spec, tmp_path, {"h2": 40.0}, 123.0)
    c = cmds["h2"]
    assert c[1:4] == ["-m", "emulation.net.agent", "saatp"]
    assert c[c.index("--rank") + 1] == "1" and c[c.index("--hosts") + 1] == "10.0.0.1,10.0.0.2,10.0.0.3"
    assert c[c.index("--delay-ms") + 1] == "40.0" and c[c.index("--t-s") + 1] == "0.02"
    assert c[c.index("--agg-ip") + 1] == "10.0.0.254"
    assert cmds["h1"][cmds["h1"].index("--delay-ms") + 1] == "0.0"
    a = _args("--agent-cmd", "myagent --me {ip} --n {n} --job-file {out}")
    cmds = runner.agent_commands(a, spec, tmp_path, {}, 0.0)
    assert cmds["h3"] == shlex.split(f"myagent --me 10.0.0.3 --n 3 --job-file {tmp_path}/agent-h3.json") + \
        ["--out", f"{tmp_path}/agent-h3.json"]
    with pytest.raises(ValueError, match="bad template"):
        runner.agent_commands(_args("--agent-cmd", "x {nope}"), spec, tmp_path, {}, 0.0)


def test_check_results_detects_wrong_sums():
    from emulation.net.agent import digest, expected_sum
    spec = single_switch(2)
    a = _args("--workload", "ring", "--iters", "2", "--elements", "10", "--seed", "3")
    good = [{"iter": i, "digest": digest(expected_sum(3, i, 2, 10))} for i in range(2)]
    ok = {"h1": {"rc": 0, "log": "x", "result": {"ok": True, "iters": good}},
          "h2": {"rc": 0, "log": "x", "result": {"ok": True, "iters": good}}}
    assert runner.check_results(a, spec, ok) == []
    bad = dict(ok, h2={"rc": 0, "log": "x", "result": {"ok": True, "iters": [good[0], {"iter": 1, "digest": "0"}]}})
    assert runner.check_results(a, spec, bad) == ["h2: 1 of 2 all-reduce results equal the exact sums"]
    missing = dict(ok, h1={"rc": 1, "log": "L", "result": None})
    assert "h1: no result file" in runner.check_results(a, spec, missing)[0]


def test_expected_sum_is_the_sum_of_inputs():
    import numpy as np

    from emulation.net.agent import expected_sum, ring_input
    s = sum(ring_input(4, 2, r, 50).astype(np.int64) for r in range(3))
    assert np.array_equal(expected_sum(4, 2, 3, 50), s.astype(np.int32))
    assert not np.array_equal(ring_input(4, 2, 0, 50), ring_input(4, 2, 1, 50))


def test_k_lanes_and_jumbo_links(tmp_path):
    """--k K: the agents get it, the links get a jumbo MTU once an SA-ATP frame outgrows 1500
    bytes (K = 512: 2,118-byte frames), and K must be a power of two the header can name."""
    spec = single_switch(2)
    a = _args("--workload", "saatp", "--k", "1024")
    c = runner.agent_commands(a, spec, tmp_path, {}, 0.0)["h1"]
    assert c[c.index("--k") + 1] == "1024"
    assert runner.link_mtu(256) is None and runner.link_mtu(512) == runner.JUMBO_MTU
    assert runner.link_mtu(1024) == runner.JUMBO_MTU
    for bad in ("300", "0", "4096"):
        rc, _ = runner.run_one(_args("--workload", "saatp", "--k", bad, "--out", str(tmp_path)))
        assert rc == 2
