"""Run a Python document store of examples/stores as a command (for ``verify --exec``).

    python examples/exec/pystore.py CLASS save DIR VALUE_FILE
    python examples/exec/pystore.py CLASS load DIR

``CLASS`` names a class of ``examples/stores/jsonstore.py`` (``JsonStore``,
``InPlaceJsonStore`` ...). ``load`` prints the value as JSON; the initial value (no
document yet) is ``null``.
"""

from __future__ import annotations

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stores"))

import jsonstore  # noqa: E402


def main(argv: list[str]) -> int:
    cls = getattr(jsonstore, argv[1])
    store = cls(argv[3])
    if argv[2] == "save":
        with open(argv[4], encoding="utf-8") as f:
            store.save(json.load(f))
        return 0
    json.dump(store.load(), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
