"""report.html (issue 12): rendered with jinja2 for a known violation, one self-contained
page: summary per scenario and model, a timeline per counterexample (lanes per file, the
crash point marked, operations durable or volatile), the crash state in text and hex
with torn regions marked, load result against expected, the replay command with a copy
button; nothing fetched. jinja2 stays unimported on the plain CLI paths."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from crashpoint._cli import main

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "examples" / "stores" / "jsonstore.py"


def no_network(html: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html and "@import" not in html
    assert "default-src 'none'" in html  # the page may not fetch, even if it tried


def test_explore_html_shows_the_seed_losing_a_save_under_power_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
            str(tmp_path),
        ]
    )
    capsys.readouterr()
    assert code == 1
    html = (tmp_path / "report.html").read_text()
    no_network(html)
    assert 'id="summary"' in html and "two-quick-saves" in html
    first = html.index('class="case"')
    case = html[first : html.index("</section>", first)]
    assert 'data-invariant="R1"' in case
    # the timeline: lanes per file, the crash point marked, statuses under the model
    assert "s1.json.tmp" in case and "s1.json" in case
    assert 'class="crash"' in case
    assert "op volatile" in case  # power loss: the un-fsynced write is still volatile
    assert "op not-run" in case
    # the crash state file by file, load result against expected, replay and copy
    assert "<code>s1.json</code><span>absent</span>" in case  # the rename did not persist
    # another counterexample: main renamed into place, its data lost (empty)
    assert "<code>s1.json</code><span>empty" in html
    assert 'class="got"' in case and "expected" in case
    assert "crashpoint explore --scenario two-quick-saves --target seed --model power-loss" in case
    assert 'class="copy"' in case
    assert "<script>" in html and "navigator.clipboard" in html


def test_verify_html_marks_the_torn_region_in_text_and_hex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["verify", f"{STORE}:InPlaceJsonStore", "--workload", "resize", "--out", str(tmp_path)]
    )
    capsys.readouterr()
    assert code == 1
    html = (tmp_path / "report.html").read_text()
    no_network(html)
    assert 'data-invariant="A1"' in html
    assert '<mark class="torn"' in html  # a partial write's bytes, marked
    assert 'class="hex"' in html and "00000000  7b" in html  # hex view of '{'
    assert "op durable" in html and 'class="crash"' in html


def test_explain_html_has_the_match_and_its_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = ROOT / "examples" / "field-reports" / "zero-length-main" / "agent-state"
    code = main(
        [
            "explain",
            str(ev),
            "--target",
            "seed",
            "--model",
            "power-loss",
            "--generated",
            "0",
            "--out",
            str(tmp_path),
        ]
    )
    capsys.readouterr()
    assert code == 1
    html = (tmp_path / "report.html").read_text()
    no_network(html)
    assert "What the target makes of it" in html and "state_corrupt" in html
    assert 'data-invariant="R1"' in html and "missing fsync before the rename" in html
    assert "SPEC.md §8" in html


def test_a_clean_run_renders_without_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explore", "--scenario", "first-save", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    html = (tmp_path / "report.html").read_text()
    assert "Counterexamples (0)" in html and "0 violation(s)" in html


def test_jinja2_is_not_imported_by_the_plain_cli() -> None:
    code = (
        "import sys\n"
        "from crashpoint._cli import main\n"
        "main(['explore', '--list'])\n"
        "assert 'jinja2' not in sys.modules, 'jinja2 imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


SEED_STORAGE = '''
from crashpoint.core import FileStateStorage
from crashpoint.faultfs import OsFileSystem


def seed(base_dir):
    """The seed's design: no fsync at all."""
    return FileStateStorage(OsFileSystem(), base_dir, sync="none", ended_marker="legacy")
'''


SEED_ARGS = ["{seed}:seed", "--kind", "state-storage", "--workload", "two-quick-saves"]


@pytest.mark.parametrize(
    "args",
    [
        # a generated workload: never rebuilt by name, it had no detail before
        ["{store}:InPlaceJsonStore", "--workload", "random"],
        # a state storage: only document targets had details before
        [*SEED_ARGS, "--model", "ext4"],
    ],
    ids=["random-workload", "state-storage"],
)
def test_every_counterexample_s_detail_comes_from_the_trace_the_engine_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    seed = tmp_path / "seed_storage.py"
    seed.write_text(SEED_STORAGE, encoding="utf-8")
    argv = [a.format(store=STORE, seed=seed) for a in args]
    code = main(["verify", *argv, "--out", str(tmp_path / "out")])
    capsys.readouterr()
    assert code == 1
    html = (tmp_path / "out" / "report.html").read_text()
    first = html.index('class="case"')
    case = html[first : html.index("</section>", first)]
    assert 'class="crash"' in case and "op not-run" in case  # its timeline
