"""The merged tail with tinydb (issue 12): ``JSONStorage.write`` writes, fsyncs and then
truncates, so a crash before the truncate leaves the new content followed by the old
tail. tinydb is a real library: marker ``examples`` (``tox -e examples``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from explain_helpers import FIELD, ROOT, explain, run_emitted

pytestmark = pytest.mark.examples

TINYDB = ROOT / "examples" / "libraries" / "tinydb_target.py"
FIXED = FIELD / "tinydb_fixed.py"


def test_merged_tail_is_tinydbs_write_then_truncate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tinydb")
    emitted = tmp_path / "test_merged_tail.py"
    ev = FIELD / "merged-tail" / "document"
    code, report, _ = explain(
        capsys, tmp_path / "r", ev, "--target", f"{TINYDB}:factory", "--emit-test", str(emitted)
    )
    assert code == 1
    assert [f["class"] for f in report["evidence"]["files"]] == ["merged"]
    first = report["first_match"]
    assert first["model"] == "process-crash" and "A1" in first["counted"]
    assert first["files"]["db.json"].startswith("merged")
    assert "truncate" in first["cause"]  # the truncation comes after the write
    code, report, _ = explain(capsys, tmp_path / "f", ev, "--target", f"{FIXED}:factory")
    assert code == 0 and report["reachable"] is False
    assert run_emitted(emitted, None, monkeypatch)
    assert run_emitted(emitted, f"{FIXED}:factory", monkeypatch) == []
