"""Reports a person can act on (issue 22): the value each save was given beside what load
returned, one card per crash state listing every invariant it breaks, zero-filled and
binary bytes summarised, and the target's thread tracebacks in the report with one line
on stderr. Through ``main([...])`` and the public ``file_view``."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

ROOT = Path(__file__).resolve().parents[2]
JSONSTORE = ROOT / "examples" / "stores" / "jsonstore.py"

THREAD_STORE = '''
import json, os, threading

class ThreadStore:
    """Saves atomically and durably; a background thread of its own fails each save."""
    def __init__(self, base_dir):
        self.path = os.path.join(base_dir, "doc.json")
    def load(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return None
    def save(self, value):
        def flush():
            raise RuntimeError("background flush failed")
        t = threading.Thread(target=flush, name="flusher")
        t.start()
        t.join()
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(os.path.dirname(self.path), os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
'''


def verify(
    capsys: pytest.CaptureFixture[str], out: Path, target: str, *args: str
) -> tuple[int, dict[str, Any], str, str]:
    code = main(["verify", target, "--kind", "document", "--out", str(out), *args])
    captured = capsys.readouterr()
    return code, json.loads((out / "report.json").read_text()), captured.out, captured.err


def violations(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for s in report["scenarios"] for v in s["violations"]]


def test_each_save_value_and_what_load_returned_stand_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _, _ = verify(
        capsys, tmp_path / "r", f"{JSONSTORE}:InPlaceJsonStore", "--workload", "resize"
    )
    assert code == 1
    listed = violations(report)
    assert listed and all("saves" in v and "load_value" in v for v in listed)
    v = listed[0]  # resize, shrunk to the one save that tears (resize:N)
    calls = [s["call"] for s in v["saves"]]
    assert calls == [f"save#{i}" for i in range(len(calls))] and calls
    assert re.match(r"\{'generation': \d+, 'pad': '", v["saves"][0]["value"])
    assert v["saves"][-1]["status"] == "in flight"  # an in-place rewrite, torn
    assert v["load_value"].startswith("raised JSONDecodeError")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "values given to save(), and what load returned" in md
    assert f"load(): `{v['load_value']}`" in md
    html = (tmp_path / "r" / "report.html").read_text()
    assert "Values saved, and what load returned" in html


def test_a_drawn_workload_s_values_stand_beside_load_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``random`` is drawn by hypothesis, never rebuilt by name: its values come from the
    trace the engine kept with each counterexample."""
    code, report, _, _ = verify(
        capsys, tmp_path / "r", f"{JSONSTORE}:InPlaceJsonStore", "--workload", "random"
    )
    assert code == 1
    listed = violations(report)
    assert listed and all(v["saves"] and "load_value" in v for v in listed)
    assert any(s["status"] == "in flight" for v in listed for s in v["saves"])


def test_one_card_per_crash_state_lists_every_invariant_it_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _, _ = verify(
        capsys,
        tmp_path / "r",
        f"{JSONSTORE}:NoFsyncJsonStore",
        "--workload",
        "first-save",
        "--model",
        "power-loss",
    )
    assert code == 1
    states = Counter(
        (s["name"], v["model"], v["fault"], v["crash_point"]["index"], v["state_digest"])
        for s in report["scenarios"]
        for v in s["violations"]
    )
    assert max(states.values()) > 1  # a state breaking A1 and A2: two findings, one state
    html = (tmp_path / "r" / "report.html").read_text()
    cards = re.findall(r'<section class="case"[^>]*data-broken="([^"]*)"', html)
    assert len(cards) == len(states)
    assert "A1 A2" in cards


def test_zero_filled_and_binary_bytes_are_summarised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, _, _ = verify(
        capsys,
        tmp_path / "r",
        f"{JSONSTORE}:NoFsyncJsonStore",
        "--workload",
        "resize",
        "--model",
        "power-loss",
    )
    html = (tmp_path / "r" / "report.html").read_text()
    assert " zero bytes\u27e9" in html
    assert "\u2400" * 16 not in html  # never a wall of NUL glyphs

    from crashpoint.scenarios.explain.search import file_view

    view = file_view(b'{"a": ' + bytes(4096))
    assert [s["text"] for s in view["segments"]] == ['{"a": ', "\u27e84090 zero bytes\u27e9"]
    binary = file_view(b"head" + bytes(range(128, 256)) + "tail: ünïcödé 中文中文中文".encode())
    text = "".join(s["text"] for s in binary["segments"])
    assert text == "head\u27e8128 binary bytes\u27e9tail: ünïcödé 中文中文中文"


def test_thread_tracebacks_go_to_the_report_and_one_line_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "threadstore.py"
    store.write_text(THREAD_STORE)
    code, report, out, err = verify(
        capsys, tmp_path / "r", f"{store}:ThreadStore", "--workload", "first-save"
    )
    assert code == 0, out + err
    assert "Traceback" not in err and "Exception in thread" not in err
    lines = [line for line in err.splitlines() if "threads raised" in line]
    assert len(lines) == 1 and "RuntimeError: background flush failed" in lines[0]
    assert report["thread_exception_count"] >= 1
    first = report["thread_exceptions"][0]
    assert first["thread"] == "flusher" and first["type"] == "RuntimeError"
    assert 'raise RuntimeError("background flush failed")' in first["traceback"]


def test_explain_keeps_thread_tracebacks_in_its_report_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "threadstore.py"
    store.write_text(THREAD_STORE)
    evidence = ROOT / "examples" / "field-reports" / "zero-length-main" / "document"
    out = tmp_path / "r"
    code = main(["explain", str(evidence), "--target", f"{store}:ThreadStore", "--out", str(out)])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    assert "Traceback" not in captured.err
    assert len([x for x in captured.err.splitlines() if "threads raised" in x]) == 1
    report = json.loads((out / "report.json").read_text())
    assert report["thread_exception_count"] >= 1
    assert report["thread_exceptions"][0]["type"] == "RuntimeError"
