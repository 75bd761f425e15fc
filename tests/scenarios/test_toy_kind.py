"""A third kind in one file (issue 19, acceptance 4): an append-only log.

Its invariants: LOG1 every acknowledged record is present after a crash (and in
order), LOG2 no record is torn or invented. The kind imports only public names, is
registered by a fixture, and runs through ``verify``, the CLI, the reports and
``explain`` without any engine, report or CLI file knowing it; unregistered, ``--kind
toy`` is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from crashpoint import verify
from crashpoint._cli import main
from crashpoint.faultfs import (
    CrashState,
    Fault,
    FileSystem,
    MemoryFileSystem,
    PersistenceModel,
    RecordingFileSystem,
)
from crashpoint.scenarios import (
    Finding,
    InvariantInfo,
    KindEntry,
    Run,
    Step,
    kind_names,
    register_invariants,
    register_kind,
    unregister_kind,
)

HERE = Path(__file__)
BASE = "/data/log"
LOG = f"{BASE}/log.txt"

register_invariants(
    [
        InvariantInfo(
            "LOG1",
            "acknowledged-present",
            "data-loss",
            "every acknowledged record is present after a crash, in order",
        ),
        InvariantInfo("LOG2", "untorn", "data-loss", "no record is torn or invented"),
    ]
)

WORKLOADS: dict[str, tuple[str, ...]] = {
    "appends": ("alpha", "bravo", "charlie"),
    "one-append": ("alpha",),
}


# --- two logs under test -------------------------------------------------------------


class AppendLog:
    """Appends a line and fsyncs it; a load keeps complete lines only (a power cut may
    leave the in-flight record torn, or zeros where it was to go): durable, untorn."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        self.fs, self.path = fs, f"{base_dir}/log.txt"

    def append(self, record: str) -> None:
        if not self.fs.exists(self.path):
            self.fs.create(self.path)
            self.fs.fsync_dir(BASE)
        data, offset = (record + "\n").encode(), self.fs.size(self.path)
        start = offset
        try:
            while data:  # a write may store a prefix only (a short count)
                n = self.fs.write(self.path, offset, data)
                data, offset = data[n:], offset + n
            self.fs.fsync(self.path)
        except OSError:
            self.fs.truncate(self.path, start)  # no torn record before the next one
            raise

    def records(self) -> list[str]:
        if not self.fs.exists(self.path):
            return []
        *complete, _tail = self.fs.read(self.path).split(b"\n")
        return [line.decode() for line in complete if b"\0" not in line]


class RewriteLog(AppendLog):
    """Rewrites the whole file in place (truncate, then write): a crash between the two
    loses every acknowledged record."""

    def append(self, record: str) -> None:
        old = self.records()
        if not self.fs.exists(self.path):
            self.fs.create(self.path)
        self.fs.truncate(self.path, 0)
        self.fs.write(self.path, 0, "".join(r + "\n" for r in [*old, record]).encode())
        self.fs.fsync(self.path)


# --- the kind --------------------------------------------------------------------------


class LogKind:
    """The append-only log kind for one target (the engine's Kind protocol)."""

    name = "toy"
    subject = "the log"
    tiebreak: tuple[str, ...] = ("fault", "state_digest", "got")

    def __init__(self, runner: Any, target: str, options: Mapping[str, Any]) -> None:
        self.runner, self.target = runner, target
        boot = MemoryFileSystem(dirs=("/data", BASE))
        self.initial = boot.crash_state()

    def workload(self, name: str) -> tuple[str, tuple[str, ...]]:
        return name, WORKLOADS[name]

    def workload_name(self, workload: tuple[str, tuple[str, ...]]) -> str:
        return workload[0]

    def invariants(self, *, faults: bool) -> tuple[str, ...]:
        return ("LOG1", "LOG2")

    def record(self, workload: tuple[str, tuple[str, ...]], fault: Fault | None) -> Run:
        rec = RecordingFileSystem(MemoryFileSystem(self.initial), fault=fault)
        log = self.runner.build(rec)
        steps = []
        for i, record in enumerate(workload[1]):
            step = Step(f"append#{i}", rec.op_count, payload=record)
            try:
                self.runner.call(step.label, lambda r=record: log.append(r))
            except OSError as exc:
                step.error = f"OSError: {exc}"
            step.end = rec.op_count
            steps.append(step)
        return Run(self.initial, list(rec.trace.ops), steps, fault)

    def observe(self, state: CrashState) -> tuple[str, ...] | str:
        log = self.runner.build(MemoryFileSystem(state))
        try:
            return tuple(log.records())
        except Exception as exc:
            return f"raised {type(exc).__name__}"

    def judge(
        self, run: Run, k: int, state: CrashState, observation: tuple[str, ...] | str
    ) -> list[Finding]:
        if isinstance(observation, str):
            return [Finding("LOG2", "records", observation)]
        acked = [s.payload for s in run.steps if s.acknowledged_by(k)]
        every = [s.payload for s in run.steps]
        out = []
        if list(observation[: len(acked)]) != acked:
            out.append(Finding("LOG1", f"{acked} first", repr(list(observation))))
        if any(r not in every for r in observation):
            out.append(Finding("LOG2", f"only records of {every}", repr(list(observation))))
        return out

    def trace_findings(self, run: Run) -> list[tuple[int, Finding]]:
        return []

    def describe_state(self, state: CrashState, run: Run, subject: str) -> dict[str, str]:
        return {path: f"{len(data)} bytes" for path, data in state.files}

    def replay(
        self,
        workload: tuple[str, tuple[str, ...]],
        model: PersistenceModel,
        k: int,
        fault: Fault | None,
    ) -> str:
        return (
            f"crashpoint verify {self.target} --kind toy --workload {workload[0]} "
            f"--model {model.name} --crash-point {k}"
        )


