"""``crashpoint verify --exec`` (issue 13): programs recorded through strace.

The parser and replay tests run everywhere (no strace needed). The tests marked
``exec`` run real programs under strace (and node); they skip with the reason where
either is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import MemoryFileSystem, OpKind, RecordingFileSystem, parse_models
from crashpoint.faultfs._strace import StraceReplay, parse_log, strace_available
from crashpoint.scenarios.jobs.exec import (
    ExecDocumentKind,
    ExecRunner,
    verify_exec,
    verify_exec_state_storage,
)
from crashpoint.scenarios.kinds.document.kind import DOC_BASE, DocumentKind
from crashpoint.scenarios.targets.user import make_runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXEC = os.path.join(ROOT, "examples", "exec")
PY = sys.executable


def _hex(text: str) -> str:
    return "".join(f"\\x{b:02x}" for b in text.encode())


def _need(*programs: str) -> None:
    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)
    for p in programs:
        if shutil.which(p) is None:
            pytest.skip(f"{p} is not installed")


# --- parsing and replay (no strace needed) -------------------------------------------


def test_log_of_tmp_fsync_rename_dirfsync_replays_to_the_trace() -> None:
    d, tmp, main = "/r/dir", "/r/dir/doc.json.tmp", "/r/dir/doc.json"
    etc = "/etc/passwd"
    log = "\n".join(
        [
            f'7 openat(-100<{_hex("/w")}>, "{_hex(tmp)}", 0x80241, 0666) = 21<{_hex(tmp)}>',
            f'7 write(21<{_hex(tmp)}>, "{_hex("{}")}", 2 <unfinished ...>',
            f'8 write(1<{_hex("pipe:[9]")}>, "{_hex("x")}", 1) = 1',
            "7 <... write resumed>) = 2",
            f"7 fsync(21<{_hex(tmp)}>) = 0",
            f"7 close(21<{_hex(tmp)}>) = 0",
            f'7 rename("{_hex(tmp)}", "{_hex(main)}") = 0',
            f'7 openat(-100<{_hex("/w")}>, "{_hex(d)}", 0x90000) = 4<{_hex(d)}>',
            f"7 fsync(4<{_hex(d)}>) = 0",
            f'7 openat(-100<{_hex("/w")}>, "{_hex(etc)}", 0x241) = 5<{_hex(etc)}>',
            f'7 unlink("{_hex("/r/dir/gone")}") = -1 ENOENT (No such file or directory)',
            f"7 fallocate(4<{_hex(d)}>, 0x8, 0, 100) = 0",  # FALLOC_FL_COLLAPSE_RANGE
            "7 +++ exited with 0 +++",
        ]
    )
    calls = parse_log(log)
    assert [c.name for c in calls][:2] == ["openat", "write"]  # the pid 8 line is first
    fs = RecordingFileSystem(MemoryFileSystem(dirs=("/m",)))
    rep = StraceReplay(fs, "/r/dir", "/m", cwd="/w")
    rep.feed(calls)
    ops = [(o.kind, o.path, o.dst, o.data) for o in fs.trace.ops]
    assert ops == [
        (OpKind.CREATE, "/m/doc.json.tmp", None, b""),
        (OpKind.WRITE, "/m/doc.json.tmp", None, b"{}"),
        (OpKind.FSYNC, "/m/doc.json.tmp", None, b""),
        (OpKind.RENAME, "/m/doc.json.tmp", "/m/doc.json", b""),
        (OpKind.FSYNC_DIR, "/m", None, b""),
    ]
    assert rep.escapes == ["openat(/etc/passwd)"]
    assert [u.split(" ")[0] for u in rep.unsupported] == ["fallocate"]


def test_a_child_shares_its_parents_descriptor_after_fork() -> None:
    f = "/r/dir/v.json"
    log = "\n".join(
        [
            f'10 openat(-100<{_hex("/w")}>, "{_hex(f)}", 0x241, 0666) = 3<{_hex(f)}>',
            f"10 dup2(3<{_hex(f)}>, 1) = 1<{_hex(f)}>",
            "10 vfork( <unfinished ...>",
            f'11 write(1<{_hex(f)}>, "{_hex("ab")}", 2) = 2',
            "10 <... vfork resumed>) = 11",
            f'10 write(1<{_hex(f)}>, "{_hex("c")}", 1) = 1',
        ]
    )
    fs = RecordingFileSystem(MemoryFileSystem(dirs=("/m",)))
    StraceReplay(fs, "/r/dir", "/m", cwd="/w").feed(parse_log(log))
    assert [(o.kind, o.offset, o.data) for o in fs.trace.ops] == [
        (OpKind.CREATE, 0, b""),
        (OpKind.WRITE, 0, b"ab"),
        (OpKind.WRITE, 2, b"c"),
    ]


# --- real programs -----------------------------------------------------------------

ECHO = f"sh {EXEC}/echo_store.sh"
NODE = f"node {EXEC}/atomic_store.js"


def _verify(store: str, model: str, workloads: list[str], **kw: object):  # type: ignore[no-untyped-def]
    return verify_exec(
        f"{store} save {{dir}} {{value}}",
        f"{store} load {{dir}}",
        models=parse_models(model),
        workloads=workloads,
        jobs=2,
        **kw,  # type: ignore[arg-type]
    )


def test_a_load_output_reads_numbers_as_the_other_runtime_wrote_them() -> None:
    # JavaScript prints the double 6.592166031981414e16 as 65921660319814140; read back as
    # a Python int it would not equal the float saved (a false A1 on a correct store).
    from crashpoint.scenarios.jobs.exec import json_value

    assert json_value(b"65921660319814140") == 6.592166031981414e16
    assert json_value(b"[9007199254740992, -3]") == [2**53, -3]
    assert isinstance(json_value(b"9007199254740993"), float)


@pytest.mark.exec
def test_echo_one_liner_fails_process_crash_with_a1() -> None:
    _need("sh")
    result, _ = _verify(ECHO, "process-crash", ["first-save"])
    found = {(c.invariant, c.model, c.crash_point) for c in result.counterexamples}
    # crash point 1: the file is created (truncated), its write not done: load prints nothing
    assert ("A1", "process-crash", 1) in found
    assert result.verdict == "violation"


def test_a_save_that_fails_silently_is_told_without_a_dangling_colon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a new user's find: "SaveExit: exit status 1:" and nothing after it
    from crashpoint._cli import main

    _need("false")
    args = ["verify", "--exec", "--save", "false {dir} {value}", "--load", "false {dir}"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "SaveExit: exit status 1: nothing on stderr" in err, err


@pytest.mark.exec
def test_node_tmp_fsync_rename_dirfsync_store_passes_every_model() -> None:
    _need("node")
    result, facts = _verify(NODE, "all", ["first-save", "resize"])
    assert result.verdict == "clean", [c.render() for c in result.counterexamples[:1]]
    assert all(r.distinct_states > 3 for r in result.results)
    assert facts.processes > 10


@pytest.mark.exec
@pytest.mark.long
def test_node_store_passes_every_fault() -> None:
    _need("node")
    result, facts = _verify(NODE, "process-crash,power-loss", ["first-save"], faults=True)
    assert result.verdict == "clean", result.unsupported or result.counterexamples[:1]
    assert sum(r.faults for r in result.results) >= 4 * 5
    assert facts.untargeted == []


@pytest.mark.exec
def test_an_unsupported_syscall_is_reported_by_name() -> None:
    _need()
    code = (
        "import os,sys,mmap; fd=os.open(sys.argv[1]+'/v.json', os.O_RDWR|os.O_CREAT|os.O_TRUNC);"
        "data=open(sys.argv[2],'rb').read();"
        "os.write(fd, data); m=mmap.mmap(fd, 0); m.close(); os.close(fd)"
    )
    load = "import json,sys; print(json.dumps(json.load(open(sys.argv[1]+'/v.json'))))"
    result, _ = verify_exec(
        f'{PY} -c "{code}" {{dir}} {{value}}',
        f'{PY} -c "{load}" {{dir}}',
        models=parse_models("process-crash"),
        workloads=["first-save"],
    )
    assert result.verdict == "incomplete"
    assert any(u.startswith("mmap (a shared writable mapping") for u in result.unsupported)


@pytest.mark.exec
def test_a_write_outside_the_directory_is_s1(tmp_path: object) -> None:
    _need("sh")
    outside = os.path.join(str(tmp_path), "outside.txt")
    script = f'read -r v < "$1"; echo "$v" > "$0/v.json"; echo x > {outside}'
    result, _ = verify_exec(
        f"sh -c '{script}' {{dir}} {{value}}",
        f"{ECHO} load {{dir}}",
        models=parse_models("process-crash"),
        workloads=["first-save"],
    )
    s1 = [c for c in result.counterexamples if c.invariant == "S1"]
    assert s1 and outside in s1[0].got


@pytest.mark.exec
def test_recorded_trace_of_a_python_store_equals_its_intercepted_trace() -> None:
    """Acceptance 4: the same store, run through --exec and intercepted in Python."""
    _need()
    sys.path.insert(0, os.path.join(ROOT, "examples", "stores"))
    import jsonstore

    store = f"{PY} {EXEC}/pystore.py JsonStore"
    runner = ExecRunner(f"{store} save {{dir}} {{value}}", f"{store} load {{dir}}")
    exec_kind = ExecDocumentKind(runner, models=[], jobs=1)
    with make_runner(jsonstore.JsonStore, DOC_BASE) as py_runner:
        py_kind = DocumentKind(py_runner, "jsonstore:JsonStore")
        for name in ("first-save", "resize"):
            recorded = exec_kind.record(exec_kind.workload(name), None)
            intercepted = py_kind.record(py_kind.workload(name), None)

            def ops(run):  # type: ignore[no-untyped-def]
                return [(o.kind, o.path, o.dst, o.offset, o.data, o.size) for o in run.ops]

            assert ops(recorded), name
            assert ops(recorded) == ops(intercepted), name


@pytest.mark.exec
def test_cli_exit_codes(tmp_path: object) -> None:
    _need("sh")
    cli = [PY, "-m", "crashpoint", "verify", "--exec", "--out", str(tmp_path)]
    one = subprocess.run(
        [
            *cli,
            "--save",
            f"{ECHO} save {{dir}} {{value}}",
            "--load",
            f"{ECHO} load {{dir}}",
            "--workload",
            "first-save",
        ],
        capture_output=True,
        text=True,
    )
    assert one.returncode == 1, one.stderr
    bad = subprocess.run(
        [*cli, "--save", f"{ECHO} save {{dir}}", "--load", f"{ECHO} load {{dir}}"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "{value}" in bad.stderr and "Traceback" not in bad.stderr
    env = dict(os.environ, PATH="/nonexistent")
    nostrace = subprocess.run(
        [*cli, "--save", f"{ECHO} save {{dir}} {{value}}", "--load", f"{ECHO} load {{dir}}"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert nostrace.returncode == 2 and "strace" in nostrace.stderr


WFA = f"node {EXEC}/wfa_store.js"


@pytest.mark.exec
def test_write_file_atomic_control_loses_a_save_under_power_loss_only() -> None:
    """npm write-file-atomic 5.0.1 (pinned): atomic under a process crash; it fsyncs the
    temporary file but not the directory after the rename, so a power loss can take an
    acknowledged save (A2) with the temporary file left behind."""
    _need("node")
    if not os.path.isdir(os.path.join(EXEC, "node_modules", "write-file-atomic")):
        pytest.skip("write-file-atomic is not installed: npm ci --prefix examples/exec")
    result, _ = _verify(WFA, "process-crash,power-loss", ["first-save"])
    by_model = {r.model: {c.invariant for c in r.counterexamples} for r in result.results}
    assert by_model["process-crash"] == set()
    assert "A2" in by_model["power-loss"]


SEED = f"node {EXEC}/seed_storage.js {{dir}}"


def _first(counterexamples: list, invariant: str) -> tuple[int, str, str]:  # type: ignore[type-arg]
    """(crash point, operation name, its first path) of the earliest ``invariant`` finding."""
    c = min((c for c in counterexamples if c.invariant == invariant), key=lambda c: c.crash_point)
    op = getattr(c, "operation", "")
    return c.crash_point, op.split("(", 1)[0], op.split("'")[1] if "'" in op else ""


@pytest.mark.exec
@pytest.mark.parametrize(
    ("workload", "model", "invariant"),
    [("stale-ended-marker", "process-crash", "E2"), ("two-quick-saves", "power-loss", "R1")],
)
def test_node_seed_port_gives_the_python_seeds_findings(
    workload: str, model: str, invariant: str
) -> None:
    """Acceptance 1: one design, two languages, one verdict (invariants, model, and the
    operation at the earliest crash point)."""
    _need("node")
    from crashpoint.scenarios.kinds.agent.kind import explore
    from crashpoint.scenarios.kinds.agent.workload import SCENARIOS

    python = explore(SCENARIOS[workload], model=model, target="seed")
    node, _ = verify_exec_state_storage(
        SEED, models=parse_models(model), workloads=[workload], jobs=2, reference_format=True
    )
    assert node.unsupported == []
    found = node.counterexamples
    assert {c.invariant for c in found} == {v.invariant for v in python.counterexamples}
    assert invariant in {c.invariant for c in found}
    assert _first(found, invariant) == _first(python.counterexamples, invariant)


@pytest.mark.exec
def test_node_seed_port_passes_the_conformance_suite() -> None:
    _need("node")
    result, _ = verify_exec_state_storage(
        SEED,
        models=parse_models("process-crash"),
        workloads=["first-save"],
        jobs=2,
        reference_format=True,
    )
    assert result.conformance and result.failed_checks == []


def test_a_failure_reply_takes_spec_retryability_unless_it_gives_one() -> None:
    """SPEC.md §5: state_save_failed is conditional; a reply may say otherwise."""
    from crashpoint.core import Retryability, StateError
    from crashpoint.scenarios.jobs.exec import _reply

    with pytest.raises(StateError) as saved:
        _reply("save", 0, b'{"ok": false, "code": "state_save_failed"}', b"")
    assert saved.value.retryability is Retryability.CONDITIONAL
    with pytest.raises(StateError) as told:
        reply = b'{"ok": false, "code": "state_save_failed", "retryability": "always"}'
        _reply("save", 0, reply, b"")
    assert told.value.retryability is Retryability.ALWAYS
    with pytest.raises(StateError) as corrupt:
        _reply("load", 0, b'{"ok": false, "code": "state_corrupt"}', b"")
    assert corrupt.value.retryability is Retryability.NEVER


@pytest.mark.exec
def test_a_batch_of_loads_gives_the_replies_of_one_process_per_load() -> None:
    """One process per crash state (a batch of its loads) answers as one per load."""
    _need("node")
    from crashpoint.faultfs import MemoryFileSystem, write_bytes
    from crashpoint.scenarios.jobs.exec import ExecStateStorage, _load_request
    from crashpoint.scenarios.kinds.agent.workload import BASE_DIR

    fs = MemoryFileSystem(dirs=("/data",))
    runner = ExecRunner("", "", base_dir=BASE_DIR, storage=SEED)
    assert runner.detect_batch()
    store = ExecStateStorage(runner, fs, BASE_DIR)
    from crashpoint.core import AgentState

    store.save(AgentState.new("a", {"n": 1}))
    torn = MemoryFileSystem(fs.crash_state())
    write_bytes(torn, f"{BASE_DIR}/a.json", b'{"schemaVersion": 3, "sessionId": "a"')
    states = [fs.crash_state(), torn.crash_state()]
    bodies = [_load_request(sid) for sid in ("a", "b")]
    runner.prefetch_loads({s: bodies for s in states}, jobs=2)
    assert runner.counts == {"batch probe": 1, "traced": 1, "load batch": 2}
    single = ExecRunner("", "", base_dir=BASE_DIR, storage=SEED)
    for s in states:
        for b in bodies:
            batched = runner.plain_call(s, b)
            alone = single.plain_call(s, b)
            assert json_reply(batched[1]) == json_reply(alone[1])
            assert batched[3] is alone[3] is False
    assert single.counts == {"load": 4}


def json_reply(out: bytes) -> object:
    import json

    return json.loads(out)


@pytest.mark.exec
def test_node_seed_port_replays_one_fault_as_the_python_seed() -> None:
    """--fault on the state-storage form: ENOSPC injected at the save's tmp write
    (strace -e inject) gives the Python seed's findings for the same fault."""
    _need("node")
    import errno

    from crashpoint.faultfs import Fault
    from crashpoint.scenarios.kinds.agent.kind import explore_faults_models, record
    from crashpoint.scenarios.kinds.agent.targets import get_target
    from crashpoint.scenarios.kinds.agent.workload import SCENARIOS

    ops = record(SCENARIOS["two-quick-saves"], get_target("seed")).ops
    at = next(o.index for o in ops if o.kind is OpKind.WRITE)
    fault = Fault(at, errno.ENOSPC)
    models = parse_models("process-crash,power-loss")
    node, facts = verify_exec_state_storage(
        SEED, models=models, workloads=["two-quick-saves"], fault=fault, reference_format=True
    )
    assert facts.untargeted == [] and node.unsupported == []
    assert [r.faults for r in node.results] == [1, 1]
    python = explore_faults_models(
        SCENARIOS["two-quick-saves"], models=models, target="seed", faults=[fault]
    )
    for r, p in zip(node.results, python, strict=True):
        assert {(c.invariant, c.crash_point) for c in r.counterexamples} == {
            (v.invariant, v.crash_point) for v in p.counterexamples
        }


