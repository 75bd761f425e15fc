"""An INI document store on ``configparser``, for ``crashpoint verify --kind document``
(issue 22, acceptance 3). The saved value is ``{section: {option: value}}`` (strings), as
``configparser`` holds it; ``load`` returns it (``{}`` before the first save).

* :class:`IniStore` writes ``settings.ini`` in place (``open(path, "w")`` then
  ``ConfigParser.write``), the way most programs save their settings: a crash while it
  writes leaves a truncated or partial file. Expected findings: A1 under process-crash on
  first-save (a prefix of the document parses as a value nobody saved, or does not parse),
  A3 on resize (a torn rewrite loses the previous complete settings).
* :class:`AtomicIniStore` writes a temporary file, fsyncs it, renames it over
  ``settings.ini`` and fsyncs the directory: it passes every persistence model.

Usage (``examples/values.py:ini_values`` draws INI documents)::

    crashpoint verify examples/stores/inistore.py:IniStore \\
        --values examples/values.py:ini_values
"""

from __future__ import annotations

import configparser
import os

__all__ = ["AtomicIniStore", "IniStore"]


def _parser(value: dict[str, dict[str, str]]) -> configparser.ConfigParser:
    config = configparser.ConfigParser(interpolation=None)
    config.read_dict(value)
    return config


class IniStore:
    """``base_dir/settings.ini``, rewritten in place by every save."""

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.path = os.path.join(base_dir, "settings.ini")

    def load(self) -> dict[str, dict[str, str]]:
        """The sections and their options; ``{}`` when there is no file. Raises
        ``configparser.Error`` on a file it cannot parse."""
        config = configparser.ConfigParser(interpolation=None)
        config.read(self.path, encoding="utf-8")
        return {name: dict(config[name]) for name in config.sections()}

    def save(self, value: dict[str, dict[str, str]]) -> None:
        """Write ``value`` over ``settings.ini`` in place."""
        config = _parser(value)
        with open(self.path, "w", encoding="utf-8") as f:
            config.write(f)


class AtomicIniStore(IniStore):
    """:class:`IniStore` saving through a temporary file, an fsync and a rename."""

    def save(self, value: dict[str, dict[str, str]]) -> None:
        config = _parser(value)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            config.write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.base_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