TOY = KindEntry(
    "toy",
    "an append-only log",
    BASE,
    make=LogKind,
    workloads=("appends", "one-append"),
    parses=lambda data: data.endswith(b"\n") or not data,
)


@pytest.fixture
def toy() -> Iterator[KindEntry]:
    register_kind(TOY)
    yield TOY
    unregister_kind("toy")


def spec(name: str) -> str:
    return f"{HERE}:{name}"


# --- through every front end ----------------------------------------------------------


def test_verify_runs_the_toy_kind_through_the_engine(toy: KindEntry) -> None:
    bad = verify(RewriteLog, kind="toy", target=spec("RewriteLog"))
    assert bad.verdict == "violation"
    assert "LOG1" in bad.killed_by()
    first = bad.counterexamples[0]
    assert first.subject == "the log" and first.replay.startswith("crashpoint verify ")
    good = verify(AppendLog, kind="toy", target=spec("AppendLog"), model="all")
    assert good.verdict == "clean", good.counterexamples[:1]
    assert sum(r.crash_points for r in good.results) > 0


def test_the_cli_verifies_and_reports_the_toy_kind(toy: KindEntry, tmp_path: Path) -> None:
    out = tmp_path / "bad"
    assert main(["verify", spec("RewriteLog"), "--kind", "toy", "--out", str(out)]) == 1
    report = json.loads((out / "report.json").read_text())
    assert report["kind"] == "toy" and report["verdict"] == "violation"
    found = [v for s in report["scenarios"] for v in s["violations"]]
    log1 = [v for v in found if v["invariant"] == "LOG1"]
    assert (
        log1 and log1[0]["title"] == "acknowledged-present" and log1[0]["session_id"] == "the log"
    )
    assert "LOG1" in (out / "report.md").read_text()
    assert (out / "report.html").exists()
    good = tmp_path / "good"
    assert main(["verify", spec("AppendLog"), "--kind", "toy", "--faults", "--out", str(good)]) == 0


def test_explain_searches_the_toy_kind(toy: KindEntry, tmp_path: Path) -> None:
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (evidence / "log.txt").write_bytes(b"")  # the log emptied by a crash
    out = tmp_path / "out"
    code = main(
        [
            "explain",
            str(evidence),
            "--target",
            spec("RewriteLog"),
            "--kind",
            "toy",
            "--out",
            str(out),
        ]
    )
    assert code == 1
    report = json.loads((out / "report.json").read_text())
    assert report["kind"] == "toy"
    assert any("LOG1" in m["counted"] for m in report["matches"])
    fixed = tmp_path / "fixed"
    assert (
        main(
            [
                "explain",
                str(evidence),
                "--target",
                spec("AppendLog"),
                "--kind",
                "toy",
                "--out",
                str(fixed),
            ]
        )
        == 0
    )


def test_an_unregistered_kind_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "toy" not in kind_names()
    assert main(["verify", spec("AppendLog"), "--kind", "toy", "--out", str(tmp_path)]) == 2
    assert "invalid choice: 'toy'" in capsys.readouterr().err
    with pytest.raises(KeyError, match="unknown kind 'toy'"):
        verify(AppendLog, kind="toy")


# --- never a false green from a broken kind or a target that does nothing --------------


class _Declares(LogKind):
    def invariants(self, *, faults: bool) -> tuple[str, ...]:
        return self.declared  # type: ignore[attr-defined,no-any-return]


def _broken(make: Any) -> KindEntry:
    return KindEntry("broken-toy", "a broken kind", BASE, make=make, workloads=("appends",))


