"""The strace driver's fork server (issue 23, acceptance 3): ``--runner strace`` with a
Python TARGET runs each clean save and load in a forked child of one long-lived, traced
driver process instead of a fresh interpreter. The verdict, findings and crash states
must be the one-shot path's; a child that dies or hangs, and a TARGET whose import
writes, are handled. Speed figures are in ``benchmarks/bench_exec.py``, not here."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import parse_models
from crashpoint.faultfs._strace import strace_available
from crashpoint.scenarios.jobs.exec import (
    DriverServer,
    ServerGone,
    driver_commands,
    verify_exec,
)
from crashpoint.scenarios.targets.user import TargetTimeout

pytestmark = pytest.mark.exec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JSON = os.path.join(ROOT, "examples", "stores", "jsonstore.py")


@pytest.fixture(autouse=True)
def _strace() -> None:
    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)


def _verify(target: str, *, server: bool, **kw: Any) -> tuple[Any, Any]:
    save, load, _ = driver_commands(target, "document")
    kw.setdefault("models", parse_models("process-crash,ext4"))
    kw.setdefault("workloads", ["first-save", "resize"])
    return verify_exec(save, load, shown=target, server=server, **kw)


def _digest(result: Any) -> dict[str, Any]:
    """What a run decided: verdict, findings, crash states, notes."""
    return {
        "verdict": result.verdict,
        "findings": sorted(
            (c.invariant, c.workload, c.model, c.crash_point, c.operation, str(c.crash_state))
            for c in result.counterexamples
        ),
        "states": [
            (r.workload, r.model, sorted(r.state_ids), r.raw_states) for r in result.results
        ],
        "faults": [r.faults for r in result.results],
        "unsupported": sorted({u for r in result.results for u in r.unsupported}),
    }


@pytest.mark.parametrize("store", ["JsonStore", "NoFsyncJsonStore", "InPlaceJsonStore"])
def test_the_server_and_one_shot_processes_judge_alike(store: str) -> None:
    target = f"{JSON}:{store}"
    forked, facts = _verify(target, server=True, jobs=2)
    alone, alone_facts = _verify(target, server=False, jobs=2)
    assert _digest(forked) == _digest(alone)
    assert facts.ignored == alone_facts.ignored
    assert facts.server == ""
    # every traced call forked; one server started (its process counted). Either way a
    # load may be answered by one that read the same bytes (the server traces the paths a
    # child looked at, as a one-shot light load is traced): every load is run or answered
    assert facts.counts.get("forked", 0) + facts.loads_reused == (
        alone_facts.counts["traced"] + alone_facts.loads_reused
    )
    assert facts.counts["server"] >= 1
    assert "traced" not in facts.counts
    assert facts.processes == facts.counts["forked"] + facts.counts["server"]
    assert facts.as_dict().keys() == alone_facts.as_dict().keys()
    if store == "JsonStore":
        assert forked.verdict == "clean"
    else:
        assert forked.counterexamples  # the broken twins are caught through the server too


def test_faulted_records_run_one_shot_and_judge_alike() -> None:
    # strace numbers a call from the tracee's execve: a fault is injected into a process
    # of its own, aimed from a one-shot recording
    kw: dict[str, Any] = {"models": parse_models("process-crash"), "workloads": ["first-save"]}
    forked, facts = _verify(f"{JSON}:JsonStore", server=True, faults=True, **kw)
    alone, _ = _verify(f"{JSON}:JsonStore", server=False, faults=True, **kw)
    assert _digest(forked) == _digest(alone)
    assert sum(r.faults for r in forked.results) > 0
    assert facts.counts["forked"] > 0 and facts.counts["traced"] > 0
    assert forked.verdict == "clean"


def test_a_faulted_write_is_aimed_from_the_forked_recording_without_a_probe() -> None:
    # The server's start (interpreter, driver, TARGET's import) made no write: a forked
    # child numbers its writes as a one-shot process does, so the one process of its own
    # is the faulted record itself (before: a one-shot probe of each call first).
    kw: dict[str, Any] = {
        "models": parse_models("process-crash"),
        "workloads": ["save-after-failure"],
    }
    forked, facts = _verify(f"{JSON}:JsonStore", server=True, **kw)
    alone, alone_facts = _verify(f"{JSON}:JsonStore", server=False, **kw)
    assert _digest(forked) == _digest(alone)
    assert forked.verdict == "clean"
    assert facts.counts["traced"] == 1 and facts.run_again == 0
    assert alone_facts.run_again == 0


SOCKET_AWARE = """
    import json, os, sys

    class Store:
        def __init__(self, base_dir):
            self.path = os.path.join(base_dir, "doc.json")

        def load(self):
            try:
                with open(self.path) as f:
                    return json.loads(f.read())
            except FileNotFoundError:
                return None

        def save(self, value):
            if "socket" in sys.modules:  # a fork server's child (its server imported it)
                fd = os.open("/dev/null", os.O_WRONLY)
                os.write(fd, b"x")  # a write strace counts that stores nothing
                os.close(fd)
            with open(self.path + ".tmp", "w") as f:
                f.write(json.dumps(value))
                f.flush()
                os.fsync(f.fileno())
            os.replace(self.path + ".tmp", self.path)
