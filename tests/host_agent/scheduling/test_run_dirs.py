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


def test_a_log_dir_that_cannot_be_made_is_named_as_the_option(tmp_path):
    """A file where --log-dir would be: "[Errno 17] File exists: 'x'" named no option (train
    groups), and train cgp's per-method directory under it "[Errno 20] Not a directory" (until
    2026-11-28)."""
    f = tmp_path / "p.svg"
    f.write_text("x")
    with pytest.raises(ValueError, match=r"--log-dir .*p.svg: cannot make this directory \(File exists\)"):
        with run_dir("saatp-test-", str(f)):
            pass
    with pytest.raises(ValueError, match=r"--log-dir .*p.svg/cgp: cannot make this directory \(Not a directory"):
        with run_dir("saatp-test-", str(f / "cgp")):
            pass
