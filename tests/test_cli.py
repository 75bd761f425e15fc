"""The command line, called as ``main([...])`` (STYLE.md §14)."""

from __future__ import annotations

import json
import pathlib
import re

import pytest
from crashpoint._cli import main
from crashpoint.scenarios import MUTANTS, SCENARIOS


def run(args: list[str], out: pathlib.Path) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["explore", "--out", str(out), *args])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return code, report


def test_default_run_passes_and_writes_both_reports(tmp_path: pathlib.Path) -> None:
    code, report = run([], tmp_path)
    assert code == 0
    assert report["model"] == "process-crash" and report["target"] == "reference"
    assert len(report["scenarios"]) == len(SCENARIOS) >= 10
    for s in report["scenarios"]:
        assert {"name", "crash_points", "distinct_states", "violations"} <= set(s)
    assert report["totals"]["crash_points"] >= 60
    assert report["totals"]["violations"] == 0
    assert report["totals"]["distinct_states"] == sum(
        s["distinct_states"] for s in report["scenarios"]
    )
    md = (tmp_path / "report.md").read_text()
    assert "no violation" in md and "three-saves" in md


@pytest.mark.parametrize(
    "name", [n for n, t in MUTANTS.items() if t.expected and t.expected[1] == "process-crash"]
)
def test_every_mutant_exits_1_with_its_counterexample(name: str, tmp_path: pathlib.Path) -> None:
    code, report = run(["--target", f"mutant:{name}"], tmp_path)
    assert code == 1
    ce = report["counterexample"]
    assert ce is not None
    assert {"invariant", "crash_point", "crash_state", "load_returned", "replay"} <= set(ce)
    assert {"index", "operation"} <= set(ce["crash_point"])
    killed = {i for s in report["scenarios"] for i in s["killed_by"]}
    assert MUTANTS[name].expected[0] in killed  # type: ignore[index]


def test_seed_exits_1_with_the_e2_counterexample(tmp_path: pathlib.Path) -> None:
    code, report = run(["--target", "seed"], tmp_path)
    assert code == 1
    entry = next(s for s in report["scenarios"] if s["name"] == "stale-ended-marker")
    v = entry["violations"][0]
    assert v["invariant"] == "E2"
    assert v["crash_point"]["operation"].startswith("unlink(")
    # replaying the counterexample reproduces it
    replay = v["replay"].split()[2:]  # drop "crashpoint explore"
    code2, again = run(replay, tmp_path / "replay")
    assert code2 == 1
    assert again["counterexample"]["crash_point"] == v["crash_point"]


