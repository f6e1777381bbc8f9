"""What the bot says, as data: a ``Notice`` is a sequence of typed parts, never markup.

Services build notices from the bot's own words, a person's words, and typed values (a user id, a
channel id, a moment). Only the Slack adapter (``bot.adapters.slack.mrkdwn``) turns them into mrkdwn:
it escapes every piece of text and makes mentions and date tokens from the typed values, so text a
person typed can never become a live mention or link. Notices are stored as JSON in the outbox.
A moment is a ``Moment``: the adapter words its date token in the reader's language when it renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any


@dataclass(frozen=True)
class Words:
    """Text shown exactly as written (the bot's words or a person's): escaped by the adapter."""

    text: str


@dataclass(frozen=True)
class Strong:
    """Emphasised text, escaped like ``Words``."""

    text: str


@dataclass(frozen=True)
class Code:
    """Text in a code span (names of namespaces, commands), escaped like ``Words``."""

    text: str


@dataclass(frozen=True)
class Quote:
    """A person's words set apart as a block quote, escaped like ``Words``."""

    text: str


@dataclass(frozen=True)
class User:
    """A mention the bot means: rendered from the id, which must look like a Slack user id."""

    user_id: str


@dataclass(frozen=True)
class Channel:
    channel_id: str


@dataclass(frozen=True)
class UserGroup:
    usergroup_id: str


@dataclass(frozen=True)
class Moment:
    """A time each reader sees in their own time zone."""

    at: datetime


Part = Words | Strong | Code | Quote | User | Channel | UserGroup | Moment
_KINDS: dict[str, type[Any]] = {
    "words": Words,
    "strong": Strong,
    "code": Code,
    "quote": Quote,
    "user": User,
    "channel": Channel,
    "usergroup": UserGroup,
    "moment": Moment,
}
_NAMES = {kind: name for name, kind in _KINDS.items()}


@dataclass(frozen=True)
class Notice:
    parts: tuple[Part, ...]

    def to_json(self) -> list[dict[str, str]]:
        return [{"kind": _NAMES[type(part)], "value": _value(part)} for part in self.parts]

    @classmethod
    def from_json(cls, data: list[dict[str, str]]) -> Notice:
        parts: list[Part] = []
        for item in data:
            kind = _KINDS[item["kind"]]
            value: Any = datetime.fromisoformat(item["value"]) if kind is Moment else item["value"]
            parts.append(kind(value))
        return cls(tuple(parts))


def say(*parts: str | Part) -> Notice:
    """A notice; plain strings are the bot's own words (``Words``)."""
    return Notice(tuple(Words(p) if isinstance(p, str) else p for p in parts))


def plain(notice: Notice) -> str:
    """The notice as unformatted text, for logs and exception messages (never sent to Slack)."""
    words = []
    for part in notice.parts:
        if isinstance(part, User):
            words.append("@" + part.user_id)
        elif isinstance(part, Channel):
            words.append("#" + part.channel_id)
        elif isinstance(part, UserGroup):
            words.append("@" + part.usergroup_id)
        else:
            words.append(_value(part))
    return "".join(words)


def _value(part: Part) -> str:
    if isinstance(part, Moment):
        return part.at.astimezone(timezone.utc).isoformat()
    if isinstance(part, User):
        return part.user_id
    if isinstance(part, Channel):
        return part.channel_id
    if isinstance(part, UserGroup):
        return part.usergroup_id
    return part.text


# English only, kept while word modules still import them: words use bot.adapters.i18n's format_gpus / format_money.
def gpus(count: int) -> str:
    return f"{count} GPU" if abs(count) == 1 else f"{count} GPUs"


def money(amount: float, currency: str) -> str:
    return f"{amount:,.2f} {currency}"
