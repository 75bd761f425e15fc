"""Evidence input for ``crashpoint explain`` (issue 12, acceptance 2 and 4): directories,
archives and manifests; unsafe archives refused with exit 2; nothing written to the
evidence or outside a temporary directory."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from crashpoint._cli import main
from crashpoint.scenarios.explain.evidence import EvidenceError, load_evidence

ROOT = Path(__file__).resolve().parents[2]
ZERO_MAIN = ROOT / "examples" / "field-reports" / "zero-length-main" / "agent-state"


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["explain", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def tar_with(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            payload = data.get(m.name)
            if payload is not None:
                m.size = len(payload)
                tar.addfile(m, io.BytesIO(payload))
            else:
                tar.addfile(m)
    return path


def test_a_directory_is_read_with_each_file_classed(tmp_path: Path) -> None:
    (tmp_path / "s1.json").write_bytes(b"")
    (tmp_path / "s1.json.bak").write_bytes(b"\0" * 4096)
    ev = load_evidence(str(tmp_path))
    assert ev.form == "directory"
    assert set(ev.files) == {"s1.json", "s1.json.bak"}
    assert ev.files["s1.json"].empty and not ev.files["s1.json"].zero_filled
    assert ev.files["s1.json.bak"].zero_filled
    assert ev.files["s1.json.bak"].sha256 == hashlib.sha256(b"\0" * 4096).hexdigest()


def test_a_tar_gz_of_one_directory_strips_its_name(tmp_path: Path) -> None:
    src = tmp_path / "device" / "sessions"
    src.mkdir(parents=True)
    (src / "s1.json").write_bytes(b"")
    archive = tmp_path / "report.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="sessions")
    ev = load_evidence(str(archive))
    assert ev.form == "tar" and list(ev.files) == ["s1.json"]


def test_a_zip_is_read(tmp_path: Path) -> None:
    archive = tmp_path / "report.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("app/s1.json", b"")
        zf.writestr("app/s1.json.tmp", b"{}")
    ev = load_evidence(str(archive))
    assert ev.form == "zip" and set(ev.files) == {"s1.json", "s1.json.tmp"}


@pytest.mark.parametrize(
    ("name", "kind", "link"),
    [
        ("../escaped.json", tarfile.REGTYPE, ""),
        ("a/../../escaped.json", tarfile.REGTYPE, ""),
        ("/tmp/escaped-absolute.json", tarfile.REGTYPE, ""),
        ("out", tarfile.SYMTYPE, "/etc/passwd"),
        ("out", tarfile.SYMTYPE, "../../outside"),
        ("hard", tarfile.LNKTYPE, "../outside"),
    ],
)
def test_unsafe_tar_members_are_refused_with_exit_2_and_nothing_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    kind: bytes,
    link: str,
) -> None:
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = link
    ok = tarfile.TarInfo("s1.json")
    archive = tar_with(tmp_path / "evil.tar.gz", [ok, member], {"s1.json": b"", name: b"pwned"})
    before = snapshot(tmp_path)
    code, out, err = run(capsys, str(archive), "--target", "reference", "--out", "rep")
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0].startswith("crashpoint: error: archive") and len(lines) == 2
    assert "Traceback" not in err and out == ""
    assert snapshot(tmp_path) == before  # no report, no extracted member, anywhere
    assert not (tmp_path / "escaped.json").exists()
    assert not Path("/tmp/escaped-absolute.json").exists()


@pytest.mark.parametrize("name", ["../escaped.json", "/abs/escaped.json", "a/../../b.json"])
def test_unsafe_zip_members_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("s1.json", b"")
        zf.writestr(zipfile.ZipInfo(name), b"pwned")
    before = snapshot(tmp_path)
    code, _, err = run(capsys, str(archive), "--target", "seed", "--out", str(tmp_path / "r"))
    assert code == 2 and "archive" in err
    assert snapshot(tmp_path) == before


def test_a_zip_symlink_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    info = zipfile.ZipInfo("s1.json")
    info.external_attr = (0o120777) << 16
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(EvidenceError, match="link"):
        load_evidence(str(archive))


def test_a_directory_symlink_leaving_the_evidence_is_refused(tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "s1.json").write_bytes(b"")
    os.symlink("/etc/hostname", ev / "s1.json.bak")
    with pytest.raises(EvidenceError, match="leaving"):
        load_evidence(str(ev))


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"files": [{"name": "s1.json"}]}),
        json.dumps({"files": [{"name": "s1.json", "size": -1}]}),
        json.dumps({"files": [{"name": "s1.json", "size": 3, "empty": "yes"}]}),
        json.dumps({"files": [{"name": "../x", "size": 0}]}),
        json.dumps({"files": [{"name": "s1.json", "size": 3, "parses": "maybe"}]}),
    ],
)
def test_a_manifest_that_does_not_parse_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(text)
    code, _, err = run(capsys, str(manifest), "--target", "seed", "--out", str(tmp_path / "r"))
    assert code == 2
    assert err.startswith("crashpoint: error: manifest") and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_unreadable_archive_and_missing_path_are_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "broken.tar.gz"
    bad.write_bytes(b"not a tar at all")
    assert run(capsys, str(bad), "--target", "seed", "--out", str(tmp_path / "r"))[0] == 2
    assert run(capsys, str(tmp_path / "nope"), "--target", "seed")[0] == 2
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    code, _, err = run(capsys, str(empty), "--target", "seed", "--out", str(tmp_path / "r"))
    assert code == 2 and "no file" in err


def test_the_evidence_is_never_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """load_or_create and load run on a copy: the evidence directory is byte- and
    mtime-identical afterwards, and --out inside it is refused."""
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "s1.json").write_bytes(b"")
    (ev / "s1.json.bak").write_bytes(b"garbage{")
    before = snapshot(ev)
    code, _, _ = run(capsys, str(ev), "--target", "seed", "--out", str(tmp_path / "r"))
    assert code in (0, 1)
    assert snapshot(ev) == before
    code, _, err = run(capsys, str(ev), "--target", "seed", "--out", str(ev / "r"))
    assert code == 2 and "inside the evidence" in err
    assert snapshot(ev) == before


@pytest.mark.parametrize(
    ("data", "klass"),
    [
        (b"", "empty"),
        (b"\0" * 100, "zero-filled"),
        (b'{"a": 1}', "complete"),
        (b'{"a": 1}tail of an older, longer value"}}', "merged"),
        (b'{"a": 1}' + b"\0" * 50, "unreadable"),  # a zero-filled tail is torn, not merged
        (b'{"a": ', "unreadable"),
    ],
)
def test_file_classes(tmp_path: Path, data: bytes, klass: str) -> None:
    (tmp_path / "doc.json").write_bytes(data)
    f = load_evidence(str(tmp_path)).files["doc.json"]

    def parses(b: bytes) -> bool:
        try:
            json.loads(b)
        except ValueError:
            return False
        return True

    assert f.klass(parses) == klass
