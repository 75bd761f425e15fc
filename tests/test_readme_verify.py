"""The README's verify section tells a user what their code sees (issue 22): what
``save()`` receives, the value options, where the base directory is and what is never
intercepted; the names it gives are the code's own (so the text cannot drift)."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def verify_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Verify your own store")
    return text[start : text.index("\n## ", start + 1)]


def test_the_verify_section_says_what_the_target_sees() -> None:
    from crashpoint.scenarios.kinds.document.kind import DOC_BASE, VALUE_STRATEGIES

    section = verify_section()
    assert "any JSON value" in section and "not only dicts" in section
    for name in VALUE_STRATEGIES:  # every value option, by its --values name
        assert f"--values {name}" in section, name
    assert f"`{DOC_BASE}`" in section  # the base directory as the target is given it
    assert "Never intercepted" in section