"""


def test_an_estimated_injection_that_misses_is_probed_one_shot(tmp_path: Path) -> None:
    # In a forked child this store writes once more (to /dev/null) than in a process of
    # its own: the write numbering taken from the forked recording is off by one, the
    # injection misses its operation, and the record is run again aimed by a one-shot
    # probe: the fault lands and the verdict is the one-shot path's, complete.
    target = _module(tmp_path, SOCKET_AWARE)
    kw: dict[str, Any] = {
        "models": parse_models("process-crash"),
        "workloads": ["save-after-failure"],
    }
    forked, facts = _verify(target, server=True, **kw)
    alone, alone_facts = _verify(target, server=False, **kw)
    assert facts.run_again == 1 and alone_facts.run_again == 0
    assert _digest(forked) == _digest(alone)
    assert not forked.incomplete
    assert sum(r.faults for r in forked.results) > 0


def _module(tmp_path: Path, body: str) -> str:
    path = tmp_path / "store_mod.py"
    path.write_text(textwrap.dedent(body))
    return f"{path}:Store"


STORE = """
    import json, os, signal, time

    class Store:
        def __init__(self, base_dir):
            self.base_dir = base_dir

        def load(self):
            name = os.path.basename(self.base_dir)
            if name == "die":
                os.kill(os.getpid(), signal.SIGKILL)
            if name == "hang":
                time.sleep(600)
            if name == "parricide":
                os.kill(os.getppid(), signal.SIGKILL)
            if name == "ok":
                return name
            try:
                with open(os.path.join(self.base_dir, "doc.json")) as f:
                    return json.loads(f.read())
            except FileNotFoundError:
                return None

        def save(self, value):
            with open(os.path.join(self.base_dir, "doc.json"), "w") as f:
                f.write(json.dumps(value))
