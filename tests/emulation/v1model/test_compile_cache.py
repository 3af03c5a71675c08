"""The on-disk compile cache (emulation/v1model/compile_cache.py): a program compiled before
is loaded, not compiled, and behaves the same; any change of the program, of an included
file, of a code-generation option or of the compiler's sources compiles again; refusals are
never stored; a corrupt entry is compiled again.  Every test uses its own cache directory
(``XDG_CACHE_HOME``), never the user's ``~/.cache``."""
from __future__ import annotations

import shutil

import pytest

from emulation.p4.errors import P4Error
from emulation.stf.runner import run_stf_text
from emulation.v1model import compile_cache, load
from emulation.v1model.load import compile_file, compile_source
from emulation.v1model.switch import Switch
from testsupport import paths

P4_DIR = paths.REPO / "tests" / "p4"

INCLUDING = """#include <core.p4>
#include <v1model.p4>
#include "port.p4"
struct H {} struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { transition accept; } }
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t s) { apply { s.egress_spec = OUT_PORT; } }
control E(inout H h, inout M m, inout standard_metadata_t s) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply {} }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory; ``compiles`` counts the real compilations."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SAATP_COMPILE_CACHE", raising=False)
    counter = {"n": 0}
    real = load.compile_ast

    def counting(*a, **kw):
        counter["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(load, "compile_ast", counting)
    d = tmp_path / "xdg" / "saatp" / "compiled"
    assert compile_cache.cache_dir() == d
    return d, counter


def test_cached_program_behaves_like_the_compiled_one(cache):
    d, compiles = cache
    p4, stf = P4_DIR / "clone.p4", P4_DIR / "clone.stf"
    first = compile_file(p4)
    assert compiles["n"] == 1 and list(d.glob("*.program"))
    second = compile_file(p4)
    assert compiles["n"] == 1                      # loaded, not compiled
    assert second is not first and second.source == first.source
    assert second.info.tables == first.info.tables
    text = stf.read_text()
    results = []
    for prog in (first, second):
        sw = Switch(prog)
        r = run_stf_text(sw, text, str(stf))
        assert r.ok, r.messages
        results.append(sw.port_stats)
    assert results[0] and results[0] == results[1]


def test_cached_program_emits_the_same_packets(cache):
    d, compiles = cache
    src = INCLUDING.replace('#include "port.p4"', "const bit<9> OUT_PORT = 3;")
    a = compile_source(src, "inline.p4")
    b = compile_source(src, "inline.p4")
    assert compiles["n"] == 1
    frame = bytes(range(20))
    assert Switch(a).process(1, frame) == Switch(b).process(1, frame) == [(3, frame)]


@pytest.mark.parametrize("change", [
    {"trace": True}, {"allow_target_extensions": True}, {"defines": {"X": "1"}}, {"include_dirs": ["/nonexistent"]},
])
def test_an_option_change_misses(cache, change):
    _, compiles = cache
    p4 = P4_DIR / "counters.p4"
    compile_file(p4)
    compile_file(p4)
    assert compiles["n"] == 1
    compile_file(p4, **change)
    assert compiles["n"] == 2
    compile_file(p4, **change)
    assert compiles["n"] == 2


def test_vectorize_switch_misses(cache, monkeypatch):
    _, compiles = cache
    p4 = P4_DIR / "counters.p4"
    compile_file(p4)
    monkeypatch.setenv("SAATP_P4_VECTORIZE", "0")
    compile_file(p4)
    assert compiles["n"] == 2


def test_a_change_of_the_program_or_an_included_file_misses(cache, tmp_path):
    _, compiles = cache
    prog = tmp_path / "main.p4"
    prog.write_text(INCLUDING)
    inc = tmp_path / "port.p4"
    inc.write_text("const bit<9> OUT_PORT = 3;\n")
    frame = b"\x01" * 16
    assert Switch(compile_file(prog)).process(0, frame) == [(3, frame)]
    assert Switch(compile_file(prog)).process(0, frame) == [(3, frame)]
    assert compiles["n"] == 1
    inc.write_text("const bit<9> OUT_PORT = 5;\n")          # same main text: the include decides
    assert Switch(compile_file(prog)).process(0, frame) == [(5, frame)]
    assert compiles["n"] == 2
    prog.write_text(INCLUDING + "\n// a comment only: the preprocessed text is the same\n")
    compile_file(prog)
    assert compiles["n"] == 2
    prog.write_text(INCLUDING + "\nconst bit<8> EXTRA = 1;\n")
    compile_file(prog)
    assert compiles["n"] == 3


def test_a_change_of_the_compiler_sources_misses(cache, tmp_path, monkeypatch):
    _, compiles = cache
    p4 = P4_DIR / "counters.p4"
    compile_file(p4)
    root = tmp_path / "emulation"
    shutil.copytree(compile_cache._PACKAGE_ROOT / "p4", root / "p4", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(compile_cache._PACKAGE_ROOT / "v1model", root / "v1model",
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(compile_cache, "_PACKAGE_ROOT", root)
    monkeypatch.setattr(compile_cache, "_compiler_digest", None)
    same = compile_cache.compiler_digest()
    compile_file(p4)
    assert compiles["n"] == 1                        # an identical copy of the compiler hashes the same
    with open(root / "p4" / "compiler" / "statements.py", "a") as f:
        f.write("\n# changed\n")
    monkeypatch.setattr(compile_cache, "_compiler_digest", None)
    assert compile_cache.compiler_digest() != same
    compile_file(p4)
    assert compiles["n"] == 2


def test_refused_programs_are_not_stored(cache):
    d, compiles = cache
    bad = INCLUDING.replace('#include "port.p4"', "const bit<9> OUT_PORT = undefined_name;")
    for _ in range(2):
        with pytest.raises(P4Error):
            compile_source(bad, "bad.p4")
    assert compiles["n"] == 2
    assert not list(d.glob("*.program"))


def test_a_corrupt_entry_is_compiled_again(cache):
    d, compiles = cache
    p4 = P4_DIR / "counters.p4"
    good = compile_file(p4)
    for entry in d.glob("*.program"):
        entry.write_bytes(entry.read_bytes()[:100])  # truncated
    again = compile_file(p4)
    assert compiles["n"] == 2 and again.source == good.source
    compile_file(p4)                                 # the rewritten entry is good again
    assert compiles["n"] == 2
    for entry in d.glob("*.direct"):
        entry.write_bytes(b"\xff not json")
    compile_file(p4)
    assert compiles["n"] == 2                        # found through the preprocessed key


def test_cache_can_be_turned_off(cache, monkeypatch):
    d, compiles = cache
    monkeypatch.setenv("SAATP_COMPILE_CACHE", "0")
    p4 = P4_DIR / "counters.p4"
    compile_file(p4)
    compile_file(p4)
    assert compiles["n"] == 2 and not d.exists()
