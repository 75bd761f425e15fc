"""Colliding session ids (SPEC §4, issue 10): ``"a b"`` and ``"a_b"`` share ``a_b.json``.
Every file records its sessionId; the reference refuses to load, save, delete or mark
through a file of another session (``session_id_collision``, never retryable) and
changes nothing; the in-memory storage likewise. The seed target keeps the published
behaviour (it overwrites, SPEC §8)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    FileStateStorage,
    MemoryStateStorage,
    Message,
    Retryability,
    StateError,
    TextPart,
    encode_bytes,
)
from crashpoint.faultfs import MemoryFileSystem, makedirs, write_bytes
from crashpoint.scenarios.kinds.agent.targets import TARGETS

BASE = "/data/sessions"
A, B = "a_b", "a b"  # both map to a_b.json


def state(sid: str, text: str, *, running: bool = False) -> AgentState:
    s = AgentState.new(sid)
    s.messages = [Message("user", (TextPart(text),))]
    s.is_running = running
    return s


def collision(call: Callable[[], object]) -> StateError:
    with pytest.raises(StateError) as exc:
        call()
    assert exc.value.code == ErrorCode.SESSION_ID_COLLISION
    assert exc.value.retryability is Retryability.NEVER
    return exc.value


def files(fs: MemoryFileSystem) -> dict[str, bytes]:
    return {name: fs.read(f"{BASE}/{name}") for name in sorted(fs.listdir(BASE))}


@pytest.fixture(params=["file", "memory"])
def storage(request: pytest.FixtureRequest) -> FileStateStorage | MemoryStateStorage:
    if request.param == "memory":
        return MemoryStateStorage()
    return FileStateStorage(MemoryFileSystem(), BASE)


def test_the_two_ids_share_one_file_name() -> None:
    from crashpoint.core import safe_session_file_name

    assert safe_session_file_name(A) == safe_session_file_name(B)


def test_a_session_never_loads_another_sessions_state(
    storage: FileStateStorage | MemoryStateStorage,
) -> None:
    storage.save(state(A, "mine"))
    collision(lambda: storage.load(B))
    collision(lambda: storage.load_or_create(B))
    assert storage.load(A) == state(A, "mine")


@pytest.mark.parametrize("method", ["save", "delete", "mark_not_resumable", "load_or_create"])
def test_save_delete_and_mark_refuse_and_change_nothing(
    storage: FileStateStorage | MemoryStateStorage, method: str
) -> None:
    storage.save(state(A, "first", running=True))
    storage.save(state(A, "second", running=True))
    before = files(storage.fs) if isinstance(storage, FileStateStorage) else None
    calls: dict[str, Callable[[], object]] = {
        "save": lambda: storage.save(state(B, "intruder")),
        "delete": lambda: storage.delete(B),
        "mark_not_resumable": lambda: storage.mark_not_resumable(B),
        "load_or_create": lambda: storage.load_or_create(B),
    }
    collision(calls[method])
    if isinstance(storage, FileStateStorage):
        assert files(storage.fs) == before  # type: ignore[arg-type]
    assert storage.load(A) == state(A, "second", running=True)


def test_a_bak_of_another_session_is_never_returned() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/a_b.json", b"{torn")
    write_bytes(fs, f"{BASE}/a_b.json.bak", encode_bytes(state(A, "theirs")))
    storage = FileStateStorage(fs, BASE)
    collision(lambda: storage.load(B))
    collision(lambda: storage.save(state(B, "mine")))
    assert fs.read(f"{BASE}/a_b.json") == b"{torn"


def test_a_main_of_another_session_is_never_answered_with_bak() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/a_b.json", encode_bytes(state(A, "theirs")))
    write_bytes(fs, f"{BASE}/a_b.json.bak", encode_bytes(state(B, "my old one")))
    collision(lambda: FileStateStorage(fs, BASE).load(B))


def test_a_future_version_file_of_another_session_is_a_collision() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/a_b.json", b'{"schemaVersion":9,"sessionId":"a_b"}')
    collision(lambda: FileStateStorage(fs, BASE).load(B))
    collision(lambda: FileStateStorage(fs, BASE).delete(B))


def test_an_undecodable_file_without_a_session_id_is_not_a_collision() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/a_b.json", b"{torn")
    storage = FileStateStorage(fs, BASE)
    storage.save(state(B, "mine"))
    assert storage.load(B) == state(B, "mine")


def test_the_seed_target_overwrites_as_published() -> None:
    fs = MemoryFileSystem()
    seed = TARGETS["seed"](fs, BASE)
    seed.save(state(A, "theirs"))
    seed.save(state(B, "mine"))
    assert seed.load(A) == state(A, "theirs")  # only bak still holds it
    seed.save(state(B, "mine again"))  # A's state is gone: invariant I1 shows it
    assert seed.load(B) == state(B, "mine again")
    with pytest.raises(StateError) as exc:
        seed.load(A)
    assert exc.value.code == ErrorCode.STATE_CORRUPT
