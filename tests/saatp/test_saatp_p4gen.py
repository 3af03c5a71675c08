"""The SA-ATP P4 generator: committed output is fresh, BMv2-friendly shape, other K work."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import gen_saatp_p4 as gen  # noqa: E402


def test_committed_program_is_generated_for_k64():
    with open(os.path.join(REPO, "p4src", "saatp.p4")) as f:
        assert f.read() == gen.generate(64), "p4src/saatp.p4 is stale: run scripts/gen_saatp_p4.py"


@pytest.mark.parametrize("k", [0, 3, 48, 512])
def test_bad_k_rejected(k, tmp_path):
    with pytest.raises(ValueError):
        gen.generate(k)
    r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "gen_saatp_p4.py"), "-k",
                        str(k), "-o", str(tmp_path / "x.p4")], capture_output=True, text=True)
    assert r.returncode == 2 and "K must be" in r.stderr


def _actions(text):
    for m in re.finditer(r"\baction (\w+)\([^)]*\) \{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


@pytest.mark.parametrize("k", [8, 64, 256])
def test_program_shape_is_plain_v1model(k):
    text = gen.generate(k)
    acts = dict(_actions(text))
    assert {"open_slot", "add_slot", "load_slot", "evict", "emit_partial"} <= set(acts)
    for name, body in acts.items():
        assert not re.search(r"\bif\s*\(", body), f"conditional inside action {name}"
    assert text.count("register<bit<32>>(1024) s_val_") == k
    assert acts["add_slot"].count(".write(meta.g, s);") == k
    # only standard v1model externs
    for ext in re.findall(r"^\s*(\w+)(?:<[^>]*>)?\(\d+[^)]*\)\s+\w+;", text, re.M):
        assert ext in ("register", "counter"), ext
    assert "#include <v1model.p4>" in text and "V1Switch(" in text


def test_k8_program_aggregates_on_embedded_target(tmp_path, saatp_program):
    from host_agent.harness import Network, add_job
    p = tmp_path / "saatp8.p4"
    p.write_text(gen.generate(8, slots=64, njobs=4))
    net = Network(str(p))
    job = add_job(net, 0, 3, k=8, pool=4, mode="saatp")
    rng = np.random.default_rng(0)
    qs = [rng.integers(-1000, 1000, size=8 * 13 + 3, dtype=np.int32) for _ in range(3)]
    r = job.run_iteration(qs, 0, {1: 0.2})
    assert r.ok
    for s in r.sums:
        np.testing.assert_array_equal(s, np.sum(qs, axis=0))
    assert net.ctl.counters(0)["detect"] == 1