"""


def test_a_child_killed_by_a_signal_is_its_status_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    target = _module(tmp_path, STORE)
    server = DriverServer(target, cwd=str(tmp_path), timeout=60, max_output=1 << 20)
    try:
        proc, _calls = server.call(["document", target, "load", "/nowhere/die"], None, "load")
        assert proc.returncode == -9
        proc, calls = server.call(["document", target, "load", "/nowhere/ok"], None, "load")
        assert (proc.returncode, proc.stdout) == (0, b'"ok"')
        # the child's own calls only: none of the server's start-up (its imports)
        assert not any("store_mod" in c.args for c in calls)
        assert {c.pid for c in calls} and server.pid not in {c.pid for c in calls}
        # what was read is not kept on disk: strace goes on writing the server's own
        # lines at its offset after the emptied part (a hole), so count blocks, not size
        assert os.stat(server.log).st_blocks * 512 < 64 * 1024
    finally:
        server.close()
    assert server.proc is not None and server.proc.returncode is not None


def test_a_hanging_child_times_out_and_its_server_is_killed(tmp_path: Path) -> None:
    target = _module(tmp_path, STORE)
    server = DriverServer(target, cwd=str(tmp_path), timeout=2, max_output=1 << 20)
    try:
        with pytest.raises(TargetTimeout):
            server.call(["document", target, "load", "/nowhere/hang"], None, "load")
    finally:
        server.close()
    assert server.proc is not None and server.proc.returncode is not None


def test_a_child_that_kills_its_server_is_no_fallback(tmp_path: Path) -> None:
    # its directory is no longer the state it was given: run again one-shot, it would be
    # judged on what the first run left (ExecRunner turns this into BadTarget, exit 2)
    target = _module(tmp_path, STORE)
    server = DriverServer(target, cwd=str(tmp_path), timeout=30, max_output=1 << 20)
    try:
        with pytest.raises(ServerGone) as gone:
            server.call(["document", target, "load", "/nowhere/parricide"], None, "load")
        assert gone.value.ran
    finally:
        server.close()


def test_a_save_in_a_forked_child_is_recorded_as_one_shot(tmp_path: Path) -> None:
    target = _module(tmp_path, STORE)
    save, load, _ = driver_commands(target, "document")
    models = parse_models("process-crash")
    forked, facts = verify_exec(
        save, load, models=models, workloads=["first-save"], shown=target, server=True
    )
    alone, _ = verify_exec(
        save, load, models=models, workloads=["first-save"], shown=target, server=False
    )
    assert _digest(forked) == _digest(alone)
    assert facts.counts["forked"] > 0


def test_an_import_that_writes_keeps_the_one_shot_path(tmp_path: Path) -> None:
    # the server's own start-up is in no child's trace: a TARGET whose import writes
    # (an escape a one-shot trace shows every time) is not served by a fork server
    mark = tmp_path / "imported.txt"
    head = f"with open({str(mark)!r}, 'a') as f:\n    f.write('imported')\n"
    target = _module(tmp_path, head + textwrap.dedent(STORE))
    kw: dict[str, Any] = {"models": parse_models("process-crash"), "workloads": ["first-save"]}
    result, facts = _verify(target, server=True, **kw)
    alone, _ = _verify(target, server=False, **kw)
    assert "import did more than read" in facts.server
    assert "forked" not in facts.counts and facts.counts["traced"] > 0
    assert facts.counts["server"] == 1
    assert _digest(result) == _digest(alone)


@pytest.mark.parametrize(
    "keep",
    [
        "_KEEP.append(f)",  # a file object flushed and closed by the interpreter's exit
        "atexit.register(f.close)",  # an atexit callback
    ],
)
def test_what_the_interpreters_exit_writes_is_recorded_in_a_forked_child(
    tmp_path: Path, keep: str
) -> None:
    # a child ends at once only when its exit could do no I/O: here it writes the value
    target = _module(
        tmp_path,
        f"""
        import atexit, json, os

        _KEEP = []

        class Store:
            def __init__(self, base_dir):
                self.path = os.path.join(base_dir, "doc.json")

            def load(self):
                try:
                    with open(self.path) as f:
                        return json.loads(f.read())
                except (FileNotFoundError, ValueError):
                    return None

            def save(self, value):
                f = open(self.path, "w")
                f.write(json.dumps(value))
                {keep}
        """,
    )
    kw: dict[str, Any] = {"models": parse_models("process-crash"), "workloads": ["first-save"]}
    forked, facts = _verify(target, server=True, **kw)  # the preflight sees the save land
    alone, _ = _verify(target, server=False, **kw)
    assert _digest(forked) == _digest(alone)
    assert facts.counts["forked"] > 0 and facts.server == ""


def test_a_reply_is_one_write_even_when_python_is_unbuffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # json.dump writes each piece of its encoding apart: unbuffered (PYTHONUNBUFFERED),
    # each piece was a write(2) the tracer stopped at (81 for eight images)
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    dirs = []
    for i in range(4):
        d = tmp_path / f"d{i}"
        d.mkdir()
        (d / "doc.json").write_text(json.dumps({"k": [i, "x" * 10, {"n": None}]}))
        dirs.append(str(d))
    target = f"{JSON}:JsonStore"
    server = DriverServer(target, cwd=str(tmp_path), timeout=60, max_output=1 << 20)
    try:
        proc, calls = server.call(
            ["document", target, "load-batch"], json.dumps(dirs).encode(), "load batch"
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    replies = json.loads(proc.stdout)
    assert [r["value"]["k"][0] for r in replies] == [0, 1, 2, 3]
    to_stdout = [c for c in calls if c.name == "write" and c.args.startswith("1<")]
    assert len(to_stdout) == 1


LOGGING_STORE = """
    import json, os

    class Store:
        # LevelDB in small: every open appends to the LOG file the save wrote, so a load
        # batch overwrites the state it loads and each state is loaded again on its own
        def __init__(self, base_dir):
            self.base_dir = base_dir

        def load(self):
            with open(os.path.join(self.base_dir, "LOG"), "a") as f:
                f.write("opened\\n")
            try:
                with open(os.path.join(self.base_dir, "doc.json")) as f:
                    return json.loads(f.read())
            except FileNotFoundError:
                return None

        def save(self, value):
            with open(os.path.join(self.base_dir, "LOG"), "a") as f:
                f.write("saved\\n")
            path = os.path.join(self.base_dir, "doc.json")
            with open(path + ".tmp", "w") as f:
                f.write(json.dumps(value))
            os.replace(path + ".tmp", path)
