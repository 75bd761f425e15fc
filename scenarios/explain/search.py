"""``crashpoint explain``: from the files a crash left to the cause, the fix and a test (issue 12).

Given evidence (:mod:`._evidence`) and a target, :func:`explain` answers:

1. **What the target makes of it**: the evidence is loaded on a copy (a
   :class:`~crashpoint.faultfs.MemoryFileSystem`, never the evidence itself) by a
   fresh target; what load returns or raises, and whether load (or, for agent state,
   load_or_create) would write over it (C1 / A3).
2. **How it could happen**: the crash-state space of the kind's catalogue workloads,
   the user's workload and a bounded, seeded set of hypothesis-generated workloads is
   searched for states that match the evidence *by structure*: which files exist and
   each one's class (absent, empty, zero-filled, complete, unreadable, marker). For
   each match: the model, the workload, the crash point, a witness (the operations
   whose effects the state holds), the timeline and the operation whose missing
   fsync, directory fsync or ordering made it possible. No match: the nearest states
   with a file-by-file diff.
3. **What it breaks**: the invariant (SPEC.md §8 / §10) and what a correct storage does.
4. ``emit_test``: a self-contained pytest file.

Exit code (:attr:`Explanation.exit_code`): 1 when the target is at fault (its write
path reaches a matching state where an invariant fails, or its load mishandles the
evidence), else 0.
"""

from __future__ import annotations

import abc
import base64
import contextlib
import importlib.util
import itertools
import json
import os
import posixpath
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ... import __version__
from ...core import decode_bytes, encode_bytes, safe_session_file_name
from ...faultfs import (
    MODELS,
    PROCESS_CRASH,
    CrashState,
    MemoryFileSystem,
    Op,
    OpKind,
    PersistenceModel,
    crash_points,
    durable_at,
    get_model,
)
from ..engine.explore import explore_kind, invariant_info, prefix_state
from ..kinds.agent.catalogue import assistant, build_state, user
from ..kinds.agent.checkers import INVARIANTS, Invariant, expectation, judge, observe
from ..kinds.agent.kind import _probe, explore, record, resolve
from ..kinds.agent.targets import TARGETS, Target, get_target
from ..kinds.agent.workload import BASE_DIR, SCENARIOS, Workload
from ..kinds.document.kind import (
    BASIC_WORKLOADS,
    DOC_BASE,
    DOC_WORKLOADS,
    EXTRA_WORKLOADS,
    DocumentKind,
    DocWorkload,
    _sized,
    json_parses,
)
from ..kinds.registry import KindEntry, get_kind
from ..targets.user import BadTarget, load_factory, make_runner, target_mode
from .evidence import STAND_IN_BYTES, Evidence, EvidenceFile, _file, merged

__all__ = [
    "GENERATED_BOUND",
    "Explanation",
    "Match",
    "explain",
    "file_view",
    "generated_state_workload",
    "replay_document",
    "replay_state_storage",
    "timeline",
]

GENERATED_BOUND = 12
"""Hypothesis-generated workloads tried per explain (seeded; reported)."""

_JUDGED_PER_RUN = 6
"""Matching crash states judged per (workload, model) (the first with a failing
invariant is kept, else the first)."""

CONDITIONAL = {"E1": "a mark_not_resumable", "E2": "a mark_not_resumable", "D1": "a delete"}
"""Invariants that fail only after a call the files cannot witness: reported with the
match, counted in the verdict only when the evidence holds an ended marker (E1, E2) or
the user named the workload."""

SUFFIX_ROLES = (
    (".json.bak", "bak"),
    (".json.tmp", "tmp"),
    (".json.ended", "ended"),
    (".json", "main"),
)
"""Agent-state file names by role (SPEC.md §6: S.json, S.json.bak, S.json.tmp, S.json.ended)."""

REMEDY = {
    "R1": "write the snapshot to S.json.tmp, fsync it, rename it over S.json and fsync the "
    "directory (SPEC.md §6 save with sync='full'): an acknowledged save then survives any "
    "crash, and load returns it or the save in flight",
    "C1": "load_or_create creates a fresh session only on session_not_found and writes "
    "nothing otherwise (SPEC.md §6, §8 C1)",
    "D1": "delete removes bak first, then main (SPEC.md §6 delete)",
    "E1": "a scoped ended marker, fsynced before mark_not_resumable returns (SPEC.md §6)",
    "E2": "a scoped ended marker that names the condemned snapshot's sha256 (SPEC.md §6)",
    "V1": "a future-version main raises schema_version_unsupported, never falls back (SPEC.md §6)",
    "P1": "load treats an unpaired history as undecodable (SPEC.md §3)",
    "A1": "write a temporary file, fsync it, rename it over the document and fsync the "
    "directory: load then sees a whole generation or the initial value (SPEC.md §10 A1)",
    "A2": "fsync the data before the rename or the in-place truncate that publishes it, "
    "and the directory after: an acknowledged save is never lost (SPEC.md §10 A2)",
    "A3": "load returns the initial value only when no complete generation is on disk and "
    "never writes over files it could not read (SPEC.md §10 A3)",
    "A4": "a failed save leaves the last acknowledged generation in place (SPEC.md §10 A4)",
    "A5": "load reads only the document's own file, never a temporary left by a crash "
    "(SPEC.md §10 A5)",
}

PROCESS_CRASH_REMEDY = {
    "A1": "write the new value to a temporary file and rename it over the document: a crash "
    "then leaves one whole generation (an fsync does not help against a process crash; "
    "against a power loss also fsync the file before the rename and the directory after) "
    "(SPEC.md §10 A1)",
    "A2": "publish a save by renaming a complete temporary file over the document, never by "
    "rewriting it in place: a crash mid-save then leaves the last acknowledged generation "
    "(against a power loss, also fsync before the rename and the directory after) "
    "(SPEC.md §10 A2)",
}
"""What a correct storage does when a process crash is enough to reach the evidence."""


# --- structure ---------------------------------------------------------------------------


def _agent_parses(data: bytes) -> bool:
    try:
        decode_bytes(data)
    except Exception:
        return False
    return True


def _byte_class(data: bytes | None, name: str, parses: Callable[[bytes], bool]) -> str:
    if data is None:
        return "absent"
    if not data:
        return "empty"
    if not data.strip(b"\0"):
        return "zero-filled"
    if name.endswith(".ended"):
        return "marker"
    if parses(data):
        return "complete"
    return "merged" if merged(data) else "unreadable"


def _stem_role(name: str) -> tuple[str, str] | None:
    base = name.rsplit("/", 1)[-1]
    for suffix, role in SUFFIX_ROLES:
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)], role
    return None


