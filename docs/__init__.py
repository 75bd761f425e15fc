"""SPEC.md and FAULT-MODEL.md, installed with the package as ``crashpoint/docs/`` (the
documents messages cite as ``SPEC.md §N`` and ``FAULT-MODEL.md §N``)."""
