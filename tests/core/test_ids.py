"""Session ids are data, never paths (SPEC §4; seed §13.5)."""

from __future__ import annotations

import posixpath

import pytest
from crashpoint.core import ErrorCode, Retryability, StateError, redact, safe_session_file_name
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SAFE_ID_ALPHABET, any_session_ids, session_ids


def _rejected(session_id: str) -> StateError:
    with pytest.raises(StateError) as info:
        safe_session_file_name(session_id)
    exc = info.value
    assert exc.code == ErrorCode.INVALID_SESSION_ID
    assert exc.layer == "storage"
    assert exc.retryability is Retryability.NEVER
    return exc


# --- seed §13.5, one test per bullet -----------------------------------------------------


def test_13_5_empty_id_is_rejected() -> None:
    _rejected("")


def test_13_5_dot_dot_slash_etc_is_rejected() -> None:
    _rejected("../etc")


def test_13_5_slash_is_rejected() -> None:
    _rejected("a/b")


def test_13_5_backslash_is_rejected() -> None:
    _rejected("a\\b")


def test_13_5_nul_is_rejected() -> None:
    _rejected("a\0b")


def test_13_5_chinese_id_is_cleaned_to_underscores() -> None:
    assert safe_session_file_name("会话-001") == "__-001"


@pytest.mark.parametrize(
    "session_id", ["abc", "A-Z_0.9", "sess-1", "x", "-", "_", ".hidden", "a.b"]
)
def test_13_5_legal_ids_are_kept(session_id: str) -> None:
    assert safe_session_file_name(session_id) == session_id


# --- further cases of SPEC §4 -----------------------------------------------------------


def test_space_becomes_underscore() -> None:
    assert safe_session_file_name("sess 1") == "sess_1"


def test_seed_example_with_four_han_characters() -> None:
    assert safe_session_file_name("烘焙会话-001") == "____-001"


@pytest.mark.parametrize("session_id", [".", ".."])
def test_dot_and_dot_dot_are_rejected(session_id: str) -> None:
    _rejected(session_id)


@pytest.mark.parametrize("session_id", ["a..b", "..", "x/", "/abs", "\\", "a\0"])
def test_forbidden_substrings_anywhere(session_id: str) -> None:
    _rejected(session_id)


def test_control_characters_become_underscores() -> None:
    assert safe_session_file_name("a\nb\tc") == "a_b_c"


def test_astral_character_maps_to_two_underscores_like_utf16() -> None:
    assert safe_session_file_name("a😀b") == "a__b"


def test_non_string_is_rejected() -> None:
    _rejected(42)  # type: ignore[arg-type]


def test_error_message_shows_the_id_redacted() -> None:
    secret = "user-12345678-secret/part"
    exc = _rejected(secret)
    assert "user-123..." in exc.message
    assert "secret" not in exc.message
    assert "secret" not in str(exc)


def test_redact_short_ids_unchanged() -> None:
    assert redact("") == ""
    assert redact("abc") == "abc"
    assert redact("12345678") == "12345678"


def test_redact_long_ids_cut_to_eight_characters() -> None:
    assert redact("123456789") == "12345678..."
    assert redact("session-00042") == "session-..."
    assert redact("会话会话会话会话会话") == "会话会话会话会话..."


@settings(max_examples=200)
@given(any_session_ids())
def test_result_is_always_a_single_safe_name(session_id: str) -> None:
    try:
        name = safe_session_file_name(session_id)
    except StateError as exc:
        assert exc.code == ErrorCode.INVALID_SESSION_ID
        assert (
            session_id == ""
            or any(bad in session_id for bad in ("..", "/", "\\", "\0"))
            or session_id == "."
        )
        return
    assert name
    assert set(name) <= set(SAFE_ID_ALPHABET)
    assert name not in (".", "..")
    assert posixpath.basename(posixpath.join("/base", name + ".json")) == name + ".json"
    assert posixpath.normpath(posixpath.join("/base", name)) == "/base/" + name


@settings(max_examples=100)
@given(session_ids())
def test_safe_ids_map_to_themselves(session_id: str) -> None:
    assert safe_session_file_name(session_id) == session_id


@settings(max_examples=100)
@given(st.text(max_size=20))
def test_redact_is_a_prefix_of_at_most_eleven_characters(session_id: str) -> None:
    shown = redact(session_id)
    if len(session_id) <= 8:
        assert shown == session_id
    else:
        assert shown == session_id[:8] + "..."
