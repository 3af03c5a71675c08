"""Entry point of the ``torch.backends`` group (declared in pyproject.toml), and the deferred
registration used by ``import host_agent``.

torch calls :func:`autoload` near the end of ``import torch`` (``torch._import_device_backends``,
after ``torch.distributed`` is imported) and turns any exception from it into a RuntimeError that
aborts ``import torch``. So :func:`autoload` never raises: on failure it stays silent (set
SAATP_AUTOLOAD_DEBUG=1 to see why); ``import host_agent`` registers the backend as well.

When torch.distributed is not imported yet, :func:`install_watcher` puts a meta-path hook in
place that registers the backend right after ``torch.distributed`` finishes importing.
"""
from __future__ import annotations

import os
import sys


def _debug(msg: str) -> None:
    if os.environ.get("SAATP_AUTOLOAD_DEBUG") == "1":
        print(f"saatp autoload: {msg}", file=sys.stderr, flush=True)


def _register_quietly() -> bool:
    try:
        from .process_group import register  # imports torch.distributed: only once it is there

        ok = register()
        _debug(f"registered backend 'saatp': {ok}")
        return ok
    except Exception as e:  # noqa: BLE001 - must never break the importer
        _debug(f"registration failed: {type(e).__name__}: {e}")
        return False


class _Watcher:
    """A meta-path finder that finds nothing itself; it wraps the loader of ``torch.distributed``
    so the backend is registered as soon as that module has executed."""

    def __init__(self):
        self.done = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch.distributed" or self.done:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:  # noqa: BLE001
                spec = None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        watcher = self

        class _Loader:
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                loader.exec_module(module)
                watcher.done = True
                try:
                    sys.meta_path.remove(watcher)
                except ValueError:
                    pass
                _register_quietly()

            def __getattr__(self, name):
                return getattr(loader, name)

        spec.loader = _Loader()
        return spec


def install_watcher() -> None:
    if any(isinstance(f, _Watcher) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Watcher())
    _debug("will register when torch.distributed is imported")


def autoload() -> None:
    """``torch.backends`` entry point. Never raises."""
    try:
        if os.environ.get("SAATP_AUTOLOAD", "1") == "0":
            _debug("disabled by SAATP_AUTOLOAD=0")
            return
        if os.environ.get("SAATP_AUTOLOAD_TEST_FAIL") == "1":  # lets the tests prove the guard works
            raise RuntimeError("simulated autoload failure")
        td = sys.modules.get("torch.distributed")
        if td is not None and not getattr(getattr(td, "__spec__", None), "_initializing", False):
            _register_quietly()
        else:
            install_watcher()
    except Exception as e:  # noqa: BLE001
        _debug(f"autoload failed: {type(e).__name__}: {e}")
