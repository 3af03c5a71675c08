"""The v1model loader: file or text -> front end -> compiled program -> switch."""
from __future__ import annotations

import pytest
from testsupport.p4paths import P4SRC

from emulation.p4.errors import P4Error
from emulation.v1model.arch import Program
from emulation.v1model.load import compile_file, compile_source, load_program, load_switch
from emulation.v1model.switch import Switch
from host_agent.match import Lpm

ROUTER = P4SRC / "basic_router.p4"


def test_switch_runs_a_program_compiled_elsewhere():
    prog = compile_file(ROUTER)
    assert isinstance(prog, Program)
    a, b = Switch(prog), Switch(prog)          # one compiled program, two independent switches
    a.table_add("MyIngress.ipv4_lpm", "MyIngress.drop", {"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)})
    assert len(a.table_entries("MyIngress.ipv4_lpm")) == 1
    assert b.table_entries("MyIngress.ipv4_lpm") == []


def test_switch_refuses_a_path():
    with pytest.raises(TypeError, match="load_switch"):
        Switch(str(ROUTER))


def test_load_switch_passes_switch_options():
    sw = load_switch(ROUTER, cpu_port=64, drop_port=500)
    assert (sw.cpu_port, sw.drop_port) == (64, 500)
    assert "MyIngress.ipv4_lpm" in sw.tables


def test_missing_file_is_oserror_for_compile_and_p4error_for_check(tmp_path):
    missing = tmp_path / "none.p4"
    with pytest.raises(OSError):
        compile_file(missing)
    with pytest.raises(P4Error, match="no such file"):
        load_program(missing)


def test_compile_source_reports_the_given_filename():
    with pytest.raises(P4Error) as ei:
        compile_source("control C() { apply { x = 1; } }", "mine.p4")
    assert ei.value.loc.file == "mine.p4" and ei.value.loc.line == 1
