"""CGP: cooperative grouping parallel (``saatp plan cgp``).

* :mod:`.grouping` -- straggler detection and the optimal 1-D grouping with a staleness cap.
* :mod:`.policy` -- staleness damping and the bounded-staleness gate of the server.
* :mod:`.sim` -- discrete-event simulator for BSP / ASP / SSP / local SGD / LB-BSP / CGP with
  real numpy training.
* :mod:`.server` -- the parameter server's state: staleness gate and damped updates.
* :mod:`.procs` / :mod:`.library` -- ``train_cgp(model_fn, dataset, ...)``: real processes (workers in
  CPU-quota cgroups, the server as its own process), CGP / BSP / ASP / SSP.
* :mod:`.train_cli` -- ``saatp train cgp``.
"""

from .grouping import Grouping, predicted_staleness, segment_groups, straggler_flags
from .policy import damping, gate_allows

__all__ = ["Grouping", "predicted_staleness", "segment_groups", "straggler_flags", "damping", "gate_allows",
           "train_cgp", "CGPConfig", "compare"]

_LIBRARY = ("train_cgp", "CGPConfig", "compare")


def __getattr__(name: str):
    """``from host_agent.scheduling.cgp import train_cgp, CGPConfig`` as the README writes it
    (until 2026-11-28 an ImportError: they were only in :mod:`.library`); loaded on first use,
    so the simulator (``saatp plan cgp``) does not import the real-process code."""
    if name in _LIBRARY:
        from . import library
        return getattr(library, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
