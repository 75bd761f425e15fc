"""One engine, one set of types (issue 19, acceptance 2), read from the source with ``ast``.

* No class named ``Checker``, ``Violation`` or ``ExplorationResult`` (nor a ``_``-prefixed
  variant) is defined in the package: the agent kind's second judging loop and its twin
  types are gone; ``ExplorationResult`` is only a name bound to the engine's result.
* One loop judges the crash states of a workload: a ``for`` loop over a trace's crash
  points (``crash_points(...)``, ``judged_crash_states(...)``) whose body judges
  (calls something named ``judge``, ``_judge`` or ``_verify``) stands only in the engine,
  and in the one place named in ``OTHER_JUDGES`` with its reason.

``test_the_rules_catch_*`` show each rule fails a synthetic tree that breaks it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ("faultfs", "core", "scenarios", "reports", "cli")

TWINS = {"Checker", "Violation", "ExplorationResult"}
ENUMERATIONS = {"crash_points", "judged_crash_states"}
JUDGES = {"judge", "_judge", "_verify"}

ENGINE = "scenarios/engine/explore.py"
OTHER_JUDGES = {
    "scenarios/kinds/state_storage/machine.py": "the state-storage state machine judges "
    "the process crashes inside each call of a program hypothesis generates and shrinks "
    "(a rule of the machine, not an exploration of a recorded workload)",
}


def _modules(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for folder in SOURCE:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            yield rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)


def _name(call: ast.expr) -> str:
    func = call.func if isinstance(call, ast.Call) else call
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def twin_classes(root: Path) -> list[str]:
    """``file:line Name`` of each class defined with a twin's name."""
    return [
        f"{rel}:{node.lineno} {node.name}"
        for rel, tree in _modules(root)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name.lstrip("_") in TWINS
    ]


def judging_loops(root: Path) -> list[str]:
    """``file:line`` of each loop over crash points that judges inside its body."""
    found = []
    for rel, tree in _modules(root):
        for node in ast.walk(tree):
            if not isinstance(node, ast.For):
                continue
            if not (isinstance(node.iter, ast.Call) and _name(node.iter) in ENUMERATIONS):
                continue
            body = ast.Module(body=node.body, type_ignores=[])
            if any(isinstance(n, ast.Call) and _name(n) in JUDGES for n in ast.walk(body)):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_no_twin_types_are_defined() -> None:
    assert twin_classes(ROOT) == []


def test_one_loop_judges_crash_states_in_the_engine() -> None:
    places = {p.split(":")[0] for p in judging_loops(ROOT)}
    assert ENGINE in places  # the engine's loop is seen (the rule can see a loop)
    assert places - {ENGINE} <= set(OTHER_JUDGES), places


def test_the_rules_catch_a_twin_class_and_a_second_judging_loop(tmp_path: Path) -> None:
    kinds = tmp_path / "scenarios" / "kinds"
    kinds.mkdir(parents=True)
    (kinds / "mine.py").write_text(
        "class _Checker:\n"
        "    def check(self, model, initial, ops):\n"
        "        for point in crash_points(model, initial, ops):\n"
        "            for state in point.states:\n"
        "                self.judge(state)\n",
        encoding="utf-8",
    )
    assert twin_classes(tmp_path) == ["scenarios/kinds/mine.py:1 _Checker"]
    assert judging_loops(tmp_path) == ["scenarios/kinds/mine.py:3"]
