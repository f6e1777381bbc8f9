"""Lists in the reader's language: items one after another with the locale's separator.

The separator is CLDR's (Babel's list patterns, the middle of a standard list): ``a, b, c`` in
English, ``a、b、c`` in Chinese, as ``why_words`` lists them too. No catalog entry: Babel knows it.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.adapters import i18n
from bot.adapters.slack.sentences import Value
from bot.services.text import Notice, Part, Words


def separator() -> str:
    """What stands between two items of a list in the current language."""
    return str(i18n.locale().list_patterns["standard"]["middle"]).format("", "")


def listed(items: Iterable[Value]) -> Notice:
    """The items as one notice (text items are escaped at render, typed parts shown as themselves)."""
    parts: list[Part] = []
    for index, item in enumerate(items):
        if index:
            parts.append(Words(separator()))
        if isinstance(item, Notice):
            parts.extend(item.parts)
        else:
            parts.append(Words(str(item)) if isinstance(item, str | int) else item)
    return Notice(tuple(parts))


def listed_text(items: Iterable[str]) -> str:
    """The items as plain text (for plain-text places: a form's hint, an option)."""
    return separator().join(items)
