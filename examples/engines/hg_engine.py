"""Mercurial (``mercurial`` from PyPI, pinned): a save is one commit, the load ``hg verify``
and the tip.

The records (:mod:`_codec`) are files ``r/0000`` ..., ``r/n``; a save writes them and
runs ``hg commit -A``; the load runs ``hg verify`` (Mercurial's own integrity check:
exit 3 when it fails) and reads the tip with ``hg cat``. ``hg`` is the one installed
beside this interpreter; the load's commands run in its own process through Mercurial's
dispatcher (the ``hg`` script's code, one interpreter start per load), with
``hg_stale_locks`` loaded: a lock the crashed run left is stale. Mercurial rolls back an
interrupted transaction (its journal) only on ``hg recover``, which ``hg verify`` tells the
user to run ("abandoned transaction found"): the load runs it then, as a user would, and
judges what it restores (the engine's documented recovery, not a finding).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from typing import Any

import _codec

_ENV = {
    "HGUSER": "crashpoint <c@p>",
    "HGPLAIN": "1",
    "HGRCPATH": "",
    "HOME": "/nonexistent",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "PYTHONDONTWRITEBYTECODE": "1",
}

# Mercurial reads these when it builds each command's ui (the load's commands run in this
# process): the same environment as a save's ``hg`` processes, set before its import
os.environ.update({k: v for k, v in _ENV.items() if k not in ("PATH", "HOME")})
from mercurial import dispatch, main_script  # noqa: E402

NAME = "hg"
CONFIGS: dict[str, None] = {"default": None}
DEFAULT = "default"

HG = os.path.join(os.path.dirname(sys.executable), "hg")


def version() -> str:
    """Mercurial's version."""
    from importlib.metadata import version as v

    return v("mercurial")


STALE_LOCKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hg_stale_locks.py")
"""The extension a load runs with: a lock of the crashed run is stale (its docstring)."""

_LOAD_CONFIG = (
    "--config",
    f"extensions.crashpoint_stale_locks={STALE_LOCKS}",
    # a lock still held after 10 s (none should be: the load is the only process) fails
    # the load visibly instead of waiting ui.timeout's default 600 s
    "--config",
    "ui.timeout=10",
)


def _hg(path: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([HG, "--cwd", path, *args], env=_ENV, capture_output=True, check=False)


def _hg_load(path: str, *args: str) -> tuple[int, bytes, bytes]:
    """``hg --cwd PATH ARGS`` with the load's configuration, run by Mercurial's own
    dispatcher in this process (as its command server runs commands: the same code
    as the ``hg`` script, one interpreter start for the whole load): ``(exit status,
    stdout, stderr)``."""
    out, err = io.BytesIO(), io.BytesIO()
    argv = [a.encode() for a in ("--cwd", path, *_LOAD_CONFIG, *args)]
    req = main_script.request(argv, fin=io.BytesIO(), fout=out, ferr=err)
    rc = dispatch.dispatch(req)
    return rc & 255, out.getvalue(), err.getvalue()


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
    (``hg verify`` fails, run whatever the tip; or the tip cannot be read), ValueError (a
    torn commit)."""
    if not os.path.isdir(os.path.join(path, ".hg")):
        return None
    # verified whatever the tip: a changelog whose last index entry is zero-filled (an
    # append inside an allocated block, its size moved before its data: ext4) names the
    # null revision as its tip, exit 0, while `hg verify` finds the store corrupt
    rc, vout, verr = _hg_load(path, "verify", "-q")
    if rc != 0 and b"abandoned transaction" in vout + verr:
        # an interrupted transaction's journal: Mercurial's documented recovery, which it
        # tells the user to run ("run 'hg recover' to clean up transaction"), as a user
        # would; what it restores is judged (the engine's recovery, not a finding)
        rc, rout, rerr = _hg_load(path, "recover")
        if rc != 0:
            raise IntegrityError(f"hg recover: {(rout + rerr)[:200]!r}")
        rc, vout, verr = _hg_load(path, "verify", "-q")
    if rc != 0:
        raise IntegrityError(f"hg verify: {(vout + verr)[:200]!r}")
    rc, out, err = _hg_load(path, "log", "-r", "tip", "-T", "{rev}")
    if rc != 0:
        raise IntegrityError(f"hg log: {err[:200]!r}")
    if out.strip() in (b"-1", b""):
        return None
    rc, out, err = _hg_load(path, "cat", "-r", "tip", "-T", "{path}\\0{hex(data)}\\n", "r")
    if rc != 0:
        raise IntegrityError(f"hg cat: {err[:200]!r}")
    recs = {}
    for line in out.splitlines():
        name, _, data = line.partition(b"\0")
        recs[name.decode().split("/")[-1]] = bytes.fromhex(data.decode())
    return _codec.value(recs)


class HgError(Exception):
    """An hg command failed during a save."""


class IntegrityError(Exception):
    """Mercurial's own integrity check failed on a crash state."""
