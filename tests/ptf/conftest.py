"""The files here are PTF tests, run by the ``ptf`` tool against a switch process
(``tests/emulation/testing/test_ptf.py`` does that); pytest must not collect them itself."""
collect_ignore_glob = ["*_test.py"]
