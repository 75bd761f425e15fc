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

__all__ = [
    "SYMLINK_MAGIC",
    "CrashState",
    "Image",
    "new_crash_state",
    "os_error",
    "parent_dir",
    "symlink_content",
    "symlink_target",
]


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
_FDATASYNC, _RMDIR, _LINK = OpKind.FDATASYNC, OpKind.RMDIR, OpKind.LINK
_SYMLINK = OpKind.SYMLINK

SYMLINK_MAGIC = b"\0crashpoint:symlink\0"
"""What the content of a symbolic link begins with in an image and a crash state; the
target follows (a target holds no NUL: ``symlink(2)`` takes a C string). A regular file
beginning with these 20 bytes would be taken for a link; none does by chance."""


def symlink_content(target: bytes) -> bytes:
    """The content a symbolic link to ``target`` has in an image: :data:`SYMLINK_MAGIC`
    then the target's bytes."""
    return SYMLINK_MAGIC + target


def symlink_target(content: bytes) -> bytes | None:
    """The target of the symbolic link whose image content is ``content``, or None when
    ``content`` is a regular file's."""
    if content.startswith(SYMLINK_MAGIC):
        return content[len(SYMLINK_MAGIC) :]
    return None


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

    A symbolic link is a file whose content is :func:`symlink_content` of its target
    (:data:`~crashpoint.faultfs.OpKind.SYMLINK`).

    Two crash states are the same exactly when they hold the same paths with the
    same bytes and the same directories (FAULT-MODEL.md §3: identity is the sorted
    list of (path, content hash, is-directory)); equal states hash equal, so they
    deduplicate in a set or dict. Which names shared an inode (hard links) is not
    part of a crash state: a reboot gives each name its own inode with the same bytes.
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
    errors (``OSError`` with ENOENT, EEXIST, EISDIR, ENOTDIR, ENOTEMPTY, EINVAL,
    EPERM, EBUSY); barriers change nothing in an image.

    Attributes:
        dirs: directory paths, ``"/"`` included.
        names: file path -> inode number; two names of one inode are hard links.
        data: inode -> content; an inode goes with its last name.
        next_inode: the number the next new inode gets.
        extra: inode -> its link count less one, for inodes with more than one name
            (absent: one name).
    """

    dirs: set[str] = field(default_factory=lambda: {"/"})
    names: dict[str, int] = field(default_factory=dict)
    data: dict[int, bytes] = field(default_factory=dict)
    next_inode: int = 1
    extra: dict[int, int] = field(default_factory=dict)

    def copy(self) -> Image:
        return Image(
            set(self.dirs), dict(self.names), dict(self.data), self.next_inode, dict(self.extra)
        )

    def links(self, path: str) -> int:
        """The link count of the file at ``path`` (``st_nlink``). Raises ENOENT, EISDIR."""
        return 1 + self.extra.get(self._file_inode(path), 0)

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
            # Linux order: both parents are looked up, then the source, then the target.
            self._parent_ok(path)
            self._parent_ok(dst)
            if path in self.dirs:
                self._rename_dir(path, dst)
                return
            moved = self.names.get(path)
            if moved is None:
                raise os_error(errno.ENOENT, path)
            if dst in self.dirs:
                # a target that is an ancestor of the source is ENOTEMPTY on Linux
                trap = path.startswith(dst.rstrip("/") + "/")
                raise os_error(errno.ENOTEMPTY if trap else errno.EISDIR, dst)
            if dst != path and self.names.get(dst) != moved:
                # two names of one inode: rename(2) does nothing and succeeds
                replaced = self.names.pop(dst, None)
                if replaced is not None:
                    self._drop_link(replaced)
                del self.names[path]
                self.names[dst] = moved
        elif kind is _UNLINK:
            inode = self._file_inode(path)
            del self.names[path]
            self._drop_link(inode)
        elif kind is _LINK:
            dst = op.dst or ""
            # Linux order: the source is looked up, then the target's parent, then
            # the target (EEXIST), then a directory source is refused
            is_dir = path in self.dirs
            inode = 0 if is_dir else self._file_inode(path)
            self._parent_ok(dst)
            if self.exists(dst):
                raise os_error(errno.EEXIST, dst)
            if is_dir:
                raise os_error(errno.EPERM, path)  # no hard link to a directory
            self.names[dst] = inode
            self.extra[inode] = self.extra.get(inode, 0) + 1
        elif kind is _RMDIR:
            if path not in self.dirs:
                raise os_error(errno.ENOTDIR if path in self.names else self.absent(path), path)
            if path == "/":
                raise os_error(errno.EBUSY, path)
            prefix = path + "/"
            for p in (*self.dirs, *self.names):
                if p.startswith(prefix):
                    raise os_error(errno.ENOTEMPTY, path)
            self.dirs.discard(path)
        elif kind is _MKDIR:
            if self.exists(path):
                raise os_error(errno.EEXIST, path)
            self._parent_ok(path)
            self.dirs.add(path)
        elif kind is _SYMLINK:
            if self.exists(path):
                raise os_error(errno.EEXIST, path)
            self._parent_ok(path)
            inode = self.next_inode
            self.next_inode += 1
            self.names[path] = inode
            self.data[inode] = symlink_content(op.data)
        elif kind is _TRUNCATE:
            inode = self._file_inode(path)
            old = self.data[inode]
            self.data[inode] = old[: op.size] + bytes(max(0, op.size - len(old)))
        elif kind is _FSYNC or kind is _FSYNC_DIR or kind is _FDATASYNC:
            if not self.exists(path):
                raise os_error(self.absent(path), path)
        else:
            raise ValueError(f"not a mutating operation: {op.kind}")

    def _drop_link(self, inode: int) -> None:
        """One name of ``inode`` is gone; the inode goes with its last name."""
        extra = self.extra.get(inode)
        if extra is None:
            del self.data[inode]
        elif extra > 1:
            self.extra[inode] = extra - 1
        else:
            del self.extra[inode]

    def _rename_dir(self, path: str, dst: str) -> None:
        """``rename(2)`` of directory ``path`` with its subtree to ``dst`` (absent or an
        empty directory, which it replaces). Raises ENOTDIR (``dst`` is a file),
        EINVAL (``dst`` inside ``path``), ENOTEMPTY (``dst`` a non-empty directory),
        EBUSY (the root)."""
        if dst == path:
            return
        if path == "/" or dst == "/":
            raise os_error(errno.EBUSY, path)
        if dst.startswith(path + "/"):
            raise os_error(errno.EINVAL, path)
        if dst in self.names:
            raise os_error(errno.ENOTDIR, dst)
        if dst in self.dirs:
            inside = dst + "/"
            if path.startswith(inside) or any(
                p.startswith(inside) for p in (*self.dirs, *self.names)
            ):
                raise os_error(errno.ENOTEMPTY, dst)
            self.dirs.discard(dst)
        prefix = path + "/"
        cut = len(path)
        for d in [d for d in self.dirs if d == path or d.startswith(prefix)]:
            self.dirs.discard(d)
            self.dirs.add(dst + d[cut:])
        names = self.names
        for p in [p for p in names if p.startswith(prefix)]:
            names[dst + p[cut:]] = names.pop(p)

    def _file_inode(self, path: str) -> int:
        inode = self.names.get(path)
        if inode is None:
            raise os_error(errno.EISDIR if path in self.dirs else self.absent(path), path)
        return inode
