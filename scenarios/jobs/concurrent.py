"""Concurrent actors on a document target, as a library call (issue 25, SPEC.md §10.1):
the front end ``crashpoint_verify.check(factory, actors=2)`` of the pytest plug-in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...faultfs import PersistenceModel
from ..engine.schedule import DEFAULT_PREEMPTIONS
from ..kinds.concurrent.kind import (
    CONCURRENT_WORKLOADS,
    ConcurrentKind,
    ConcurrentResult,
    declares_last_writer_wins,
    explore_concurrent,
)
from ..kinds.document.kind import DOC_BASE
from ..targets.user import make_runner

__all__ = ["verify_concurrent"]


def verify_concurrent(
    factory: Callable[..., Any],
    *,
    actors: int = 2,
    models: Sequence[PersistenceModel],
    workloads: Sequence[str] | None = None,
    preemptions: int = DEFAULT_PREEMPTIONS,
    last_writer_wins: bool = False,
    name: str = "",
    seed: int = 0,
) -> list[ConcurrentResult]:
    """Each concurrent workload (default all three) of ``factory`` with ``actors``
    actors, every schedule within ``preemptions``, under each of ``models``;
    ``last_writer_wins`` also when the factory declares it
    (:func:`~..kinds.concurrent.kind.declares_last_writer_wins`).

    Raises KeyError for an unknown workload, ValueError for fewer than 2 actors."""
    if actors < 2:
        raise ValueError(f"concurrent actors are 2 or more, not {actors}")
    target = name or getattr(factory, "__qualname__", repr(factory))
    runner = make_runner(factory, DOC_BASE, spec=target, seed=seed)
    out = []
    with runner:
        kind = ConcurrentKind(
            runner,
            target,
            last_writer_wins=last_writer_wins or declares_last_writer_wins(factory),
            seed=seed,
            preemptions=preemptions,
        )
        for workload in workloads or CONCURRENT_WORKLOADS:
            out.append(explore_concurrent(kind, workload, actors=actors, models=models))
    return out
