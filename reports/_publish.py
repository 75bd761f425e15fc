"""Putting report files in place: safe temporaries, all of a run together (issue 21).

A report's temporary file takes a random name and is created ``O_CREAT|O_EXCL|
O_NOFOLLOW`` (:func:`tempfile.mkstemp`) in the directory of the file it replaces, so a
symlink or a file planted at a predictable ``report.json.tmp`` is never followed nor
truncated. :func:`write_files` first writes every file of a run to its temporary, then
renames them all over their targets with SIGINT and SIGTERM held back until the last
rename is done: an interrupted run leaves the previous run's reports, whole, and no
temporary; a finished one leaves its own. (A SIGKILL, which nothing can defer, between
two renames of a few microseconds is the one way left to mix two runs.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["write_files", "write_text"]


def write_files(files: Sequence[tuple[str | os.PathLike[str], str]]) -> None:
    """Replace each ``(path, text)``'s path by its text (UTF-8), all together.

    Every text is written and closed before the first rename; the renames run with
    SIGINT/SIGTERM deferred (main thread only), then a deferred signal is delivered to
    the handler that was installed. File modes follow the umask, as ``open(p, "w")``.

    Raises:
        OSError: a temporary could not be created or written, or a rename failed;
            every temporary not yet renamed is removed, on any exception.
    """
    staged: list[tuple[str, str]] = []
    try:
        for path, text in files:
            target = os.fspath(path)
            staged.append((_stage(target, text), target))
        with _signals_deferred():
            while staged:
                tmp, target = staged[0]
                os.replace(tmp, target)
                staged.pop(0)
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _stage(target: str, text: str) -> str:
    """``text`` in a new, randomly named file beside ``target``; returns its path."""
    parent, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=parent or ".")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with open(fd, "w", encoding="utf-8", closefd=True) as f:
            fd = -1
            f.write(text)
    except BaseException:
        if fd >= 0:  # (open() may have taken and closed it already: EBADF then)
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block, then deliver what came to the handler
    that was installed before (main thread only; elsewhere: nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def defer(signum: int, frame: Any) -> None:
        came.append(signum)

    previous: dict[int, Any] = {}
    sig: int
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, defer)
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        for signum in dict.fromkeys(came):
            handler = previous.get(signum)
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


def write_text(text: str, path: str | os.PathLike[str]) -> None:
    """Replace ``path`` by ``text`` atomically: a randomly named ``O_EXCL`` temporary
    renamed over it, never a planted symlink followed (``_publish.write_files``)."""
    write_files([(path, text)])
