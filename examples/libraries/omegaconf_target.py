"""OmegaConf as a document target: ``OmegaConf.save(OmegaConf.create(value), path)``
and ``OmegaConf.to_container(OmegaConf.load(path))``.

``OmegaConf.save`` (omegaconf 2.3, ``omegaconf/omegaconf.py``) does
``with io.open(os.path.abspath(f), "w", encoding="utf-8") as file: file.write(data)``:
the YAML file is truncated and rewritten in place, never fsynced. ``OmegaConf.load``
of an empty file gives an empty ``DictConfig``. Values: flat string maps (YAML keys
and values that round-trip as strings), named by the factory's ``crashpoint_values``.

Usage::

    crashpoint verify examples/libraries/omegaconf_target.py:factory --model all --faults
"""

from __future__ import annotations

import os
from typing import Any

from omegaconf import OmegaConf

__all__ = ["OmegaConfDocument", "factory"]


class OmegaConfDocument:
    """One config in ``base_dir/config.yaml``."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "config.yaml")

    def save(self, value: Any) -> None:
        """``OmegaConf.save(OmegaConf.create(value), path)``."""
        OmegaConf.save(OmegaConf.create(value), self.path)

    def load(self) -> Any:
        """The saved config as plain containers; before the first save the empty config
        (``OmegaConf.create()``) an application starts from, which is also what
        ``OmegaConf.load`` makes of an empty file."""
        if not os.path.exists(self.path):
            return OmegaConf.to_container(OmegaConf.create())
        return OmegaConf.to_container(OmegaConf.load(self.path))


def factory(base_dir: str) -> OmegaConfDocument:
    """``base_dir/config.yaml`` through OmegaConf."""
    return OmegaConfDocument(base_dir)


factory.crashpoint_values = "flat-strings"  # type: ignore[attr-defined]
