"""The words of an auto-approval verdict (``bot.domain.auto_notes``): on the request card and the audit trail.

``auto-approved: 1 GPU for 4h within auto_approve (max 1 GPU active, 4h)``, or ``not auto-approved: ...``
with what kept it for a person. Each reason is a whole catalog sentence with its figures as values. A
note an earlier version stored as a sentence is shown as it was stored (the bot's own words then too).
The audit trail's details (``details.notice``) use the same words.
"""

from __future__ import annotations

from datetime import timedelta

from bot.adapters.i18n import format_duration, format_number
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.resources import amount_of
from bot.adapters.slack.sentences import fill, fill_n
from bot.domain.auto_notes import AutoApprovalNote, AutoRefusal
from bot.services.text import Notice


def card_text(note: AutoApprovalNote | str) -> str:
    """The note as mrkdwn for the card: typed, in words; an earlier version's sentence, as it was stored."""
    return render(note_notice(note)) if isinstance(note, AutoApprovalNote) else note


def note_notice(note: AutoApprovalNote) -> Notice:
    amount = amount_of(note.gpus, note.resource)
    if note.approved or note.refused is None:
        return fill(
            "auto-approved: {amount} for {length} within auto_approve ({limits})",
            amount=amount,
            length=format_duration(timedelta(seconds=note.grant_seconds)),
            limits=_limits(note),
        )
    return fill(
        "not auto-approved: {problem} (auto_approve: {limits})", problem=_problem(note, note.refused), limits=_limits(note)
    )


def _limits(note: AutoApprovalNote) -> Notice:
    values = {"amount": amount_of(note.max_gpus, note.resource), "length": format_duration(timedelta(seconds=note.max_seconds))}
    if note.max_gpu_hours_per_day is None:
        return fill("max {amount} active, {length}", **values)
    return fill("max {amount} active, {length}, {hours} GPU-hours a day", hours=_hours(note.max_gpu_hours_per_day), **values)


def _problem(note: AutoApprovalNote, refused: AutoRefusal) -> Notice:
    match refused:
        case AutoRefusal.OVER_BUDGET:
            return fill("the team is over its budget")
        case AutoRefusal.MORE_THAN_MAX:
            return fill_n(
                "{amount} is more than auto_approve.max_gpus ({most})",
                "{amount} are more than auto_approve.max_gpus ({most})",
                note.gpus,
                amount=amount_of(note.gpus, note.resource),
                most=note.max_gpus,
            )
        case AutoRefusal.TOO_MANY_ACTIVE:
            return fill_n(
                "the namespace already has {count} auto-approved GPU active; {count} + {more} is more than {most}",
                "the namespace already has {count} auto-approved GPUs active; {count} + {more} is more than {most}",
                note.active_gpus,
                more=note.gpus,
                most=note.max_gpus,
            )
        case AutoRefusal.TOO_LONG:
            return fill(
                "the grant would last {length} in all, longer than auto_approve.max_duration ({longest})",
                length=format_duration(timedelta(seconds=note.grant_seconds)),
                longest=format_duration(timedelta(seconds=note.max_seconds)),
            )
        case AutoRefusal.DAILY_CAP:
            return fill(
                "the team's auto-approved use today would reach {hours} GPU-hours, above the daily cap of {cap}",
                hours=_hours(note.gpu_hours_today),
                cap=_hours(note.max_gpu_hours_per_day or 0.0),
            )
        case AutoRefusal.CAPACITY:
            return fill("the cluster's capacity is unknown or would be oversubscribed")


def _hours(value: float) -> str:
    """GPU-hours for people: 8, 7.5, 1,234.25."""
    return format_number(round(value, 2))
