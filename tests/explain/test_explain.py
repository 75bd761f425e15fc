"""``crashpoint explain`` on the field reports of examples/field-reports (issue 12,
acceptance 1-3): matching crash point and model, the invariant, emitted tests that fail
on the buggy target and pass on the fixed one, manifests explained by shape, and
unexplained evidence with its nearest states. Pinned by invariant, model and state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from explain_helpers import FIELD, JSONSTORE, NOTEBOOK, explain, run_emitted

ZERO = FIELD / "zero-length-main"
TEMP = FIELD / "complete-temporary"
BACKUP = FIELD / "backup-holds-previous"


def counted(report: dict) -> list[dict]:
    return [m for m in report["matches"] if m["counted"]]


def test_zero_length_main_the_seed_reaches_it_under_power_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emitted = tmp_path / "test_zero_length_main.py"
    code, report, _ = explain(
        capsys,
        tmp_path / "r",
        ZERO / "agent-state",
        "--target",
        "seed",
        "--emit-test",
        str(emitted),
    )
    assert code == 1 and report["exit_code"] == 1
    first = report["first_match"]
    assert first["model"] == "ext4" and "R1" in first["counted"]  # all: the families (issue 20)
    assert first["files"] == {"s1.json": "empty, 0 bytes"}
    assert "fsync" in first["cause"] and "rename" in first["cause"]
    # Only models that lose un-fsynced data reach it with an invariant failing.
    assert {m["model"] for m in counted(report)} <= {"ext4", "xfs", "btrfs", "posix"}
    assert [w["id"] for w in report["invariants"]] == ["R1"]
    assert "SPEC.md §8" in report["invariants"][0]["spec"]
    assert report["load"]["error"] == "state_corrupt"
    assert not report["load"]["load_or_create_writes"]
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "r" / name).stat().st_size > 0
    # The emitted file is a self-contained pytest file: it fails on the seed and passes
    # on the reference (the fix), run by pytest in a fresh process.
    env = {k: v for k, v in os.environ.items() if k != "CRASHPOINT_TARGET"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(emitted)]
    seed = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    fixed = subprocess.run(
        cmd,
        cwd=tmp_path,
        env={**env, "CRASHPOINT_TARGET": "reference"},
        capture_output=True,
        text=True,
    )
    assert seed.returncode == 1, seed.stdout
    assert fixed.returncode == 0, fixed.stdout


def test_zero_length_main_the_reference_cannot_reach_it_and_reports_corruption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = explain(capsys, tmp_path / "r", ZERO / "agent-state", "--target", "reference")
    assert code == 0
    assert report["reachable"] is False and report["matches"] == []
    assert report["nearest"] and report["likelier"]
    assert report["load"]["error"] == "state_corrupt"  # never a fresh session
    assert report["load"]["load_or_create"] == "raised state_corrupt"
    assert not report["load"]["load_writes"] and not report["load"]["load_or_create_writes"]
    assert report["searched"]["generated"]["count"] == 12
    assert report["searched"]["generated"]["seed"] == 0


def test_complete_temporary_is_ignored_by_both_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main_state = json.loads((TEMP / "agent-state" / "s1.json").read_text())
    code, report, _ = explain(
        capsys, tmp_path / "ref", TEMP / "agent-state", "--target", "reference"
    )
    assert code == 0 and report["reachable"]
    first = report["first_match"]
    assert first["model"] == "process-crash" and first["counted"] == []
    assert first["files"]["s1.json.tmp"].startswith("a complete generation")
    n = len(main_state["history"]["messages"])
    assert report["load"]["returned"].startswith(f"state with {n} message")  # main, not tmp
    emitted = tmp_path / "test_temp.py"
    code, report, _ = explain(
        capsys,
        tmp_path / "seed",
        TEMP / "agent-state",
        "--target",
        "seed",
        "--emit-test",
        str(emitted),
    )
    assert report["load"]["returned"].startswith(f"state with {n} message")
    assert report["read_findings"] == []
    # The seed's write path reaches the same structure under power loss with an
    # acknowledged save lost (R1): that, not the temporary, is its fault.
    assert code == 1
    assert {m["model"] for m in counted(report)} <= {"ext4", "xfs", "btrfs", "posix"}
    assert "R1" in report["first_match"]["counted"]
    assert run_emitted(emitted, None, monkeypatch)
    assert run_emitted(emitted, "reference", monkeypatch) == []


def test_a_manifest_with_private_bytes_is_explained_by_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "files": [
                    {
                        "name": "s1.json",
                        "size": 0,
                        "sha256": "e3b0c442",
                        "empty": "yes",
                        "zero-filled": "no",
                        "parses": "no",
                    }
                ]
            }
        )
    )
    code, report, _ = explain(capsys, tmp_path / "r", manifest, "--target", "seed")
    assert code == 1 and report["evidence"]["private"] is True
    assert report["first_match"]["model"] == "ext4"
    assert "R1" in report["first_match"]["counted"]
    private = tmp_path / "private.json"
    private.write_text(
        json.dumps(
            {
                "session": "s1",
                "files": [
                    {"name": "s1.json", "size": 612, "sha256": "ab", "parses": "yes"},
                    {"name": "s1.json.tmp", "size": 700, "sha256": "cd", "parses": "yes"},
                ],
            }
        )
    )
    code, report, _ = explain(capsys, tmp_path / "r2", private, "--target", "reference")
    classes = {f["name"]: f["class"] for f in report["evidence"]["files"]}
    assert classes == {"s1.json": "complete", "s1.json.tmp": "complete"}
    assert code == 0 and report["first_match"]["model"] == "process-crash"


def test_evidence_no_workload_produces_is_unexplained_and_the_exit_follows_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "s1.json").write_bytes(b"\xde\xad\xbe\xef not json at all")
    (ev / "s1.json.ended").write_bytes(b"1")
    code, report, _ = explain(capsys, tmp_path / "r", ev, "--target", "reference")
    assert report["reachable"] is False and report["nearest"]
    assert all("diff" in n for n in report["nearest"])
    assert "corruption" in report["likelier"]
    assert code == 0  # the reference's load reports corruption and writes nothing
    # A target whose load_or_create writes over the unreadable evidence is at fault
    # for its load alone (C1), reachable or not.
    code, report, _ = explain(
        capsys, tmp_path / "r2", ev, "--target", "mutant:create-over-unreadable"
    )
    assert report["reachable"] is False
    assert [f["invariant"] for f in report["read_findings"]] == ["C1"]
    assert code == 1


def test_document_zero_length_main(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    emitted = tmp_path / "test_doc_zero.py"
    buggy, fixed = f"{JSONSTORE}:NoFsyncJsonStore", f"{JSONSTORE}:JsonStore"
    code, report, _ = explain(
        capsys, tmp_path / "r", ZERO / "document", "--target", buggy, "--emit-test", str(emitted)
    )
    assert code == 1 and report["kind"] == "document"
    first = report["first_match"]
    assert first["model"] == "ext4" and {"A1", "A2"} & set(first["counted"])
    assert "SPEC.md §10" in report["invariants"][0]["spec"]
    code, report, _ = explain(capsys, tmp_path / "f", ZERO / "document", "--target", fixed)
    assert code == 0 and report["reachable"] is False
    # unexplained, and a document's loaded value is not judged (what was saved is
    # unknown): the verdict does not vouch for the load
    assert not report["read_findings"] and "handles it" not in report["verdict"]
    assert run_emitted(emitted, None, monkeypatch)
    assert run_emitted(emitted, fixed, monkeypatch) == []


def test_document_backup_holds_the_previous_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    emitted = tmp_path / "test_backup.py"
    buggy, fixed = f"{NOTEBOOK}:NotebookStore", f"{NOTEBOOK}:FixedNotebookStore"
    code, report, _ = explain(
        capsys, tmp_path / "r", BACKUP / "document", "--target", buggy, "--emit-test", str(emitted)
    )
    assert code == 1
    first = report["first_match"]
    assert first["model"] == "process-crash" and "A1" in first["counted"]
    assert first["files"]["notebook.json"].startswith("empty")
    assert first["files"][".~notebook.json"].startswith("a complete generation")
    code, report, _ = explain(capsys, tmp_path / "f", BACKUP / "document", "--target", fixed)
    assert code == 0 and report["reachable"]
    assert "cells" in report["load"]["returned"]  # the previous value, from the backup
    assert run_emitted(emitted, None, monkeypatch)
    assert run_emitted(emitted, fixed, monkeypatch) == []


def test_document_complete_temporary_is_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = explain(
        capsys, tmp_path / "r", TEMP / "document", "--target", f"{JSONSTORE}:JsonStore"
    )
    assert code == 0
    first = report["first_match"]
    assert first["model"] == "process-crash" and first["counted"] == []
    old = json.loads((TEMP / "document" / "doc.json").read_text())
    assert report["load"]["returned"] == repr(old)[:200]  # the main, never the temporary


def test_the_session_comes_from_the_file_names_or_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from crashpoint.core import encode_bytes
    from crashpoint.scenarios.kinds.agent.catalogue import build_state, user

    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "chat_42.json").write_bytes(b"")
    (ev / "chat_42.json.bak").write_bytes(
        encode_bytes(build_state(user("hi"), session_id="chat 42"))
    )
    fast = ("--model", "power-loss", "--generated", "0")
    _, report, _ = explain(capsys, tmp_path / "r", ev, "--target", "reference", *fast)
    assert report["session"] == "chat 42"  # the id the files record
    assert report["load"]["returned"].startswith("state with 1 message")  # bak fallback
    assert {f["class"] for f in report["evidence"]["files"]} == {"empty", "complete"}
    code, report, _ = explain(
        capsys, tmp_path / "r2", ev, "--target", "seed", "--session", "chat 42", *fast
    )
    assert code == 1 and report["session"] == "chat 42"
    assert report["reachable"] and report["first_match"]["model"] == "power-loss"


def test_a_workload_named_is_searched_first_and_bad_input_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = ZERO / "agent-state"
    fast = ("--model", "power-loss", "--generated", "0")
    code, report, _ = explain(
        capsys, tmp_path / "r", ev, "--target", "seed", "--workload", "two-quick-saves", *fast
    )
    assert code == 1 and report["searched"]["workloads"][0] == "two-quick-saves"
    assert report["searched"]["workloads"].count("two-quick-saves") == 1
    for args in (
        ("--target", "nope"),
        ("--target", "seed", "--workload", "nosuch"),
        ("--target", "seed", "--kind", "document"),
        ("--target", "seed", "--model", "sometimes"),
        ("--target", "seed", "--model", "power-loss,,process-crash"),  # as explore
        ("--target", "seed", "--session", "../x"),
        ("--target", "seed", "--session", ""),
        ("--target", "seed", "--workload", "nosuch_module_xyz:fn"),
        ("--target", str(tmp_path / "missing.py") + ":f"),
    ):
        code, _, text = explain(capsys, tmp_path / "bad", ev, *args)
        assert code == 2 and text.startswith("crashpoint: error: ")
        assert len(text.strip().splitlines()) == 2 and "Traceback" not in text
        if "--workload" in args:  # the workload is named, not called the target
            first = text.splitlines()[0]
            assert "workload" in first and not first.startswith("crashpoint: error: target"), text


def test_a_read_path_finding_emits_a_test_that_rebuilds_the_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "s1.json").write_bytes(b'{"schemaVersion": 3, "sessionId": "s1", "hist')
    emitted = tmp_path / "test_read_path.py"
    code, report, _ = explain(
        capsys,
        tmp_path / "r",
        ev,
        "--target",
        "mutant:create-over-unreadable",
        "--model",
        "process-crash",
        "--generated",
        "0",
        "--emit-test",
        str(emitted),
    )
    assert code == 1 and [f["invariant"] for f in report["read_findings"]] == ["C1"]
    assert "FILES = " in emitted.read_text()
    assert run_emitted(emitted, None, monkeypatch) == ["test_load_of_the_evidence"]
    assert run_emitted(emitted, "reference", monkeypatch) == []
    assert (ev / "s1.json").read_bytes().endswith(b"hist")  # the evidence untouched


def test_a_users_state_storage_factory_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "mystore.py"
    module.write_text(
        "from crashpoint.core import FileStateStorage\n\n"
        "def unsynced(fs, base_dir):\n"
        "    return FileStateStorage(fs, base_dir, sync='none', strict=False)\n\n"
        "def synced(fs, base_dir):\n"
        "    return FileStateStorage(fs, base_dir)\n"
    )
    emitted = tmp_path / "test_mine.py"
    code, report, _ = explain(
        capsys,
        tmp_path / "r",
        ZERO / "agent-state",
        "--target",
        f"{module}:unsynced",
        "--kind",
        "state-storage",
        "--model",
        "power-loss",
        "--generated",
        "0",
        "--emit-test",
        str(emitted),
    )
    assert code == 1 and "R1" in report["first_match"]["counted"]
    assert run_emitted(emitted, None, monkeypatch)
    assert run_emitted(emitted, f"{module}:synced", monkeypatch) == []


def test_the_command_line_leaves_no_hypothesis_directory_in_the_working_directory(
    tmp_path: Path,
) -> None:
    # Generated workloads draw with hypothesis, which caches under ./.hypothesis; a real
    # `crashpoint explain` process must still write only into --out.
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    evidence = FIELD / "zero-length-main" / "agent-state"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "crashpoint", "explain", str(evidence), "--target", "seed"),
            *("--model", "power-loss", "--out", str(tmp_path / "out")),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_a_target_raising_systemexit_or_a_baseexception_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The target's SystemExit is not crashpoint's own exit: before, `explain` left with the
    # target's code and no word (7, 9), or a traceback for another BaseException.
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "doc.json").write_text('{"a": 1}', encoding="utf-8")
    target = tmp_path / "exits.py"
    target.write_text(
        "def exits(base_dir):\n    raise SystemExit(7)\n\n\n"
        "class LoadExits:\n    def __init__(self, base_dir):\n        pass\n\n"
        "    def save(self, value):\n        pass\n\n"
        "    def load(self):\n        raise SystemExit(9)\n\n\n"
        "def odd(base_dir):\n    raise BaseException('odd')\n",
        encoding="utf-8",
    )
    for name in ("exits", "LoadExits", "odd"):
        code, _, text = explain(
            capsys, tmp_path / "out", ev, "--target", f"{target}:{name}", "--kind", "document"
        )
        assert code == 2, name
        assert text.startswith("crashpoint: error: ") and "Traceback" not in text, name
