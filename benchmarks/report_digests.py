"""Digests of the reports a refactoring must leave unchanged (issue 19, acceptance 1).

Runs each command below through the CLI (``python -m crashpoint``) in a fresh process,
reads the ``report.json`` it writes and prints one line per command: the sha256 of the
report with ``version`` and every timing key (``seconds``, ``*_seconds``) removed, keys
sorted, compact. Run it before and after a change and compare the outputs (``diff``)::

    python benchmarks/report_digests.py > before.txt
    ... change ...
    python benchmarks/report_digests.py > after.txt && diff before.txt after.txt

The real libraries come from ``examples/requirements.txt``; a library that is not
installed prints ``missing`` instead of a digest (never a digest of nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORES = os.path.join(ROOT, "examples", "stores", "jsonstore.py")
LIBS = os.path.join(ROOT, "examples", "libraries")
FIELD = os.path.join(ROOT, "examples", "field-reports")

# (name, CLI arguments, module the command needs or None)
COMMANDS: list[tuple[str, list[str], str | None]] = [
    ("explore --model all --faults", ["explore", "--model", "all", "--faults"], None),
    (
        "explore --target seed --model all --faults",
        ["explore", "--target", "seed", "--model", "all", "--faults"],
        None,
    ),
    ("explore --zoo", ["explore", "--zoo"], None),
]
for _store in ("JsonStore", "NoFsyncJsonStore", "InPlaceJsonStore"):
    COMMANDS.append(
        (
            f"verify jsonstore.py:{_store} --model all --faults",
            ["verify", f"{STORES}:{_store}", "--model", "all", "--faults"],
            None,
        )
    )
for _lib, _mod in (
    ("tinydb_target.py:factory", "tinydb"),
    ("safer_target.py:factory", "safer"),
    ("safer_target.py:temp_file_factory", "safer"),
    ("atomicwrites_target.py:factory", "atomicwrites"),
    ("configobj_target.py:factory", "configobj"),
    ("dotenv_target.py:factory", "dotenv"),
):
    COMMANDS.append(
        (f"verify {_lib} --model all", ["verify", os.path.join(LIBS, _lib), "--model", "all"], _mod)
    )
for _evidence, _target, _kind, _mod in (
    ("zero-length-main/agent-state", "seed", None, None),
    ("zero-length-main/agent-state", "reference", None, None),
    ("zero-length-main/document", f"{STORES}:NoFsyncJsonStore", None, None),
    ("zero-length-main/document", f"{STORES}:JsonStore", None, None),
    ("merged-tail/document", os.path.join(LIBS, "tinydb_target.py:factory"), None, "tinydb"),
    ("merged-tail/document", os.path.join(FIELD, "tinydb_fixed.py:factory"), None, "tinydb"),
    (
        "backup-holds-previous/document",
        os.path.join(FIELD, "notebook_store.py:NotebookStore"),
        None,
        None,
    ),
    (
        "backup-holds-previous/document",
        os.path.join(FIELD, "notebook_store.py:FixedNotebookStore"),
        None,
        None,
    ),
    ("complete-temporary/agent-state", "seed", None, None),
    ("complete-temporary/agent-state", "reference", None, None),
    ("complete-temporary/document", f"{STORES}:JsonStore", None, None),
):
    _short = _target.rsplit("/", 1)[-1]
    COMMANDS.append(
        (
            f"explain {_evidence} --target {_short}",
            ["explain", os.path.join(FIELD, _evidence), "--target", _target],
            _mod,
        )
    )


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: _strip(v) for k, v in obj.items() if k != "version" and not k.endswith("seconds")
        }
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def digest(report: Any) -> str:
    """sha256 of ``report`` without ``version`` and timing keys, sorted and compact."""
    text = json.dumps(_strip(report), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def run(args: list[str]) -> tuple[str, int, float]:
    """(digest, exit code, seconds) of ``crashpoint ARGS --out TMP``."""
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "crashpoint", *args, "--out", out],
            capture_output=True,
            text=True,
            check=False,
            cwd=out,
        )
        seconds = time.perf_counter() - started
        path = os.path.join(out, "report.json")
        if not os.path.exists(path):
            return (
                f"no report (exit {proc.returncode}): {proc.stderr.strip()[-200:]}",
                proc.returncode,
                seconds,
            )
        with open(path, encoding="utf-8") as f:
            return digest(json.load(f)), proc.returncode, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="only the commands whose name contains this")
    parser.add_argument(
        "--times", action="store_true", help="print each command's seconds (stderr)"
    )
    ns = parser.parse_args()
    for name, args, module in COMMANDS:
        if ns.only and ns.only not in name:
            continue
        if module is not None and importlib.util.find_spec(module) is None:
            print(f"missing ({module} not installed)  {name}", flush=True)
            continue
        value, code, seconds = run(args)
        print(f"{value}  exit {code}  {name}", flush=True)
        if ns.times:
            print(f"{seconds:.1f} s  {name}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
