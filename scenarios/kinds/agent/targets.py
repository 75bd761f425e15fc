"""Targets: the storages the harness explores (SPEC.md §8, "Two targets"), and mutants.

A target is a name and a factory ``factory(fs, base_dir) -> storage``. The
``reference`` target is the hardened design that must pass every invariant under
every model; ``seed`` is the published design, which the harness must show failing
where it really fails; each ``mutant:NAME`` is a deliberately broken storage that
stands for a real bug and must be caught (``crashpoint explore --list``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ....core import FileStateStorage
from ....faultfs import FileSystem

__all__ = ["MUTANTS", "TARGETS", "Target", "get_target", "mutant"]

Factory = Callable[[FileSystem, str], Any]


@dataclass(frozen=True, slots=True)
class Target:
    """A storage to explore.

    Attributes:
        name: ``reference``, ``seed`` or ``mutant:NAME``.
        factory: builds the storage on a filesystem and base directory.
        description: what it is; for a mutant, the real bug it stands for.
        expected: for a mutant, ``(invariant id, persistence model or "fault")``
            that must kill it.
        tags: the workload tags whose scenarios the zoo explores it on (a storage bug
            shows in storage workloads, a runtime bug in whole agent runs).
    """

    name: str
    factory: Factory
    description: str
    expected: tuple[str, str] | None = None
    tags: tuple[str, ...] = ("storage", "runtime")

    def __call__(self, fs: FileSystem, base_dir: str) -> Any:
        return self.factory(fs, base_dir)


TARGETS: dict[str, Target] = {
    "reference": Target(
        "reference",
        lambda fs, base: FileStateStorage(fs, base, sync="full", ended_marker="scoped"),
        "FileStateStorage(sync='full', ended_marker='scoped'): the hardened design",
    ),
    "seed": Target(
        "seed",
        lambda fs, base: FileStateStorage(
            fs, base, sync="none", ended_marker="legacy", strict=False
        ),
        "FileStateStorage(sync='none', ended_marker='legacy', strict=False): "
        "the published design exactly",
    ),
}

MUTANTS: dict[str, Target] = {}
"""Known-bad storages by bare name (``--target mutant:NAME``)."""


def mutant(
    name: str, *, invariant: str, model: str, tags: tuple[str, ...] = ("storage",)
) -> Callable[[type[Any]], type[Any]]:
    """Register a storage class as ``mutant:NAME``; it must be killed by ``invariant``
    under ``model`` (a persistence model's name, or ``"fault"``). The class docstring
    says what real bug it stands for; ``tags`` say which workloads can show it."""

    def register(cls: type[Any]) -> type[Any]:
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        MUTANTS[name] = Target(f"mutant:{name}", cls, doc, (invariant, model), tags)
        return cls

    return register


def get_target(name: str) -> Target:
    """The target called ``name``. Raises ``KeyError`` with the known names."""
    if name in TARGETS:
        return TARGETS[name]
    if name.startswith("mutant:") and name[7:] in MUTANTS:
        return MUTANTS[name[7:]]
    known = [*TARGETS, *(f"mutant:{m}" for m in MUTANTS)]
    raise KeyError(f"unknown target {name!r}; known: {', '.join(known)}")
