"""``crashpoint verify`` end to end through the CLI (issue 8, acceptance 2 and 3):
exit codes, the report files, replays, baselines, bad targets, and that nothing
touches a real file."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

HERE = Path(__file__).resolve().parent
STORE = HERE.parent.parent / "examples" / "stores" / "jsonstore.py"
STORES = HERE / "stores.py"


def run(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> tuple[int, str, str]:
    code = main(["verify", *args, "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return data


def killed(rep: dict[str, Any], model: str) -> set[str]:
    return {i for s in rep["scenarios"] if s["model"] == model for i in s["killed_by"]}


# --- acceptance 2: the plain-stdlib store ----------------------------------------------------


def test_the_durable_store_passes_every_model_with_every_fault(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys,
        tmp_path,
        f"{STORE}:JsonStore",
        "--kind",
        "document",
        "--model",
        "all",
        "--faults",
        "--examples",
        "5",
    )
    assert code == 0, out
    rep = report(tmp_path)
    assert rep["verdict"] == "clean" and rep["mode"] == "intercepted"
    assert rep["totals"]["violations"] == 0 and rep["totals"]["distinct_states"] > 0
    assert {s["model"] for s in rep["scenarios"]} == {
        "process-crash",
        "ext4",
        "xfs",
        "btrfs",
        "posix",
    }
    assert all(s["faults"] > 0 for s in rep["scenarios"])
    assert {"A1", "A2", "A3", "A4", "A5", "S1"} <= {
        i for s in rep["scenarios"] for i in s["invariants"]
    }
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith("# crashpoint report")


def test_without_its_fsyncs_the_store_fails_power_loss(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = run(
        capsys,
        tmp_path,
        f"{STORE}:NoFsyncJsonStore",
        "--model",
        "process-crash,power-loss",
        "--workload",
        "first-save",
        "--workload",
        "resize",
    )
    assert code == 1
    rep = report(tmp_path)
    assert "A2" in killed(rep, "power-loss")
    assert killed(rep, "process-crash") == set()


def test_written_in_place_the_store_fails_process_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = run(capsys, tmp_path, f"{STORE}:InPlaceJsonStore", "--workload", "first-save")
    assert code == 1
    rep = report(tmp_path)
    assert killed(rep, "process-crash") == {"A1"}
    ce = rep["counterexample"]
    assert ce["invariant"] == "A1" and ce["crash_state"] == {"doc.json": "empty"}
    assert rep["scenarios"][0]["violations"][0]["broken"] == ["A1"]


def test_a_counterexample_replays_from_its_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(
        capsys,
        tmp_path / "a",
        f"{STORE}:NoFsyncJsonStore",
        "--model",
        "power-loss",
        "--workload",
        "save-after-failure",
    )
    ce = report(tmp_path / "a")["counterexample"]
    argv = shlex.split(ce["replay"])
    assert argv[:3] == ["crashpoint", "verify", f"{STORE}:NoFsyncJsonStore"]
    code, _, _ = run(capsys, tmp_path / "b", *argv[2:])
    assert code == 1
    again = report(tmp_path / "b")
    found = [v for s in again["scenarios"] for v in s["violations"]]
    assert {v["crash_point"]["index"] for v in found} == {ce["crash_point"]["index"]}
    assert ce["state_digest"] in {v["state_digest"] for v in found}
    assert ce["invariant"] in {v["invariant"] for v in found}


def test_a_random_workload_counterexample_replays_from_its_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(
        capsys,
        tmp_path / "a",
        f"{STORE}:InPlaceJsonStore",
        "--workload",
        "random",
        "--examples",
        "4",
        "--seed",
        "7",
    )
    ce = report(tmp_path / "a")["counterexample"]
    argv = shlex.split(ce["replay"])
    assert "--examples" in argv and "--seed" in argv
    assert run(capsys, tmp_path / "b", *argv[2:])[0] == 1
    found = [v for s in report(tmp_path / "b")["scenarios"] for v in s["violations"]]
    assert ce["state_digest"] in {v["state_digest"] for v in found}


def test_a_baseline_fails_only_on_new_findings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = f"{STORE}:InPlaceJsonStore"
    assert run(capsys, tmp_path / "old", target, "--workload", "first-save")[0] == 1
    baseline = str(tmp_path / "old" / "report.json")
    code, out, _ = run(
        capsys, tmp_path / "same", target, "--workload", "first-save", "--baseline", baseline
    )
    assert code == 0, out
    assert report(tmp_path / "same")["baseline"]["new"] == []
    code, _, _ = run(
        capsys,
        tmp_path / "new",
        f"{STORE}:NoFsyncJsonStore",
        "--model",
        "power-loss",
        "--workload",
        "first-save",
        "--baseline",
        baseline,
    )
    assert code == 1
    assert report(tmp_path / "new")["baseline"]["new"]
    assert report(tmp_path / "new")["baseline"]["target"] == target
    # a report of another target is said to be one (its findings would hide this one's)
    code, out, _ = run(
        capsys,
        tmp_path / "other",
        f"{STORE}:JsonStore",
        "--workload",
        "first-save",
        "--baseline",
        baseline,
    )
    assert code == 0 and f"is a report of target '{target}'" in out, out


def test_jobs_give_the_same_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = [f"{STORE}:InPlaceJsonStore", "--workload", "first-save", "--workload", "resize"]
    assert run(capsys, tmp_path / "one", *args)[0] == 1
    assert run(capsys, tmp_path / "two", *args, "--jobs", "2")[0] == 1
    assert report(tmp_path / "one") == report(tmp_path / "two")


def test_the_hypothesis_database_stays_out_of_the_working_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, _ = run(
        capsys,
        tmp_path / "out",
        f"{STORE}:InPlaceJsonStore",
        "--workload",
        "random",
        "--examples",
        "3",
    )
    assert code == 1
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_an_unsupported_call_is_named_and_the_verdict_incomplete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, tmp_path, f"{STORES}:LinkStore", "--workload", "first-save")
    assert code == 1
    rep = report(tmp_path)
    assert rep["verdict"] == "incomplete" and "os.symlink" in rep["incomplete"]
    assert "os.symlink" in out

    # The violations of an incomplete verdict lie in crash states derived from a trace
    # that lacks the call (the link): said before the counterexample, and in report.md.
    code, out, _ = run(capsys, tmp_path, f"{STORES}:LinkStore")
    rep = report(tmp_path)
    assert code == 1 and rep["verdict"] == "incomplete" and rep["counterexample"]
    lines = out.splitlines()
    said = next(i for i, line in enumerate(lines) if line.startswith("verdict incomplete:"))
    first = next(
        i
        for i, line in enumerate(lines)
        if line.startswith(rep["counterexample"]["invariant"] + " (")
    )
    assert said < first and "may not be reachable" in lines[said]
    assert sum(line.startswith("verdict incomplete:") for line in lines) == 1
    assert "may not be reachable" in (tmp_path / "report.md").read_text(encoding="utf-8")


# --- acceptance 3: no false green, confinement, nothing real touched ---------------------------


def test_a_save_that_writes_nothing_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, tmp_path, f"{STORES}:SilentStore")
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0].startswith(
        "crashpoint: error: save returned but no file operation was recorded"
    )
    assert "SilentStore" in lines[0]
    assert not (tmp_path / "report.json").exists()
    # a new user's find: the hint named the C modules crashpoint's own run imports
    # (sqlite3, mmap, hypothesis ...) as the target's; SilentStore's import brings none
    assert "it uses" not in lines[0] and "sqlite3.connect" not in lines[0]
    assert "--runner strace" in lines[0]


def test_a_save_that_starts_a_child_process_is_told_it_raised(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a new user's find: a refused subprocess was told as "save returned but no file
    # operation was recorded"; save raised, and the call is named
    store = tmp_path / "child.py"
    store.write_text(
        "import os, subprocess\n"
        "class Child:\n"
        "    def __init__(self, base_dir): self.base_dir = base_dir\n"
        "    def save(self, value): subprocess.run(['touch', os.path.join(self.base_dir, 'x')])\n"
        "    def load(self): return None\n",
        encoding="utf-8",
    )
    code, _, err = run(capsys, tmp_path / "o", f"{store}:Child", "--workload", "first-save")
    assert code == 2
    first = err.strip().splitlines()[0]
    assert "save() raised on a clean run: PermissionError" in first, first
    assert "calls the model cannot represent: subprocess.Popen" in first
    assert "save returned" not in first


def test_a_store_writing_outside_its_base_directory_is_s1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = run(capsys, tmp_path, f"{STORES}:OutsideStore", "--workload", "first-save")
    assert code == 1
    assert killed(report(tmp_path), "process-crash") == {"S1"}


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        (f"{STORES}:NoSuchFactory", "has no attribute"),
        (f"{HERE / 'broken_import.py'}:Store", "import failed"),
        (f"{HERE / 'missing.py'}:Store", "no such file"),
        ("no_such_package_xyz.stores:Store", "import failed"),
        (f"{STORES}:wrong_signature", "wrong signature"),
        (f"{STORES}:raising_factory", "factory raised"),
        (f"{STORES}:RaisingSaveStore", "save() raised on a clean run"),
        (f"{STORES}:LoadRaisesStore", "load() raised after a clean save"),
        (f"{STORES}:ExitingStore", "called os._exit(0)"),
        (f"{STORES}:ExitingLoadStore", "called os._exit(0)"),
        ("nocolon", "expected package.module:factory"),
    ],
)
def test_a_bad_target_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str, reason: str
) -> None:
    code, _, err = run(capsys, tmp_path, target)
    assert code == 2
    first = err.strip().splitlines()[0]
    assert first.startswith("crashpoint: error: ") and reason in first
    assert target.rsplit(":", 1)[0].rsplit("/", 1)[-1] in first
    assert "Traceback" not in err


def test_a_file_target_imports_the_modules_beside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "sibling_store_impl.py").write_text(
        (HERE / "stores.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (lib / "entry.py").write_text(
        "from sibling_store_impl import _Base as Store\n", encoding="utf-8"
    )
    code, _, err = run(capsys, tmp_path, f"{lib / 'entry.py'}:Store", "--workload", "first-save")
    assert code == 0, err


def test_a_hanging_target_is_stopped_and_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, tmp_path, f"{STORES}:HangingStore", "--timeout", "0.5")
    assert code == 2
    assert "save()" in err and "--timeout" in err


def test_a_hanging_state_storage_is_stopped_and_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        tmp_path,
        f"{STORES}:HangingStateStorage",
        "--kind",
        "state-storage",
        "--timeout",
        "0.5",
    )
    assert code == 2
    assert "save()" in err and "--timeout" in err and "Traceback" not in err


def test_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for args in (
        ["--model", "nope"],
        ["--model", "process-crash,,power-loss"],  # as explore: an empty name is refused
        ["--model", "all,power-loss"],  # 'all' stands alone
        ["--faults", "--fault", "1:EIO"],
        ["--fault", "1:NOPE"],
        ["--timeout", "0"],
        ["--kind", "state-storage", "--values", "json"],
        ["--values", "no-such-strategy"],
        ["--workload", "no-such-workload"],
    ):
        code, _, err = run(capsys, tmp_path, f"{STORE}:JsonStore", *args)
        assert code == 2, args
        assert "crashpoint: error:" in err and "Traceback" not in err


AUDIT = textwrap.dedent(
    """
    import json, os, sys
    out = os.path.realpath(sys.argv[1])
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    touched = []

    def mine(path):
        real = os.path.realpath(os.fsdecode(path))
        return real == out or real.startswith(out + os.sep)

    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes)):
            flags = args[2] if isinstance(args[2], int) else 0
            mode = args[1] if isinstance(args[1], str) else ""
            if (flags & writes or any(c in mode for c in "wax+")) and not mine(args[0]):
                touched.append([event, os.fsdecode(args[0])])
        elif event in ("os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.truncate",
                       "os.link", "os.symlink", "os.chmod", "os.utime", "shutil.rmtree"):
            paths = [a for a in args if isinstance(a, (str, bytes))]
            if paths and not all(mine(p) for p in paths):
                touched.append([event] + [os.fsdecode(p) for p in paths])

    sys.addaudithook(hook)
    from crashpoint._cli import main
    code = main(["verify", *sys.argv[2:], "--out", sys.argv[1]])
    print("AUDIT " + json.dumps(touched))
    sys.exit(code)
    """
)


@pytest.mark.parametrize(("name", "expected"), [("SilentStore", 2), ("OutsideStore", 1)])
def test_no_real_file_is_touched_audit_hook(tmp_path: Path, name: str, expected: int) -> None:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            AUDIT,
            str(tmp_path / "out"),
            f"{STORES}:{name}",
            "--workload",
            "first-save",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == expected, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("AUDIT "))
    assert json.loads(line[6:]) == []
    assert not os.path.exists("/data/elsewhere.json")
    # nothing beside --out; a refused target (exit 2) leaves no empty --out either
    assert sorted(os.listdir(tmp_path)) == ([] if expected == 2 else ["out"])


# --- the state-storage kind ------------------------------------------------------------------


def test_state_storage_reference_intercepted_through_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys,
        tmp_path,
        f"{HERE / 'targets.py'}:reference",
        "--kind",
        "state-storage",
        "--format",
        "reference",
        "--model",
        "power-loss",
        "--examples",
        "2",
    )
    assert code == 0, out
    rep = report(tmp_path)
    assert rep["kind"] == "state-storage" and rep["mode"] == "intercepted"
    assert all(c["passed"] for c in rep["conformance"])
    assert {c["id"] for c in rep["conformance"]} == {
        "13.1",
        "13.2",
        "13.3",
        "13.4",
        "13.5",
        "13.6",
        "13.8",
        "machine",
    }
    assert "future-main" in {s["name"] for s in rep["scenarios"]}


def test_state_storage_mutant_fails_verify_through_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = run(
        capsys,
        tmp_path,
        "crashpoint.scenarios.kinds.agent.mutants:DeleteMainFirst",
        "--kind",
        "state-storage",
        "--workload",
        "delete",
        "--examples",
        "1",
    )
    assert code == 1
    rep = report(tmp_path)
    assert "D1" in killed(rep, "process-crash")
    replay = rep["counterexample"]["replay"]
    assert replay.startswith(
        "crashpoint verify crashpoint.scenarios.kinds.agent.mutants:DeleteMainFirst "
        "--kind state-storage --workload delete"
    )


def test_the_command_line_leaves_no_hypothesis_directory_in_the_working_directory(
    tmp_path: Path,
) -> None:
    # Hypothesis caches its unicode tables and constants under ./.hypothesis; a real
    # `crashpoint verify` process (hypothesis not yet set up, unlike in-process tests)
    # must still write only into --out.
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "crashpoint", "verify", f"{STORE}:InPlaceJsonStore"),
            *("--workload", "random", "--examples", "3", "--out", str(tmp_path / "out")),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_a_target_raising_systemexit_or_a_baseexception_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The target's SystemExit is not crashpoint's own (--help) exit: before, `verify` left
    # with the target's code and no word (7, 9), or a traceback for another BaseException.
    target = tmp_path / "exits.py"
    target.write_text(
        textwrap.dedent(
            """
            def exits(base_dir):
                raise SystemExit(7)

            class LoadExits:
                def __init__(self, base_dir):
                    pass

                def save(self, value):
                    pass

                def load(self):
                    raise SystemExit(9)

            def odd(base_dir):
                raise BaseException("odd")
            """
        ),
        encoding="utf-8",
    )
    for name in ("exits", "LoadExits", "odd"):
        code, _, err = run(capsys, tmp_path / "out", f"{target}:{name}", "--kind", "document")
        assert code == 2, name
        assert err.startswith("crashpoint: error:") and "Traceback" not in err, name
        assert f"target '{target}:{name}'" in err, err  # named as every target error is


def test_a_crash_point_beyond_the_workload_is_exit_2_not_a_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # As `explore --crash-point` beyond the scenarios: a run that examined nothing is no pass.
    args = (f"{STORE}:InPlaceJsonStore", "--workload", "first-save", "--crash-point")
    code, _, err = run(capsys, tmp_path / "far", *args, "99999")
    assert code == 2 and err.startswith("crashpoint: error:")
    code, _, _ = run(capsys, tmp_path / "near", *args, "1")
    assert code == 1  # the in-place store's torn first save, still found


def test_a_crash_point_beyond_every_workload_random_included_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Every workload, the random search among them: the search that chose the random
    # workload is not counted as the replay's crash points (it passed for a replay).
    code, out, err = run(
        capsys, tmp_path / "far", f"{STORE}:InPlaceJsonStore", "--crash-point", "99999"
    )
    assert code == 2 and err.startswith("crashpoint: error:"), out
    assert "no workload run has that crash point" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "no-such-file.py:factory"],
        ["verify", f"{STORE}:JsonStore", "--workload", "no-such-workload"],
        ["explain", str(HERE), "--target", "no-such-target"],
    ],
)
def test_a_usage_error_leaves_no_out_directory_behind(argv: list[str], tmp_path: Path) -> None:
    out = tmp_path / "new" / "out"
    assert main([*argv, "--out", str(out)]) == 2
    assert list(tmp_path.iterdir()) == []  # neither out nor the parent it created
    kept = tmp_path / "kept"
    kept.mkdir()
    assert main([*argv, "--out", str(kept)]) == 2
    assert kept.is_dir()  # a directory that was there stays


@pytest.mark.parametrize("content", ["{}", "[1, 2]", '{"scenarios": 3}', "not json"])
def test_a_baseline_that_is_not_a_report_is_one_plain_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str
) -> None:
    baseline = tmp_path / "old.json"
    baseline.write_text(content, encoding="utf-8")
    code, _, err = run(capsys, tmp_path / "out", f"{STORE}:JsonStore", "--baseline", str(baseline))
    assert code == 2 and "is not a crashpoint report" in err, err
    assert "list indices" not in err and "('scenarios')" not in err  # no Python internals


def test_a_fault_past_every_run_is_exit_2_not_a_clean_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys, tmp_path / "far", f"{STORE}:InPlaceJsonStore", "--fault", "999:ENOSPC"
    )
    assert code == 2 and "no workload run has operation 999" in err, out


def test_a_baseline_naming_the_old_model_names_is_comparable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 20: power-loss is an alias of ext4; a baseline of findings under the old name
    knows the same findings under ext4 (and back), so a CI config keeps working."""
    target = f"{STORE}:NoFsyncJsonStore"
    args = ("--workload", "first-save")
    assert run(capsys, tmp_path / "old", target, "--model", "power-loss", *args)[0] == 1
    old = report(tmp_path / "old")
    assert {s["model"] for s in old["scenarios"]} == {"power-loss"}
    assert {s["family"] for s in old["scenarios"]} == {"ext4"}
    assert killed(old, "power-loss")
    baseline = str(tmp_path / "old" / "report.json")
    code, out, _ = run(
        capsys, tmp_path / "ext4", target, "--model", "ext4", *args, "--baseline", baseline
    )
    assert code == 0, out
    assert report(tmp_path / "ext4")["baseline"]["new"] == []
    # and a finding under another family is new
    code, _, _ = run(
        capsys, tmp_path / "xfs", target, "--model", "xfs", *args, "--baseline", baseline
    )
    assert code == 1 and report(tmp_path / "xfs")["baseline"]["new"]


