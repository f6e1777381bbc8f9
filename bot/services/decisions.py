"""Decisions: approve (after a confirmation, for a permanent or large change), deny.

All of a decision in one place: the checks, the record (with its recheck against the quota as it is
now), the namespace's critical section in which the last approval of a change is recorded and
applied from one read, what the thread and the requester are told, and the outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial

from bot.clock import Clock
from bot.domain.commands import format_request_id
from bot.domain.entities import Request
from bot.domain.failure_reasons import FailureReason, PermanentBelowZero, RefusedWhenApproved
from bot.domain.lifecycle import RequestKind, RequestState, Verdict
from bot.domain.policy import (
    Policy,
    needs_confirmation,
)
from bot.domain.quota import QuotaScope, change_cost, change_problem, desired_gpus
from bot.errors import GpuQuotaError
from bot.logs import request_context
from bot.observability import DECISIONS
from bot.services.access import Access
from bot.services.announce import Announcer, Outgoing
from bot.services.changes import ChangeApplier
from bot.services.effects import record_effect, source_problem
from bot.services.failures import FailurePath, reason_of
from bot.services.messages import ApprovedBy, DeniedBy, DeniedToRequester
from bot.services.outcomes import Confirmation, Decided, Decision
from bot.services.ports import Repository, Transactions
from bot.services.pricing import Pricer
from bot.services.quota_sync import QuotaRead, QuotaSync, SectionNotEntered
from bot.services.refusals import DecidedBefore, NotAnApprover, OwnRequest, QuotaUnreadable, Reading, Refused, TeamGone
from bot.services.request_rows import move_request
from bot.services.requests import already_decided, check_reason_length, delta_now, load_request, pending

log = logging.getLogger(__name__)


class Decisions:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        access: Access,
        sync: QuotaSync,
        applier: ChangeApplier,
        failures: FailurePath,
        announcer: Announcer,
        clock: Clock,
        pricer: Pricer,
        homes: Callable[[Sequence[str]], object] = lambda users: None,
    ) -> None:
        """``pricer`` prices the change shown in the confirmation form; ``homes`` re-publishes people's
        App Home tabs (``HomeService.publish_all``): the decider's and the requester's, once decided."""
        self._policy = policy
        self._db = database
        self._access = access
        self._sync = sync
        self._applier = applier
        self._failures = failures
        self._announce = announcer
        self._clock = clock
        self._pricer = pricer
        self._homes = homes

    def approve_or_confirm(self, *, user: str, request_id: int, reason: str = "") -> Confirmation | Decided:
        """An approval by button or typed in the thread: the confirmation an approver must see first,
        or else the approval decided at once (``decide``'s answer), from one read of the request.

        A permanent or large change (``approvals.large_change``) is approved through a form that
        shows the change against the quota as it is now; nothing is recorded until the form is
        submitted, which calls ``decide``.
        """
        check_reason_length(reason)
        with request_context(format_request_id(request_id)):
            request = load_request(self._db, request_id)
            confirmation = self._confirmation(user, request)
            if confirmation is not None:
                return confirmation
            return self._decide(user, request_id, Verdict.APPROVE, reason.strip(), loaded=request)

    def check_deniable(self, *, user: str, request_id: int) -> None:
        """Refuse at the Deny click whom submitting the deny form would refuse, so nobody types a reason
        for nothing; ``decide`` checks again when the form is submitted (the right may be gone by then)."""
        with request_context(format_request_id(request_id)):
            request = load_request(self._db, request_id)
            self._check_decider(user, request, Verdict.DENY)
            check_first_decision(request, user)

    def _check_decider(self, user: str, request: Request, verdict: Verdict) -> None:
        """A UserError unless ``user`` may decide ``request`` now: still pending, not their own, and a
        decider of its team (of both teams' side, for a shift)."""
        if request.state != RequestState.PENDING:
            raise Refused(already_decided(request))
        if request.requester_id == user:
            raise Refused(OwnRequest(request.id, verdict))
        if request.kind == RequestKind.SHIFT:
            self._check_shift_decider(user, request, verdict)
            return
        team = self._policy.teams.get(request.team)
        if team is None or not self._access.may_decide(user, team):
            raise Refused(NotAnApprover(team.label if team else request.team, request.id))

    def _confirmation(self, user: str, request: Request) -> Confirmation | None:
        request_id = request.id
        self._check_decider(user, request, Verdict.APPROVE)
        if request.kind == RequestKind.SHIFT:
            return None  # the card already shows both sides against the quotas as asked
        team = self._policy.teams[request.team]  # a request of a team the policy lost was refused above
        if not needs_confirmation(team, delta=request.delta, permanent=request.permanent):
            return None
        check_first_decision(request, user)
        try:
            snapshot = self._sync.current(request.scope)
        except GpuQuotaError as error:
            raise Refused(QuotaUnreadable(request.namespace, str(error), Reading.CONFIRMATION)) from error
        current = snapshot.hard if snapshot else self._policy.default_quota(request.namespace, resource=request.resource)
        delta = delta_now(request, current)
        price = self._pricer.price(request.namespace, request.resource)
        duration = timedelta(seconds=request.duration_seconds) if request.duration_seconds is not None else None
        large = team.approvals.large_change
        return Confirmation(
            request_id=request_id,
            namespace=request.namespace,
            team_label=team.label,
            requester_id=request.requester_id,
            delta=delta,
            duration=duration,
            before=current,
            after=current + delta,
            monthly_cost=change_cost(gpus=delta, duration=None, price_per_gpu_hour=price.per_gpu_hour),
            grant_cost=change_cost(gpus=delta, duration=duration, price_per_gpu_hour=price.per_gpu_hour) if duration else None,
            price=price,
            currency=self._policy.pricing.currency,
            approvals=len(request.approvals),
            approvals_required=request.approvals_required,
            large_above=large.above_gpus if large and abs(delta) > large.above_gpus else None,
        )

    def decide(self, *, user: str, request_id: int, verdict: Verdict, reason: str = "") -> Decided:
        """Record an approval or a denial (with the denier's reason, if given), apply what it completes."""
        check_reason_length(reason)
        with request_context(format_request_id(request_id)):
            return self._decide(user, request_id, verdict, reason.strip())

    def _decide(self, user: str, request_id: int, verdict: Verdict, reason: str, *, loaded: Request | None = None) -> Decided:
        """``loaded``: the request as the caller just read it (its checks are repeated in the transaction)."""
        request = loaded or load_request(self._db, request_id)
        self._check_decider(user, request, verdict)
        # Read only when this approval may complete the request: its limits are checked against now.
        completes = verdict == Verdict.APPROVE and len(request.approvals) + 1 >= request.approvals_required
        # A shift's limit that can break by now is the source's: it must still hold the GPUs it gives.
        # A change's quota is read where it is written, in its namespace's critical section (below).
        source = request.source_scope
        current = self._current_quota(source) if completes and source is not None else None
        out = self._announce.outgoing()  # what the decision says: recorded with it, delivered after the apply

        record = partial(self._record, out=out, user=user, request_id=request_id, verdict=verdict, reason=reason)
        if not (completes and request.kind == RequestKind.CHANGE):
            record = partial(record, current=current)

        state: RequestState | None = None
        if completes and request.kind == RequestKind.CHANGE:
            # The quota first: recorded, rechecked and written from one read; "Approved by" and the rest follow.
            row, state = self._approve_and_apply(request.scope, record, out)
        else:
            row = self._db.run(record)
        DECISIONS.labels(verdict=str(verdict)).inc()
        if row.state == RequestState.APPROVED and state is None:
            # A shift or an extension: the quota first; "Approved by" (recorded before the outcome) goes with it.
            state = self._applier.apply(request_id, leased=row, out=out)
        out.deliver()  # once: what the decision and the apply said
        # Feedback at once for both people: the decided request leaves the decider's tab, the requester's
        # shows its state (the home_tabs job brings the others' tabs along later).
        self._homes([user, request.requester_id])
        if verdict == Verdict.DENY:
            decision = Decision.DENIED
        elif row.state == RequestState.APPROVED:
            decision = Decision.COMPLETED
        elif row.state == RequestState.FAILED:
            decision = Decision.REFUSED
        else:
            decision = Decision.COUNTED
        return Decided(
            request_id, decision, state or RequestState(row.state), len(row.approvals), row.approvals_required, row.failure_reason
        )

    def _record(
        self, repo: Repository, current: int | None, *, out: Outgoing, user: str, request_id: int, verdict: Verdict, reason: str
    ) -> Request:
        """The decision in its transaction, its checks repeated on the row as it is now; the last approval is
        rechecked against ``current`` (the quota now; None: by the database) and its effect recorded."""
        now = self._clock.now()
        row = pending(repo, request_id)
        if row.requester_id == user:
            raise Refused(OwnRequest(request_id, verdict))
        check_first_decision(row, user)
        if row.kind == RequestKind.SHIFT:
            # Again on the approvals as they are now: another approval may have landed since the check above.
            self._check_shift_decider(user, row, verdict, fresh=False)
        repo.add_decision(row, user_id=user, verdict=verdict, decided_at=now)
        row.touch(now=now)  # a concurrent decision on this request must now re-read
        repo.record(
            at=now, actor=user, action=f"request_{verdict}d", namespace=row.namespace, request_id=request_id, detail=reason
        )
        if verdict == Verdict.DENY:
            move_request(row, RequestState.DENIED, now=now)
            row.decided_at = now
            self._tell_denial(repo, out, row, user, reason)
            return row
        if len(row.approvals) >= row.approvals_required:
            move_request(row, RequestState.APPROVED, now=now)
            row.decided_at = now
        self._tell_approval(repo, out, row, user)
        if row.state == RequestState.APPROVED:
            problem = self._recheck(repo, row, current)
            if problem:
                self._failures.fail_in(repo, out, row, problem, recorded=False)
            else:
                record_effect(repo, row, now=now)
        return row

    def _approve_and_apply(
        self, scope: QuotaScope, approve: Callable[[Repository, int | None], Request], out: Outgoing
    ) -> tuple[Request, RequestState | None]:
        """Record the last approval of a change to ``scope`` and apply it, from one read of the quota.

        In the scope's critical section: the quota is read; ``approve(repo, hard)`` records the
        approval in a transaction, rechecked against that read (``hard`` None when there is no quota or
        it could not be read: the recheck goes by the database, and the apply reads for itself); the
        write is planned in the same transaction and, if the row is approved, made next from the same
        read, its resourceVersion the write's precondition. When the scope's cluster stops answering
        while this waits for the section, the approval is recorded without it (``_approve_to_wait``).
        Returns the row and, when it was approved, the state the apply left it in.
        """
        try:
            with self._sync.exclusive(scope):
                try:
                    read: QuotaRead | None = self._sync.read_locked(scope)
                except GpuQuotaError as error:
                    log.warning("could not read the quota of %s to check the approval: %s", scope.namespace, error)
                    read = None

                def record(repo: Repository) -> tuple[Request, QuotaRead | None]:
                    row = approve(repo, read.hard if read else None)
                    if read is None or row.state != RequestState.APPROVED:
                        return row, read
                    return row, self._sync.plan_in(repo, scope, read)

                row, planned = self._db.run(record)
                if row.state != RequestState.APPROVED:
                    return row, None
                return row, self._applier.apply_approved(row, out, read=planned)
        except SectionNotEntered as error:
            return self._approve_to_wait(approve, out, error)

    def _approve_to_wait(
        self, approve: Callable[[Repository, int | None], Request], out: Outgoing, error: SectionNotEntered
    ) -> tuple[Request, RequestState | None]:
        """The last approval of a change whose cluster stopped answering while it waited for the scope's
        critical section: recorded without it, rechecked by the database (as when the quota cannot be read),
        and its apply left waiting for the cluster, without holding a thread: the reconcile applies it."""
        row = self._db.run(lambda repo: approve(repo, None))
        if row.state != RequestState.APPROVED:
            return row, None
        return row, self._failures.wait(row.id, reason_of(error), out)

    def _check_shift_decider(self, user: str, request: Request, verdict: Verdict, *, fresh: bool = True) -> None:
        source, target = self._policy.teams.get(request.source_team or ""), self._policy.teams.get(request.team)
        if source is None or target is None:
            raise Refused(TeamGone(request.id))
        earlier = [d.user_id for d in request.approvals] if verdict == Verdict.APPROVE else []
        problem = self._access.shift_decision_problem(user, (source, target), approved_by=earlier, fresh=fresh)
        if problem:
            raise Refused(problem)

    def _tell_approval(self, repo: Repository, out: Outgoing, row: Request, user: str) -> None:
        out.thread(repo, row.id, ApprovedBy(user, len(row.approvals), row.approvals_required))
        out.refresh(repo, row.id)

    def _tell_denial(self, repo: Repository, out: Outgoing, row: Request, user: str, reason: str) -> None:
        out.thread(repo, row.id, DeniedBy(user, reason))
        out.direct(repo, row.requester_id, DeniedToRequester(row.id, user, reason))
        out.refresh(repo, row.id)

    def _current_quota(self, scope: QuotaScope) -> int | None:
        """The quota in the cluster now; None when it cannot be read (the apply checks again anyway)."""
        try:
            snapshot = self._sync.current(scope)
        except GpuQuotaError as error:
            log.warning("could not read the quota of %s to check the approval: %s", scope.namespace, error)
            return None
        return snapshot.hard if snapshot else None

    def _recheck(self, repo: Repository, row: Request, current: int | None) -> FailureReason | None:
        """The before -> after again, from the quota as it is when the last approval lands: the
        shown before -> after is updated (an absolute amount is re-derived), or the reason it is refused."""
        if row.kind == RequestKind.SHIFT:
            problem = source_problem(repo, row, current)
            return RefusedWhenApproved(problem) if problem else None
        if row.kind != RequestKind.CHANGE:
            return None
        namespace = repo.namespace(row.namespace, row.resource)
        assert namespace is not None, "a request's namespace is recorded when it is submitted"
        if current is None:
            current = desired_gpus(namespace.base_gpus, repo.active_grant_total(row.namespace, row.resource))
        row.delta = delta_now(row, current)
        row.hard_before = current
        max_gpus = self._policy.max_gpus(row.namespace, resource=row.resource)
        problem = change_problem(before=current, delta=row.delta, max_gpus=max_gpus)
        if problem is None and row.permanent and namespace.base_gpus + row.delta < 0:
            # Running grants are not the base: a permanent decrease cannot take more than the base.
            problem = PermanentBelowZero(namespace.base_gpus, -row.delta)
        return RefusedWhenApproved(problem) if problem else None


def check_first_decision(request: Request, user: str) -> None:
    """A UserError when ``user`` already approved or denied ``request``: one decision per person."""
    earlier = next((d for d in request.decisions if d.user_id == user), None)
    if earlier is not None:
        raise Refused(DecidedBefore(request.id, Verdict(earlier.verdict)))
