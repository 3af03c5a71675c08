"""Compute assist in Mininet (emulation/net/assist.py) and the compute model's options: the
split and phi, the plan, packet routing on the helper's host, the coordinator against a
recording switch, and the runner's argument handling (no root needed)."""
import argparse
import json

import numpy as np
import pytest

from emulation.net import assist, runner
from emulation.net.agent import build_parser, ring_input
from emulation.net.agent import main as agent_main
from emulation.net.topo import single_switch
from host_agent import wire
from host_agent.controller import Controller, JobSpec


def _args(*argv):
    p = argparse.ArgumentParser()
    runner.add_arguments(p)
    return p.parse_args(list(argv))


# ------------------------------------------------------------------ phi and the split
def test_phi_balances_the_straggler_and_the_helper():
    for t_c, lag in ((0.5, 1.0), (0.2, 1.0), (1.0, 0.25), (0.1, 0.3)):
        f = assist.phi(lag, t_c)
        assert 0 < f < 1
        # the straggler computes (1 - phi)(T_c + D), the helper T_c + phi * T_c: equal
        assert (1 - f) * (t_c + lag) == pytest.approx(t_c + f * t_c)
    assert assist.phi(1.0, 0.5) == pytest.approx(0.5)
    assert assist.phi(0.0, 0.5) == 0.0 and assist.phi(-1, 0.5) == 0.0
    with pytest.raises(ValueError, match="--compute-ms"):
        assist.phi(1.0, 0.0)


@pytest.mark.parametrize("share", [0.0, 0.25, 0.5, 0.587, 0.999, 1.0])
def test_split_sums_exactly_to_the_input(share):
    q = ring_input(3, 2, 1, 5000)
    q = np.concatenate([q, np.array([2**31 - 1, -2**31, -1, 1, 0], dtype=np.int32)])
    rest, part = assist.split(q, share)
    assert rest.dtype == part.dtype == np.int32
    assert np.array_equal(rest.astype(np.int64) + part.astype(np.int64), q.astype(np.int64))
    assert np.array_equal(rest + part, q)
    # part is the helper's share of every value, rounded towards zero
    assert np.all(np.abs(part.astype(np.int64)) <= np.abs(q.astype(np.int64)))
    if share == 0.0:
        assert not part.any()
    if share == 1.0:
        assert np.array_equal(part, q) and not rest.any()


def test_split_is_the_same_on_every_host():
    """The straggler computes q - part and the helper part from its replica, in two
    processes: both must get the same part."""
    a = assist.split(ring_input(1, 4, 2, 4096), 0.4137)[1]
    b = assist.split(ring_input(1, 4, 2, 4096).copy(), 0.4137)[1]
    assert np.array_equal(a, b)


# ------------------------------------------------------------------ the plan
def test_plan_finds_the_straggler_and_its_lag_from_reports():
    p = assist.plan_assist({0: 0.50, 1: 1.51, 2: 0.49, 3: 0.52}, 0.2, switch_helper=3, detect=1)
    assert p["assist"] and p["straggler"] == 1 and p["helper"] == 3
    assert p["helper_source"] == "the switch's helper"
    assert p["t_c_s"] == pytest.approx(0.50) and p["lag_s"] == pytest.approx(1.01)
    assert p["phi"] == pytest.approx(1.01 / (2 * 0.5 + 1.01))
    assert p["virtual"] == 30 and p["predicted_lag_s"] == pytest.approx(p["phi"] * 0.5, abs=1e-4)
    assert p["compute_s"] == {"0": 0.5, "1": 1.51, "2": 0.49, "3": 0.52}
    json.dumps(p)       # the plan travels as JSON


def test_plan_helper_falls_back_to_the_fastest_worker():
    for sh in (None, -1, 1, 7):     # none chosen (SwitchML-like), the straggler itself, out of range
        p = assist.plan_assist({0: 0.5, 1: 1.5, 2: 0.45, 3: 0.5}, 0.2, switch_helper=sh)
        assert p["assist"] and p["helper"] == 2 and "fastest" in p["helper_source"]
    assert assist.virtual_wid(0) == 31 and assist.virtual_wid(14) == 17


