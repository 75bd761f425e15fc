"""A disk image: directories, names and inodes, and how each operation changes it.

The one place where operation semantics live (FAULT-MODEL.md §1). The memory
filesystem applies operations to an :class:`Image` as they happen; the
persistence models replay a trace prefix onto the durable image of the run's
start to derive crash states. Data belongs to the inode, so a rename moves it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from ._trace import Op, OpKind

__all__ = ["CrashState", "Image", "new_crash_state", "os_error", "parent_dir"]


# Operation kinds as module constants: an enum member looked up on its class costs a
# descriptor call, and apply runs once per operation.
_WRITE, _CREATE, _RENAME, _UNLINK, _MKDIR, _TRUNCATE, _FSYNC, _FSYNC_DIR = (
    OpKind.WRITE,
    OpKind.CREATE,
    OpKind.RENAME,
    OpKind.UNLINK,
    OpKind.MKDIR,
    OpKind.TRUNCATE,
    OpKind.FSYNC,
    OpKind.FSYNC_DIR,
)


def os_error(code: int, path: str) -> OSError:
    """``OSError(code, os.strerror(code), path)``: the builtin subclass for ``code``
    (``FileNotFoundError`` for ENOENT ...), exactly as the OS raises it."""
    return OSError(code, os.strerror(code), path)


def parent_dir(path: str) -> str:
    """``posixpath.dirname(path) or "/"``, without its slash stripping when the last
    separator is a single one (every path a trace holds)."""
    i = path.rfind("/")
    if i > 0 and path[i - 1] != "/":
        return path[:i]
    return posixpath.dirname(path) or "/"


@dataclass(frozen=True, slots=True)
class CrashState:
    """The files and directories a crash leaves on disk.

    Attributes:
        files: ``(path, content)`` pairs sorted by path.
        dirs: directory paths, sorted.

    Two crash states are the same exactly when they hold the same paths with the
    same bytes and the same directories (FAULT-MODEL.md §3: identity is the sorted
    list of (path, content hash, is-directory)); equal states hash equal, so they
    deduplicate in a set or dict.
    """

    files: tuple[tuple[str, bytes], ...]
    dirs: tuple[str, ...] = ()

    def file(self, path: str) -> bytes | None:
        """The content of ``path``, or None if no file is there."""
        for name, data in self.files:
            if name == path:
                return data
        return None

    def digest(self, file_sha256: Callable[[bytes], bytes] | None = None) -> str:
        """A short, stable hex identity of this state (for reports and shards): 16 hex
        digits of a sha256 over each file's path and content sha256 and each directory.

        ``file_sha256``: gives the sha256 digest (32 bytes) of a content, e.g. from a
        memo; the default computes it."""
        sha256 = hashlib.sha256
        parts: list[bytes] = []  # hashed as one message: the same digest as update by update
        for path, data in self.files:
            sha = sha256(data).digest() if file_sha256 is None else file_sha256(data)
            parts += (b"f\0", path.encode(), b"\0", sha)
        for path in self.dirs:
            parts += (b"d\0", path.encode(), b"\0")
        return sha256(b"".join(parts)).hexdigest()[:16]


_new = object.__new__
_set_files = CrashState.__dict__["files"].__set__
_set_dirs = CrashState.__dict__["dirs"].__set__


def new_crash_state(files: tuple[tuple[str, bytes], ...], dirs: tuple[str, ...]) -> CrashState:
    """``CrashState(files, dirs)``, the same object built without the frozen
    dataclass's ``__init__`` (its ``object.__setattr__`` per field is about a third
    of the cost): the persistence models build one per crash state."""
    state = _new(CrashState)
    _set_files(state, files)
    _set_dirs(state, dirs)
    return state


@dataclass(slots=True)
class Image:
    """A mutable disk image: directory paths, file names mapped to inodes, inode contents.

    ``apply`` performs one mutating operation with the operating system's checks and
    errors (``OSError`` with ENOENT, EEXIST, EISDIR, ENOTDIR, ENOTEMPTY); barriers
    change nothing in an image.
    """

    dirs: set[str] = field(default_factory=lambda: {"/"})
    names: dict[str, int] = field(default_factory=dict)
    data: dict[int, bytes] = field(default_factory=dict)
    next_inode: int = 1

    def copy(self) -> Image:
        return Image(set(self.dirs), dict(self.names), dict(self.data), self.next_inode)

    # --- queries -------------------------------------------------------------
    def is_file(self, path: str) -> bool:
        return path in self.names

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def exists(self, path: str) -> bool:
        return path in self.names or path in self.dirs

    def absent(self, path: str) -> int:
        """The errno the OS reports when looking up ``path`` finds nothing there:
        ENOTDIR if a component on the way is a file, else ENOENT."""
        end = path.find("/", 1)
        while end != -1:
            ancestor = path[:end]
            if ancestor in self.names:
                return errno.ENOTDIR
            if ancestor not in self.dirs:
                return errno.ENOENT
            end = path.find("/", end + 1)
        return errno.ENOENT

    def read(self, path: str) -> bytes:
        return self.data[self._file_inode(path)]

    def listdir(self, path: str) -> list[str]:
        if path not in self.dirs:
            raise os_error(errno.ENOTDIR if path in self.names else self.absent(path), path)
        prefix = path.rstrip("/") + "/"
        out = [
            p[len(prefix) :]
            for p in (*self.dirs, *self.names)
            if p.startswith(prefix) and p != path and "/" not in p[len(prefix) :]
        ]
        return sorted(out)

    def crash_state(self) -> CrashState:
        """Freeze this image into a :class:`CrashState`."""
        names, data = self.names, self.data
        dirs = sorted(self.dirs)
        if "/" in self.dirs:
            dirs.remove("/")
        paths = sorted(names)
        contents = map(data.__getitem__, map(names.__getitem__, paths))
        files = tuple(zip(paths, contents, strict=True))
        return new_crash_state(files, tuple(dirs))

    @classmethod
    def from_crash_state(cls, state: CrashState) -> Image:
        files = state.files
        names: dict[str, int] = {}
        data: dict[int, bytes] = {}
        for inode, (path, content) in enumerate(files, 1):
            names[path] = inode
            data[inode] = content
        return cls({"/", *state.dirs}, names, data, len(files) + 1)

    # --- mutation ------------------------------------------------------------
    def _parent_ok(self, path: str) -> None:
        parent = parent_dir(path)
        if parent not in self.dirs:
            raise os_error(errno.ENOTDIR if parent in self.names else self.absent(parent), path)

    def apply(self, op: Op) -> None:
        """Perform mutating ``op``. Raises ``OSError`` as the OS would; on error the
        image is unchanged."""
        kind = op.kind
        path = op.path
        if kind is _WRITE:
            inode = self._file_inode(path)
            if not op.data:
                return  # pwrite of nothing changes nothing, not even the size
            old = self.data[inode]
            end = op.offset + len(op.data)
            if op.offset > len(old):
                old = old + bytes(op.offset - len(old))
            self.data[inode] = old[: op.offset] + op.data + old[end:]
        elif kind is _CREATE:
            if path in self.dirs:
                raise os_error(errno.EISDIR, path)
            found = self.names.get(path)
            if found is None:
                self._parent_ok(path)
                found = self.next_inode
                self.next_inode += 1
                self.names[path] = found
            self.data[found] = b""
        elif kind is _RENAME:
            dst = op.dst or ""
            if path in self.dirs:
                raise os_error(errno.EISDIR, path)  # directory renames are out of the model
            # Linux order: both parents are looked up, then the source, then the target.
            self._parent_ok(path)
            self._parent_ok(dst)
            moved = self.names.get(path)
            if moved is None:
                raise os_error(errno.ENOENT, path)
            if dst in self.dirs:
                # a target that is an ancestor of the source is ENOTEMPTY on Linux
                trap = path.startswith(dst.rstrip("/") + "/")
                raise os_error(errno.ENOTEMPTY if trap else errno.EISDIR, dst)
            if dst != path:
                replaced = self.names.pop(dst, None)
                if replaced is not None and replaced != moved:
                    del self.data[replaced]
                del self.names[path]
                self.names[dst] = moved
        elif kind is _UNLINK:
            inode = self._file_inode(path)
            del self.names[path]
            del self.data[inode]
        elif kind is _MKDIR:
            if self.exists(path):
                raise os_error(errno.EEXIST, path)
            self._parent_ok(path)
            self.dirs.add(path)
        elif kind is _TRUNCATE:
            inode = self._file_inode(path)
            old = self.data[inode]
            self.data[inode] = old[: op.size] + bytes(max(0, op.size - len(old)))
        elif kind is _FSYNC or kind is _FSYNC_DIR:
            if not self.exists(path):
                raise os_error(self.absent(path), path)
        else:
            raise ValueError(f"not a mutating operation: {op.kind}")

    def _file_inode(self, path: str) -> int:
        inode = self.names.get(path)
        if inode is None:
            raise os_error(errno.EISDIR if path in self.dirs else self.absent(path), path)
        return inode
