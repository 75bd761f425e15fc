"""The engine catalogue's classifier and drivers (issue 24, item 2), without running an
engine under crashpoint: each class on a finding made by hand, the documented line
quoted, the integrity checks caught on a deliberately broken store and passed on a good
one. Fast: runs by default."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field

import _codec
import classify
import engines_support
import pytest

DRIVE = os.path.join(engines_support.ENGINES, "drive.py")


@dataclass
class Found:
    """The fields of a Counterexample the classifier reads."""

    invariant: str
    got: str = "an older value"
    workload: str = "first-save"
    crash_point: int = 7
    operation: str = "fdatasync('/data/store/db.sqlite')"
    state_digest: str = "d"
    crash_state: dict[str, str] = field(default_factory=lambda: {"db.sqlite": "4096 bytes"})


def _one(engine: str, config: str, family: str, c: Found) -> classify.Classified:
    [got] = classify.classify(engine, config, family, [c], hypothetical=False)
    return got


def test_wal_normal_losing_its_last_commit_under_power_loss_is_a_documented_trade_off() -> None:
    f = _one("sqlite", "wal-normal", "ext4", Found("A2"))
    assert (f.cls, f.is_finding) == ("durability", True)
    assert f.trade_off is not None and "WAL mode" in f.trade_off[0]
    assert f.trade_off[1].startswith("https://www.sqlite.org/pragma.html")
    assert f.label == "documented trade-off (durability)"


def test_the_same_loss_under_full_or_a_process_crash_breaks_a_guarantee() -> None:
    assert _one("sqlite", "wal", "ext4", Found("A2")).trade_off is None
    assert _one("sqlite", "wal-normal", "process-crash", Found("A2")).trade_off is None
    assert _one("sqlite", "delete-off", "process-crash", Found("A1")).trade_off is None


def test_journal_off_is_documented_to_corrupt_even_on_a_process_crash() -> None:
    f = _one("sqlite", "journal-off", "process-crash", Found("A1"))
    assert f.cls == "atomicity" and f.trade_off is not None


def test_a_hot_journal_rolled_back_on_open_is_recovery_not_a_finding() -> None:
    state = {"db.sqlite": "8192 bytes", "db.sqlite-journal": "512 bytes"}
    f = _one(
        "sqlite", "delete", "process-crash", Found("A3", "None, and load wrote", crash_state=state)
    )
    assert (f.cls, f.is_finding, f.trade_off) == ("recovery", False, None)
    # the same state judged "returned the initial value while save#0's pages are on disk":
    # the journal's unlink is DELETE mode's commit point, it had not run
    g = _one("sqlite", "delete-off", "process-crash", Found("A3", "None", crash_state=state))
    assert g.cls == "recovery"


def test_a_load_that_writes_over_a_store_without_recovery_file_is_a_finding() -> None:
    state = {"Data.fs": "90 bytes: as save#0 wrote it"}
    f = _one("zodb", "filestorage", "process-crash", Found("A3", "load wrote", crash_state=state))
    assert f.cls == "atomicity" and f.is_finding


def test_a_load_opening_its_directory_is_not_judged() -> None:
    f = _one("sqlite", "wal", "process-crash", Found("A1", "raised IsADirectoryError: x"))
    assert (f.cls, f.is_finding) == ("unjudged", False)


def test_a_finding_only_the_reordering_family_reaches_is_ordering() -> None:
    ext4 = classify.classify("lmdb", "nometasync", "ext4", [Found("A2")], False)
    posix = classify.classify("lmdb", "nometasync", "posix", [Found("A2"), Found("A1")], False)
    marked = classify.mark_ordering(ext4 + posix)
    assert [(f.family, f.invariant, f.cls) for f in marked] == [
        ("ext4", "A2", "durability"),
        ("posix", "A2", "durability"),
        ("posix", "A1", "ordering"),
    ]


def test_summary_counts_hypothetical_findings_apart() -> None:
    found = classify.classify("sqlite", "wal", "ext4", [Found("A2")], True)
    found += classify.classify("sqlite", "wal", "ext4", [Found("A1")], False)
    assert classify.summary(found) == {"atomicity": 1, "hypothetical": 1}


# --- the drivers' own checks -------------------------------------------------------


def _drive(spec: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, DRIVE, spec, *args], capture_output=True, text=True, check=False
    )


def _save(tmp_path: object, spec: str, value: object) -> str:
    d = os.path.join(str(tmp_path), "s")
    os.makedirs(d, exist_ok=True)
    v = os.path.join(str(tmp_path), "v.json")
    with open(v, "w", encoding="utf-8") as f:
        json.dump(value, f)
    assert _drive(spec, "save", d, v).returncode == 0
    return d


def test_sqlite_driver_round_trips_and_its_integrity_check_catches_a_corrupt_page(
    tmp_path: object,
) -> None:
    value = {"k": "x" * 3000, "n": list(range(50))}
    d = _save(tmp_path, "sqlite:delete", value)
    good = _drive("sqlite:delete", "load", d)
    assert (good.returncode, json.loads(good.stdout)) == (0, value)
    with open(os.path.join(d, "db.sqlite"), "r+b") as f:  # a b-tree page's header
        f.seek(4096)
        f.write(b"\x0d\xff\xff\xff\xff\xff\xff\xff")
    bad = _drive("sqlite:delete", "load", d)
    assert bad.returncode == 3 and bad.stderr.startswith("integrity:")


def test_a_torn_transaction_is_exit_4_and_an_empty_directory_the_initial_value(
    tmp_path: object,
) -> None:
    empty = os.path.join(str(tmp_path), "e")
    os.mkdir(empty)
    assert _drive("sqlite:wal", "load", empty).stdout == "null"
    d = _save(tmp_path, "sqlite:delete", {"k": "y" * 600})
    con = sqlite3.connect(os.path.join(d, "db.sqlite"))
    con.execute("DELETE FROM kv WHERE k = '0001'")  # a chunk lost: a half-applied commit
    con.commit()
    con.close()
    assert _drive("sqlite:delete", "load", d).returncode == 4


def test_codec_refuses_records_no_save_wrote() -> None:
    recs = _codec.records({"a": "z" * 700})
    assert _codec.value(recs) == {"a": "z" * 700}
    del recs["0002"]
    with pytest.raises(ValueError, match="missing"):
        _codec.value(recs)
    with pytest.raises(ValueError, match="header"):
        _codec.value({"0000": b"{}"})
    assert _codec.value({}) is None


def test_an_unknown_configuration_is_named() -> None:
    out = _drive("sqlite:nope", "load", "/nonexistent")
    assert out.returncode != 0 and "no configuration 'nope'" in out.stderr


def test_a_finding_that_is_no_trade_off_names_the_guarantee_it_breaks() -> None:
    f = _one("sqlite", "delete", "process-crash", Found("A1"))
    assert f.trade_off is None and f.breaks is not None
    assert "application crashes" in f.breaks[0]
    assert _one("sqlite", "wal-normal", "ext4", Found("A2")).breaks is None


def test_an_lmdb_a2_is_a_durability_loss_now_that_o_dsync_is_replayed() -> None:
    assert _one("lmdb", "default", "ext4", Found("A2")).cls == "durability"
    assert _one("lmdb", "nometasync", "ext4", Found("A2")).cls == "durability"


def test_an_a3_on_a_state_without_the_engines_data_file_is_not_judged() -> None:
    state = {"db/rocksdict-config.json": "40 bytes: as save#0 wrote it"}
    assert _one("rocksdb", "wal", "process-crash", Found("A3", crash_state=state)).cls == "unjudged"
    state["db/CURRENT"] = "16 bytes"
    assert (
        _one("rocksdb", "wal", "process-crash", Found("A3", crash_state=state)).cls == "atomicity"
    )


def test_a_repositorys_a3_counted_from_its_work_tree_is_not_judged() -> None:
    state = {".git/HEAD": "21 bytes", "r/0000": "120 bytes: as save#0 wrote it"}
    assert _one("git", "default", "process-crash", Found("A3", crash_state=state)).cls == "unjudged"
    assert (
        _one("git", "default", "process-crash", Found("A1", crash_state=state)).cls == "atomicity"
    )


def test_a_state_only_the_looser_family_leaves_is_the_models_own() -> None:
    # ZODB under ext4: Data.fs at its first write's size with zeros (FileStorageFormatError),
    # which ext4's delayed allocation does not leave (cut for real: 0 bytes every time)
    got = "raised LoadExit: exit status 3: integrity: FileStorage: FileStorageFormatError: x"
    f = _one("zodb", "filestorage", "ext4", Found("A1", got=got, crash_state={"Data.fs": "4"}))
    assert (f.cls, f.is_finding, f.trade_off, f.breaks) == ("model", False, None, None)
    assert classify.summary([f]) == {"model": 1}
    # posix promises nothing of the kind: there it is a finding; so is ZODB's real one
    assert _one("zodb", "filestorage", "posix", Found("A1", got=got)).cls == "atomicity"
    real = "raised LoadExit: exit status 1: ZODB.POSException.ReadConflictError: load 0x00"
    assert _one("zodb", "filestorage", "ext4", Found("A1", got=real)).is_finding
