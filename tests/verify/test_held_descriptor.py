"""Two shapes real libraries have (tinydb's JSONStorage has both): a target that opens
a descriptor in its factory and uses it in every save and load, and a load that creates
its empty file when it is missing. Neither is a violation by itself (found running
examples/libraries, issue 8)."""

from __future__ import annotations

import json
import os
from typing import Any

import crashpoint


class HeldDirectoryStore:
    """Durable replace; the directory descriptor is opened once, in the factory, and
    fsynced after every rename (as one process would)."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "doc.json")
        self.dir_fd = os.open(base_dir, os.O_RDONLY)

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        os.fsync(self.dir_fd)

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None


class CreatesOnLoadStore(HeldDirectoryStore):
    """As above; load creates an empty document when there is none (tinydb's touch)
    and reads an empty one as the initial value."""

    def load(self) -> Any:
        with open(self.path, "a", encoding="utf-8"):
            pass
        with open(self.path, encoding="utf-8") as f:
            text = f.read()
        return json.loads(text) if text else None


def test_a_descriptor_opened_in_the_factory_stays_valid_across_saves_and_loads() -> None:
    result = crashpoint.verify(HeldDirectoryStore, model="all", faults=True)
    assert result.unsupported == []
    assert result.verdict == "clean"
    result.assert_no_violations()


def test_a_load_that_creates_its_missing_empty_file_overwrites_nothing() -> None:
    result = crashpoint.verify(CreatesOnLoadStore, workloads=["first-save", "resize"])
    assert result.killed_by() == []
    assert result.verdict == "clean"


class WritesInFactoryStore(HeldDirectoryStore):
    """As :class:`HeldDirectoryStore`, and the factory itself creates the document
    (tinydb's JSONStorage does): with --faults, faults land in the factory too."""

    def __init__(self, base_dir: str) -> None:
        super().__init__(base_dir)
        with open(self.path, "a", encoding="utf-8"):
            pass

    load = CreatesOnLoadStore.load


def test_a_fault_in_the_factorys_own_file_operations_ends_that_run_only() -> None:
    result = crashpoint.verify(WritesInFactoryStore, model="all", faults=True)
    assert result.unsupported == []
    assert result.killed_by() == []
    assert result.verdict == "clean"
