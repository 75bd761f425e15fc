"""crashpoint: a crash-consistency test harness and fault injector.

Subpackages: :mod:`crashpoint.core` (the reference agent-state model and storage),
:mod:`crashpoint.faultfs` (the injectable filesystem and persistence models),
:mod:`crashpoint.scenarios` (workloads, checkers, exploration) and
:mod:`crashpoint.reports` (renderers). The command line is ``crashpoint explore``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
