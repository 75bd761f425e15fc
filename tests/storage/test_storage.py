"""StateStorage behaviour: the seed's checklist §13.1, §13.2 and §13.4 (SPEC.md §6, §9),
run against the in-memory and the file storage alike where both apply."""

from __future__ import annotations

import errno
import hashlib
import json

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    FileStateStorage,
    MemoryStateStorage,
    Message,
    PendingRunCheckpoint,
    Retryability,
    StateError,
    TextPart,
    ToolCall,
    encode,
    encode_bytes,
)
from crashpoint.faultfs import (
    Fault,
    MemoryFileSystem,
    OpKind,
    RecordingFileSystem,
    makedirs,
    write_bytes,
)

BASE = "/data/sessions"


def state(sid: str = "s1", *texts: str, running: bool = False) -> AgentState:
    s = AgentState.new(sid)
    s.messages = [Message("user", (TextPart(t),)) for t in (texts or ("hello",))]
    s.is_running = running
    if running:
        s.pending_run_checkpoint = PendingRunCheckpoint("suspended", 1)
    return s


def file_storage(fs: MemoryFileSystem | None = None, **kw: object) -> FileStateStorage:
    return FileStateStorage(fs or MemoryFileSystem(dirs=("/data",)), BASE, **kw)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "file"])
def storage(request: pytest.FixtureRequest) -> object:
    return MemoryStateStorage() if request.param == "memory" else file_storage()


def code_of(exc_info: pytest.ExceptionInfo[StateError]) -> str:
    return str(exc_info.value.code)


# --- 13.1 basic read and write ------------------------------------------------------
def test_13_1_save_then_load_returns_equal_fields(storage: FileStateStorage) -> None:
    s = state("s1", "a", "b", running=True)
    s.metadata = {"title": "chat", "n": [1, 2]}
    storage.save(s)
    assert storage.load("s1") == s


def test_13_1_load_of_unknown_session_raises_session_not_found(storage: FileStateStorage) -> None:
    with pytest.raises(StateError) as e:
        storage.load("nobody")
    assert code_of(e) == ErrorCode.SESSION_NOT_FOUND


def test_13_1_exists_is_false_after_delete(storage: FileStateStorage) -> None:
    storage.save(state())
    assert storage.exists("s1")
    storage.delete("s1")
    assert not storage.exists("s1")


def test_13_1_load_or_create_creates_empty_state_for_new_id(storage: FileStateStorage) -> None:
    created = storage.load_or_create("new", {"title": "t"})
    assert created == AgentState.new("new", {"title": "t"})
    assert created.messages == [] and storage.exists("new")


def test_13_1_load_or_create_returns_existing_state(storage: FileStateStorage) -> None:
    s = state("s1", "kept")
    storage.save(s)
    assert storage.load_or_create("s1") == s


# --- 13.2 atomic write and crash recovery --------------------------------------------
def test_13_2_after_save_main_is_whole_bak_is_previous_and_tmp_absent() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs)
    first, second = state("s1", "one"), state("s1", "one", "two")
    st.save(first)
    st.save(second)
    assert fs.read(f"{BASE}/s1.json") == encode_bytes(second)
    assert fs.read(f"{BASE}/s1.json.bak") == encode_bytes(first)
    assert not fs.exists(f"{BASE}/s1.json.tmp")


def _op_index(kind: OpKind, path_suffix: str, dst_suffix: str | None = None) -> int:
    """Index of the first operation of a second save that matches."""
    fs = MemoryFileSystem(dirs=("/data",))
    file_storage(fs).save(state("s1", "one"))
    rec = RecordingFileSystem(fs)
    file_storage(rec).save(state("s1", "one", "two"))  # type: ignore[arg-type]
    for op in rec.trace.ops:
        dst_ok = dst_suffix is None or (op.dst or "").endswith(dst_suffix)
        if op.kind is kind and op.path.endswith(path_suffix) and dst_ok:
            return op.index
    raise AssertionError("operation not found")


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EROFS])
def test_13_2_failed_tmp_write_leaves_main_and_bak_and_raises_save_failed(code: int) -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs)
    st.save(state("s1", "zero"))
    st.save(state("s1", "one"))
    before = fs.crash_state()
    at = _op_index(OpKind.WRITE, ".tmp") + 0
    rec = RecordingFileSystem(fs, fault=Fault(at, code))
    with pytest.raises(StateError) as e:
        file_storage(rec).save(state("s1", "one", "two"))  # type: ignore[arg-type]
    assert code_of(e) == ErrorCode.STATE_SAVE_FAILED
    assert e.value.retryability is Retryability.CONDITIONAL
    assert isinstance(e.value.cause, OSError) and e.value.cause.errno == code
    assert fs.crash_state() == before  # tmp cleaned up, main and bak untouched
    assert st.load("s1") == state("s1", "one")


