"""The SA-ATP switch program generator: committed output is fresh, the program has a plain
v1model shape for every supported K, the command lines work, and a small K aggregates."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from host_agent.protocol import layout, p4gen

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
SCRIPT = os.path.join(REPO, "scripts", "gen_saatp_p4.py")


def test_committed_program_is_generated_for_the_default_k():
    assert p4gen.DEFAULT_K == 256
    with open(os.path.join(REPO, "p4src", "saatp.p4")) as f:
        assert f.read() == p4gen.generate(p4gen.DEFAULT_K), \
            "p4src/saatp.p4 is stale: run scripts/gen_saatp_p4.py"


@pytest.mark.parametrize("k", [0, 3, 48, 2 * layout.MAX_LANES])
def test_bad_k_rejected(k, tmp_path):
    with pytest.raises(ValueError, match="K must be"):
        p4gen.generate(k)
    r = subprocess.run([sys.executable, SCRIPT, "-k", str(k), "-o", str(tmp_path / "x.p4")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "K must be" in r.stderr
    assert not (tmp_path / "x.p4").exists()


@pytest.mark.parametrize("kw", [dict(slots=1), dict(slots=(1 << 20) + 1), dict(njobs=0),
                                dict(njobs=257)])
def test_bad_sizes_rejected(kw):
    with pytest.raises(ValueError, match="out of range"):
        p4gen.generate(8, **kw)


def _actions(text):
    for m in re.finditer(r"\baction (\w+)\([^)]*\) \{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


@pytest.mark.parametrize("k", [8, 64, 256, 1024])
def test_program_shape_is_plain_v1model(k):
    text = p4gen.generate(k)
    acts = dict(_actions(text))
    assert {"open_slot", "add_slot", "load_slot", "evict", "emit_partial"} <= set(acts)
    for name, body in acts.items():
        assert not re.search(r"\bif\s*\(", body), f"conditional inside action {name}"
    assert text.count("register<bit<32>>(1024) s_val_") == k
    assert acts["add_slot"].count(".write(meta.g, s);") == k
    assert len(re.findall(r"^\s*bit<32> v\d+;$", text, re.M)) == k
    assert f"const bit<16> K_ELEMS      = {k};" in text
    assert f"const bit<8>  KLOG2        = {k.bit_length() - 1};" in text
    assert f"PAYLOAD_LEN  = {4 * k};" in text
    # only standard v1model externs
    for ext in re.findall(r"^\s*(\w+)(?:<[^>]*>)?\(\d+[^)]*\)\s+\w+;", text, re.M):
        assert ext in ("register", "counter"), ext
    assert "#include <v1model.p4>" in text and "V1Switch(" in text
    assert not re.search(r"@[A-Z_]+@", text)


def test_constants_come_from_the_layout():
    text = p4gen.generate(8)
    for value, name in layout.TYPE_NAMES.items():
        line = f"const bit<4> T_{name:<7} = {value};"
        assert (line in text) == (value not in layout.HOST_ONLY_TYPES), name
    for bit, name in layout.FLAG_NAMES.items():
        assert f"const bit<8> F_{name:<8} = {bit:#04x};" in text
    assert f"const bit<16> SA_PORT      = {layout.SA_PORT};" in text
    assert f"UDP_SA_LEN   = {8 + layout.HDR_LEN};" in text
    # every worker set is as wide as the header's bitmap
    w = layout.BITMAP_BITS
    for name in ("full", "jstrag", "wbit", "sbitmap", "missing"):
        assert f"    bit<{w}> {name};" in text
    assert f"register<bit<{w}>>(1024) s_bitmap;" in text and f"{w}w1 << hdr.sa.wid" in text


def test_module_command_line_writes_stdout_or_file(tmp_path):
    r = subprocess.run([sys.executable, "-m", "host_agent.protocol.p4gen", "-k", "16",
                        "--slots", "8", "--jobs", "2"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout == p4gen.generate(16, slots=8, njobs=2)
    out = tmp_path / "sub" / "s.p4"
    r = subprocess.run([sys.executable, SCRIPT, "-k", "16", "-o", str(out)], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "K=16" in r.stdout
    assert out.read_text() == p4gen.generate(16)


def test_k8_program_aggregates_on_embedded_target(tmp_path):
    from emulation.harness import Network, add_job
    p = tmp_path / "saatp8.p4"
    p.write_text(p4gen.generate(8, slots=64, njobs=4))
    net = Network(str(p))
    job = add_job(net, 0, 3, k=8, pool=4, mode="saatp")
    rng = np.random.default_rng(0)
    qs = [rng.integers(-1000, 1000, size=8 * 13 + 3, dtype=np.int32) for _ in range(3)]
    r = job.run_iteration(qs, 0, {1: 0.2})
    assert r.ok
    for s in r.sums:
        np.testing.assert_array_equal(s, np.sum(qs, axis=0))
    assert net.ctl.counters(0)["detect"] == 1
