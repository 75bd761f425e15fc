"""A canary on the real disk around a verify run (issue 21, item 5).

Interception and the audit hook (:mod:`crashpoint.faultfs._audit`) keep a target's writes
off the real disk as far as Python can see; what no audit event reports (``ctypes``, a C
extension's own I/O, a thread started without the context) can still land. So verify
looks, before and after, at the places such a write would go:

* the model's base path on the real disk (``/data/store`` for a document target): its
  whole tree when it exists, else that it is still absent;
* the working directory's entries (names, and each regular file's size and mtime; a
  directory's own timestamps are not compared: Python's ``__pycache__`` changes them),
  less the paths given in ``skip`` (``--out``);
* ``$TMPDIR``'s entries the same way, when the variable is set (unset, the system's
  shared ``/tmp`` would see every other process's files).

A difference is returned as one line per path, ``real disk changed: PATH (created)``,
which the verdict lists as incomplete. Linux/POSIX only; a root that cannot be read is
not watched (an error reading it is no finding).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

__all__ = ["Canary"]

_Entry = tuple[str, int, int]  # kind ("f", "d", "l", "o"), size in bytes, mtime in ns
_MAX_ENTRIES = 100_000


class Canary:
    """A snapshot of the watched places, taken at construction.

    Args:
        base: the model's base path (absolute), watched recursively.
        skip: paths whose subtrees are never compared (the report directory).
        cwd: the working directory (default: ``os.getcwd()``), top-level entries.
        tmpdir: the temporary directory (default: ``$TMPDIR`` when set, else none).
    """

    _root: str

    def __init__(
        self,
        base: str,
        *,
        skip: Iterable[str] = (),
        cwd: str | None = None,
        tmpdir: str | None = None,
    ) -> None:
        self.skip = frozenset(os.path.abspath(p) for p in skip)
        self.base = os.path.abspath(base)
        self.shallow = [
            os.path.abspath(p)
            for p in (cwd if cwd is not None else os.getcwd(), tmpdir or os.environ.get("TMPDIR"))
            if p
        ]
        self._before = self._look()

    def changes(self) -> list[str]:
        """What changed since the snapshot: ``real disk changed: PATH (created|removed|
        modified)``, sorted by path."""
        after = self._look()
        found = []
        for path in sorted(set(self._before) | set(after)):
            old, new = self._before.get(path), after.get(path)
            if old == new:
                continue
            what = "created" if old is None else "removed" if new is None else "modified"
            found.append(f"real disk changed: {path} ({what})")
        return found

    # --- looking ---------------------------------------------------------------
    def _look(self) -> dict[str, _Entry | None]:
        seen: dict[str, _Entry | None] = {}
        self._tree(self.base, seen)
        for root in self.shallow:
            if root in self.skip:
                continue
            try:
                names = os.listdir(root)
            except OSError:
                continue
            for name in names:
                path = os.path.join(root, name)
                if path in self.skip or self._under_base(path):
                    continue
                seen[path] = _entry(path)
        return seen

    def _under_base(self, path: str) -> bool:
        return path == self.base or path.startswith(self.base + os.sep)

    def _tree(self, top: str, seen: dict[str, _Entry | None]) -> None:
        """``top``'s whole tree; when ``top`` was absent at the snapshot, the tree of its
        first missing component (absent: must stay so)."""
        if not hasattr(self, "_root"):
            root = top
            while not os.path.lexists(root):
                parent = os.path.dirname(root)
                if parent == root or os.path.lexists(parent):
                    break
                root = parent
            self._root = root
        root = self._root
        if not os.path.lexists(root):
            seen[root] = None
            return
        stack = [root]
        while stack and len(seen) < _MAX_ENTRIES:
            path = stack.pop()
            if path in self.skip:
                continue
            entry = _entry(path)
            seen[path] = entry
            if entry is not None and entry[0] == "d":
                try:
                    stack += [os.path.join(path, n) for n in os.listdir(path)]
                except OSError:
                    continue


def _entry(path: str) -> _Entry | None:
    """``(kind, size, mtime_ns)`` of ``path`` (not followed), None if absent; a directory
    is compared by its entries, never its own timestamps."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return ("f", st.st_size, st.st_mtime_ns)
    if stat.S_ISDIR(mode):
        return ("d", 0, 0)
    if stat.S_ISLNK(mode):
        return ("l", 0, st.st_mtime_ns)
    return ("o", 0, 0)