"""


def test_a_state_its_batch_load_overwrote_is_answered_with_a_batched_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state whose batch load overwrote a file (LevelDB's LOG appended on every open) is
    answered by its batch, with ``wrote`` and the reload of the disk that load left, read
    back from its directory and loaded in one more batch: no load on its own, none traced
    in full (they were two processes a state: Mercurial's ext4 run did not end in 20
    minutes); the verdict and states are the one-shot path's, which replays every load."""
    from crashpoint.scenarios.jobs import exec as exec_job

    target = _module(tmp_path, LOGGING_STORE)
    singles: list[Any] = []
    real_observe = exec_job.ExecDocumentKind.observe

    def observe(self: Any, state: Any) -> Any:
        singles.append(state)
        return real_observe(self, state)

    monkeypatch.setattr(exec_job.ExecDocumentKind, "observe", observe)
    kw: dict[str, Any] = {"models": parse_models("ext4"), "workloads": ["first-save"], "jobs": 2}
    forked, facts = _verify(target, server=True, **kw)
    assert facts.counts.get("forked", 0) > 0
    assert len(singles) <= 2  # the initial value's load and the preflight's, no state's
    assert "load traced again" not in facts.counts
    monkeypatch.setattr(exec_job.ExecDocumentKind, "observe", real_observe)
    # the reference: no batch, no server, each state loaded on its own (a load that
    # overwrote traced again in full and its left disk replayed into the model)
    monkeypatch.setattr(exec_job, "driver_batch_load", lambda shown: None)
    alone, alone_facts = _verify(target, server=False, **kw)
    assert alone_facts.counts.get("load traced again", 0) > 0
    assert _digest(forked) == _digest(alone)
    assert facts.processes * 4 < alone_facts.processes


CACHING_STORE = LOGGING_STORE.replace(
    '"LOG"), "a"', '"cache-" + str(len(os.listdir(self.base_dir)))), "w"', 1
)
"""The same, but a load writes a new cache file and leaves the LOG as the save did."""


def test_a_load_that_only_creates_files_is_answered_by_its_batch(tmp_path: Path) -> None:
    """A load that creates files and changes none of the crash state's (Mercurial's
    caches) is answered by its load batch, with the one-shot path's verdict and states:
    creating a file overwrites nothing (DocumentKind), so no full trace is needed."""
    target = _module(tmp_path, CACHING_STORE)
    kw: dict[str, Any] = {"models": parse_models("ext4"), "workloads": ["first-save"], "jobs": 2}
    forked, facts = _verify(target, server=True, **kw)
    alone, alone_facts = _verify(target, server=False, **kw)
    assert _digest(forked) == _digest(alone)
    assert "load traced again" not in facts.counts
    assert "load traced again" not in alone_facts.counts


FLAG_STORE = """
    import json, os

    class Store:
        # a save leaves a never-synced flag after the document; the load only stat()s it
        # and fails without it: states differing only in the flag must not answer each
        # other (the server traces the paths a forked load looked at)
        def __init__(self, base_dir):
            self.base_dir = base_dir

        def load(self):
            path = os.path.join(self.base_dir, "doc.json")
            if not os.path.exists(path):
                return None
            if not os.path.exists(os.path.join(self.base_dir, "flag")):
                raise ValueError("no flag beside the document")
            with open(path) as f:
                return json.loads(f.read())

        def save(self, value):
            path = os.path.join(self.base_dir, "doc.json")
            with open(path + ".tmp", "w") as f:
                f.write(json.dumps(value))
                f.flush()
                os.fsync(f.fileno())
            os.replace(path + ".tmp", path)
            fd = os.open(self.base_dir, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
            with open(os.path.join(self.base_dir, "junk.log"), "a") as f:
                f.write("x" * 5000)  # never read: pending in most states
            open(os.path.join(self.base_dir, "flag"), "w").close()
"""


