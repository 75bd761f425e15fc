"""What the installed distribution carries (issue 10): the runtime dependencies of its
public API, its licence, and the documents its messages cite (SPEC.md, FAULT-MODEL.md).

These read the *installed* metadata and files, so they check the wheel CI installs
(``pip install '.[test]'``) as well as an editable install."""

from __future__ import annotations

import pathlib
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


def test_every_subpackage_of_the_source_is_listed_for_installation() -> None:
    # a folder with an __init__.py missing from pyproject's `packages` is left out of
    # the wheel: the editable install imports it, the installed package does not
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = pathlib.Path(__file__).resolve().parent.parent
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    mapping = {
        "cli": "crashpoint",
        "core": "crashpoint.core",
        "faultfs": "crashpoint.faultfs",
        "scenarios": "crashpoint.scenarios",
        "reports": "crashpoint.reports",
    }
    missing = []
    for folder, name in mapping.items():
        for init in (root / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(root / folder).parts
            dotted = ".".join((name, *rel))
            if dotted not in listed:
                missing.append(dotted)
    assert not missing, missing