@pytest.mark.exec
@pytest.mark.long
@pytest.mark.parametrize("workload", ["two-quick-saves", "stale-ended-marker"])
def test_node_seed_port_under_every_fault_gives_the_python_seeds_findings(workload: str) -> None:
    """--faults on the state-storage form: each error of EXEC_FAULT_ERRNOS at each
    mutating call, the node port against the Python seed under the same plan."""
    _need("node")
    from crashpoint.scenarios.jobs.exec import exec_fault_plan
    from crashpoint.scenarios.kinds.agent.kind import explore_faults_models, record
    from crashpoint.scenarios.kinds.agent.targets import get_target
    from crashpoint.scenarios.kinds.agent.workload import SCENARIOS

    models = parse_models("process-crash,power-loss")
    node, facts = verify_exec_state_storage(
        SEED, models=models, workloads=[workload], faults=True, jobs=2, reference_format=True
    )
    assert facts.untargeted == [] and node.unsupported == []
    plan = exec_fault_plan(record(SCENARIOS[workload], get_target("seed")).ops)
    python = explore_faults_models(SCENARIOS[workload], models=models, target="seed", faults=plan)
    faulted = [r for r in node.results if r.faults]
    assert [r.faults for r in faulted] == [len(plan)] * 2
    for r, p in zip(faulted, python, strict=True):
        assert {(c.invariant, c.crash_point, c.fault) for c in r.counterexamples} == {
            (v.invariant, v.crash_point, v.fault) for v in p.counterexamples
        }