@dataclass(frozen=True, slots=True)
class Match:
    """A crash state whose structure matches the evidence.

    Attributes:
        model, workload: where it was found; generated: the workload was drawn.
        crash_point: ``k``; operation / last_done: rendered.
        state: the crash state; files: {evidence name: detailed class}.
        witness: the operations whose effects the state holds (rendered).
        cause: the operation whose missing fsync, directory fsync or ordering made it
            possible, in words.
        invariants: invariants the target breaks in this state ([] none).
        expected, got: what load had to give and gave (for the first invariant).
        timeline: see :func:`timeline`.
        replay: a command that replays the crash point.
    """

    model: str
    workload: str
    crash_point: int
    operation: str
    last_done: str
    state: CrashState
    files: dict[str, str]
    witness: list[str]
    cause: str
    invariants: list[str]
    expected: str
    got: str
    timeline: dict[str, Any]
    replay: str
    generated: bool = False
    simple: bool = False
    """Nothing was lost: a process crash at this point leaves exactly this state."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "workload": self.workload,
            "generated": self.generated,
            "crash_point": {
                "index": self.crash_point,
                "operation": self.operation,
                "last_done": self.last_done,
            },
            "files": self.files,
            "state_digest": self.state.digest(),
            "witness": self.witness,
            "cause": self.cause,
            "invariants": self.invariants,
            "expected": self.expected,
            "load_returned": self.got,
            "timeline": self.timeline,
            "replay": self.replay,
        }


@dataclass(slots=True)
class Explanation:
    """What :func:`explain` found; :meth:`as_dict` is report.json's shape."""

    target: str
    kind: str
    evidence: Evidence
    session: str
    signature: dict[str, str]
    load: dict[str, Any]
    read_findings: list[dict[str, str]] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)
    nearest: list[dict[str, Any]] = field(default_factory=list)
    searched: dict[str, Any] = field(default_factory=dict)
    likelier: str = ""
    target_spec: str = ""
    user_workload: bool = False
    workloads_spec: dict[str, Any] = field(default_factory=dict)
    bystanders: list[str] = field(default_factory=list)
    """Evidence files the target never writes (by name, learnt from its runs): shown,
    loaded with the rest, left out of the match."""

    @property
    def write_path_at_fault(self) -> list[Match]:
        return [m for m in self.matches if self.counted(m)]

    def counted(self, m: Match) -> list[str]:
        """The invariants of ``m`` the verdict counts (see :data:`CONDITIONAL`)."""
        marker = any(f.name.endswith(".ended") for f in self.evidence.files.values())
        return [
            i
            for i in m.invariants
            if i not in CONDITIONAL or self.user_workload or (marker and i != "D1")
        ]

    @property
    def exit_code(self) -> int:
        return 1 if self.read_findings or self.write_path_at_fault else 0

    @property
    def verdict(self) -> str:
        if self.write_path_at_fault and self.read_findings:
            return "target at fault: its write path reaches this state and its load mishandles it"
        if self.write_path_at_fault:
            return "target at fault: its write path reaches this state and an invariant fails there"
        if self.read_findings:
            return "target at fault: its load mishandles the evidence"
        if self.matches:
            return "reachable, and no invariant fails there: the target handles it"
        if self.kind == "state-storage":  # its load gave what the reference's gives
            return "unexplained: no explored crash state matches; the target's load handles it"
        # a document's load is judged by A3 (and A5) only: what was saved is
        # not known, so a value the load invents cannot be told from a saved one
        return (
            "unexplained: no explored crash state matches; no check of the target's load "
            "fails (what was saved is unknown: its value is not judged)"
        )

    def _match_dict(self, m: Match) -> dict[str, Any]:
        d = m.as_dict()
        d["counted"] = self.counted(m)
        d["conditional"] = {
            i: f"fails only after {CONDITIONAL[i]} the files cannot show"
            for i in m.invariants
            if i not in d["counted"]
        }
        return d

    def invariant_words(self) -> list[dict[str, str]]:
        ids = list(
            dict.fromkeys(
                [f["invariant"] for f in self.read_findings]
                + [i for m in self.matches for i in self.counted(m)]
            )
        )
        words = [_words(i, self.target) for i in ids]
        first = self.write_path_at_fault[:1]
        if first and (first[0].model == PROCESS_CRASH.name or first[0].simple):
            for w in words:  # a process crash is enough: an fsync is not the fix
                if w["id"] in PROCESS_CRASH_REMEDY:
                    w["correct"] = PROCESS_CRASH_REMEDY[w["id"]]
        return words

    def as_dict(self) -> dict[str, Any]:
        ev = self.evidence
        first = self.write_path_at_fault[:1] or self.matches[:1]
        return {
            "tool": "crashpoint",
            "version": __version__,
            "command": "explain",
            "target": self.target,
            "kind": self.kind,
            "session": self.session,
            "evidence": {
                "source": ev.source,
                "form": ev.form,
                "private": ev.private,
                "files": [
                    {
                        "name": f.name,
                        "size": f.size,
                        "sha256": f.sha256,
                        "class": self.signature.get(f.name, "?"),
                        "bystander": f.name in self.bystanders,
                        **({"view": file_view(f.data)} if f.data is not None else {}),
                    }
                    for f in ev.files.values()
                ],
                "notes": list(ev.notes),
                "bystanders": list(self.bystanders),
            },
            "load": self.load,
            "read_findings": self.read_findings,
            "reachable": bool(self.matches),
            "matches": [self._match_dict(m) for m in self.matches],
            "first_match": self._match_dict(first[0]) if first else None,
            "nearest": self.nearest,
            "likelier": self.likelier,
            "invariants": self.invariant_words(),
            "searched": self.searched,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
        }


def _words(invariant: str, target: str) -> dict[str, str]:
    try:
        inv = Invariant(invariant)
        label, meaning = inv.label, inv.meaning
        section = "SPEC.md §8"
    except ValueError:
        info = invariant_info(invariant)
        label, meaning = info.label, info.meaning
        section = "SPEC.md §10"
    return {
        "id": invariant,
        "label": label,
        "meaning": meaning,
        "spec": f"{section} ({invariant})",
        "correct": REMEDY.get(invariant, f"see {section}"),
    }


# --- timelines and file views -----------------------------------------------------------


def timeline(
    model: PersistenceModel, ops: Sequence[Op], k: int, base: str, marks: Sequence[Op] = ()
) -> dict[str, Any]:
    """The operations as lanes per file for a report: ``{"crash_point": k, "model",
    "lanes": [{"file", "ops": [{"index", "op", "kind", "status"}]}], "calls": [{"label",
    "at"}]}``; status is ``durable``, ``volatile`` (done but not yet durable under the
    model at ``k``) or ``not-run`` (at or after ``k``)."""
    durable = durable_at(model, ops, k)
    lanes: dict[str, list[dict[str, Any]]] = {}
    for op in ops:
        status = "not-run" if op.index >= k else ("durable" if durable[op.index] else "volatile")
        path = op.path or "(none)"
        name = posixpath.relpath(path, base) if path.startswith(base + "/") else path
        if op.kind is OpKind.FSYNC_DIR:
            name = "(directory) " + name
        lanes.setdefault(name, []).append(
            {"index": op.index, "op": op.render(), "kind": op.kind.value, "status": status}
        )
        if op.kind is OpKind.RENAME and op.dst:
            dst = posixpath.relpath(op.dst, base) if op.dst.startswith(base + "/") else op.dst
            lanes.setdefault(dst, []).append(
                {"index": op.index, "op": op.render(), "kind": "rename-to", "status": status}
            )
    return {
        "crash_point": k,
        "model": model.name,
        "operations": len(ops),
        "lanes": [{"file": f, "ops": o} for f, o in lanes.items()],
        "calls": [{"label": m.label, "at": m.index} for m in marks],
    }


