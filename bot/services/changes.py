"""Applying decided requests to the cluster, and ending grants.

Approval records the request's effect in the database (a new grant, or a moved base) in the same
transaction that marks it approved, and gives the request an apply lease; this module then makes the
cluster match, inside the namespace's critical section (``QuotaSync.exclusive``): the limits are
checked again against the quota as it is now, the write is made, and the request is marked applied
with the before -> after it actually made.

What can go wrong, and what happens:

- a 409 from someone outside the bot: retried in the critical section with jittered backoff;
- a temporary fault (5xx, timeout, refused connection): the request stays approved, the thread says
  "waiting for the cluster" once, and the reconcile retries once the lease (the backoff) lapsed;
- a permanent refusal (403, 422, the namespace gone, a limit broken now): the request fails, its
  effect is taken back and the namespace converged to base + active grants in the same critical
  section, and the thread and the requester get the reason. An admin can retry it.

A worker that dies mid-apply leaves its lease to lapse (``APPLY_LEASE``); the next reconcile tick
resumes the apply. Applying is idempotent: the value written is derived from stored state.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.domain.audit_details import Extends, GrantEnding, to_text
from bot.domain.commands import format_request_id
from bot.domain.entities import Grant, Request
from bot.domain.failure_reasons import FailureReason, GrantAlreadyEnded, PermanentBelowZero
from bot.domain.lifecycle import GrantState, RequestKind, RequestState
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope, change_problem
from bot.errors import GpuQuotaError, TemporaryError
from bot.logs import request_context
from bot.observability import APPLIES, APPLY_SECONDS, timed
from bot.services.announce import Announcer, Outgoing
from bot.services.effects import APPLY_LEASE, return_source_in
from bot.services.failures import FailurePath, reason_of
from bot.services.messages import (
    Applied,
    AppliedToRequester,
    Extended,
    ExtendedToRequester,
    ExtensionApplied,
    GrantEnded,
    GrantEndedToRequester,
    GrantNotPutBack,
)
from bot.services.ports import Repository, Transactions
from bot.services.quota_sync import QuotaRead, QuotaSync, SectionNotEntered, SyncOutcome
from bot.services.request_rows import mark_applied, move_grant, move_request
from bot.services.shift_apply import ShiftApplier

log = logging.getLogger(__name__)


class ChangeApplier:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        sync: QuotaSync,
        announcer: Announcer,
        clock: Clock,
        failures: FailurePath,
    ) -> None:
        self._policy = policy
        self._db = database
        self._sync = sync
        self._announce = announcer
        self._clock = clock
        self._failures = failures
        self._shifts = ShiftApplier(
            policy=policy, database=database, sync=sync, announcer=announcer, clock=clock, failures=self._failures
        )

    # --- requests ----------------------------------------------------------------------------

    def apply(
        self, request_id: int, *, resume: bool = False, leased: Request | None = None, out: Outgoing | None = None
    ) -> RequestState:
        """Apply an approved request; returns its state (applied, failed, or still approved while the
        cluster is unreachable).

        The quota is written first; the outcome is recorded for the thread and the requester in the
        transaction that records it, and delivered after. ``resume``: the reconcile takes over only a
        lapsed lease. ``leased``: the row as the transaction that approved it left it (``record_effect``
        took the lease there), so the apply goes straight to the namespace's critical section. ``out``:
        the outbox of the caller's use case (which delivers it once, what it recorded before with what
        the apply records); None: this apply is the use case, and delivers its own.
        """
        own = out is None
        out = out or self._announce.outgoing()
        with request_context(format_request_id(request_id)), timed(APPLY_SECONDS):
            state = self._apply(request_id, out, resume=resume, leased=leased)
            if own:
                out.deliver()
        APPLIES.labels(outcome=str(state)).inc()
        return state

    def apply_approved(self, row: Request, out: Outgoing, *, read: QuotaRead | None) -> RequestState:
        """Apply a change whose approval the caller just recorded inside ``QuotaSync.exclusive(row.namespace)``,
        still in that section: ``row`` as that transaction left it, ``read`` the quota it was rechecked
        against (with the write planned in the same transaction: ``QuotaSync.plan_in``). Records in
        ``out``; the caller delivers it."""
        with request_context(format_request_id(row.id)), timed(APPLY_SECONDS):
            state = self._apply_locked(row.id, row.scope, out, lease=None, approved=row, read=read)
        APPLIES.labels(outcome=str(state)).inc()
        return state

    def _apply(self, request_id: int, out: Outgoing, *, resume: bool, leased: Request | None = None) -> RequestState:
        request = leased if leased is not None else self._db.run(lambda repo: self._claim(repo, request_id, resume=resume))
        if request is None:
            return RequestState.APPROVED
        if request.state != RequestState.APPROVED:
            return RequestState(request.state)
        if request.kind == RequestKind.EXTENSION:
            return self._apply_extension(request_id, out)
        # A resumed apply gives way if, while it queued for the namespace, another worker renewed the lease.
        lease = request.apply_lease_until if resume else None
        if request.kind == RequestKind.SHIFT:
            return self._shifts.apply(request_id, out, lease=lease)
        try:
            with self._sync.exclusive(request.scope):
                return self._apply_locked(request_id, request.scope, out, lease=lease)
        except SectionNotEntered as error:  # its cluster stopped answering while this waited for the namespace
            return self._failures.wait(request_id, reason_of(error), out)

    def _claim(self, repo: Repository, request_id: int, *, resume: bool) -> Request | None:
        """Take (or renew) the apply lease; None when there is nothing to take (no such request, or
        another live worker holds the lease and ``resume``)."""
        now = self._clock.now()
        request = repo.request(request_id)
        if request is None:
            return None
        if request.state != RequestState.APPROVED:
            return request
        if resume and request.apply_lease_until is not None and request.apply_lease_until > now:
            return None
        request.apply_lease_until = now + APPLY_LEASE
        request.touch(now=now)
        return request

    def _apply_locked(
        self,
        request_id: int,
        scope: QuotaScope,
        out: Outgoing,
        *,
        lease: datetime | None,
        approved: Request | None = None,
        read: QuotaRead | None = None,
    ) -> RequestState:
        """``approved``: the row as the approval left it in this critical section (nothing to read again);
        ``read``: the quota as read in it."""
        request = approved or self._db.run(lambda repo: repo.request(request_id))
        assert request is not None
        if request.state != RequestState.APPROVED:
            return RequestState(request.state)  # a worker before us in the queue finished it
        if lease is not None and request.apply_lease_until != lease:
            return RequestState.APPROVED  # its first worker is still on it (it is waiting out a fault)
        effect, permanent = request.delta, request.permanent
        max_gpus = self._policy.max_gpus(scope.namespace, resource=scope.resource)

        def check(base: int, grants: int) -> FailureReason | None:
            """The limits against the quota as it is now, with this request's change in it."""
            if permanent and base < 0:
                return PermanentBelowZero(base - effect, -effect)
            total = base + grants
            return change_problem(before=total - effect, delta=effect, max_gpus=max_gpus)

        try:
            outcome = self._sync.converge_locked(scope, request_id=request_id, check=check, read=read)
        except TemporaryError as error:
            return self._failures.wait(request_id, reason_of(error), out)
        except GpuQuotaError as error:  # refused for good: 403, 422, the namespace gone, a limit broken now
            return self._failures.refuse(scope, request_id, reason_of(error), out)

        def applied(repo: Repository) -> None:
            mark_applied(repo, request_id, quota_after=outcome.after, effect=effect, now=self._clock.now())
            self._tell_applied(repo, out, request_id, outcome)

        self._db.run(applied)
        return RequestState.APPLIED

    def _tell_applied(self, repo: Repository, out: Outgoing, request_id: int, outcome: SyncOutcome) -> None:
        request = repo.request(request_id)
        assert request is not None
        card = self._announce.card_of(repo, request)
        temporary = card.grant_ends_at is not None and not card.permanent
        ends_at = card.grant_ends_at if temporary else None
        applied = Applied(
            card.namespace,
            outcome.quota_name,
            card.hard_before,
            card.hard_after,
            ends_at,
            outcome.drift,
            outcome.used,
            card.resource,
            queue.flavor if (queue := self._policy.cluster_queue(card.namespace, card.resource)) else None,
        )
        out.thread(repo, request_id, applied)
        told = AppliedToRequester(request_id, card.namespace, card.hard_after, ends_at, card.resource)
        out.direct(repo, card.requester_id, told)
        out.refresh(repo, request_id)

    def _apply_extension(self, request_id: int, out: Outgoing) -> RequestState:
        """An extension moves the end of a grant: nothing to write in the cluster."""

        def extend(repo: Repository) -> FailureReason | None:
            now = self._clock.now()
            request = repo.request(request_id)
            assert request is not None and request.extends_request_id is not None
            grant = repo.grant_of(request.extends_request_id)
            if grant is None or grant.state != GrantState.ACTIVE:
                problem = GrantAlreadyEnded(request.extends_request_id)
                self._failures.fail_in(repo, out, request, problem)
                return problem
            before = grant.ends_at
            grant.ends_at = max(grant.ends_at, now) + timedelta(seconds=request.duration_seconds or 0)
            grant.reminded_at = None
            move_request(request, RequestState.APPLIED, now=now)
            request.applied_at, request.apply_lease_until = now, None
            repo.record(
                at=now,
                action="grant_extended",
                namespace=request.namespace,
                request_id=request_id,
                before={"ends_at": before.isoformat()},
                after={"ends_at": grant.ends_at.isoformat()},
                detail=to_text(Extends(request.extends_request_id)),
            )
            self._tell_extended(repo, out, request)
            return None

        problem = self._db.run(extend)
        return RequestState.FAILED if problem else RequestState.APPLIED

    def _tell_extended(self, repo: Repository, out: Outgoing, request: Request) -> None:
        card = self._announce.card_of(repo, request)
        assert card.extends_id is not None and card.grant_ends_at is not None
        out.thread(repo, request.id, ExtensionApplied(card.extends_id, card.grant_ends_at))
        out.thread(repo, card.extends_id, Extended(request.id, card.extends_id, card.grant_ends_at))
        out.direct(repo, card.requester_id, ExtendedToRequester(request.id, card.extends_id, card.grant_ends_at))
        out.refresh(repo, request.id)
        out.refresh(repo, card.extends_id)

    def give_back_source(self, request_id: int, *, actor: str) -> bool:
        """A failed shift whose source was lowered: give the source its GPUs back (False: nothing to give)."""
        return self._shifts.give_back(request_id, actor=actor)

    # --- grants ------------------------------------------------------------------------------

    def end_grant(self, grant_id: int, *, reason: str, actor: str) -> GrantState | None:
        """Stop counting a grant and put the quota back.

        Returns ENDED when the quota is back, ENDING when putting it back failed (the reconcile job
        retries), None when the grant was not active.
        """

        def start(repo: Repository) -> bool:
            now = self._clock.now()
            grant = repo.grant(grant_id)
            if grant is None or grant.state != GrantState.ACTIVE:
                return False
            move_grant(grant, GrantState.ENDING)
            grant.end_reason, grant.ended_by = reason, actor
            repo.record(
                at=now,
                actor=actor,
                action=f"grant_{reason}",
                namespace=grant.namespace,
                request_id=grant.request_id,
                detail=to_text(GrantEnding(grant.gpus, grant.ends_at)),
            )
            return True

        if not self._db.run(start):
            return None
        return GrantState.ENDED if self.finish_grant(grant_id, first_attempt=True) else GrantState.ENDING

    def finish_grant(self, grant_id: int, *, first_attempt: bool = False) -> bool:
        """Converge the namespace of an ending grant; True once the quota is back."""
        grant = self._db.run(lambda repo: repo.grant(grant_id))
        if grant is None or grant.state != GrantState.ENDING:
            return False
        with request_context(format_request_id(grant.request_id)):
            return self._finish_grant(grant, first_attempt=first_attempt)

    def _finish_grant(self, grant: Grant, *, first_attempt: bool) -> bool:
        grant_id = grant.id
        try:
            outcome = self._sync.converge(grant.scope, request_id=grant.request_id)
        except GpuQuotaError as error:
            log.error("could not put back the quota of %s: %s", format_request_id(grant.request_id), error)
            if first_attempt:
                self._announce.thread(grant.request_id, GrantNotPutBack(reason_of(error)))
            return False

        out = self._announce.outgoing()

        def finish(repo: Repository) -> bool:
            """The grant ends (and is told so); a temporary shift's source gets its GPUs back in the same transaction."""
            row = repo.grant(grant_id)
            assert row is not None
            move_grant(row, GrantState.ENDED)
            row.ended_at = self._clock.now()
            request = repo.request(row.request_id)
            assert request is not None
            self._tell_ended(repo, out, row, request, outcome)
            return request.kind == RequestKind.SHIFT and return_source_in(repo, request, now=row.ended_at)

        source_back = self._db.run(finish)
        out.deliver()
        if source_back:
            self._shifts.report_returned(grant.request_id)
        return True

    def _tell_ended(self, repo: Repository, out: Outgoing, grant: Grant, request: Request, outcome: SyncOutcome) -> None:
        card = self._announce.card_of(repo, request)
        released_by = None if grant.end_reason == "expired" else grant.ended_by or "?"
        ended = GrantEnded(grant.namespace, released_by, outcome.before, outcome.after, outcome.used, grant.resource)
        out.thread(repo, grant.request_id, ended)
        if grant.ended_by != card.requester_id:
            told = GrantEndedToRequester(
                grant.request_id, grant.namespace, released_by, outcome.before, outcome.after, grant.resource
            )
            out.direct(repo, card.requester_id, told)
        out.refresh(repo, grant.request_id)
