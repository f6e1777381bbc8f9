"""What the bot says by mail, as typed messages: a budget warning and the monthly close.

Like the Slack messages (``bot.services.messages``), a mail holds no word: it names what happened and
carries the figures, the chart's among them (each day's cost per part), so the mail worded at delivery
(``bot.adapters.mail.words``, in the team's language) shows the figures as they were when the warning
fired, whenever the mail server takes it. The outbox stores it as JSON (``mail_to_json``: the class name
and the fields, encoded as the Slack messages' are), one entry per recipient (its stream
``mail:<address>``, its target the address). A mail is no Slack message: the Slack edge never words one,
so its classes register here (``Mail.kinds``), by name, never renamed while entries of them may wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar

# The outbox's JSON of typed values, shared with the Slack messages (one encoding for both).
from bot.services.messages import BudgetAlert, _decode, _encode


class Mail:
    """The base of the typed mails (subclasses are frozen dataclasses)."""

    kinds: ClassVar[dict[str, type[Mail]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        assert cls.__name__ not in Mail.kinds, f"two mails named {cls.__name__}"
        Mail.kinds[cls.__name__] = cls


@dataclass(frozen=True)
class PartCost:
    """One part of a day's bar in the chart: a namespace (or the team, or the parts stacked as one)."""

    name: str
    cost: float


@dataclass(frozen=True)
class DayCost:
    day: date
    parts: tuple[PartCost, ...]


@dataclass(frozen=True)
class BudgetWarningMail(Mail):
    """The budget warning the team's channel got, by mail. ``team``: the policy's key (its language);
    ``day``: the day it fired (in ``schedules.timezone``), whose month the chart shows; ``pace``: the
    budget's daily pace (the chart's dashed line)."""

    team: str
    warning: BudgetAlert
    day: date
    daily: tuple[DayCost, ...]
    pace: float


@dataclass(frozen=True)
class NamespaceClose:
    """A namespace's month: its cost (every resource), its whole GPUs' hours, and the cost of their idle hours."""

    namespace: str
    cost: float
    gpu_hours: float
    idle_cost: float


@dataclass(frozen=True)
class MonthlyCloseMail(Mail):
    """A team's final figures of a month (``month``: its first day), read from the cost ledger once the month
    is over. ``missing``: days no metrics were recorded for (unknown, not counted as zero); ``over_since``:
    the day spend reached the budget."""

    team: str
    team_label: str
    month: date
    spent: float
    budget: float
    currency: str
    over_since: date | None
    gpu_hours: float
    idle_hours: float
    idle_cost: float
    namespaces: tuple[NamespaceClose, ...]
    daily: tuple[DayCost, ...]
    pace: float
    missing: tuple[date, ...]


MailMessage = BudgetWarningMail | MonthlyCloseMail


def mail_to_json(mail: Mail) -> dict[str, Any]:
    """The mail as the outbox stores it: ``{"mail": kind, "fields": {...}}``."""
    return {"mail": type(mail).__name__, "fields": _encode(mail)}


def mail_from_json(data: dict[str, Any] | list[dict[str, str]]) -> MailMessage:
    """What ``mail_to_json`` stored; raises KeyError for what is no mail (a kind this version does not know)."""
    assert isinstance(data, dict), "a mail's entry holds a mapping"
    decoded = _decode(Mail.kinds[data["mail"]], data["fields"])
    assert isinstance(decoded, BudgetWarningMail | MonthlyCloseMail)
    return decoded


def chart_days(daily: Mapping[date, Mapping[str, float]]) -> tuple[DayCost, ...]:
    """The chart's figures as a mail carries them, day by day."""
    return tuple(
        DayCost(day, tuple(PartCost(name, cost) for name, cost in sorted(parts.items()))) for day, parts in sorted(daily.items())
    )


def chart_figures(days: tuple[DayCost, ...]) -> dict[date, dict[str, float]]:
    """``chart_days`` read back: per day, the cost of each part."""
    return {day.day: {part.name: part.cost for part in day.parts} for day in days}
