"""Plots of a groups or CGP run: batch time, cost and accuracy over time, one line per method."""

from __future__ import annotations

import numpy as np

from ..plot_panels import line_style, panels


def plot_groups(res: dict, path: str) -> None:
    budget = res["budget"]
    with panels(path, 3, 15) as ax:
        for i, (m, r) in enumerate(res["runs"].items()):
            s = r["slots"]
            t = np.cumsum([x["T"] * res["config"]["iters"] for x in s])
            ax[0].plot([x["slot"] for x in s], [x["T"] * 1e3 for x in s], marker=".", label=m, **line_style(i))
            c = np.array([x["cost"] for x in s])
            # markers as the other panels: a 1-slot run's cost was a line of one point, nothing drawn
            # (until 2026-11-28)
            ax[1].plot([x["slot"] for x in s], np.cumsum(c) / np.arange(1, len(c) + 1) / budget, marker=".",
                       label=m, **line_style(i))
            ax[2].plot(t, [x["test_acc"] for x in s], marker=".", label=m, **line_style(i))
        from matplotlib.ticker import MaxNLocator
        ax[0].set(xlabel="slot", ylabel="batch time (ms, with migration)", title="batch time")
        ax[1].axhline(1.0, color="k", lw=0.8, ls="--")
        ax[1].set(xlabel="slot", ylabel="time-averaged cost / budget", title="cost")
        ax[2].set(xlabel="training time (s)", ylabel="test accuracy", title="accuracy")
        for a in ax[:2]:  # slots are whole numbers (a short run's axis read -0.04 ... 0.04 or 0.25, 0.5, ...)
            a.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def plot_cgp(res: dict, path: str) -> None:
    with panels(path, 3, 15) as ax:
        for i, (name, r) in enumerate(res["runs"].items()):
            ev = r["evals"]
            ax[0].plot([e["t"] for e in ev], [e["test_acc"] for e in ev], marker=".", label=name, **line_style(i))
            bt = [(e["t"], e["batch_time_s"] * 1e3) for e in ev if e.get("batch_time_s") is not None]
            ax[1].plot([t for t, _ in bt], [b for _, b in bt], marker=".", label=name, **line_style(i))
            # markers as the other panels: a method with one snapshot (a run ended by its first
            # evaluation) drew no updates at all (until 2026-11-28)
            ax[2].plot([e["t"] for e in ev], [e["version"] for e in ev], marker=".", label=name, **line_style(i))
        if res.get("target_acc"):
            ax[0].axhline(res["target_acc"], color="k", lw=0.8, ls="--")
        ax[0].set(xlabel="training time (s)", ylabel="test accuracy", title="accuracy")
        ax[1].set(xlabel="training time (s)", ylabel="ms per global batch (workers x --batch samples)",
                  title="batch time")
        ax[2].set(xlabel="training time (s)", ylabel="model updates", title="updates")
