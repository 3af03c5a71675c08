"""Side-by-side plot panels and line styles shared by the scheduling commands' ``--plot``
(``saatp train pipeline``, ``saatp train groups``, ``saatp train cgp``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def panels(path: str, n: int, width: float, height: float = 4) -> Iterator[list]:
    """``n`` side-by-side axes for the caller to draw on; then each axis that has labelled
    artists gets its legend and the figure is written to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, n, figsize=(width, height), squeeze=False)
    ax = list(ax[0])
    try:
        yield ax
        for a in ax:
            if a.get_legend_handles_labels()[1]:
                a.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)


def line_style(i: int) -> dict:
    """Series ``i``'s line: one of matplotlib's 10 colours, then the same colours dashed, dotted:
    ``train cgp --ablation`` draws 11 methods, and with colours alone its 11th took the 1st's."""
    return {"color": f"C{i % 10}", "ls": ("-", "--", ":", "-.")[(i // 10) % 4]}
