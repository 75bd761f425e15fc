"""pytester for the plugin tests only.

``pytest_plugins = ["pytester"]`` is refused by pytest in a conftest below the
rootdir ("Defining 'pytest_plugins' in a non-top-level conftest is no longer
supported"), so the plugin is loaded when this conftest is: pytester's options and
fixtures then exist for the tests of this folder.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")
