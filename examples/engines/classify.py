"""Each finding on an engine of the catalogue, classified as the engine's maintainers read
it (issue 24, item 2).

A finding (a :class:`~crashpoint.scenarios.engine.explore.Counterexample` of the document
kind, SPEC.md §10) becomes a :class:`Classified`:

- ``atomicity``: a transaction half-applied (A1: load returned a mix or nothing a save
  wrote) or the engine's own integrity check failing (the driver's exit 3);
- ``durability``: a committed transaction lost, the store still consistent (A2);
- ``ordering``: a finding only the reordering family (``posix``: FAULT-MODEL.md, the
  persistence of two operations swapped) reaches, absent under ``ext4`` for the same
  engine, configuration, workload and invariant (:func:`mark_ordering`);
- ``recovery``: an A3 on a state holding the engine's recovery file (a hot rollback
  journal, a WAL, a log): the crash came before the engine's commit point (DELETE mode
  commits by unlinking the journal), and the load rolled the uncommitted transaction
  back, writing or not: the engine's recovery on open, not a finding (SPEC.md §10, A3 as a rule on
  states; kept only until that rule is in the engine, then such findings no longer
  appear).
- ``model``: a state the family offers that the file system it models does not leave, cut
  for real and never reproduced (:data:`MODEL_GAPS`): the model's own, listed apart.

``trade_off`` carries the engine's documentation line (and its source) when the engine
documents that this configuration may lose or corrupt what the finding shows under that
family: the finding is then a *documented trade-off* of its class (``synchronous=NORMAL``
in WAL mode losing its last commit under power loss), not a bug. Hypothetical findings
(the model's device options, FAULT-MODEL.md §3) are classified the same way and listed
apart (``hypothetical=True``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

POWER_LOSS = ("ext4", "xfs", "btrfs", "posix")
"""The families that lose the page cache (every one but ``process-crash``)."""

SQLITE_PRAGMA = "https://www.sqlite.org/pragma.html"

# (engine, config or "*", classes, families): (quoted line, its source). A finding of one
# of ``classes`` under one of ``families`` is documented by that line.
_DOCUMENTED: list[tuple[str, str, tuple[str, ...], tuple[str, ...], str, str]] = [
    (
        # git's default core.fsync hardens packs and their metadata only: loose objects, the
        # index and refs are written to a lock file and renamed into place unsynced, so a
        # power cut can leave the new branch ref or the index empty or zero-filled (the
        # branch unreadable, "index file corrupt"), or the whole commit gone.
        "git",
        "*",
        ("atomicity", "durability"),
        POWER_LOSS,
        "The default on most platforms is equivalent to `core.fsync=committed,-loose-object`, "
        "which has good performance, but risks losing recent work in the event of an unclean "
        "system shutdown. [...] Items that are not hardened may be lost in the event of an "
        "unclean system shutdown.",
        "https://git-scm.com/docs/git-config#Documentation/git-config.txt-corefsync",
    ),
    (
        # pager.c, pager_end_transaction: the DELETE branch calls
        # sqlite3OsDelete(pVfs, zJournal, pPager->extraSync), and os_unix.c's unixDelete
        # fsyncs the directory only when that flag is set (synchronous=EXTRA): under FULL
        # the journal's unlink may not survive a power loss, and the journal found again
        # on open is hot: the last commit is rolled back. SQLite documents it:
        "sqlite",
        "delete",
        ("durability",),
        POWER_LOSS,
        "EXTRA synchronous is like FULL with the addition that the directory containing a "
        "rollback journal is synced after that journal is unlinked to commit a transaction "
        "in DELETE mode. EXTRA provides additional durability if the commit is followed "
        "closely by a power loss.",
        SQLITE_PRAGMA + "#pragma_synchronous",
    ),
    (
        "sqlite",
        "wal-normal",
        ("durability",),
        POWER_LOSS,
        "A transaction committed in WAL mode with synchronous=NORMAL might roll back "
        "following a power loss or system crash.",
        SQLITE_PRAGMA + "#pragma_synchronous",
    ),
    (
        "sqlite",
        "delete-normal",
        ("durability", "atomicity"),
        POWER_LOSS,
        "There is a very small chance that a power failure at the wrong time could corrupt "
        "the database in journal_mode=DELETE on an older filesystem.",
        SQLITE_PRAGMA + "#pragma_synchronous",
    ),
    (
        "sqlite",
        "delete-off",
        ("durability", "atomicity", "ordering"),
        POWER_LOSS,
        "If the application running SQLite crashes, the data will be safe, but the database "
        "might become corrupted if the operating system crashes or the computer loses power "
        "before that data has been written to the disk surface.",
        SQLITE_PRAGMA + "#pragma_synchronous",
    ),
    (
        "sqlite",
        "journal-off",
        ("atomicity", "durability"),
        ("process-crash", *POWER_LOSS),
        "The OFF journaling mode disables the atomic commit and rollback capabilities of "
        "SQLite. [...] If the application crashes in the middle of a transaction when the "
        "OFF journaling mode is set, then the database file will very likely go corrupt.",
        SQLITE_PRAGMA + "#pragma_journal_mode",
    ),
    (
        "sqlite",
        "journal-memory",
        ("atomicity", "durability"),
        ("process-crash", *POWER_LOSS),
        "The MEMORY journaling mode stores the rollback journal in volatile RAM. [...] If the "
        "application using SQLite crashes in the middle of a transaction when the MEMORY "
        "journaling mode is set, then the database file will very likely go corrupt.",
        SQLITE_PRAGMA + "#pragma_journal_mode",
    ),
    (
        "lmdb",
        "nosync",
        ("durability", "atomicity", "ordering"),
        POWER_LOSS,
        "MDB_NOSYNC: a system crash can corrupt the database or lose the last transactions "
        "if buffers are not yet flushed to disk.",
        "http://www.lmdb.tech/doc/group__mdb.html (mdb_env_open, MDB_NOSYNC)",
    ),
    (
        "lmdb",
        "nometasync",
        ("durability",),
        POWER_LOSS,
        "MDB_NOMETASYNC: this optimization maintains database integrity, but a system crash "
        "may undo the last committed transaction.",
        "http://www.lmdb.tech/doc/group__mdb.html (mdb_env_open, MDB_NOMETASYNC)",
    ),
    (
        "leveldb",
        "nosync",
        ("durability",),
        POWER_LOSS,
        "If this flag is false, and the machine crashes, some recent writes may be lost.",
        "https://github.com/google/leveldb/blob/main/include/leveldb/options.h"
        " (WriteOptions::sync)",
    ),
    (
        "rocksdb",
        "nowal",
        ("durability",),
        ("process-crash", *POWER_LOSS),
        "If true, writes will not first go to the write ahead log, and the write may get "
        "lost after a crash.",
        "https://github.com/facebook/rocksdb/blob/main/include/rocksdb/options.h"
        " (WriteOptions::disableWAL)",
    ),
]

# The guarantee a finding without a trade-off breaks: (engine, families) -> (line, source).
# SQLite's lines are quoted from its pragma page; a line marked "(paraphrased)" states the
# engine's documented promise in our words (its page named), not yet checked word for word.
_GUARANTEES: list[tuple[str, tuple[str, ...], str, str]] = [
    (
        "sqlite",
        ("process-crash",),
        "Transactions are durable across application crashes regardless of the synchronous "
        "setting or journal mode.",
        SQLITE_PRAGMA + "#pragma_synchronous",
    ),
    (
        "sqlite",
        POWER_LOSS,
        "When synchronous is FULL (2), the SQLite database engine will use the xSync method of "
        "the VFS to ensure that all content is safely written to the disk surface prior to "
        "continuing. This ensures that an operating system crash or power failure will not "
        "corrupt the database.",
        SQLITE_PRAGMA + "#pragma_synchronous",
    ),
    (
        "lmdb",
        ("process-crash", *POWER_LOSS),
        "(paraphrased) "
        "LMDB is fully transactional with full ACID semantics; [...] it is crash-proof: no "
        "recovery procedure is needed after a system crash.",
        "http://www.lmdb.tech/doc/ (Introduction)",
    ),
    (
        "leveldb",
        ("process-crash", *POWER_LOSS),
        "(paraphrased) "
        "A DB write with sync==true has similar crash semantics to a write() system call "
        "followed by fsync(); the updates of a WriteBatch are applied atomically.",
        "https://github.com/google/leveldb/blob/main/doc/index.md (Synchronous Writes, "
        "Atomic Updates)",
    ),
    (
        "rocksdb",
        ("process-crash", *POWER_LOSS),
        "(paraphrased) "
        "With WriteOptions.sync=true the write is flushed before it is considered complete; "
        "a WriteBatch is applied atomically.",
        "https://github.com/facebook/rocksdb/wiki/Basic-Operations (Atomic Updates, "
        "Synchronous Writes)",
    ),
    (
        "zodb",
        ("process-crash", *POWER_LOSS),
        "(paraphrased) "
        "ZODB provides all the ACID properties: a transaction either commits entirely or "
        "not at all, and a committed one is durable.",
        "https://zodb.org/en/latest/introduction.html (Transactions)",
    ),
    (
        "git",
        ("process-crash",),
        "(paraphrased) "
        "git writes an object, the index or a ref to a temporary or `.lock` file and moves "
        "it into place: a git process killed at any point leaves the repository as it was "
        "or as the command left it (git fsck clean).",
        "git.git lockfile.h (its opening comment: the lock file protocol)",
    ),
    (
        "hg",
        ("process-crash", *POWER_LOSS),
        "(paraphrased) "
        "Mercurial writes with a transaction journal: an interrupted transaction is rolled "
        "back by hg recover, and the repository stays consistent (hg verify clean).",
        "https://www.mercurial-scm.org/doc/hg.1.html#recover",
    ),
]


def guarantee(engine: str, family: str) -> tuple[str, str] | None:
    """The engine's documented guarantee that a finding under ``family`` breaks."""
    for eng, families, line, source in _GUARANTEES:
        if eng == engine and family in families:
            return (line, source)
    return None


