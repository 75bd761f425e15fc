"""Persistence models and the registry of their families (FAULT-MODEL.md §3).

A model is data, not a subclass: a name, the :class:`~._family.Family` whose rules
derive its crash states, and the parameters of those rules (whether un-fsynced file
data may be lost or torn, whether un-synced directory operations may be reordered,
a block size and enumeration bounds). :func:`crash_points` maps an operation trace
to the crash states of each crash point ``k`` (the first ``k`` operations issued),
and :func:`durable_at` says which operations every crash state at ``k`` keeps; both
ask the model's family, looked up by name in :data:`FAMILIES`.

* ``process-crash`` (kill -9, :mod:`._process`): every completed operation survives,
  in order; the page cache outlives the process. One crash state per crash point,
  plus, when the operation that did not run is a write spanning more than one page,
  the states where only its first pages landed.
* ``power-loss`` (ext4 ``data=ordered`` with delayed allocation, LazyFS;
  :mod:`._power`): metadata and size changes persist as an in-order prefix reaching
  at least the last barrier; file data not yet fsynced survives whole, not at all,
  or torn in whole blocks.
* ``power-loss-reorder`` (ALICE's default abstract persistence model, Pillai et al.,
  OSDI 2014): as ``power-loss``, and a metadata operation not yet made durable (a
  directory operation by an fsync of its parent directory, a truncation by an fsync
  of its file) may be lost while later ones persist.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Sequence

from ._family import (
    REORDER_COMBINATIONS,
    CrashPoint,
    Family,
    PersistenceModel,
    device_default,
    effective,
    new_crash_point,
    with_device,
    with_sample,
)
from ._fsfamily import FS_FAMILIES
from ._image import CrashState
from ._power import POWER_FAMILY
from ._process import PROCESS_FAMILY
from ._trace import Op

__all__ = [
    "ALIASES",
    "FAMILIES",
    "FS_MODELS",
    "MODELS",
    "POWER_LOSS",
    "POWER_LOSS_REORDER",
    "PROCESS_CRASH",
    "REORDER_COMBINATIONS",
    "CrashPoint",
    "Family",
    "ModelError",
    "PersistenceModel",
    "canonical",
    "crash_points",
    "device_default",
    "durable_at",
    "effective",
    "get_family",
    "get_model",
    "new_crash_point",
    "parse_models",
    "register_family",
    "with_device",
    "with_sample",
]


_BUILT_IN: tuple[Family, ...] = (PROCESS_FAMILY, POWER_FAMILY, *FS_FAMILIES)
FAMILIES: dict[str, Family] = {f.name: f for f in _BUILT_IN}
"""The model families, by name: the one registry :func:`crash_points` and
:func:`durable_at` dispatch through (issue 19)."""


def register_family(family: Family) -> Family:
    """Add ``family`` to :data:`FAMILIES` under ``family.name`` and return it.

    Raises:
        ValueError: another family already has that name.
    """
    known = FAMILIES.get(family.name)
    if known is not None and known is not family:
        raise ValueError(f"a model family named {family.name!r} is already registered")
    FAMILIES[family.name] = family
    return family


def get_family(name: str) -> Family:
    """The family called ``name``. Raises ``KeyError`` naming the known families."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown model family {name!r}; known: {', '.join(FAMILIES)}") from None


PROCESS_CRASH = PersistenceModel(
    "process-crash",
    source="kill -9: completed operations survive in order (FAULT-MODEL.md §3)",
    family=PROCESS_FAMILY.name,
)

FS_MODELS: dict[str, PersistenceModel] = {
    f.name: PersistenceModel(
        f.name, volatile_data=True, reorder=not f.journal, source=f.source, family=f.name
    )
    for f in FS_FAMILIES
}
"""The models of the file-system families (``ext4``, ``xfs``, ``btrfs``, ``posix``;
issue 20), by name."""

MODELS: dict[str, PersistenceModel] = {PROCESS_CRASH.name: PROCESS_CRASH, **FS_MODELS}
"""The models of ``--model all``, by name: ``process-crash`` and the four file-system
families (issue 20)."""

POWER_LOSS = PersistenceModel(
    "power-loss",
    volatile_data=True,
    source="an alias of ext4 (issue 20; before it, the journaled model: CHANGELOG)",
    family="ext4",
)
"""``power-loss``, kept as a name of the ``ext4`` family: a model of that name judges with
``ext4``'s rules and a report names both (``"model": "power-loss", "family": "ext4"``)."""

POWER_LOSS_REORDER = PersistenceModel(
    "power-loss-reorder",
    volatile_data=True,
    reorder=True,
    source="an alias of posix (issue 20; before it, the journaled model with ALICE's "
    "reordering: CHANGELOG)",
    family="posix",
)
"""``power-loss-reorder``, kept as a name of the ``posix`` family."""

ALIASES: dict[str, PersistenceModel] = {m.name: m for m in (POWER_LOSS, POWER_LOSS_REORDER)}
"""The models kept under their names of before issue 20, by name: each judges with its
family's rules (``power-loss``: ``ext4``; ``power-loss-reorder``: ``posix``)."""