@pytest.mark.parametrize(
    "args",
    [
        ["--scenario", "no-such-scenario"],
        ["--target", "mutant:no-such"],
        ["--target", "nonsense"],
        ["--target", ""],  # an empty name is unknown, not the default
        ["--model", "cosmic-ray"],
        ["--shard", "3/2"],
        ["--shard", "x"],
        ["--crash-point", "-1"],
        ["--bogus-flag"],
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    args: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["explore", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err
    assert not (out / "report.json").exists()


def test_out_that_is_a_file_is_refused(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "file"
    f.write_text("keep me")
    assert main(["explore", "--out", str(f)]) == 2
    assert f.read_text() == "keep me"
    assert "not a directory" in capsys.readouterr().err


def test_list_shows_scenarios_and_mutants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SCENARIOS)
    assert all(name in out for name in MUTANTS)


def test_no_command_is_a_usage_error() -> None:
    assert main([]) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["--crash-point", "1000"],
        ["--crash-point", "٣"],
        ["--fault", "1000:ENOSPC"],
        ["--fault", "0:short-write", "--scenario", "first-save"],  # op 0 is a mkdir
        ["--fault", "3:EPERM"],
        ["--fault", "3:ENOSPC", "--faults"],
        ["--zoo", "--target", "seed"],
        ["--zoo", "--crash-point", "3"],
        ["--jobs", "0"],
        ["--jobs", "abc"],
        ["--shard", "0/3"],
        ["--shard", "1/0"],
    ],
)
def test_replays_that_match_nothing_and_clashing_flags_are_usage_errors(
    args: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explore", "--out", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert "crashpoint: error:" in err and "--help" in err and "Traceback" not in err


def test_fault_names_accept_aliases_and_any_case(tmp_path: pathlib.Path) -> None:
    from crashpoint.faultfs import FaultKind
    from crashpoint.scenarios import parse_fault

    assert parse_fault("3:fsyncgate").kind is FaultKind.FSYNC_LOST
    assert parse_fault("3:enospc") == parse_fault("3:ENOSPC")
    code = main(["explore", "--scenario", "first-save", "--fault", "2:eio", "--out", str(tmp_path)])
    assert code == 0


def test_repeated_scenario_counts_once(tmp_path: pathlib.Path) -> None:
    code, report = run(["--scenario", "first-save", "--scenario", "first-save"], tmp_path)
    assert code == 0 and len(report["scenarios"]) == 1


def test_every_invariant_found_has_a_listed_counterexample(tmp_path: pathlib.Path) -> None:
    code, report = run(["--target", "seed", "--model", "power-loss"], tmp_path)
    assert code == 1
    for s in report["scenarios"]:
        listed = {v["invariant"] for v in s["violations"]}
        assert listed == set(s["killed_by"])
        assert s["violations_listed"] == len(s["violations"]) <= s["violation_count"]
    md = (tmp_path / "report.md").read_text()
    assert "listed" in md


def test_fault_counterexample_names_the_fault(tmp_path: pathlib.Path) -> None:
    code, report = run(
        ["--target", "mutant:cleanup-deletes-main", "--faults", "--scenario", "three-saves"],
        tmp_path,
    )
    assert code == 1
    ce = report["counterexample"]
    assert ce["fault"] and f"--fault {ce['fault']}" in ce["replay"]


_REPO = pathlib.Path(__file__).parent.parent
_STORE = f"{_REPO}/examples/stores/jsonstore.py:InPlaceJsonStore"
_EVIDENCE = f"{_REPO}/examples/field-reports/zero-length-main"


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["explore", "--scenario", "first-save"], 0),
        # a real finding (exit 1); rich's SystemExit on the closed pipe once read as the
        # target's (exit 2, the reports discarded)
        (["verify", _STORE, "--workload", "ten-saves"], 1),
        (["explain", "--target", "reference", _EVIDENCE, "--model", "process-crash"], 0),
    ],
    ids=["explore", "verify", "explain"],
)
def test_a_closed_pipe_keeps_the_exit_code_and_the_reports(
    argv: list[str], code: int, tmp_path: pathlib.Path
) -> None:
    import subprocess
    import sys

    out = tmp_path / "out"
    script = "import sys; from crashpoint._cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *argv, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # like `| head -0`
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == code, err
    assert "raised" not in err, err
    assert (out / "report.json").is_file() and (out / "report.html").is_file()