_RECOVERY_FILES = ("-journal", "-wal", ".log", "journal", "LOG", ".lock")


@dataclass(frozen=True)
class Classified:
    """One finding as a maintainer reads it.

    Attributes: engine, config, family (the model's family name), workload, invariant,
    crash_point, operation (the operation that did not run), state_digest (the crash
    state's identity), got (what load gave); cls: ``atomicity`` | ``ordering`` |
    ``durability`` | ``recovery`` | ``unjudged`` | ``model``; trade_off: ``(quoted line, source)``
    when documented;
    hypothetical: reached only through the model's device options."""

    engine: str
    config: str
    family: str
    workload: str
    invariant: str
    crash_point: int
    operation: str
    state_digest: str
    got: str
    cls: str
    trade_off: tuple[str, str] | None = None
    hypothetical: bool = False

    @property
    def breaks(self) -> tuple[str, str] | None:
        """The documented guarantee this finding breaks (None for a trade-off, a recovery
        or what was not judged)."""
        if self.trade_off or not self.is_finding:
            return None
        return guarantee(self.engine, self.family)

    @property
    def label(self) -> str:
        """``documented trade-off (durability)``, ``atomicity`` ..."""
        return f"documented trade-off ({self.cls})" if self.trade_off else self.cls

    @property
    def is_finding(self) -> bool:
        """False for the engine's recovery on open and for what was not judged."""
        return self.cls not in ("recovery", "unjudged", "model")


