"""`saatp experiment straggler` end to end on a small configuration."""
import argparse
import json

import pytest

from emulation import experiment


def _args(*argv):
    p = argparse.ArgumentParser()
    experiment.add_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.slow
def test_experiment_small_run_writes_json_and_plot(saatp_program, tmp_path, capsys):
    js, png = tmp_path / "r.json", tmp_path / "r.png"
    rc = experiment.run(_args("--workers", "3", "--elements", "1500", "--delays", "0,5",
                              "--iterations", "1", "--pool", "8",
                              "--protocols", "saatp,switchml,atp,ring,assist",
                              "--json", str(js), "--plot", str(png), "--quiet"))
    assert rc == 0
    out = capsys.readouterr().out
    assert "SA-ATP" in out and "all sums exact" in out
    data = json.loads(js.read_text())
    res = {(r["protocol"], r["delay_ts"]): r for r in data["results"]}
    assert len(res) == 10 and all(r["exact"] for r in res.values())
    assert res[("saatp", 5.0)]["counters"]["detect"] == 1
    assert res[("switchml", 5.0)]["counters"]["detect"] == 0
    assert res[("saatp", 5.0)]["helper"]["partials"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv,msg", [
    (("--protocols", "bogus"), "unknown protocol"),
    (("--delays", "a,b"), "bad --delays"),
    (("--workers", "1"), "--workers"),
    (("--workers", "20", "--protocols", "assist"), "assist needs"),
    (("--k", "32"), "--program"),
])
def test_experiment_rejects_bad_arguments(argv, msg, capsys):
    assert experiment.run(_args(*argv)) == 2
    assert msg in capsys.readouterr().err
