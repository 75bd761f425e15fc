"""``python -m crashpoint``: the command line."""

from ._cli import run

run()
