"""Mininet runs with saatp switch (root only): connectivity, exact all-reduce sums, clean teardown."""
import json
import re
import shutil

import pytest

from emulation.net.mn import why_unavailable

REASON = why_unavailable()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=f"needs root and mininet: {REASON}")]


def _session(spec, tmp_path, **kw):
    from emulation.net.session import NetSession
    return NetSession(spec, "saatp", out=tmp_path, **kw)


@pytest.mark.slow
def test_single_switch_ring_exact_and_teardown(tmp_path):
    from emulation.net.agent import digest, expected_sum
    from emulation.net.topo import single_switch
    s = _session(single_switch(4), tmp_path)
    try:
        s.start()
        assert s.program_switches() == {"s1": 4}
        assert s.ping_all() == {"pairs": 12, "lost": []}
        hosts = ",".join(f"10.0.0.{i}" for i in range(1, 5))
        cmds = {f"h{r + 1}": ["python", "-m", "emulation.net.agent", "ring", "--rank", str(r), "--hosts", hosts,
                              "--elements", "3000", "--iters", "2", "--seed", "5", "--linger", "0.5",
                              "--out", str(tmp_path / f"r{r}.json")] for r in range(4)}
        import sys
        for c in cmds.values():
            c[0] = sys.executable
        res = s.run_agents(cmds, timeout=120)
        want = [digest(expected_sum(5, it, 4, 3000)) for it in range(2)]
        for h, r in res.items():
            assert r["rc"] == 0, (h, r, open(r["log"]).read()[-2000:])
            assert [i["digest"] for i in r["result"]["iters"]] == want
            assert all(i["exact"] for i in r["result"]["iters"])
        ctr = s.switch_counters()["s1"]["ports"]
        assert all(ctr[p]["rx_packets"] > 0 and ctr[p]["tx_packets"] > 0 for p in range(1, 5))
    finally:
        s.stop()
    assert s.leftovers() == []
    assert s.created["intfs"] and s.created["netns"] and s.created["pids"]
    assert s.switch_exit == {"s1": 0}        # SIGTERM: the switch stopped cleanly


@pytest.mark.slow
def test_single_switch_saatp_exact_and_teardown(tmp_path):
    """4 SA-ATP workers (host_agent.worker.Worker) through p4src/saatp.p4 on saatp switch."""
    import sys

    from emulation.net.agent import digest, expected_sum
    from emulation.net.session import REPO
    from emulation.net.topo import single_switch
    s = _session(single_switch(4), tmp_path, program=str(REPO / "p4src" / "saatp.p4"))
    try:
        s.start()
        cli = s.program_saatp(t_s=0.05)
        # simple_switch_CLI commands; table/action names may be control-qualified (SaIngress.job_cfg)
        assert re.search(r"table_add (\S+\.)?job_cfg (\S+\.)?set_job 0 =>", cli), cli
        assert len(re.findall(r"table_add (\S+\.)?wid_port ", cli)) == 4, cli
        assert s.ping_all()["lost"] == []          # plain IPv4 through the SA-ATP program too
        hosts = ",".join(f"10.0.0.{i}" for i in range(1, 5))
        cmds = {f"h{r + 1}": [sys.executable, "-m", "emulation.net.agent", "saatp", "--rank", str(r),
                              "--hosts", hosts, "--elements", "1000", "--iters", "3", "--seed", "9",
                              "--linger", "1", "--delay-ms", "120" if r == 3 else "0",
                              "--out", str(tmp_path / f"sa{r}.json")] for r in range(4)}
        res = s.run_agents(cmds, timeout=120)
        want = [digest(expected_sum(9, it, 4, 1000)) for it in (1, 2, 3)]
        for h, r in res.items():
            assert r["rc"] == 0, (h, r, open(r["log"]).read()[-2000:])
            assert [i["digest"] for i in r["result"]["iters"]] == want
        ev = s.switch_counters()["s1"]["saatp"]
        assert ev["events"]["complete"] + ev["events"]["evict"] > 0
        assert ev["events"]["detect"] >= 1          # h4 is 120 ms late, T_s is 50 ms
        # no SA-ATP packet was dropped as malformed or foreign; "noroute" counts other traffic
        # the hosts emit (e.g. to addresses with no route), which is not part of the job
        assert {k: v for k, v in ev["drops"].items() if k != "noroute" and v} == {}
    finally:
        s.stop()
    assert s.leftovers() == []


