"""Targets for the verify tests: intercepted factories (``factory(base_dir)``) over
the reference storage, and deliberately broken document stores (protocol style)."""

from __future__ import annotations

from crashpoint.core import FileStateStorage
from crashpoint.faultfs import OsFileSystem


def reference(base_dir: str) -> FileStateStorage:
    """The reference, unmodified, on the real-OS filesystem: run intercepted."""
    return FileStateStorage(OsFileSystem(), base_dir, sync="full", ended_marker="scoped")


reference.crashpoint_format = "reference"  # type: ignore[attr-defined]
