"""``--exec`` stays contained (issue 21): every process a command starts is killed by the
timeout and when the command ends, output is read with a deadline and capped
(``--max-output``), and only devices that store nothing are ignored outside ``{dir}``.

Each test runs real commands (marker ``exec``, needs strace) through ``main([...])`` or
:func:`~crashpoint.scenarios.jobs.exec.run_process`, and fails on the old behaviour with
an assertion."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from crashpoint._cli import main
from crashpoint.faultfs._strace import strace_available
from crashpoint.scenarios.jobs import exec as exec_mod

pytestmark = pytest.mark.exec

ROOT = Path(__file__).resolve().parents[2]
STORE = f"{sys.executable} {ROOT}/examples/exec/pystore.py JsonStore"
SAVE = f"{STORE} save {{dir}} {{value}}"
LOAD = f"{STORE} load {{dir}}"


@pytest.fixture(autouse=True)
def _strace() -> None:
    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)
    exec_mod.allow_processes()


def _marker(seconds: int) -> str:
    """``sleep SECONDS.NNNNNN``: a command line of this test run's own (a process left by
    another run is not taken for one of this run's)."""
    return f"sleep {seconds}.{int.from_bytes(os.urandom(3), 'big'):08d}"


def _running(command: str) -> bool:
    """A process whose whole command line is ``command`` is running (not a zombie)."""
    found = subprocess.run(["pgrep", "-x", "-f", command], capture_output=True, text=True)
    for pid in found.stdout.split():
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    return True
        except OSError:
            continue
    return False


def _verify(tmp_path: Path, save: str, *more: str) -> int:
    return main(
        [
            *("verify", "--exec", "--save", save, "--load", LOAD),
            *("--workload", "first-save", "--out", str(tmp_path / "out"), *more),
        ]
    )


