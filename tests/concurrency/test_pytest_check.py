"""``crashpoint_verify.check(factory, actors=2)`` (issue 25), on the plug-in's Verifier."""

from __future__ import annotations

import pytest
from crashpoint.pytest_plugin import Verifier

from examples.concurrency import stores


def test_check_with_actors_passes_the_locked_store() -> None:
    results = Verifier().check(stores.LockedUpdateStore, actors=2, workload="concurrent-update")
    (res,) = results
    assert res.ok and res.crash_states > 0 and res.exploration.bound == 2


def test_check_with_actors_fails_the_shared_tmp_store_stating_the_bound() -> None:
    with pytest.raises(pytest.fail.Exception) as info:
        Verifier().check(stores.SharedTmpStore, actors=2, workload="concurrent-saves")
    text = str(info.value)
    assert "at most 2 preemptions" in text and "--schedule" in text
