"""NAME_MAX and PATH_MAX in the model filesystem (issue 9; Linux limits). The
differential tests compare the same calls with the real OS, errno for errno; these
pin the boundaries and what the trace records."""

from __future__ import annotations

import errno

import pytest
from crashpoint.faultfs import MemoryFileSystem, OpKind, RecordingFileSystem
from crashpoint.faultfs._memory import NAME_MAX, PATH_MAX

BASE = "/base"


def too_long(call: object) -> bool:
    try:
        call()  # type: ignore[operator]
    except OSError as exc:
        return exc.errno == errno.ENAMETOOLONG
    return False


def test_the_limits_are_linux_s() -> None:
    assert (NAME_MAX, PATH_MAX) == (255, 4096)


@pytest.mark.parametrize(
    ("name", "fits"),
    [("a" * 255, True), ("a" * 256, False), ("é" * 127 + "a", True), ("é" * 128, False)],
)
def test_a_name_fits_up_to_255_bytes_not_characters(name: str, fits: bool) -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    assert too_long(lambda: mem.create(f"{BASE}/{name}")) is not fits
    assert mem.exists(f"{BASE}/{name}") is fits


@pytest.mark.parametrize(("size", "fits"), [(4095, True), (4096, False)])
def test_a_path_fits_up_to_4095_bytes_plus_its_nul(size: int, fits: bool) -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    path = BASE + "/" * (size - len(BASE) - 1) + "f"  # the kernel counts the slashes
    assert len(path) == size
    assert too_long(lambda: mem.create(path)) is not fits
    assert mem.exists(f"{BASE}/f") is fits


def test_every_call_on_a_long_name_says_so_and_reads_say_absent() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    mem.create(f"{BASE}/f")
    long = f"{BASE}/{'x' * 256}"
    for call in (
        lambda: mem.mkdir(long),
        lambda: mem.create(long),
        lambda: mem.write(long, 0, b"x"),
        lambda: mem.truncate(long, 0),
        lambda: mem.unlink(long),
        lambda: mem.rename(f"{BASE}/f", long),
        lambda: mem.rename(long, f"{BASE}/f"),
        lambda: mem.fsync(long),
        lambda: mem.fsync_dir(long),
        lambda: mem.read(long),
        lambda: mem.size(long),
        lambda: mem.listdir(long),
    ):
        assert too_long(call)
    assert not mem.exists(long) and not mem.is_dir(long)
    assert mem.exists(f"{BASE}/f")  # the refused rename moved nothing


def test_a_refused_name_is_a_failed_operation_in_the_trace() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    before = mem.crash_state()
    fs = RecordingFileSystem(mem)
    fs.create(f"{BASE}/{'s' * 240}.json.ended.tmp")  # 255 bytes: fits
    with pytest.raises(OSError) as info:
        fs.create(f"{BASE}/{'s' * 241}.json.ended.tmp")  # 256 bytes (issue 9's 241)
    assert info.value.errno == errno.ENAMETOOLONG
    fits, refused = fs.trace.ops
    assert (fits.errno, refused.kind, refused.errno) == (None, OpKind.CREATE, errno.ENAMETOOLONG)
    assert len(mem.crash_state().files) == len(before.files) + 1
