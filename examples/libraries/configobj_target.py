"""configobj's ``ConfigObj.write`` as a document target (values: flat string maps).

The document is an INI file of ``KEY = value`` lines: save builds a
``ConfigObj`` for the path, replaces its keys with the value's and calls
``write()``; load reads ``ConfigObj(path)`` afresh as a dict ({} before the first
save: configobj treats a missing file as empty).

Usage::

    crashpoint verify examples/libraries/configobj_target.py:factory --model all --faults
"""

from __future__ import annotations

import os

from configobj import ConfigObj

__all__ = ["ConfigObjDocument", "factory"]


class ConfigObjDocument:
    """A flat string map in ``base_dir/settings.ini`` through ``ConfigObj``."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "settings.ini")

    def save(self, value: dict[str, str]) -> None:
        """``ConfigObj(path)``, its keys replaced by ``value``'s, then ``write()``."""
        config = ConfigObj(self.path, encoding="utf-8")
        config.clear()
        config.update(value)
        config.write()

    def load(self) -> dict[str, str]:
        """The file's keys and values ({} when it is missing or empty)."""
        return dict(ConfigObj(self.path, encoding="utf-8"))


def factory(base_dir: str) -> ConfigObjDocument:
    """``ConfigObj(base_dir/settings.ini)`` as a document target."""
    return ConfigObjDocument(base_dir)


factory.crashpoint_values = "flat-strings"  # type: ignore[attr-defined]
