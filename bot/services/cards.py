"""``RequestCard``: everything the request message shows, independent of Slack.

Built from the stored request so a message can be re-rendered at any time (after each decision,
after the apply, when a grant ends) and always tells the whole current story.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bot.domain.commands import format_request_id
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg, Verdict
from bot.domain.policy import Policy
from bot.domain.quota import CapacityImpact

if TYPE_CHECKING:
    from bot.adapters.db.models import RequestRow
    from bot.services.pods import PodsInView


@dataclass(frozen=True)
class ShiftSide:
    """The source of a shift: where the GPUs come from, its quota before -> after (as asked, then as made)."""

    namespace: str
    team_label: str
    before: int
    after: int
    applied: bool  # the source's quota is lowered in the cluster
    returned: bool  # a temporary shift ended and the source has its GPUs back
    used: int | None = None  # GPUs in use in the source when it was asked
    channel_id: str | None = None  # the copy of the card in the source team's channel
    message_ts: str | None = None


@dataclass(frozen=True)
class RequestCard:
    request_id: int
    kind: RequestKind
    state: RequestState
    namespace: str
    team_label: str
    requester_id: str
    amount_text: str
    delta: int
    hard_before: int
    used_before: int | None
    duration: timedelta | None
    reason: str
    approvals: tuple[str, ...]
    approvals_required: int
    denied_by: str | None
    auto_approved: bool
    capacity: CapacityImpact | None
    cost: float | None
    cost_basis: str | None
    currency: str
    decide_by: datetime
    grant_ends_at: datetime | None
    grant_state: GrantState | None
    extends_id: int | None
    failure_reason: str | None
    channel_id: str
    message_ts: str | None
    auto_note: str | None = None  # which auto-approval rule allowed it, or what kept it for a person
    # The before -> after actually applied (recomputed at apply time; may differ from when asked).
    applied_from: int | None = None
    applied_to: int | None = None
    # While pending: the namespace's GPU pods by priority class, read when the card is rendered.
    pods: PodsInView | None = None
    shift: ShiftSide | None = None  # a shift's source side (the fields above describe the target)
    thread_in: str | None = None  # set on the copy of a shift's card: the channel of the card with the thread

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)

    @property
    def hard_after(self) -> int:
        return self.hard_before + self.delta

    @property
    def permanent(self) -> bool:
        return self.duration is None


def source_copy(card: RequestCard) -> RequestCard | None:
    """The copy of a shift's card in the source team's channel (same content and buttons), if it has one."""
    if card.shift is None or card.shift.channel_id is None:
        return None
    return replace(card, channel_id=card.shift.channel_id, message_ts=card.shift.message_ts, thread_in=card.channel_id)


def card_for(request: RequestRow, policy: Policy, *, extended_grant_ends_at: datetime | None = None) -> RequestCard:
    """The card of a stored request (its decisions and grant loaded)."""
    team = policy.teams.get(request.team)
    denied = [d.user_id for d in request.decisions if d.verdict == Verdict.DENY]
    capacity = (
        CapacityImpact(allocatable=request.allocatable, committed_after=request.committed_after)
        if request.allocatable is not None and request.committed_after is not None
        else None
    )
    grant = request.grant
    duration = timedelta(seconds=request.duration_seconds) if request.duration_seconds is not None else None
    grant_ends_at = grant.ends_at if grant else extended_grant_ends_at
    if request.kind == RequestKind.EXTENSION and request.applied_at is None and grant_ends_at and duration:
        # Until it is applied, an extension shows the end it would give: the grant's end plus its time.
        grant_ends_at += duration
    return RequestCard(
        request_id=request.id,
        kind=RequestKind(request.kind),
        state=RequestState(request.state),
        namespace=request.namespace,
        team_label=team.label if team else request.team,
        requester_id=request.requester_id,
        amount_text=request.amount_text,
        # Once applied, the before -> after the bot actually made (the quota may have moved since it was asked).
        delta=request.delta if request.applied_to is None else request.applied_to - (request.applied_from or 0),
        hard_before=request.hard_before if request.applied_from is None else request.applied_from,
        used_before=request.used_before,
        duration=duration,
        reason=request.reason,
        approvals=tuple(d.user_id for d in request.approvals),
        approvals_required=request.approvals_required,
        denied_by=denied[0] if denied else None,
        auto_approved=request.auto_approved,
        capacity=capacity,
        cost=request.cost,
        cost_basis=request.cost_basis,
        currency=policy.pricing.currency,
        decide_by=request.decide_by,
        grant_ends_at=grant_ends_at,
        grant_state=GrantState(grant.state) if grant else None,
        extends_id=request.extends_request_id,
        failure_reason=request.failure_reason,
        channel_id=request.channel_id,
        message_ts=request.message_ts,
        auto_note=request.auto_note,
        applied_from=request.applied_from,
        applied_to=request.applied_to,
        shift=_shift_side(request, policy),
    )


def _shift_side(request: RequestRow, policy: Policy) -> ShiftSide | None:
    if request.kind != RequestKind.SHIFT or request.source_namespace is None:
        return None
    team = policy.teams.get(request.source_team or "")
    before = request.source_from if request.source_from is not None else 0
    after = request.source_to if request.source_to is not None else max(0, before - request.delta)
    return ShiftSide(
        namespace=request.source_namespace,
        team_label=team.label if team else request.source_team or "",
        before=before,
        after=after,
        applied=request.source_to is not None,
        returned=request.source_state == SourceLeg.RETURNED,
        used=request.source_used,
        channel_id=request.source_channel_id,
        message_ts=request.source_message_ts,
    )
