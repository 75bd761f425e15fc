"""The ``crashpoint`` command's entry point (the console script, ``python -m crashpoint``).

Kept apart from :mod:`crashpoint._cli`, and importing nothing at module level, so that a
Ctrl-C while the command line's modules are still being imported (rich, argparse, the
harness) ends as one during the run does: the line ``crashpoint: interrupted`` on
standard error and exit code 130, never a traceback.
"""

from __future__ import annotations

import sys
from typing import NoReturn

__all__ = ["run"]


def run() -> NoReturn:
    """Run :func:`crashpoint._cli.run` (exits with :func:`crashpoint._cli.main`'s code);
    a ``KeyboardInterrupt`` raised before ``main`` handles it exits 130."""
    try:
        from ._cli import run as run_cli

        run_cli()
    except KeyboardInterrupt:
        sys.stderr.write("crashpoint: interrupted\n")
        sys.exit(130)
