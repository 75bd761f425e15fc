"""Issue 11, acceptance 2: reports stay byte-identical through the performance work.

``report_digests.json`` holds, per target (``reference``, ``seed``, every mutant),
the sha256 of ``report.json`` written by ``crashpoint explore --target T --model all
--faults --jobs 2``, normalised (keys sorted, compact, every key naming a time —
``seconds``, ``*_seconds`` — dropped; report.json has none today). The digests
were stored before the change (``provenance`` in the file says from which commit,
and which targets could only be stored after it); this test regenerates the reports
and compares.

Regenerate (only when a report change that is not a performance change lands)::

    python tests/perf/test_reports_identical.py --write DIR [THREADS]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DIGESTS = Path(__file__).with_name("report_digests.json")


def targets() -> list[str]:
    from crashpoint.scenarios import MUTANTS

    return ["reference", "seed", *(f"mutant:{name}" for name in MUTANTS)]


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if not k.endswith("seconds")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def normalised(report: Any) -> bytes:
    """``report`` without timing keys, as sorted compact JSON bytes."""
    return json.dumps(_strip(report), sort_keys=True, separators=(",", ":")).encode()


_REPORT = """
import hashlib, json, sys
sys.path.insert(0, {here!r})
from test_reports_identical import normalised
from crashpoint.faultfs import MODELS
from crashpoint.reports import build_report
from crashpoint.scenarios import SCENARIOS
from crashpoint.scenarios.jobs.explore import plan_tasks, run_tasks
tasks = plan_tasks(list(SCENARIOS), list(MODELS), {target!r}, faults=True)
report = build_report(run_tasks(tasks, jobs={jobs}), model="all", target={target!r})
print(hashlib.sha256(normalised(json.loads(json.dumps(report)))).hexdigest())
"""


def digest(target: str, jobs: int = 2) -> str:
    """sha256 of the normalised report.json of the whole catalogue under every model
    with faults, for ``target``: what ``crashpoint explore --target T --model all
    --faults --jobs 2`` writes to report.json (built as the CLI builds it, in a fresh
    process, without the HTML details the CLI also computes)."""
    code = _REPORT.format(here=str(Path(__file__).parent), target=target, jobs=jobs)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-1]


@pytest.mark.long
@pytest.mark.parametrize("target", targets())
def test_report_identical_to_stored(target: str) -> None:
    stored = json.loads(DIGESTS.read_text(encoding="utf-8"))["digests"]
    assert target in stored, f"no stored digest for {target}; regenerate with --write"
    assert digest(target) == stored[target]


def test_normalised_drops_only_timing_keys() -> None:
    a = {"seconds": 1.5, "x": [{"check_seconds": 2, "y": 1}], "z": 0}
    b = {"z": 0, "x": [{"y": 1, "check_seconds": 9}], "seconds": 3}
    assert normalised(a) == normalised(b)
    assert normalised(a) != normalised({**a, "z": 1})


if __name__ == "__main__":
    if "--write" in sys.argv:
        from concurrent.futures import ThreadPoolExecutor

        partial = Path(sys.argv[sys.argv.index("--write") + 1])  # one file per target
        partial.mkdir(parents=True, exist_ok=True)

        def one(target: str) -> None:
            done = partial / target.replace(":", "_")
            if not done.exists():
                done.write_text(digest(target), encoding="utf-8")

        with ThreadPoolExecutor(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 2) as pool:
            list(pool.map(one, targets()))
        found = {t: (partial / t.replace(":", "_")).read_text(encoding="utf-8") for t in targets()}
        DIGESTS.write_text(json.dumps({"digests": found}, indent=1) + "\n", encoding="utf-8")
        print(f"{len(found)} digests written to {DIGESTS}")
