"""Evidence: the files a crash left on a user's device (issue 12, ``crashpoint explain``).

Evidence comes as a directory, a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archive of one,
or a JSON manifest for files whose bytes are private::

    {"session": "s1",                      # optional
     "files": [{"name": "s1.json", "size": 0, "sha256": "e3b0…",
                "empty": true, "zero-filled": false, "parses": "no"}]}

Nothing is ever written to the evidence, and nothing outside a temporary
directory: a directory is read, an archive's members are read into memory (after
every member is checked: no absolute path, no ``..`` component, no link leaving the
archive, no device or fifo), and a manifest is parsed. Every refusal is
:class:`EvidenceError`, one line (exit 2 in the CLI).

Each file gets a *class*, the structure ``explain`` matches on (SPEC.md §10 terms):
``empty``, ``zero-filled``, ``complete`` (it parses), ``merged`` (a complete JSON value
followed by more bytes: new content over an old tail), ``unreadable`` (other bytes that
do not parse: torn or garbage) and ``marker`` (an agent-state ``.ended`` file). Private
bytes (a manifest) give ``complete`` or ``unreadable`` as the manifest says.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Evidence", "EvidenceError", "EvidenceFile", "load_evidence", "merged"]

MAX_BYTES = 64 * 1024 * 1024
"""Evidence larger than this many bytes in total is refused (a field report is small):
a directory's files, an archive's members once decompressed, a manifest's declared sizes."""

MAX_DEPTH = 64
"""Directory levels below the evidence's root; a deeper name is refused."""

STAND_IN_BYTES = 4096
"""Private bytes (a manifest) are loaded as a stand-in of at most this many bytes of the
declared shape (zero-filled or not parsing): the declared size is never materialised."""

_DECODE_ERRORS = (
    OSError,  # gzip.BadGzipFile (a CRC failure), bz2's invalid stream
    EOFError,  # a truncated stream
    zlib.error,  # corrupt deflate data
    lzma.LZMAError,
    ValueError,
    NotImplementedError,  # a zip member compressed by a method Python lacks
    RuntimeError,  # an encrypted zip member
    tarfile.TarError,
    zipfile.BadZipFile,
)


class EvidenceError(Exception):
    """Evidence that cannot be read or is refused (path traversal, a link out, a
    manifest that does not parse). One line; exit 2 in the CLI."""


@dataclass(frozen=True, slots=True)
class EvidenceFile:
    """One file of the evidence.

    Attributes:
        name: its path relative to the evidence's root, ``/``-separated.
        size: bytes.
        sha256: hex digest of its bytes.
        data: the bytes, or None when private (a manifest).
        parses: what the manifest says ("parses: yes/no"), or None (decided by the kind).
    """

    name: str
    size: int
    sha256: str
    data: bytes | None = None
    parses: bool | None = None
    zero_filled_hint: bool | None = None

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def zero_filled(self) -> bool:
        if self.data is not None:
            return self.size > 0 and not self.data.strip(b"\0")
        return bool(self.zero_filled_hint) and self.size > 0

    def klass(self, parses: Callable[[bytes], bool]) -> str:
        """The file's class: ``empty``, ``zero-filled``, ``marker``, ``complete`` or
        ``unreadable`` (``parses(data)`` says whether bytes parse for the kind)."""
        if self.empty:
            return "empty"
        if self.zero_filled:
            return "zero-filled"
        if self.name.endswith(".ended"):
            return "marker"
        ok = self.parses if self.data is None else parses(self.data)
        if ok is None:
            return "unreadable"
        if ok:
            return "complete"
        return "merged" if self.data is not None and merged(self.data) else "unreadable"

    def describe(self) -> str:
        what = f"{self.size} bytes, sha256 {self.sha256[:12]}…"
        if self.data is None:
            what += " (private: manifest)"
        return what


