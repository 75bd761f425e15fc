"""``python -m crashpoint``: the command line."""

from ._entry import run

run()