@pytest.mark.exec
def test_cli_state_storage_takes_a_fault(tmp_path: object) -> None:
    """--fault on --exec --kind state-storage is injected, not refused (exit 0: the
    seed port fails the save cleanly), and the report says what ran."""
    _need("node")
    import json

    out = str(tmp_path)
    args = ["--kind", "state-storage", "--format", "reference", "--workload", "first-save"]
    run = subprocess.run(
        [
            PY,
            "-m",
            "crashpoint",
            "verify",
            "--exec",
            SEED,
            *args,
            "--fault",
            "1:ENOSPC",
            "--out",
            out,
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    assert [s["faults"] for s in report["scenarios"]] == [1]
    assert report["exec"]["untargeted_faults"] == []
    assert report["exec"]["process_kinds"]["traced"] == 2  # the clean save, the faulted one


def test_a_session_layout_is_the_file_names_with_the_session_written_as_braces() -> None:
    """What decides whether the C1 probe rides in a batch (a guess: a wrong one
    costs one process, never a finding)."""
    from crashpoint.faultfs import CrashState
    from crashpoint.scenarios.jobs.exec import _layout

    state = CrashState(
        files=(("/data/s1.json.tmp", b"{"), ("/data/s2.json", b"{}"), ("/else/s1.json", b"")),
        dirs=("/data", "/data/s1"),
    )
    assert _layout(state, "s1", "/data") == ("s2.json", "{}.json.tmp", "{}/")
    assert _layout(state, "s2", "/data") == ("s1.json.tmp", "s1/", "{}.json")
    assert _layout(state, "", "/data") == ("s1.json.tmp", "s1/", "s2.json")


@pytest.mark.exec
def test_state_storage_starts_one_process_per_disk_image() -> None:
    """Speed item of issue 13: every distinct disk image (over every workload and
    model) is loaded by one fresh process answering all its requests, the C1 probes
    included (a batch a probe made change a file is run again without it); the
    processes beyond are the recordings' traced calls and the conformance suite's."""
    _need("node")
    result, facts = verify_exec_state_storage(
        SEED,
        models=parse_models("process-crash,power-loss"),
        workloads=["load-or-create-corrupt", "two-quick-saves", "corrupt-main-good-bak"],
        jobs=2,
        reference_format=True,
    )
    images: set[str] = set().union(*(r.state_ids for r in result.results))
    k = facts.counts
    assert k.get("batch discarded", 0) == 0
    assert k.get("load", 0) + k.get("load batch", 0) == len(images) == 40
    probes = k.get("probe", 0) + k.get("probe batch", 0)
    assert probes <= 2
    conformance = sum(n for kind, n in k.items() if kind.startswith("conformance "))
    assert conformance > 0 and result.failed_checks == []
    assert facts.processes == len(images) + probes + k["traced"] + k["batch probe"] + conformance


# --- interrupts and time limits ------------------------------------------------------------


def test_run_process_starts_nothing_after_a_stop_and_kills_what_runs(tmp_path: object) -> None:
    # no strace: the process registry behind Ctrl-C and SIGTERM (README: nothing outlives
    # crashpoint), with plain sleep processes
    import threading
    import time

    from crashpoint.scenarios.jobs.exec import allow_processes, run_process, stop_processes

    allow_processes()
    done: list[object] = []

    def sleeper() -> None:
        try:
            done.append(run_process(["sleep", "100"], label="t", timeout=None, cwd="/"))
        except BaseException as exc:  # recorded and asserted below
            done.append(exc)

    thread = threading.Thread(target=sleeper)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    stop_processes()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - started < 5
    killed = done[0]
    assert isinstance(killed, subprocess.CompletedProcess) and killed.returncode == -9
    with pytest.raises(KeyboardInterrupt):
        run_process(["true"], label="t", timeout=None, cwd="/")
    allow_processes()
    assert run_process(["true"], label="t", timeout=None, cwd="/").returncode == 0


@pytest.mark.exec
@pytest.mark.parametrize(
    ("sig", "code", "line"), [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")]
)
def test_a_signal_stops_verify_exec_and_leaves_no_process_behind(
    tmp_path: object, sig: str, code: int, line: str
) -> None:
    import signal
    import time

    _need("node")
    marker = f"sleep 97{code}"  # a command line of this test's own, to look for
    proc = subprocess.Popen(
        [
            *(PY, "-m", "crashpoint", "verify", "--exec"),
            *("--save", f"sh -c '{marker}' x {{dir}} {{value}}"),
            *("--load", f"node {EXEC}/atomic_store.js load {{dir}}"),
            *("--out", str(tmp_path)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _running(marker):
        time.sleep(0.2)
    assert _running(marker), "the save command never started"
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert err.decode().strip().splitlines()[-1] == f"crashpoint: {line}"
    time.sleep(0.5)
    assert not _running(marker), "the command under test outlived crashpoint"


def _running(command: str) -> bool:
    """A process whose whole command line is ``command`` is running."""
    found = subprocess.run(["pgrep", "-x", "-f", command], capture_output=True, text=True)
    return bool(found.stdout.split())


@pytest.mark.exec
def test_exec_commands_have_a_default_time_limit(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _need("node")
    import crashpoint._verify_cli as verify_cli
    from crashpoint._cli import main

    monkeypatch.setattr(verify_cli, "EXEC_TIMEOUT", 1.0)  # the default is 60 s
    code = main(
        [
            *("verify", "--exec", "--save", "sh -c 'sleep 100' x {dir} {value}"),
            *("--load", f"node {EXEC}/atomic_store.js load {{dir}}", "--out", str(tmp_path)),
        ]
    )
    assert code == 2
    assert "did not return within --timeout 1 s" in capsys.readouterr().err


def test_only_interpreter_caches_are_ignored_outside_the_directory() -> None:
    from crashpoint.faultfs._strace import _interpreter_cache

    cache = [
        "/app/__pycache__",
        "/app/__pycache__/store.cpython-311.pyc",
        "/app/__pycache__/store.cpython-311.pyc.140234",
        "/root/.cache/node-compile-cache/v20/abc",
    ]
    hidden = [  # a store's own data under a cache-like name is an escape (S1)
        "/tmp/hide/__pycache__/9f3a.json",
        "/tmp/hide/__pycache__/x.pyc.tmp",
        "/tmp/__pycache__x/a.pyc",
    ]
    assert all(_interpreter_cache(p) for p in cache)
    assert not any(_interpreter_cache(p) for p in hidden)


@pytest.mark.exec
@pytest.mark.parametrize("kind", ["document", "state-storage"])
def test_verify_exec_builds_a_plan_run_by_run_plan(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19: ``verify --exec`` is a thin front end: one Plan of the kind, its commands
    the plan's transport (:class:`ExecCommands`), run by ``run_plan``."""
    from crashpoint._cli import main
    from crashpoint.scenarios.jobs import plan as plan_module
    from crashpoint.scenarios.jobs.exec import ExecCommands

    seen: list[Any] = []
    real = plan_module.run_plan

    def spy(plan: Any, factory: Any = None, **kw: Any) -> Any:
        seen.append(plan)
        return real(plan, factory, **kw)

    monkeypatch.setattr(plan_module, "run_plan", spy)
    _need("node")
    out = tmp_path / "out"
    store = f"{PY} {EXEC}/pystore.py JsonStore"
    save, load = f"{store} save {{dir}} {{value}}", f"{store} load {{dir}}"
    if kind == "document":
        argv = ["--exec", "--save", save, "--load", load, "--workload", "first-save"]
    else:
        argv = ["--exec", SEED, "--kind", "state-storage", "--workload", "first-save"]
    code = main(["verify", *argv, "--model", "process-crash", "--out", str(out)])
    assert code in (0, 1)
    (plan,) = seen
    transport = plan.options["transport"]
    assert plan.kind == kind and isinstance(transport, ExecCommands)
    assert (transport.storage == SEED) if kind == "state-storage" else (transport.save == save)
    report = json.loads((out / "report.json").read_text())
    assert report["run_id"] == plan.run_id() and report["exec"]["processes"] > 0


@pytest.mark.exec
@pytest.mark.parametrize("misses", [1, 3])
def test_an_injection_that_missed_its_operation_is_run_again(
    misses: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """strace counts calls per thread, so a program whose threads take the calls in
    another order (node's libuv pool, under load) can get a fault on another call than the
    one aimed at: the faulted record is run again (``INJECT_TRIES``), and only an injection
    that missed every time is told (incomplete). The miss is made here by aiming the first
    ``misses`` injections of each fault past every call."""
    from crashpoint._cli import main
    from crashpoint.scenarios.jobs import exec as exec_mod

    _need()
    real = exec_mod.ExecRunner.run
    aimed: dict[str, int] = {}

    def run(self: Any, argv: list[str], fs: Any, **kw: Any) -> Any:
        inject = kw.get("inject")
        if inject is not None:
            aimed[inject] = aimed.get(inject, 0) + 1
            if aimed[inject] <= misses:
                kw["inject"] = inject.rsplit("when=", 1)[0] + "when=999"
        return real(self, argv, fs, **kw)

    monkeypatch.setattr(exec_mod.ExecRunner, "run", run)
    store = f"{PY} {EXEC}/pystore.py JsonStore"
    out = tmp_path / "o"
    code = main(
        [
            *("verify", "--exec", "--save", f"{store} save {{dir}} {{value}}"),
            *("--load", f"{store} load {{dir}}", "--workload", "first-save", "--faults"),
            *("--model", "process-crash", "--out", str(out)),
        ]
    )
    report = json.loads((out / "report.json").read_text())
    faults = len(aimed)
    assert faults > 0
    if misses < exec_mod.INJECT_TRIES:
        assert code == 0, report["totals"]
        assert report["exec"]["faults_run_again"] == faults * misses
        assert report["incomplete"] == [] and report["verdict"] == "clean", report["verdict"]
    else:
        notes = report["incomplete"]
        told = ("did not land", "trace and model disagree")
        assert code != 0 and any(t in n for n in notes for t in told), notes
        assert report["exec"]["faults_run_again"] == faults * (exec_mod.INJECT_TRIES - 1)
