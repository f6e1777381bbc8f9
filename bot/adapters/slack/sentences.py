"""Sentences written whole, with named placeholders (``fill``): catalog entries, in the reader's language.

The renderers of messages (``words``), refusals (``refusals``), reasons (``reasons``) and reports
make their notices with these. The template is the English catalog id (``bot.adapters.i18n``): it is
looked up in the current language before its placeholders are filled, so a translator may reorder
them. ``mrkdwn.render`` escapes every piece of text in the result.
"""

from __future__ import annotations

from bot.adapters.i18n import PLACEHOLDER, format_number, gettext, ngettext
from bot.services.text import Notice, Part, Words

Value = Part | Notice | str | int  # what a placeholder takes (a notice: a list of people, say)


def fill(template: str, **values: Value) -> Notice:
    """A notice from a whole sentence (translated) and its named values: text values are shown as text
    (escaped at render), typed parts as themselves (a mention, a moment, a bold name)."""
    return _filled(gettext(template), values)


def fill_n(singular: str, plural: str, count: int, **values: Value) -> Notice:
    """``fill`` of the form of the sentence for ``count`` (``{count}`` is filled with it unless given)."""
    values.setdefault("count", format_number(count))
    return _filled(ngettext(singular, plural, count), values)


def _filled(template: str, values: dict[str, Value]) -> Notice:
    parts: list[Part] = []
    for index, piece in enumerate(PLACEHOLDER.split(template)):
        if index % 2 == 0:
            if piece:
                parts.append(Words(piece))
            continue
        value = values[piece]
        if isinstance(value, Notice):
            parts.extend(value.parts)
        else:
            parts.append(Words(str(value)) if isinstance(value, str | int) else value)
    return Notice(tuple(parts))


def join(*notices: Notice) -> Notice:
    """Notices one after the other (a sentence and the lines that follow it)."""
    return Notice(tuple(part for n in notices for part in n.parts))
