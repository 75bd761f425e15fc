"""Document stores for the verify tests: each broken one stands for one invariant.

Unmodified-code stores take ``base_dir`` and use ``open``/``os`` (run intercepted);
protocol stores take ``(fs, base_dir)``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from typing import Any

from crashpoint.faultfs import FileSystem

__all__ = [
    "BakResetStore",
    "BlockAtomicStore",
    "FailureDeletesStore",
    "HangingStore",
    "LinkStore",
    "OutsideStore",
    "ProtocolStore",
    "RaisingSaveStore",
    "SilentStore",
    "StrayReadStore",
    "WorkerHangingStore",
]


def _durable_replace(tmp: str, path: str, base_dir: str, data: str) -> None:
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(base_dir, os.O_RDONLY)
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

    def save(self, value: Any) -> None:
        _durable_replace(self.path + ".tmp", self.path, self.base_dir, json.dumps(value))


class SilentStore(_Base):
    """save returns without writing anything (a false green before issue 8)."""

    def save(self, value: Any) -> None:
        self.value = value


class OutsideStore(_Base):
    """Ignores base_dir for a copy: also writes /data/elsewhere.json (S1)."""

    def save(self, value: Any) -> None:
        with open("/data/elsewhere.json", "w", encoding="utf-8") as f:
            json.dump(value, f)
        super().save(value)


class RaisingSaveStore(_Base):
    """save raises on a clean run (a bad target: exit 2)."""

    def save(self, value: Any) -> None:
        raise RuntimeError("not implemented")


class ExitingStore(_Base):
    """save writes its value durably, then ends the process with code 0: exit 0 and no
    report, a pass, before the harness refused ``os._exit``."""

    def save(self, value: Any) -> None:
        super().save(value)
        os._exit(0)


class ExitingLoadStore(_Base):
    """load ends the process with code 0."""

    def load(self) -> Any:
        os._exit(0)


class HangingStore(_Base):
    """save never returns (--timeout stops it)."""

    def save(self, value: Any) -> None:
        while True:
            pass


class WorkerHangingStore(_Base):
    """Saves durably in the command's own process (its clean first save passes), but
    never returns in a ``--jobs`` worker: an interrupt must kill the workers."""

    def save(self, value: Any) -> None:
        import multiprocessing

        while multiprocessing.parent_process() is not None:
            time.sleep(0.05)
        super().save(value)


class LinkStore(_Base):
    """Publishes with a symbolic link, which the model cannot represent (incomplete;
    a hard link is modelled since issue 20)."""

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.symlink(tmp, self.path)


class SubprocessStore(_Base):
    """Calls a subprocess to sync (the model cannot follow it: incomplete)."""

    def save(self, value: Any) -> None:
        super().save(value)
        with contextlib.suppress(Exception):
            subprocess.run(["sync"], check=False)


class BakResetStore(_Base):
    """Keeps a backup copy, but a load that cannot parse the document returns the
    initial value instead of the complete backup (A3), and writes the document in
    place (so a crash tears it)."""

    def save(self, value: Any) -> None:
        data = json.dumps(value)
        _durable_replace(self.path + ".tmp", self.path + ".bak", self.base_dir, data)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def load(self) -> Any:
        try:
            return super().load()
        except ValueError:
            return None


class FailureDeletesStore(_Base):
    """On a failed save, "cleans up" by deleting the document too (A4)."""

    def save(self, value: Any) -> None:
        try:
            super().save(value)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            raise


class StrayReadStore(_Base):
    """Loads the temporary file when it is there: a leftover read as data (A5)."""

    def load(self) -> Any:
        for path in (self.path + ".tmp", self.path):
            try:
                with open(path, encoding="utf-8") as f:
                    return json.load(f)
            except (FileNotFoundError, ValueError):
                continue
        return None


class ProtocolStore:
    """The durable store written against the filesystem protocol (``factory(fs, base)``)."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        self.fs = fs
        self.base_dir = base_dir
        self.path = base_dir + "/doc.json"

    def save(self, value: Any) -> None:
        data = json.dumps(value).encode()
        tmp = self.path + ".tmp"
        self.fs.create(tmp)
        offset = 0
        while offset < len(data):
            offset += self.fs.write(tmp, offset, data[offset:])
        self.fs.fsync(tmp)
        self.fs.rename(tmp, self.path)
        self.fs.fsync_dir(self.base_dir)

    def load(self) -> Any:
        if not self.fs.exists(self.path):
            return None
        return json.loads(self.fs.read(self.path))