@pytest.mark.parametrize("closed", [">&-", "2>&-", "<&-"])
def test_a_closed_standard_stream_is_no_traceback_and_the_reports_stand(
    closed: str, tmp_path: pathlib.Path
) -> None:
    import subprocess
    import sys

    out = tmp_path / "out"
    script = "import sys; from crashpoint._cli import main; sys.exit(main(sys.argv[1:]))"
    command = f'"$0" -c "$1" explore --scenario first-save --out "$2" {closed}'
    proc = subprocess.run(
        ["sh", "-c", command, sys.executable, script, str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["totals"]["distinct_states"] > 0
    assert (out / "report.html").is_file()


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    import crashpoint.scenarios.jobs.explore as parallel

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(parallel, "run_tasks", interrupted)
    assert main(["explore", "--out", str(tmp_path)]) == 130


def test_report_path_that_is_a_directory_is_refused_before_exploring(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.json").mkdir()
    assert main(["explore", "--out", str(tmp_path)]) == 2
    assert "report.json" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "crashpoint 0.1.0" in capsys.readouterr().out


def test_python_api_accepts_names() -> None:
    from crashpoint.scenarios import explore

    result = explore(SCENARIOS["first-save"], model="power-loss", target="seed")
    assert result.model == "power-loss" and result.target == "seed"


# --- issue 10: the CLI as a new user met it ---------------------------------------------------
def _children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(
    ("mode", "sig", "code", "line"),
    [
        (["explore", "--model", "all", "--faults"], "SIGINT", 130, "interrupted"),
        (["explore", "--zoo"], "SIGINT", 130, "interrupted"),
        (["explore", "--model", "all", "--faults"], "SIGTERM", 143, "terminated"),
        # workers that never return (no --timeout): killed, not waited for
        (
            ["verify", f"{_REPO}/tests/verify/stores.py:WorkerHangingStore"],
            "SIGINT",
            130,
            "interrupted",
        ),
        (
            ["verify", f"{_REPO}/tests/verify/stores.py:WorkerHangingStore"],
            "SIGTERM",
            143,
            "terminated",
        ),
    ],
    ids=["faults", "zoo", "faults-sigterm", "verify-hung-workers", "verify-hung-workers-sigterm"],
)
def test_ctrl_c_stops_the_workers_and_exits_130_promptly(
    mode: list[str], sig: str, code: int, line: str, tmp_path: pathlib.Path
) -> None:
    # (SIGTERM likewise, exit 143)
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "crashpoint", *mode),
            *("--jobs", "2", "--out", str(tmp_path)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            workers = _children(proc.pid)
        assert len(workers) >= 2, "the run never started its worker processes"
        time.sleep(0.3)  # let them get into the work (the faults run takes about 1.5 s)
        sent = time.monotonic()
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=20)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert err.decode().strip().splitlines()[-1] == f"crashpoint: {line}"
    assert took < 5, f"exit took {took:.1f} s after {sig}"
    time.sleep(0.5)
    assert [w for w in workers if _alive(w)] == []
    assert b"Traceback" not in err


def test_jobs_are_capped_at_the_usable_cores() -> None:
    import os

    from crashpoint._options import cap_jobs, usable_cores

    assert usable_cores() == len(os.sched_getaffinity(0))
    notices: list[str] = []
    assert cap_jobs(1000, notices.append) == usable_cores()
    assert len(notices) == 1 and "\n" not in notices[0] and "1000" in notices[0]
    assert cap_jobs(1, notices.append) == 1 and len(notices) == 1
    assert cap_jobs(None, notices.append) == usable_cores() and len(notices) == 1


def test_jobs_above_the_cores_run_on_the_cores_with_a_notice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import crashpoint.scenarios.jobs.explore as parallel

    seen: list[int] = []
    real = parallel.run_tasks

    def spy(tasks: object, *, jobs: int = 1, **kw: object) -> object:
        seen.append(jobs)
        return real(tasks, jobs=1, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(parallel, "run_tasks", spy)
    code = main(["explore", "--scenario", "first-save", "--jobs", "1000", "--out", str(tmp_path)])
    assert code == 0
    from crashpoint._options import usable_cores

    assert seen == [usable_cores()]
    err = capsys.readouterr().err
    notice = [line for line in err.splitlines() if "1000" in line]
    assert len(notice) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "cosmic-ray"],
        ["--bogus-flag"],
        ["--shard", "x"],
        ["--list", "--model", "nope"],
    ],
)
def test_a_usage_error_is_the_reason_and_one_hint_line(
    args: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explore", "--out", str(tmp_path / "out"), *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 2, captured.err
    assert lines[0].startswith("crashpoint: error: ")
    assert "crashpoint explore --help" in lines[1]
    assert "usage:" not in captured.err and captured.out == ""


def test_list_validates_the_other_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--list", "--model", "nope"]) == 2
    assert main(["explore", "--list", "--target", "nope"]) == 2
    assert main(["explore", "--list", "--scenario", "nope"]) == 2
    assert main(["explore", "--list", "--model", "power-loss"]) == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--shard", "-1/2"], ["1 <= K <= N"]),
        (["--shard=-1/2"], ["1 <= K <= N"]),
        (["--fault", "-1:EIO"], ["AT:NAME"]),
        (["--crash-point", "-3"], [">= 0"]),
        (["--fault", "2:fsyncgate", "--scenario", "first-save"], ["fsync", "create"]),
        (["--fault", "0:short-write", "--scenario", "first-save"], ["mkdir", "write"]),
    ],
)
def test_negative_values_and_mismatched_faults_get_a_proper_reason(
    args: list[str], words: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explore", "--out", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    reason = err.splitlines()[0]
    assert "expected one argument" not in reason and "no matching operation" not in reason
    assert all(w in reason for w in words), reason


def test_a_read_only_out_is_reported_as_read_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    real_statvfs = os.statvfs

    class ReadOnly:
        def __init__(self, path: str) -> None:
            self._st = real_statvfs(path)

        def __getattr__(self, name: str) -> object:
            if name == "f_flag":
                return self._st.f_flag | os.ST_RDONLY
            return getattr(self._st, name)

    monkeypatch.setattr(os, "statvfs", ReadOnly)
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False)
    assert main(["explore", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "read-only" in err and "permission denied" not in err


def test_model_accepts_a_comma_list(tmp_path: pathlib.Path) -> None:
    code, report = run(
        ["--scenario", "first-save", "--model", "process-crash, power-loss"], tmp_path
    )
    assert code == 0
    models = {s.get("model") for s in report["scenarios"]}
    assert models == {"process-crash", "power-loss"}, models


def test_parse_models_is_shared_by_the_cli_and_the_plugin() -> None:
    from crashpoint._options import parse_models

    assert [m.name for m in parse_models("power-loss,process-crash")] == [
        "power-loss",
        "process-crash",
    ]
    assert len(parse_models("all")) == 5  # process-crash and the four families
    assert [m.name for m in parse_models(" Power-Loss ,power-loss")] == ["power-loss"]
    for bad in ("", "nope", "power-loss,,", "all,power-loss"):
        with pytest.raises(ValueError):
            parse_models(bad)


def test_without_a_terminal_a_progress_line_comes_every_few_seconds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    import crashpoint._options as options
    import crashpoint.scenarios.jobs.explore as parallel

    real = parallel.run_tasks

    def slow(tasks: object, **kw: object) -> object:
        time.sleep(0.5)
        return real(tasks, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(options, "PROGRESS_INTERVAL", 0.1)
    monkeypatch.setattr(parallel, "run_tasks", slow)
    assert main(["explore", "--scenario", "first-save", "--out", str(tmp_path)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "exploring:" in line]
    assert len(lines) >= 2, lines
    assert all("tasks" in line and " s" in line for line in lines)


def test_progress_line_reports_counts_and_seconds() -> None:
    import time

    from crashpoint._options import ProgressLine

    lines: list[str] = []
    with ProgressLine("exploring", 4, lines.append, interval=0.05) as update:
        update(1, 4)
        time.sleep(0.2)
        update(3, 4)
        time.sleep(0.2)
    assert lines and lines[0].startswith("exploring: 1/4 tasks, ")
    assert lines[-1].startswith("exploring: 3/4 tasks, ")
    assert all(line.endswith(" s") for line in lines)


def test_explore_accepts_a_plain_callable_as_target() -> None:
    from crashpoint.core import FileStateStorage
    from crashpoint.scenarios import explore

    def legacy_storage(fs: object, base: str) -> FileStateStorage:
        return FileStateStorage(fs, base, sync="none", ended_marker="legacy")  # type: ignore[arg-type]

    result = explore(SCENARIOS["three-saves"], model="power-loss", target=legacy_storage)
    assert result.target == "legacy_storage"  # named after the factory
    assert "R1" in result.killed_by() or result.counterexamples
    same = explore(
        SCENARIOS["three-saves"],
        model="power-loss",
        target=lambda fs, base: FileStateStorage(fs, base, sync="none", ended_marker="legacy"),
    )
    assert len(same.counterexamples) == len(result.counterexamples)


def test_a_run_that_examined_no_crash_state_is_not_a_pass(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # first-save has far fewer distinct crash states than 479 shards: most shards hold
    # none, and a shard that examined nothing must not exit 0 (never a false green).
    from crashpoint.scenarios import explore

    held = {int(d, 16) % 479 + 1 for d in explore(SCENARIOS["first-save"]).state_ids}
    empty = min(set(range(1, 480)) - held)
    args = ["explore", "--scenario", "first-save", "--out", str(tmp_path)]
    assert main([*args, "--shard", f"{empty}/479"]) == 1
    assert "examined no crash state" in capsys.readouterr().err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["totals"]["distinct_states"] == 0
    assert report["examined_nothing"] is True
    assert main([*args, "--shard", f"{min(held)}/479"]) == 0


def test_user_text_is_printed_as_written_not_as_emoji(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # rich would turn ":thumbs_up:" into 👍; a name, a path or a session id is printed as
    # the user wrote it.
    assert main(["explore", "--scenario", ":thumbs_up:"]) == 2
    err = capsys.readouterr().err
    assert "':thumbs_up:'" in err and "\N{THUMBS UP SIGN}" not in err


@pytest.mark.parametrize(
    ("args", "code"),
    [(["--scenario", "first-save"], 0), (["--scenario", "no-such-scenario"], 2)],
    ids=["clean", "usage"],
)
def test_the_command_exits_with_mains_code_after_freezing_the_collector(
    args: list[str], code: int, tmp_path: pathlib.Path
) -> None:
    # run() (the console script, python -m crashpoint) moves what is left out of the
    # cycle collector's reach before the interpreter's shutdown collections (issue 11).
    import subprocess
    import sys

    script = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "sys.argv = ['crashpoint', *sys.argv[1:]]\n"
        "from crashpoint._cli import run\n"
        "run()\n"
    )
    argv = [sys.executable, "-c", script, "explore", "--out", str(tmp_path), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    assert "frozen: True" in done.stderr


def test_explore_leaves_verify_and_production_modules_unimported(tmp_path: pathlib.Path) -> None:
    # the descriptor table (interception's) and OsFileSystem are imported on first use
    # of their names (issue 11: the plain command's start-up)
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from crashpoint._cli import main\n"
        "assert main(['explore', '--scenario', 'first-save', '--out', sys.argv[1]]) == 0\n"
        "lazy = ('_descriptors', '_os', '_intercept')\n"
        "print(sorted(m for m in lazy if 'crashpoint.faultfs.' + m in sys.modules))\n"
        "import crashpoint.faultfs as f\n"
        "print(f.DescriptorTable.__module__, f.Description.__module__, f.OsFileSystem.__module__)\n"
    )
    argv = [sys.executable, "-c", code, str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported, modules = done.stdout.splitlines()[-2:]
    assert imported == "[]"
    assert modules.split() == [
        "crashpoint.faultfs._descriptors",
        "crashpoint.faultfs._descriptors",
        "crashpoint.faultfs._os",
    ]


def test_an_out_path_that_fails_part_way_leaves_no_directory(tmp_path: pathlib.Path) -> None:
    # 25 levels of 200-byte names: makedirs creates some before PATH_MAX stops it
    deep = tmp_path.joinpath(*["b" * 200] * 25)
    assert main(["explore", "--scenario", "first-save", "--out", str(deep)]) == 2
    assert list(tmp_path.iterdir()) == []
    assert main(["explore", "--scenario", "first-save", "--out", f"{tmp_path}/x/y\0z"]) == 2
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_the_command_line_is_still_importing_exits_130_in_one_line() -> None:
    # SIGINT a few milliseconds after start lands in an import: the entry point
    # (crashpoint._entry) answers it as main() does, never with a traceback
    import subprocess
    import sys

    script = (
        "import sys\n"
        "class Interrupting:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'crashpoint._cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting())\n"
        "sys.argv = ['crashpoint', 'explore']\n"
        "from crashpoint._entry import run\n"
        "run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == "crashpoint: interrupted\n"


def test_explain_emit_test_naming_a_directory_is_refused_before_the_search(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evidence = pathlib.Path(__file__).parent.parent / "examples/field-reports/zero-length-main"
    argv = ["explain", str(evidence / "agent-state"), "--target", "seed"]
    assert main([*argv, "--emit-test", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no report written, no --out left


def test_a_reorder_bound_no_model_of_the_run_uses_is_said(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["explore", "--scenario", "first-save", "--reorder-bound", "3"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert "no model of this run reorders (process-crash)" in capsys.readouterr().err
    assert main([*argv, "--model", "all", "--out", str(tmp_path / "b")]) == 0
    assert "no model of this run reorders" not in capsys.readouterr().err


def test_explore_lists_hypothetical_findings_apart(tmp_path: pathlib.Path) -> None:
    """Issue 20: the agent kind under a drive that ignores flushes loses acknowledged
    saves (R1), a hypothetical finding: exit 0, no counterexample, listed apart; the one
    rule of the engine, as for the document kind (tests/verify)."""
    argv = ["explore", "--model", "ext4", "--scenario", "three-saves", "--out", str(tmp_path)]
    assert main([*argv, "--drive-ignores-flush"]) == 0
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["counterexample"] is None and rep["totals"]["violations"] == 0
    assert rep["totals"]["hypothetical"] > 0
    assert {h["invariant"] for s in rep["scenarios"] for h in s["hypothetical"]} == {"R1"}
    assert rep["models"][0]["options"]["drive_ignores_flush"] is True
    assert main([*argv, "--zoo", "--drive-ignores-flush"]) == 2  # the zoo takes none


def test_verify_says_it_is_still_running_in_a_log(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a new user's find: verify printed nothing for minutes in a CI log (README: a
    # progress line every 5 seconds without a terminal); explore did
    import time

    import crashpoint._options as options
    import crashpoint.scenarios.jobs.verify as verify_job

    real = verify_job.verify

    def slow(*args: object, **kw: object) -> object:
        time.sleep(0.5)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(options, "PROGRESS_INTERVAL", 0.1)
    monkeypatch.setattr(verify_job, "verify", slow)
    store = pathlib.Path(__file__).resolve().parents[1] / "examples" / "stores" / "jsonstore.py"
    args = ["verify", f"{store}:JsonStore", "--workload", "first-save"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "verifying:" in line]
    assert len(lines) >= 2, lines
    assert all(re.fullmatch(r"verifying: \d+ s", line) for line in lines), lines
