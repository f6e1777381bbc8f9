"""The words of every typed message (``bot.services.messages``): English sentences, emoji and markup.

Each message has one renderer here, registered on ``notice``: a sentence written whole, with named
placeholders (``fill``), the form a message catalog takes (#24: a second language is a catalog of
the same sentences). Renderers make a ``Notice`` of typed parts; ``mrkdwn.render`` escapes every
piece of text in it, so a person's words (a reason, an API server's message) stay inert here too.
An old outbox entry's notice (recorded before typed messages) is delivered as it was stored.
"""

from __future__ import annotations

import re
from functools import singledispatch

from bot.adapters.slack import mrkdwn
from bot.domain.commands import format_request_id
from bot.services import messages as m
from bot.services.text import Notice, Part, User, Words

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def render(said: m.Said) -> str:
    """The message (or an old entry's notice) as mrkdwn."""
    return mrkdwn.render(notice(said))


def fill(template: str, **values: Part | str | int) -> Notice:
    """A notice from a whole sentence and its named values: text values are shown as text (escaped at
    render), typed parts as themselves (a mention, a moment, a bold name)."""
    parts: list[Part] = []
    for index, piece in enumerate(_PLACEHOLDER.split(template)):
        if index % 2 == 0:
            if piece:
                parts.append(Words(piece))
            continue
        value = values[piece]
        parts.append(Words(str(value)) if isinstance(value, str | int) else value)
    return Notice(tuple(parts))


def join(*notices: Notice) -> Notice:
    """Notices one after the other (a sentence and the lines that follow it)."""
    return Notice(tuple(part for n in notices for part in n.parts))


@singledispatch
def notice(said: object) -> Notice:
    """The typed parts of a message (registered per message class below and in ``words_*``)."""
    raise TypeError(f"no words for {type(said).__name__}")


@notice.register
def _(said: Notice) -> Notice:
    return said  # an entry recorded before typed messages: its parts as they were stored


# --- decisions, cancellations and retries -------------------------------------------------


@notice.register
def _(said: m.ApprovedBy) -> Notice:
    return fill(
        ":+1: Approved by {user} — {approvals} of {required}.",
        user=User(said.user_id),
        approvals=said.approvals,
        required=said.required,
    )


@notice.register
def _(said: m.DeniedBy) -> Notice:
    if said.reason:
        return fill(":no_entry: Denied by {user}. Reason: {reason}", user=User(said.user_id), reason=said.reason)
    return fill(":no_entry: Denied by {user}.", user=User(said.user_id))


@notice.register
def _(said: m.DeniedToRequester) -> Notice:
    values: dict[str, Part | str] = {"request": format_request_id(said.request_id), "user": User(said.user_id)}
    if said.reason:
        return fill(
            "{request} was denied by {user}. Reason: {reason} The thread has the discussion.", reason=said.reason, **values
        )
    return fill("{request} was denied by {user}. The thread has the discussion.", **values)


@notice.register
def _(said: m.CancelledBy) -> Notice:
    return fill(":wastebasket: Cancelled by {user}.", user=User(said.user_id))


@notice.register
def _(said: m.CancelledToRequester) -> Notice:
    return fill("{request} was cancelled by {user}.", request=format_request_id(said.request_id), user=User(said.user_id))


@notice.register
def _(said: m.RetryBy) -> Notice:
    return fill(":repeat: Retry by {user}.", user=User(said.user_id))
