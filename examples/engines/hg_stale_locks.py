"""A Mercurial extension the load of ``hg_engine`` runs with: a lock left on the disk of
a crash state names a process of the crashed run, and that process is dead.

Mercurial's lock is a symbolic link whose target is ``host:pid``, ``host`` being the
host name and, on Linux, the PID namespace (``mercurial/lock.py``, ``_getlockprefix``:
``result += b'/%x' % os.stat(b'/proc/self/ns/pid').st_ino``). The next ``hg`` breaks a
lock whose ``host`` is its own and whose ``pid`` is dead (``_lockshouldbebroken``):
after a process crash (same namespace) and after a reboot (the init namespace again,
the same inode) it does so. Under crashpoint every command runs in a PID namespace of
its own (containment, issue 21), so the load's ``host`` never equals the crashed run's
and its ``pid`` means nothing in the load's namespace: unpatched, ``hg`` would wait for
``ui.timeout`` (600 s) and report the lock held, a state no reboot gives. This
extension keeps Mercurial's rule with the namespace taken out: a lock of this host is
broken (Mercurial's own breaking code, under its ``.break`` lock), since every process
of the crashed run was killed with its namespace; a lock of another host is not.
"""

from __future__ import annotations

import socket
from typing import Any

from mercurial import lock as _lock


def uisetup(ui: Any) -> None:
    """Install the rule (Mercurial calls this once, when the extension loads)."""
    hostname = socket.gethostname().encode()

    def lockshouldbebroken(self: Any, locker: bytes | None) -> bool:
        if locker is None:
            return False
        host, sep, pid = locker.partition(b":")
        if not sep or not pid.isdigit():
            return False
        return host.split(b"/", 1)[0] == hostname

    _lock.lock._lockshouldbebroken = lockshouldbebroken
