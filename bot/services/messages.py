"""What the bot says in Slack threads, direct messages and channel posts, as typed messages.

A message names what happened and carries its values (a request id, a namespace, user ids, GPU
numbers, moments, a person's reason as a plain string); it holds no word, emoji or markup. The
services make them; the outbox stores them as JSON (``to_json`` / ``from_json``: the class name and
the fields); the Slack edge words them at delivery (``bot.adapters.slack.words``), where the language
is chosen. Outbox entries recorded before typed messages hold a ``Notice`` (its parts as a JSON
list): they are still read and delivered as they are (``Said``).

Each subclass is registered by its class name, the kind stored in the outbox: a class is never
renamed while entries of it may wait (rename it in two releases, reading both names in between).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from types import UnionType
from typing import Any, ClassVar

from bot.services.text import Notice


class Message:
    """The base of every typed message (subclasses are frozen dataclasses)."""

    kinds: ClassVar[dict[str, type[Message]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        assert cls.__name__ not in Message.kinds, f"two messages named {cls.__name__}"
        Message.kinds[cls.__name__] = cls


# What a thread reply, direct message or post carries: a typed message, or an old entry's notice.
Said = Message | Notice


def to_json(message: Message) -> dict[str, Any]:
    """The message as the outbox stores it: ``{"message": kind, "fields": {...}}``."""
    return {"message": type(message).__name__, "fields": _encode(message)}


def from_json(data: dict[str, Any] | list[dict[str, str]]) -> Said:
    """What ``to_json`` stored, or a notice's parts (an entry recorded before typed messages)."""
    if isinstance(data, list):
        return Notice.from_json(data)
    kind = Message.kinds[data["message"]]
    decoded = _decode(kind, data["fields"])
    assert isinstance(decoded, Message)
    return decoded


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_encode(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _decode(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (UnionType, typing.Union):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _decode(inner, value)
    if origin is tuple:
        return tuple(_decode(typing.get_args(hint)[0], item) for item in value)
    if hint is datetime:
        return datetime.fromisoformat(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{f.name: _decode(hints[f.name], value[f.name]) for f in dataclasses.fields(hint)})
    return value


# --- decisions, cancellations and retries (bot.services.decisions, bot.services.lifecycle) ---------


@dataclass(frozen=True)
class ApprovedBy(Message):
    """In the thread: one approval counted."""

    user_id: str
    approvals: int
    required: int


@dataclass(frozen=True)
class DeniedBy(Message):
    """In the thread; ``reason`` is the denier's words ("" when none was given)."""

    user_id: str
    reason: str


@dataclass(frozen=True)
class DeniedToRequester(Message):
    request_id: int
    user_id: str
    reason: str


@dataclass(frozen=True)
class CancelledBy(Message):
    user_id: str


@dataclass(frozen=True)
class CancelledToRequester(Message):
    request_id: int
    user_id: str


@dataclass(frozen=True)
class RetryBy(Message):
    user_id: str