def _flag_run(target: str, monkeypatch: pytest.MonkeyPatch, reuse: bool) -> tuple[Any, Any]:
    from crashpoint.scenarios.jobs import exec as exec_job

    with monkeypatch.context() as m:
        m.setattr(exec_job, "driver_batch_load", lambda shown: None)  # one fork per load
        if not reuse:
            m.setattr(exec_job.ExecDocumentKind, "_reused", lambda self, s, sigs=None: None)
        return _verify(target, server=True, jobs=2, models=parse_models("ext4"))


def _findings(result: Any) -> list[Any]:
    return sorted(
        (c.invariant, c.crash_point, c.state_digest, str(c.got)) for c in result.counterexamples
    )


def test_a_forked_load_is_answered_only_by_one_that_looked_at_the_same_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fork server traces the calls by which a load looks at a path (``stat``,
    ``getdents`` ...): a forked load's inputs are known, states differing where it never
    looks (junk.log) are loaded once, and states differing in what it only ``stat()``s (the
    flag) are not answered by one another."""
    target = _module(tmp_path, FLAG_STORE)
    every, every_facts = _flag_run(target, monkeypatch, reuse=False)
    reused, facts = _flag_run(target, monkeypatch, reuse=True)
    assert every_facts.loads_reused == 0 and facts.loads_reused > 0
    assert "traced" not in facts.counts  # every load forked
    assert _findings(reused) == _findings(every)
    assert any(c.invariant == "A2" for c in every.counterexamples)
    assert [sorted(r.state_ids) for r in reused.results] == [
        sorted(r.state_ids) for r in every.results
    ]


def test_without_the_servers_input_calls_the_stat_only_flag_would_be_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: a forked load kept with its opens only answers a state
    that differs in the flag it only ``stat()``ed."""
    from crashpoint.scenarios.jobs import exec as exec_job

    target = _module(tmp_path, FLAG_STORE)
    every, _ = _flag_run(target, monkeypatch, reuse=False)
    monkeypatch.setattr(exec_job, "_LIGHT_KEPT", frozenset(("openat", "open", "fork-of")))
    try:
        reused, _ = _flag_run(target, monkeypatch, reuse=True)
    except exec_job.BadTarget as exc:
        assert "after a clean save returned a different value" in str(exc)
        return
    assert _findings(reused) != _findings(every)


SOMETIMES_WRITING_STORE = LOGGING_STORE.replace(
    """        def load(self):
            with open(os.path.join(self.base_dir, "LOG"), "a") as f:
                f.write("opened\\n")""",
    """        def load(self):
            if os.path.exists(os.path.join(self.base_dir, "LOG")):
                with open(os.path.join(self.base_dir, "LOG"), "a") as f:
                    f.write("opened\\n")""",
).replace(
    """            os.replace(path + ".tmp", path)""",
    """            os.replace(path + ".tmp", path)
            with open(os.path.join(self.base_dir, "junk.log"), "a") as f:
                f.write("x" * 9000)  # never read: states alike but for it""",
)
"""LOGGING_STORE whose load writes only where the save's LOG is (its other loads are
read-only, so what they looked at is known; the writing ones are never remembered), and
whose save ends with a file no load reads (many states alike at every path a load reads)."""