@pytest.fixture
def broken() -> Iterator[Callable[[Any], KindEntry]]:
    def register(make: Any) -> KindEntry:
        return register_kind(_broken(make))

    yield register
    unregister_kind("broken-toy")


def test_a_kind_judging_no_invariant_or_an_unregistered_one_is_refused(
    broken: Callable[[Any], KindEntry], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for declared, said in (((), "judges no invariant"), (("QQ1",), "which no one registered")):

        def make(runner: Any, target: str, options: Any, d: Any = declared) -> LogKind:
            kind = _Declares(runner, target, options)
            kind.declared = d  # type: ignore[attr-defined]
            return kind

        broken(make)
        args = ["verify", spec("RewriteLog"), "--kind", "broken-toy", "--out", str(tmp_path)]
        assert main(args) == 2
        assert said in capsys.readouterr().err
        unregister_kind("broken-toy")


def test_a_finding_under_an_unregistered_id_is_an_error_not_dropped(
    broken: Callable[[Any], KindEntry], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    class Unregistered(LogKind):
        def judge(self, run: Run, k: int, state: CrashState, observation: Any) -> list[Finding]:
            return [Finding("ZZ9", "x", "y")]

    broken(Unregistered)
    args = ["verify", spec("RewriteLog"), "--kind", "broken-toy", "--out", str(tmp_path)]
    assert main(args) == 2
    assert "unknown invariant 'ZZ9'" in capsys.readouterr().err


class NoOpLog(AppendLog):
    """Acknowledges every append and writes nothing."""

    def append(self, record: str) -> None:
        return None


class FullDiskLog(AppendLog):
    """Every append fails: nothing is ever acknowledged."""

    def append(self, record: str) -> None:
        raise OSError(28, "No space left on device")


def test_a_target_that_writes_nothing_or_fails_every_call_is_refused(
    toy: KindEntry, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for store, said in (
        ("NoOpLog", "no file operation was recorded"),
        ("FullDiskLog", "every call failed"),
    ):
        assert main(["verify", spec(store), "--kind", "toy", "--out", str(tmp_path)]) == 2
        assert said in capsys.readouterr().err


def test_kind_names_are_checked_and_a_re_import_may_register_again() -> None:
    for name in ("", "my kind", "--out", "Toy", "document"):
        with pytest.raises(ValueError):
            register_kind(KindEntry(name, "", BASE, make=LogKind, workloads=("appends",)))
    register_kind(TOY)
    try:  # the same kind from a module imported again (a target loaded by path)
        again = KindEntry("toy", "an append-only log", BASE, make=LogKind, workloads=("appends",))
        assert register_kind(again) is again
        with pytest.raises(ValueError, match="registered already"):
            register_kind(KindEntry("toy", "", BASE, make=_Declares, workloads=("appends",)))
    finally:
        unregister_kind("toy")


def test_the_command_line_loads_plug_in_kinds_named_in_crashpoint_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = tmp_path / "log_kinds.py"
    plugin.write_text(
        "from crashpoint.scenarios import register_kind\n"
        "from test_toy_kind import TOY\n"
        "register_kind(TOY)\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("CRASHPOINT_KINDS", str(plugin))
    try:
        out = tmp_path / "out"
        assert main(["verify", spec("RewriteLog"), "--kind", "toy", "--out", str(out)]) == 1
        assert json.loads((out / "report.json").read_text())["kind"] == "toy"
    finally:
        unregister_kind("toy")
    monkeypatch.setenv("CRASHPOINT_KINDS", str(tmp_path / "missing.py"))
    capsys.readouterr()
    assert main(["verify", spec("RewriteLog"), "--kind", "toy", "--out", str(tmp_path / "x")]) == 2
    assert "CRASHPOINT_KINDS: " in capsys.readouterr().err


@pytest.mark.parametrize("command", ["verify", "explore"])
def test_a_plug_in_that_does_not_import_is_the_users_setting_not_the_target(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a new user's find: verify blamed the target ("target ... raised ValueError"),
    # explore called it an internal error and left an empty --out behind
    plugin = tmp_path / "raises.py"
    plugin.write_text("raise RuntimeError('boom at import')\n", encoding="utf-8")
    monkeypatch.setenv("CRASHPOINT_KINDS", str(plugin))
    out = tmp_path / "new" / "out"
    head = ["verify", spec("RewriteLog")] if command == "verify" else ["explore"]
    assert (
        main(
            [
                *head,
                "--scenario" if command == "explore" else "--workload",
                "first-save",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("crashpoint: error: CRASHPOINT_KINDS: "), err
    assert "RuntimeError: boom at import" in err and f"crashpoint {command} --help" in err
    assert "internal error" not in err and "raised ValueError" not in err
    assert not (tmp_path / "new").exists()