def test_plan_refuses_what_does_not_pay():
    short = assist.plan_assist({0: 0.5, 1: 0.85, 2: 0.5}, 0.2)
    assert not short["assist"] and "not above 2·T_s = 400 ms" in short["reason"] and short["straggler"] == 1
    assert not assist.plan_assist({0: 0.0, 1: 1.0, 2: 0.0}, 0.2)["assist"]          # no compute to share
    assert "T_c = 0" in assist.plan_assist({0: 0.0, 1: 1.0, 2: 0.0}, 0.2)["reason"]
    many = assist.plan_assist({r: 0.5 + (r == 3) for r in range(16)}, 0.2)
    assert not many["assist"] and "at most 15" in many["reason"]
    assert not assist.plan_assist({0: 1.0}, 0.2)["assist"]
    assert assist.plan_assist({0: 0.5, 1: 0.9, 2: 0.5}, 0.1)["assist"]             # 400 ms > 2 * 100 ms


# ------------------------------------------------------------------ the helper host's packets
def _pkt(typ, dst, flags=0):
    h = wire.Header(type=typ, flags=flags, job=0, wid=wire.SWITCH_WID, nworkers=3, iter=1, seq=0, klog2=8,
                    bitmap=0b111, dst=dst)
    vals = np.zeros(256, np.int32) if typ in (wire.RESULT, wire.PARTIAL) else None
    return wire.pack(h, vals) if vals is not None else wire.pack(h)


def test_route_on_the_helper_host():
    v = 30
    assert assist.route(_pkt(wire.RESULT, 2, wire.F_PAYLOAD), v, True) == (True, True)
    assert assist.route(_pkt(wire.RESULT, 2, wire.F_PAYLOAD), v, False) == (True, False)
    assert assist.route(_pkt(wire.PACK, 2), v, True) == (True, True)
    assert assist.route(_pkt(wire.NACK, 2, wire.F_UCAST), v, True) == (True, False)
    assert assist.route(_pkt(wire.PARTIAL, 2, wire.F_PAYLOAD), v, True) == (True, False)
    for typ in (wire.NACK, wire.RESULT, wire.DATA, wire.PACK):   # addressed to v: v only
        assert assist.route(_pkt(typ, v), v, True) == (False, True)
        assert assist.route(_pkt(typ, v), v, False) == (False, True)
    assert assist.route(b"\x11\x00", v, True) == (True, False)       # too short: the real worker counts it


# ------------------------------------------------------------------ coordinator and switch
class RecordingSwitch:
    """The calls Controller makes, recorded (a stand-in for P4RuntimeTarget)."""

    def __init__(self):
        self.entries, self.groups, self.n = {}, {}, 0

    def table_add(self, table, action, match, args=(), priority=None):
        self.n += 1
        self.entries[self.n] = (table, action, list(match), list(args))
        return self.n

    def table_modify(self, table, handle, action, args=()):
        t, _, m, _ = self.entries[handle]
        self.entries[handle] = (t, action, m, list(args))

    def mc_set_group(self, mgid, replicas):
        self.groups[mgid] = list(replicas)

    def register(self, name):
        raise KeyError(name)

    def register_read(self, name, index):
        return {"j_helper": 3, "j_iter": 1, "j_strag": 0}[name]      # wid + 1: the helper is wid 2

    def counter_read(self, name, index):
        return (1 if name == "c_detect" else 0, 0)


def _controller(n=4):
    sw = RecordingSwitch()
    ctl = Controller(sw, nslots=1024)
    ctl.configure_job(JobSpec(job=0, ports={w: w + 1 for w in range(n)}, nworkers=n, t_s=0.2))
    return ctl, sw


def _reports(d, comp):
    d.mkdir(exist_ok=True)
    for r, c in comp.items():
        assist.write_json(assist.report_path(d, r), {"rank": r, "compute_s": c})


