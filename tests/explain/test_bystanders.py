"""Files the target never writes beside the evidence (issue 22, explain): a 1-byte
``.DS_Store``, ``app.log`` and ``logs/app.log`` added to every shipped field report of
examples/field-reports leave its verdict as it was; they are reported as bystanders
(learnt from the names the target's runs write) and left out of the match."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from explain_helpers import FIELD, JSONSTORE, NOTEBOOK, ROOT, explain

BYSTANDERS = {".DS_Store": b"\0", "app.log": b"started\n", "logs/app.log": b"saved 3 keys\n"}

CASES = [
    ("zero-length-main/agent-state", "seed"),
    ("zero-length-main/agent-state", "reference"),
    ("zero-length-main/document", f"{JSONSTORE}:NoFsyncJsonStore"),
    ("zero-length-main/document", f"{JSONSTORE}:JsonStore"),
    ("backup-holds-previous/document", f"{NOTEBOOK}:NotebookStore"),
    ("backup-holds-previous/document", f"{NOTEBOOK}:FixedNotebookStore"),
    ("complete-temporary/agent-state", "seed"),
    ("complete-temporary/agent-state", "reference"),
    ("complete-temporary/document", f"{JSONSTORE}:JsonStore"),
    pytest.param(
        "merged-tail/document",
        f"{ROOT / 'examples' / 'libraries' / 'tinydb_target.py'}:factory",
        marks=pytest.mark.examples,
    ),
    pytest.param(
        "merged-tail/document", f"{FIELD / 'tinydb_fixed.py'}:factory", marks=pytest.mark.examples
    ),
]


def verdict(report: dict[str, Any]) -> tuple[Any, ...]:
    first = report["first_match"]
    return (
        report["exit_code"],
        report["verdict"],
        report["reachable"],
        [f["invariant"] for f in report["read_findings"]],
        None
        if first is None
        else (first["model"], first["workload"], first["crash_point"]["index"], first["counted"]),
    )


def test_every_shipped_field_report_lists_its_cases() -> None:
    shipped = {
        str(p.relative_to(FIELD)) for p in FIELD.glob("*/*") if p.is_dir()
    }  # a new field report must be added to CASES
    named = {str(getattr(c, "values", c)[0]) for c in CASES}
    assert shipped == named


@pytest.mark.parametrize(("evidence", "target"), CASES)
def test_bystander_files_leave_the_verdict_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], evidence: str, target: str
) -> None:
    if "tinydb" in target:
        pytest.importorskip("tinydb")
    plain_code, plain, _ = explain(capsys, tmp_path / "plain", FIELD / evidence, "--target", target)
    crowded = tmp_path / "crowded"
    shutil.copytree(FIELD / evidence, crowded)
    for name, data in BYSTANDERS.items():
        (crowded / name).parent.mkdir(parents=True, exist_ok=True)
        (crowded / name).write_bytes(data)
    code, report, _ = explain(capsys, tmp_path / "r", crowded, "--target", target)
    assert (code, verdict(report)) == (plain_code, verdict(plain))
    assert report["evidence"].get("bystanders") == sorted(BYSTANDERS)
    flagged = {f["name"] for f in report["evidence"]["files"] if f.get("bystander")}
    assert flagged == set(BYSTANDERS)
    for m in report["matches"]:  # never part of a matched state
        assert not set(m["files"]) & set(BYSTANDERS)


def test_a_file_of_the_targets_own_shape_is_not_a_bystander(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crowded = tmp_path / "crowded"
    shutil.copytree(FIELD / "zero-length-main" / "agent-state", crowded)
    (crowded / "s2.json").write_bytes(b"")  # another session's main: the target's name
    (crowded / "app.log").write_bytes(b"x")
    _, report, _ = explain(capsys, tmp_path / "r", crowded, "--target", "seed")
    assert report["evidence"].get("bystanders") == ["app.log"]