@pytest.fixture
def no_namespace(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Commands run as where no PID namespace can be made: process group and reaper."""
    monkeypatch.setattr(exec_mod, "_NAMESPACE", [False], raising=False)
    yield


@pytest.mark.parametrize("contained", ["namespace", "group"])
def test_a_setsid_daemon_holding_stdout_ends_with_the_command(
    contained: str, request: pytest.FixtureRequest
) -> None:
    from crashpoint.scenarios.targets.user import TargetTimeout

    if contained == "group":
        request.getfixturevalue("no_namespace")
    elif not getattr(exec_mod, "pid_namespace", lambda: True)():
        pytest.skip("no PID namespace can be made here")
    marker = _marker(17)
    started = time.monotonic()
    done: object = None
    with contextlib.suppress(TargetTimeout):  # the old code: it waited for the daemon
        done = exec_mod.run_process(
            ["sh", "-c", f"setsid {marker} & echo saved"], label="save", timeout=8, cwd="/"
        )
    elapsed = time.monotonic() - started
    assert isinstance(done, subprocess.CompletedProcess), f"timed out after {elapsed:.0f} s"
    assert done.stdout == b"saved\n" and elapsed < 6
    time.sleep(0.2)
    assert not _running(marker), "a daemon the command started outlived it"


def test_a_daemon_left_by_a_save_does_not_stretch_the_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A save leaving a ``setsid`` daemon holding stdout: ``--timeout 2`` ends the run
    in about 2 s, exit 2 naming the limit (it took the daemon's whole life: 120 s)."""
    marker = _marker(23)
    save = f'sh -c \'setsid {marker} & exec {STORE} save "$0" "$1"\' {{dir}} {{value}}'
    started = time.monotonic()
    code = _verify(tmp_path, save, "--timeout", "2")
    elapsed = time.monotonic() - started
    assert code == 2 and "did not return within --timeout 2 s" in capsys.readouterr().err
    assert elapsed < 20, f"--timeout 2 took {elapsed:.0f} s"
    time.sleep(0.2)
    assert not _running(marker)


def test_a_daemon_with_its_output_closed_does_not_outlive_crashpoint(tmp_path: Path) -> None:
    marker = _marker(60)
    daemon = f'setsid sh -c "exec >/dev/null 2>&1 </dev/null; {marker}" &'
    save = f'sh -c \'{daemon} {STORE} save "$0" "$1"\' {{dir}} {{value}}'
    code = _verify(tmp_path, save, "--timeout", "2")
    assert code == 2
    time.sleep(0.2)
    assert not _running(marker), "the daemon the save started outlived crashpoint"


def test_output_past_max_output_is_exit_2_with_the_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "loud.py"
    script.write_text("import sys; sys.stdout.write('x' * 5_000_000)")
    loud = f"{sys.executable} {script}"
    save = f'sh -c \'{loud}; exec {STORE} save "$0" "$1"\' {{dir}} {{value}}'
    code = _verify(tmp_path, save, "--max-output", "1000000")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "passed --max-output 1000000 bytes" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # the reason and the hint


def test_a_strace_log_past_max_output_is_caught_when_the_command_ends_first(
    tmp_path: Path,
) -> None:
    """The log was polled only while the command ran: one that grew past the cap and ended
    before the next poll went on to be parsed whole (4 of 20 runs of this were caught)."""
    log = tmp_path / "strace.log"
    for _ in range(20):
        log.unlink(missing_ok=True)
        with pytest.raises(exec_mod.OutputTooLarge, match="strace log passed --max-output 1000"):
            exec_mod.run_process(
                ["sh", "-c", f"head -c 5000 /dev/zero > {log}"],
                label="save",
                timeout=5,
                cwd=str(tmp_path),
                max_output=1000,
                log=str(log),
            )


def test_max_output_is_refused_without_exec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"{ROOT}/examples/stores/jsonstore.py:JsonStore"
    assert main(["verify", target, "--max-output", "10", "--out", str(tmp_path)]) == 2
    assert "--max-output applies to --exec only" in capsys.readouterr().err


def test_a_load_printing_150_mb_keeps_crashpoint_small(tmp_path: Path) -> None:
    """The default cap: a load printing 150 MB is stopped when its standard output passes
    128 MiB, exit 2; crashpoint's own peak memory stays far below a gigabyte (a load
    printing 100 MB once grew the strace log to 806 MB and crashpoint to 2.66 GB; loads
    are traced for their opens only now, so the output itself is what passes the cap)."""
    loud = "import sys; sys.stdout.write('x' * 150_000_000)"
    script = tmp_path / "loud.py"
    script.write_text(loud)
    load = f"{sys.executable} {script} {{dir}}"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "crashpoint", "verify", "--exec"),
            *("--save", SAVE, "--load", load, "--workload", "first-save"),
            *("--out", str(tmp_path / "out")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert proc.stderr is not None
    with proc.stderr:
        err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 2, err
    assert "passed --max-output 134217728 bytes" in err
    assert usage.ru_maxrss < 1_000_000, f"peak memory {usage.ru_maxrss} KiB"


def _shm_name(tmp_path: Path) -> str:
    return f"/dev/shm/crashpoint-test-{os.getpid()}-{tmp_path.name}"


def test_a_store_keeping_its_data_in_dev_shm_is_s1_and_told_memory_backed(
    tmp_path: Path,
) -> None:
    """The old rule ignored every write under /dev: a store saving into /dev/shm passed."""
    shm = _shm_name(tmp_path)
    save = f'sh -c \'{STORE} save "$0" "$1" && cp "$1" {shm}\' {{dir}} {{value}}'
    try:
        code = _verify(tmp_path, save)
    finally:
        if os.path.exists(shm):
            os.unlink(shm)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    found = [v for s in report["scenarios"] for v in s["violations"] if v["invariant"] == "S1"]
    assert code == 1 and found, report["totals"]
    assert shm in found[0]["load_returned"]
    if (
        shutil.which("df")
        and "tmpfs"
        in subprocess.run(["df", "-T", "/dev/shm"], capture_output=True, text=True).stdout
    ):
        assert "memory-backed storage, tmpfs" in found[0]["load_returned"]
    assert "/dev/shm/sem.*" in report["exec"]["ignored_rule"]


def test_dev_null_and_multiprocessing_semaphores_stay_ignored(tmp_path: Path) -> None:
    sem = f"/dev/shm/sem.crashpoint-test-{os.getpid()}"
    save = (
        f"sh -c 'echo x > /dev/null; echo x > {sem}; rm -f {sem}; "
        f'exec {STORE} save "$0" "$1"\' {{dir}} {{value}}'
    )
    code = _verify(tmp_path, save)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 0, report["totals"]
    assert "/dev/null" in report["exec"]["ignored"] and sem in report["exec"]["ignored"]
