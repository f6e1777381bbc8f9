from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.durations import MAX_DURATION, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90m", timedelta(minutes=90)),
        ("12h", timedelta(hours=12)),
        ("3d", timedelta(days=3)),
        ("2w", timedelta(weeks=2)),
        ("1d12h", timedelta(days=1, hours=12)),
        (" 3D ", timedelta(days=3)),
        ("30s", timedelta(seconds=30)),
    ],
)
def test_parses_what_people_type(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "3", "d3", "3 days", "3.5d", "-1d", "0m", "3x", "400d", "0s", "99y", "9" * 25 + "w"])
def test_rejects_anything_else_naming_it_and_what_is_allowed(text: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_duration(text)
    message = str(error.value)
    assert message.startswith(f"`{text[:30]}")
    assert "use 90m, 12h, 3d or 2w, at most 366d" in message


@pytest.mark.parametrize(
    ("duration", "text"),
    [(timedelta(days=3), "3d"), (timedelta(minutes=90), "1h30m"), (timedelta(days=14), "2w"), (timedelta(days=10), "10d")],
)
def test_formats_the_shortest_exact_form(duration: timedelta, text: str) -> None:
    assert format_duration(duration) == text


@given(st.integers(min_value=1, max_value=int(MAX_DURATION.total_seconds())))
def test_format_then_parse_gives_back_the_same_duration(seconds: int) -> None:
    duration = timedelta(seconds=seconds)
    assert parse_duration(format_duration(duration)) == duration
