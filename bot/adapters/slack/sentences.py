"""Sentences written whole, with named placeholders (``fill``): the form a message catalog takes.

The renderers of messages (``words``), refusals (``refusals``), reasons (``reasons``) and reports
make their notices with these; ``mrkdwn.render`` escapes every piece of text in them.
"""

from __future__ import annotations

import re

from bot.services.text import Notice, Part, Words

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
Value = Part | Notice | str | int  # what a placeholder takes (a notice: a list of people, say)


def fill(template: str, **values: Value) -> Notice:
    """A notice from a whole sentence and its named values: text values are shown as text (escaped at
    render), typed parts as themselves (a mention, a moment, a bold name)."""
    parts: list[Part] = []
    for index, piece in enumerate(_PLACEHOLDER.split(template)):
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