@dataclass(slots=True)
class Evidence:
    """What :func:`load_evidence` read.

    Attributes:
        source: the path given; form: ``directory``, ``tar``, ``zip`` or ``manifest``.
        files: by relative name, sorted.
        session: the session id a manifest names, if any.
        notes: what was skipped (directories, links inside the evidence), one line each.
    """

    source: str
    form: str
    files: dict[str, EvidenceFile] = field(default_factory=dict)
    session: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def private(self) -> bool:
        """Some bytes are not available (a manifest): matched by shape only."""
        return any(f.data is None for f in self.files.values())


def merged(data: bytes) -> bool:
    """Whether ``data`` is one complete JSON value followed by more bytes (new content
    over the tail of an older, longer one: written, then never truncated)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    try:
        _, end = json.JSONDecoder().raw_decode(text.lstrip())
    except (ValueError, RecursionError):
        return False
    rest = text.lstrip()[end:]
    return bool(rest.strip()) and bool(rest.replace("\0", "").strip())  # zeros: torn, not merged


def _file(name: str, data: bytes) -> EvidenceFile:
    return EvidenceFile(name, len(data), hashlib.sha256(data).hexdigest(), data)


def _printable_name(name: str) -> str:
    """A name as text: bytes that are not UTF-8 (``os.walk``'s and tarfile's surrogate
    escapes) become ``\\xNN``, so the name can be written to a report."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def _check_depth(source: str, files: Mapping[str, EvidenceFile]) -> None:
    """Refuse a file whose JSON nests deeper than Python's parser can read (it would
    raise RecursionError in every load, the reference's included): the evidence's
    doing, not the target's."""
    for f in files.values():
        if f.data is None or f.data.lstrip()[:1] not in (b"[", b"{"):
            continue
        try:
            json.loads(f.data.decode("utf-8", "replace"))
        except RecursionError:
            raise EvidenceError(
                f"evidence {source!r}: {f.name!r} nests JSON deeper than a parser reads "
                "(recursion limit): refused"
            ) from None
        except ValueError:
            continue


def load_evidence(path: str) -> Evidence:
    """Read the evidence at ``path`` (see the module docstring).

    Raises:
        EvidenceError: missing path, unreadable or unsafe archive, bad manifest,
            no file at all.
    """
    if not os.path.exists(path):
        raise EvidenceError(f"evidence {path!r}: no such file or directory")
    if os.path.isdir(path):
        ev = _from_directory(path)
    else:
        lower = path.lower()
        if lower.endswith(".zip"):
            ev = _from_zip(path)
        elif lower.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")):
            ev = _from_tar(path)
        elif lower.endswith(".json"):
            ev = _from_manifest(path)
        else:
            raise EvidenceError(
                f"evidence {path!r}: expected a directory, a .tar/.tar.gz/.zip archive "
                "or a .json manifest"
            )
    if not ev.files:
        raise EvidenceError(f"evidence {path!r} holds no file")
    _check_depth(path, ev.files)
    ev.files = dict(sorted(ev.files.items()))
    return ev


