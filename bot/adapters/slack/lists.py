"""Lists in the reader's language: items one after another with the language's separator.

English writes ``a, b, c``, Chinese ``a、b、c``: the separator is a catalog sentence of its own
("{list}, {item}"), applied item by item, so a translator sets it once for every list the bot shows.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.adapters.i18n import tr
from bot.adapters.slack.sentences import Value, fill
from bot.services.text import Notice, Words


def listed(items: Iterable[Value]) -> Notice:
    """The items as one notice (text items are escaped at render, typed parts shown as themselves)."""
    result: Notice | None = None
    for item in items:
        piece = _notice(item)
        # Translators: how a list is joined, item by item ("a, b, c"); {list} is what came before.
        result = piece if result is None else fill("{list}, {item}", list=result, item=piece)
    return result if result is not None else Notice(())


def _notice(item: Value) -> Notice:
    if isinstance(item, Notice):
        return item
    return Notice((Words(str(item)) if isinstance(item, str | int) else item,))


def listed_text(items: Iterable[str]) -> str:
    """The items as plain text (for plain-text places: a form's hint, an option)."""
    result: str | None = None
    for item in items:
        result = item if result is None else tr("{list}, {item}", list=result, item=item)
    return result or ""
