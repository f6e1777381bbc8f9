"""The transitions of requests and grants (checked against ``bot.domain.lifecycle``) and the record that a
request was applied: shared by the appliers (``changes``, ``shift_apply``) and the use cases."""

from __future__ import annotations

from datetime import datetime

from bot.domain.entities import Grant, Request
from bot.domain.lifecycle import GrantState, RequestState, check_grant_transition, check_request_transition
from bot.services.ports import Repository


def move_request(request: Request, target: RequestState, *, now: datetime) -> None:
    check_request_transition(RequestState(request.state), target)
    request.state = target
    request.touch(now=now)


def move_grant(grant: Grant, target: GrantState) -> None:
    check_grant_transition(GrantState(grant.state), target)
    grant.state = target


def mark_applied(
    repo: Repository, request_id: int, *, quota_after: int, effect: int, now: datetime, detail_prefix: str = ""
) -> None:
    """The request's change is in the cluster: applied, ``quota_after - effect -> quota_after``, and its
    grant (if any) runs its full duration from now, when the GPUs became available."""
    request = repo.request(request_id)
    assert request is not None
    move_request(request, RequestState.APPLIED, now=now)
    request.applied_at, request.apply_lease_until = now, None
    request.applied_from, request.applied_to = quota_after - effect, quota_after
    grant = repo.grant_of(request_id)
    if grant is not None:
        grant.starts_at, grant.ends_at = now, now + (grant.ends_at - grant.starts_at)
    repo.record(
        at=now,
        action="request_applied",
        namespace=request.namespace,
        request_id=request_id,
        before={"quota_gpus": request.applied_from},
        after={"quota_gpus": request.applied_to},
        detail=(f"shift from {request.source_namespace}: " if request.source_namespace else "")
        + ("permanent" if request.permanent or grant is None else f"until {grant.ends_at:%Y-%m-%d %H:%M} UTC"),
    )
