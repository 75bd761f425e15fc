"""The directory effect of a metadata operation, shared by the persistence models'
replays (:mod:`._power`, :mod:`._fsfamily`): which name points at which inode, and which
directories exist, after the operation (FAULT-MODEL.md §1: create, rename, unlink,
mkdir, link, rmdir and a directory rename). Contents are tracked per inode elsewhere."""

from __future__ import annotations

__all__ = ["LINK", "MKDIR", "MOVE", "NEW", "RENAME", "RMDIR", "TRUNC", "UNLINK", "apply"]

MKDIR, NEW, RENAME, UNLINK, TRUNC, LINK, RMDIR, MOVE = range(8)
"""Metadata operation kinds (``TRUNC`` changes a size, no name)."""


def apply(
    kind: int, path: str, dst: str, inode: int, names: dict[str, int], dirs: set[str]
) -> None:
    """Apply the directory effect of one operation to ``names`` (path → inode) and
    ``dirs`` (existing directories), in place. A rename or unlink of a name that no
    longer points at ``inode`` (an earlier operation of it was lost) leaves it."""
    if kind == NEW:
        names[path] = inode
    elif kind == RENAME:
        if names.get(path) == inode:
            del names[path]
        names[dst] = inode
    elif kind == UNLINK:
        if names.get(path) == inode:
            del names[path]
    elif kind == MKDIR:
        dirs.add(path)
    elif kind == LINK:
        names[dst] = inode
    elif kind == RMDIR:
        dirs.discard(path)
    elif kind == MOVE:
        prefix = path + "/"
        cut = len(path)
        dirs.discard(dst)  # an empty directory it replaced
        for d in [d for d in dirs if d == path or d.startswith(prefix)]:
            dirs.discard(d)
            dirs.add(dst + d[cut:])
        for p in [p for p in names if p.startswith(prefix)]:
            names[dst + p[cut:]] = names.pop(p)
