"""Document stores the default workloads must catch (issue 22, undeserved cleans).

Each is a correct temp-file-and-rename store except where it is broken: only on its
7th save, only for values over 16 KiB, or only once 2 ms have passed.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
from typing import Any

__all__ = [
    "DegradedAfterFailureStore",
    "ExdevFallbackStore",
    "LargeInPlaceStore",
    "LateClockStore",
    "SeventhSaveInPlaceStore",
    "SoundStore",
    "TwoBugsStore",
]


class SoundStore:
    """A temporary file, fsynced, renamed over the document, the directory fsynced."""

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.path = os.path.join(base_dir, "doc.json")
        self.saves = 0

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, value: Any) -> None:
        self.saves += 1
        data = json.dumps(value)
        if self.in_place(data):
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.base_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def in_place(self, data: str) -> bool:
        return False


class SeventhSaveInPlaceStore(SoundStore):
    """Rewrites the document in place on its 7th save only (a compaction path)."""

    def in_place(self, data: str) -> bool:
        return self.saves == 7


class LargeInPlaceStore(SoundStore):
    """Writes values over 16 KiB in place (a "large value" path)."""

    def in_place(self, data: str) -> bool:
        return len(data) > 16 * 1024


class LateClockStore(SoundStore):
    """Writes in place once 2 ms have passed on the monotonic clock since it was made
    (a store that "flushes directly when idle")."""

    def __init__(self, base_dir: str) -> None:
        super().__init__(base_dir)
        self.started = time.monotonic()

    def in_place(self, data: str) -> bool:
        return time.monotonic() - self.started > 0.002


class ExdevFallbackStore(SoundStore):
    """python-dotenv 1.0.1's rewrite: a temporary file renamed over the document, and
    when the rename fails with EXDEV, the temporary file copied over the document in
    place (``shutil.copyfile``: the document truncated, then written)."""

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(value))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.replace(tmp, self.path)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            shutil.copyfile(tmp, self.path)
            os.unlink(tmp)


class DegradedAfterFailureStore(SoundStore):
    """Once a save has failed, rewrites the document in place from the second save after
    the failure on (a store that leaves its safe mode after one good retry): broken only
    past the failing call's recovery path and the next save."""

    def __init__(self, base_dir: str) -> None:
        super().__init__(base_dir)
        self.failed_at: int | None = None

    def save(self, value: Any) -> None:
        try:
            super().save(value)
        except OSError:
            self.failed_at = self.saves
            raise

    def in_place(self, data: str) -> bool:
        return self.failed_at is not None and self.saves >= self.failed_at + 2


class TwoBugsStore(SoundStore):
    """Two bugs a shrinker must keep apart: the first save is written in place (A1 with
    one save), and the 7th save only reaches a side file, renamed into place by the next
    save (A2: acknowledged, lost on a crash, which needs 7 saves)."""

    def in_place(self, data: str) -> bool:
        return self.saves == 1

    def save(self, value: Any) -> None:
        side = self.path + ".next"
        if self.saves == 7:  # the 8th call: the 7th save's side file goes into place first
            os.replace(side, self.path)
        if self.saves + 1 == 7:
            self.saves += 1
            with open(side, "w", encoding="utf-8") as f:
                f.write(json.dumps(value))
            return
        super().save(value)
