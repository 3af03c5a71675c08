"""The files a scheduling command or benchmark writes its result to: the JSON of the result
(``--json``) and a plot of it (``--plot``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable


def add_result_file_options(p: argparse.ArgumentParser) -> None:
    """``--json OUT`` and ``--plot PNG``, the paths :func:`write_result_files` takes."""
    p.add_argument("--json", metavar="OUT", help="write the result as JSON here")
    p.add_argument("--plot", metavar="PNG", help="write a plot of the result here")


def write_json(path: str, result) -> None:
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def write_result_files(result: dict, json_path: str | None, plot_path: str | None,
                       plot: Callable[[dict, str], None]) -> None:
    """Each file that has a path, then ``wrote PATH`` on stdout."""
    if json_path:
        write_json(json_path, result)
        print(f"wrote {json_path}")
    if plot_path:
        plot(result, plot_path)
        print(f"wrote {plot_path}")
