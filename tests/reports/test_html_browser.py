"""report.html in a real browser (issue 12, acceptance 5): headless Chromium renders the
page of a known violation; its scripts ran (copy buttons wired, the status line filled),
it fetched nothing, and the counterexample is on the page and in the screenshot.

Marker ``browser`` (excluded by default; ``tox -e browser``). Skipped with the reason
when Debian's ``chromium`` is not installed (``apt-get install chromium``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from crashpoint._cli import main

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("CRASHPOINT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"chromium not installed at {CHROMIUM} (apt-get install chromium)")
    code = main(
        [
            "explore",
            "--target",
            "seed",
            "--model",
            "power-loss",
            "--scenario",
            "two-quick-saves",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    capsys.readouterr()
    assert code == 1
    return tmp_path / "r" / "report.html"


def test_chromium_renders_the_counterexample_with_scripts_and_no_fetch(
    page: Path, tmp_path: Path
) -> None:
    dom = chromium(tmp_path / "profile-dom", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-scripts="yes"' in html  # the inline script ran
    assert "scripts ran;" in html and 'data-fetched="0"' in html  # nothing fetched
    assert 'data-invariant="R1"' in html and "two-quick-saves under power-loss" in html
    shot = tmp_path / "shot.png"
    done = chromium(
        tmp_path / "profile-shot", "--window-size=1400,1800", f"--screenshot={shot}", page.as_uri()
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000  # a rendered page, not blank
