"""A request's life after the decision: cancel (while pending), release (a grant ended early, or a failed
shift's source given back), retry (an admin re-applies a failed request). Grants that reach their end
are ended by the reconcile (``ChangeApplier.end_grant``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.clock import Clock
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg
from bot.domain.policy import (
    Policy,
)
from bot.services.access import Access
from bot.services.announce import Announcer
from bot.services.changes import ChangeApplier
from bot.services.effects import record_effect, source_problem
from bot.services.messages import CancelledBy, CancelledToRequester, RetryBy
from bot.services.outcomes import Cancelled, Release, Released, Retried
from bot.services.ports import Repository, Transactions
from bot.services.refusals import (
    AdminsRetry,
    GrantAlreadyEnded,
    NoActiveGrant,
    NoSuchRequest,
    NotFailed,
    NothingToGiveBack,
    NotRetried,
    NotYoursToCancel,
    NotYoursToRelease,
    Refused,
)
from bot.services.request_rows import move_request
from bot.services.requests import load_request, pending

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


class Lifecycle:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        access: Access,
        applier: ChangeApplier,
        announcer: Announcer,
        clock: Clock,
    ) -> None:
        self._policy = policy
        self._db = database
        self._access = access
        self._applier = applier
        self._announce = announcer
        self._clock = clock

    def cancel(self, *, user: str, request_id: int) -> Cancelled:
        request = load_request(self._db, request_id)
        if request.requester_id != user and not self._access.is_admin(user):
            raise Refused(NotYoursToCancel(request_id))

        out = self._announce.outgoing()

        def cancel(repo: Repository) -> None:
            now = self._clock.now()
            row = pending(repo, request_id)
            move_request(row, RequestState.CANCELLED, now=now)
            row.decided_at = now
            repo.record(at=now, actor=user, action="request_cancelled", namespace=row.namespace, request_id=request_id)
            out.thread(repo, request_id, CancelledBy(user))
            if user != row.requester_id:
                out.direct(repo, row.requester_id, CancelledToRequester(request_id, user))
            out.refresh(repo, request_id)

        self._db.run(cancel)
        out.deliver()
        return Cancelled(request_id)

    def release(self, *, user: str, request_id: int) -> Released:
        """End a grant early and give the GPUs back."""
        request = load_request(self._db, request_id)
        teams = [t for name in (request.team, request.source_team) if name and (t := self._policy.teams.get(name))]
        allowed = request.requester_id == user or any(self._access.may_decide(user, team) for team in teams)
        if not allowed:
            raise Refused(NotYoursToRelease(request_id))
        if request.kind == RequestKind.SHIFT and request.state == RequestState.FAILED:
            # The target side failed and nobody will retry it: the source gets back what it gave.
            if not self._applier.give_back_source(request_id, actor=user):
                raise Refused(NothingToGiveBack(request_id))
            return Released(request_id, Release.SOURCE_GIVEN_BACK, request.delta, request.namespace, request.source_namespace)
        grant = self._db.run(lambda repo: repo.grant_of(request_id))
        if grant is None or grant.state != GrantState.ACTIVE:
            raise Refused(NoActiveGrant(request_id))
        ended = self._applier.end_grant(grant.id, reason="released", actor=user)
        if ended is None:
            raise Refused(GrantAlreadyEnded(request_id))
        if ended == GrantState.ENDING:
            return Released(request_id, Release.PENDING, abs(grant.gpus), request.namespace, request.source_namespace)
        if request.kind == RequestKind.SHIFT:  # the target gives them back; the source gets them
            return Released(request_id, Release.SHIFT_RETURNED, grant.gpus, request.namespace, request.source_namespace)
        return Released(request_id, Release.RETURNED, abs(grant.gpus), request.namespace)

    def retry(self, *, user: str, request_id: int) -> Retried:
        """An admin re-applies a failed request (after fixing what made it fail)."""
        if not self._access.is_admin(user):
            raise Refused(AdminsRetry())

        out = self._announce.outgoing()

        def reapprove(repo: Repository) -> None:
            now = self._clock.now()
            row = repo.request(request_id)
            if row is None:
                raise Refused(NoSuchRequest(request_id))
            if row.state != RequestState.FAILED:
                raise Refused(NotFailed(request_id, RequestState(row.state)))
            if row.kind == RequestKind.SHIFT and row.source_state != SourceLeg.APPLIED:
                problem = source_problem(repo, row, None)  # before the source leg is recorded: never a negative base
                if problem:
                    raise Refused(NotRetried(problem))
            move_request(row, RequestState.APPROVED, now=now)
            row.failure_reason = None
            row.decided_at = now
            record_effect(repo, row, now=now)
            repo.record(at=now, actor=user, action="request_retried", namespace=row.namespace, request_id=request_id)
            out.thread(repo, request_id, RetryBy(user))

        self._db.run(reapprove)
        out.deliver()
        state = self._applier.apply(request_id)
        return Retried(request_id, state)
