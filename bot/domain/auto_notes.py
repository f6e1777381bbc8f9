"""Why the bot approved a request alone, or what kept it for a person, as typed data: no word.

``bot.domain.policy.auto_approval`` decides and returns one of these; the request keeps it in its
``auto_note`` column and the audit trail in its ``detail`` (both as JSON, ``audit_details.to_text``);
the Slack edge words it (``bot.adapters.slack.approval_words``). A note an earlier version stored as
an English sentence is shown as it was stored (``stored_note``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.domain.audit_details import MARKER, AuditDetail, from_text
from bot.domain.resources import GPU


class AutoRefusal(StrEnum):
    """What kept a temporary increase from being auto-approved (stored by value: never renamed)."""

    OVER_BUDGET = "over_budget"  # the team is over its budget
    MORE_THAN_MAX = "more_than_max"  # the request alone asks more than max_gpus
    TOO_MANY_ACTIVE = "too_many_active"  # with the namespace's active auto-approved GPUs, more than max_gpus
    TOO_LONG = "too_long"  # the whole grant lasts longer than max_duration
    DAILY_CAP = "daily_cap"  # the team's auto-approved GPU-hours of the day would pass max_gpu_hours_per_day
    CAPACITY = "capacity"  # the cluster's capacity is unknown or would be oversubscribed


@dataclass(frozen=True)
class AutoApprovalNote(AuditDetail):
    """The rule's verdict with its figures: the request's (``gpus`` for ``grant_seconds``, counted against
    ``active_gpus`` already active and ``gpu_hours_today`` with this one) and the rule's limits."""

    approved: bool
    refused: AutoRefusal | None  # None when approved
    gpus: int
    grant_seconds: int
    active_gpus: int
    gpu_hours_today: float
    max_gpus: int
    max_seconds: int
    max_gpu_hours_per_day: float | None
    resource: str = GPU

    def __post_init__(self) -> None:
        if self.refused is not None and not isinstance(self.refused, AutoRefusal):
            object.__setattr__(self, "refused", AutoRefusal(self.refused))  # read back from JSON as its value


def stored_note(text: str | None) -> AutoApprovalNote | str | None:
    """What a request's ``auto_note`` column holds: a typed note, or the sentence an earlier version stored."""
    if text is None or not text.startswith(MARKER):
        return text
    try:
        note = from_text(text)
    except (ValueError, KeyError, TypeError):
        return text
    return note if isinstance(note, AutoApprovalNote) else text
