"""Side-by-side plot panels and line styles shared by the scheduling commands' ``--plot``
(``saatp train pipeline``, ``saatp train groups``, ``saatp train cgp``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


LEGEND_IN_AXES = 6  # more labels than this: one legend for the figure, below the axes


@contextmanager
def panels(path: str, n: int, width: float, height: float = 4) -> Iterator[list]:
    """``n`` side-by-side axes for the caller to draw on; then each axis that has labelled
    artists gets its legend and the figure is written to ``path``. Above :data:`LEGEND_IN_AXES`
    labels the figure has one legend, below the axes, instead: ``train cgp --ablation``'s 11
    methods each covered half an axis, on top of its lines (until 2026-11-28)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, n, figsize=(width, height), squeeze=False)
    ax = list(ax[0])
    try:
        yield ax
        labelled = [a for a in ax if a.get_legend_handles_labels()[1]]
        most = max(labelled, key=lambda a: len(a.get_legend_handles_labels()[1]), default=None)
        handles, labels = most.get_legend_handles_labels() if most is not None else ([], [])
        if len(labels) > LEGEND_IN_AXES:
            cols = min(len(labels), 6)
            rows = -(-len(labels) // cols)
            fig.set_figheight(height + 0.25 * rows)
            fig.legend(handles, labels, loc="lower center", ncol=cols, fontsize=8, frameon=False)
            fig.tight_layout(rect=(0, 0.25 * rows / (height + 0.25 * rows) + 0.02, 1, 1))
        else:
            for a in labelled:
                a.legend(fontsize=8)
            fig.tight_layout()
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)


def line_style(i: int) -> dict:
    """Series ``i``'s line: one of matplotlib's 10 colours, then the same colours dashed, dotted:
    ``train cgp --ablation`` draws 11 methods, and with colours alone its 11th took the 1st's."""
    return {"color": f"C{i % 10}", "ls": ("-", "--", ":", "-.")[(i // 10) % 4]}