@pytest.mark.parametrize("results, threshold", [("local", "lift"), ("replica", "keep")])
def test_coordinator_plans_and_programs_the_switch(tmp_path, results, threshold):
    ctl, sw = _controller()
    _reports(tmp_path, {0: 0.5, 1: 1.5, 2: 0.5, 3: 0.51})
    c = assist.Coordinator(tmp_path, 4, 0.2, controller=ctl, results=results, threshold=threshold, timeout=5)
    c.start()
    c.join(5)
    plan = json.loads(assist.plan_path(tmp_path).read_text())
    assert plan["assist"] and plan["straggler"] == 1 and plan["helper"] == 2 and plan["virtual"] == 30
    assert plan["switch_helper"] == 2 and plan["switch_detect"] == 1
    assert plan["phi"] == pytest.approx(0.5) and plan["predicted_lag_s"] == pytest.approx(0.25)
    t_s = 0.5 if threshold == "lift" else 0.2         # lifted to twice the residual lag of 250 ms
    assert plan["switch"] == {"virtual": 30, "helper_port": 3, "mgid": 1, "results": results, "t_s": t_s}
    assert plan["events_at_plan"]["detect"] == 1
    job = next(e for e in sw.entries.values() if e[0] == "job_cfg")
    assert job[3][2] == 0b1111 | 1 << 30                       # v in the job's full mask
    assert job[3][3] == round(t_s * 1e6)                       # T_s in µs
    assert ("wid_port", "set_port", [0, 30], [3]) in sw.entries.values()
    reps = sw.groups[1]
    assert reps[:4] == [(1, 0), (2, 1), (3, 2), (4, 3)]
    assert ((3, 30) in reps) == (results == "replica")        # local: the helper host shares its results


def test_lifted_threshold_never_lowers_it():
    assert assist.lifted_threshold(0.2, 0.25) == 0.5
    assert assist.lifted_threshold(0.2, 0.05) == 0.2
    ctl, sw = _controller()
    ctl.jobs[0].mode = "switchml"                     # no detection: nothing to lift
    plan = {"virtual": 30, "helper": 0, "predicted_lag_s": 0.3}
    assert "t_s" not in assist.configure_switch(ctl, 0, plan) and ctl.jobs[0].t_s == 0.2


def test_coordinator_without_every_report_says_no(tmp_path):
    ctl, sw = _controller()
    _reports(tmp_path, {0: 0.5, 1: 1.5})
    c = assist.Coordinator(tmp_path, 4, 0.2, controller=ctl, timeout=0.2)
    c.start()
    c.join(5)
    plan = json.loads(assist.plan_path(tmp_path).read_text())
    assert not plan["assist"] and "2 of 4 agents did not report" in plan["reason"]
    assert not any(e[2] == [0, 30] for e in sw.entries.values())


def test_coordinator_short_lag_leaves_the_switch_alone(tmp_path):
    ctl, sw = _controller(3)
    before = dict(sw.entries), dict(sw.groups)
    _reports(tmp_path, {0: 0.5, 1: 0.6, 2: 0.5})
    c = assist.Coordinator(tmp_path, 3, 0.2, controller=ctl, timeout=5)
    c.start()
    c.join(5)
    assert not c.plan["assist"] and (dict(sw.entries), dict(sw.groups)) == before


def test_wait_for_plan_times_out_to_no_assist(tmp_path):
    calls = []
    plan = assist.wait_for_plan(tmp_path, lambda until, t: calls.append((until(), t)), 0.5)
    assert calls == [(False, 0.5)] and not plan["assist"] and "no plan" in plan["reason"]
    assist.write_json(assist.plan_path(tmp_path), {"assist": True, "phi": 0.5})
    assert assist.wait_for_plan(tmp_path, lambda until, t: None, 0.5) == {"assist": True, "phi": 0.5}


