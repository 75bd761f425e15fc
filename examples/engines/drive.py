"""One command per engine of the catalogue, for ``crashpoint verify --exec``::

    python examples/engines/drive.py ENGINE[:CONFIG] save DIR VALUE_FILE
    python examples/engines/drive.py ENGINE[:CONFIG] load DIR

``ENGINE`` is a module ``examples/engines/ENGINE_engine.py`` (``sqlite``, ``lmdb``,
``leveldb``, ``rocksdb``, ``zodb``, ``git``, ``hg``); ``CONFIG`` one of its ``CONFIGS``
(its ``DEFAULT`` when omitted). ``load`` prints the committed value as JSON (``null``
before the first commit); it exits 3 when the engine's own integrity check fails
(``PRAGMA integrity_check``, ``git fsck``, ``hg verify``) and 4 on a torn transaction,
with the reason on standard error: both are atomicity findings (A1).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from types import ModuleType

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def engine(spec: str) -> tuple[ModuleType, str]:
    """(module, configuration) of ``ENGINE[:CONFIG]``. Raises KeyError (unknown config),
    ModuleNotFoundError (unknown engine)."""
    name, _, config = spec.partition(":")
    mod = importlib.import_module(f"{name}_engine")
    config = config or mod.DEFAULT
    if config not in mod.CONFIGS:
        raise KeyError(f"{name} has no configuration {config!r}: {sorted(mod.CONFIGS)}")
    return mod, config


def main(argv: list[str]) -> int:
    mod, config = engine(argv[1])
    if argv[2] == "save":
        with open(argv[4], encoding="utf-8") as f:
            mod.save(argv[3], json.load(f), config)
        return 0
    try:
        got = mod.load(argv[3], config)
    except mod.IntegrityError as exc:
        print(f"integrity: {exc}", file=sys.stderr)
        return 3
    except ValueError as exc:
        print(f"torn: {exc}", file=sys.stderr)
        return 4
    json.dump(got, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
