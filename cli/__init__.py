"""crashpoint: a crash-consistency test harness and fault injector.

Subpackages: :mod:`crashpoint.core` (the reference agent-state model and storage),
:mod:`crashpoint.faultfs` (the injectable filesystem and persistence models),
:mod:`crashpoint.scenarios` (workloads, checkers, exploration) and
:mod:`crashpoint.reports` (renderers). The command line is ``crashpoint explore`` and
``crashpoint verify``; :func:`crashpoint.verify` judges your own storage from Python.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scenarios.jobs.verify import verify as verify

__version__ = "0.1.0"

__all__ = ["__version__", "verify"]


def __getattr__(name: str) -> Any:
    # ``crashpoint.verify`` (issue 8), imported on first use: the pytest plugin and
    # the CLI stay cheap to import.
    if name == "verify":
        from .scenarios.jobs.verify import verify

        return verify
    raise AttributeError(f"module 'crashpoint' has no attribute {name!r}")
