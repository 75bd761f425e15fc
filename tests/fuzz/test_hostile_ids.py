"""Hostile session ids on a real directory (issue 10, acceptance 2): every id goes through
all six methods of the reference storage over the real OS (``OsFileSystem``) in a
temporary directory. Counted: paths touched outside the base directory (the parent tree
is snapshotted before and after), raw ``OSError``s and other untyped exceptions (every
failure must be a typed ``StateError``), and sessions whose loadable state another
session's calls changed (invariant I1: resident sessions, colliding ids included, and
every hostile id that saved). All must be 0.

The filesystem is confined to the test's directory (:class:`Confined`): a call aimed
outside it is refused (EACCES) and counted as an outside path touched, so a broken
storage under test is caught without writing beside the test (an absolute id such as
``/`` would otherwise land in the root directory).

The default run sends a few hundred ids; the long run (``-m long``) at least 10,000.
"""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    FileStateStorage,
    Message,
    StateError,
    TextPart,
    safe_session_file_name,
)

DEFAULT_IDS = 300
LONG_IDS = 12_000

_PIECES = [
    "..",
    "../",
    "/",
    "\\",
    "..\\",
    "../../etc/passwd",
    "/etc/passwd",
    "\x00",
    "a\x00b",
    ".",
    "...",
    ". ",
    " .",
    ".json",
    ".bak",
    ".tmp",
    ".ended",
    ".json.bak",
    "victim",
    "../victim",
    "..%2f",
    "%2e%2e%2f",
    "∕",
    "⁄",
    "／",
    "＼",
    "․․",
    "‥",
    "CON",
    "nul",
    "aux",
    "a b",
    "a_b",
    "a\tb",
    "a\nb",
    "a\rb",
    "\x7f",
    "\u200b",
    "\u202e",
    "e\u0301",
    "é",
    "会话",
    "\U0001f600",
    "\ud83d",
    "~",
    "$HOME",
    "*",
    "?",
    "|",
    ":",
    "<>",
    '"',
    "'",
    "`",
    "-",
    "--",
    "_",
    "resident-1",
    "resident_2",
    "x" * 200,
    "y" * 241,
    "z" * 5000,
    "s1",
    "S1",
    "s1 ",
    " s1",
    "s1.json",
    "s1.json.bak",
    "s1.json.tmp",
    "s1.json.ended",
]


def hostile_id(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(0, 12)))
    if rng.random() < 0.1:
        return "".join(chr(rng.randrange(0x20)) for _ in range(rng.randint(1, 6)))
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 4)))


