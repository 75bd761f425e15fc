"""The package's rooms and the direction of its imports (STYLE.md §15–18, issue 19).

Every import statement of the package is read with ``ast`` (those inside functions
too) and resolved to the module it names. The rules:

* **Folders, bottom up**: ``faultfs`` (knows nothing of agent state) ← ``core`` (knows
  only the filesystem protocol of ``faultfs``) ← ``scenarios`` ← ``reports`` ← the CLI
  (``crashpoint._cli`` …). Importing the root package ``crashpoint`` itself is allowed
  (it defines ``__version__``); the root imports its subpackages only lazily.
* **Rooms inside scenarios, bottom up**: ``engine`` (knows no kind) ← ``targets`` ←
  ``kinds`` ← ``jobs``, ``explain`` (the front ends). No module imports the face
  ``crashpoint.scenarios`` (its ``__init__``) from inside it.
* **No cycle**: the import graph of the package's modules has no strongly connected
  component of two or more modules.
* **No import inside a function** of a package module, outside the CLI (whose lazy
  imports keep ``crashpoint explore`` quick to start: STARTUP_LAZY names them) and the
  few named in ``LAZY`` with their reason.

``test_the_checker_catches_*`` show the checker fails a tree that breaks each rule.
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FOLDERS = {
    "faultfs": "crashpoint.faultfs",
    "core": "crashpoint.core",
    "scenarios": "crashpoint.scenarios",
    "reports": "crashpoint.reports",
    "cli": "crashpoint",
}
"""Source folder → the package it installs as (pyproject's package-dir)."""

LAYERS = ("crashpoint.faultfs", "crashpoint.core", "crashpoint.scenarios", "crashpoint.reports")
"""Bottom up; every other ``crashpoint.*`` module is the CLI, above them all."""

ROOMS = {
    "crashpoint.scenarios.engine": 0,
    "crashpoint.scenarios.targets": 1,
    "crashpoint.scenarios.kinds": 2,
    "crashpoint.scenarios.jobs": 3,
    "crashpoint.scenarios.explain": 3,
}
"""The rooms of scenarios, bottom up (equal rank: peers, which must not form a cycle)."""

STARTUP_LAZY = ("crashpoint",)
"""Modules whose imports inside functions are the CLI's lazy ones (``crashpoint._cli``
and the other modules of the top package): ``crashpoint explore`` starts without the
interception, the state machine, the zoo or the HTML renderer (issue 11)."""

LAZY: Mapping[tuple[str, str], str] = {
    ("crashpoint.scenarios.targets.strace_driver", "crashpoint.core"): "the strace driver "
    "starts in every traced child (issue 23): the codec only for the state-storage form",
    ("crashpoint.scenarios.targets.strace_driver", "crashpoint.faultfs"): "the strace driver "
    "starts in every traced child (issue 23): the real filesystem only for a protocol factory",
    ("crashpoint.core._codec", "crashpoint.core._fastdecode"): "msgspec's decoder, built on "
    "the first decode",
    ("crashpoint.core._storage", "crashpoint.faultfs._os"): "the real filesystem, built only "
    "for a production storage (explore never needs it)",
    (
        "crashpoint.scenarios.kinds.state_storage.machine",
        "crashpoint.scenarios.kinds.agent.strategies",
    ): "hypothesis strategies: hypothesis is imported when a state machine is built",
    ("crashpoint.scenarios.targets.user", "crashpoint.faultfs"): "interception (pyfakefs) is "
    "loaded when a target runs intercepted",
    ("crashpoint.reports._json", "crashpoint.scenarios.jobs.zoo"): "the zoo, for its kill "
    "matrix only",
}
"""(module, what it imports) pairs outside the CLI allowed inside a function, with why:
each keeps ``crashpoint explore`` from paying for what it does not use (issue 11)."""


def modules(folders: Mapping[str, str], root: Path) -> dict[str, tuple[Path, bool]]:
    """``{module name: (file, is a package __init__)}`` for every .py under ``folders``."""
    out: dict[str, tuple[Path, bool]] = {}
    for folder, package in folders.items():
        base = root / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = list(rel.parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            out[".".join([package, *parts])] = (path, is_pkg)
    return out


def imports(
    name: str, path: Path, is_pkg: bool, known: Mapping[str, object]
) -> Iterator[tuple[str, int, bool]]:
    """``(imported module, line, inside a function)`` for each import of a package module
    by module ``name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function: set[int] = set()
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function |= {id(n) for n in ast.walk(node) if n is not node}
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            typing_only |= {id(n) for n in ast.walk(node)}
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue  # annotations only: never imported at run time
        lazy = id(node) in in_function
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            for t in subs or [target]:
                if t in known and t != name:
                    yield t, node.lineno, lazy
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known and a.name != name:
                    yield a.name, node.lineno, lazy


def _layer(module: str) -> int:
    for i, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return i
    return len(LAYERS)  # the CLI


def _room(module: str) -> int | None:
    for room, rank in ROOMS.items():
        if module == room or module.startswith(room + "."):
            return rank
    return None


def _cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def violations(folders: Mapping[str, str] = FOLDERS, root: Path = ROOT) -> list[str]:
    """Every rule the tree under ``root`` breaks, one line each (empty: it keeps them)."""
    known = modules(folders, root)
    edges: dict[str, set[str]] = defaultdict(set)
    out: list[str] = []
    for name, (path, is_pkg) in known.items():
        where = f"{path.relative_to(root)}"
        for target, line, lazy in imports(name, path, is_pkg, known):
            if target == "crashpoint":
                continue  # the root package: __version__
            if name == "crashpoint" and not lazy:
                out.append(f"{where}:{line}: the root package imports {target} at import time")
            if (
                lazy
                and _layer(name) < len(LAYERS)
                and (name, target) not in LAZY
                and target.startswith("crashpoint.")
            ):
                out.append(f"{where}:{line}: {name} imports {target} inside a function")
            edges[name].add(target)
            if _layer(target) > _layer(name):
                out.append(f"{where}:{line}: {name} imports {target}, a layer above it")
            if name.startswith("crashpoint.scenarios.") and target == "crashpoint.scenarios":
                out.append(f"{where}:{line}: {name} imports the face crashpoint.scenarios")
            mine, theirs = _room(name), _room(target)
            if mine is not None and theirs is not None and theirs > mine:
                out.append(f"{where}:{line}: {name} imports {target}, a room above it")
    for comp in _cycles(edges):
        out.append("import cycle: " + " -> ".join(comp))
    return out


def test_the_package_keeps_its_layers_rooms_and_no_cycle() -> None:
    assert violations() == []


def test_the_rooms_of_scenarios_are_the_named_ones() -> None:
    rooms = {
        p.name
        for p in (ROOT / "scenarios").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    }
    assert rooms == {r.rsplit(".", 1)[-1] for r in ROOMS}
    loose = {p.name for p in (ROOT / "scenarios").glob("*.py")}
    assert loose == {"__init__.py"}, "a module of scenarios outside its rooms"


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in FOLDERS:
        (tmp_path / folder).mkdir(exist_ok=True)
        init = tmp_path / folder / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    for room in ("engine", "kinds", "jobs"):
        init = tmp_path / "scenarios" / room / "__init__.py"
        init.parent.mkdir(parents=True, exist_ok=True)
        if not init.exists():
            init.write_text("", encoding="utf-8")
    return tmp_path


def test_the_checker_catches_an_upward_import_between_layers(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"faultfs/_memory.py": "from ..core import AgentState\n"})
    assert any("a layer above it" in v for v in violations(FOLDERS, root))


def test_the_checker_catches_an_upward_import_between_rooms(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "scenarios/engine/explore.py": "from ..kinds.agent import kind\n",
            "scenarios/kinds/agent/kind.py": "X = 1\n",
            "scenarios/kinds/agent/__init__.py": "",
        },
    )
    found = violations(FOLDERS, root)
    assert any("a room above it" in v for v in found), found


def test_the_checker_catches_a_cycle(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {"scenarios/jobs/a.py": "from .b import x\n", "scenarios/jobs/b.py": "from .a import y\n"},
    )
    assert any(v.startswith("import cycle:") for v in violations(FOLDERS, root))


def test_the_checker_catches_an_import_inside_a_function(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "scenarios/jobs/a.py": "def f():\n    from ..engine import explore\n",
            "scenarios/engine/explore.py": "",
        },
    )
    assert any("inside a function" in v for v in violations(FOLDERS, root))


def test_the_checker_catches_an_import_of_the_face(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"scenarios/jobs/a.py": "from .. import SCENARIOS\n"})
    assert any("the face" in v for v in violations(FOLDERS, root))


if __name__ == "__main__":  # pragma: no cover - a developer's listing
    found = violations()
    print(os.linesep.join([*found, f"{len(found)} violation(s)"]))
