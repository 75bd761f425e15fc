"""The CLI's console writes plain output itself (issue 11): the same bytes rich writes
without a terminal, for any report and any line, and rich only where it would change
something (markup, emoji codes, control characters, a table too wide)."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest
from crashpoint._console import LazyConsole
from crashpoint.reports import print_summary
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

WIDTH = 160

# names and texts that reach the terminal: plain ASCII mostly, and what rich treats
# specially — markup brackets, emoji codes, tabs and control characters, wide letters
TRICKY = st.sampled_from(["[", "]", "[bold]", ":", ":smile:", "\t", "\r", "é", "漢", "…", " "])
TEXT = st.lists(
    st.one_of(st.text(alphabet="abcdefghij-_./0123456789 ", max_size=12), TRICKY), max_size=6
).map("".join)
SAFE = st.text(alphabet="abcdefghij-_./0123456789 (),'=", max_size=40)
COUNT = st.integers(min_value=0, max_value=10**9)


@st.composite
def reports(draw: st.DrawFn) -> dict[str, Any]:
    text = draw(st.sampled_from([SAFE, TEXT]))  # all plain, or some of what rich changes
    name = st.one_of(st.from_regex(r"[a-z][a-z0-9-]{0,40}", fullmatch=True), text)
    scenarios = []
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        violations = draw(st.integers(min_value=0, max_value=3000))
        scenarios.append(
            {
                "name": draw(name),
                "model": draw(st.sampled_from(["process-crash", "power-loss", "x" * 60])),
                "operations": draw(COUNT),
                "crash_points": draw(COUNT),
                "distinct_states": draw(COUNT),
                "exhaustive": draw(st.booleans()),
                "cut": draw(COUNT),
                "faults": draw(st.sampled_from([0, 0, 12, 1480])),
                "violation_count": violations,
                "killed_by": draw(st.lists(st.sampled_from(["R1", "E2", "P1"]), max_size=3))
                if violations
                else [],
                "invariants": draw(st.lists(st.sampled_from(["R1", "V1", "P1", "I1"]))),
            }
        )
    totals = {"crash_points": draw(COUNT), "distinct_states": draw(COUNT)}
    totals |= {"violations": draw(COUNT), "cut": draw(st.sampled_from([0, 0, 7]))}
    counterexample = None
    if draw(st.booleans()):
        counterexample = {
            "invariant": "R1",
            "title": draw(text),
            "severity": "data-loss",
            "scenario": draw(text),
            "model": "power-loss",
            "fault": draw(st.sampled_from([None, "3:ENOSPC"])),
            "crash_point": {
                "index": draw(COUNT),
                "where": draw(st.one_of(st.none(), TEXT)),
                "last_done": draw(text),
                "operation": draw(text),
            },
            "why": draw(text),
            "crash_state": draw(st.dictionaries(text, text, max_size=3)),
            "session_id": draw(text),
            "load_returned": draw(text),
            "expected": draw(text),
            "replay": draw(text),
        }
    return {
        "target": draw(name),
        "model": draw(st.sampled_from(["process-crash", "all"])),
        "scenarios": scenarios,
        "totals": totals,
        "counterexample": counterexample,
    }


def rich_output(report: dict[str, Any], counterexample: bool) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, highlight=False, soft_wrap=True, width=WIDTH)
    print_summary(report, console, counterexample=counterexample)
    return buffer.getvalue()


def lazy_output(report: dict[str, Any], counterexample: bool) -> tuple[str, bool]:
    buffer = io.StringIO()
    stdout, sys.stdout = sys.stdout, buffer
    try:
        console = LazyConsole(width=WIDTH)
        print_summary(report, console, counterexample=counterexample)
    finally:
        sys.stdout = stdout
    return buffer.getvalue(), console._rich is not None


@settings(max_examples=150)
@given(report=reports(), counterexample=st.booleans())
def test_the_summary_is_what_rich_prints(report: dict[str, Any], counterexample: bool) -> None:
    assert lazy_output(report, counterexample)[0] == rich_output(report, counterexample)


@settings(max_examples=150)
@given(text=TEXT, markup=st.sampled_from([None, True, False]))
def test_a_line_is_what_rich_prints(text: str, markup: bool | None) -> None:
    expected, got = io.StringIO(), io.StringIO()
    Console(file=expected, highlight=False, soft_wrap=True).print(text, markup=markup)
    stderr, sys.stderr = sys.stderr, got
    try:
        LazyConsole(stderr=True).print(text, markup=markup)
    finally:
        sys.stderr = stderr
    assert got.getvalue() == expected.getvalue()


def test_plain_output_needs_no_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    report = {
        "target": "reference",
        "model": "process-crash",
        "scenarios": [
            {
                "name": "first-save",
                "model": "process-crash",
                "operations": 7,
                "crash_points": 8,
                "distinct_states": 5,
                "exhaustive": True,
                "cut": 0,
                "violation_count": 1,
                "killed_by": ["R1"],
                "invariants": ["R1", "V1"],
            }
        ],
        "totals": {"crash_points": 8, "distinct_states": 5, "violations": 1, "cut": 0},
    }
    text, used_rich = lazy_output(report, True)
    assert not used_rich
    assert text == rich_output(report, True)
    assert "│ first-save │ process-crash │          7 │" in text
    assert text.splitlines()[-1] == "invariants checked: R1 V1"


def test_a_terminal_gets_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich's rule: a terminal, so styles are drawn
    assert not LazyConsole().plain()
    monkeypatch.setenv("TTY_COMPATIBLE", "0")  # ... unless this says it is not one
    assert LazyConsole().plain()
