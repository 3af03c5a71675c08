"""The overload soak (emulation/testing/soak.py, scripts/soak_switchd.py), bounded: the switch
process flooded through every port kind keeps running, answers P4Runtime, counts every frame it
does not forward, and the SA-ATP / SwitchML-like / ring runs through it end with exact sums."""
from __future__ import annotations

import copy

import pytest

from emulation.testing.netns import netns_available
from emulation.testing.soak import (
    PLAN,
    SoakConfig,
    SoakReport,
    check,
    format_table,
    soak,
)

SECONDS = 8.0


def _assert_passed(rep: SoakReport) -> None:
    table = format_table(rep)
    assert rep.ok, table
    assert rep.alive and rep.probe["ok"] >= 5 and rep.probe["failed"] == 0, table
    for name in ("saatp", "switchml", "ring"):
        w = rep.workloads[name]
        assert w["iterations"] >= 1 and w["exact"] == w["iterations"] and w["unfinished"] == 0, (name, table)
    flood = [rep.rows[n] for n, role, _ in PLAN if role == "flood"]
    # overloaded: the kernel dropped flood frames the switch could not read in time
    assert sum(r["rx_overflow"] + r["link"] for r in flood) > 0, table
    # the egress queues tail-dropped, and the program dropped the unrouted part of the flood
    assert rep.rows[9]["queue_drops"] > 0, table
    assert all(r["pipeline"] > 0 for r in flood), table
    for n, r in rep.rows.items():   # offered = forwarded + every counted drop, per port
        assert r["offered"] == (r["forwarded"] + r["link"] + r["rx_overflow"] + r["pipeline"] + r["error"]
                                + r["no_program"]), (n, table)


@pytest.mark.slow
def test_soak_every_port_kind():
    """UDP tunnels, and veths read through PACKET_MMAP rings when namespaces can be made."""
    veth = netns_available() is None
    rep = soak(SoakConfig(seconds=SECONDS, veth=veth, raw="ring"))
    _assert_passed(rep)
    kinds = set(rep.port_kinds.values())
    assert "udp" in kinds
    if veth:
        assert "veth (ring)" in kinds


@pytest.mark.slow
@pytest.mark.root
def test_soak_plain_packet_sockets():
    why = netns_available()
    if why:
        pytest.skip(why)
    rep = soak(SoakConfig(seconds=SECONDS, veth=True, raw="socket"))
    _assert_passed(rep)
    assert "veth (socket)" in set(rep.port_kinds.values())


def _report() -> SoakReport:
    row = {"offered": 10, "link": 1, "arrived": 9, "stuck": 0, "rx": 7, "rx_overflow": 2, "forwarded": 5, "pipeline": 2,
           "error": 0, "no_program": 0, "tx": 0, "tx_failed": 0, "queue_drops": 0}
    wl = {"name": "x", "iterations": 3, "exact": 3, "unfinished": 0, "slowest_s": 0.1, "resent": 0, "error": None}
    return SoakReport(config={}, port_kinds={n: "udp" for n, _, _ in PLAN}, rows={n: dict(row) for n, _, _ in PLAN},
                      workloads={k: dict(wl, name=k) for k in ("saatp", "switchml", "ring")},
                      probe={"ok": 4, "failed": 0, "slowest_s": 0.01, "last_error": None}, alive=True)


def test_check_finds_every_gap():
    assert check(_report()) == []
    cases = [
        (lambda r: r.rows[3].update(offered=11), "port 3: offered 11"),
        (lambda r: r.rows[7].update(rx_overflow=3), "port 7: arrived 9 != read 7"),
        (lambda r: r.rows[1].update(forwarded=4), "port 1: read 7 != forwarded"),
        (lambda r: r.rows[8].update(stuck=64), "port 8: 64 frames the interface took were neither read"),
        (lambda r: r.workloads["ring"].update(exact=2), "ring: 2/3 iterations exact"),
        (lambda r: r.workloads["saatp"].update(unfinished=1), "saatp:"),
        (lambda r: r.probe.update(failed=1, last_error="UNAVAILABLE"), "P4Runtime: 4 reads answered, 1 failed"),
        (lambda r: setattr(r, "alive", False), "the switch process died"),
    ]
    for change, text in cases:
        rep = copy.deepcopy(_report())
        change(rep)
        problems = check(rep)
        assert any(text in p for p in problems), (text, problems)
    quiet = copy.deepcopy(_report())
    for n, _, _ in PLAN:
        quiet.rows[n].update(link=0, rx_overflow=0, arrived=10, rx=10, pipeline=5)
    assert any("not overloaded" in p for p in check(quiet))


def test_report_round_trips_through_json():
    rep = _report()
    back = SoakReport.from_json(rep.to_json())
    assert back.rows == rep.rows and back.port_kinds == rep.port_kinds and back.workloads == rep.workloads
