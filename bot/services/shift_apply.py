"""Applying a shift: GPUs moved from a source namespace to a target namespace, in a safe order.

A shift is one request with two legs. Approval records only the source leg (the source's base goes
down by the shifted GPUs). The apply then works inside quota_sync's one-writer-per-namespace
critical sections, one namespace at a time:

1. the source is lowered (``QuotaSync.exclusive(source)``); what it actually gave up is the
   desired quota before minus after (never more than it had);
2. in the transaction that records that, the target leg is recorded with exactly that many GPUs (a
   grant for a temporary shift, a higher base for a permanent one), so no sweep can raise the target
   before the source is down;
3. the target is raised (``QuotaSync.exclusive(target)``).

A temporary fault keeps the request approved and the reconcile resumes it from the leg it reached.
A refusal of the source leg fails the shift with nothing changed. A refusal of the target leg fails
the shift with the source left lowered, says so, and an admin's Retry re-applies only the target
leg. A temporary shift ends through its target grant: the target is lowered first (the grant's
revert), then, in the transaction that ends the grant, the source's base gets its GPUs back and the
source is converged (``return_source``). Every step is in the audit trail under the one request id.

Must not: write a quota outside ``QuotaSync`` or touch the target before the source leg is applied.
"""

from __future__ import annotations

import logging
from datetime import datetime

from bot.clock import Clock
from bot.domain.audit_details import SourceGave, to_text
from bot.domain.commands import format_request_id
from bot.domain.entities import Request
from bot.domain.failure_reasons import FailureReason, LegNotWritten, SourceHasNone, SourceShort
from bot.domain.lifecycle import RequestState, SourceLeg
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope, change_problem, desired_gpus
from bot.errors import GpuQuotaError, TemporaryError
from bot.services.announce import Announcer, Outgoing
from bot.services.effects import record_target, return_source_in, shifted_gpus
from bot.services.failures import FailurePath, reason_of
from bot.services.messages import ShiftApplied, ShiftAppliedToRequester, SourceNotRaised, SourceReturned
from bot.services.ports import Repository, Transactions
from bot.services.quota_sync import QuotaSync, SectionNotEntered, SyncOutcome
from bot.services.request_rows import mark_applied

log = logging.getLogger(__name__)


