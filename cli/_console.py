"""A rich console made on first use, and plain lines without rich (issue 11).

``crashpoint explore`` prints a table and a few lines. Importing rich and rendering the
table cost about a tenth of the default run. Where rich would print plain text anyway
— the stream is not a terminal by rich's own rule (``TTY_COMPATIBLE``, ``FORCE_COLOR``,
``isatty``), so it renders no style — :class:`LazyConsole` writes the same bytes itself,
and hands everything else (a terminal, markup, emoji codes, control characters, any
keyword it does not know) to a rich ``Console`` made with the same settings.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["LazyConsole", "plain_text"]

_EMOJI = re.compile(r":\S*?:")
"""What rich's emoji replacement could touch (its ``:name:`` codes): such text goes to rich."""

_PLAIN_KEYWORDS = frozenset({"markup", "highlight", "style"})
"""``print`` keywords that change nothing in plain output (no style is rendered)."""


def plain_text(text: str, *, markup: bool = True) -> bool:
    """Whether rich prints ``text`` (soft-wrapped, no terminal) as it is: no markup tag
    (with ``markup``), no emoji code, no control character (rich strips or expands them)."""
    if markup and "[" in text:
        return False
    if ":" in text and _EMOJI.search(text):
        return False
    return all(line.isprintable() for line in text.split("\n"))


class LazyConsole:
    """A ``rich.console.Console(stderr=stderr, highlight=False, soft_wrap=True,
    width=width)`` made on first use (:attr:`rich`; any other attribute is the rich
    console's), whose :meth:`print` of plain text needs no rich at all."""

    def __init__(self, *, stderr: bool = False, width: int | None = None) -> None:
        self.stderr = stderr
        self.width = width
        self._rich: Console | None = None

    @property
    def rich(self) -> Console:
        """The rich console, made now if it was not yet."""
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(
                stderr=self.stderr, highlight=False, soft_wrap=True, width=self.width
            )
        return self._rich

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)

    @property
    def file(self) -> IO[str]:
        """The stream written to, looked up at each use as rich does."""
        if self._rich is not None:
            return self._rich.file
        file = sys.stderr if self.stderr else sys.stdout
        return getattr(file, "rich_proxied_file", file)  # under a rich Live/Progress

    def plain(self) -> bool:
        """Whether rich would render no style here: not a terminal by rich's rule
        (``TTY_COMPATIBLE=0``/``1``, then ``FORCE_COLOR``, then ``isatty()``), on a
        system where rich needs no Windows console API, outside Jupyter."""
        if sys.platform == "win32" or "IPython" in sys.modules:
            return False
        if self._rich is not None:
            return not self._rich.is_terminal
        tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
        if tty_compatible in ("0", "1"):
            return tty_compatible == "0"
        force_color = os.environ.get("FORCE_COLOR")
        if force_color is not None:
            return force_color == ""
        isatty = getattr(self.file, "isatty", None)
        try:
            return isatty is not None and not isatty()
        except ValueError:  # a closed stream: rich says "not a terminal" too
            return True

    def plain_width(self) -> int | None:
        """The width rich would lay tables out in, when output is plain and it is fixed
        (``width``) and the stream's encoding is UTF (else rich draws ASCII boxes)."""
        encoding = (getattr(self.file, "encoding", None) or "utf-8").lower()
        if self.width is None or not encoding.startswith("utf") or not self.plain():
            return None
        return self.width

    def write(self, text: str) -> None:
        """Write plain ``text`` and flush, as rich does after each print."""
        file = self.file
        file.write(text)
        file.flush()

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """``rich.console.Console.print``: one plain string is written as it is."""
        if (
            len(objects) == 1
            and isinstance(objects[0], str)
            and kwargs.keys() <= _PLAIN_KEYWORDS
            and plain_text(objects[0], markup=kwargs.get("markup", True) is not False)
            and self.plain()
        ):
            self.write(objects[0] + "\n")
            return
        self.rich.print(*objects, **kwargs)
