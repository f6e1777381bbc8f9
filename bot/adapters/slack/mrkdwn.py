"""The one place text becomes Slack mrkdwn: escaping by Slack's rules, and notices rendered.

Slack treats ``&``, ``<`` and ``>`` as control characters in text objects and in a message's
``text`` ("Formatting text for app surfaces", escaping): any other use must be sent as ``&amp;``,
``&lt;``, ``&gt;``. So every piece of text is escaped here, control characters are removed, and the
only ``<...>`` sequences that reach Slack are the ones this module makes from typed values.
"""

from __future__ import annotations

import re
from datetime import timezone
from typing import assert_never

from bot.domain.commands import clean_text
from bot.services.text import Channel, Code, Moment, Notice, Part, Quote, Strong, User, UserGroup, Words

# What a Slack id looks like; anything else is shown as text rather than trusted inside <...>.
_SLACK_ID = re.compile(r"[A-Z0-9]{2,30}")


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
        lines = escape(part.text).splitlines() or ["(none)"]
        return "\n".join("> " + line for line in lines)
    if isinstance(part, User):
        return _reference("@", part.user_id)
    if isinstance(part, Channel):
        return _reference("#", part.channel_id)
    if isinstance(part, UserGroup):
        return f"<!subteam^{part.usergroup_id}>" if _SLACK_ID.fullmatch(part.usergroup_id) else escape(part.usergroup_id)
    if isinstance(part, Moment):
        utc = part.at.astimezone(timezone.utc)
        fallback = utc.strftime("%Y-%m-%d %H:%M UTC")
        return f"<!date^{int(utc.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"
    assert_never(part)


def _reference(sigil: str, slack_id: str) -> str:
    return f"<{sigil}{slack_id}>" if _SLACK_ID.fullmatch(slack_id) else escape(sigil + slack_id)
