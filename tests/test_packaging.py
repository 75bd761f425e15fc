"""What the installed distribution carries (issue 10): the runtime dependencies of its
public API, its licence, and the documents its messages cite (SPEC.md, FAULT-MODEL.md).

These read the *installed* metadata and files, so they check the wheel CI installs
(``pip install '.[test]'``) as well as an editable install."""

from __future__ import annotations

import re
from importlib import metadata, resources

import pytest


def _requires() -> set[str]:
    reqs = metadata.requires("crashpoint") or []
    return {re.split(r"[<>=!~; \[]", r, maxsplit=1)[0].lower() for r in reqs if "extra ==" not in r}


def test_the_public_state_machine_api_has_its_dependency_at_runtime() -> None:
    from crashpoint.scenarios import storage_state_machine  # needs hypothesis

    assert callable(storage_state_machine)
    assert "hypothesis" in _requires()


def test_the_distribution_carries_its_licence() -> None:
    meta = metadata.metadata("crashpoint")
    assert meta.get("License-Expression") == "MIT" or meta.get("License") == "MIT"
    assert "LICENSE" in (meta.get_all("License-File") or [])
    files = metadata.files("crashpoint") or []
    licence = [f for f in files if f.name == "LICENSE"]
    assert licence and "MIT License" in licence[0].read_text()


@pytest.mark.parametrize("name", ["SPEC.md", "FAULT-MODEL.md"])
def test_the_documents_messages_cite_are_installed(name: str) -> None:
    doc = resources.files("crashpoint.docs") / name
    assert doc.is_file()
    assert "§8" in doc.read_text(encoding="utf-8") or name == "FAULT-MODEL.md"


def test_list_says_where_the_documents_are(capsys: pytest.CaptureFixture[str]) -> None:
    from crashpoint._cli import main

    assert main(["explore", "--list"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.split()[:1] == ["SPEC.md"])
    assert str(resources.files("crashpoint.docs") / "SPEC.md") in line