@pytest.mark.slow
def test_runner_two_racks_straggler_impairment(tmp_path):
    """`saatp experiment mininet` end to end: racks under a spine, a delayed straggler, a lossy port."""
    from emulation.net.runner import main
    rc = main(["--topo", "racks", "--workers", "4", "--workload", "ring", "--iters", "2", "--elements", "2048",
               "--straggler", "h2:delay=30ms", "--impair", "h4:loss=2%", "--out", str(tmp_path), "--no-plot"])
    r = json.loads((tmp_path / "results.json").read_text())
    assert rc == 0, r.get("problems")
    assert r["leftovers"] == [] and r["problems"] == []
    assert r["switch_exit_status"] == {"s1": 0, "s2": 0, "s3": 0}
    assert r["entries"] == {"s1": 4, "s2": 4, "s3": 4}
    assert r["impairments"] == {"s2": {"2": "loss=2%"}}
    for h in ("h1", "h2", "h3", "h4"):
        assert r["agents"][h]["result"]["ok"] is True
        assert all(i["exact"] for i in r["agents"][h]["result"]["iters"])
    # the straggler's sleep is outside its timed all-reduce, so the others wait for it
    assert r["agents"]["h2"]["result"]["delay_ms"] == 30.0
    assert set(r["switch_counters"]) == {"s1", "s2", "s3"}


@pytest.mark.slow
def test_compute_assist_exact_and_configured(tmp_path):
    """`--workload saatp-assist`: the warm-up learns h2's lag from the agents' reports, the
    runner programs the virtual worker over P4Runtime (read back from the switch), the helper
    host all-reduces part of h2's input as wid 30 and h2 the rest; every sum is exact."""
    from emulation.net.runner import main
    rc = main(["--workers", "3", "--workload", "saatp-assist", "--iters", "2", "--elements", "8192", "--t-s", "0.05",
               "--compute-ms", "100", "--straggler", "h2:delay=300ms", "--out", str(tmp_path), "--no-plot"])
    r = json.loads((tmp_path / "results.json").read_text())
    assert rc == 0, r.get("problems")
    assert r["problems"] == [] and r["leftovers"] == [] and r["warmup"] == 1
    plan = r["assist"]
    assert plan["assist"] is True and plan["straggler"] == 1 and plan["virtual"] == 30, plan
    assert plan["helper"] in (0, 2) and 0.4 < plan["phi"] < 0.7          # lag ~300 ms over T_c ~100 ms
    helper = f"h{plan['helper'] + 1}"
    back = plan["switch"]["read_back"]                 # what the switch holds, read over P4Runtime
    assert back["full_mask"] == 0b111 | 1 << 30
    assert back["wid_port"] == plan["helper"] + 1 == plan["switch"]["helper_port"]
    assert sorted(rid for _port, rid in back["mc_group"]) == [0, 1, 2]     # local results: no replica for v
    agents = {h: a["result"] for h, a in r["agents"].items()}
    for h, res in agents.items():
        its = res["iters"]
        assert [i["iter"] for i in its] == [1, 2, 3] and its[0]["warmup"] and all(i["exact"] for i in its)
        assert all(i["iter_s"] >= i["compute_s"] and i["iter_s"] >= i["time_s"] for i in its)
        # compute then all-reduce (the helper's compute_s also counts the share it computes while
        # its own all-reduce runs)
        assert all(i["iter_s"] == pytest.approx(i["time_s"] + i["compute_s"], abs=2e-3)
                   for i in its if (i.get("assist") or {}).get("role") != "helper")
    # the straggler all-reduced q - part; the helper computed its share and its virtual worker sent part
    assert all(i["assist"] == {"role": "straggler", "phi": plan["phi"]} for i in agents["h2"]["iters"][1:])
    assert all(i["compute_s"] < 0.3 for i in agents["h2"]["iters"][1:])        # (1 - phi) * 400 ms
    hv = agents[helper]
    assert all(i["assist"]["role"] == "helper" and i["virtual_exact"] for i in hv["iters"][1:])
    assert all(i["compute_s"] > 0.12 for i in hv["iters"][1:])                 # 100 ms + phi * 100 ms
    assert hv["virtual"]["wid"] == 30 and hv["virtual"]["stats"]["data_sent"] >= 2 * 32
    assert hv["virtual"]["stats"]["results"] >= 2 * 32
    assert r["switch_counters"]["s1"]["saatp"]["events"]["violation"] == 0