def test_13_2_failed_rename_leaves_bak_and_load_falls_back_to_it() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs)
    st.save(state("s1", "one"))
    at = _op_index(OpKind.RENAME, ".tmp", "s1.json")
    rec = RecordingFileSystem(fs, fault=Fault(at, errno.EIO))
    with pytest.raises(StateError) as e:
        file_storage(rec).save(state("s1", "one", "two"))  # type: ignore[arg-type]
    assert code_of(e) == ErrorCode.STATE_SAVE_FAILED
    assert not fs.exists(f"{BASE}/s1.json")  # main was moved to bak
    assert fs.exists(f"{BASE}/s1.json.bak")
    assert st.load("s1") == state("s1", "one")


def test_13_2_half_written_main_loads_bak() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs)
    st.save(state("s1", "one"))
    st.save(state("s1", "one", "two"))
    whole = fs.read(f"{BASE}/s1.json")
    write_bytes(fs, f"{BASE}/s1.json", whole[: len(whole) // 2])
    assert st.load("s1") == state("s1", "one")


def test_13_2_main_and_bak_both_corrupt_raise_state_corrupt() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs)
    st.save(state("s1", "one"))
    st.save(state("s1", "one", "two"))
    write_bytes(fs, f"{BASE}/s1.json", b'{"schemaVersion":3,')
    write_bytes(fs, f"{BASE}/s1.json.bak", b"")
    with pytest.raises(StateError) as e:
        st.load("s1")
    assert code_of(e) == ErrorCode.STATE_CORRUPT
    assert "main and bak corrupt" in e.value.message


# --- 13.4 an unsupported version never falls back to bak -----------------------------
def _doc(version: int, text: str) -> bytes:
    obj = encode(state("s1", text))
    obj["schemaVersion"] = version
    return json.dumps(obj).encode()


def _seeded(files: dict[str, bytes]) -> FileStateStorage:
    fs = MemoryFileSystem(dirs=("/data",))
    makedirs(fs, BASE)
    for name, data in files.items():
        write_bytes(fs, f"{BASE}/{name}", data)
    return file_storage(fs)


def test_13_4_future_main_with_v2_bak_raises_unsupported_without_reading_bak() -> None:
    st = _seeded({"s1.json": _doc(4, "future"), "s1.json.bak": _doc(2, "old")})
    with pytest.raises(StateError) as e:
        st.load("s1")
    assert code_of(e) == ErrorCode.SCHEMA_VERSION_UNSUPPORTED


def test_13_4_corrupt_main_with_future_bak_raises_unsupported() -> None:
    st = _seeded({"s1.json": b"{", "s1.json.bak": _doc(4, "future")})
    with pytest.raises(StateError) as e:
        st.load("s1")
    assert code_of(e) == ErrorCode.SCHEMA_VERSION_UNSUPPORTED


def test_13_4_corrupt_main_with_supported_v2_bak_loads_bak() -> None:
    st = _seeded({"s1.json": b"{", "s1.json.bak": _doc(2, "old")})
    loaded = st.load("s1")
    assert loaded.messages == state("s1", "old").messages


def test_13_4_load_or_create_never_writes_over_unsupported_main() -> None:
    st = _seeded({"s1.json": _doc(4, "future")})
    fs = st.fs
    assert isinstance(fs, MemoryFileSystem)
    before = fs.mutations
    with pytest.raises(StateError) as e:
        st.load_or_create("s1")
    assert code_of(e) == ErrorCode.SCHEMA_VERSION_UNSUPPORTED
    assert fs.mutations == before


# --- SPEC §6 details -------------------------------------------------------------------
def test_save_refuses_unpaired_history_and_writes_nothing(storage: FileStateStorage) -> None:
    s = state()
    s.messages.append(Message("assistant", (), tool_calls=(ToolCall("c1", "t", "{}"),)))
    with pytest.raises(StateError) as e:
        storage.save(s)
    assert code_of(e) == ErrorCode.HISTORY_UNPAIRED
    assert e.value.retryability is Retryability.NEVER
    assert not storage.exists("s1")


def test_file_with_another_session_id_is_a_collision() -> None:
    # SPEC §4: the file belongs to another session (test_session_collision.py)
    st = _seeded({"s1.json": encode_bytes(state("s2"))})
    with pytest.raises(StateError) as e:
        st.load("s1")
    assert code_of(e) == ErrorCode.SESSION_ID_COLLISION


def test_scoped_marker_names_the_condemned_snapshot_and_spares_a_later_one() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs)
    st.save(state("s1", "one", running=True))
    st.mark_not_resumable("s1")
    marker = fs.read(f"{BASE}/s1.json.ended")
    assert marker == b"sha256:" + hashlib.sha256(fs.read(f"{BASE}/s1.json")).hexdigest().encode()
    assert st.load("s1").is_running is False
    # a later snapshot with the stale marker still on disk stays resumable
    write_bytes(fs, f"{BASE}/s1.json", encode_bytes(state("s1", "one", "two", running=True)))
    assert st.load("s1").is_running is True


