"""The layer rule of the README ("Layout"), checked on the sources.

* ``lint-imports`` keeps the contracts of ``pyproject.toml`` ([tool.importlinter]);
* no module import cycle, counting imports inside functions as well (grimp reads every import
  statement of a module, wherever it stands);
* ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name obey the
  same rules (import-linter does not see them).
"""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from testsupport import paths

PACKAGES = ("emulation", "host_agent")


@pytest.fixture(scope="module")
def graph():
    sys.path.insert(0, str(paths.REPO))
    try:
        return grimp.build_graph(*PACKAGES, cache_dir=None)
    finally:
        sys.path.remove(str(paths.REPO))


def _lint_imports() -> str:
    beside = Path(sys.executable).parent / "lint-imports"
    found = str(beside) if beside.exists() else shutil.which("lint-imports")
    assert found, "lint-imports (import-linter, a [dev] dependency) is not installed"
    return found


def test_import_linter_contracts_are_kept():
    r = subprocess.run([_lint_imports(), "--no-cache", "--config", str(paths.REPO / "pyproject.toml")],
                       cwd=paths.REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout, r.stdout[-2000:]


def _module_cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_module_import_cycles(graph):
    cycles = _module_cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle():
    class G:
        modules = {"a", "b", "c"}

        @staticmethod
        def find_modules_directly_imported_by(m):
            return {"a": {"b"}, "b": {"a"}, "c": {"a"}}[m]
    assert _module_cycles(G()) == [["a", "b"]]


def _literal_dynamic_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if fname in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names.append(node.args[0].value)
    return names


def test_dynamic_imports_keep_the_layers():
    bad = []
    for path in sorted((paths.REPO / "host_agent").rglob("*.py")):
        bad += [f"{path.relative_to(paths.REPO)}: {n}" for n in _literal_dynamic_imports(path)
                if n.split(".")[0] == "emulation"]
    for path in sorted((paths.REPO / "emulation" / "p4").rglob("*.py")):
        bad += [f"{path.relative_to(paths.REPO)}: {n}" for n in _literal_dynamic_imports(path)
                if n.split(".")[0] in PACKAGES and not n.startswith("emulation.p4")]
    assert not bad, bad


def test_front_end_imports_only_itself(graph):
    """The same as the ``frontend`` contract, derived instead of listed: a new sibling package
    of emulation.p4 is covered without editing pyproject.toml."""
    bad = sorted((m, i) for m in graph.find_descendants("emulation.p4") | {"emulation.p4"}
                 for i in graph.find_modules_directly_imported_by(m)
                 if i.split(".")[0] in PACKAGES and not (i == "emulation.p4" or i.startswith("emulation.p4.")))
    assert not bad, bad


def test_host_side_never_imports_the_network(graph):
    bad = sorted((m, i) for m in graph.find_descendants("host_agent") | {"host_agent"}
                 for i in graph.find_modules_directly_imported_by(m) if i.split(".")[0] == "emulation")
    assert not bad, bad