class ShiftApplier:
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

    def apply(self, request_id: int, out: Outgoing, *, lease: datetime | None) -> RequestState:
        """Apply an approved shift from the leg it reached: source, then target; returns its state.
        What it says is recorded in ``out`` with the state change it tells of."""
        request = self._db.run(lambda repo: repo.request(request_id))
        assert request is not None and request.source_namespace is not None
        try:
            source_outcome = None
            if request.source_state == SourceLeg.RECORDED:
                source_scope = QuotaScope(request.source_namespace, request.resource)
                with self._sync.exclusive(source_scope):
                    result = self._source_leg(request_id, source_scope, out, lease)
                if isinstance(result, RequestState):
                    return result
                source_outcome = result  # None: a worker before us in the queue applied the source leg
            with self._sync.exclusive(request.scope):
                return self._target_leg(request_id, request.scope, out, lease, source_outcome)
        except SectionNotEntered as error:  # a leg's cluster stopped answering while this waited: resumed from that leg
            return self._failures.wait(request_id, reason_of(error), out)

    def _current(self, repo: Repository, request_id: int, lease: datetime | None) -> Request | RequestState:
        """The request to apply, or the state it is settled in (by another worker)."""
        request = repo.request(request_id)
        assert request is not None
        if request.state != RequestState.APPROVED:
            return RequestState(request.state)
        if lease is not None and request.apply_lease_until != lease:
            return RequestState.APPROVED  # another worker holds it
        return request

    def _source_leg(
        self, request_id: int, scope: QuotaScope, out: Outgoing, lease: datetime | None
    ) -> SyncOutcome | RequestState | None:
        source = scope.namespace
        current = self._db.run(lambda repo: self._current(repo, request_id, lease))
        if isinstance(current, RequestState):
            return current
        if current.source_state != SourceLeg.RECORDED:
            return None  # applied while this worker waited for the namespace: never lowered (nor the target recorded) twice
        shifted = current.delta
        desired: dict[str, int] = {}

        def check(base: int, grants: int) -> FailureReason | None:
            """The source's own quota, as it is now, must cover the shift."""
            if base < 0:
                return SourceShort(source, base + shifted, shifted, own=True)
            desired["before"], desired["after"] = desired_gpus(base + shifted, grants), desired_gpus(base, grants)
            if desired["before"] == desired["after"]:
                return SourceHasNone(source)
            return None

        try:
            outcome = self._sync.converge_locked(scope, request_id=request_id, check=check)
        except TemporaryError as error:
            return self._failures.wait(request_id, reason_of(error), out)
        except GpuQuotaError as error:
            reason = LegNotWritten(source=True, namespace=source, cause=reason_of(error))
            return self._failures.refuse(scope, request_id, reason, out)
        self._db.run(lambda repo: self._source_applied(repo, request_id, desired["before"], desired["after"]))
        return outcome

    def _source_applied(self, repo: Repository, request_id: int, before: int, after: int) -> None:
        now = self._clock.now()
        request = repo.request(request_id)
        assert request is not None
        request.source_state, request.source_from, request.source_to = SourceLeg.APPLIED, before, after
        request.touch(now=now)
        repo.record(
            at=now,
            action="shift_source_applied",
            namespace=request.source_namespace,
            request_id=request_id,
            before={"quota_gpus": before},
            after={"quota_gpus": after},
            detail=to_text(SourceGave(before - after, request.namespace)),
        )
        record_target(repo, request, now=now)

    def _target_leg(
        self, request_id: int, scope: QuotaScope, out: Outgoing, lease: datetime | None, source: SyncOutcome | None
    ) -> RequestState:
        current = self._db.run(lambda repo: self._current(repo, request_id, lease))
        if isinstance(current, RequestState):
            return current
        target = scope.namespace
        given, max_gpus = shifted_gpus(current), self._policy.max_gpus(target, resource=scope.resource)

        def check(base: int, grants: int) -> FailureReason | None:
            return change_problem(before=base + grants - given, delta=given, max_gpus=max_gpus)

        try:
            outcome = self._sync.converge_locked(scope, request_id=request_id, check=check)
        except TemporaryError as error:
            return self._failures.wait(request_id, reason_of(error), out)
        except GpuQuotaError as error:
            reason = LegNotWritten(source=False, namespace=target, cause=reason_of(error))
            return self._failures.refuse(scope, request_id, reason, out)

        def applied(repo: Repository) -> None:
            mark_applied(repo, request_id, quota_after=outcome.after, effect=given, now=self._clock.now())
            self._tell_applied(repo, out, request_id, source)

        self._db.run(applied)
        return RequestState.APPLIED

    # --- telling people ----------------------------------------------------------------------------

    def _tell_applied(self, repo: Repository, out: Outgoing, request_id: int, source_outcome: SyncOutcome | None) -> None:
        """``source_outcome``: the source leg's write (None: an earlier attempt made it)."""
        request = repo.request(request_id)
        assert request is not None
        card = self._announce.card_of(repo, request)
        assert card.shift is not None and card.applied_from is not None and card.applied_to is not None
        source = card.shift
        ends_at = card.grant_ends_at if card.grant_ends_at is not None and not card.permanent else None
        used = source_outcome.used if source_outcome else None
        sides = (source.namespace, source.before, source.after, card.namespace, card.applied_from, card.applied_to)
        out.thread(repo, request_id, ShiftApplied(*sides, ends_at, used))
        out.direct(repo, card.requester_id, ShiftAppliedToRequester(*sides, ends_at, used, request_id))
        out.refresh(repo, request_id)

    def give_back(self, request_id: int, *, actor: str) -> bool:
        """A failed shift whose source was lowered: the source's base gets the GPUs back, then it is converged."""

        def back(repo: Repository) -> bool:
            request = repo.request(request_id)
            if request is None or request.state != RequestState.FAILED:
                return False
            return return_source_in(repo, request, now=self._clock.now(), actor=actor)

        if not self._db.run(back):
            return False
        self.report_returned(request_id)
        return True

    def report_returned(self, request_id: int) -> None:
        """After a temporary shift's end: converge the source (its GPUs are back in its base) and say so."""
        request = self._db.run(lambda repo: repo.request(request_id))
        assert request is not None and request.source_namespace is not None
        source = request.source_namespace
        try:
            outcome = self._sync.converge(QuotaScope(source, request.resource), request_id=request_id)
        except GpuQuotaError as error:  # the base is back; the sweep writes it once the cluster takes it
            log.error("could not give %s its GPUs back for %s yet: %s", source, format_request_id(request_id), error)
            self._announce.thread(request_id, SourceNotRaised(source, reason_of(error)))
            return
        self._announce.thread(request_id, SourceReturned(source, outcome.before, outcome.after))
        self._announce.refresh(request_id)