def test_a_wave_of_loads_is_jobs_wide_while_states_are_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """States alike at every path a remembered load looked at are likely answered by one
    load, but a load that writes is never remembered: a wave still takes ``jobs`` states
    (Mercurial under posix ran one load at a time, a core idle, for minutes)."""
    from crashpoint.scenarios.jobs import exec as exec_job

    assert "if os.path.exists" in SOMETIMES_WRITING_STORE and "junk" in SOMETIMES_WRITING_STORE
    target = _module(tmp_path, SOMETIMES_WRITING_STORE)
    widths: list[tuple[int, int]] = []
    real_wave = exec_job.ExecDocumentKind._wave

    def wave(self: Any, states: list[Any], sigs: Any) -> list[Any]:
        chosen = real_wave(self, states, sigs)
        widths.append((len(states), len(chosen)))
        return chosen

    monkeypatch.setattr(exec_job, "driver_batch_load", lambda shown: None)  # waves only
    monkeypatch.setattr(exec_job.ExecDocumentKind, "_wave", wave)
    kw: dict[str, Any] = {"models": parse_models("ext4"), "workloads": ["first-save"], "jobs": 2}
    forked, facts = _verify(target, server=True, **kw)
    assert facts.loads_reused > 0  # some loads were remembered: the signatures were used
    assert widths and all(chosen == min(2, left) for left, chosen in widths), widths
    monkeypatch.setattr(exec_job.ExecDocumentKind, "_wave", real_wave)
    alone, _ = _verify(target, server=False, **kw)
    assert _digest(forked) == _digest(alone)


def test_servers_stop_tracing_inputs_when_no_load_was_answered_by_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A traced ``stat`` is a stop of the tracer: after ``INPUTS_PROBE`` forked loads none
    of which another's answered (none may be, here), the pool narrows to what a one-shot
    process is traced for, and its servers are replaced; the verdict is the one-shot
    path's."""
    from crashpoint.scenarios.jobs import exec as exec_job

    target = _module(tmp_path, LOGGING_STORE)
    traces: list[str] = []
    real_init = exec_job.DriverServer.__init__

    def init(self: Any, *args: Any, **kw: Any) -> None:
        real_init(self, *args, **kw)
        traces.append(self.trace)

    monkeypatch.setattr(exec_job, "driver_batch_load", lambda shown: None)  # waves only
    monkeypatch.setattr(exec_job.DriverServer, "__init__", init)
    monkeypatch.setattr(exec_job.ExecDocumentKind, "_reused", lambda self, s, sigs=None: None)
    monkeypatch.setattr(exec_job, "INPUTS_PROBE", 8)  # first-save has fewer than 64 loads
    kw: dict[str, Any] = {"models": parse_models("ext4"), "workloads": ["first-save"], "jobs": 2}
    forked, facts = _verify(target, server=True, **kw)
    assert facts.loads_reused == 0
    assert traces[0] == exec_job.SERVER_SYSCALLS
    assert exec_job.TRACED_SYSCALLS in traces[1:]  # replaced by servers tracing less
    alone, _ = _verify(target, server=False, **kw)
    assert _digest(forked) == _digest(alone)


DESTRUCTIVE_STORE = LOGGING_STORE.replace(
    """        def load(self):
            with open(os.path.join(self.base_dir, "LOG"), "a") as f:
                f.write("opened\\n")""",
    """        def load(self):
            # a leftover temporary means "a torn save" to this store, which then throws
            # the document away: the reload of the disk it left tells the lost generation
            if os.path.exists(os.path.join(self.base_dir, "doc.json.tmp")):
                for name in ("doc.json", "doc.json.tmp"):
                    if os.path.exists(os.path.join(self.base_dir, name)):
                        os.remove(os.path.join(self.base_dir, name))""",
)


def test_a_batched_reload_judges_a3_as_a_load_on_its_own_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A3 rests on the reload of the disk a writing load left: read back from the batch's
    directory and loaded in a batch, it judges as the reference path (each state loaded on
    its own, the left disk replayed from the full trace into the model)."""
    from crashpoint.scenarios.jobs import exec as exec_job

    assert "os.remove" in DESTRUCTIVE_STORE
    target = _module(tmp_path, DESTRUCTIVE_STORE)
    kw: dict[str, Any] = {
        "models": parse_models("process-crash,ext4"),
        "workloads": ["first-save"],
        "jobs": 2,
    }
    batched, _ = _verify(target, server=True, **kw)
    monkeypatch.setattr(exec_job, "driver_batch_load", lambda shown: None)
    alone, _ = _verify(target, server=False, **kw)
    assert _digest(batched) == _digest(alone)
    assert any(c.invariant == "A3" and "load wrote" in c.got for c in alone.counterexamples)