def test_topology_json_runtime_entries(tmp_path):
    """A tutorials-style topology.json + runtime JSON, programmed over P4Runtime, forwards pings."""
    from emulation.net.topo import load_topology_json
    d = tmp_path / "topo"
    d.mkdir()

    def entries(routes):
        return {"target": "bmv2", "table_entries": [
            {"table": "MyIngress.ipv4_lpm", "default_action": True, "action_name": "MyIngress.drop",
             "action_params": {}}] + [
            {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": [ip, 32]},
             "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": mac, "port": port}}
            for ip, mac, port in routes]}
    (d / "s1-runtime.json").write_text(json.dumps(entries([("10.0.0.1", "08:00:00:00:01:11", 1),
                                                           ("10.0.0.2", "08:00:00:00:02:22", 2)])))
    # s2 has no route to h1 yet, so h1 <-> h2 fails until the test adds it over P4Runtime
    (d / "s2-runtime.json").write_text(json.dumps(entries([("10.0.0.2", "08:00:00:00:02:22", 2)])))
    (d / "topology.json").write_text(json.dumps({
        "hosts": {"h1": {"ip": "10.0.0.1/24", "mac": "08:00:00:00:01:11", "commands": ["ip link set dev eth0 mtu 1400"]},
                  "h2": {"ip": "10.0.0.2/24", "mac": "08:00:00:00:02:22"}},
        "switches": {"s1": {"runtime_json": "topo/s1-runtime.json"}, "s2": {"runtime_json": "topo/s2-runtime.json"}},
        "links": [["h1", "s1-p1"], ["s1-p2", "s2-p1", "3ms"], ["h2", "s2-p2"]]}))
    spec = load_topology_json(d / "topology.json")
    s = _session(spec, tmp_path / "out")
    try:
        s.start()
        assert s.program_switches() == {"s1": 3, "s2": 2}
        h1 = s.net.get("h1")
        assert "mtu 1400" in h1.cmd("ip link show h1-eth0")   # host commands ran, eth0 = h1-eth0
        assert s.ping_all()["lost"] == [("h1", "h2"), ("h2", "h1")]     # s2 lacks the route to h1
        c = s.clients["s2"]
        from host_agent.match import Lpm
        c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000001, 32)}, "MyIngress.ipv4_forward",
                 {"dstAddr": 0x080000000111, "port": 1})
        assert s.ping_all() == {"pairs": 2, "lost": []}
        out = h1.cmd("ping -c 3 -q 10.0.0.2")
        rtt = float(out.split("=")[-1].split("/")[1])
        assert rtt >= 6.0       # the link's 3 ms latency, applied by s1 and s2 on their ends: 2 x 3 ms
    finally:
        s.stop()
    assert s.leftovers() == []


def test_switch_start_failure_cleans_up(tmp_path):
    from emulation.net.p4switch import SwitchStartError
    from emulation.net.topo import single_switch
    bad = tmp_path / "bad.p4"
    bad.write_text("this is not P4;\n")
    s = _session(single_switch(2), tmp_path, program=str(bad))
    with pytest.raises(SwitchStartError, match="exited with status 1"):
        s.start()
    assert s.leftovers() == []


def test_refuses_to_start_over_existing_interfaces(tmp_path):
    """A name clash with interfaces already there is reported before anything is created."""
    import subprocess

    from emulation.net.topo import SwitchSpec, single_switch
    spec = single_switch(2)
    spec.switches = {"zq7": SwitchSpec("zq7")}
    for ln in spec.links:
        ln.b = "zq7"
    subprocess.run(["ip", "link", "add", "zq7-eth9", "type", "veth", "peer", "name", "zq7-eth8"], check=True)
    try:
        s = _session(spec, tmp_path)
        with pytest.raises(RuntimeError, match="zq7-eth8, zq7-eth9 exist already"):
            s.start()
        s.stop()
        assert s.leftovers() == [] and s.created["pids"] == []
    finally:
        subprocess.run(["ip", "link", "del", "zq7-eth9"], check=False)


