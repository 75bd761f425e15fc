"""StateError, ErrorCode and Retryability (SPEC §5)."""

from __future__ import annotations

import copy
import errno
import pickle

import pytest
from crashpoint.core import ErrorCode, Retryability, StateError


def test_state_error_pickles_with_all_attributes() -> None:
    cause = OSError(errno.ENOSPC, "No space left on device", "/base/s.json.tmp")
    exc = StateError(
        ErrorCode.STATE_SAVE_FAILED,
        "save failed",
        layer="storage",
        retryability=Retryability.CONDITIONAL,
        cause=cause,
    )
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(exc, protocol=protocol))
        assert type(back) is StateError
        assert back.code == "state_save_failed"
        assert back.message == "save failed"
        assert back.layer == "storage"
        assert back.retryability is Retryability.CONDITIONAL
        assert isinstance(back.cause, OSError)
        assert back.cause.errno == errno.ENOSPC
        assert back.cause.filename == "/base/s.json.tmp"
        assert back.__cause__ is back.cause
        assert str(back) == str(exc)


def test_state_error_pickles_without_cause_and_copies() -> None:
    exc = StateError("session_not_found", "Session not found: abc", layer="storage")
    back = pickle.loads(pickle.dumps(exc))
    assert (back.code, back.message, back.layer, back.retryability, back.cause) == (
        "session_not_found",
        "Session not found: abc",
        "storage",
        Retryability.NEVER,
        None,
    )
    assert back.__cause__ is None
    assert copy.copy(exc).code == "session_not_found"


class SubError(StateError):
    """A subclass keeps its type through pickling (the rebuild uses ``type(self)``)."""


def test_subclass_survives_pickle() -> None:
    back = pickle.loads(pickle.dumps(SubError("x_code", "msg", layer="codec")))
    assert type(back) is SubError
    assert (back.code, back.layer) == ("x_code", "codec")


def test_str_is_code_colon_message() -> None:
    assert str(StateError(ErrorCode.STATE_CORRUPT, "main and bak corrupt")) == (
        "state_corrupt: main and bak corrupt"
    )


def test_code_is_a_plain_str_even_from_an_enum_member() -> None:
    exc = StateError(ErrorCode.HISTORY_UNPAIRED, "unpaired")
    assert type(exc.code) is str
    assert exc.code == "history_unpaired"
    assert exc.code == ErrorCode.HISTORY_UNPAIRED


def test_defaults_are_storage_and_never() -> None:
    exc = StateError("invalid_session_id", "bad")
    assert exc.layer == "storage"
    assert exc.retryability is Retryability.NEVER
    assert exc.cause is None
    assert exc.__cause__ is None


def test_cause_sets_dunder_cause() -> None:
    cause = ValueError("boom")
    exc = StateError("state_corrupt", "bad", cause=cause)
    assert exc.__cause__ is cause
    with pytest.raises(StateError) as info:
        raise exc
    assert info.value.__cause__ is cause


def test_retryability_accepts_its_string_value() -> None:
    exc = StateError("state_save_failed", "x", retryability="conditional")  # type: ignore[arg-type]
    assert exc.retryability is Retryability.CONDITIONAL


def test_retryability_values() -> None:
    assert [r.value for r in Retryability] == ["never", "conditional", "always"]
    assert Retryability.NEVER == "never"
    assert str(Retryability.ALWAYS) == "always"


def test_repr_names_code_layer_and_retryability() -> None:
    text = repr(StateError("json_invalid", "not JSON", layer="codec"))
    assert text == (
        "StateError(code='json_invalid', message='not JSON', layer='codec', retryability='never')"
    )


def test_error_codes_are_unique_snake_case_and_str() -> None:
    values = [code.value for code in ErrorCode]
    assert len(values) == len(set(values))
    for code in ErrorCode:
        assert code.value == code.name.lower()
        assert isinstance(code, str)
        assert str(code) == code.value
        assert f"{code}" == code.value


def test_spec_table_codes_exist() -> None:
    spec_codes = {
        "session_not_found",
        "state_corrupt",
        "state_save_failed",
        "invalid_session_id",
        "schema_version_unsupported",
        "schema_version_invalid",
        "message_empty_contents",
        "history_unpaired",
        "json_invalid",
        "pending_plan_review_type",
    }
    assert spec_codes <= {code.value for code in ErrorCode}
    field_codes = [c for c in ErrorCode if c.value.endswith("_type")]
    assert len(field_codes) > 20


def test_is_an_exception_not_a_base_exception_only() -> None:
    assert issubclass(StateError, Exception)
