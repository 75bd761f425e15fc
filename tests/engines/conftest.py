"""tests/engines: this folder and the catalogue (examples/engines) on ``sys.path``."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "engines")
for path in (HERE, ENGINES):
    if path not in sys.path:
        sys.path.insert(0, path)