def _walk(root: str) -> list[tuple[str, str]]:
    """Every entry under ``root`` that is not a directory (links to directories too), as
    ``(relative name, full path)``, sorted, without recursion (an evidence of 1,200 levels
    never reaches Python's recursion limit); deeper than MAX_DEPTH: EvidenceError."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            rel = os.path.relpath(folder, root)
            raise EvidenceError(f"evidence {rel!r}: {exc.strerror or exc}") from None
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    raise EvidenceError(
                        f"evidence {root!r} nests directories deeper than {MAX_DEPTH} levels"
                    )
                stack.append((entry.path, depth + 1))
            else:
                found.append((os.path.relpath(entry.path, root), entry.path))
    return sorted(found)


def _from_directory(root: str) -> Evidence:
    ev = Evidence(root, "directory")
    total = 0
    real_root = os.path.realpath(root)
    for relpath, full in _walk(root):
        rel = _printable_name(relpath.replace(os.sep, "/"))
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(full)
            if os.path.commonpath([real_root, target]) != real_root:
                raise EvidenceError(f"evidence {root!r}: {rel!r} is a link leaving the evidence")
            ev.notes.append(f"{rel}: a link inside the evidence, skipped")
            continue
        if not stat.S_ISREG(st.st_mode):
            ev.notes.append(f"{rel}: not a regular file, skipped")
            continue
        total += st.st_size
        if total > MAX_BYTES:
            raise EvidenceError(f"evidence {root!r} is larger than {MAX_BYTES} bytes")
        try:
            with open(full, "rb") as f:
                ev.files[rel] = _file(rel, f.read())
        except OSError as exc:
            raise EvidenceError(f"evidence {rel!r}: {exc.strerror or exc}") from None
    return ev


def _safe_name(archive: str, name: str, what: str = "archive") -> str:
    """The member's name, relative and normalized. Refuses absolute paths and ``..``."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise EvidenceError(f"{what} {archive!r}: member {name!r} has an absolute path")
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        raise EvidenceError(f"{what} {archive!r}: member {name!r} leaves the evidence (..)")
    kept = [p for p in parts if p not in ("", ".")]
    if len(kept) > MAX_DEPTH + 1:
        raise EvidenceError(
            f"{what} {archive!r}: member {name[:80]!r}... nests deeper than {MAX_DEPTH} levels"
        )
    return _printable_name(posixpath.normpath("/".join(kept)))


def _decompressed(path: str) -> bytes:
    """The tar stream of ``path``: read whole and, if compressed (gzip, bzip2, xz, told by
    their magic bytes), decompressed to its end, so a CRC failure is found before any
    member is used; more than MAX_BYTES plus the tar headers' room: EvidenceError."""
    limit = MAX_BYTES + MAX_BYTES // 8  # members, plus headers and padding
    with open(path, "rb") as raw:
        magic = raw.read(6)
        raw.seek(0)
        data = _read_stream(raw, magic, limit + 1)
    if len(data) > limit:
        raise EvidenceError(f"archive {path!r} is larger than {MAX_BYTES} bytes decompressed")
    return data


def _strip_top(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """An archive of one directory: drop that directory's name from every member."""
    tops = {n.split("/", 1)[0] for n in files}
    if len(tops) == 1 and all("/" in n for n in files):
        return {n.split("/", 1)[1]: d for n, d in files.items()}
    return dict(files)


def _from_tar(path: str) -> Evidence:
    ev = Evidence(path, "tar")
    found: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(_decompressed(path)), mode="r:") as tar:
            members = tar.getmembers()
            names = {_safe_name(path, m.name) for m in members}
            for m in members:
                name = _safe_name(path, m.name)
                if m.issym() or m.islnk():
                    link = m.linkname
                    target = link if m.islnk() else posixpath.join(posixpath.dirname(name), link)
                    if link.startswith("/") or posixpath.normpath(target).startswith(".."):
                        raise EvidenceError(
                            f"archive {path!r}: member {m.name!r} is a link leaving the archive"
                        )
                    if posixpath.normpath(target) not in names:
                        raise EvidenceError(
                            f"archive {path!r}: member {m.name!r} links to nothing in the archive"
                        )
                    ev.notes.append(f"{name}: a link inside the archive, skipped")
                    continue
                if m.isdir():
                    continue
                if not m.isfile():
                    raise EvidenceError(
                        f"archive {path!r}: member {m.name!r} is not a regular file"
                    )
                total += m.size
                if total > MAX_BYTES:
                    raise EvidenceError(f"archive {path!r} is larger than {MAX_BYTES} bytes")
                if name in found:
                    raise EvidenceError(f"archive {path!r}: member {m.name!r} appears twice")
                handle = tar.extractfile(m)
                found[name] = handle.read() if handle is not None else b""
                if len(found[name]) != m.size:
                    raise EvidenceError(f"archive {path!r}: member {m.name!r} is truncated")
    except EvidenceError:
        raise
    except _DECODE_ERRORS as exc:
        raise EvidenceError(f"archive {path!r} cannot be read: {_reason(exc)}") from None
    for name, data in _strip_top(found).items():
        ev.files[name] = _file(name, data)
    return ev