# Findings the --exec replay makes by not modelling a call the engine relies on, named:
# (engine, config, invariant) -> why. Counted as ``unjudged``, never a finding; each goes
# when the replay models the call (the strace runner's issue, 23).
REPLAY_GAPS: dict[tuple[str, str, str], str] = {}
"""Findings the strace replay cannot yet back, by (engine, configuration, invariant): not
judged. Empty since the replay models O_DSYNC/O_SYNC descriptors (liblmdb's meta page)."""


DATA_FILES: dict[str, str] = {
    "sqlite": "db.sqlite",
    "lmdb": "data.mdb",
    "leveldb": "db/CURRENT",
    "rocksdb": "db/CURRENT",
    "zodb": "Data.fs",
    "git": ".git/HEAD",
    "hg": ".hg/requires",
}
"""The file without which an engine holds no database yet. An A3 ("a complete generation
is on disk") on a state without it was judged from another file at its final bytes
(rocksdict's ``rocksdict-config.json``, a settings file holding no record): unjudged."""


MODEL_GAPS: dict[tuple[str, str], tuple[str, str]] = {
    ("zodb", "ext4"): (
        "FileStorageFormatError",
        "Data.fs at its first write's size (4 bytes) with zeros where the magic FS30 was "
        "written: the family's 'size advanced, data not written' form, which ext4 does not "
        "leave for a new file's first write into a delayed-allocation block (the on-disk "
        "size moves only when writeback allocates and writes the block); cut for real "
        "before each call from the index's write to the first fsync (14 cuts, 2026-12-04): "
        "Data.fs was 0 bytes every time (docs/field-results.md, ZODB under ext4)",
    ),
    ("lmdb", "ext4"): (
        "MDB_INVALID",
        "data.mdb at the size of mdb_env_init_meta's 8 KiB write (or its first page) with "
        "zeros where the two meta pages were written: the same 'size advanced, data not "
        "written' form of a new file's first write, which ext4's delayed allocation does "
        "not leave; cut for real after that write (1 cut of the suite, 7 by hand, "
        "2026-12-03): ext4 wrote the whole 8 KiB back every time (docs/field-results.md, "
        "Real ext4 power cuts of the engines, lmdb:default)",
    ),
}
"""Findings the family makes by being looser than the file system it models, by (engine,
family) -> (what the load reported, why): classified ``model``, never a finding, and
counted. Each was cut for real and not reproduced; each goes when the family models the
behaviour (docs/models.md)."""


