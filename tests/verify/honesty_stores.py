"""Document stores for the false alarms of issue 22 (tests/verify/test_honesty.py).

Each stands for one verdict a maintainer would dispute: a name made up afresh on every
run, a counter in the bytes, a load that recovers, a last save equal to the initial
value, a store of one file per key in a subdirectory it lists.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
from typing import Any

_COUNTER = itertools.count(1)
"""Process-wide: every run (the recording and each faulted re-run) draws other numbers."""


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Base:
    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.path = os.path.join(base_dir, "doc.json")

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None


class FreshNameStore(_Base):
    """Durable, but names its temporary file and a scratch directory after a
    process-wide counter (as a pid or a clock would): every re-run creates other names."""

    def save(self, value: Any) -> None:
        n = next(_COUNTER)
        scratch = os.path.join(self.base_dir, f"scratch.{n}")
        os.mkdir(scratch)
        tmp = os.path.join(scratch, "doc.json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(value))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        os.rmdir(scratch)
        _fsync_dir(self.base_dir)


class CounterInDataStore(_Base):
    """Writes a process-wide counter into the file's bytes (a header): a re-run writes
    other bytes at the same operation, which no renaming explains."""

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps({"n": next(_COUNTER) % 10, "value": value}))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.base_dir)

    def load(self) -> Any:
        found = super().load()
        return None if found is None else found["value"]


class RollbackJournalStore(_Base):
    """SQLite's rollback journal in miniature: a save first makes the old document (or
    its absence) durable in ``doc.json.journal`` (written to a temporary file and
    renamed), then writes the document in place and deletes the journal. A load that
    finds a journal rolls the uncommitted change back (restores the old document,
    deletes the journal): a recovery, writing, that loses no complete generation."""

    def _journal(self) -> str:
        return self.path + ".journal"

    def save(self, value: Any) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                old = {"doc": f.read()}
        except FileNotFoundError:
            old = {"doc": None}
        tmp = self._journal() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(old))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._journal())
        _fsync_dir(self.base_dir)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(json.dumps(value))
            f.flush()
            os.fsync(f.fileno())
        os.unlink(self._journal())
        _fsync_dir(self.base_dir)

    def load(self) -> Any:
        if os.path.exists(self._journal()):  # a hot journal: roll back
            with open(self._journal(), encoding="utf-8") as f:
                old = json.load(f)["doc"]
            if old is None:
                if os.path.exists(self.path):
                    os.unlink(self.path)
            else:
                with open(self.path, "w", encoding="utf-8") as f:
                    f.write(old)
                    f.flush()
                    os.fsync(f.fileno())
            os.unlink(self._journal())
            _fsync_dir(self.base_dir)
        return super().load()


class BackupStore:
    """Keeps the previous value as ``doc.json.bak`` (as ``dbm.dumb`` keeps ``.bak``) and
    replaces the document atomically; load reads the document, else the backup, else
    returns ``{}``, its initial value. Durable and atomic: a save of ``{}`` after another
    value leaves ``doc.json`` = ``{}`` beside a complete backup of the older value."""

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.path = os.path.join(base_dir, "doc.json")

    def save(self, value: Any) -> None:
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                old = f.read()
            with open(self.path + ".bak.tmp", "w", encoding="utf-8") as f:
                f.write(old)
                f.flush()
                os.fsync(f.fileno())
            os.replace(self.path + ".bak.tmp", self.path + ".bak")
        with open(self.path + ".tmp", "w", encoding="utf-8") as f:
            f.write(json.dumps(value))
            f.flush()
            os.fsync(f.fileno())
        os.replace(self.path + ".tmp", self.path)
        _fsync_dir(self.base_dir)

    def load(self) -> Any:
        for path in (self.path, self.path + ".bak"):
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    return json.load(f)
        return {}


class TextStore(_Base):
    """Saves the value as JSON but loads the file's text: nothing round-trips."""

    def save(self, value: Any) -> None:
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(json.dumps(value))

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None


def swallowing_state_storage(base_dir: str) -> Any:
    """The reference state storage (intercepted) whose save swallows ``StateError``: a
    save that failed returns as if it had worked (the caller believes it durable)."""
    from crashpoint.core import FileStateStorage, StateError
    from crashpoint.faultfs import OsFileSystem

    class Swallowing(FileStateStorage):
        def save(self, state: Any) -> None:
            with contextlib.suppress(StateError):
                super().save(state)

    return Swallowing(OsFileSystem(), base_dir, sync="full", ended_marker="scoped")


