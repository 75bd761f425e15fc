"""A document store with a shared writable ``mmap`` of a side file, for ``--volatile``
(tests/exec/test_volatile.py)::

    python mapped_store.py MODE save DIR VALUE_FILE
    python mapped_store.py MODE load DIR

Both modes commit the value to ``data.json`` (temporary, fsync, rename, directory fsync)
and keep ``index.map``: the value's bytes written with ``pwrite`` (so the model holds the
very bytes the disk does), then mapped ``MAP_SHARED``/``PROT_WRITE`` and a header byte
stored through the mapping, as SQLite keeps its wal-index; the save ends by removing
``index.map`` (a clean close, as SQLite removes its -shm), so only a crash leaves it.

* ``rebuilding`` (sound): the load never trusts ``index.map``: it builds it again from
  ``data.json``, the value it returns, and removes it as it ends.
* ``trusting`` (deliberately broken): a non-empty ``index.map`` is read back as the data
  (a crash left it: its bytes are the committed value's, so with the model's content the
  load would pass). Declared volatile, its crash states hold garbage there: the load fails.
"""

from __future__ import annotations

import json
import mmap
import os
import sys

DATA, INDEX = "data.json", "index.map"


def _index(path: str, blob: bytes) -> None:
    """``index.map`` := ``b"I" + blob`` by pwrite, then mapped shared and writable and its
    header stored through the mapping."""
    fd = os.open(os.path.join(path, INDEX), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"I" + blob, 0)
        with mmap.mmap(fd, 1 + len(blob), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as m:
            m[0:1] = b"I"  # the same byte: the file's content stays what pwrite wrote
    finally:
        os.close(fd)


def save(path: str, value_file: str) -> None:
    with open(value_file, "rb") as f:
        blob = f.read()
    tmp = os.path.join(path, DATA + ".tmp")
    with open(tmp, "wb") as f:
        f.write(blob)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(path, DATA))
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    _index(path, blob)
    os.unlink(os.path.join(path, INDEX))  # the clean close


def load(path: str, mode: str) -> int:
    data = os.path.join(path, DATA)
    index = os.path.join(path, INDEX)
    if mode == "trusting" and os.path.exists(index) and os.path.getsize(index) > 1:
        with open(index, "rb") as f:
            got = f.read()[1:]  # the index read back as the data: the bug
        print(json.dumps(json.loads(got)))
        return 0
    if not os.path.exists(data):
        print("null")
        return 0
    with open(data, "rb") as f:
        blob = f.read()
    value = json.loads(blob)
    if mode == "rebuilding":
        _index(path, blob)  # rebuilt from the data, whatever it held
        os.unlink(index)
    print(json.dumps(value))
    return 0


def main(argv: list[str]) -> int:
    mode, op, path = argv[1], argv[2], argv[3]
    if op == "save":
        save(path, argv[4])
        return 0
    return load(path, mode)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
