"""``verify --volatile GLOB`` (issue 24, the SQLite WAL row): a file the user declares
volatile, content the program rebuilds after a crash and never trusts. A shared writable
``mmap`` of it is not unsupported; every crash state holds deterministic garbage in its
place, so a program that reads it back as data is caught (``mapped_store.py``); a mapping
of an undeclared file keeps the verdict incomplete. The replay, materialization and usage
tests need no strace; the stores run under strace (marker ``exec``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from crashpoint._cli import main
from crashpoint.faultfs import CrashState, MemoryFileSystem, RecordingFileSystem, parse_models
from crashpoint.faultfs._strace import StraceReplay, Syscall, strace_available, volatile_match
from crashpoint.scenarios.jobs.exec import materialize, verify_exec, volatile_garbage

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(HERE, "mapped_store.py")
JSON = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "stores", "jsonstore.py")
MAPPING = "mmap (a shared writable mapping of /data/store/index.map)"


def _verify(
    mode: str, volatile: tuple[str, ...] = (), workloads: tuple[str, ...] = ("first-save", "resize")
) -> tuple[object, object]:
    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)
    cmd = f"{sys.executable} {STORE} {mode}"
    return verify_exec(
        f"{cmd} save {{dir}} {{value}}",
        f"{cmd} load {{dir}}",
        models=parse_models("process-crash"),
        workloads=list(workloads),
        jobs=2,
        shrink=False,
        volatile=volatile,
    )


def _unsupported(result: object) -> list[str]:
    return list(dict.fromkeys(u for r in result.results for u in r.unsupported))  # type: ignore[attr-defined]


def _violations(result: object) -> list[object]:
    return [c for r in result.results for c in r.counterexamples]  # type: ignore[attr-defined]


# --- the store under strace -------------------------------------------------------------


@pytest.mark.exec
def test_a_shared_writable_mmap_of_a_volatile_file_is_not_unsupported() -> None:
    result, facts = _verify("rebuilding", ("index.map",))
    assert _unsupported(result) == []
    assert _violations(result) == []  # it never trusts index.map: garbage changes nothing
    assert facts.volatile_mapped == ["/data/store/index.map"]  # type: ignore[attr-defined]
    assert facts.as_dict()["volatile"]["globs"] == ["index.map"]  # type: ignore[attr-defined]
    assert sum(r.distinct_states for r in result.results) > 0  # type: ignore[attr-defined]


@pytest.mark.exec
def test_a_mapping_of_an_undeclared_file_stays_incomplete() -> None:
    result, facts = _verify("rebuilding")
    assert MAPPING in _unsupported(result)
    assert "volatile" not in facts.as_dict()  # type: ignore[attr-defined]
    # a glob matching another file declares nothing about index.map
    other, _ = _verify("rebuilding", ("*.shm",))
    assert MAPPING in _unsupported(other)


@pytest.mark.exec
def test_a_store_reading_a_volatile_file_back_as_data_is_caught() -> None:
    # index.map holds the value's very bytes (pwrite): with its model content the load
    # would pass; declared volatile, every crash state holds garbage there and the load
    # that trusts it fails on a state its own saves produced (A1). (first-save only: its
    # value is under a page, so no killed pwrite tears index.map, which resize's does, a
    # finding of its own the store would have without any mapping.)
    result, _ = _verify("trusting", ("index.map",), ("first-save",))
    assert _unsupported(result) == []
    found = _violations(result)
    assert found, "a load reading a volatile file back as data was not caught"
    assert {c.invariant for c in found} >= {"A1"}  # type: ignore[attr-defined]
    assert all("index.map" in c.crash_state for c in found if c.invariant == "A1")  # type: ignore[attr-defined]
    # undeclared, the same store passes on the model's bytes: the garbage is what catches
    # it, and the verdict says it is incomplete (the mapping is named)
    bare, _ = _verify("trusting", (), ("first-save",))
    assert _violations(bare) == [] and MAPPING in _unsupported(bare)


@pytest.mark.exec
def test_verify_exec_volatile_on_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)
    cmd = f"{sys.executable} {STORE} rebuilding"
    out = tmp_path / "o"
    args = ["--exec", "--save", f"{cmd} save {{dir}} {{value}}", "--load", f"{cmd} load {{dir}}"]
    args += ["--workload", "first-save", "--jobs", "2", "--out", str(out)]
    code = main(["verify", *args, "--volatile", "index.map", "--volatile", "index.map"])
    text = capsys.readouterr().out
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert (code, rep["verdict"]) == (0, "clean"), rep.get("unsupported")
    assert rep["exec"]["volatile"]["globs"] == ["index.map"]  # given twice, kept once
    assert rep["exec"]["volatile"]["mapped"] == ["/data/store/index.map"]
    assert "volatile (garbage in every crash state): index.map" in text
    bare = main(["verify", *args[:-1], str(tmp_path / "p")])  # undeclared: incomplete, exit 1
    capsys.readouterr()
    assert bare == 1
    assert json.loads((tmp_path / "p" / "report.json").read_text())["verdict"] == "incomplete"


# --- no strace needed -----------------------------------------------------------------


def test_the_replay_takes_a_mapping_of_a_volatile_file_and_names_an_undeclared_one() -> None:
    def replayed(volatile: tuple[str, ...]) -> StraceReplay:
        fs = RecordingFileSystem(MemoryFileSystem(CrashState((), ("/", "/m"))))
        rep = StraceReplay(fs, "/real", "/m", cwd="/", volatile=volatile)
        rep.feed(
            [
                Syscall(7, "mmap", "NULL, 32768, 0x3, 0x1, 3</real/db-shm>, 0", 1),
                Syscall(7, "mmap", "NULL, 4096, 0x1, 0x1, 4</real/db>, 0", 1),  # read-only
                Syscall(7, "msync", "0x7f00, 32768, 0x4", 0),
            ]
        )
        return rep

    declared = replayed(("*-shm",))
    assert (declared.unsupported, declared.volatile_mapped) == ([], ["/m/db-shm"])
    assert declared.mapped == ["/m/db-shm"]
    bare = replayed(())
    assert bare.unsupported == ["mmap (a shared writable mapping of /m/db-shm)", "msync"]
    assert bare.volatile_mapped == []


def test_a_volatile_file_is_materialized_as_garbage(tmp_path: Path) -> None:
    shm, data = b"\0" * 32768, b'{"k": 1}'
    state = CrashState(
        (("/data/store/data.json", data), ("/data/store/db-shm", shm)), ("/data/store",)
    )
    root = tmp_path / "a"
    materialize(state, "/data/store", str(root), ("db-shm",))
    got = (root / "db-shm").read_bytes()
    assert len(got) == len(shm) and got != shm  # the model's size, not its content
    assert got == volatile_garbage("/data/store/db-shm", state.digest(), len(shm))
    assert (root / "data.json").read_bytes() == data  # undeclared files keep their bytes
    again = tmp_path / "b"  # deterministic: the same state gives the same bytes
    materialize(state, "/data/store", str(again), ("db-shm",))
    assert (again / "db-shm").read_bytes() == got
    other = CrashState((("/data/store/db-shm", shm),), ("/data/store",))  # another state
    assert volatile_garbage("/data/store/db-shm", other.digest(), len(shm)) != got
    plain = tmp_path / "c"
    materialize(state, "/data/store", str(plain))  # without --volatile: the model's bytes
    assert (plain / "db-shm").read_bytes() == shm
    assert volatile_garbage("/data/store/db-shm", state.digest(), 0) == b""
    assert volatile_match(("*.shm", "db-shm"), "db-shm")
    assert not volatile_match(("*.shm",), "db-shm")


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ([f"{JSON}:JsonStore", "--volatile", "x"], "--exec and --runner"),
        (
            ["--exec", "node s.js {dir}", "--kind", "state-storage", "--volatile", "x"],
            "document kind only",
        ),
        (["--exec", "--save", "a {dir} {value}", "--load", "a {dir}", "--volatile", "/x"], "/x"),
        (["--exec", "--save", "a {dir} {value}", "--load", "a {dir}", "--volatile", "../x"], ".."),
    ],
)
def test_volatile_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], why: str
) -> None:
    code = main(["verify", *args, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert "--volatile" in err and why in err
    assert not (tmp_path / "o" / "report.json").exists()