def snapshot(root: Path, skip: Path) -> dict[str, tuple[str, int, str]]:
    """Every path under ``root`` except ``skip`` and what is under it: kind, mode, content."""
    out: dict[str, tuple[str, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == skip or skip in here.parents:
            dirnames[:] = []
            continue
        for name in dirnames:
            st = (here / name).lstat()
            out[str(here / name)] = ("dir", st.st_mode, "")
        for name in filenames:
            path = here / name
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
            out[str(path)] = ("file", st.st_mode, f"{st.st_size}:{digest}")
    return out


def state(session_id: str, text: str) -> AgentState:
    s = AgentState.new(session_id)
    s.messages = [Message("user", (TextPart(text),))]
    s.is_running = True
    return s


RESIDENTS = ["resident-1", "resident_2", "a_b", "s1", "victim", "S1"]


class Confined:
    """The real OS (:class:`~crashpoint.faultfs.OsFileSystem`) confined to ``root``: a
    call on a path outside it (lexically, after normalisation) raises PermissionError
    (EACCES) and the path is kept in ``refused``; inside it, every call goes through."""

    _PATHS: ClassVar[dict[str, int]] = {"rename": 2}  # leading path arguments (else 1)

    def __init__(self, root: Path) -> None:
        from crashpoint.faultfs import OsFileSystem

        self._fs = OsFileSystem()
        self._roots = {str(root), os.path.realpath(root)}
        self.refused: set[str] = set()

    def _inside(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        norm = posixpath.normpath(posixpath.join(os.getcwd(), path))
        return any(norm == r or norm.startswith(r + "/") for r in self._roots)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._fs, name)
        if not callable(method):
            return method

        def confined(*args: object, **kwargs: object) -> object:
            for path in args[: self._PATHS.get(name, 1)]:
                if not self._inside(path):
                    self.refused.add(repr(path))
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
            return method(*args, **kwargs)

        return confined


def run_hostile_ids(
    tmp_path: Path,
    count: int,
    seed: int,
    factory: Callable[[Any, str], FileStateStorage] = FileStateStorage,
) -> Counter[str]:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("victim.json", "victim.json.bak", "s1.json", "passwd"):
        (outside / name).write_bytes(b"not yours")
    (tmp_path / "victim.json").write_bytes(b"not yours either")
    base = tmp_path / "data" / "sessions"
    fs = Confined(tmp_path)
    storage = factory(fs, str(base))
    expected: dict[str, AgentState] = {}
    for sid in RESIDENTS:
        storage.save(state(sid, f"resident {sid}"))
        expected[sid] = storage.load(sid)
    before = snapshot(tmp_path, base)

    rng = random.Random(seed)
    figures: Counter[str] = Counter()

    def call(name: str, *args: object) -> object:
        figures["calls"] += 1
        try:
            return getattr(storage, name)(*args)
        except StateError as exc:
            figures[f"{name}:{exc.code}"] += 1
            return exc
        except OSError as exc:  # a raw OSError: counted, reported
            figures["raw_oserror"] += 1
            figures[f"raw_oserror:{name}:{exc.errno}"] += 1
            return exc
        except Exception as exc:  # any other untyped error: counted, reported
            figures["untyped_error"] += 1
            figures[f"untyped_error:{name}:{type(exc).__name__}"] += 1
            return exc

    for index in range(count):
        sid = hostile_id(rng)
        mine = state(sid, f"hostile {index}")
        figures["ids"] += 1
        call("exists", sid)
        call("load", sid)
        call("load_or_create", sid, {"n": index})
        saved = call("save", mine)
        call("mark_not_resumable", sid)
        loaded = call("load", sid)
        if saved is None and isinstance(loaded, AgentState):
            figures["saved"] += 1
            if loaded.session_id != sid or loaded.messages != mine.messages:
                figures["wrong_state"] += 1
        if rng.random() < 0.5:
            call("delete", sid)
            expected.pop(sid, None)
        elif isinstance(loaded, AgentState):
            expected[sid] = loaded
        if index % 100 == 99 or index == count - 1:
            for other, want in expected.items():
                try:
                    got: object = storage.load(other)
                except StateError as exc:
                    got = exc.code
                if got != want:
                    figures["isolation_violations"] += 1
                    figures[f"isolation:{safe_session_file_name(other)}"] += 1
                    expected[other] = got  # type: ignore[assignment]  # count each change once

    after = snapshot(tmp_path, base)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    figures["outside_paths_touched"] = len(changed) + len(fs.refused)
    for path in base.rglob("*"):  # every file the storage made is directly in base
        if path.parent != base:
            figures["nested_paths"] += 1
    return figures


def _assert_clean(figures: Counter[str]) -> None:
    assert figures["outside_paths_touched"] == 0, figures
    assert figures["nested_paths"] == 0, figures
    assert figures["raw_oserror"] == 0, figures
    assert figures["untyped_error"] == 0, figures
    assert figures["isolation_violations"] == 0, figures
    assert figures["wrong_state"] == 0, figures
    # the run examined something: ids were refused, collided and saved
    assert figures["saved"] > 0
    assert figures[f"save:{ErrorCode.INVALID_SESSION_ID}"] > 0
    assert figures[f"save:{ErrorCode.SESSION_ID_COLLISION}"] > 0


def test_hostile_ids_default_run(tmp_path: Path) -> None:
    figures = run_hostile_ids(tmp_path, DEFAULT_IDS, seed=20261201)
    assert figures["ids"] == DEFAULT_IDS
    _assert_clean(figures)


@pytest.mark.long
@pytest.mark.parametrize("seed", range(4))
def test_hostile_ids_long_run(tmp_path: Path, seed: int) -> None:
    # 4 seeds x 3,000 = 12,000 ids (issue 10 acceptance 2: at least 10,000)
    figures = run_hostile_ids(tmp_path, LONG_IDS // 4, seed=seed)
    print(f"seed {seed}: {dict(sorted(figures.items()))}")
    assert figures["ids"] == LONG_IDS // 4
    _assert_clean(figures)


@pytest.mark.parametrize(
    ("target", "counter"),
    [("seed", "isolation_violations"), ("mutant:unsanitized-session-id", "outside_paths_touched")],
)
def test_the_counts_catch_a_broken_storage(tmp_path: Path, target: str, counter: str) -> None:
    from crashpoint.scenarios.kinds.agent import mutants as _mutants  # noqa: F401  (registers the mutants)
    from crashpoint.scenarios.kinds.agent.targets import get_target

    figures = run_hostile_ids(tmp_path, 200, seed=7, factory=get_target(target))
    assert figures[counter] > 0, figures
