"""git (the system's ``git``): a save is one commit, the load ``git fsck`` and the tip.

The records (:mod:`_codec`) are files ``r/0000`` ..., ``r/n`` of a work tree; a save
writes them, ``git add -A`` and ``git commit``; the load runs ``git fsck --full``
(git's own integrity check: exit 3 when it fails) and reads the tip's tree with
``git show`` (not the work tree: what is committed). Identity, dates and hooks are fixed
so runs are deterministic.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import _codec

NAME = "git"
CONFIGS: dict[str, None] = {"default": None}
DEFAULT = "default"

_ENV = {
    "GIT_AUTHOR_NAME": "crashpoint",
    "GIT_AUTHOR_EMAIL": "c@p",
    "GIT_COMMITTER_NAME": "crashpoint",
    "GIT_COMMITTER_EMAIL": "c@p",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/nonexistent",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
}


def version() -> str:
    """``git --version``'s number."""
    return _git(".", "--version").split()[-1]


def _git(path: str, *args: str, check: bool = True) -> str:
    out = subprocess.run(
        ["git", "-C", path, *args], env=_ENV, capture_output=True, text=True, check=False
    )
    if check and out.returncode != 0:
        raise GitError(f"git {args[0]}: exit {out.returncode}: {out.stderr.strip()[:200]}")
    return out.stdout


def save(path: str, value: Any, config: str = DEFAULT) -> None:
    """Commit ``value``. Raises GitError."""
    if not os.path.isdir(os.path.join(path, ".git")):
        _git(path, "init", "-q", "-b", "main")
    recs = os.path.join(path, "r")
    shutil.rmtree(recs, ignore_errors=True)
    os.mkdir(recs)
    for k, v in _codec.records(value).items():
        with open(os.path.join(recs, k), "wb") as f:
            f.write(v)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "--no-verify", "--allow-empty", "-m", "save")


def load(path: str, config: str = DEFAULT) -> Any:
    """The tip's value (``None`` before the first commit). Raises IntegrityError
    (``git fsck`` fails, or the tip cannot be read), ValueError (a torn commit)."""
    if not os.path.isdir(os.path.join(path, ".git")):
        return None
    head = _git(path, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).strip()
    if not head:
        refs = _git(path, "for-each-ref", check=False).strip()
        if refs or os.path.exists(os.path.join(path, ".git", "refs", "heads", "main")):
            raise IntegrityError("HEAD names a branch that cannot be read")
        return None
    fsck = subprocess.run(
        ["git", "-C", path, "fsck", "--full", "--no-dangling"],
        env=_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    if fsck.returncode != 0:
        raise IntegrityError(f"git fsck: {fsck.stderr.strip()[:200]}")
    names = _git(path, "ls-tree", "--name-only", "HEAD", "r/").split()
    recs = {
        n.split("/")[-1]: subprocess.run(
            ["git", "-C", path, "show", f"HEAD:{n}"], env=_ENV, capture_output=True, check=True
        ).stdout
        for n in names
    }
    return _codec.value(recs)


class GitError(Exception):
    """A git command failed during a save."""


class IntegrityError(Exception):
    """git's own integrity check failed on a crash state."""
