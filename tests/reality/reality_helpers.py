"""The parent side of the reality suite: jobs for the fork server, loop-device images,
and the tally that compares real crash states with the model's (FAULT-MODEL.md §3,
"Validation").

A :class:`Tally` counts runs, distinct real states, how many fell inside the model's
states at their crash point and which fell outside (each kept in full), and whether
the child's acknowledgements and operations agree with the model's recording. It
writes its figures to ``$CRASHPOINT_REALITY_FIGURES`` (set by the conftest) so the
terminal summary can print them across xdist workers.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crashpoint.faultfs import CrashPoint, CrashState, Op, OpKind, PersistenceModel, crash_points
from crashpoint.scenarios import SCENARIOS, get_target, record
from crashpoint.scenarios.kinds.agent.kind import Recording
from reality_driver import render_op, workload

HERE = Path(__file__).parent
LONG = os.environ.get("CRASHPOINT_REALITY_LONG", "") not in ("", "0")
"""The long run (acceptance 1 of issue 9): ``CRASHPOINT_REALITY_LONG=1``."""

STORAGE_SCENARIOS = [n for n, w in SCENARIOS.items() if "storage" in w.tags]
TARGETS = ["reference", "seed", "mutant:write-main-in-place", "mutant:no-fsync-before-rename"]
"""``reference``, ``seed`` and two mutants: one overwrites main in place (a torn main
under kills), one renames tmp over main without an fsync (a zero-length main on ext4)."""


# --- the fork server -------------------------------------------------------------------


class Driver:
    """A running ``reality_driver.py serve``; :meth:`run` forks one child per job."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "reality_driver.py"), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, job: dict[str, Any]) -> list[str]:
        """Run one job; returns the child's report lines. Raises AssertionError if the
        child did not die by SIGKILL (a harness error is never counted as a kill)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        report = Path(job["report"])
        report.unlink(missing_ok=True)
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        lines = report.read_text().splitlines() if report.exists() else []
        assert answer["signal"] == 9, f"the child did not die by SIGKILL: {answer} {lines[-3:]}"
        return lines

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# --- the model side ----------------------------------------------------------------------


def model_ops(ops: Sequence[Op]) -> list[str]:
    """The recorded trace rendered as the child reports its operations."""
    out = []
    for op in ops:
        size = len(op.data) if op.kind is OpKind.WRITE else op.size
        out.append(render_op(op.kind.value, op.path, op.dst, op.offset, size, op.errno))
    return out


@dataclass
class Expected:
    """A workload's recording on the model and its crash points under one model."""

    recording: Recording
    points: list[CrashPoint]
    ops: list[str]
    model: str = ""

    @classmethod
    def of(cls, scenario: str, target: str, model: PersistenceModel) -> Expected:
        rec = record(workload(scenario), get_target(target))
        points = list(crash_points(model, rec.initial, rec.ops))
        return cls(rec, points, model_ops(rec.ops), model.name)

    @property
    def n(self) -> int:
        return len(self.recording.ops)


def child_ops(lines: Sequence[str]) -> list[str]:
    return [line[3:] for line in lines if line.startswith("op ")]


def child_marks(lines: Sequence[str]) -> list[str]:
    return [line[5:] for line in lines if line.startswith("mark ")]


# --- rendering -------------------------------------------------------------------------------


