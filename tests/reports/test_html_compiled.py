"""report.html's template ships compiled (issue 11): ``reports/_report_html_j2.py`` is
jinja2's compilation of ``templates/report.html.j2``. It must be current, render pages
byte-identical to compiling the template, and be ignored (the template compiled as
before) once it is stale."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from crashpoint._cli import main
from crashpoint.reports import _html
from crashpoint.reports import _report_html_j2 as compiled

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "examples" / "stores" / "jsonstore.py"
EVIDENCE = ROOT / "examples" / "field-reports" / "zero-length-main" / "agent-state"

REGENERATE = "stale: regenerate it with `python -m crashpoint.reports._html`"


def compiling() -> jinja2.Template:
    """The template compiled from its source, as before the compiled module."""
    return _html._environment().get_template(_html.TEMPLATE)


def test_the_shipped_compilation_is_current() -> None:
    source = Path(_html._TEMPLATE_PATH).read_bytes()
    sha, version = _html._stamp(source)
    assert sha == compiled.TEMPLATE_SHA256, REGENERATE
    if version == compiled.JINJA2_VERSION:  # another jinja2 would compile other code
        shipped = Path(compiled.__file__).read_text(encoding="utf-8")
        assert shipped == _html.compiled_template_source(), REGENERATE
    _html._template.cache_clear()
    try:
        used = _html._template()
    finally:
        _html._template.cache_clear()
    # used while current (for this jinja2), else the template is compiled
    expect_compiled = version == compiled.JINJA2_VERSION
    assert used.filename is not None
    assert used.filename.endswith("_report_html_j2.py") is expect_compiled


@pytest.mark.parametrize(
    "argv",
    [
        ["explore", "--scenario", "first-save"],
        ["explore", "--target", "seed", "--model", "power-loss", "--scenario", "two-quick-saves"],
        ["verify", f"{STORE}:InPlaceJsonStore", "--workload", "resize"],
        ["explain", str(EVIDENCE), "--target", "seed", "--model", "power-loss", "--generated", "0"],
    ],
    ids=["explore-clean", "explore-violations", "verify-torn", "explain"],
)
def test_pages_are_byte_identical_to_compiling_the_template(
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shipped_code = main([*argv, "--out", str(tmp_path / "shipped")])
    monkeypatch.setattr(_html, "_template", compiling)
    compiled_code = main([*argv, "--out", str(tmp_path / "compiling")])
    capsys.readouterr()
    assert shipped_code == compiled_code
    shipped = (tmp_path / "shipped" / "report.html").read_bytes()
    assert shipped == (tmp_path / "compiling" / "report.html").read_bytes()
    assert b"<!DOCTYPE html>" in shipped


def test_a_stale_compilation_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "TEMPLATE_SHA256", "0" * 64)  # the template was edited
    _html._template.cache_clear()
    try:
        used = _html._template()
    finally:
        _html._template.cache_clear()
    assert used.filename is not None and used.filename.endswith("report.html.j2")
    report: dict[str, object] = {"tool": "crashpoint", "target": "reference"}
    report |= {
        "model": "process-crash",
        "version": "0",
        "scenarios": [],
        "totals": {"violations": 0},
    }
    assert used.render(
        report=report, explain=False, summary=[], cases=[], cases_total=0, command="explore"
    ) == compiling().render(
        report=report, explain=False, summary=[], cases=[], cases_total=0, command="explore"
    )
