"""Adapters that put real persistence libraries under ``crashpoint verify --kind document``.

Each module exposes ``factory(base_dir)`` returning an object with ``save(value)`` and
``load()`` that calls the library the way its documentation shows, and nothing more.
The versions are pinned in ``examples/requirements.txt``; the findings are in
``docs/field-results.md`` and pinned by ``tests/examples``.
"""
