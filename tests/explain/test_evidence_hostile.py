"""Hostile and odd evidence for ``crashpoint explain`` (issue 22, explain): corrupt
archives, a CRC failure, nesting past Python's recursion limit, declared sizes no input
may reach, names that are not UTF-8 or hold escape sequences, a manifest naming a file
twice, and a session chosen whatever ``PYTHONHASHSEED`` is. Each bad input is one line
that blames the evidence (exit 2), never ``target ... raised``."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import subprocess
import sys
import tarfile
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
from crashpoint._cli import main
from crashpoint.faultfs import PROCESS_CRASH


def run(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> tuple[int, str, str]:
    code = main(["explain", *args, "--target", "reference", "--out", str(out), "--generated", "0"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def blames_the_evidence(code: int, err: str, *words: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("crashpoint: error:")]
    assert code == 2 and len(lines) == 1, err
    assert "raised" not in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]


def tar_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_corrupt_deflate_data_in_a_zip_blames_the_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bytes(range(256)) * 64
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("s1.json", data)
    raw = bytearray(buf.getvalue())
    start = raw.index(b"s1.json") + len("s1.json")
    raw[start : start + 8] = b"\xff" * 8  # the deflate stream's first bytes
    archive = tmp_path / "report.zip"
    archive.write_bytes(bytes(raw))
    with zipfile.ZipFile(archive) as zf, pytest.raises(zlib.error):
        zf.read("s1.json")  # the precondition: deflate itself fails, not the CRC
    code, _, err = run(capsys, tmp_path / "out", str(archive))
    blames_the_evidence(code, err, "report.zip", "cannot be read")


def test_corrupt_xz_data_blames_the_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = bytearray(lzma.compress(tar_bytes({"s1.json": os.urandom(200_000)})))
    packed[len(packed) // 2 : len(packed) // 2 + 16] = b"\0" * 16
    archive = tmp_path / "report.tar.xz"
    archive.write_bytes(bytes(packed))
    code, _, err = run(capsys, tmp_path / "out", str(archive))
    blames_the_evidence(code, err, "report.tar.xz", "cannot be read")


def test_a_gzip_crc_failure_is_an_error_not_analysed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = bytearray(gzip.compress(tar_bytes({"s1.json": b""})))
    packed[-8] ^= 0xFF  # the CRC-32 of the trailer
    archive = tmp_path / "report.tar.gz"
    archive.write_bytes(bytes(packed))
    code, out, err = run(capsys, tmp_path / "out", str(archive))
    blames_the_evidence(code, err, "report.tar.gz", "CRC")
    assert not (tmp_path / "out").exists() and "reports:" not in out


def test_json_nested_100k_deep_blames_the_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "s1.json").write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run(capsys, tmp_path / "out", str(ev))
    blames_the_evidence(code, err, "s1.json", "deeper")
    manifest = tmp_path / "m.json"
    manifest.write_text('{"files": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = run(capsys, tmp_path / "out", str(manifest))
    blames_the_evidence(code, err, "m.json", "deeper")


def test_a_directory_1200_deep_blames_the_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    try:
        fd = os.open(ev, os.O_RDONLY)
        for _ in range(1200):  # (a path this long is past PATH_MAX: built by descriptors)
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("s1.json", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        os.close(fd)
        code, _, err = run(capsys, tmp_path / "out", str(ev))
    finally:  # (pytest's shutil.rmtree of tmp_path would recurse past the limit)
        subprocess.run(["rm", "-rf", str(ev)], check=True)
    blames_the_evidence(code, err, "deeper than")


def test_sizes_of_10_to_the_30_blame_the_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"files": [{"name": "s1.json", "size": 10**30}]}))
    code, _, err = run(capsys, tmp_path / "out", str(manifest))
    blames_the_evidence(code, err, "m.json", "declares more than")


def test_every_input_has_the_cap_and_declared_bytes_are_never_materialised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "big.json"  # 51 bytes declaring 200 MB
    big.write_text('{"files":[{"name":"s1.json","size":200000000}]}')
    tracemalloc.start()
    try:  # through the CLI: one line blaming the evidence, and no 200 MB in memory
        code = main(["explain", str(big), "--target", "reference", "--out", str(tmp_path / "o")])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2 and peak < 50_000_000, (code, peak)

    from crashpoint.scenarios.explain.evidence import MAX_BYTES, EvidenceError, load_evidence
    from crashpoint.scenarios.explain.search import emit_test, explain

    with pytest.raises(EvidenceError, match="declares more than"):
        load_evidence(str(big))
    below = tmp_path / "below.json"  # under the cap: matched by shape, loaded by a stand-in
    below.write_text(json.dumps({"files": [{"name": "s1.json", "size": MAX_BYTES - 1}]}))
    tracemalloc.start()
    try:
        ex = explain(load_evidence(str(below)), target="reference", models=[PROCESS_CRASH], bound=0)
        test = emit_test(ex)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ex.signature == {"s1.json": "unreadable"}
    assert peak < MAX_BYTES // 4, peak  # the declared 64 MiB never existed in memory
    assert len(test) < 100_000


def test_a_manifest_listing_one_file_twice_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.json"
    entry = {"name": "s1.json", "size": 0}
    manifest.write_text(json.dumps({"files": [entry, entry]}))
    code, _, err = run(capsys, tmp_path / "out", str(manifest))
    blames_the_evidence(code, err, "listed twice")


def test_a_name_that_is_not_utf8_is_reported_and_leaves_no_debris(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "s1.json").write_bytes(b"")
    with open(os.path.join(os.fsencode(ev), b"notes\xff.txt"), "wb") as f:
        f.write(b"x")
    out = tmp_path / "out"
    code, _, err = run(capsys, out, str(ev))
    assert code in (0, 1), err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert "notes\\xff.txt" in [f["name"] for f in report["evidence"]["files"]]
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]


def test_escape_sequences_in_names_never_reach_the_terminal_raw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    (ev / "\x1b[31mred.json").write_bytes(b"")
    (ev / "\x1b]0;title\x07s2.json").write_bytes(b"{}")
    code, out, err = run(capsys, tmp_path / "out", str(ev))
    assert code in (0, 1), err
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "\\x1b" in out  # shown, escaped
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "\x1b" not in md and "\\x1b[31mred.json" in md


SESSION_OF = """
import json, os, sys
from crashpoint._cli import main
out = os.path.join(sys.argv[2], "out-" + os.environ["PYTHONHASHSEED"])
main(["explain", sys.argv[1], "--target", "reference", "--out", out, "--generated", "0"])
with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
    print(json.load(f)["session"])
"""


def test_the_session_chosen_never_depends_on_pythonhashseed(tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    ev.mkdir()
    for stem in ("alpha", "beta", "gamma", "delta"):  # a tie: one file each
        (ev / f"{stem}.json").write_bytes(b"")
    chosen = set()
    for seed in (0, 1, 2):  # (fixed seeds: the old set order differed among these)
        done = subprocess.run(
            [sys.executable, "-c", SESSION_OF, str(ev), str(tmp_path)],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        )
        chosen.add(done.stdout.strip().splitlines()[-1])
    assert chosen == {"alpha"}, chosen
