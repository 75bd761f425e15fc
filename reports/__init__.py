"""Renderers of exploration results: JSON, Markdown and the terminal table."""

from ._json import (
    MAX_LISTED,
    build_report,
    build_verify_report,
    report_extra,
    violation_dict,
    write_json,
    zoo_dict,
)
from ._markdown import render_markdown, write_markdown
from ._terminal import print_summary, print_zoo

__all__ = [
    "MAX_LISTED",
    "build_report",
    "build_verify_report",
    "print_summary",
    "print_zoo",
    "render_markdown",
    "report_extra",
    "violation_dict",
    "write_json",
    "write_markdown",
    "zoo_dict",
]
