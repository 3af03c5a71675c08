"""Fixtures for the SA-ATP tests (embedded target, real p4src/saatp.p4)."""
import pytest


@pytest.fixture(scope="session")
def saatp_program():
    try:
        from host_agent.harness import DEFAULT_PROGRAM, load_switch
        load_switch(DEFAULT_PROGRAM)
    except ImportError as e:  # the embedded target is not importable
        pytest.skip(f"embedded v1model target (emulation.v1model) unavailable: {e}")
    return DEFAULT_PROGRAM
