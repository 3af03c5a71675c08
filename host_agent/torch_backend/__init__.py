"""torch.distributed backend ``saatp``: a pure-Python process group for CPU tensors whose
allreduce runs through an SA-ATP engine (switch aggregation) or the host ring, and whose other
collectives run over a host TCP mesh. See docs/torch-backend.md.

    import torch.distributed as dist
    dist.init_process_group("saatp", ...)   # found via the torch.backends entry point,
                                              # or after ``import host_agent``

Importing this package is cheap: torch and numpy are imported only when a name below is used
or the backend is registered.
"""
from __future__ import annotations

import importlib
import sys

_LAZY = {
    "AllreduceEngine": "engines",
    "EngineContext": "engines",
    "SwitchEngineError": "engines",
    "SwitchEngineUnavailable": "engines",
    "HostRingEngine": "ring_engine",
    "ring_allreduce": "ring_engine",
    "SwitchAllreduceEngine": "switch_engine",
    "SAATPOptions": "options",
    "BACKEND_NAME": "process_group",
    "ProcessGroupSAATP": "process_group",
    "SAATPError": "process_group",
    "SAATPTimeoutError": "process_group",
    "SAATPWork": "process_group",
}

__all__ = sorted(list(_LAZY) + ["register", "register_now"])


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def _initializing(mod) -> bool:
    spec = getattr(mod, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def register_now() -> bool:
    """Import torch.distributed and register the ``saatp`` backend (idempotent)."""
    from .process_group import register as _register

    return _register()


def register() -> bool:
    """Make ``init_process_group("saatp")`` work without importing torch needlessly.

    If ``torch.distributed`` is already imported, register at once and return True. Otherwise
    install a one-shot hook that registers right after ``torch.distributed`` is imported, and
    return False. Never imports torch itself.
    """
    td = sys.modules.get("torch.distributed")
    if td is not None and not _initializing(td):
        return register_now()
    from ._autoload import install_watcher

    install_watcher()
    return False