def wrong_signature(a: str, b: str, c: str) -> _Base:
    """Three required arguments: neither factory(base_dir) nor factory(fs, base_dir)."""
    return _Base(a)


def raising_factory(base_dir: str) -> _Base:
    raise ValueError("cannot open the store")


def flat_env(base_dir: str) -> EnvStore:
    return EnvStore(base_dir)


class EnvStore(_Base):
    """A .env-like KEY=VALUE file, written atomically: values are flat string maps."""

    crashpoint_values = "flat-strings"

    def __init__(self, base_dir: str) -> None:
        super().__init__(base_dir)
        self.path = os.path.join(base_dir, ".env")

    def save(self, value: Any) -> None:
        text = "".join(f"{k}={v}\n" for k, v in sorted(value.items()))
        _durable_replace(self.path + ".tmp", self.path, self.base_dir, text)

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return {}
        return dict(line.split("=", 1) for line in lines if line)


class LoadRaisesStore(_Base):
    """load raises even after a clean save (a bad target: exit 2)."""

    def load(self) -> Any:
        raise RuntimeError("cannot read")


class LoadRepairsStore(_Base):
    """Keeps a durable backup, then writes the document in place; a load that cannot
    parse the document "repairs" the store by writing the initial value over it and
    deleting the backup, which held a complete generation (A3: a load's writes never
    make unrecoverable a complete generation readable before them, SPEC.md §10)."""

    def save(self, value: Any) -> None:
        data = json.dumps(value)
        _durable_replace(self.path + ".tmp", self.path + ".bak", self.base_dir, data)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(data)

    def load(self) -> Any:
        try:
            return super().load()
        except ValueError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path + ".bak")
            with open(self.path, "w", encoding="utf-8") as f:
                f.write("null")
            return None


class StuckAfterFailureStore(_Base):
    """After one failed save, every later save raises (A4: later saves work)."""

    def __init__(self, base_dir: str) -> None:
        super().__init__(base_dir)
        self.failed = False

    def save(self, value: Any) -> None:
        if self.failed:
            raise RuntimeError("the store is stuck after an earlier failure")
        try:
            super().save(value)
        except OSError:
            self.failed = True
            raise


_CALLS = [0]


class NondeterministicStore(_Base):
    """Names its temporary file after a process-wide counter: a re-run with a fault
    armed creates other names, matched onto the recording's by creation order (issue 22)."""

    def save(self, value: Any) -> None:
        _CALLS[0] += 1
        tmp = f"{self.path}.{_CALLS[0]}.tmp"
        _durable_replace(tmp, self.path, self.base_dir, json.dumps(value))


class IgnoresFsStore:
    """A protocol-style factory (``fs, base_dir``) whose store ignores ``fs`` and calls
    ``open``/``os`` directly: under verify those calls still reach the model."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        self.store = _Base(base_dir)

    def save(self, value: Any) -> None:
        self.store.save(value)

    def load(self) -> Any:
        return self.store.load()


class HangingStateStorage:
    """A protocol state storage whose save never returns (--timeout stops it)."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        self.fs = fs

    def save(self, state: Any) -> None:
        while True:
            pass


class BlockAtomicStore(_Base):
    """One block, overwritten in place and fsynced: the document padded to 4096 bytes at
    offset 0. It relies on a block write being atomic, which the default device
    guarantees (FAULT-MODEL.md §3): a power cut leaves the old block or the new one. On a
    device that tears at 512 bytes the block mixes old and new sectors and the document
    no longer parses: a *hypothetical* finding (``--atomic-write 512``)."""

    BLOCK = 4096

    def save(self, value: Any) -> None:
        data = json.dumps(value).encode()
        if len(data) > self.BLOCK:
            raise ValueError("a document of more than one block")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data + b" " * (self.BLOCK - len(data)), 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        fd = os.open(self.base_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def load(self) -> Any:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        if not data.strip(b" \0"):
            return None  # created, its block not yet on the disk
        return json.loads(data)
