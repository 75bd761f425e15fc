"""CI's subset of the engine catalogue (issue 24, acceptance 1): SQLite DELETE (under
process-crash, ext4 and posix) and WAL (process-crash), and LMDB's default configuration
(process-crash and ext4), findings pinned by invariant, class,
documented-or-not and crash point (``engines_support.pins``). Marker ``engines``."""

from __future__ import annotations

import engines_support as es
import pytest

pytestmark = pytest.mark.engines

# (spec, family) -> pinned findings, filled from runs on this machine (first-save
# workload, seed 0). Why each is real is said beside it; the classes are classify.py's.
EXPECTED: dict[tuple[str, str], set[tuple[str, str, str, int]]] = {
    # DELETE, synchronous=FULL (Python's default). Under a process crash every A3 is the
    # hot journal rolled back on open (recovery, not a finding): clean.
    ("sqlite:delete", "process-crash"): set(),
    # After the run completed, a power loss may undo the journal's unlink (pager.c
    # pager_end_transaction -> sqlite3OsDelete(..., extraSync): os_unix.c unixDelete fsyncs
    # the directory only under synchronous=EXTRA); the journal is hot again on open and
    # the last commit is rolled back. Documented: "EXTRA provides additional durability if
    # the commit is followed closely by a power loss."
    ("sqlite:delete", "ext4"): {("A2", "durability", "documented", 32)},
    # the same under posix (the reordering family reaches nothing more).
    ("sqlite:delete", "posix"): {("A2", "durability", "documented", 32)},
    # WAL, synchronous=FULL: clean under a process crash, and complete: the -shm wal-index,
    # a shared writable mapping the replay cannot follow, is declared volatile
    # (sqlite_engine.volatile, docs/models.md "SQLite's -shm"): every crash state holds
    # garbage there, and SQLite's first connection truncates it (os_unix.c
    # unixLockSharedMemory) and rebuilds it from the WAL (wal.c walIndexReadHdr ->
    # walIndexRecover), so no load trusted what the mapping held.
    ("sqlite:wal", "process-crash"): set(),
    # LMDB 0.9 (py-lmdb's bundled liblmdb): mdb_env_init_meta writes both meta pages of a
    # new environment in one 8192-byte pwrite; a crash that tears it (Linux stops a killed
    # writer between pages) leaves meta 1 zeroed, and mdb_env_read_header refuses the file
    # (MDB_INVALID) for ever: the environment's creation is not crash-atomic. Before any
    # commit, so nothing committed is lost, but the store never opens again.
    ("lmdb:default", "process-crash"): {("A1", "atomicity", "bug", 1)},
    # Under ext4: clean. The states that showed the tear (data.mdb at the 8 KiB write's size,
    # zero-filled) are the family's "size advanced, data not written" form of a new file's
    # first write, which ext4's delayed allocation does not leave and real cuts never
    # showed: classified ``model`` (classify.MODEL_GAPS), never a finding. An empty
    # data.mdb is no environment yet (lmdb_engine.load: a writable open makes a new one).
    ("lmdb:default", "ext4"): set(),
}

INCOMPLETE: dict[str, list[str]] = {}
"""Configurations whose verdict names calls the replay could not model (none now)."""

VOLATILE = {"sqlite:wal": ["/data/store/db.sqlite-shm"]}
"""The volatile files each configuration's run mapped shared and writable: the verdict is
complete because they were declared, not because the mapping went unseen."""


@pytest.mark.parametrize(("spec", "family"), sorted(EXPECTED))
def test_engine_findings_are_pinned(spec: str, family: str) -> None:
    es.need("lmdb" if spec.startswith("lmdb") else None)
    r = es.run(spec, family)
    assert r.incomplete == INCOMPLETE.get(spec, [])
    assert r.volatile == VOLATILE.get(spec, [])
    assert es.pins(r) == EXPECTED[(spec, family)]
    for f in r.findings:  # every finding backed: a documented line, or the guarantee broken
        assert f.trade_off is not None or f.breaks is not None
