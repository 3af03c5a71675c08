"""Fixtures shared by the whole suite."""
import pytest


@pytest.fixture(scope="session")
def saatp_program():
    """Path of p4src/saatp.p4, compiled once for the embedded target (a broken front end fails
    here, loudly, instead of in every test that uses the program)."""
    from emulation.harness import DEFAULT_PROGRAM, load_switch
    load_switch(DEFAULT_PROGRAM)
    return DEFAULT_PROGRAM