@pytest.mark.parametrize("content", [b"1", b"", b"garbage", b"sha256:zz"])
def test_legacy_empty_or_unrecognized_marker_applies_to_any_snapshot(content: bytes) -> None:
    st = _seeded({"s1.json": encode_bytes(state("s1", running=True)), "s1.json.ended": content})
    loaded = st.load("s1")
    assert loaded.is_running is False and loaded.pending_run_checkpoint is None


def test_save_deletes_the_marker_and_legacy_storage_writes_1() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs, sync="none", ended_marker="legacy")
    st.save(state("s1", running=True))
    st.mark_not_resumable("s1")
    assert fs.read(f"{BASE}/s1.json.ended") == b"1"
    st.save(state("s1", "again", running=True))
    assert not fs.exists(f"{BASE}/s1.json.ended")
    assert st.load("s1").is_running is True


def test_sync_full_fsyncs_tmp_before_rename_and_the_directory_after() -> None:
    rec = RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))
    file_storage(rec).save(state())  # type: ignore[arg-type]
    kinds = [(op.kind.value, op.path.rsplit("/", 1)[-1]) for op in rec.trace.ops]
    assert kinds == [
        ("mkdir", "sessions"),
        ("fsync_dir", "data"),  # the new directory's entry in its parent
        ("create", "s1.json.lock"),  # the writers' lock, created absent (SPEC.md §6)
        ("create", "s1.json.tmp"),
        ("write", "s1.json.tmp"),
        ("fsync", "s1.json.tmp"),
        ("rename", "s1.json.tmp"),
        ("fsync_dir", "sessions"),
    ]


def test_sync_none_is_the_seed_sequence() -> None:
    rec = RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))
    file_storage(rec, sync="none", strict=False).save(state())  # type: ignore[arg-type]
    assert [op.kind for op in rec.trace.ops] == [
        OpKind.MKDIR,
        OpKind.CREATE,
        OpKind.WRITE,
        OpKind.RENAME,
    ]
    # the reference with sync="none": the same, and the lock file created first (§6)
    rec = RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))
    file_storage(rec, sync="none").save(state())  # type: ignore[arg-type]
    assert [(op.kind, op.path.rsplit(".", 1)[-1]) for op in rec.trace.ops] == [
        (OpKind.MKDIR, "/data/sessions"),
        (OpKind.CREATE, "lock"),
        (OpKind.CREATE, "tmp"),
        (OpKind.WRITE, "tmp"),
        (OpKind.RENAME, "tmp"),
    ]


def test_delete_removes_bak_before_main() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = file_storage(fs)
    st.save(state("s1", "one"))
    st.save(state("s1", "two"))
    rec = RecordingFileSystem(fs)
    file_storage(rec).delete("s1")  # type: ignore[arg-type]
    unlinked = [op.path.rsplit("/", 1)[-1] for op in rec.trace.ops if op.kind is OpKind.UNLINK]
    assert unlinked == ["s1.json.bak", "s1.json"]
    with pytest.raises(StateError) as e:
        st.load("s1")
    assert code_of(e) == ErrorCode.SESSION_NOT_FOUND


def test_invalid_session_id_is_refused_before_any_write(storage: FileStateStorage) -> None:
    with pytest.raises(StateError) as e:
        storage.save(state("../escape"))
    assert code_of(e) == ErrorCode.INVALID_SESSION_ID


def test_storage_module_never_imports_os() -> None:
    import pathlib

    import crashpoint.core._storage as mod

    source = pathlib.Path(mod.__file__).read_text(encoding="utf-8")
    assert "import os" not in source and "from os" not in source


def test_file_storage_on_the_real_os(tmp_path: object) -> None:
    st = FileStateStorage(None, str(tmp_path))
    st.save(state("s1", "one"))
    st.save(state("s1", "two"))
    st.mark_not_resumable("s1")
    assert st.load("s1") == state("s1", "two")
    st.delete("s1")
    assert not st.exists("s1")
