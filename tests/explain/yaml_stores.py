"""YAML document stores for the explain tests (issue 22): block-style ``key: value``
lines, read back as YAML reads them (a line cut short is a plain scalar), so a prefix of
the file still loads. Both rewrite the file in place with no fsync:
:class:`OneWriteYamlStore` with one ``write(2)`` of the whole text (as ``OmegaConf.save``
does, through ``open(path, "w")``), :class:`ChunkedYamlStore` through a 4 KiB buffer."""

from __future__ import annotations

import json
import os
from typing import Any


def to_yaml(value: Any) -> str:
    items = value.items() if isinstance(value, dict) else [("value", value)]
    return "".join(f"{k}: {json.dumps(v)}\n" for k, v in items)


def from_yaml(text: str) -> Any:
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(": ")
        if not sep:
            continue
        try:
            out[key] = json.loads(rest)
        except ValueError:
            out[key] = rest  # a plain scalar, as YAML reads it
    return out


class OneWriteYamlStore:
    name = "config.yaml"

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, self.name)

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return from_yaml(f.read())
        except FileNotFoundError:
            return None

    def save(self, value: Any) -> None:
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(to_yaml(value))


class ChunkedYamlStore(OneWriteYamlStore):
    def save(self, value: Any) -> None:
        data = to_yaml(value).encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for i in range(0, len(data), 4096):
                os.write(fd, data[i : i + 4096])
        finally:
            os.close(fd)