WORK_TREE_ENGINES = ("git", "hg")
"""Engines whose save writes the records into a work tree before committing them: the
document kind's A3 counts those files, at their final bytes, as a complete generation on
disk, while what is committed is the tip (uncommitted work-tree files are not the
repository's data). Their A3 is unjudged until the kind can be told which files hold
committed data; A1 (fsck/verify failing, a torn tip) and A2 are judged."""


def _cls(c: Any, engine: str = "", config: str = "", family: str = "") -> str:
    inv = c.invariant
    if "IsADirectoryError" in c.got or (engine, config, inv) in REPLAY_GAPS:
        return "unjudged"
    gap = MODEL_GAPS.get((engine, family))
    if gap is not None and gap[0] in c.got:
        return "model"
    if inv == "A3" and engine in DATA_FILES and DATA_FILES[engine] not in c.crash_state:
        return "unjudged"
    if inv == "A3" and engine in WORK_TREE_ENGINES:
        return "unjudged"
    if inv == "A3" and _holds_recovery_file(c.crash_state):
        return "recovery"
    if inv in ("A1", "A5"):
        return "atomicity"
    if inv == "A2":
        return "durability"
    return "atomicity" if inv == "A3" else inv


def _holds_recovery_file(state: dict[str, str]) -> bool:
    return any(name.endswith(_RECOVERY_FILES) or "/journal" in name for name in state)


def documented(engine: str, config: str, cls: str, family: str) -> tuple[str, str] | None:
    """The engine's documentation line and source that allows ``cls`` under ``family``
    for this configuration, or None (then the finding breaks a documented guarantee)."""
    for eng, conf, classes, families, line, source in _DOCUMENTED:
        if eng == engine and conf in (config, "*") and cls in classes and family in families:
            return (line, source)
    return None


def classify(
    engine: str, config: str, family: str, counterexamples: Iterable[Any], hypothetical: bool
) -> list[Classified]:
    """Each counterexample of one engine result, classified (see the module docstring)."""
    out = []
    for c in counterexamples:
        cls = _cls(c, engine, config, family)
        out.append(
            Classified(
                engine,
                config,
                family,
                c.workload,
                c.invariant,
                c.crash_point,
                c.operation,
                c.state_digest,
                c.got,
                cls,
                documented(engine, config, cls, family)
                if cls not in ("recovery", "unjudged", "model")
                else None,
                hypothetical,
            )
        )
    return out


def classify_result(engine: str, config: str, result: Any) -> list[Classified]:
    """Every finding of a ``VerifyResult`` (one per model it ran), ordering marked."""
    out: list[Classified] = []
    for r in result.results:
        family = r.family or r.model
        out += classify(engine, config, family, r.counterexamples, False)
        out += classify(engine, config, family, r.hypothetical, True)
    return mark_ordering(out)


def mark_ordering(found: list[Classified]) -> list[Classified]:
    """Findings under ``posix`` whose (engine, config, workload, invariant) has none under
    ``ext4`` become ``ordering`` (the reordering family alone reaches them), when both
    families were run; the others are returned unchanged."""
    ext4 = {(f.engine, f.config, f.workload, f.invariant) for f in found if f.family == "ext4"}
    ran_ext4 = {(f.engine, f.config) for f in found if f.family == "ext4"}
    out = []
    for f in found:
        key = (f.engine, f.config, f.workload, f.invariant)
        if f.family == "posix" and f.is_finding and key not in ext4 and key[:2] in ran_ext4:
            f = replace(
                f, cls="ordering", trade_off=documented(f.engine, f.config, "ordering", "posix")
            )
        out.append(f)
    return out


def summary(found: Iterable[Classified]) -> dict[str, int]:
    """Findings by label (``recovery``, ``unjudged`` and ``model`` counted apart, hypothetical ones
    under ``hypothetical``)."""
    counts: dict[str, int] = {}
    for f in found:
        key = "hypothetical" if f.hypothetical else f.label
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))