class ProtocolFreshNameStore:
    """:class:`FreshNameStore` written against the filesystem protocol
    (``factory(fs, base_dir)``, ``--runner protocol``): a scratch directory and temporary
    named after a process-wide counter, durable (fsync, rename, directory fsync)."""

    def __init__(self, fs: Any, base_dir: str) -> None:
        self.fs = fs
        self.base_dir = base_dir
        self.path = f"{base_dir}/doc.json"

    def save(self, value: Any) -> None:
        scratch = f"{self.base_dir}/scratch.{next(_COUNTER)}"
        self.fs.mkdir(scratch)
        tmp = f"{scratch}/doc.json.tmp"
        self.fs.create(tmp)
        data = json.dumps(value).encode()
        done = 0
        while done < len(data):
            done += self.fs.write(tmp, done, data[done:])
        self.fs.fsync(tmp)
        self.fs.rename(tmp, self.path)
        self.fs.rmdir(scratch)
        self.fs.fsync_dir(self.base_dir)

    def load(self) -> Any:
        if not self.fs.exists(self.path):
            return None
        return json.loads(self.fs.read(self.path))


class CacheDirStore(_Base):
    """pytest's cache in small: a constant README written (and fsynced) once, then the
    value file, atomically (tmp + fsync + rename + directory fsync). A crash between the
    two leaves the README alone: load rightly returns the initial value (no value is on
    disk, the README's bytes are the same whatever the value)."""

    def save(self, value: Any) -> None:
        readme = os.path.join(self.base_dir, "README.md")
        if not os.path.exists(readme):
            with open(readme, "w", encoding="utf-8") as f:
                f.write("# a cache directory: do not commit\n")
                f.flush()
                os.fsync(f.fileno())
            _fsync_dir(self.base_dir)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.base_dir)


class CacheDirDiscardingStore(CacheDirStore):
    """:class:`CacheDirStore` whose load, finding a temporary file (a save cut short),
    deletes it and the value file beside it and returns the initial value: a reset over
    the complete value the last acknowledged save left (A3, twice: the load's value and
    its writes), the constant README beside it."""

    def load(self) -> Any:
        tmp = self.path + ".tmp"
        if os.path.exists(tmp):
            os.unlink(tmp)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            _fsync_dir(self.base_dir)
            return None
        return super().load()


class RotatingStore(_Base):
    """Rotates the document to ``doc.json.bak`` (a rename), then puts the new value in
    place (tmp + fsync + rename + directory fsync); load reads ``doc.json`` only. A
    crash between the two renames leaves the previous value whole in the backup and no
    document: load returns the initial value over a complete generation (a real A3,
    which "every file its save changed, as it left them" no longer saw)."""

    def save(self, value: Any) -> None:
        if os.path.exists(self.path):
            os.replace(self.path, self.path + ".bak")
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.base_dir)


class EscapingCacheDirStore(CacheDirStore):
    """:class:`CacheDirStore` that also leaves a scratch file outside its directory,
    named after the value (S1 in every run that saves that value)."""

    def save(self, value: Any) -> None:
        name = hashlib.sha256(json.dumps(value).encode()).hexdigest()[:12]
        with open(f"/tmp/crashpoint-scratch-{name}", "w") as f:
            f.write("x")
        super().save(value)


class ZeroHeaderStore(_Base):
    """LMDB in small (issue 24: ``lmdb:locked`` under ext4): a lock file of 64 zero bytes
    made once (the same bytes whatever the value: constant), then the data file written
    as 64 zero bytes before the value goes over them. A crash between the two leaves a
    data file of the lock file's bytes: no value. Load refuses it, rebuilding the lock
    file as it goes (a write), and a fresh load refuses it again: an A1, never an A3
    (nothing complete was on disk for the load's writes to lose)."""

    def save(self, value: Any) -> None:
        lock = os.path.join(self.base_dir, "lock")
        if not os.path.exists(lock):
            with open(lock, "wb") as f:
                f.write(bytes(64))
                f.flush()
                os.fsync(f.fileno())
        with open(self.path, "wb") as f:
            f.write(bytes(64))
            f.flush()
            os.fsync(f.fileno())
            f.seek(0)
            f.truncate()
            f.write(json.dumps(value).encode())
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(self.base_dir)

    def load(self) -> Any:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        if data == bytes(len(data)) and data:
            with open(os.path.join(self.base_dir, "lock"), "wb") as f:
                f.write(b"\1" * 64)  # the lock region made afresh
            raise ValueError("not a data file: all zeros")
        return json.loads(data)
