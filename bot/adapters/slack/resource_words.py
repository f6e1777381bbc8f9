"""How costs are said, in the reader's language: a governed resource and its hours, and the days a figure
leaves out.

Whole GPUs are counted in GPU-hours, a MIG profile ("MIG 3g.40gb") in slice-hours (hours of one instance
of the profile), any other resource by its name in hours. Slices are never said as GPUs, so a figure of
each resource stands beside the others, never added to them. Days are written as the locale writes
them, consecutive days as one range ("Nov 3 – 5", "11月3日至5日"). Shared by the digest
(``reports``), the ``cost`` answer (``replies``) and the ledger's command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta

from babel.dates import format_interval, format_skeleton

from bot.adapters.i18n import format_money, format_number, locale, tr
from bot.adapters.slack.sentences import fill_n
from bot.domain.costs import ResourceCost
from bot.domain.resources import GPU, mig_profile
from bot.services.text import Notice


def resource_label(resource: str) -> str:
    """``Whole GPUs``, ``MIG 3g.40gb``, or the resource's own name (``amd.com/gpu``)."""
    if resource == GPU:
        return tr("Whole GPUs")
    profile = mig_profile(resource)
    return f"MIG {profile.name}" if profile is not None else resource  # a product's name and a profile's: as they are


def hours_of(by_resource: Mapping[str, ResourceCost], gpu_hours: float) -> str:
    """A line's hours, each resource in its own unit: ``24.0 GPU-h``, ``24.0 GPU-h and 48.0 slice-h MIG 3g.40gb``
    (whole GPUs first, always when the line has nothing else)."""
    others = sorted(resource for resource in by_resource if resource != GPU)
    parts = [gpu_hours_text(gpu_hours)] if GPU in by_resource or not others else []
    for resource in others:
        hours, label = format_number(by_resource[resource].hours, digits=1), resource_label(resource)
        if mig_profile(resource) is not None:
            parts.append(tr("{hours} slice-h {resource}", hours=hours, resource=label))
        else:
            parts.append(tr("{hours} h {resource}", hours=hours, resource=label))
    return listed(parts)


def gpu_hours_text(hours: float, *, digits: int | None = 1) -> str:
    """Hours of whole GPUs, short: ``24.0 GPU-h`` (``digits=None``: as the number is, ``0 GPU-h``)."""
    return tr("{hours} GPU-h", hours=format_number(hours, digits=digits))


def hours_and_cost(hours: float, cost: float, currency: str) -> str:
    """Hours of whole GPUs and what they cost: ``24.0 GPU-h · 48.00 USD``."""
    return tr("{hours} GPU-h · {cost}", hours=format_number(hours, digits=1), cost=format_money(cost, currency))


def resource_line(resource: str, figures: ResourceCost, currency: str) -> Notice:
    """``MIG 3g.40gb: 48 slice-hours, 96.00 USD`` (and its idle hours, when some were idle)."""
    values = {
        "resource": resource_label(resource),
        "hours": _amount(figures.hours),
        "cost": format_money(figures.cost, currency),
    }
    count = _count(figures.hours)
    if figures.idle_hours > 0:
        idle = {"idle": _amount(figures.idle_hours), "idle_cost": format_money(figures.idle_cost, currency)}
        if resource == GPU:
            return fill_n(
                "{resource}: {hours} GPU-hour, {cost} (idle {idle} GPU-hours, {idle_cost})",
                "{resource}: {hours} GPU-hours, {cost} (idle {idle} GPU-hours, {idle_cost})",
                count,
                **values,
                **idle,
            )
        if mig_profile(resource) is not None:
            return fill_n(
                "{resource}: {hours} slice-hour, {cost} (idle {idle} slice-hours, {idle_cost})",
                "{resource}: {hours} slice-hours, {cost} (idle {idle} slice-hours, {idle_cost})",
                count,
                **values,
                **idle,
            )
        return fill_n(
            "{resource}: {hours} hour, {cost} (idle {idle} hours, {idle_cost})",
            "{resource}: {hours} hours, {cost} (idle {idle} hours, {idle_cost})",
            count,
            **values,
            **idle,
        )
    if resource == GPU:
        return fill_n("{resource}: {hours} GPU-hour, {cost}", "{resource}: {hours} GPU-hours, {cost}", count, **values)
    if mig_profile(resource) is not None:
        return fill_n("{resource}: {hours} slice-hour, {cost}", "{resource}: {hours} slice-hours, {cost}", count, **values)
    return fill_n("{resource}: {hours} hour, {cost}", "{resource}: {hours} hours, {cost}", count, **values)


def _amount(hours: float) -> str:
    """Hours as people write them: ``48``, ``47.5``, ``1,234.6``."""
    return format_number(round(hours, 1))


def _count(hours: float) -> int:
    """The count that picks the plural form of an amount of hours: one only for exactly ``1`` as shown."""
    shown = round(hours, 1)
    return int(shown) if shown == int(shown) else 2


# --- days ------------------------------------------------------------------------------------------


def short_day(day: date) -> str:
    """A day of the month the text is about, without its year: ``Nov 11``, ``11月11日``."""
    return format_skeleton("MMMd", datetime(day.year, day.month, day.day), locale=locale())


def day_ranges(days: Iterable[date]) -> str:
    """Days as short ranges: ``Nov 3 – 5 and Nov 9`` (``11月3日至5日和11月9日``)."""
    ordered = sorted(set(days))
    ranges: list[tuple[date, date]] = []
    for day in ordered:
        if ranges and day - ranges[-1][1] == timedelta(days=1):
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return listed(
        [short_day(first) if first == last else format_interval(first, last, "MMMd", locale=locale()) for first, last in ranges]
    )


def listed(items: list[str]) -> str:
    """Items as the locale lists them (CLDR's patterns): ``a, b, and c``, ``a、b和c``; a Chinese word joining
    them is spaced from a Latin letter or a digit beside it, as Chinese technical writing does (``小时和 MIG``)."""
    if len(items) < 2:
        return "".join(items)
    patterns = locale().list_patterns["standard"]
    if len(items) == 2:
        return _joined(patterns["2"], items[0], items[1])
    text = _joined(patterns["end"], items[-2], items[-1])
    for item in reversed(items[1:-2]):
        text = _joined(patterns["middle"], item, text)
    return _joined(patterns["start"], items[0], text)


def _joined(pattern: str, first: str, second: str) -> str:
    """``pattern`` (``{0}和{1}``) filled."""
    before, rest = pattern.split("{0}", 1)
    between, after = rest.split("{1}", 1)
    if between and _is_han(between[0]) and _is_latin(first[-1:]):
        between = " " + between
    if between and _is_han(between[-1]) and _is_latin(second[:1]):
        between += " "
    return before + first + between + second + after


def _is_latin(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _is_han(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"
