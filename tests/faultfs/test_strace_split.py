"""``split_args``: the strace log's argument splitter jumps from one bracket, comma or
quote to the next; it must split exactly as a walk over every character does."""

from __future__ import annotations

from crashpoint.faultfs._strace import split_args
from hypothesis import given
from hypothesis import strategies as st


def walked(args: str) -> list[str]:
    """The reference: one character at a time."""
    out: list[str] = []
    depth, quoted, start = 0, False, 0
    for i, ch in enumerate(args):
        if quoted:
            quoted = ch != '"'
            continue
        if ch == '"':
            quoted = True
        elif ch in "[{<(":
            depth += 1
        elif ch in "]}>)":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
    tail = args[start:].strip()
    return [*out, tail] if tail else out


def test_a_write_with_its_data_and_a_decoded_descriptor() -> None:
    line = '3<\\x2f\\x74\\x2c>, "\\x7b\\x2c\\x22\\x28", 4'
    assert split_args(line) == ["3<\\x2f\\x74\\x2c>", '"\\x7b\\x2c\\x22\\x28"', "4"]
    assert split_args('AT_FDCWD, "\\x61", O_RDONLY|O_CLOEXEC') == [
        "AT_FDCWD",
        '"\\x61"',
        "O_RDONLY|O_CLOEXEC",
    ]
    assert split_args('5, [{iov_base="\\x61", iov_len=1}, {iov_base="", iov_len=0}], 2') == [
        "5",
        '[{iov_base="\\x61", iov_len=1}, {iov_base="", iov_len=0}]',
        "2",
    ]
    assert split_args('1, "\\x61, 2') == ["1", '"\\x61, 2']  # unterminated: quoted to the end


@given(st.text(alphabet='ab ,"[]{}<>()\\x0', max_size=60))
def test_the_jumping_split_agrees_with_the_walk(args: str) -> None:
    assert split_args(args) == walked(args)
