"""A run's directory: removed after success, left for its logs after a failure, kept when named."""

import os

import pytest

from host_agent.scheduling.run_dirs import run_dir


def test_a_temporary_run_dir_goes_after_success_and_stays_after_a_failure():
    with run_dir("saatp-test-") as d:
        open(os.path.join(d, "rank0.log"), "w").close()
    assert not os.path.exists(d)
    with pytest.raises(RuntimeError, match="boom"):
        with run_dir("saatp-test-") as d:
            open(os.path.join(d, "rank0.log"), "w").close()
            raise RuntimeError("boom")
    try:
        assert os.path.exists(os.path.join(d, "rank0.log"))  # the logs of the failed run
    finally:
        import shutil
        shutil.rmtree(d)


def test_a_run_that_fails_before_writing_leaves_nothing():
    with pytest.raises(ValueError):
        with run_dir("saatp-test-") as d:
            raise ValueError("bad trace")
    assert not os.path.exists(d)


def test_a_named_run_dir_is_created_and_kept(tmp_path):
    want = tmp_path / "logs" / "cgp"
    with run_dir("saatp-test-", str(want)) as d:
        open(os.path.join(d, "rank0.log"), "w").close()
    assert d == str(want) and (want / "rank0.log").exists()
