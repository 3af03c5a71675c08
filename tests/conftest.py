"""Fixtures shared by the whole suite."""
import os
import signal

import pytest


@pytest.fixture(scope="session", autouse=True)
def _compile_cache_in_tmp(tmp_path_factory):
    """Compiled P4 programs are cached (emulation/v1model/compile_cache.py) in a directory of
    this test session, inherited by the switch processes the tests start, never in ~/.cache."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session", autouse=True)
def _ctrl_c_as_in_a_terminal():
    """SIGINT raises KeyboardInterrupt, here and in the processes the tests start, as under a
    terminal. A shell that starts the suite in the background (``.ci/run &`` without job
    control) ignores SIGINT, the children inherit that, and Python then installs no handler:
    the tests of Ctrl-C failed with "DID NOT RAISE KeyboardInterrupt" and exit status 0."""
    old = signal.getsignal(signal.SIGINT)
    if old == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if old == signal.SIG_IGN:
        signal.signal(signal.SIGINT, old)


@pytest.fixture(scope="session")
def saatp_program():
    """Path of p4src/saatp.p4, compiled once for the embedded target (a broken front end fails
    here, loudly, instead of in every test that uses the program)."""
    from emulation.harness import DEFAULT_PROGRAM, load_switch
    load_switch(DEFAULT_PROGRAM)
    return DEFAULT_PROGRAM
