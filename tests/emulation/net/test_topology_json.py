"""The topology.json loader (p4lang tutorials' format) and the built-in topologies: no root needed."""
import json

import pytest

from emulation.net.topo import (AGG_IP, TopologyError, builtin_runtime, check_runtime, load_topology_json,
                                parse_value, single_switch, topology_from_dict, two_racks)

POD = {
    "hosts": {
        "h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
               "commands": ["route add default gw 10.0.1.10 dev eth0", "arp -i eth0 -s 10.0.1.10 08:00:00:00:01:00"]},
        "h2": {"ip": "10.0.2.2/24", "mac": "08:00:00:00:02:22", "commands": []},
        "h3": {"ip": "10.0.3.3/24", "mac": "08:00:00:00:03:33"},
    },
    "switches": {"s1": {"runtime_json": "pod/s1-runtime.json"}, "s2": {}},
    "links": [["h1", "s1-p1"], ["h2", "s1-p2"], ["s1-p3", "s2-p1", "5ms", 10], ["h3", "s2"]],
}

RUNTIME = {
    "target": "bmv2", "p4info": "build/basic.p4.p4info.txt", "bmv2_json": "build/basic.json",
    "table_entries": [
        {"table": "MyIngress.ipv4_lpm", "default_action": True, "action_name": "MyIngress.drop",
         "action_params": {}},
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.1.1", 32]},
         "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": "08:00:00:00:01:11", "port": 1}},
    ],
    "multicast_group_entries": [{"multicast_group_id": 1, "replicas": [{"egress_port": 1, "instance": 1}]}],
}


@pytest.fixture
def pod(tmp_path):
    d = tmp_path / "pod"
    d.mkdir()
    (d / "s1-runtime.json").write_text(json.dumps(RUNTIME))
    (d / "topology.json").write_text(json.dumps(POD))
    return d / "topology.json"


def test_load_tutorial_topology(pod):
    t = load_topology_json(pod)
    assert list(t.hosts) == ["h1", "h2", "h3"]
    assert t.hosts["h1"].addr == "10.0.1.1" and t.hosts["h1"].ip == "10.0.1.1/24"
    assert t.hosts["h2"].mac == "08:00:00:00:02:22"
    assert t.hosts["h1"].commands[0].startswith("route add default gw")
    # runtime JSON found relative to the topology's folder's parent (the tutorials' layout)
    assert t.switches["s1"].runtime["table_entries"][1]["action_params"]["port"] == 1
    assert t.switches["s2"].runtime is None
    # "s1-p3" is port 3; h3's link to "s2" gets the first free port of s2 (1 is taken)
    assert t.ports()["s1"] == {1: ("h1", None), 2: ("h2", None), 3: ("s2", 1)}
    assert t.ports()["s2"] == {1: ("s1", 3), 2: ("h3", None)}
    assert t.host_port("h3") == ("s2", 2)
    # latency/bandwidth become impairments on both switch ends of the link
    assert t.port_impairments() == {"s1": {3: "delay=5ms,rate=10mbit"}, "s2": {1: "delay=5ms,rate=10mbit"}}


def test_routes_cross_switches(pod):
    r = load_topology_json(pod).routes()
    assert sorted(r["s1"]) == [("10.0.1.1", "08:00:00:00:01:11", 1), ("10.0.2.2", "08:00:00:00:02:22", 2),
                               ("10.0.3.3", "08:00:00:00:03:33", 3)]
    assert sorted(p for _, _, p in r["s2"]) == [1, 1, 2]


def test_older_list_format_and_defaults(tmp_path):
    t = topology_from_dict({"hosts": ["h1", "h2"], "switches": ["s1"],
                            "links": [["h1", "s1"], ["h2", "s1"]]}, base=tmp_path)
    assert t.hosts["h1"].ip == "10.0.0.1/24" and t.hosts["h2"].ip == "10.0.0.2/24"
    assert t.ports()["s1"] == {1: ("h1", None), 2: ("h2", None)}


