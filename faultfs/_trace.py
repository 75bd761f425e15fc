"""Operations and the operation trace (FAULT-MODEL.md §1).

Every mutating call on a recording filesystem becomes one :class:`Op`, numbered
in program order from 0. Reads and workload marks are recorded as events too,
with ``index`` equal to the number of mutating operations that preceded them,
so a crash at point ``k`` (the first ``k`` operations done) sees exactly the
events whose ``index <= k`` ... less the mutating op ``k`` itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["Op", "OpKind", "Trace"]


class OpKind(str, enum.Enum):
    """What an event in a trace did."""

    MKDIR = "mkdir"
    """Create a directory entry (metadata)."""
    CREATE = "create"
    """Create an empty file or truncate an existing one to 0 bytes (metadata)."""
    WRITE = "write"
    """Write bytes at an offset; may extend the file (data)."""
    TRUNCATE = "truncate"
    """Set a file's size (metadata)."""
    RENAME = "rename"
    """Atomically replace ``dst`` by ``path``, a file or a directory with its subtree
    (metadata)."""
    UNLINK = "unlink"
    """Remove a name of a file; its inode goes with its last name (metadata)."""
    FSYNC = "fsync"
    """Make a file's data, size and inode durable; what else it commits is the model
    family's rule (barrier)."""
    FSYNC_DIR = "fsync_dir"
    """Make a directory's entries durable (barrier)."""
    FDATASYNC = "fdatasync"
    """Make a file's data and a grown size durable; commits no other metadata
    (barrier, data)."""
    RMDIR = "rmdir"
    """Remove an empty directory (metadata)."""
    LINK = "link"
    """Give the inode of file ``path`` a second name ``dst`` (a hard link; metadata)."""
    SYMLINK = "symlink"
    """Create the symbolic link ``path`` to the target ``data`` (bytes): a new name and
    an inode holding the target, made in one step (``symlink(2)``; metadata). In an
    image and a crash state it is a file whose content is
    :func:`~crashpoint.faultfs.symlink_content` of the target."""
    READ = "read"
    """Non-mutating: read a whole file."""
    EXISTS = "exists"
    """Non-mutating: test for a path."""
    LISTDIR = "listdir"
    """Non-mutating: list a directory."""
    STAT = "stat"
    """Non-mutating: size or kind of a path."""
    MARK = "mark"
    """Non-mutating: a label the workload recorded, e.g. ``ack:save#2``."""
    LOCK = "lock"
    """Non-mutating: an advisory exclusive lock taken on a file (``flock``; SPEC.md §6).
    Neither a mutation nor a barrier: it changes no crash state (creating an absent
    lock file is recorded before it as a ``create``)."""
    UNLOCK = "unlock"
    """Non-mutating: a lock released."""

    @property
    def mutating(self) -> bool:
        return self in _MUTATING

    @property
    def barrier(self) -> bool:
        return self in _BARRIERS

    @property
    def metadata(self) -> bool:
        return self in _METADATA


_MUTATING = frozenset(
    {
        OpKind.MKDIR,
        OpKind.CREATE,
        OpKind.WRITE,
        OpKind.TRUNCATE,
        OpKind.RENAME,
        OpKind.UNLINK,
        OpKind.FSYNC,
        OpKind.FSYNC_DIR,
        OpKind.FDATASYNC,
        OpKind.RMDIR,
        OpKind.LINK,
        OpKind.SYMLINK,
    }
)
_BARRIERS = frozenset({OpKind.FSYNC, OpKind.FSYNC_DIR, OpKind.FDATASYNC})
_METADATA = frozenset(
    {
        OpKind.MKDIR,
        OpKind.CREATE,
        OpKind.TRUNCATE,
        OpKind.RENAME,
        OpKind.UNLINK,
        OpKind.RMDIR,
        OpKind.LINK,
        OpKind.SYMLINK,
    }
)


@dataclass(frozen=True, slots=True)
class Op:
    """One recorded event.

    Attributes:
        index: for a mutating op, its position among mutating ops (0-based); for a
            non-mutating event, the number of mutating ops recorded before it.
        kind: what it did.
        path: the path operated on (the source of a rename or link; empty for a mark).
        dst: the destination of a rename, the new name of a link.
        offset: byte offset of a write.
        data: bytes of a write; a symbolic link's target.
        size: new size of a truncate, in bytes.
        label: a mark's label.
        errno: the errno the call failed with (an injected fault), or None.
    """

    index: int
    kind: OpKind
    path: str = ""
    dst: str | None = None
    offset: int = 0
    data: bytes = b""
    size: int = 0
    label: str = ""
    errno: int | None = None

    def render(self) -> str:
        """A one-line, human-readable rendering, e.g. ``rename('/d/s.json.tmp', '/d/s.json')``."""
        k = self.kind
        if k is OpKind.MARK:
            text = f"mark({self.label!r})"
        elif k is OpKind.RENAME or k is OpKind.LINK:
            text = f"{k.value}({self.path!r}, {self.dst!r})"
        elif k is OpKind.WRITE:
            text = f"write({self.path!r}, offset={self.offset}, {len(self.data)} bytes)"
        elif k is OpKind.TRUNCATE:
            text = f"truncate({self.path!r}, {self.size})"
        elif k is OpKind.SYMLINK:
            text = f"symlink({self.data!r}, {self.path!r})"
        else:
            text = f"{k.value}({self.path!r})"
        if self.errno is not None:
            import errno as _errno

            text += f" -> {_errno.errorcode.get(self.errno, str(self.errno))}"
        return text


@dataclass(slots=True)
class Trace:
    """The events of one run, in program order.

    ``events`` holds everything (mutating ops, reads, marks); ``ops`` only the
    mutating operations, where ``ops[i].index == i``.
    """

    events: list[Op] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)

    def marks(self, *, before: int | None = None) -> list[str]:
        """Labels of the marks recorded while at most ``before`` mutating ops were done
        (all marks when ``before`` is None)."""
        return [
            e.label
            for e in self.events
            if e.kind is OpKind.MARK and (before is None or e.index <= before)
        ]
