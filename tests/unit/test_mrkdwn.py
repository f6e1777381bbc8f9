"""The one place text becomes mrkdwn: escaping by Slack's rules and notices rendered from typed parts, a date
token worded in the reader's language."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from bot.adapters.i18n import speaking
from bot.adapters.slack.mrkdwn import escape, render, utc_text
from bot.domain.languages import Language
from bot.services.text import Channel, Code, Moment, Notice, Quote, Strong, User, UserGroup, Words, plain, say
from tests.language_checks import catalog_misses, foreign_words

MOMENT = datetime(2026, 12, 3, 9, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("<!channel>", "&lt;!channel&gt;"),
        ("<@U123> & <#C123>", "&lt;@U123&gt; &amp; &lt;#C123&gt;"),
        ("<http://evil.example|click here>", "&lt;http://evil.example|click here&gt;"),
        ("&amp;", "&amp;amp;"),  # what was typed is shown as typed
        ("a\x00b\x07c\x1bd\x7fe\u0085f", "abcdef"),
        ("line one\n\tline two", "line one\n\tline two"),
    ],
)
def test_escape_follows_slacks_rules(typed: str, sent: str) -> None:
    assert escape(typed) == sent


def test_a_notice_renders_mentions_and_dates_from_typed_values_only() -> None:
    notice = say(
        ":+1: Approved by ",
        User("U0LEE"),
        " in ",
        Channel("C0FRONTIER"),
        " for ",
        UserGroup("S0PLATFORM"),
        " at ",
        Moment(MOMENT),
    )
    assert render(notice) == (
        ":+1: Approved by <@U0LEE> in <#C0FRONTIER> for <!subteam^S0PLATFORM> at "
        "<!date^1796288400^{date_short_pretty} at {time}|2026-12-03 09:00 UTC>"
    )


def test_a_date_token_and_its_fallback_are_in_the_readers_language() -> None:
    """Slack fills the day and the time of the token in each reader's zone; the words around them and the
    fallback (where the token cannot be shown) are the language's."""
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        token = render(say(Moment(MOMENT)))
        fallback = utc_text(MOMENT)
    assert missed == set()
    assert token == "<!date^1796288400^{date_short_pretty} {time}|2026/12/3 09:00 UTC>"
    assert fallback == "2026/12/3 09:00 UTC" and foreign_words(token) == []
    assert utc_text(MOMENT) == "2026-12-03 09:00 UTC"


def test_an_empty_quote_says_so_in_the_readers_language() -> None:
    assert render(say(Quote(""))) == "> (none)"
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        assert render(say(Quote(""))) == "> （无）"
    assert missed == set()


def test_words_strong_code_and_quotes_are_escaped() -> None:
    hostile = "<!here> *x* `y`"
    assert render(say(Words(hostile))) == "&lt;!here&gt; *x* `y`"
    assert render(say(Strong(hostile))) == "*&lt;!here&gt; *x* `y`*"
    assert render(say(Code(hostile))) == "`&lt;!here&gt; *x* 'y'`"
    assert render(say(Quote("<!everyone>\nsecond"))) == "> &lt;!everyone&gt;\n> second"


def test_an_id_that_is_not_a_slack_id_is_shown_as_text() -> None:
    assert render(say(User("U1> <!channel"))) == "@U1&gt; &lt;!channel"
    assert render(say(Channel("<!here>"))) == "#&lt;!here&gt;"


def test_notices_survive_the_outbox_json() -> None:
    notice = say("a ", User("U0LEE"), Strong("b"), Code("c"), Quote("d"), Channel("C1X"), UserGroup("S1X"), Moment(MOMENT))
    assert Notice.from_json(notice.to_json()) == notice


def test_plain_text_for_logs() -> None:
    assert plain(say("by ", User("U0LEE"), " at ", Moment(MOMENT))) == "by @U0LEE at 2026-12-03T09:00:00+00:00"