@pytest.mark.slow
def test_compare_with_link_rate(tmp_path):
    """`--compare --link-rate`: SA-ATP, SwitchML-like and ring on one shaped topology, one
    table; the host-facing queues were really used (their high water above one packet), and
    what they dropped is what the report counts."""
    from emulation.net.runner import main
    rc = main(["--compare", "--workers", "2", "--iters", "2", "--elements", "16384", "--link-rate", "400",
               "--out", str(tmp_path)])
    c = json.loads((tmp_path / "compare.json").read_text())
    assert rc == 0, [r["problems"] for r in c["rows"]]
    assert [r["workload"] for r in c["rows"]] == ["saatp", "switchml", "ring"]
    assert all(r["ok"] for r in c["rows"])            # exact sums, whatever the queues dropped
    assert (tmp_path / "compare.png").is_file() or c.get("plot") is None
    for w in ("saatp", "switchml", "ring"):
        r = json.loads((tmp_path / w / "results.json").read_text())
        assert r["leftovers"] == [] and r["link_rate_pps"] == 400
        ports = r["bottleneck"]["ports"]
        assert set(ports) == {"s1:1", "s1:2"}
        assert max(p["queue_high_water"] for p in ports.values()) > 1
        q = r["switch_stats"]["s1"]["queues"]["ports"]
        assert all(q[p]["queues"]["0"]["rate"] == 400 for p in ("1", "2"))
        assert all(q[p]["enqueued"] == q[p]["dequeued"] for p in ("1", "2"))   # every queued frame left
        assert r["bottleneck"]["queue_drops"] == sum(q[p]["tail_drops"] for p in ("1", "2"))


@pytest.mark.slow
@pytest.mark.skipif(not all(shutil.which(t) for t in ("simple_switch_grpc", "p4c-bm2-ss", "simple_switch_CLI")),
                    reason="needs BMv2 (simple_switch_grpc, simple_switch_CLI) and p4c-bm2-ss on PATH")
def test_bmv2_saatp_compiled_with_p4c(tmp_path):
    """`--switch bmv2`: p4src/saatp.p4 compiled by p4c-bm2-ss, run by simple_switch_grpc, shaped
    through simple_switch_CLI; exact sums and a clean teardown."""
    from emulation.net.runner import main
    rc = main(["--switch", "bmv2", "--workers", "2", "--workload", "saatp", "--iters", "2", "--elements", "4096",
               "--link-rate", "5000", "--out", str(tmp_path), "--no-plot"])
    r = json.loads((tmp_path / "results.json").read_text())
    assert rc == 0, r.get("problems")
    assert (tmp_path / "build" / "saatp.json").is_file() and r["leftovers"] == []
    assert all(all(i["exact"] for i in a["result"]["iters"]) for a in r["agents"].values())


@pytest.mark.slow
def test_saatp_wide_chunks_over_jumbo_links(tmp_path):
    """--k 1024: the switch runs the program generated for K = 1024, every link gets a jumbo
    MTU (4,166-byte frames), and the all-reduce is exact."""
    from emulation.net.runner import main
    rc = main(["--workers", "2", "--workload", "saatp", "--k", "1024", "--iters", "2", "--elements", "20000",
               "--t-s", "0.2", "--out", str(tmp_path), "--no-plot"])
    r = json.loads((tmp_path / "results.json").read_text())
    assert rc == 0, r.get("problems")
    assert r["k"] == 1024 and r["link_mtu"] == 9000
    assert r["leftovers"] == [] and r["problems"] == []
    for h in ("h1", "h2"):
        assert r["agents"][h]["result"]["ok"] is True
        assert all(i["exact"] for i in r["agents"][h]["result"]["iters"])
    ev = r["switch_counters"]["s1"]["saatp"]
    assert ev["events"]["complete"] == 2 * 20          # ceil(20000 / 1024) = 20 chunks per iteration
