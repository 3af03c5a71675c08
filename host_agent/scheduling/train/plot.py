"""The plot of a ``saatp train pipeline`` run (``--plot``): the reported session's iteration
times per method beside the cost model's predictions, per step, and the model's error over
every measured configuration."""

from __future__ import annotations

import numpy as np

from ..plot_panels import line_style, panels
from ..umpipe.family import rows_text

WITHIN_PCT = 15  # the calibration target: predictions within 15 % of measured times


def _label(r: dict) -> str:
    """A run's label, with its microbatch sizes when they are not equal."""
    rows = r.get("rows")
    if rows and not r.get("equal"):
        same = all(list(x) == list(rows[0]) for x in rows)
        return f"{r['label']}\n{rows_text(rows[:1] if same else rows)}"
    return r["label"]


def plot_pipeline(res: dict, path: str) -> None:
    """Three panels of ``res`` (the command's JSON): (1) each method's iteration times in the
    reported session as a box (quartiles, whiskers to the extremes) with the model's prediction
    as a cross; (2) the same iterations step by step (one step is one moment of the host's
    load, so lines that move together are the host, not the methods); (3) measured against
    predicted for every configuration the run measured (tuning and reported sessions), with the
    diagonal and a band of +-15 %."""
    final = res["summary"]["runs"]
    tuned = (res.get("tuning") or {}).get("runs", [])
    width = max(15.0, 10.0 + 1.2 * len(final))
    with panels(path, 3, width, 4.8) as ax:
        data = [np.asarray(r["iterations_s"]) * 1e3 for r in final]
        pos = np.arange(1, len(final) + 1)
        ax[0].boxplot(data, positions=pos, whis=(0, 100), widths=0.5)
        ax[0].plot(pos, [r["predicted_s"] * 1e3 for r in final], "x", color="C3", ms=9, mew=2,
                   label="model's prediction")
        ax[0].set_xticks(pos, [_label(r) for r in final], rotation=30, ha="right", fontsize=8)
        ax[0].set(ylabel="iteration time (ms)",
                  title=f"reported session: {len(data[0]) if data else 0} iterations per method")
        v = res["summary"].get("umpipe_vs_best_baseline")
        if v:
            ax[0].set_xlabel(f"UMPIPE vs best baseline ({v['baseline']}): {v['speedup_pct']:+.1f} % "
                             f"(faster in {v['steps_won']}/{v['steps']} steps)", fontsize=9)

        for i, (r, d) in enumerate(zip(final, data)):
            ax[1].plot(np.arange(1, len(d) + 1), d, marker=".", label=r["label"], **line_style(i))
        ax[1].set(xlabel="step (all methods interleaved in each)", ylabel="iteration time (ms)",
                  title="iteration time per step")
        from matplotlib.ticker import MaxNLocator
        ax[1].xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))

        for rows, name, mark in ((tuned, "tuning", "o"), (final, "reported", "s")):
            pts = [(r["predicted_s"] * 1e3, r["measured_s"] * 1e3) for r in rows]
            if pts:
                p, m = zip(*pts)
                ax[2].scatter(m, p, marker=mark, s=22, alpha=0.7, label=f"{name} ({len(pts)})")
        allv = [x for r in tuned + final for x in (r["predicted_s"] * 1e3, r["measured_s"] * 1e3)]
        if allv:
            lo, hi = min(allv) * 0.85, max(allv) * 1.15
            xs = np.array([lo, hi])
            ax[2].plot(xs, xs, color="k", lw=0.8)
            ax[2].fill_between(xs, xs * (1 - WITHIN_PCT / 100), xs * (1 + WITHIN_PCT / 100), color="k",
                               alpha=0.08, label=f"within {WITHIN_PCT} %")
            ax[2].set(xlim=(lo, hi), ylim=(lo, hi))
        n_in = sum(abs(r["error_pct"]) <= WITHIN_PCT for r in final)
        ax[2].set(xlabel="measured (ms, median)", ylabel="predicted by the cost model (ms)",
                  title=f"cost model: {n_in}/{len(final)} reported within {WITHIN_PCT} %")