@pytest.mark.parametrize("mutate, msg", [
    (lambda d: d["links"].append(["h1", "s9-p1"]), "unknown node 's9'"),
    (lambda d: d["links"].append(["h3", "s1-p1"]), "port 1 of s1 is already used"),
    (lambda d: d["hosts"]["h2"].update(ip="10.0.2"), "bad IPv4 address"),
    (lambda d: d["hosts"]["h2"].update(mac="zz"), "bad MAC address"),
    (lambda d: d["hosts"]["h2"].update(mac="08:00:00:00:01:11"), "same MAC"),
    (lambda d: d["links"].append(["h1"]), "expected [a, b]"),
    (lambda d: d["links"].append(["h1", "s2-p700"]), "must be in 1..510"),
    (lambda d: d["links"].append(["h1", "s1-p9", "fast"]), "latency"),
    (lambda d: d["switches"]["s2"].update(runtime_json="nope.json"), "not found"),
    (lambda d: d.pop("links"), "no 'links'"),
    (lambda d: d["links"].append(["h1-p2", "s1-p7"]), "takes no port suffix"),
])
def test_bad_topologies(pod, mutate, msg):
    d = json.loads(pod.read_text())
    mutate(d)
    with pytest.raises(TopologyError, match=msg.replace("[", r"\[").replace(".", r"\.")):
        topology_from_dict(d, base=pod.parent)


def test_bad_json_file(tmp_path):
    f = tmp_path / "t.json"
    f.write_text('{"hosts": [}')
    with pytest.raises(TopologyError, match=r"t\.json:1:\d+: not valid JSON"):
        load_topology_json(f)
    with pytest.raises(TopologyError, match="No such file"):
        load_topology_json(tmp_path / "missing.json")


def test_check_runtime():
    check_runtime(RUNTIME, "x")
    with pytest.raises(TopologyError, match="has no 'table'"):
        check_runtime({"table_entries": [{"match": {}}]}, "x")
    with pytest.raises(TopologyError, match="multicast_group_id"):
        check_runtime({"multicast_group_entries": [{"replicas": []}]}, "x")


def test_parse_value():
    assert parse_value("10.0.1.1") == 0x0A000101
    assert parse_value("08:00:00:00:01:11") == 0x080000000111
    assert parse_value("0x1f") == 31 and parse_value("12") == 12 and parse_value(7) == 7
    for bad in ("10.0.1", "hello", True, None, 1.5):
        with pytest.raises(TopologyError):
            parse_value(bad)


def test_single_switch_and_runtime():
    t = single_switch(4)
    assert t.ports()["s1"] == {i: (f"h{i}", None) for i in range(1, 5)}
    rt = builtin_runtime(t)["s1"]["table_entries"]
    assert [(e["match"]["hdr.ipv4.dstAddr"], e["action_params"]["port"]) for e in rt] == \
        [([f"10.0.0.{i}", 32], i) for i in range(1, 5)]
    assert t.arp_table()[AGG_IP] == "02:00:00:00:00:fe"
    with pytest.raises(TopologyError):
        single_switch(0)


def test_two_racks_forwarding():
    t = two_racks(5)
    assert t.host_port("h3") == ("s1", 3) and t.host_port("h4") == ("s2", 1)
    r = {sw: {ip: port for ip, _, port in routes} for sw, routes in t.routes().items()}
    assert r["s1"] == {"10.0.0.1": 1, "10.0.0.2": 2, "10.0.0.3": 3, "10.0.0.4": 4, "10.0.0.5": 4}
    assert r["s2"] == {"10.0.0.1": 3, "10.0.0.2": 3, "10.0.0.3": 3, "10.0.0.4": 1, "10.0.0.5": 2}
    assert r["s3"] == {"10.0.0.1": 1, "10.0.0.2": 1, "10.0.0.3": 1, "10.0.0.4": 2, "10.0.0.5": 2}
    with pytest.raises(TopologyError):
        two_racks(1)


def test_runtime_artifacts_for_bmv2(tmp_path):
    """The runtime JSON's bmv2_json/p4info (relative to the exercise folder) are found for BMv2."""
    from emulation.net.session import runtime_artifacts
    ex = tmp_path / "exercise"
    (ex / "build").mkdir(parents=True)
    (ex / "build" / "basic.json").write_text("{}")
    (ex / "build" / "basic.p4.p4info.txt").write_text("")
    (ex / "pod").mkdir()
    (ex / "pod" / "s1-runtime.json").write_text(json.dumps(RUNTIME))
    (ex / "pod" / "topology.json").write_text(json.dumps(POD))
    t = load_topology_json(ex / "pod" / "topology.json")
    prog, p4info = runtime_artifacts(t.switches["s1"])
    assert prog == str(ex / "build" / "basic.json") and p4info == str(ex / "build" / "basic.p4.p4info.txt")
    (ex / "build" / "basic.json").unlink()
    with pytest.raises(TopologyError, match="s1: runtime JSON's bmv2_json"):
        runtime_artifacts(t.switches["s1"])
