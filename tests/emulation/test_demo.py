"""The README's main job, ``saatp demo``, runs end to end (quick variant) and its results hold."""
from __future__ import annotations

import json
import subprocess
import sys


def test_demo_quick_routes_packets_and_runs_the_straggler_experiment(tmp_path):
    r = subprocess.run([sys.executable, "-m", "emulation.cli", "demo", "--quick", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "(dropped)" in r.stdout and "ttl=63" in r.stdout          # routed with TTL-1, unrouted dropped
    assert (tmp_path / "straggler.png").stat().st_size > 1000
    data = json.loads((tmp_path / "straggler.json").read_text())
    rows = data["results"] if isinstance(data, dict) and "results" in data else data
    protos = {row["protocol"] for row in rows}
    assert {"saatp", "switchml", "atp", "ring"} <= protos
    assert all(row["exact"] for row in rows)