def _render_bytes(data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()[:12]
    if len(data) <= 512:
        return f"{len(data)} bytes {data!r}"
    zeros = len(data) - len(data.rstrip(b"\0"))
    return (
        f"{len(data)} bytes (sha256 {digest}, {len(data) // 4096} pages + {len(data) % 4096},"
        f" {zeros} trailing zero bytes) head {data[:48]!r} ... tail {data[-48:]!r}"
    )


def render_state(state: CrashState) -> str:
    """A crash state in full: every directory, every file with its bytes (large files as
    length, digest, page count, head and tail)."""
    lines = [f"    dir  {d}" for d in state.dirs]
    lines += [f"    file {p}: {_render_bytes(data)}" for p, data in state.files]
    return "\n".join(lines) or "    (empty)"


def nearest(state: CrashState, candidates: Sequence[CrashState]) -> str:
    """How ``state`` differs from the closest model state (fewest differing paths)."""
    if not candidates:
        return "the model offers no state at this crash point"
    mine = dict(state.files)

    def diff(other: CrashState) -> list[str]:
        theirs = dict(other.files)
        out = []
        for p in sorted(set(mine) | set(theirs)):
            if mine.get(p) != theirs.get(p):
                a = "absent" if p not in mine else f"{len(mine[p])} bytes"
                b = "absent" if p not in theirs else f"{len(theirs[p])} bytes"
                out.append(f"{p}: real {a}, model {b}")
        if set(state.dirs) != set(other.dirs):
            out.append(f"dirs: real {state.dirs}, model {other.dirs}")
        return out

    best = min((diff(c) for c in candidates), key=len)
    return "closest model state differs in: " + "; ".join(best)


# --- the tally ---------------------------------------------------------------------------------


@dataclass
class Tally:
    """Figures of one reality test: runs, distinct real states, inside, outside."""

    name: str
    kind: str  # "kills" or "power cuts"
    runs: int = 0
    inside: int = 0
    by_rule: int = 0
    states: set[str] = field(default_factory=set)
    outside: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def note(self, what: str, count: bool) -> None:
        """Count an informative property of the runs (printed, never asserted)."""
        self.notes[what] = self.notes.get(what, 0) + int(count)

    def judge(
        self,
        what: str,
        observed: CrashState,
        allowed: Sequence[CrashState],
        *,
        cut: int = 0,
        rule: Callable[[CrashState], bool] | None = None,
    ) -> bool:
        """Count one real crash state; True if it is among ``allowed``, or, where the
        model's bound left states out (``cut > 0``), if ``rule`` (the model's own rule
        for the states it left out) says it is one of them."""
        self.runs += 1
        self.states.add(observed.digest())
        if observed in set(allowed):
            self.inside += 1
            return True
        if cut and rule is not None and rule(observed):
            self.inside += 1
            self.by_rule += 1
            return True
        bound = f" (the model's bound cut {cut} states here)" if cut else ""
        self.outside.append(
            f"OUTSIDE the model: {what}{bound}\n{render_state(observed)}\n"
            f"    {nearest(observed, allowed)}"
        )
        return False

    def agree(self, what: str, real: Sequence[str], model: Sequence[str], kind: str) -> None:
        """The child's acknowledgements (or operations) must equal the model's."""
        if list(real) != list(model):
            self.disagreements.append(
                f"{kind} disagree: {what}\n    real:  {list(real)}\n    model: {list(model)}"
            )

    def figures(self) -> str:
        return (
            f"{self.name}: {self.runs} {self.kind}, {len(self.states)} distinct real states, "
            f"{self.inside} inside the model ({self.by_rule} of them among the states its "
            f"bound counted in cut), {len(self.outside)} outside, "
            f"{len(self.disagreements)} disagreements, {time.perf_counter() - self.started:.1f} s"
            + "".join(f"; {n} {what}" for what, n in self.notes.items())
        )

    def publish(self) -> None:
        """Print the figures and write them for the terminal summary."""
        print(self.figures())
        for text in self.outside + self.disagreements:
            print(text)
        where = os.environ.get("CRASHPOINT_REALITY_FIGURES")
        if where:
            entry = {
                "name": self.name,
                "kind": self.kind,
                "runs": self.runs,
                "distinct": len(self.states),
                "digests": sorted(self.states),
                "inside": self.inside,
                "by_rule": self.by_rule,
                "outside": self.outside,
                "disagreements": self.disagreements,
                "seconds": round(time.perf_counter() - self.started, 2),
                "notes": self.notes,
            }
            with open(Path(where) / f"{os.getpid()}.jsonl", "a") as f:
                f.write(json.dumps(entry) + "\n")

    def check(self) -> None:
        """Publish, then fail on any state outside the model or any disagreement."""
        self.publish()
        assert self.runs > 0, f"{self.name}: nothing was run"
        problems = self.outside + self.disagreements
        assert not problems, f"{self.figures()}\n" + "\n".join(problems[:20])


def partial_write_rule(base: CrashState, op: Op, page: int = 4096) -> Callable[[CrashState], bool]:
    """FAULT-MODEL.md §2's rule for a write killed part-way: ``base`` (crash point k) with
    only the first ``j`` pages of write ``op`` landed (cut at a file-offset page boundary,
    ``1 <= j < pages``). For checking states a bound left out of the enumeration."""
    offset, data = op.offset, op.data
    lengths = range((offset // page + 1) * page - offset, len(data), page)

    def rule(observed: CrashState) -> bool:
        old, got = base.file(op.path), observed.file(op.path)
        if old is None or got is None or observed.dirs != base.dirs:
            return False
        rest = [f for f in observed.files if f[0] != op.path]
        if rest != [f for f in base.files if f[0] != op.path]:
            return False
        old = old + bytes(max(0, offset - len(old)))
        if got[:offset] != old[:offset]:
            return False
        grown = len(got) - offset
        candidates = [grown] if len(got) > len(old) else list(lengths)
        return any(
            m in lengths
            and got[offset : offset + m] == data[:m]
            and got[offset + m :] == old[offset + m :]
            for m in candidates
        )

    return rule


def sample(items: Sequence[Any], k: int, seed: str) -> list[Any]:
    """A seeded sample of ``k`` items (all of them when ``k`` covers them), in order."""
    if k >= len(items):
        return list(items)
    rng = random.Random(seed)
    return sorted(rng.sample(list(items), k), key=list(items).index)


# --- loop-device images ------------------------------------------------------------------------

IMAGE_PREFIX = os.environ.get("CRASHPOINT_REALITY_PREFIX", f"crashpoint-reality-{os.getpid()}-")
"""The prefix of this session's image folders (one per pytest session, set by the conftest):
the leftover check never mistakes another session's loop devices for this one's."""


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command; with ``check``, a failure raises AssertionError with its stderr."""
    done = subprocess.run(args, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def _attach_and_mount(image: Path, mountpoint: Path, fstype: str, options: str) -> str:
    """Attach ``image`` to a free loop device and mount it; returns the device. Two xdist
    workers can race for a device that is still being released: such a failure is retried
    on a fresh device (three times), then raised with mount's message."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    opts = ["-o", options] if options else []
    for attempt in range(3):
        device = sh("losetup", "--find", "--show", str(image)).stdout.strip()
        done = sh("mount", "-t", fstype, *opts, device, str(mountpoint), check=False)
        if done.returncode == 0:
            return device
        _detach(device, image)
        if attempt == 2:
            raise AssertionError(f"mount {image} on {device}: {done.stderr.strip()}")
        print(f"reality: mount of {image} on {device} failed, retried: {done.stderr.strip()}")
        time.sleep(0.2)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Mounted:
    """A loop-mounted image: where it is mounted, and its loop device."""

    path: Path
    device: str

    def journal_commits(self) -> int | None:
        """Transactions jbd2 committed on this ext4 so far (None: no jbd2 journal)."""
        info = Path("/proc/fs/jbd2") / f"{Path(self.device).name}-8" / "info"
        try:
            return int(info.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


@contextlib.contextmanager
def loop_mount(image: Path, mountpoint: Path, fstype: str, options: str = "") -> Iterator[Mounted]:
    """Attach ``image`` to a free loop device and mount it at ``mountpoint``; unmount and
    detach on the way out, whatever happened."""
    device = _attach_and_mount(image, mountpoint, fstype, options)
    try:
        yield Mounted(mountpoint, device)
    finally:
        if sh("umount", str(mountpoint), check=False).returncode != 0:
            time.sleep(0.2)
            if sh("umount", str(mountpoint), check=False).returncode != 0:
                sh("umount", "-l", str(mountpoint), check=False)
        _detach(device, image)


def _detach(device: str, image: Path, *, seconds: float = 10.0) -> None:
    """Detach ``device`` from ``image`` and wait until it is gone: a device still busy just
    after an unmount is only marked for auto-clear by ``losetup -d``."""
    deadline = time.monotonic() + seconds
    while True:
        sh("losetup", "-d", device, check=False)
        if str(image) not in sh("losetup", device, check=False).stdout:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{device} still attached to {image}")
        time.sleep(0.1)


def mkfs(image: Path, fstype: str, size: int) -> None:
    """A fresh ``fstype`` filesystem in a sparse file of ``size`` bytes."""
    with open(image, "wb") as f:
        f.truncate(size)
    force = "-F" if fstype.startswith("ext") else "-f"
    sh(f"mkfs.{fstype}", "-q", force, str(image))


Extents = tuple[int, tuple[tuple[int, bytes], ...]]


def _data_extents(path: Path) -> Extents:
    """The image's size and data extents ``(offset, bytes)`` (holes read as zeros)."""
    extents = []
    with open(path, "rb") as f:
        fd = f.fileno()
        end = os.fstat(fd).st_size
        offset = 0
        while offset < end:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after offset
                break
            stop = os.lseek(fd, start, os.SEEK_HOLE)
            extents.append((start, os.pread(fd, stop - start, start)))
            offset = stop
    return end, tuple(extents)


def consistent_copy(image: Path, copy: Path, *, attempts: int = 50) -> int:
    """Copy ``image`` (in use by a mounted filesystem) to ``copy`` once two consecutive
    reads agree: only a consistent copy is a state a power cut could leave. Returns the
    number of reads taken. Raises AssertionError if no two consecutive reads agree."""
    previous = _data_extents(image)
    for taken in range(2, attempts + 1):
        current = _data_extents(image)
        if current == previous:
            size, extents = current
            with open(copy, "wb") as f:
                f.truncate(size)
                for offset, data in extents:
                    os.pwrite(f.fileno(), data, offset)
            return taken
        previous = current
        time.sleep(0.01)
    raise AssertionError(f"{image}: no two consecutive reads agreed in {attempts}")


def leftover_loops(prefix: str) -> list[str]:
    """Loop devices still attached to a backing file under ``prefix``."""
    out = sh("losetup", "-a", check=False).stdout
    return [line for line in out.splitlines() if prefix in line]


def leftover_mounts(prefix: str) -> list[str]:
    with open("/proc/self/mounts") as f:
        return [line for line in f if prefix in line]


def fresh_dir(prefix: str = IMAGE_PREFIX) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


# --- the moments after the writer died -----------------------------------------------------

COMMIT_WAIT = {"ext4": 1.5, "xfs": 1.5, "btrfs": 2.5}  # seconds, the original mounted commit=1


def write_back_prefixes(root: Path, seed: str, pages: int | None = None) -> None:
    """Start writeback of a random page-aligned prefix of every file under ``root`` (its
    first ``pages`` pages when given) and wait for it (sync_file_range(2)): what background
    writeback may have done before a power cut. With delayed allocation the blocks are
    allocated and the size moves as far as the data written (FAULT-MODEL.md §3: the torn
    form "size advanced with the data")."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    sync_file_range = libc.sync_file_range
    sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    rng = random.Random(seed)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        size = -(-path.stat().st_size // 4096)
        if size < 1:
            continue
        length = (rng.randint(1, size) if pages is None else min(pages, size)) * 4096
        fd = os.open(path, os.O_RDONLY)
        try:
            if sync_file_range(fd, 0, length, 1 | 2 | 4) != 0:  # WAIT_BEFORE|WRITE|WAIT_AFTER
                raise OSError(ctypes.get_errno(), "sync_file_range", str(path))
        finally:
            os.close(fd)


def wait_for_commit(live: Mounted, before: int | None, fstype: str) -> None:
    """Wait past a journal commit: COMMIT_WAIT seconds, then (ext4) until jbd2 has committed
    a transaction more than ``before``, or 3 s in all (nothing was pending). A transaction
    still running behind one that was committing when the writer died would make the copy
    an earlier state: still a state a power cut leaves, judged the same way."""
    started = time.monotonic()
    time.sleep(COMMIT_WAIT[fstype])
    while before is not None and time.monotonic() - started < 3.0:
        now = live.journal_commits()
        if now is None or now > before:
            return
        time.sleep(0.05)
