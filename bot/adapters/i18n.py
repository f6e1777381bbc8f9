"""The bot's words in the reader's language: gettext catalogs (Babel) and Babel's number, money and date formats.

Every sentence a person reads is a catalog entry: its English text is the message id, written whole
with named placeholders (``{namespace}``), and ``bot/locale/<locale>/LC_MESSAGES/messages.po`` holds
each language's text for it (``./scripts/catalogs``: extract, update, check, compile). The word
modules call ``tr`` / ``tr_n`` (plain text) or ``sentences.fill`` / ``fill_n`` (typed parts); a text
kept in a table at import time is marked with ``N_`` and translated where it is shown.

The language is chosen at the edge, never in a use case: whoever delivers words (the notifier for a
channel or a person, a listener for its answer, the shell, a CLI) sets it with ``speaking`` (for a
block of work) or ``use`` (for the rest of a Slack request, which is dispatched in a context of its own);
work handed to the pool carries it (``bot.executor`` copies the context). Unset, it is English.
"""

from __future__ import annotations

import gettext as gnu
import io
import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, timedelta, tzinfo
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import TypeVar

from babel import Locale
from babel.dates import format_date, format_datetime, format_skeleton
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_currency, format_decimal, format_percent

from bot.domain.languages import Language

log = logging.getLogger(__name__)
T = TypeVar("T")

CATALOGS = Path(__file__).parents[1] / "locale"
DOMAIN = "messages"
SAME_TIME = 10.0  # seconds: how much older than its .po a .mo may be and still be read
# Each language's Babel locale, and the folder of its catalog under CATALOGS.
LOCALES: Mapping[Language, Locale] = {Language.EN: Locale.parse("en"), Language.ZH_CN: Locale.parse("zh_Hans_CN")}
CATALOG_DIRS: Mapping[Language, str] = {Language.EN: "en", Language.ZH_CN: "zh_Hans"}


class _Deferred:
    """A language found out when words are first made (a person's Slack language costs a Slack call)."""

    def __init__(self, find: Callable[[], Language]) -> None:
        self._find: Callable[[], Language] | None = find
        self._found = Language.EN
        self._lock = threading.Lock()

    def language(self) -> Language:
        with self._lock:
            if self._find is not None:
                find, self._find = self._find, None
                try:
                    self._found = find()
                except Exception:  # never let words fail for want of a language: English, and a log line
                    log.exception("could not find the reader's language: English is used")
            return self._found


_current: ContextVar[Language | _Deferred] = ContextVar("language", default=Language.EN)
PLACEHOLDER = re.compile(r"\{(\w+)\}")  # a sentence's named placeholder: {namespace}
# Message ids asked for in a language whose catalog lacks them (shown in English meanwhile): logged once
# each, and read by the tests that render every message in every language.
missed: set[tuple[Language, str]] = set()
_missed_lock = threading.Lock()


# --- choosing the language ---------------------------------------------------------------------


def current() -> Language:
    """The language words are made in here and now."""
    chosen = _current.get()
    return chosen.language() if isinstance(chosen, _Deferred) else chosen


@contextmanager
def speaking(language: Language) -> Iterator[None]:
    """Words made inside the block are in ``language``."""
    token = _current.set(language)
    try:
        yield
    finally:
        _current.reset(token)


def in_english(words: Callable[[T], str]) -> Callable[[T], str]:
    """``words`` made in English whatever the current language (what goes to the log)."""

    def english(value: T) -> str:
        with speaking(Language.EN):
            return words(value)

    return english


def use(language: Language) -> None:
    """Words made from now on in this context are in ``language`` (a Slack request's: each is dispatched in
    a context of its own, ``slack.languages.RequestScopedApp``, so the language ends with the request)."""
    _current.set(language)


def use_lazily(find: Callable[[], Language]) -> None:
    """``use`` the language ``find`` returns, asked only when (and once) words are first made."""
    _current.set(_Deferred(find))


def locale() -> Locale:
    """Babel's locale of the current language."""
    return LOCALES[current()]


# --- the catalogs --------------------------------------------------------------------------------


@cache
def translations(language: Language) -> gnu.NullTranslations:
    """The language's compiled catalog; a ``.po`` newer than its ``.mo`` (or without one) is compiled here."""
    folder = CATALOGS / CATALOG_DIRS[language] / "LC_MESSAGES"
    po, mo = folder / f"{DOMAIN}.po", folder / f"{DOMAIN}.mo"
    # A .mo written in the same few seconds as its .po (an install copies both) is the .po compiled.
    if mo.exists() and (not po.exists() or mo.stat().st_mtime >= po.stat().st_mtime - SAME_TIME):
        with mo.open("rb") as compiled:
            return gnu.GNUTranslations(compiled)
    if not po.exists():
        log.error("no catalog for %s at %s: its messages are shown in English", language.value, po)
        return gnu.NullTranslations()
    with po.open("rb") as source:
        catalog = read_po(source, locale=LOCALES[language])
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return gnu.GNUTranslations(buffer)


