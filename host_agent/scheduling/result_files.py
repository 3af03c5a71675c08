"""The files a scheduling command or benchmark writes its result to: the JSON of the result
(``--json``) and a plot of it (``--plot``)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable

from .interrupts import held_interrupts


def add_result_file_options(p: argparse.ArgumentParser) -> None:
    """``--json OUT`` and ``--plot PNG``, the paths :func:`write_result_files` takes."""
    p.add_argument("--json", metavar="OUT", help="write the result as JSON here")
    p.add_argument("--plot", metavar="PNG", help="write a plot of the result here")


def check_result_path(option: str, path: str | None) -> None:
    """Before a run, for a file written after it (``option`` names it in errors): its directory
    is made if it is missing; ValueError when the path is a directory or its directory cannot
    be made. Until 2026-11-28 ``--json new/r.json`` failed after the run, with a traceback, and
    the run's result was lost."""
    if not path:
        return
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a directory, not a file")
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot make its directory ({e.strerror})") from None


def check_result_files(json_path: str | None, plot_path: str | None) -> None:
    """:func:`check_result_path` for ``--json`` and ``--plot``; also ValueError when the plot's
    suffix is not a format matplotlib writes."""
    check_result_path("--json", json_path)
    check_result_path("--plot", plot_path)
    if json_path and plot_path and os.path.realpath(json_path) == os.path.realpath(plot_file(plot_path)):
        # the plot, written second, replaced the result (until 2026-11-28, after the whole run)
        raise ValueError(f"--json and --plot name the same file ({json_path}): the plot would overwrite the result")
    ext = os.path.splitext(plot_path or "")[1][1:].lower()
    if ext:  # no suffix: matplotlib writes a PNG
        from matplotlib.backend_bases import FigureCanvasBase
        formats = FigureCanvasBase.get_supported_filetypes()
        if ext not in formats:
            raise ValueError(f"--plot {plot_path}: matplotlib writes no .{ext} files (it writes "
                             f"{', '.join('.' + f for f in sorted(formats))})")


def plot_file(path: str) -> str:
    """The file matplotlib writes for ``--plot PATH``: ``PATH.png`` when PATH has no suffix
    (``savefig`` adds it). Until 2026-11-28 the commands printed "wrote PATH", a file that did
    not exist."""
    return path if os.path.splitext(path)[1] else path + ".png"


def finite_or_null(x):
    """``x`` with every NaN or infinite float replaced by None: JSON has no such numbers, and
    Python's ``json`` writes them as ``NaN``/``Infinity``, which other readers (``JSON.parse``,
    Go, serde) refuse. A diverged run's losses are NaN."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite_or_null(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_or_null(v) for v in x]
    return x


def write_json(path: str, result) -> None:
    """``result`` as strict JSON (:func:`finite_or_null`; until 2026-11-28 a diverged run wrote
    ``NaN``), its directory made if it is missing."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(finite_or_null(result), f, indent=1, allow_nan=False)


def write_result_files(result: dict, json_path: str | None, plot_path: str | None,
                       plot: Callable[[dict, str], None]) -> None:
    """Each file that has a path (its directory made if it is missing), then ``wrote PATH`` on
    stdout."""
    if json_path:
        write_json(json_path, result)
        print(f"wrote {json_path}")
    if plot_path:
        plot_path = plot_file(plot_path)
        os.makedirs(os.path.dirname(os.path.abspath(plot_path)), exist_ok=True)
        plot(result, plot_path)
        print(f"wrote {plot_path}")


def keep_interrupted(command: str, path: str | None, result: dict, when: str, what: str,
                     happened: str = "interrupted", verb: str = "are") -> None:
    """A command was interrupted (``when``: " during asp"), or a part of it failed (``happened``:
    "the final session failed", ``when`` ""): write ``result`` (what had finished, marked as
    such) to ``path`` (``--json``; nothing without one) with Ctrl-C and SIGTERM held, and say on
    stderr that ``what`` ("the 2 finished methods") is there, or why not."""
    if not path:
        return
    with held_interrupts():
        try:
            write_json(path, result)
        except OSError as e:
            print(f"{command}: {happened}{when}; {what} could not be kept: {e}", file=sys.stderr)
            return
        print(f"{command}: {happened}{when}; {what} {verb} in {path}", file=sys.stderr, flush=True)
