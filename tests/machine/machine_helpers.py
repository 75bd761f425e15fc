"""Helpers shared by the state-machine tests."""

from __future__ import annotations


def program(exc: BaseException) -> list[str]:
    """The rules of hypothesis's printed reproduction (invariant checks left out)."""
    return [
        line
        for line in getattr(exc, "__notes__", [])
        if line.startswith("state.")
        and not line.startswith(("state.loads_as_expected(", "state.teardown("))
    ]
