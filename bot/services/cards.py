"""``RequestCard``: everything the request message shows, independent of Slack.

Built from the stored request so a message can be re-rendered at any time (after each decision,
after the apply, when a grant ends) and always tells the whole current story.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from bot.domain.auto_notes import stored_note
from bot.domain.entities import Request
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg, Verdict
from bot.domain.policy import Policy
from bot.domain.quota import CapacityImpact
from bot.services.views import RequestCard, ShiftSide


def source_copy(card: RequestCard) -> RequestCard | None:
    """The copy of a shift's card in the source team's channel (same content and buttons), if it has one."""
    if card.shift is None or card.shift.channel_id is None:
        return None
    return replace(card, channel_id=card.shift.channel_id, message_ts=card.shift.message_ts, thread_in=card.channel_id)


def card_for(request: Request, policy: Policy, *, extended_grant_ends_at: datetime | None = None) -> RequestCard:
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
        resource=request.resource,
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
        auto_note=stored_note(request.auto_note),
        applied_from=request.applied_from,
        applied_to=request.applied_to,
        shift=_shift_side(request, policy),
    )


def _shift_side(request: Request, policy: Policy) -> ShiftSide | None:
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
