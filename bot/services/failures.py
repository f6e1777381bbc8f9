"""When an apply cannot finish: a refusal fails the request, a temporary fault makes it wait.

One path for every applier (``changes`` for changes and extensions, ``shift_apply`` for each leg of
a shift, and whatever quota target comes next), called inside the namespace's critical section:

- refused for good (403, 422, the namespace gone, a limit broken now): in one transaction the
  request fails, its effect is taken back and the word for its thread and its requester is
  recorded; then the namespace is converged without it (``refuse``);
- a temporary fault (5xx, timeout, refused connection): the request stays approved, its lease backs
  off so that the reconcile resumes it, and the thread is told once (``wait``).

Must not: deliver the outbox (the use case delivers what it recorded, once).
"""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta, timezone

from bot.clock import Clock
from bot.domain.commands import format_request_id
from bot.domain.entities import Request
from bot.domain.failure_reasons import AsSaid, ClusterNotAnswering, FailureReason, SourceKeptLowered, to_text
from bot.domain.lifecycle import RequestKind, RequestState, SourceLeg
from bot.domain.quota import QuotaScope
from bot.errors import ClusterUnavailable, GpuQuotaError
from bot.services.announce import Announcer, Outgoing
from bot.services.effects import take_back_effect
from bot.services.messages import ApplyFailed, ApplyFailedToRequester, ShiftFailed, WaitingForCluster
from bot.services.ports import Action, ActionKind, ButtonLabel, Repository, Transactions
from bot.services.quota_sync import ChangeRefused, QuotaBusy, QuotaSync
from bot.services.request_rows import move_request

log = logging.getLogger(__name__)
# Waits after temporary faults: 1, 2, 4 s, then 5 s, the shortest reconcile interval, so that once
# the API server is back the apply lands on the next tick.
RETRY_FIRST = timedelta(seconds=1)
RETRY_CAP = timedelta(seconds=5)


def reason_of(error: GpuQuotaError) -> FailureReason:
    """Why a write was refused: the check's reason, or the error's words as said (the API server's)."""
    if isinstance(error, ChangeRefused | QuotaBusy):
        return error.reason
    if isinstance(error, ClusterUnavailable):
        return ClusterNotAnswering(error.cluster, error.since.astimezone(timezone.utc).isoformat(), error.cause)
    return AsSaid(str(error))


def fail_request(repo: Repository, request: Request, reason: FailureReason, *, now: datetime, recorded: bool = True) -> None:
    """Mark an approved request failed and take its change back out of the desired state (when its
    effect was ``recorded``: a request refused as it is approved never had one). A shift whose source
    leg is applied keeps it: the audit says so."""
    move_request(request, RequestState.FAILED, now=now)
    request.failure_reason, request.apply_lease_until = reason, None
    kept = request.kind == RequestKind.SHIFT and request.source_state == SourceLeg.APPLIED
    if recorded:
        take_back_effect(repo, request, now=now)
    detail = SourceKeptLowered(reason, request.source_from, request.source_to) if kept else reason
    repo.record(at=now, action="request_failed", namespace=request.namespace, request_id=request.id, detail=to_text(detail))


class FailurePath:
    def __init__(
        self,
        *,
        database: Transactions,
        sync: QuotaSync,
        announcer: Announcer,
        clock: Clock,
        rng: random.Random | None = None,
    ) -> None:
        self._db = database
        self._sync = sync
        self._announce = announcer
        self._clock = clock
        self._rng = rng or random.Random()

    def refuse(self, scope: QuotaScope, request_id: int, reason: FailureReason, out: Outgoing) -> RequestState:
        """The write to ``scope`` was refused for good: fail the request (told in ``out``), then, still
        in the critical section, converge the scope to base + active grants without its change."""

        def fail(repo: Repository) -> None:
            request = repo.request(request_id)
            assert request is not None
            self.fail_in(repo, out, request, reason)

        self._db.run(fail)
        try:
            self._sync.converge_locked(scope, request_id=request_id)
        except GpuQuotaError as error:  # the sweep and the next apply converge it later
            log.error("could not converge %s after %s failed: %s", scope.namespace, format_request_id(request_id), error)
        return RequestState.FAILED

    def fail_in(self, repo: Repository, out: Outgoing, request: Request, reason: FailureReason, *, recorded: bool = True) -> None:
        """In the caller's transaction: fail ``request`` and record the thread's and the requester's word of it.
        A shift refused as it is approved (``recorded`` False) never reached its legs: it is told like a change."""
        fail_request(repo, request, reason, now=self._clock.now(), recorded=recorded)
        log.error("applying %s failed: %s", format_request_id(request.id), reason)
        if request.kind == RequestKind.SHIFT and recorded:
            self._tell_shift_failed(repo, out, request, reason)
        else:
            self._tell_failed(repo, out, request, reason)

    def wait(self, request_id: int, reason: FailureReason, out: Outgoing) -> RequestState:
        """Keep the request approved and hand it to the reconcile after a backoff; on the first temporary
        fault of this apply the thread is told, in the same transaction."""

        def backoff(repo: Repository) -> int:
            now = self._clock.now()
            request = repo.request(request_id)
            assert request is not None
            request.apply_attempts += 1
            ceiling = min(RETRY_CAP, RETRY_FIRST * 2 ** (request.apply_attempts - 1)).total_seconds()
            request.apply_lease_until = now + timedelta(seconds=self._rng.uniform(ceiling / 2, ceiling))
            request.touch(now=now)
            if request.apply_attempts == 1:
                out.thread(repo, request_id, WaitingForCluster(reason, shift=request.kind == RequestKind.SHIFT))
            return request.apply_attempts

        attempts = self._db.run(backoff)
        log.warning("applying %s must wait for the cluster (attempt %d): %s", format_request_id(request_id), attempts, reason)
        return RequestState.APPROVED

    def _tell_failed(self, repo: Repository, out: Outgoing, request: Request, reason: FailureReason) -> None:
        card = self._announce.card_of(repo, request)
        out.thread(
            repo,
            request.id,
            ApplyFailed(request.id, reason),
            actions=[Action(ActionKind.RETRY, ButtonLabel.RETRY, str(request.id), "primary")],
        )
        out.direct(repo, card.requester_id, ApplyFailedToRequester(request.id, reason))
        out.refresh(repo, request.id)

    def _tell_shift_failed(self, repo: Repository, out: Outgoing, request: Request, reason: FailureReason) -> None:
        card = self._announce.card_of(repo, request)
        assert card.shift is not None
        source_applied = request.source_state == SourceLeg.APPLIED
        shift = card.shift
        failed = ShiftFailed(request.id, reason, card.namespace, shift.namespace, shift.before, shift.after, source_applied)
        actions = [Action(ActionKind.RETRY, ButtonLabel.RETRY, str(request.id), "primary")]
        if source_applied:
            actions.append(Action(ActionKind.RELEASE, ButtonLabel.GIVE_BACK, str(request.id)))
        out.thread(repo, request.id, failed, actions=actions)
        out.direct(repo, card.requester_id, failed)
        out.refresh(repo, request.id)
