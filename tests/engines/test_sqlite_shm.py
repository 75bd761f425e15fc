"""The experiment behind SQLite's ``--volatile db.sqlite-shm`` (docs/models.md, "SQLite's
-shm"): a WAL database whose 200 committed rows are still in the WAL when its last
connection dies (killed: no checkpoint, -wal and -shm left), its -shm overwritten with
garbage while no connection is open, opens with every row intact and ``PRAGMA
integrity_check`` = ok. The first connection truncates the -shm (os_unix.c
``unixLockSharedMemory``) and, the header checksums failing, rebuilds the index from the
WAL (wal.c ``walIndexReadHdr`` -> ``walIndexRecover``). Fast, no strace: runs by default."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROWS = 200

WRITER = textwrap.dedent(
    """\
    import os, sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")  # every commit stays in the WAL
    con.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)")
    for i in range(int(sys.argv[2])):  # one transaction per row: 200 commits
        con.execute("INSERT INTO t VALUES (?, ?)", (i, f"row-{i}-" + "x" * 40))
    os._exit(0)  # the connection never closes: no checkpoint, -wal and -shm stay
    """
)


@pytest.mark.parametrize("garbage", ["random", "ones", "a valid-looking header from another db"])
def test_a_wal_database_opens_intact_over_a_garbage_shm(tmp_path: Path, garbage: str) -> None:
    db = tmp_path / "db.sqlite"
    subprocess.run([sys.executable, "-c", WRITER, str(db), str(ROWS)], check=True)
    shm, wal = Path(f"{db}-shm"), Path(f"{db}-wal")
    assert wal.stat().st_size > 0 and shm.stat().st_size >= 32768  # the rows are in the WAL
    size = shm.stat().st_size
    if garbage == "random":
        blob = os.urandom(size)
    elif garbage == "ones":
        blob = b"\xff" * size
    else:  # the -shm of another WAL database, checksums valid for that one
        other = tmp_path / "other.sqlite"
        subprocess.run([sys.executable, "-c", WRITER, str(other), "3"], check=True)
        blob = Path(f"{other}-shm").read_bytes()[:size].ljust(size, b"\0")
    shm.write_bytes(blob)
    con = sqlite3.connect(db)
    try:
        assert [r[0] for r in con.execute("PRAGMA integrity_check")] == ["ok"]
        rows = con.execute("SELECT k, v FROM t ORDER BY k").fetchall()
    finally:
        con.close()
    assert rows == [(i, f"row-{i}-" + "x" * 40) for i in range(ROWS)]
    again = sqlite3.connect(db)  # after the first connection's checkpoint on close
    try:
        assert again.execute("SELECT count(*) FROM t").fetchone() == (ROWS,)
    finally:
        again.close()
