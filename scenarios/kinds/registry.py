"""The registry of target kinds (STYLE.md §17: a kind is a registered value).

A kind is one way a target is driven and judged: ``document`` (``save(value)`` /
``load()``, SPEC.md §10), ``state-storage`` (the six methods of SPEC.md §6), or one a
user registers. An entry says how the kind is made for one target from a runner and
its options (:attr:`KindEntry.make`, returning an object of the engine's
:class:`~crashpoint.scenarios.engine.explore.Kind` protocol), which workloads it runs,
how ``crashpoint verify`` and ``crashpoint explain`` name it, and what its subject is.
The CLI builds ``--kind``'s choices from :func:`kind_names`; the plan runner
(:func:`crashpoint.scenarios.jobs.plan.run_plan`) drives any entry through the engine.

A kind in a file of its own registers itself::

    register_kind(KindEntry("log", "an append-only log", "/data/log", make=LogKind,
                            workloads=("appends",)))
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BUILT_IN",
    "KINDS",
    "PLUGINS_VARIABLE",
    "KindEntry",
    "get_kind",
    "kind_names",
    "load_plugins",
    "register_kind",
    "unregister_kind",
]


@dataclass(frozen=True, slots=True)
class KindEntry:
    """One target kind as the front ends know it.

    Attributes:
        name: ``--kind NAME``.
        summary: one line for ``--help``.
        base_dir: the directory the target is given (it exists, empty, before a run).
        make: ``make(runner, target, options)`` → the kind for one target (a
            :class:`~crashpoint.scenarios.engine.explore.Kind` that also has
            ``workload(name)``); ``runner`` builds and calls the target
            (:class:`~crashpoint.scenarios.targets.user.Runner`), ``target`` is its name
            as replays spell it, ``options`` the plan's kind options.
        workloads: the workload names run by default, in order.
        run: a kind with a front end of its own (``document``, ``state-storage``):
            ``run(plan, factory)`` → a ``VerifyResult``; None: the plan runner's generic
            loop drives it.
        parses: ``parses(bytes)``: whether the kind's load would take a file's bytes as
            data (``crashpoint explain`` tells complete files from torn ones by it).
        options: option names the kind accepts in a plan (others are refused).
        run_id: ``run_id(plan)`` → the id the kind's runs carry (None: the plan's own,
            :meth:`~crashpoint.scenarios.jobs.plan.Plan.run_id`; ``explore`` keeps the
            id its shards were always given).
        listed: offered as ``verify --kind`` and ``explain --kind`` (False: a kind only
            its own command drives, as ``crashpoint explore`` drives ``agent``, the
            embedded catalogue's targets).
    """

    name: str
    summary: str
    base_dir: str
    make: Callable[[Any, str, Mapping[str, Any]], Any]
    workloads: tuple[str, ...]
    run: Callable[..., Any] | None = None
    parses: Callable[[bytes], bool] = field(default=bool)
    options: frozenset[str] = frozenset()
    run_id: Callable[[Any], str] | None = None
    listed: bool = True


KINDS: dict[str, KindEntry] = {}
"""The registered kinds, by name, in registration order."""


BUILT_IN = frozenset({"agent", "document", "state-storage"})
"""Names only crashpoint registers (``builtin=True``)."""


def register_kind(entry: KindEntry, *, builtin: bool = False) -> KindEntry:
    """Make ``entry`` known to ``verify``, ``explain`` and the CLI.

    A kind's module imported again (a target in the same file, loaded by path) may
    register its entry again: an entry whose ``make`` has the same module and qualified
    name replaces it. Raises ValueError for a name that is not a lower-case word
    (letters, digits, ``-``), a built-in name, or another kind's name."""
    name = entry.name
    if (
        not isinstance(name, str)
        or not name
        or not all(c.islower() or c.isdigit() or c == "-" for c in name)
        or not name[0].isalpha()
    ):
        raise ValueError(f"a kind's name is a lower-case word (letters, digits, -), not {name!r}")
    if name in BUILT_IN and not builtin:
        raise ValueError(f"{name!r} is a built-in kind's name: give yours another")
    known = KINDS.get(name)
    if known is not None and known is not entry and _origin(known) != _origin(entry):
        raise ValueError(f"a kind named {name!r} is registered already")
    KINDS[name] = entry
    return entry


def _origin(entry: KindEntry) -> tuple[str, str]:
    make = entry.make
    return (getattr(make, "__module__", ""), getattr(make, "__qualname__", repr(make)))


def unregister_kind(name: str) -> None:
    """Forget the kind ``name`` (a test's kind, once the test is done)."""
    KINDS.pop(name, None)


PLUGINS_VARIABLE = "CRASHPOINT_KINDS"
"""The environment variable naming plug-in kinds for the command line: modules
(``package.module``) or files (``path/to/kinds.py``), comma-separated, each imported
once before the kinds are listed; importing one registers its kinds."""

_loaded: set[str] = set()


class PluginError(ValueError):
    """A module :data:`PLUGINS_VARIABLE` names does not import: the user's setting, not
    the target's fault (the command line reports it as a usage error, exit 2)."""


def load_plugins() -> None:
    """Import the modules :data:`PLUGINS_VARIABLE` names (once each). Raises
    :class:`PluginError` (a ValueError) naming the one that does not import."""
    for spec in (s.strip() for s in os.environ.get(PLUGINS_VARIABLE, "").split(",")):
        if not spec or spec in _loaded:
            continue
        try:
            if spec.endswith(".py"):
                path = os.path.abspath(spec)
                name = "crashpoint_kinds_" + hashlib.sha256(path.encode()).hexdigest()[:12]
                found = importlib.util.spec_from_file_location(name, path)
                if found is None or found.loader is None:
                    raise ImportError(f"no module at {path}")
                module = importlib.util.module_from_spec(found)
                sys.modules[name] = module
                found.loader.exec_module(module)
            else:
                importlib.import_module(spec)
        except Exception as exc:
            raise PluginError(
                f"{PLUGINS_VARIABLE}: {spec!r} does not import: {type(exc).__name__}: {exc}"
            ) from None
        _loaded.add(spec)


def get_kind(name: str) -> KindEntry:
    """The kind ``name`` (plug-ins of :data:`PLUGINS_VARIABLE` loaded first). Raises
    KeyError naming the known kinds, ValueError for a plug-in that does not import."""
    load_plugins()
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(n for n, e in KINDS.items() if e.listed)
        raise KeyError(f"unknown kind {name!r}; known: {known}") from None


def kind_names() -> list[str]:
    """The registered kinds' names that ``--kind`` offers (:attr:`KindEntry.listed`), in
    registration order (plug-ins of :data:`PLUGINS_VARIABLE` loaded first)."""
    load_plugins()
    return [name for name, entry in KINDS.items() if entry.listed]
