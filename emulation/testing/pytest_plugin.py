"""pytest fixtures for packet tests on ``saatp switch``.

Enable in a ``conftest.py``: ``pytest_plugins = ["emulation.testing.pytest_plugin"]``::

    def test_forward(p4_switch):
        sw = p4_switch("router.p4", {"h1": 1, "h2": 2})
        sw.p4runtime().insert("ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000002, 32)}, "ipv4_forward",
                              {"dstAddr": 0x02, "port": 2})
        sw.send("h1", Ether()/IP(dst="10.0.0.2"))
        sw.expect("h2", expected)
        sw.expect_no_packet("h1")

Each switch started through ``p4_switch`` is stopped at the end of the test, after checking
that no frame arrived that the test did not ``expect`` (disable with ``strict=False``).
"""
from __future__ import annotations

from typing import Any

import pytest

from .switch_under_test import SwitchUnderTest


@pytest.fixture
def p4_switch():
    started: list[tuple[SwitchUnderTest, bool]] = []

    def start(program: Any, ports: Any, *, strict: bool = True, **kw: Any) -> SwitchUnderTest:
        sw = SwitchUnderTest(program, ports, **kw)
        started.append((sw, strict))
        return sw

    yield start
    failures = []
    for sw, strict in started:
        try:
            if strict:
                sw.packets.check_no_unexpected(wait=0.1)
        except AssertionError as e:
            failures.append(str(e))
        finally:
            sw.close()
    if failures:
        pytest.fail("; ".join(failures))