def test_the_report_and_summary_name_the_family_and_its_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys,
        tmp_path,
        f"{STORE}:JsonStore",
        "--model",
        "power-loss-reorder,btrfs",
        "--workload",
        "first-save",
    )
    assert code == 0, out
    rep = report(tmp_path)
    assert [(m["name"], m["family"]) for m in rep["models"]] == [
        ("power-loss-reorder", "posix"),
        ("btrfs", "btrfs"),
    ]
    assert rep["models"][1]["options"] == {
        "block_size": 4096,
        "max_states": 256,
        "writeback_bound": 6,
        "atomic_write": 4096,
        "drive_ignores_flush": False,
    }
    assert rep["models"][0]["options"]["reorder_bound"] is None
    assert "power-loss-reorder (family posix: block_size 4096" in " ".join(out.split())
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "`btrfs (family btrfs: block_size 4096, max_states 256, writeback_bound 6, " in md


def test_a_store_broken_only_by_a_512_byte_tear_has_hypothetical_findings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 20, device guarantees: BlockAtomicStore overwrites one block in place and
    relies on the block being written atomically. Under the default device it passes;
    with --atomic-write 512 its torn document is a hypothetical finding (FAULT-MODEL.md
    §3): listed apart in report.json, report.md and report.html, not the headline, not
    the verdict, exit 0."""
    target = f"{STORES}:BlockAtomicStore"
    args = ("--model", "ext4,posix", "--workload", "first-save", "--workload", "ten-saves")
    code, out, _ = run(capsys, tmp_path / "default", target, *args)
    assert code == 0, out
    clean = report(tmp_path / "default")
    assert clean["totals"]["hypothetical"] == 0 and clean["verdict"] == "clean"
    code, out, _ = run(capsys, tmp_path / "torn", target, *args, "--atomic-write", "512")
    assert code == 0, out
    rep = report(tmp_path / "torn")
    assert rep["verdict"] == "clean" and rep["totals"]["violations"] == 0
    assert rep["counterexample"] is None
    assert rep["totals"]["hypothetical"] > 0
    hyp = [h for s in rep["scenarios"] for h in s["hypothetical"]]
    assert {h["invariant"] for h in hyp} >= {"A1"} and {h["model"] for h in hyp} == {
        "ext4",
        "posix",
    }
    assert all(not s["killed_by"] for s in rep["scenarios"])
    assert {m["options"]["atomic_write"] for m in rep["models"]} == {512}
    # a torn document: one 4096-byte block, not the old one, not the new one
    assert any("4096 bytes" in w for h in hyp for w in h["crash_state"].values())
    assert "hypothetical:" in out and "ext4 A1" in " ".join(out.split())
    md = (tmp_path / "torn" / "report.md").read_text(encoding="utf-8")
    assert "## Hypothetical findings" in md
    page = (tmp_path / "torn" / "report.html").read_text(encoding="utf-8")
    assert 'id="hypothetical"' in page and "hypothetical)" in page
    # a drive that ignores flushes: the acknowledged document may be lost (A2)
    code, out, _ = run(capsys, tmp_path / "flush", target, *args, "--drive-ignores-flush")
    assert code == 0, out
    rep = report(tmp_path / "flush")
    assert "A2" in {h["invariant"] for s in rep["scenarios"] for h in s["hypothetical"]}
    assert rep["verdict"] == "clean"


def test_a_real_finding_stays_the_verdict_under_device_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A finding the default device reaches is not hypothetical under --atomic-write 512:
    the store without fsyncs still fails (exit 1, the headline)."""
    code, out, _ = run(
        capsys,
        tmp_path,
        f"{STORE}:NoFsyncJsonStore",
        *("--model", "ext4", "--workload", "first-save", "--atomic-write", "512"),
    )
    assert code == 1, out
    rep = report(tmp_path)
    assert rep["counterexample"] is not None and rep["counterexample"]["model"] == "ext4"
    assert {"A2"} <= set(rep["scenarios"][0]["killed_by"])


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--atomic-write", "1000", "--model", "ext4"), "a power of two from 512"),
        (("--atomic-write", "512"), "applies to the power-loss families"),
        (("--drive-ignores-flush", "--model", "process-crash"), "only process-crash"),
    ],
)
def test_bad_device_options_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...], why: str
) -> None:
    code, _, err = run(capsys, tmp_path, f"{STORE}:JsonStore", *args)
    assert code == 2 and why in err and "Traceback" not in err, err
