"""The engine catalogue as Python targets of ``crashpoint verify --runner strace``: one
factory per engine configuration, ``targets.py:ENGINE.CONFIG`` (``targets.py:hg.default``,
``targets.py:sqlite.wal-normal``), each ``factory(base_dir)`` giving an object whose
``save(value)`` and ``load()`` are the engine module's.

The same saves and loads as ``drive.py``'s commands, run by crashpoint's strace driver:
its fork server imports the engine (and its library: ``sqlite3``, ``lmdb``, ``plyvel``,
``rocksdict``, ``ZODB``, ``mercurial``) once, and each save or load is a child forked from
it and traced from the fork, instead of an interpreter started and traced from nothing.
The operations on the directory are the same (a fork server whose import wrote is not
used: docs/decisions.md); a load that raises exits 1 with the error on standard error
(``IntegrityError``: the engine's own integrity check failed; ``ValueError``: a torn
transaction), both A1.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import drive  # noqa: E402

PATH = os.path.abspath(__file__)


def target(spec: str) -> str:
    """The ``--runner strace`` target of ``ENGINE[:CONFIG]`` (this file's factory).
    Raises KeyError (unknown configuration), ModuleNotFoundError (unknown engine)."""
    mod, config = drive.engine(spec)
    return f"{PATH}:{mod.NAME}.{config}"


class EngineStore:
    """One engine configuration on the directory ``base_dir``."""

    def __init__(self, mod: ModuleType, config: str, base_dir: str) -> None:
        self.mod, self.config, self.base_dir = mod, config, base_dir

    def save(self, value: Any) -> None:
        self.mod.save(self.base_dir, value, self.config)

    def load(self) -> Any:
        return self.mod.load(self.base_dir, self.config)


class _Engine:
    """``targets.ENGINE``: its configurations as attributes, each a factory."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, config: str) -> Any:
        if config.startswith("_"):
            raise AttributeError(config)
        try:
            mod, config = drive.engine(f"{self._name}:{config}")
        except KeyError as exc:
            raise AttributeError(str(exc)) from None

        def factory(base_dir: str) -> EngineStore:
            return EngineStore(mod, config, base_dir)

        return factory


def __getattr__(name: str) -> _Engine:
    if name.startswith("_"):
        raise AttributeError(name)
    return _Engine(name)
