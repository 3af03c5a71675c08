"""``MODULE:FN`` names of importable functions, the form in which models and data sets cross
the command line and process boundaries: :func:`load_fn` finds the function of a name,
:func:`spec_of` names a function.
"""

from __future__ import annotations

import importlib
import os
import sys
import types


def load_fn(spec: str, what: str):
    """The object ``FN`` of module ``MODULE`` for ``MODULE:FN`` (not called); ValueError naming
    ``what`` when ``spec`` has no ``:`` or the module or name cannot be loaded."""
    if ":" not in spec:
        raise ValueError(f"{what} {spec!r}: expected MODULE:FN")
    mod, fn = spec.split(":", 1)
    # MODULE is found as ``python -m`` finds it, in the current directory too: the processes
    # the commands start get it there (``python -m`` puts it on their path), and the
    # ``saatp`` console script, whose path does not hold it, must find the same module
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.append(here)
    _importing.append(spec)
    try:
        obj = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        hint = ""
        if os.sep in mod or mod.endswith(".py"):
            # a file path (mymodels.py:fn, ./dir/m.py:fn) read "No module named '/dir/m'" alone
            # until 2026-11-28
            d, base = os.path.split(mod)
            name = base[:-3] if base.endswith(".py") else base
            hint = (f"; MODULE is a module name as Python imports it, not a file: {name}:{fn}, run from "
                    f"{d or 'its directory'} or with it on PYTHONPATH")
        raise ValueError(f"cannot load {what} {spec!r}: {e}{hint}") from e
    finally:
        _importing.pop()
    export_import_root(mod)
    return obj


_importing: list[str] = []  # the MODULE:FN names whose modules load_fn is importing now (nested)


def refuse_run_during_import(what: str) -> None:
    """ValueError when a run (``what``: ``train_cgp``, ``groups.run``) starts while
    :func:`load_fn` imports the module of a model or data set: the module starts a run at its
    top level (a script without ``if __name__ == "__main__":`` naming itself, ``exp:model``).
    Every rank process imports that module for the model, and would start a run of its own, each
    of whose ranks would start another: until 2026-11-28 such a script (``python exp.py``) ran
    its call again while loading ``exp:model``, never finished, and left processes and cgroups
    behind when stopped."""
    if not _importing:
        return
    spec = _importing[-1]
    mod = spec.split(":", 1)[0]
    raise ValueError(f"{what} was called while module {mod!r} was being imported for {spec!r}: the module "
                     f"calls {what} when it is imported, so every process that imports it (each rank imports the "
                     f"model's module) would start a run of its own. Put the call under 'if __name__ == \"__main__\":' in "
                     f"{mod.replace('.', '/')}.py, or keep the model and data functions in a module of their own")


def export_import_root(mod: str) -> None:
    """Let the processes this one starts (the ranks: ``python -m ...`` from the current
    directory, with this process's environment) import ``mod`` from where this process did:
    the directory of its top-level package goes on ``PYTHONPATH`` unless a child finds it anyway
    (the current directory, the interpreter's own directories). A script calling ``train_cgp``
    finds a module beside it (Python puts the script's directory on the path) or on a path it
    added; until 2026-11-28 every rank then failed with "No module named ..."."""
    top = sys.modules.get(mod.split(".")[0])
    f = getattr(top, "__file__", None)
    if not f:
        return
    root = os.path.dirname(os.path.realpath(f))
    if os.path.basename(f) == "__init__.py":
        root = os.path.dirname(root)
    if root == os.path.realpath(os.getcwd()):
        return
    if any(root.startswith(os.path.realpath(p) + os.sep) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}):
        return
    have = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in have:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *have])


def spec_of(fn, what: str) -> str:
    """``fn`` itself when it is a string, else ``MODULE:FN`` of an importable top-level
    function (another process can load it); ValueError naming ``what`` otherwise."""
    if isinstance(fn, str):
        return fn
    if not isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        # an instance (a model already built: train_cgp(net(), ...)): until 2026-11-28 it became
        # "torch.nn.modules.container:" and failed with "module ... has no attribute ''" (or, in
        # GroupsConfig, only when the run loaded it)
        raise ValueError(f"{what} must be 'MODULE:FN' or an importable top-level function that builds it (every "
                         f"rank process calls it for a copy of its own), got a {type(fn).__name__} object: pass "
                         f"the function itself (f, not f())")
    mod, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not mod or "<" in name or "." in name:
        raise ValueError(f"{what} must be 'MODULE:FN' or an importable top-level function: {name or repr(fn)} is "
                         f"not a top-level function of a module (a lambda, a nested function or a method), which "
                         f"the rank processes cannot import")
    if mod == "__main__":  # until 2026-11-28 the error did not say why a script's own function was refused
        raise ValueError(f"{what} must be 'MODULE:FN' or an importable top-level function: {name} is defined in the "
                         f"script being run (__main__), which the rank processes do not import; define it in a "
                         f"module beside the script and import it from there")
    return f"{mod}:{name}"
