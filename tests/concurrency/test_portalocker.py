"""portalocker under ``crashpoint verify --actors 2`` (issue 25, SPEC.md §10.1): the real
library (pinned in pyproject.toml's ``test`` extra), its ``fcntl.flock`` lock a lock of
the scheduler's, its ``time.sleep``/``time.perf_counter`` retry loop on the virtual clock.

portalocker 4.4.2, portalocker/utils.py ``Lock.acquire``: open the lock file (mode
``a``), then ``portalocker.lock(fh, LOCK_EX | LOCK_NB)`` (portalocker/portalocker.py:
``LOCKER = fcntl.flock`` on its descriptor) once per attempt of ``_timeout_generator``,
which sleeps ``check_interval`` (0.25 s) until ``timeout`` has passed on
``time.perf_counter``, then raises ``AlreadyLocked``.
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import re
import tempfile
import time
from typing import Any

import portalocker
from crashpoint._cli import main
from crashpoint.faultfs._models import PROCESS_CRASH
from crashpoint.scenarios.kinds.concurrent.kind import (
    ConcurrentKind,
    ConcurrentResult,
    explore_concurrent,
)
from crashpoint.scenarios.targets.user import import_findings, load_factory, make_runner

from examples.concurrency import stores

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
STORES = ROOT / "examples" / "concurrency" / "stores.py"
LOCK = "/data/store/doc.json.lock"


def _verify(tmp: pathlib.Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = tmp / "out"
    code = main(["verify", *args, "--out", str(out)])
    return code, json.loads((out / "report.json").read_text())


def _explore(cls: Any, workload: str, **kw: Any) -> ConcurrentResult:
    runner = make_runner(cls, "/data/store")
    with runner:
        kind = ConcurrentKind(runner, cls.__name__, **kw)
        return explore_concurrent(kind, workload, models=[PROCESS_CRASH])


def _found(res: ConcurrentResult) -> set[str]:
    return {c.invariant for _, e in res.findings for c in e.counterexamples}


def test_the_pinned_portalocker_is_installed_and_locks_with_flock() -> None:
    pins = re.findall(r"portalocker==([\d.]+)", (ROOT / "pyproject.toml").read_text())
    assert pins and portalocker.__version__ == pins[0]
    assert f"portalocker=={pins[0]}" in (ROOT / "examples" / "requirements.txt").read_text()
    assert portalocker.portalocker.LOCKER is fcntl.flock  # the call the scheduler models


def test_a_module_asking_for_the_temporary_directory_at_import_loads(
    tmp_path: pathlib.Path, monkeypatch: Any
) -> None:
    # portalocker 4.4's default arguments call tempfile.gettempdir() at import; its probe
    # (create and remove a file in /tmp) must not meet the import's containment
    module = tmp_path / "asks_tempdir.py"
    module.write_text(
        "import tempfile\nTMP = tempfile.gettempdir()\n\n"
        "class Store:\n    def __init__(self, base_dir):\n        self.tmp = TMP\n"
    )
    monkeypatch.setattr(tempfile, "tempdir", None)  # not yet probed in this process
    factory = load_factory(f"{module}:Store")
    assert factory("/x").tmp == tempfile.gettempdir()
    assert import_findings(factory) == []


def test_the_portalocker_store_passes_every_workload_under_every_model(
    tmp_path: pathlib.Path,
) -> None:
    target = f"{STORES}:PortalockerUpdateStore"
    code, report = _verify(tmp_path, target, "--actors", "2", "--model", "all")
    assert code == 0, report["findings"]
    assert report["ok"] is True and report["findings"] == [] and report["incomplete"] == []
    assert len(report["models"]) == 5
    assert [w["workload"] for w in report["workloads"]] == [
        "concurrent-saves",
        "concurrent-update",
        "save-while-load",
    ]
    assert all(w["crash_states"] > 0 and w["schedules"] > 1 for w in report["workloads"])


def test_without_the_lock_around_update_portalockers_store_loses_an_update(
    tmp_path: pathlib.Path,
) -> None:
    code, report = _verify(tmp_path, f"{STORES}:PortalockerUnlockedUpdateStore", "--actors", "2")
    assert code == 1 and report["ok"] is False
    found = {(f["workload"], f["invariant"]) for f in report["findings"]}
    assert ("concurrent-update", "L1") in found
    assert {inv for _, inv in found} <= {"L1", "D2"}  # its saves alone stay atomic


def test_the_second_updater_waits_on_the_lock_and_the_updates_never_overlap() -> None:
    res = _explore(stores.PortalockerUpdateStore, "concurrent-update")
    assert _found(res) == set() and not res.incomplete
    waited = 0
    for _, out in res.exploration.kept:
        holder: int | None = None
        taken: list[int] = []
        for actor, what in out.events:
            if what == f"lock {LOCK}":
                assert holder is None, out.events  # never two holders
                holder = actor
                taken.append(actor)
            elif what == f"unlock {LOCK}":
                assert holder == actor
                holder = None
            elif what == f"lock {LOCK}: held":
                assert holder is not None and holder != actor
        assert sorted(taken) == [0, 1]  # each update took the lock once
        assert holder is None  # released at the end of every call
        if any(what == f"lock {LOCK}: held" for _, what in out.events):
            waited += 1
            assert out.now > 0  # portalocker slept (virtually) between its attempts
    assert waited > 0


class _Hog(stores.PortalockerUpdateStore):
    """Actor 0 (pid 2000) holds the lock for a minute of (virtual) time in its save."""

    def save(self, value: Any) -> None:
        if os.getpid() != 2000:
            super().save(value)
            return
        with portalocker.Lock(self.path + ".lock", timeout=120):
            time.sleep(60)
            stores.UnlockedUpdateStore.save(self, value)


def test_a_writer_behind_a_held_lock_times_out_with_already_locked_in_virtual_time() -> None:
    started = time.monotonic()
    res = _explore(_Hog, "concurrent-saves", preemptions=1)
    assert time.monotonic() - started < 60  # the 10 s timeout and the 60 s hold: virtual
    timed_out = [
        out
        for _, out in res.exploration.kept
        if [w for a, w in out.events if a == 1 and w.startswith("lock")][-1:]
        == [f"lock {LOCK}: held"]
    ]
    assert timed_out
    for out in timed_out:  # attempts every 0.25 s until the 10 s timeout
        sleeps = [w for a, w in out.events if a == 1 and w.startswith("sleep")]
        assert len(sleeps) >= 39 and out.now >= 60
    i8 = [c for _, e in res.findings for c in e.counterexamples if c.invariant == "I8"]
    assert i8 and all("AlreadyLocked" in c.got for c in i8)
    # the lock file is a file of the model: a crash leaves it on disk
    assert all("doc.json.lock" in c.crash_state for c in i8)


class _LockfStore(stores.UnlockedUpdateStore):
    """Saves and updates under portalocker's ``LockfLocker`` (``fcntl.lockf(fd,
    LOCK_EX)``, blocking), taken on the lock file and given back before it is closed."""

    def _locked(self, fn: Any) -> None:
        locker = portalocker.portalocker.LockfLocker()
        with open(self.path + ".lock", "a") as fh:
            locker.lock(fh, portalocker.LockFlags.EXCLUSIVE)
            try:
                fn()
            finally:
                locker.unlock(fh)

    def save(self, value: Any) -> None:
        self._locked(lambda: stores.UnlockedUpdateStore.save(self, value))

    def update(self, fn: Any) -> None:
        self._locked(lambda: stores.UnlockedUpdateStore.save(self, fn(self.load())))


def test_portalockers_lockf_locker_blocks_the_other_updater() -> None:
    # fcntl.lockf takes flock's constants (LOCK_EX, LOCK_UN, | LOCK_NB), not F_TLOCK
    res = _explore(_LockfStore, "concurrent-update")
    assert _found(res) == set() and not res.incomplete and res.crash_states > 0
    waits = [out for _, out in res.exploration.kept if (1, f"lock {LOCK}: waits") in out.events]
    assert waits and all(not out.stuck for _, out in res.exploration.kept)
