"""What the request use cases did, as data: what happened, to which request, with which numbers.

Services return these; the Slack edge (``bot.adapters.slack.replies``) turns them into words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from bot.domain.commands import format_request_id
from bot.domain.failure_reasons import FailureReason
from bot.domain.lifecycle import RequestState
from bot.domain.prices import Price
from bot.errors import GpuQuotaError, RateLimited


@dataclass(frozen=True)
class Submitted:
    request_id: int
    channel_id: str
    state: RequestState
    approvals_required: int
    post_error: str | None  # Slack refused the message; the reconcile job posts it later
    post_waits: bool = False  # Slack asked to wait (429): the reconcile job posts it after the Retry-After

    @classmethod
    def of(
        cls, request_id: int, channel_id: str, state: RequestState, approvals_required: int, post: GpuQuotaError | None
    ) -> Submitted:
        """The outcome, with what ``Announcer.post_card`` answered for the card."""
        waits = isinstance(post, RateLimited)
        error = None if post is None or waits else str(post)
        return cls(request_id, channel_id, state, approvals_required, error, waits)

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)


@dataclass(frozen=True)
class Confirmation:
    """A permanent or large change as it would be applied now, for the approver to confirm."""

    request_id: int
    namespace: str
    team_label: str
    requester_id: str
    delta: int
    duration: timedelta | None  # None: permanent
    before: int  # the quota now, read when the form opens
    after: int
    monthly_cost: float  # the change's GPUs for a whole month
    grant_cost: float | None  # a temporary change: its cost for the grant
    price: Price  # the price the costs are at, and its basis (bot.services.pricing)
    currency: str
    approvals: int
    approvals_required: int
    large_above: int | None  # set when the change counts as large: more than this many GPUs

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)

    @property
    def permanent(self) -> bool:
        return self.duration is None


class Decision(StrEnum):
    DENIED = "denied"
    COMPLETED = "completed"  # the last approval: the apply left it in ``state``
    REFUSED = "refused"  # the last approval, refused against the quota as it is now (``failure_reason``)
    COUNTED = "counted"  # an approval that is not the last one


@dataclass(frozen=True)
class Decided:
    request_id: int
    decision: Decision
    state: RequestState
    approvals: int
    approvals_required: int
    failure_reason: FailureReason | None = None

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)


@dataclass(frozen=True)
class Cancelled:
    request_id: int

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)


class Release(StrEnum):
    RETURNED = "returned"  # the grant ended: its GPUs are back where they came from
    SHIFT_RETURNED = "shift returned"  # a shift's target grant ended: the source gets them
    SOURCE_GIVEN_BACK = "source given back"  # a failed shift: its lowered source got them back
    PENDING = "pending"  # the grant ended but the quota could not be put back yet (the bot retries)


@dataclass(frozen=True)
class Released:
    request_id: int
    how: Release
    gpus: int
    namespace: str
    source_namespace: str | None = None

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)


@dataclass(frozen=True)
class Retried:
    request_id: int
    state: RequestState  # what the apply that followed left it in

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)