def file_view(
    data: bytes | None, reference: bytes | None = None, limit: int = 4096
) -> dict[str, Any]:
    """A file for a report: ``{"size", "text", "hex", "regions": [[start, end, what]]}``
    (bytes shown up to ``limit``); regions mark zero runs and, given ``reference`` (what
    a process crash at the same point holds), the bytes that differ from it (torn)."""
    if data is None:
        return {"size": None, "text": "", "hex": "", "regions": []}
    shown = data[:limit]
    hex_lines = []
    for off in range(0, len(shown), 16):
        chunk = shown[off : off + 16]
        hex_lines.append(
            f"{off:08x}  {chunk.hex(' '):<47}  "
            + "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        )
    regions: list[list[Any]] = []
    if reference is not None and reference != data:
        start = next(
            (i for i in range(min(len(data), len(reference))) if data[i] != reference[i]),
            min(len(data), len(reference)),
        )
        regions.append(
            [
                start,
                len(data),
                f"torn: not what the completed operations left ({len(reference)} bytes there)",
            ]
        )
    run = None
    for i, b in enumerate(data + b"\1"):
        if b == 0 and run is None:
            run = i
        elif b != 0 and run is not None:
            if i - run >= 16 or (run == 0 and i == len(data)):
                regions.append([run, i, "zero bytes"])
            run = None
    cuts = sorted(
        {
            0,
            len(shown),
            *(min(max(r[0], 0), len(shown)) for r in regions),
            *(min(r[1], len(shown)) for r in regions),
        }
    )
    segments = []
    for a, b in itertools.pairwise(cuts):
        if a == b:
            continue
        marked = [r[2] for r in regions if r[0] <= a and b <= r[1]]
        text = _summarised(shown[a:b])
        segments.append({"text": text, "mark": marked[0] if marked else ""})
    return {
        "size": len(data),
        "segments": segments,
        "text": shown.decode("utf-8", errors="replace"),
        "hex": "\n".join(hex_lines),
        "regions": regions,
        "truncated_view": len(data) > limit,
    }


_OPAQUE = re.compile(rb"[\x00-\x1f\x7f-\xff]{16,}")
"""A run of 16 or more bytes that are not printable ASCII (NULs, control bytes, high
bytes): binary unless it is UTF-8 text."""

_PICTURES = {c: chr(0x2400 + c) for c in range(32) if c not in (9, 10, 13)} | {127: "\u2421"}
"""A control character shown as its Unicode control picture (``\0`` as ``␀``)."""


def _texty(run: bytes) -> bool:
    """Whether ``run`` is UTF-8 text: it decodes, and at most a quarter of it is control
    characters other than tab and line ends."""
    try:
        text = run.decode("utf-8")
    except UnicodeDecodeError:
        return False
    controls = sum(1 for c in text if ord(c) in _PICTURES)
    return controls * 4 <= len(text)


def _summarised(data: bytes) -> str:
    """``data`` as text for a page: a run of 16 or more zero bytes is written
    ``⟨4096 zero bytes⟩`` and one of other bytes that are not text (not UTF-8, or control
    bytes) ``⟨N binary bytes⟩``, never a wall of glyphs; a control character elsewhere is
    its control picture (``␀``)."""
    out: list[str] = []
    at = 0
    for m in _OPAQUE.finditer(data):
        run = m.group()
        if run.strip(b"\0") and _texty(run):
            continue  # UTF-8 text (accented, CJK, line ends ...): shown as it is
        out.append(data[at : m.start()].decode("utf-8", errors="replace"))
        what = "zero" if not run.strip(b"\0") else "binary"
        out.append(f"\u27e8{len(run)} {what} bytes\u27e9")
        at = m.end()
    out.append(data[at:].decode("utf-8", errors="replace"))
    return "".join(out).translate(_PICTURES)


def _first_difference(a: bytes, b: bytes) -> int:
    """The first offset where ``a`` and ``b`` differ (the shorter one's length if one is a
    prefix of the other), compared a page at a time."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i : i + 4096] == b[i : i + 4096]:
        i += 4096
    return next((j for j in range(i, min(n, i + 4096)) if a[j] != b[j]), n)


def _torn_write(writes: Sequence[Op], got: bytes, wrote: bytes) -> Op:
    """Of the writes not fsynced since (newest first), the one the state lost or tore:
    the newest whose bytes cover the first offset where ``got`` differs from what the
    program wrote (``wrote``); else the newest (never an older, smaller one the state
    may hold whole)."""
    first = _first_difference(got, wrote)
    for w in writes:  # newest first
        if w.offset <= first < w.offset + len(w.data):
            return w
    return writes[0]


def _partly_written(ops: Sequence[Op], k: int, path: str, data: bytes) -> Op | None:
    """The program's next write that would complete ``path``, when the state holds the
    program's own writes so far of a file it is still writing (``ops[k]`` writes on at
    its end): a tear a process crash makes, which no fsync prevents."""
    nxt = ops[k] if k < len(ops) else None
    if (
        nxt is not None
        and nxt.kind is OpKind.WRITE
        and nxt.path == path
        and nxt.offset == len(data)
    ):
        return nxt
    return None


def _cause(
    model: PersistenceModel, initial: CrashState, ops: Sequence[Op], k: int, state: CrashState
) -> tuple[str, list[str]]:
    """Why ``state`` is possible at ``k``, and the witness (operations whose effects it holds)."""
    prefix = prefix_state(initial, ops, k)
    done = ops[:k]
    reasons: list[str] = []
    lost: set[int] = set()
    paths = {p for p, _ in state.files} | {p for p, _ in prefix.files}
    for path in sorted(paths):
        got, wrote = state.file(path), prefix.file(path)
        if got == wrote:
            continue
        flying = ops[k] if k < len(ops) else None
        if (
            got is not None
            and flying is not None
            and flying.kind is OpKind.WRITE
            and flying.path == path
            and len(got) > flying.offset
            and flying.data.startswith(got[flying.offset :])
            and (wrote or b"")[: flying.offset] == got[: flying.offset]
        ):
            # Torn by the crash: part of the write in flight reached the file.
            reasons.append(
                f"{posixpath.basename(path)} is torn: operation {flying.index} "
                f"{flying.render()} was in flight; {len(got) - flying.offset} of its "
                f"{len(flying.data)} bytes reached the file (one write(2) is not atomic). An "
                "fsync does not help against this tear: write a temporary file and rename it "
                "over the file"
            )
            lost.add(flying.index)
        elif got is not None and wrote is not None:
            # Data lost or torn: the last write to this file's inode not fsynced since.
            chain = {path}
            pending: list[Op] = []
            for op in reversed(done):
                if op.kind is OpKind.RENAME and op.dst in chain:
                    chain.add(op.path)
                    rename = op
                    pending.append(rename)
                elif op.kind is OpKind.FSYNC and op.path in chain and op.errno is None:
                    break
                elif op.kind in (OpKind.WRITE, OpKind.CREATE, OpKind.TRUNCATE) and op.path in chain:
                    pending.append(op)
            writes = [o for o in pending if o.kind is OpKind.WRITE]
            renames = [o for o in pending if o.kind is OpKind.RENAME]
            lost |= {o.index for o in writes}
            what = "empty" if not got else ("zero-filled" if not got.strip(b"\0") else "torn")
            if writes:
                w = _torn_write(writes, got, wrote)
                text = (
                    f"{posixpath.basename(path)} is {what}: operation {w.index} "
                    f"{w.render()} was never fsynced"
                )
                if renames:
                    r = renames[0]
                    text += (
                        f", yet operation {r.index} {r.render()} published it (missing fsync "
                        "before the rename)"
                    )
                elif any(o.kind in (OpKind.CREATE, OpKind.TRUNCATE) for o in pending):
                    text += " after the file was truncated in place (missing fsync)"
                reasons.append(text)
            else:
                reasons.append(f"{posixpath.basename(path)} differs from what was written (torn)")
        else:
            # A directory entry the program changed that did not persist (or the reverse).
            last_dir_sync = max(
                (o.index for o in done if o.kind is OpKind.FSYNC_DIR and o.errno is None),
                default=-1,
            )
            ops_on = [
                o
                for o in done
                if (o.path == path or o.dst == path) and o.kind.metadata and o.index > last_dir_sync
            ]
            lost |= {o.index for o in ops_on}
            if ops_on:
                o = ops_on[-1]
                kind = "ordering" if model.reorder else "missing directory fsync"
                reasons.append(
                    f"{posixpath.basename(path)} is {'absent' if got is None else 'present'}: "
                    f"operation {o.index} {o.render()} was not made durable by a directory "
                    f"fsync ({kind})"
                )
            else:
                reasons.append(f"{posixpath.basename(path)} differs from the program's view")
    if not reasons:
        last = done[-1].render() if done else "(nothing)"
        nxt = ops[k].render() if k < len(ops) else "(the run completed)"
        text = (
            "nothing was lost: the program's own order of operations leaves this state when it "
            f"stops after {last}, before {nxt} (a process crash is enough)"
        )
        for path, data in state.files:
            rest = _partly_written(ops, k, path, data)
            if data and rest is not None:
                text += (
                    f"; {posixpath.basename(path)} holds {len(data)} bytes of a save still being "
                    f"written (operation {rest.index} {rest.render()} writes the rest): an fsync "
                    "does not help against this tear; write a temporary file and rename it "
                    "over the file"
                )
            if data and merged(data):
                later = next(
                    (o for o in ops[k:] if o.kind is OpKind.TRUNCATE and o.path == path), None
                )
                if later is not None:
                    text += (
                        f"; {posixpath.basename(path)} holds new content over the old tail: "
                        f"operation {later.index} {later.render()} comes after the write "
                        "(ordering: truncate before writing, or write a new file and rename it)"
                    )
        reasons.append(text)
    witness = [
        f"{o.index}: {o.render()}"
        for o in done
        if o.kind.mutating and not o.kind.barrier and o.index not in lost
    ]
    return "; ".join(reasons), witness


# --- targets and searches ---------------------------------------------------------------


class _Search(abc.ABC):
    """One kind's side of the search: its workloads, runs, observation and judging."""

    kind = ""
    base = ""

    @abc.abstractmethod
    def parses(self, data: bytes) -> bool:
        """Whether ``data`` is a file this kind's load would accept as data."""

    def role(self, name: str, session: str) -> str | None:
        return name.rsplit("/", 1)[-1] if "/" not in name else name

    def signature(self, state: CrashState, session: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for path, data in state.files:
            if not path.startswith(self.base + "/"):
                continue
            rel = path[len(self.base) + 1 :]
            role = self.role(rel, session)
            if role is not None:
                out[role] = _byte_class(data, rel, self.parses)
        return out

    def sizes(self, state: CrashState, session: str) -> dict[str, int]:
        """Each file's size by the key :meth:`signature` gives it."""
        out: dict[str, int] = {}
        for path, data in state.files:
            if path.startswith(self.base + "/"):
                role = self.role(path[len(self.base) + 1 :], session)
                if role is not None:
                    out[role] = len(data)
        return out

    def loads(self, state: CrashState) -> bool | None:
        """Whether the target's load read ``state`` without an error (once judged), or
        None when this kind does not say."""
        return None


def _distance(a: dict[str, str], b: dict[str, str]) -> int:
    return sum(1 for r in set(a) | set(b) if a.get(r, "absent") != b.get(r, "absent"))


def _diff(evidence: dict[str, str], state: dict[str, str]) -> list[dict[str, str]]:
    return [
        {"file": r, "evidence": evidence.get(r, "absent"), "state": state.get(r, "absent")}
        for r in sorted(set(evidence) | set(state))
    ]


# ---- agent state -------------------------------------------------------------------------

_GEN_STEPS = ("save-grow", "save-shrink", "mark", "delete", "save-running")


def generated_state_workload(spec: str) -> Any:
    """The agent-state workload ``gen:STEP,STEP,...`` (steps: save-grow, save-shrink,
    save-running, mark, delete) on session ``s1``: saves of growing and shrinking
    histories, marks and deletes (issue 12's generated workloads). Raises KeyError."""

    name, _, rest = spec.partition(":")
    steps = [s for s in rest.split(",") if s]
    if name != "gen" or not steps or any(s not in _GEN_STEPS for s in steps):
        raise KeyError(f"bad generated workload {spec!r}; steps: {', '.join(_GEN_STEPS)}")

    def run(s: Any) -> None:
        n = 1
        for step in steps:
            if step.startswith("save"):
                n = max(1, n - 2) if step == "save-shrink" else n + 2
                msgs = []
                for i in range(n):
                    msgs += [user(f"q{i} " + "x" * 40 * i), assistant(f"a{i}")]
                s.save(build_state(*msgs, running=step == "save-running"))
            elif step == "mark":
                s.mark_not_resumable("s1")
            else:
                s.delete("s1")

    return Workload(spec, f"generated: {', '.join(steps)}", run)


def _draw(strategy: Any, seed: int, bound: int) -> list[Any]:
    """Up to ``bound`` distinct examples of ``strategy``, drawn by hypothesis with ``seed``
    (the same seed draws the same examples)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    drawn: list[Any] = []

    def keep(example: Any) -> bool:
        if example not in drawn:
            drawn.append(example)
        return False

    if bound <= 0:
        return []
    with contextlib.suppress(NoSuchExample):
        find(
            strategy,
            keep,
            settings=settings(
                max_examples=bound * 3,
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                phases=[Phase.generate],
            ),
            random=random.Random(seed),
        )
    return drawn[:bound]


def _draw_specs(seed: int, bound: int) -> list[str]:
    """``bound`` generated agent-state workload specs (``gen:...``), seeded."""
    from hypothesis import strategies as st

    strategy = st.lists(st.sampled_from(_GEN_STEPS), min_size=1, max_size=5).filter(
        lambda s: s[0].startswith("save")
    )
    return ["gen:" + ",".join(steps) for steps in _draw(strategy, seed, bound)]


def _nothing() -> None:
    return None


class _StateSearch(_Search):
    kind = "state-storage"

    def __init__(self, target: Any) -> None:
        self.target = target
        self.base = BASE_DIR
        self._recordings: dict[str, Any] = {}

    def parses(self, data: bytes) -> bool:
        return _agent_parses(data)

    def role(self, name: str, session: str) -> str | None:
        found = _stem_role(name)
        if found is None or "/" in name:
            return None
        stem, role = found
        return role if stem == session else None

    def evidence_signature(self, ev: Evidence, stem: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in ev.files.values():
            found = _stem_role(f.name)
            if found is not None and found[0] == stem and "/" not in f.name:
                out[found[1]] = f.klass(self.parses)
            else:
                out["other:" + f.name] = f.klass(self.parses)
        return out

    def load(self, ev: Evidence, session: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """Load the evidence on a copy with the target and with the reference (SPEC.md §6)."""

        def run(target: Any) -> tuple[Any, bool, bool, str]:
            fs = MemoryFileSystem(self._state(ev))
            storage = target(fs, self.base)
            obs = observe(storage, session)
            load_wrote = fs.mutations > 0
            probe = MemoryFileSystem(self._state(ev))
            created = "not tried"
            try:
                target(probe, self.base).load_or_create(session)
                created = "returned a state"
            except Exception as exc:
                created = f"raised {getattr(exc, 'code', type(exc).__name__)}"
            return obs, load_wrote, probe.mutations > 0, created

        obs, load_wrote, loc_wrote, created = run(self.target)
        ref, _, _, _ = run(TARGETS["reference"])
        same = (
            obs.code == ref.code
            if obs.state is None or ref.state is None
            else encode_bytes(obs.state) == encode_bytes(ref.state)
        ) and (obs.state is None) == (ref.state is None)
        load = {
            "returned": obs.describe(),
            "error": obs.code,
            "load_writes": load_wrote,
            "load_or_create": created,
            "load_or_create_writes": loc_wrote,
            "expected": ref.describe() + " (SPEC.md §6 load, as the reference does)",
        }
        findings: list[dict[str, str]] = []
        if (loc_wrote and obs.state is None and obs.code != "session_not_found") or load_wrote:
            findings.append(
                {
                    "invariant": "C1",
                    "expected": "load_or_create writes nothing when load failed "
                    "for a reason other than not-found",
                    "got": f"load gave {obs.describe()}; load_or_create {created} "
                    "and wrote over the evidence",
                }
            )
        if not same:
            findings.append(
                {
                    "invariant": "R1",
                    "expected": load["expected"],
                    "got": f"load returned {obs.describe()}",
                }
            )
        return load, findings

    def _state(self, ev: Evidence) -> CrashState:
        files = []
        for f in ev.files.values():
            files.append((f"{self.base}/{f.name}", _bytes_for(f)))
        dirs = {"/data", self.base}
        for path, _ in files:
            d = posixpath.dirname(path)
            while d.startswith(self.base):
                dirs.add(d)
                d = posixpath.dirname(d)
        return CrashState(tuple(sorted(files)), tuple(sorted(dirs)))

    def workloads(self, user: str | None, seed: int, bound: int) -> list[tuple[Any, bool]]:
        chosen: list[tuple[Any, bool]] = []
        if user:
            chosen.append((_user_state_workload(user), False))
        for w in SCENARIOS.values():
            if "storage" not in getattr(w, "tags", ("storage",)) or w.name == user:
                continue
            if w.setup is not None and not _setup_is_valid(w):
                continue  # a setup that writes corrupt files is not the write path's doing
            chosen.append((w, False))
        chosen += [(generated_state_workload(s), True) for s in _draw_specs(seed, bound)]
        return chosen

    def runs(self, workload: Any) -> tuple[CrashState, list[Op], list[Op]]:
        rec = record(workload, self.target)
        self._recordings[workload.name] = rec
        return rec.initial, rec.ops, rec.marks

    def judge(
        self, workload: Any, model: PersistenceModel, k: int, state: CrashState
    ) -> tuple[list[str], str, str, str]:
        """The invariants ``state`` (at crash point ``k`` of ``workload``) breaks, with
        what load had to give, what it gave, and a replay command."""

        rec = self._recordings[workload.name]
        wanted: set[Invariant] = {
            i for i in INVARIANTS if i not in (Invariant.F1, Invariant.S1, Invariant.S2)
        }
        obs, c1, v1 = _probe(state, ["s1"], self.target, wanted)
        exp = expectation(rec.calls, rec.expects.get("s1"), "s1", k)
        found: list[tuple[str, str, str]] = []
        verdict = judge(obs["s1"], exp, v1=v1["s1"])
        if verdict is not None:
            found.append((verdict[0].value, verdict[1], obs["s1"].describe()))
        if c1.get("s1"):
            found.append(
                ("C1", "load_or_create writes nothing", "load_or_create wrote to the disk")
            )
        invs = list(dict.fromkeys(f[0] for f in found))
        replay = (
            f"crashpoint explore --scenario {workload.name} --target {self.target.name} "
            f"--model {model.name} --crash-point {k}"
        )
        if workload.name.startswith("gen:"):
            replay = f"(generated workload {workload.name}: see the emitted test) " + replay
        if found:
            return invs, found[0][1], found[0][2], replay
        return [], "", "", replay


def _setup_is_valid(workload: Any) -> bool:
    """Whether every file the workload's setup writes decodes (a valid starting disk)."""

    try:
        initial = record(workload, TARGETS["reference"]).initial
    except Exception:
        return False
    return all(
        _agent_parses(d) for p, d in initial.files if p.endswith(".json") or p.endswith(".bak")
    )


def _user_state_workload(spec: str) -> Any:
    if spec in SCENARIOS:
        return SCENARIOS[spec]
    if spec.startswith("gen:"):
        return generated_state_workload(spec)

    if ":" not in spec:
        known = ", ".join([*SCENARIOS, "gen:STEP,..."])
        raise KeyError(f"unknown workload {spec!r}; known: {known}, or module:fn")
    return Workload(spec, f"the user's workload {spec}", _user_workload_fn(spec))


def _user_workload_fn(spec: str) -> Any:
    """``--workload module:fn``'s function; BadTarget naming ``--workload`` (not the
    target) when it does not import."""

    try:
        return load_factory(spec)
    except BadTarget as exc:
        raise BadTarget("--workload " + str(exc).removeprefix("target ")) from None


def _bytes_for(f: EvidenceFile) -> bytes:
    """The file's bytes, or for private bytes (a manifest) a stand-in of the same shape,
    at most :data:`~.evidence.STAND_IN_BYTES` long: a declared size is never
    materialised (a 51-byte manifest may declare 200 MB)."""
    if f.data is not None:
        return f.data
    if f.size == 0:
        return b""
    size = min(f.size, STAND_IN_BYTES)
    if f.zero_filled:
        return bytes(size)
    return b"\xff" * size  # private and non-zero: shape only (never parses)


# ---- documents ---------------------------------------------------------------------------


class _FileSearch(_Search):
    """A kind whose files are named as they are (no session stem): the signature of a
    state is each file under the base by its name; a run's marks come from its steps."""

    def evidence_signature(self, ev: Evidence, stem: str) -> dict[str, str]:
        return {f.name: f.klass(self.parses) for f in ev.files.values()}

    def signature(self, state: CrashState, session: str) -> dict[str, str]:
        return {
            path[len(self.base) + 1 :]: _byte_class(data, path, self.parses)
            for path, data in state.files
            if path.startswith(self.base + "/")
        }

    def sizes(self, state: CrashState, session: str) -> dict[str, int]:
        return {
            path[len(self.base) + 1 :]: len(data)
            for path, data in state.files
            if path.startswith(self.base + "/")
        }

    @staticmethod
    def _traced(run: Any) -> tuple[CrashState, list[Op], list[Op]]:
        """``run``'s initial disk, operations and marks (a step's begin and ack)."""
        marks = [Op(s.begin, OpKind.MARK, label=f"begin:{s.label}") for s in run.steps] + [
            Op(s.end, OpKind.MARK, label=f"ack:{s.label}")
            for s in run.steps
            if s.end is not None and s.error is None
        ]
        return run.initial, run.ops, sorted(marks, key=lambda o: o.index)


class _DocSearch(_FileSearch):
    kind = "document"

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self.base = doc.base

    def parses(self, data: bytes) -> bool:
        return json_parses(data)

    def _state(self, ev: Evidence) -> CrashState:
        files = tuple(sorted((f"{self.base}/{f.name}", _bytes_for(f)) for f in ev.files.values()))
        return CrashState(files, tuple(sorted(self.doc.initial_state.dirs)))

    def load(self, ev: Evidence, session: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
        obs = self.doc.observe(self._state(ev))
        init = self.doc.observe_initial()
        is_initial = self.doc._is_initial(obs)
        got = f"raised {obs.error}" if obs.error else repr(obs.value)[:200]
        load = {
            "returned": got,
            "error": obs.error,
            "load_writes": obs.wrote,
            "initial_value": repr(init.value)[:80]
            if init.error is None
            else f"raised {init.error}",
            "reads": sorted(p.rsplit("/", 1)[-1] for p in obs.reads),
        }
        findings: list[dict[str, str]] = []
        complete = [f.name for f in ev.files.values() if f.klass(self.parses) == "complete"]
        final = self._final_names()
        if obs.wrote and (obs.error is not None or is_initial):
            findings.append(
                {
                    "invariant": "A3",
                    "expected": "load writes nothing over files it could not read",
                    "got": f"load {got} and wrote over the evidence",
                }
            )
        elif is_initial and any(n in final for n in complete):
            findings.append(
                {
                    "invariant": "A3",
                    "expected": "load returns a complete value on disk, not the initial value",
                    "got": f"load returned the initial value {got}",
                }
            )
        stray = [r for r in load["reads"] if r not in final and r in ev.files]
        load["warnings"] = []
        if stray and obs.error is None and not is_initial:
            # A5 is a warning (SPEC.md §10): reported, never the target's fault.
            load["warnings"].append(
                {
                    "invariant": "A5",
                    "expected": "a leftover is never read as data",
                    "got": f"load read {stray[0]} (a file a crash-free run does not leave)",
                }
            )
        return load, findings

    def loads(self, state: CrashState) -> bool | None:
        obs = self.doc.observed.get(state.digest())
        return None if obs is None else obs.error is None

    def _final_names(self) -> set[str]:
        run = self.doc.record(self.doc.workload("first-save"), None)
        return {p[len(self.base) + 1 :] for p in run.data.final_paths}

    def workloads(self, user: str | None, seed: int, bound: int) -> list[tuple[Any, bool]]:
        chosen: list[tuple[Any, bool]] = []
        names = [n for n in BASIC_WORKLOADS if n not in ("random", "save-after-failure")]
        if user and user.split(":", 1)[0] not in (*DOC_WORKLOADS, *EXTRA_WORKLOADS):
            if ":" not in user:
                known = ", ".join((*DOC_WORKLOADS, *EXTRA_WORKLOADS))
                raise KeyError(f"unknown document workload {user!r}; known: {known}, module:fn")

            saved = tuple(_user_workload_fn(user)())  # module:fn returning the values saved
            chosen.append((DocWorkload(user, saved), False))
        elif user:
            names = [user, *[n for n in names if n != user]]
        chosen += [(self.doc.workload(n), False) for n in names]
        from hypothesis import strategies as st

        values = self.doc.values if self.doc.values in ("json", "flat-strings") else "json"
        sizes_strategy = st.lists(
            st.sampled_from((40, 300, 3000, 4100, 6000, 9000)), min_size=2, max_size=4
        )
        for sizes in _draw(sizes_strategy, seed, bound):
            vals = tuple(_sized(values, g, n) for g, n in enumerate(sizes))
            chosen.append((DocWorkload(f"gen:{'-'.join(map(str, sizes))}", vals), True))
        return chosen

    def runs(self, workload: Any) -> tuple[CrashState, list[Op], list[Op]]:
        return self._traced(self.doc.record(workload, None))

    def judge(
        self, workload: Any, model: PersistenceModel, k: int, state: CrashState
    ) -> tuple[list[str], str, str, str]:
        """The invariants ``state`` (at crash point ``k`` of ``workload``) breaks, with
        what load had to give, what it gave, and a replay command."""
        run = self.doc.record(workload, None)
        digest = state.digest()
        if digest not in self.doc.observed:
            self.doc.observed[digest] = self.doc.observe(state)
        found = [
            f
            for f in self.doc.judge(run, k, state, self.doc.observed[digest])
            if f.invariant != "A5"  # a warning (SPEC.md §10), never a fault
        ]
        replay = self.doc.replay(workload, model, k, None)
        if workload.name.startswith("gen:"):
            replay = f"(generated workload {workload.name}: see the emitted test) " + replay
        if found:
            return (
                list(dict.fromkeys(c.invariant for c in found)),
                found[0].expected,
                found[0].got,
                replay,
            )
        return [], "", "", replay


class _Named:
    """A registered kind's workload with the name the search reports it by (the
    kind's ``workload_name``; the kind's workloads need no ``name`` of their own)."""

    __slots__ = ("name", "workload")

    def __init__(self, kind: Any, workload: Any) -> None:
        self.workload = workload
        self.name: str = kind.workload_name(workload)


class _KindSearch(_FileSearch):
    """A registered kind's side of the search (:mod:`~crashpoint.scenarios.kinds.registry`),
    through the engine's Kind protocol alone: its workloads, runs, observation and
    judging. Its load is judged by the search (a match), not on its own: what the
    evidence held before the crash is not known."""

    def __init__(self, entry: KindEntry, kind: Any) -> None:
        self.entry = entry
        self.kind = entry.name
        self.k = kind
        self.base = entry.base_dir
        self._initial: CrashState | None = None

    def parses(self, data: bytes) -> bool:
        return bool(self.entry.parses(data))

    def _first_run(self) -> Any:
        return self.k.record(self.k.workload(self.entry.workloads[0]), None)

    def load(self, ev: Evidence, session: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
        dirs = self._first_run().initial.dirs
        files = tuple(sorted((f"{self.base}/{f.name}", _bytes_for(f)) for f in ev.files.values()))
        obs = self.k.observe(CrashState(files, tuple(sorted(dirs))))
        got = repr(obs)[:200]
        load: dict[str, Any] = {
            "returned": got,
            "error": None,
            "load_writes": False,
            "initial_value": "",
            "reads": [],
            "warnings": [],
        }
        return load, []

    def workloads(self, user: str | None, seed: int, bound: int) -> list[tuple[Any, bool]]:
        names = list(self.entry.workloads)
        if user:
            names = [user, *[n for n in names if n != user]]
        return [(_Named(self.k, self.k.workload(n)), False) for n in names]

    def runs(self, workload: Any) -> tuple[CrashState, list[Op], list[Op]]:
        return self._traced(self.k.record(workload.workload, None))

    def judge(
        self, workload: Any, model: PersistenceModel, k: int, state: CrashState
    ) -> tuple[list[str], str, str, str]:
        """The invariants ``state`` breaks at crash point ``k`` of ``workload``."""
        run = self.k.record(workload.workload, None)
        found = [
            f
            for f in self.k.judge(run, k, state, self.k.observe(state))
            if invariant_info(f.invariant).severity != "warning"
        ]
        replay = self.k.replay(workload.workload, model, k, None)
        if found:
            ids = list(dict.fromkeys(f.invariant for f in found))
            return ids, found[0].expected, found[0].got, replay
        return [], "", "", replay


# --- the search ---------------------------------------------------------------------------


def _session_of(ev: Evidence, given: str | None) -> str:
    if given:
        return str(safe_session_file_name(given))
    if ev.session:
        return str(safe_session_file_name(ev.session))
    stems = [s[0] for f in ev.files.values() if (s := _stem_role(f.name)) is not None]
    # the stem most files share; a tie goes to the first in sorted order (never to a
    # set's iteration order, which PYTHONHASHSEED decides)
    return min(sorted(set(stems)), key=lambda s: -stems.count(s)) if stems else "s1"


def _rename_session(sig: dict[str, str]) -> dict[str, str]:
    return dict(sorted(sig.items()))


def explain(
    evidence: Evidence,
    *,
    target: str | Any,
    kind: str | None = None,
    workload: str | None = None,
    models: Sequence[PersistenceModel] | None = None,
    session: str | None = None,
    seed: int = 0,
    bound: int = GENERATED_BOUND,
    timeout: float | None = None,
) -> Explanation:
    """Explain ``evidence`` against ``target`` (see the module docstring).

    Args:
        target: ``reference``, ``seed``, ``mutant:NAME`` (agent state), or a user
            target ``module:factory`` / ``file.py:factory``.
        kind: ``state-storage`` or ``document`` (default: state-storage for the
            built-in targets, document for a user target).
        workload: a workload to try first (a catalogue name, ``gen:...``, or for
            agent state ``module:fn`` taking a Session).
        models: the persistence models to search (default: all).
        session: the session id (default: from the file names).
        seed, bound: the generated workloads (``bound`` of them, drawn with ``seed``).

    Raises:
        KeyError: unknown target, model or workload; BadTarget for a user target.
    """

    models = list(models) if models is not None else list(MODELS.values())
    search: _StateSearch | _DocSearch | _KindSearch
    cleanup: Callable[[], object] = _nothing
    name = target if isinstance(target, str) else getattr(target, "__qualname__", repr(target))
    builtin = isinstance(target, str) and (
        target in ("reference", "seed") or target.startswith("mutant:")
    )
    if isinstance(target, str) and not builtin and ":" not in target:
        get_target(target)  # KeyError naming the known targets
    if kind is None:
        kind = "state-storage" if builtin else "document"
    if kind == "document" and builtin:
        raise KeyError(f"--kind document needs a user target (module:factory), not {target!r}")
    if kind == "state-storage":
        factory: Any = target if builtin or not isinstance(target, str) else load_factory(target)
        if not builtin and target_mode(factory, name) != "protocol":
            raise KeyError(
                f"--kind state-storage explains factory(fs, base_dir) targets; {name!r} "
                "takes base_dir only (give --kind document, or a protocol factory)"
            )
        _, resolved = resolve(PROCESS_CRASH, factory)
        if isinstance(target, str) and not builtin:
            resolved = Target(target, resolved.factory, resolved.description)
        search = _StateSearch(resolved)
    elif kind == "document":
        factory = load_factory(target) if isinstance(target, str) else target
        runner = make_runner(factory, DOC_BASE, spec=name, timeout=timeout, seed=seed)
        runner.__enter__()
        cleanup = lambda: runner.__exit__(None, None, None)  # noqa: E731
        values = getattr(factory, "crashpoint_values", None)
        doc = DocumentKind(
            runner, name, values=values if isinstance(values, str) else "json", seed=seed
        )
        search = _DocSearch(doc)
    else:
        entry = get_kind(kind)  # KeyError naming the known kinds
        factory = load_factory(target) if isinstance(target, str) else target
        runner = make_runner(factory, entry.base_dir, spec=name, timeout=timeout, seed=seed)
        runner.__enter__()
        cleanup = lambda: runner.__exit__(None, None, None)  # noqa: E731
        search = _KindSearch(entry, entry.make(runner, name, {}))
    try:
        return _explain(evidence, search, name, kind, workload, models, session, seed, bound)
    finally:
        cleanup()


def _explain(
    ev: Evidence,
    search: _StateSearch | _DocSearch | _KindSearch,
    name: str,
    kind: str,
    workload: str | None,
    models: Sequence[PersistenceModel],
    session: str | None,
    seed: int,
    bound: int,
) -> Explanation:
    stem = _session_of(ev, session) if kind == "state-storage" else ""
    load, findings = search.load(ev, stem or "s1")
    out = Explanation(name, kind, ev, stem, {}, load, findings)
    if kind == "state-storage":
        # The session id as the files say it (for load): the stem is the file name.
        for f in ev.files.values():
            if f.data and _stem_role(f.name) and _agent_parses(f.data):
                out.session = decode_bytes(f.data).session_id
                break
        if out.session != stem:
            load2, findings2 = search.load(ev, out.session)
            out.load, out.read_findings = load2, findings2
    workloads = search.workloads(workload, seed, bound)
    ran: list[tuple[Any, bool, CrashState, list[Op], list[Op]]] = []
    for w, generated in workloads:
        try:
            initial, ops, marks = search.runs(w)
        except Exception as exc:  # a workload the target cannot run: said, not hidden
            out.searched.setdefault("skipped", []).append(f"{w.name}: {type(exc).__name__}")
            continue
        ran.append((w, generated, initial, ops, list(marks)))
    learnt = _learnt_names(search.base, [(r[2], r[3]) for r in ran])
    out.bystanders = [n for n in ev.files if not _is_own(n, learnt)]
    if len(out.bystanders) == len(ev.files):  # nothing the target writes: all kept
        out.bystanders = []
    wanted = {
        r: c
        for r, c in search.evidence_signature(ev, stem).items()
        if r.removeprefix("other:") not in out.bystanders
    }
    by_name: dict[str, str] = {}
    for f in ev.files.values():
        role = _stem_role(f.name) if kind == "state-storage" else None
        if f.name in out.bystanders:
            by_name[f.name] = f.klass(search.parses)
        elif role is not None and role[0] == stem and "/" not in f.name:
            by_name[f.name] = wanted.get(role[1], "?")
        else:
            by_name[f.name] = wanted.get(f.name, wanted.get("other:" + f.name, "?"))
    out.signature = by_name
    if kind == "document" and out.load.get("error") is None:
        read = set(out.load.get("reads", []))
        for f in ev.files.values():  # the target's load reads it: not "unreadable"
            if by_name[f.name] == "unreadable" and f.name.rsplit("/", 1)[-1] in read:
                by_name[f.name] = "loadable"
    # A torn file matches a torn file of its size only (a 140-byte tear is not a
    # 4,096-byte one): the size is part of its structure.
    wanted_sizes = {
        key: ev.files[name].size
        for name in ev.files
        if name not in out.bystanders
        for key in [_evidence_key(kind, name, stem)]
        if wanted.get(key) == "unreadable"
    }
    nearest: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    states_seen = 0
    session_role = "s1"
    for w, generated, initial, ops, marks in ran:
        for model in models:
            found: Match | None = None
            judged = 0
            for point in crash_points(model, initial, ops):
                for state in point.states:
                    states_seen += 1
                    sig = search.signature(state, session_role)
                    if ev.private:  # a manifest says parses: no, never which way
                        sig = {r: "unreadable" if c == "merged" else c for r, c in sig.items()}
                    if (
                        sig == wanted
                        and judged < _JUDGED_PER_RUN
                        and _same_sizes(search.sizes(state, session_role), wanted_sizes)
                    ):
                        judged += 1
                        m = _match(
                            search, w, generated, model, initial, ops, marks, point.index, state, ev
                        )
                        if found is None or _better(m, found):
                            found = m
                        if found.invariants and found.simple:
                            break
                        continue
                    d = _distance(sig, wanted)
                    key = tuple(sorted(sig.items()))
                    if key not in nearest or nearest[key]["distance"] > d:
                        nearest[key] = {
                            "distance": d,
                            "model": model.name,
                            "workload": w.name,
                            "crash_point": point.index,
                            "diff": _diff(wanted, sig),
                        }
                if found is not None and found.invariants and found.simple:
                    break
            if found is not None:
                out.matches.append(found)
                if kind == "document":
                    out.workloads_spec[w.name] = list(w.values)
    out.user_workload = workload is not None
    order = {m.name: i for i, m in enumerate(models)}
    out.matches.sort(  # (where nothing was lost, a process crash is enough: said first)
        key=lambda m: (
            not out.counted(m),
            not m.simple,
            m.generated,
            order.get(m.model, 9),
            m.crash_point,
        )
    )
    out.searched = {
        **out.searched,
        "models": [m.name for m in models],
        "workloads": [w.name for w, g in workloads if not g],
        "generated": {
            "count": sum(1 for _, g in workloads if g),
            "bound": bound,
            "seed": seed,
            "names": [w.name for w, g in workloads if g],
        },
        "crash_states_examined": states_seen,
    }
    if not out.matches:
        ranked = sorted(nearest.values(), key=lambda n: (n["distance"], n["crash_point"]))
        out.nearest = ranked[:3]
        for n in out.nearest:  # the evidence's files as the report classes them
            for d in n["diff"]:
                if out.signature.get(d["file"]) == "loadable":
                    d["evidence"] = "loadable"
        out.likelier = _likelier(wanted, out.nearest)
    if kind == "state-storage":
        out.target_spec = search.target.name  # type: ignore[union-attr]
    else:
        out.target_spec = name
    return out


def _evidence_key(kind: str, name: str, stem: str) -> str:
    """The key an evidence file has in the evidence's signature (a role of the session's
    stem, ``other:NAME``, or for a file-named kind its name)."""
    if kind != "state-storage":
        return name
    role = _stem_role(name)
    if role is not None and role[0] == stem and "/" not in name:
        return role[1]
    return "other:" + name


def _same_sizes(sizes: dict[str, int], wanted: dict[str, int]) -> bool:
    return all(sizes.get(key) == size for key, size in wanted.items())


@dataclass(frozen=True, slots=True)
class _Learnt:
    """The file names a target's runs write (relative to its base directory)."""

    names: frozenset[str]
    shapes: frozenset[tuple[str, str]]  # (folder, extension) of each name with one
    temporaries: frozenset[tuple[str, int, str]]  # (folder, length, first 3) of the rest


def _learnt_names(base: str, runs: Sequence[tuple[CrashState, Sequence[Op]]]) -> _Learnt:
    """What the target writes: every path under ``base`` a mutating operation of its
    runs names (source and destination), and the files of their initial disks."""
    names: set[str] = set()
    for initial, ops in runs:
        paths = [p for p, _ in initial.files]
        for op in ops:
            if op.kind.mutating:
                paths += [p for p in (op.path, op.dst) if p]
        names |= {p[len(base) + 1 :] for p in paths if p.startswith(base + "/")}
    shapes: set[tuple[str, str]] = set()
    temporaries: set[tuple[str, int, str]] = set()
    for n in names:
        folder, leaf = posixpath.split(n)
        ext = posixpath.splitext(leaf)[1]
        if ext:
            shapes.add((folder, ext))
        else:
            temporaries.add((folder, len(leaf), leaf[:3]))
    return _Learnt(frozenset(names), frozenset(shapes), frozenset(temporaries))


def _is_own(name: str, learnt: _Learnt) -> bool:
    """Whether evidence file ``name`` is one the target could have written: a name its
    runs wrote, or one of the same folder and extension (another key, another
    session), or without an extension one of a written name's folder, length and first
    three characters (``tempfile``'s ``tmpXXXXXXXX``). Else a bystander (a ``.DS_Store``,
    an ``app.log``), left out of the match (issue 22)."""
    if name in learnt.names:
        return True
    folder, leaf = posixpath.split(name)
    ext = posixpath.splitext(leaf)[1]
    if ext:
        return (folder, ext) in learnt.shapes
    return (folder, len(leaf), leaf[:3]) in learnt.temporaries


def _better(m: Match, than: Match) -> bool:
    """A match with a failing invariant beats one without; then one where nothing was
    lost (the program's own order of operations) beats a torn or lost write."""
    return (bool(m.invariants), m.simple) > (bool(than.invariants), than.simple)


def _likelier(wanted: dict[str, str], nearest: Sequence[dict[str, Any]]) -> str:
    """Which explanation of an unmatched state is likelier (issue 12): external
    corruption, a bug outside the model, or a workload not tried."""
    if not nearest:
        return "no crash state was examined"
    diffs = [d for d in nearest[0]["diff"] if d["evidence"] != d["state"]]
    odd = [
        d
        for d in diffs
        if d["evidence"] in ("empty", "zero-filled", "unreadable", "merged", "loadable")
    ]
    if odd:
        d = odd[0]
        return (
            f"external corruption or a bug outside the model is likelier: no explored write of "
            f"this target leaves {d['file']} {d['evidence']} (the nearest state has it "
            f"{d['state']}); a disk, a tool or another program wrote it, or a fault the models "
            "do not have"
        )
    return (
        "a workload not tried is likelier: the files present differ from every explored state "
        "(another sequence of saves, deletes or marks); give it with --workload"
    )


def _match(
    search: _StateSearch | _DocSearch | _KindSearch,
    workload: Any,
    generated: bool,
    model: PersistenceModel,
    initial: CrashState,
    ops: list[Op],
    marks: list[Op],
    k: int,
    state: CrashState,
    ev: Evidence,
) -> Match:
    cause, witness = _cause(model, initial, ops, k, state)
    invariants, expected, got, replay = search.judge(workload, model, k, state)
    prefix = prefix_state(initial, ops, k)
    files: dict[str, str] = {}
    for path, data in state.files:
        if not path.startswith(search.base + "/"):
            continue
        rel = path[len(search.base) + 1 :]
        what = _byte_class(data, rel, search.parses)
        if what == "complete":
            gens = [o for o in ops[:k] if o.kind is OpKind.WRITE]
            newest = bool(gens) and data.startswith(gens[-1].data[:64])
            what = "a complete generation (" + ("newest" if newest else "older") + ")"
        elif what == "unreadable":
            wrote = prefix.file(path)
            what = "torn" if wrote is not None and wrote != data else "unreadable"
            if wrote is not None and len(data) % model.block_size == 0 and wrote != data:
                what = "torn at a block boundary"
            elif what == "unreadable" and _partly_written(ops, k, path, data) is not None:
                what = "partly written (the program's writes so far)"
            elif what == "unreadable" and search.loads(state):
                what = "loadable by the target (not JSON)"
        files[rel] = what + f", {len(data)} bytes"
    view = timeline(model, ops, k, search.base, marks)
    view["files"] = [
        {
            "name": p[len(search.base) + 1 :] if p.startswith(search.base + "/") else p,
            **file_view(d, prefix.file(p)),
        }
        for p, d in state.files
    ]
    return Match(
        model.name,
        workload.name,
        k,
        ops[k].render() if k < len(ops) else "(no crash: the run completed)",
        ops[k - 1].render() if k > 0 else "(nothing)",
        state,
        files,
        witness,
        cause,
        invariants,
        expected,
        got,
        view,
        replay,
        generated,
        state == prefix,
    )


# --- replays (what emitted tests call) ----------------------------------------------------


def _state_target(target: str) -> Any:
    """A built-in target's name as is; ``module:factory`` loaded (a protocol factory)."""
    if target in ("reference", "seed") or target.startswith("mutant:") or ":" not in target:
        return target

    return Target(target, load_factory(target), "the user's target")


def replay_state_storage(
    target: str, workload: str, model: str, k: int | None
) -> list[tuple[str, str]]:
    """Replay agent-state ``workload`` (a catalogue name or ``gen:...``) to crash point
    ``k`` (None: every crash point) under ``model`` against ``target``; the
    ``(invariant, crash state digest)`` pairs that fail there."""

    w = _user_state_workload(workload)
    result = explore(w, model=model, target=_state_target(target), crash_point=k)
    return [(v.invariant, v.state_digest) for v in result.counterexamples if v.subject == "s1"]


def replay_document(
    target: str, values: Sequence[Any], model: str, k: int | None, *, workload: str = "replay"
) -> list[tuple[str, str]]:
    """Replay the saves of ``values`` against the document ``target`` (a loadable
    ``module:factory``) to crash point ``k`` under ``model``; ``(invariant, digest)`` pairs."""

    factory = load_factory(target)
    with make_runner(factory, DOC_BASE, spec=target) as runner:
        doc = DocumentKind(runner, target)
        r = explore_kind(
            doc,
            DocWorkload(workload, tuple(values)),
            model=get_model(model),
            target=target,
            crash_point=k,
        )
    return [(c.invariant, c.state_digest) for c in r.counterexamples]


def load_evidence_files(
    target: str, kind: str, files: dict[str, bytes], session: str = "s1"
) -> dict[str, Any]:
    """Load ``files`` (name → bytes) on a copy with ``target``; what load did (the
    :class:`Explanation` ``load`` keys) and the read-path findings (emitted tests)."""

    ev = Evidence("(rebuilt)", "directory", {n: _file(n, d) for n, d in files.items()})
    if kind == "state-storage":
        _, t = resolve(PROCESS_CRASH, _state_target(target))
        load, findings = _StateSearch(t).load(ev, session)
    else:
        with make_runner(load_factory(target), DOC_BASE, spec=target) as runner:
            load, findings = _DocSearch(DocumentKind(runner, target)).load(ev, session)
    return {"load": load, "findings": [f["invariant"] for f in findings]}


# --- emitted tests ------------------------------------------------------------------------


def _target_lines(spec: str, path: str | None) -> list[str]:
    """The emitted file's ``EXPLAINED`` (the explained target) and ``TARGET``: a
    ``path/file.py:factory`` target is written relative to the emitted file's own
    directory (``path``; None: absolute), resolved from ``__file__`` when the test runs;
    a ``module:factory`` found under the current directory puts that directory (again
    relative to the test file) on ``sys.path``; a built-in name is written as is. So the
    test runs from any directory (issue 22)."""
    module_part, sep, attr = spec.rpartition(":")
    builtin = spec in ("reference", "seed") or spec.startswith("mutant:") or not sep
    here = os.path.dirname(os.path.abspath(path)) if path is not None else None

    def relative(where: str) -> str:  # (to the test file when both share a folder but /)
        if here is None or os.path.commonpath([here, where]) == os.path.sep:
            return where
        return os.path.relpath(where, here)

    lines = ["HERE = os.path.dirname(os.path.abspath(__file__))"]
    if builtin:
        lines.append(f"EXPLAINED = {spec!r}")
    elif module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
        rel = relative(os.path.abspath(module_part))
        lines.append(f"EXPLAINED = os.path.normpath(os.path.join(HERE, {rel!r})) + {':' + attr!r}")
    else:
        lines.append(f"EXPLAINED = {spec!r}")
        root = _import_root(module_part)
        if root is not None:
            rel = relative(root)
            lines += [
                f"ROOT = os.path.normpath(os.path.join(HERE, {rel!r}))  # where {module_part} is",
                "if ROOT not in sys.path:",
                "    sys.path.insert(0, ROOT)",
            ]
    lines.append(
        "TARGET = os.environ.get('CRASHPOINT_TARGET', EXPLAINED)  # a fixed target: set it"
    )
    return lines


def _import_root(module: str) -> str | None:
    """The directory ``module`` imports from when it is under the current directory (a
    user's package, not an installed one), else None."""
    try:
        found = importlib.util.find_spec(module.split(".", 1)[0])
    except (ImportError, ValueError):
        return None
    if found is None or found.origin is None:
        return None
    origin = os.path.dirname(os.path.abspath(found.origin))
    if found.submodule_search_locations is not None:  # a package: its parent directory
        origin = os.path.dirname(origin)
    cwd = os.getcwd()
    return origin if origin == cwd or origin.startswith(cwd + os.sep) else None


def emit_test(
    ex: Explanation, *, values: Iterator[Any] | None = None, path: str | None = None
) -> str:
    """A self-contained pytest file for ``ex`` (issue 12): a read-path finding rebuilds
    the evidence and asserts what load must do; a write-path finding replays the matched
    workload to the matched crash point under the matched model and asserts the
    invariant. ``CRASHPOINT_TARGET`` in the environment swaps the target (the fixed one).
    ``path`` is where the file will be written: a target's file is named relative to it,
    so the test passes or fails from any working directory (:func:`_target_lines`).

    Raises ValueError for a kind other than ``document`` and ``state-storage`` (the
    emitted test replays through their replay helpers)."""
    if ex.kind not in ("document", "state-storage"):
        raise ValueError(f"--emit-test writes tests for document and state-storage, not {ex.kind}")
    lines = [
        f'"""Regression test emitted by `crashpoint explain` for {ex.evidence.source!r}.',
        "",
        f"Verdict on {ex.target}: {ex.verdict}.",
        "Run against a fixed target: CRASHPOINT_TARGET=<target> pytest THIS_FILE.",
        '"""',
        "",
        "import base64",
        "import os",
        "import sys",
        "",
        *_target_lines(ex.target_spec, path),
        "",
    ]
    at_fault = ex.write_path_at_fault
    if at_fault:
        m = at_fault[0]
        inv = ex.counted(m)[0]
        lines += [
            f"MODEL, WORKLOAD, CRASH_POINT = {m.model!r}, {m.workload!r}, {m.crash_point}",
            "",
            "",
            "def _crash_point():",
            '    """The matched crash point on the explained target; on another target (a fix',
            "    issues other operations, so K names another moment) every crash point of the",
            '    workload is judged."""',
            "    return CRASH_POINT if TARGET == EXPLAINED else None",
        ]
        call = (
            "replay_state_storage(TARGET, WORKLOAD, MODEL, _crash_point())"
            if ex.kind == "state-storage"
            else "replay_document(TARGET, VALUES, MODEL, _crash_point(), workload=WORKLOAD)"
        )
        helper = "replay_state_storage" if ex.kind == "state-storage" else "replay_document"
        if ex.kind == "document":
            lines += ["", "", "VALUES = " + json.dumps(_doc_values(ex, m))]
        lines += [
            "",
            "",
            f"def test_{_ident(m.workload)}_{_ident(m.model)}_crash_point_{m.crash_point}"
            f"_keeps_{inv}():",
            f'    """{inv} under {m.model}: {_doc(m.cause)}"""',
            f"    from crashpoint.scenarios.explain.search import {helper}",
            "",
            f"    failed = {call}",
            f"    assert not [i for i, _ in failed if i == {inv!r}], failed",
        ]
    if ex.read_findings or not at_fault:
        files = {
            f.name: base64.b64encode(_bytes_for(f)).decode() for f in ex.evidence.files.values()
        }
        must = [f["invariant"] for f in ex.read_findings]
        lines += [
            "",
            "FILES = " + json.dumps(files, indent=4),
            "",
            "def test_load_of_the_evidence():",
            '    """Rebuilds the evidence on a copy and asserts what load must do."""',
            "    from crashpoint.scenarios.explain.search import load_evidence_files",
            "",
            "    files = {n: base64.b64decode(b) for n, b in FILES.items()}",
            f"    seen = load_evidence_files(TARGET, {ex.kind!r}, files, {ex.session or 's1'!r})",
            "    assert not seen['load']['load_writes'], seen",
        ]
        if ex.kind == "state-storage":
            lines.append("    assert not seen['load']['load_or_create_writes'], seen")
        lines.append(f"    assert seen['findings'] == [], seen  # found on {ex.target}: {must}")
    return "\n".join(lines) + "\n"


def _doc(text: str) -> str:
    return text[:160].replace("\\", "/").replace('"""', "'''")


def _ident(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")[:40] or "w"


def _doc_values(ex: Explanation, m: Match) -> list[Any]:
    return list(ex.workloads_spec.get(m.workload, []))