def _note_missing(message: str, found: str) -> None:
    language = current()
    if language == Language.EN or found != message:
        return
    key = (language, message)
    with _missed_lock:
        if key in missed:
            return
        missed.add(key)
    log.warning("no %s words for %r in the catalog: shown in English", language.value, message[:80])


def gettext(message: str) -> str:
    """``message`` (an English catalog id) in the current language."""
    found = translations(current()).gettext(message)
    _note_missing(message, found)
    return found


def ngettext(singular: str, plural: str, count: int) -> str:
    """The form of ``singular`` / ``plural`` for ``count`` in the current language (its plural rules)."""
    found = translations(current()).ngettext(singular, plural, count)
    _note_missing(singular if count == 1 else plural, found)
    return found


_ = gettext


def N_(message: str) -> str:  # noqa: N802 (gettext's own name for it)
    """Marks a catalog id kept in a table (extracted, translated where it is shown with ``gettext``)."""
    return message


def substitute(template: str, values: Mapping[str, object]) -> str:
    """``{name}`` placeholders replaced by ``values`` (no other brace is special)."""
    return PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), template)


def tr(template: str, **values: object) -> str:
    """A whole sentence in the current language as plain text, its placeholders filled (for plain-text
    places: button labels, form titles, the shell, the CLIs, chart labels). Nothing is escaped."""
    return substitute(gettext(template), values)


def tr_n(singular: str, plural: str, count: int, **values: object) -> str:
    """``tr`` of the form for ``count`` (``{count}`` is filled with it unless given)."""
    values.setdefault("count", format_number(count))
    return substitute(ngettext(singular, plural, count), values)


# --- numbers, money, moments, durations ---------------------------------------------------------


def format_number(value: int | float | Decimal, *, digits: int | None = None) -> str:
    """A number as the locale writes it (``1,234.5``); ``digits``: exactly that many decimals."""
    if digits is None:
        return format_decimal(value, locale=locale())
    pattern = "#,##0" + ("." + "0" * digits if digits else "")
    return format_decimal(value, format=pattern, locale=locale())


def format_share(fraction: float) -> str:
    """A share as a percentage (``37%``)."""
    return format_percent(fraction, locale=locale())


def format_money(amount: float | Decimal, currency: str) -> str:
    """An amount of ``currency``: English keeps the code after the figure (``1,234.00 USD``, as before and
    unambiguous across currencies), other languages use the locale's own pattern (``US$1,234.00``)."""
    if current() == Language.EN:
        return format_currency(amount, currency, format="#,##0.00 ¤¤", locale=locale(), currency_digits=False)
    return format_currency(amount, currency, locale=locale())


def format_moment(moment: datetime, zone: tzinfo) -> str:
    """A moment in ``zone`` as the locale writes a date and time (medium date, short time)."""
    return format_datetime(moment.astimezone(zone), format="medium", tzinfo=zone, locale=locale())


def format_day(day: date) -> str:
    """A calendar day as the locale writes it (medium form)."""
    return format_date(day, format="medium", locale=locale())


def format_month(day: date) -> str:
    """A month and year (``December 2026``, ``2026年12月``)."""
    return format_skeleton("yMMMM", datetime(day.year, day.month, 1), locale=locale())


_DURATION_UNITS = (  # the unit, its seconds, its words (a catalog id each)
    ("w", 7 * 86400, N_("{count}w")),
    ("d", 86400, N_("{count}d")),
    ("h", 3600, N_("{count}h")),
    ("m", 60, N_("{count}m")),
    ("s", 1, N_("{count}s")),
)


def format_duration(duration: timedelta) -> str:
    """The shortest exact form of a duration in the current language: ``3d``, ``1d12h`` in English (as people
    type it), ``3 天``, ``1 天 12 小时`` in Chinese. Whole weeks only ("10d" reads better than "1w3d")."""
    remaining = int(duration.total_seconds())
    if remaining <= 0:
        return tr("{count}s", count=0)
    parts = []
    for unit, size, words in _DURATION_UNITS:
        if unit == "w" and remaining % size:
            continue
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(tr(words, count=count))
    return ("" if current() == Language.EN else " ").join(parts)


def format_gpus(count: int) -> str:
    """A number of whole GPUs (``3 GPUs``, ``-1 GPU``, ``3 块 GPU``): the form is that of the figure without its sign."""
    return substitute(ngettext("{count} GPU", "{count} GPUs", abs(count)), {"count": format_number(count)})
