"""Loads that read the same bytes (issue 24, "Scale": one state per combination that
matters to the load): a read-only load of a crash state, traced for what it opened and
looked at (``stat``, ``access``, ``getdents`` ...), answers every later state holding the
same bytes at those paths, the same names in the directories it listed and the same
absences. The verdict, the crash states and every finding must be those of a run that
loads every state; a state differing only where the load never looks is not loaded."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import parse_models
from crashpoint.faultfs._strace import strace_available
from crashpoint.scenarios.jobs import exec as ex

pytestmark = [
    pytest.mark.exec,
    pytest.mark.skipif(strace_available() is not None, reason="needs strace"),
]

STORE = """\
import json, os, sys

def save(d, value_file):
    with open(value_file) as f:
        value = f.read()
    tmp = os.path.join(d, "doc.tmp")
    with open(tmp, "w") as f:
        f.write(value)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(d, "doc.json"))
    fd = os.open(d, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    # never synced, never read back by the load (a log, a cache): pending in every state
    with open(os.path.join(d, "junk.log"), "a") as f:
        f.write("x" * 5000)
    {extra}

def load(d):
    path = os.path.join(d, "doc.json")
    {check}
    if not os.path.exists(path):
        print("null")
        return
    with open(path) as f:
        print(f.read())

if __name__ == "__main__":
    if sys.argv[1] == "save":
        save(sys.argv[2], sys.argv[3])
    else:
        load(sys.argv[2])
"""


FLAG = {
    "extra": 'open(os.path.join(d, "flag"), "w").close()',
    "check": 'if os.path.exists(path) and not os.path.exists(os.path.join(d, "flag")): sys.exit(3)',
}
"""A save that leaves a never-synced ``flag`` after the document, and a load that fails
without it and only ``stat()``s it."""


def _store(tmp_path: Path, extra: str = "pass", check: str = "pass") -> str:
    path = tmp_path / "store.py"
    body = STORE.replace("{extra}", extra).replace("{check}", check)
    path.write_text(textwrap.dedent(body))
    return f"{sys.executable} {path}"


def _run(cmd: str, reuse: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    with monkeypatch.context() as m:
        if not reuse:
            m.setattr(ex.ExecDocumentKind, "_reused", lambda self, state, sigs=None: None)
        return ex.verify_exec(
            f"{cmd} save {{dir}} {{value}}",
            f"{cmd} load {{dir}}",
            models=parse_models("ext4"),
            workloads=["first-save"],
            jobs=2,
        )


def _verdict(result: Any) -> list[Any]:
    out = []
    for r in result.results:
        found = sorted(
            (c.invariant, c.model, c.crash_point, c.state_digest, str(c.got))
            for c in r.counterexamples
        )
        out.append((sorted(r.state_ids), found))
    return out


def _same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **store: str) -> tuple[Any, Any]:
    cmd = _store(tmp_path, **store)
    every, every_facts = _run(cmd, False, monkeypatch)
    reused, facts = _run(cmd, True, monkeypatch)
    assert every_facts.loads_reused == 0
    assert reused.verdict == every.verdict
    assert not reused.incomplete
    assert _verdict(reused) == _verdict(every)
    assert facts.processes + facts.loads_reused == every_facts.processes
    return every, facts


def test_states_differing_where_the_load_never_looks_are_loaded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    every, facts = _same(tmp_path, monkeypatch)
    assert every.verdict == "clean"
    # junk.log is pending (empty, cut at a block, whole) in most ext4 states
    assert facts.loads_reused >= 10
    assert facts.as_dict()["loads_reused"] == facts.loads_reused


def test_a_path_the_load_only_stats_keeps_states_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the flag is never synced: ext4 states with the same doc.json differ in it, and the
    # load (which only stat()s it) fails without it: reusing across them would hide A2
    every, facts = _same(
        tmp_path,
        monkeypatch,
        **FLAG,
    )
    assert any(
        c.invariant == "A2" and c.model == "ext4" for r in every.results for c in r.counterexamples
    )
    assert facts.loads_reused > 0


def test_a_directory_the_load_lists_keeps_states_with_other_names_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the load fails when it sees the temporary doc.tmp (as a store checking for a torn
    # save might): only the listing tells states with and without it apart
    every, facts = _same(
        tmp_path,
        monkeypatch,
        check='if "doc.tmp" in os.listdir(d): sys.exit(3)',
    )
    assert any(r.counterexamples for r in every.results)
    assert facts.loads_reused > 0


def test_without_the_input_calls_traced_the_stat_only_path_would_be_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the check above can fail: traced for its opens only, the load's inputs omit the flag
    # and states that differ in it are wrongly answered by one another
    monkeypatch.setattr(ex, "LIGHT_SYSCALLS", ex.OPEN_SYSCALLS)
    cmd = _store(tmp_path, **FLAG)
    every, _ = _run(cmd, False, monkeypatch)
    try:
        reused, _ = _run(cmd, True, monkeypatch)
    except ex.BadTarget as exc:
        # the load of the empty directory looked at nothing it opened: its "null" answered
        # the load after the clean save too, which the preflight caught
        assert "after a clean save returned a different value" in str(exc)
        return
    assert _verdict(reused) != _verdict(every)


def test_a_load_that_overwrites_is_never_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # recovery on open (a write over the state) depends on the whole state: each state
    # holding doc.json (which this load rewrites) is loaded; the others load read-only
    answered: list[Any] = []
    real = ex.ExecDocumentKind._reused

    def reused(self: Any, state: Any, sigs: Any = None) -> Any:
        hit = real(self, state, sigs)
        if hit is not None:
            answered.append(state)
        return hit

    monkeypatch.setattr(ex.ExecDocumentKind, "_reused", reused)
    _every, facts = _same(
        tmp_path,
        monkeypatch,
        check='open(path, "a").write("\\n") if os.path.exists(path) else None',
    )
    assert facts.loads_reused == len(answered) > 0  # the states without doc.json
    assert not [s for s in answered if any(p.endswith("/doc.json") for p, _ in s.files)]


def test_a_load_that_only_creates_a_file_is_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # creating a file that was not there overwrites nothing (a cache, a lock file): the
    # outcome is still a function of what the load looked at
    _every, facts = _same(
        tmp_path,
        monkeypatch,
        check='open(os.path.join(d, "opened"), "w").close()',
    )
    assert facts.loads_reused > 0