def _from_zip(path: str) -> Evidence:
    ev = Evidence(path, "zip")
    found: dict[str, bytes] = {}
    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                name = _safe_name(path, info.filename)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise EvidenceError(
                        f"archive {path!r}: member {info.filename!r} is a link (refused)"
                    )
                if info.is_dir():
                    continue
                total += info.file_size
                if total > MAX_BYTES:
                    raise EvidenceError(f"archive {path!r} is larger than {MAX_BYTES} bytes")
                if name in found:
                    raise EvidenceError(f"archive {path!r}: member {info.filename!r} appears twice")
                found[name] = zf.read(info)  # (checks the CRC: BadZipFile)
    except EvidenceError:
        raise
    except _DECODE_ERRORS as exc:
        raise EvidenceError(f"archive {path!r} cannot be read: {_reason(exc)}") from None
    for name, data in _strip_top(found).items():
        ev.files[name] = _file(name, data)
    return ev


def _read_stream(raw: io.BufferedReader, magic: bytes, n: int) -> bytes:
    """Up to ``n`` bytes of ``raw``, decompressed as its magic bytes say."""
    if magic.startswith(b"\x1f\x8b"):
        with gzip.GzipFile(fileobj=raw) as gz:
            return gz.read(n)
    if magic.startswith(b"BZh"):
        with bz2.BZ2File(raw) as bz:
            return bz.read(n)
    if magic.startswith(b"\xfd7zXZ\x00"):
        with lzma.LZMAFile(raw) as xz:
            return xz.read(n)
    return raw.read(n)


def _reason(exc: BaseException) -> str:
    """An archive error in one line: its class (``BadGzipFile``, ``error`` of zlib ...)
    when its message is empty."""
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _yes_no(value: object, where: str) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("yes", "no", "true", "false"):
        return value.strip().lower() in ("yes", "true")
    raise EvidenceError(f"{where}: expected yes or no, not {value!r}")


def _from_manifest(path: str) -> Evidence:
    try:
        with open(path, "rb") as f:
            raw = f.read()
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise EvidenceError(f"manifest {path!r} does not parse: {exc}") from None
    except RecursionError:
        raise EvidenceError(f"manifest {path!r} nests deeper than a parser reads") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        raise EvidenceError(f"manifest {path!r}: expected an object with a list 'files'")
    ev = Evidence(path, "manifest")
    session = doc.get("session")
    if session is not None and not isinstance(session, str):
        raise EvidenceError(f"manifest {path!r}: 'session' must be a string")
    ev.session = session
    total = 0
    for i, entry in enumerate(doc["files"]):
        where = f"manifest {path!r} file {i}"
        if not isinstance(entry, dict):
            raise EvidenceError(f"{where}: expected an object")
        name = entry.get("name")
        size = entry.get("size")
        if not isinstance(name, str) or not name:
            raise EvidenceError(f"{where}: 'name' must be a non-empty string")
        name = _safe_name(path, name, "manifest")
        empty = _yes_no(entry.get("empty"), f"{where} 'empty'")
        if size is None and empty:
            size = 0
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise EvidenceError(f"{where}: 'size' must be a non-negative integer")
        if empty is not None and empty != (size == 0):
            raise EvidenceError(f"{where}: 'empty' contradicts 'size' {size}")
        total += size
        if total > MAX_BYTES:
            raise EvidenceError(
                f"manifest {path!r} declares more than {MAX_BYTES} bytes (file {i}: {size})"
            )
        if name in ev.files:
            raise EvidenceError(f"{where}: {name!r} is listed twice")
        digest = entry.get("sha256", "")
        if not isinstance(digest, str):
            raise EvidenceError(f"{where}: 'sha256' must be a hex string")
        ev.files[name] = EvidenceFile(
            name,
            size,
            digest.lower(),
            None,
            _yes_no(entry.get("parses"), f"{where} 'parses'"),
            _yes_no(entry.get("zero-filled"), f"{where} 'zero-filled'"),
        )
    return ev