def canonical(name: str) -> str:
    """The name of the model ``name`` stands for: an alias's family (``power-loss`` ->
    ``ext4``), any other name unchanged. Used where two reports are compared
    (``--baseline``), so a finding under ``power-loss`` is the same finding under ``ext4``."""
    alias = ALIASES.get(name)
    return alias.family if alias is not None else name


def get_model(name: str) -> PersistenceModel:
    """The model called ``name`` (:data:`MODELS`, then the aliases :data:`ALIASES`).
    Raises ``KeyError`` naming the known models."""
    found = MODELS.get(name) or ALIASES.get(name)
    if found is None:
        known = ", ".join((*MODELS, *ALIASES))
        raise KeyError(f"unknown persistence model {name!r}; known: {known}")
    return found


def crash_points(
    model: PersistenceModel,
    initial: CrashState,
    ops: Sequence[Op],
    *,
    points: Container[int] | None = None,
) -> Iterator[CrashPoint]:
    """Every crash point of a trace, ``k = 0 .. len(ops)``, with its crash states.

    Crash point ``k`` is the machine stopped after ``ops[:k]``; ``ops[k]`` (the
    operation *k+1* of FAULT-MODEL.md §3, counting from one) did not complete. The
    states are the model's family's (:data:`FAMILIES`, ``model.family``): under
    ``process-crash`` the prefix state, then, when ``ops[k]`` is a write spanning more
    than one page (pages of ``model.block_size`` bytes, aligned on file offsets), the
    states where only its first ``j`` pages landed, ``j = 1 .. pages - 1``: the write
    cut at the ``j``-th page boundary after its offset (FAULT-MODEL.md §2: the kernel
    checks for a fatal signal between page-cache chunks; seen with real SIGKILLs at
    16 KiB, 1 MiB and 2–8 MiB). With more than ``model.max_partial_writes`` such
    states, the first, the last and a sample seeded by ``(k, offset, length)`` are
    offered and the rest counted in ``cut``. The partial states are built only when
    their crash point is reached. Under the power-loss family, see
    :func:`crashpoint.faultfs._power.power_crash_points`.

    Args:
        model: the persistence model.
        initial: the durable disk the run started from.
        ops: the trace's mutating operations, ``ops[i].index == i``.
        points: only the crash points ``k`` in it (the others' states are never
            built; the same states as the whole enumeration gives at those points).

    Raises:
        KeyError: ``model.family`` is not a registered family.
        ValueError: a bound of ``model`` is not positive, a parameter is one its
            family does not implement, or (power-loss models) an operation does not
            replay onto ``initial``.
    """
    return get_family(model.family).crash_points(model, initial, ops, points)


def durable_at(model: PersistenceModel, ops: Sequence[Op], k: int) -> list[bool]:
    """For each of ``ops[:k]`` (a trace's mutating operations, ``ops[i].index == i``),
    whether it is durable at crash point ``k`` under ``model``: kept by every crash
    state of that point, as the model's family rules it (FAULT-MODEL.md §3).

    ``process-crash``: every completed operation. Power loss: a barrier that
    succeeded; a write once a later fsync of its inode succeeded; other metadata once
    a later barrier succeeded (``power-loss-reorder``: a directory operation once its
    parent directories were fsynced after it, a truncation once its file was).

    Returns:
        ``min(k, len(ops))`` booleans, in trace order.

    Raises:
        KeyError: ``model.family`` is not a registered family.
    """
    return get_family(model.family).durable(model, ops, k)


class ModelError(KeyError, ValueError):
    """An unknown or empty persistence-model name (a KeyError for the Python API, a
    ValueError for option parsers); its message names the known models."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def parse_models(
    spec: str | PersistenceModel | Sequence[str | PersistenceModel],
) -> list[PersistenceModel]:
    """The models ``spec`` names, in the order given, each once: ``"all"`` (the models
    of :data:`MODELS`: ``process-crash`` and the four file-system families), a name (of
    :data:`MODELS` or an alias, :data:`ALIASES`: kept under the name asked for),
    comma-separated names (any case, spaces ignored), a model, or a sequence of names
    and models. The one parser of model names (the CLI, the pytest plugin and the Python
    API use it). Raises :class:`ModelError` naming the known models."""
    named = {**MODELS, **ALIASES}
    known = f"known: {', '.join(named)}, all (or a comma-separated list)"
    if isinstance(spec, PersistenceModel):
        return [spec]
    if not isinstance(spec, str):
        return [m if isinstance(m, PersistenceModel) else get_model(m) for m in spec]
    names = [part.strip().lower() for part in spec.split(",")]
    if names == ["all"]:
        return list(MODELS.values())
    if any(not n for n in names):
        raise ModelError(f"empty model name in {spec!r}; {known}")
    if "all" in names:
        raise ModelError(f"'all' stands alone, not in a list ({spec!r}); {known}")
    for name in names:
        if name not in named:
            raise ModelError(f"unknown persistence model {name!r}; {known}")
    return [named[n] for n in dict.fromkeys(names)]
