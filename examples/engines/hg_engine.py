"""Mercurial (``mercurial`` from PyPI, pinned): a save is one commit, the load ``hg verify``
and the tip.

The records (:mod:`_codec`) are files ``r/0000`` ..., ``r/n``; a save writes them and
runs ``hg commit -A``; the load runs ``hg verify`` (Mercurial's own integrity check:
exit 3 when it fails) and reads the tip with ``hg cat``. ``hg`` is the one installed
beside this interpreter. Mercurial rolls back an interrupted transaction (its journal)
only on ``hg recover``: a load does not run it, so a left journal is reported as found.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

import _codec

NAME = "hg"
CONFIGS: dict[str, None] = {"default": None}
DEFAULT = "default"

HG = os.path.join(os.path.dirname(sys.executable), "hg")
_ENV = {
    "HGUSER": "crashpoint <c@p>",
    "HGPLAIN": "1",
    "HGRCPATH": "",
    "HOME": "/nonexistent",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "PYTHONDONTWRITEBYTECODE": "1",
}


def version() -> str:
    """Mercurial's version."""
    from importlib.metadata import version as v

    return v("mercurial")


def _hg(path: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([HG, "--cwd", path, *args], env=_ENV, capture_output=True, check=False)


def save(path: str, value: Any, config: str = DEFAULT) -> None:
    """Commit ``value``. Raises HgError."""
    if not os.path.isdir(os.path.join(path, ".hg")):
        _run(path, "init")
    recs = os.path.join(path, "r")
    shutil.rmtree(recs, ignore_errors=True)
    os.mkdir(recs)
    for k, v in _codec.records(value).items():
        with open(os.path.join(recs, k), "wb") as f:
            f.write(v)
    _run(path, "commit", "-A", "-q", "-d", "0 0", "-m", "save")


def _run(path: str, *args: str) -> bytes:
    out = _hg(path, *args)
    if out.returncode != 0:
        raise HgError(f"hg {args[0]}: exit {out.returncode}: {out.stderr[:200]!r}")
    return out.stdout


def load(path: str, config: str = DEFAULT) -> Any:
    """The tip's value (``None`` before the first commit). Raises IntegrityError
    (``hg verify`` fails, or the tip cannot be read), ValueError (a torn commit)."""
    if not os.path.isdir(os.path.join(path, ".hg")):
        return None
    tip = _hg(path, "log", "-r", "tip", "-T", "{rev}")
    if tip.returncode != 0:
        raise IntegrityError(f"hg log: {tip.stderr[:200]!r}")
    if tip.stdout.strip() in (b"-1", b""):
        return None
    verify = _hg(path, "verify", "-q")
    if verify.returncode != 0:
        raise IntegrityError(f"hg verify: {(verify.stdout + verify.stderr)[:200]!r}")
    names = _hg(path, "files", "-r", "tip", "r").stdout.decode().split()
    recs = {}
    for n in names:
        got = _hg(path, "cat", "-r", "tip", n)
        if got.returncode != 0:
            raise IntegrityError(f"hg cat {n}: {got.stderr[:200]!r}")
        recs[n.split("/")[-1]] = got.stdout
    return _codec.value(recs)


class HgError(Exception):
    """An hg command failed during a save."""


class IntegrityError(Exception):
    """Mercurial's own integrity check failed on a crash state."""