# ------------------------------------------------------------------ options
def test_agent_options():
    a = build_parser().parse_args(["saatp", "--rank", "0", "--hosts", "10.0.0.1", "--out", "x", "--compute-ms",
                                   "500", "--warmup", "1", "--assist-dir", "/tmp/a"])
    assert (a.compute_ms, a.warmup, a.assist_dir, a.assist_results) == (500.0, 1, "/tmp/a", "local")
    base = ["--rank", "0", "--hosts", "10.0.0.1,10.0.0.2", "--out", "/nonexistent/x.json"]
    assert agent_main(["saatp", *base, "--assist-dir", "/tmp/a"]) == 2              # no warm-up to learn in
    assert agent_main(["ring", *base, "--warmup", "1", "--assist-dir", "/tmp/a"]) == 2
    assert agent_main(["saatp", *base, "--compute-ms", "-1"]) == 2


def test_runner_compute_and_assist_options(tmp_path):
    a = _args("--workload", "saatp-assist", "--compute-ms", "500", "--iters", "3")
    assert runner.switch_mode(a.workload) == "saatp" and runner.switch_mode("switchml-assist") == "switchml"
    assert runner.warmup_of(a) == 1 and runner.warmup_of(_args("--workload", "saatp")) == 0
    assert runner.warmup_of(_args("--workload", "ring", "--warmup", "2")) == 2
    cmds = runner.agent_commands(a, single_switch(3), tmp_path, {"h2": 1000.0}, 5.0)
    c = cmds["h2"]
    assert c[c.index("--compute-ms") + 1] == "500.0" and c[c.index("--warmup") + 1] == "1"
    assert c[c.index("--delay-ms") + 1] == "1000.0" and c[c.index("--assist-dir") + 1] == str(tmp_path / "assist")
    assert c[c.index("--assist-results") + 1] == "local"
    ring = runner.agent_commands(_args("--workload", "ring", "--compute-ms", "20"), single_switch(2), tmp_path, {}, 0)
    assert "--assist-dir" not in ring["h1"] and ring["h1"][ring["h1"].index("--compute-ms") + 1] == "20.0"
    echo = runner.agent_commands(_args("--workload", "echo"), single_switch(2), tmp_path, {}, 0)
    assert "--compute-ms" not in echo["h1"]
    a = _args("--agent-cmd", "x --t {compute_ms} --w {warmup}", "--compute-ms", "7")
    assert runner.agent_commands(a, single_switch(2), tmp_path, {}, 0)["h1"][:5] == ["x", "--t", "7.0", "--w", "0"]


@pytest.mark.parametrize("argv, msg", [
    (["--workload", "saatp-assist"], "needs --compute-ms"),
    (["--workload", "echo", "--compute-ms", "5"], "--compute-ms is for"),
    (["--workload", "saatp", "--compute-ms", "-5"], "must not be negative"),
    (["--workload", "saatp-assist", "--compute-ms", "5", "--workers", "16"], "at most 15 workers"),
])
def test_runner_refuses_bad_compute_options(tmp_path, capsys, argv, msg):
    rc, res = runner.run_one(_args(*argv, "--out", str(tmp_path)))
    assert (rc, res) == (2, {}) and msg in capsys.readouterr().err


def test_compare_workloads_add_assist_with_a_delayed_straggler(capsys, monkeypatch):
    cw = runner.compare_workloads
    assert cw(_args("--compare")) == ["saatp", "switchml", "ring"]
    assert cw(_args("--compare", "--compute-ms", "500")) == ["saatp", "switchml", "ring"]
    assert cw(_args("--compare", "--straggler", "h2:cpu=0.3", "--compute-ms", "500")) == ["saatp", "switchml", "ring"]
    assert cw(_args("--compare", "--straggler", "h2:delay=1s", "--compute-ms", "500")) == \
        ["saatp", "saatp-assist", "switchml", "ring"]
    assert cw(_args("--compare", "--straggler", "h2:delay=1s")) == ["saatp", "switchml", "ring"]
    assert cw(_args("--compare", "--compare-workloads", "switchml-assist,ring")) == ["switchml-assist", "ring"]
    monkeypatch.setattr(runner, "why_unavailable", lambda: None)
    assert runner.run(_args("--compare", "--compare-workloads", "saatp-assist")) == 2
    assert "needs --compute-ms" in capsys.readouterr().err


