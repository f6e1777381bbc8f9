"""The one place text becomes Slack mrkdwn: escaping by Slack's rules, and notices rendered.

Slack treats ``&``, ``<`` and ``>`` as control characters in text objects and in a message's
``text`` ("Formatting text for app surfaces", escaping): any other use must be sent as ``&amp;``,
``&lt;``, ``&gt;``. So every piece of text is escaped here, control characters are removed, and the
only ``<...>`` sequences that reach Slack are the ones this module makes from typed values.

A moment becomes Slack's date token, which each reader's Slack shows in their own time zone; its format
(``{date_short_pretty} at {time}``) and its fallback text (shown where the token cannot be) are in the
current language (``bot.adapters.i18n``), chosen when the message is rendered.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import assert_never

from babel.dates import format_datetime

from bot.adapters.i18n import N_, current, gettext, locale, tr
from bot.domain.commands import clean_text
from bot.domain.languages import Language
from bot.services.text import Channel, Code, Moment, Notice, Part, Quote, Strong, User, UserGroup, Words

# What a Slack id looks like; anything else is shown as text rather than trusted inside <...>.
_SLACK_ID = re.compile(r"[A-Z0-9]{2,30}")
# Translators: the format of Slack's date token: keep {date_short_pretty} (the day, as each reader's Slack
# writes it: "today", "Dec 3") and {time} exactly as they are (Slack fills them, not the bot).
_DATE_TOKEN = N_("{date_short_pretty} at {time}")
# How the fallback of a date token writes a UTC moment: English as the bot always wrote it (ISO-like),
# other languages in their locale's short date and time.
_UTC_PATTERNS = {Language.EN: "yyyy-MM-dd HH:mm"}


def escape(text: str) -> str:
    """Text that Slack shows as typed: control characters removed, ``& < >`` as entities."""
    return clean_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(notice: Notice) -> str:
    """The notice as mrkdwn."""
    return "".join(_part(part) for part in notice.parts)


def _part(part: Part) -> str:
    if isinstance(part, Words):
        return escape(part.text)
    if isinstance(part, Strong):
        return f"*{escape(part.text)}*" if part.text.strip() else escape(part.text)
    if isinstance(part, Code):
        return "`" + escape(part.text).replace("`", "'") + "`"
    if isinstance(part, Quote):
        lines = escape(part.text).splitlines() or [escape(tr("(none)"))]
        return "\n".join("> " + line for line in lines)
    if isinstance(part, User):
        return _reference("@", part.user_id)
    if isinstance(part, Channel):
        return _reference("#", part.channel_id)
    if isinstance(part, UserGroup):
        return f"<!subteam^{part.usergroup_id}>" if _SLACK_ID.fullmatch(part.usergroup_id) else escape(part.usergroup_id)
    if isinstance(part, Moment):
        return date_token(part.at)
    assert_never(part)


def date_token(moment: datetime) -> str:
    """Slack's date token for ``moment`` (each reader sees it in their own zone), in the current language."""
    token = gettext(_DATE_TOKEN).replace("|", " ").replace(">", " ")  # a translation cannot end the token
    return f"<!date^{int(moment.timestamp())}^{token}|{escape(utc_text(moment))}>"


def utc_text(moment: datetime) -> str:
    """``moment`` in UTC as plain text in the current language: ``2026-12-03 09:00 UTC``, ``2026/12/3 09:00 UTC``."""
    utc = moment.astimezone(timezone.utc)
    pattern = _UTC_PATTERNS.get(current(), "short")
    return format_datetime(utc, pattern, tzinfo=timezone.utc, locale=locale()) + " UTC"


def _reference(sigil: str, slack_id: str) -> str:
    return f"<{sigil}{slack_id}>" if _SLACK_ID.fullmatch(slack_id) else escape(sigil + slack_id)
