"""Run a ``saatp`` command line in this process as Ctrl-C or SIGTERM ends it."""
import signal

import pytest


def run_interrupted(argv: list[str], stop: str) -> None:
    """``emulation.cli.main(argv)``, whose run the caller makes raise KeyboardInterrupt
    (``stop="ctrl-c"``) or SystemExit(143) (``"sigterm"``): the command must end with 130, or
    with SystemExit(143). The SIGINT and SIGTERM handlers the command installs are put back."""
    from emulation.cli import main

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if stop == "ctrl-c":
            assert main(argv) == 130
        else:
            with pytest.raises(SystemExit) as e:
                main(argv)
            assert e.value.code == 143
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