def test_check_results_counts_warmup_iterations():
    from emulation.net.agent import digest, expected_sum
    spec = single_switch(2)
    a = _args("--workload", "saatp-assist", "--compute-ms", "5", "--iters", "2", "--elements", "10", "--seed", "3")
    good = [{"iter": i, "digest": digest(expected_sum(3, i, 2, 10)), **({"warmup": True} if i == 1 else {})}
            for i in (1, 2, 3)]
    ok = {h: {"rc": 0, "log": "x", "result": {"ok": True, "iters": good}} for h in ("h1", "h2")}
    assert runner.check_results(a, spec, ok) == []
    short = dict(ok, h2={"rc": 0, "log": "x", "result": {"ok": True, "iters": good[:2]}})
    assert runner.check_results(a, spec, short) == ["h2: 2 of 3 all-reduce results equal the exact sums"]


def _agents(recs):
    return {h: {"rc": 0, "result": {"ok": True, "total_s": 3.0, "iters": its}} for h, its in recs.items()}


def _it(i, ar, comp, warm=False):
    return {"iter": i, "time_s": ar / 1000, "compute_s": comp / 1000, "iter_s": (ar + comp) / 1000,
            **({"warmup": True} if warm else {})}


def test_summary_counts_compute_and_leaves_out_the_warmup():
    res = {"workload": "saatp-assist", "compute_ms": 500, "problems": [],
           "hosts": {"h1": {}, "h2": {}, "h3": {}},
           "stragglers": {"delay_ms": {"h2": 1000.0}, "cpu": {}},
           "agents": _agents({"h1": [_it(1, 3000, 500, True), _it(2, 2300, 500), _it(3, 2500, 500)],
                              "h2": [_it(1, 20, 1500, True), _it(2, 50, 750), _it(3, 50, 750)],
                              "h3": [_it(1, 3000, 500, True), _it(2, 2100, 750), _it(3, 2100, 750)]}),
           "assist": {"assist": True, "straggler": 1, "helper": 2, "phi": 0.5, "lag_s": 1.0, "t_c_s": 0.5,
                      "predicted_lag_s": 0.25, "virtual": 30, "helper_source": "the switch's helper",
                      "switch": {"t_s": 0.5}, "events_at_plan": {"complete": 10, "evict": 4086, "detect": 1}},
           "switch_counters": {"s1": {"saatp": {"events": {"complete": 8202, "evict": 4086, "detect": 1}}}}}
    row = runner.summarize(res)
    assert row["iter_ms_mean"] == 2875.0          # h1 2800, 3000; h3 2850, 2850: compute included
    assert row["iter_ms_median"] == 2850.0 and row["iter_ms_mean_all_hosts"] == 2183.3
    assert row["allreduce_ms_mean"] == 2250.0 and row["warmup_ms_mean"] == 2840.0
    assert row["model"] == "sleep+split" and row["assist"]["straggler"] == "h2" and row["assist"]["helper"] == "h3"
    assert row["per_host_ms"]["h2"] == [800.0, 800.0]
    table = runner.format_table([row])
    assert table.splitlines()[2].split()[:7] == ["saatp-assist", "2875.0", "2850.0", "2183.3", "2250.0", "yes", "-"]
    assert "sleep+split" in table and "learnt lag 1000 ms of h2" in table and "h3 (the switch's helper)" in table
    assert row["assist"]["counted_events"] == {"complete": 8192, "evict": 0, "detect": 0}
    assert "switch T_s 500 ms; counted iterations: 8192 rounds completed in the switch, 0 evicted" in table
    plain = dict(res, workload="switchml", assist=None)
    assert runner.summarize(plain)["model"] == "sleep" and "assist" not in runner.summarize(plain)
    assert runner.model_of({"compute_ms": 0, "stragglers": {"delay_ms": {}}}) == "-"
    assert runner.model_of({"compute_ms": 0, "stragglers": {"delay_ms": {"h2": 50.0}}}) == "sleep"
    no = dict(res, assist={"assist": False, "reason": "lag 100 ms is not above"})
    assert runner.summarize(no)["model"] == "sleep"
    assert "saatp-assist: no assist: lag 100 ms" in runner.format_table([runner.summarize(no)])
