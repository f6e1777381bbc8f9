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
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bot.clock import Clock
from bot.domain.commands import format_request_id
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, check_grant_transition
from bot.domain.policy import Policy
from bot.domain.quota import below_usage_note, change_problem
from bot.errors import GpuQuotaError, TemporaryError
from bot.logs import request_context
from bot.observability import APPLIES, APPLY_SECONDS, timed
from bot.services.announce import Announcer, Outgoing
from bot.services.ports import Action, ActionKind, Repository, Transactions

if TYPE_CHECKING:
    from bot.adapters.db.models import GrantRow, RequestRow
from bot.services.quota_sync import QuotaRead, QuotaSync, SyncOutcome
from bot.services.request_rows import mark_applied, move_request
from bot.services.shift_apply import ShiftApplier, record_shift_effect, return_source_in, take_back_shift_effect
from bot.services.text import Code, Moment, Notice, Part, Strong, User, gpus, say

log = logging.getLogger(__name__)
# A worker applying a request holds it this long; after that the reconcile takes it over.
APPLY_LEASE = timedelta(seconds=10)
# Waits after temporary faults: 1, 2, 4 s, then 5 s, the shortest reconcile interval, so that once
# the API server is back the apply lands on the next tick.
RETRY_FIRST = timedelta(seconds=1)
RETRY_CAP = timedelta(seconds=5)


def move_grant(grant: GrantRow, target: GrantState) -> None:
    check_grant_transition(GrantState(grant.state), target)
    grant.state = target


def record_effect(repo: Repository, request: RequestRow, *, now: datetime) -> None:
    """Put an approved change into the desired state: a grant, or a new base (extensions act at apply).

    The approver's worker applies it next: it holds the apply lease from now.
    """
    request.apply_lease_until, request.apply_attempts = now + APPLY_LEASE, 0
    if request.kind == RequestKind.EXTENSION:
        return
    if request.kind == RequestKind.SHIFT:
        record_shift_effect(repo, request, now=now)
        return
    if request.permanent:
        namespace = repo.namespace(request.namespace)
        assert namespace is not None, "a request's namespace is recorded when it is submitted"
        namespace.base_gpus += request.delta
        namespace.updated_at = now
        return
    assert request.duration_seconds is not None
    repo.add_grant(
        request_id=request.id,
        namespace=request.namespace,
        gpus=request.delta,
        state=GrantState.ACTIVE,
        starts_at=now,
        ends_at=now + timedelta(seconds=request.duration_seconds),
    )


def take_back_effect(repo: Repository, request: RequestRow, *, now: datetime) -> None:
    if request.kind == RequestKind.EXTENSION:
        return
    if request.kind == RequestKind.SHIFT:
        take_back_shift_effect(repo, request, now=now)
        return
    if request.permanent:
        namespace = repo.namespace(request.namespace)
        assert namespace is not None
        namespace.base_gpus = max(0, namespace.base_gpus - request.delta)  # a hand edit may have lowered it since
        namespace.updated_at = now
        return
    grant = repo.grant_of(request.id)
    if grant is not None:
        repo.remove_grant(grant)


def fail_request(repo: Repository, request: RequestRow, reason: str, *, now: datetime, recorded: bool = True) -> None:
    """Mark an approved request failed and take its change back out of the desired state (when its
    effect was ``recorded``: a request refused as it is approved never had one)."""
    move_request(request, RequestState.FAILED, now=now)
    request.failure_reason = reason
    request.apply_lease_until = None
    if recorded:
        take_back_effect(repo, request, now=now)
    repo.record(at=now, action="request_failed", namespace=request.namespace, request_id=request.id, detail=reason)


class ChangeApplier:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        sync: QuotaSync,
        announcer: Announcer,
        clock: Clock,
        rng: random.Random | None = None,
    ) -> None:
        self._policy = policy
        self._db = database
        self._sync = sync
        self._announce = announcer
        self._clock = clock
        self._rng = rng or random.Random()
        self._shifts = ShiftApplier(
            policy=policy,
            database=database,
            sync=sync,
            announcer=announcer,
            clock=clock,
            wait=self._wait,
        )

    # --- requests ----------------------------------------------------------------------------

    def apply(
        self, request_id: int, *, resume: bool = False, leased: RequestRow | None = None, out: Outgoing | None = None
    ) -> RequestState:
        """Apply an approved request; returns its state (applied, failed, or still approved while the
        cluster is unreachable).

        The quota is written first; the outcome is recorded for the thread and the requester in the
        transaction that records it, and delivered after. ``resume``: the reconcile takes over only a
        lapsed lease. ``leased``: the row as the transaction that approved it left it (``record_effect``
        took the lease there), so the apply goes straight to the namespace's critical section. ``out``:
        what the caller recorded before (the approval's "Approved by"), delivered with the outcome.
        """
        out = out or self._announce.outgoing()
        with request_context(format_request_id(request_id)), timed(APPLY_SECONDS):
            state = self._apply(request_id, out, resume=resume, leased=leased)
            out.deliver()
        APPLIES.labels(outcome=str(state)).inc()
        return state

    def approve_and_apply(
        self,
        namespace: str,
        approve: Callable[[Repository, int | None], RequestRow],
        out: Outgoing,
    ) -> tuple[RequestRow, RequestState | None]:
        """Record the last approval of a change to ``namespace`` and apply it, from one read of the quota.

        In the namespace's critical section: the quota is read; ``approve(repo, hard)`` records the
        approval in a transaction, rechecked against that read (``hard`` None when there is no quota or
        it could not be read: the recheck goes by the database, and the apply reads for itself), and
        returns the row; the write is planned in the same transaction and, if the row is approved,
        made next from the same read, its resourceVersion the write's precondition. What ``approve``
        and the apply record in ``out`` is delivered after, outside the section.
        Returns the row and, when it was approved, the state the apply left it in.
        """
        with self._sync.exclusive(namespace):
            try:
                read: QuotaRead | None = self._sync.read_locked(namespace)
            except GpuQuotaError as error:
                log.warning("could not read the quota of %s to check the approval: %s", namespace, error)
                read = None

            def record(repo: Repository) -> tuple[RequestRow, QuotaRead | None]:
                row = approve(repo, read.hard if read else None)
                if read is None or row.state != RequestState.APPROVED:
                    return row, read
                return row, self._sync.plan_in(repo, namespace, read)

            row, read = self._db.run(record)
            if row.state != RequestState.APPROVED:
                return row, None
            with request_context(format_request_id(row.id)), timed(APPLY_SECONDS):
                state = self._apply_locked(row.id, namespace, out, lease=None, approved=row, read=read)
        out.deliver()
        APPLIES.labels(outcome=str(state)).inc()
        return row, state

    def _apply(self, request_id: int, out: Outgoing, *, resume: bool, leased: RequestRow | None = None) -> RequestState:
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
        with self._sync.exclusive(request.namespace):
            return self._apply_locked(request_id, request.namespace, out, lease=lease)

    def _claim(self, repo: Repository, request_id: int, *, resume: bool) -> RequestRow | None:
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
        namespace: str,
        out: Outgoing,
        *,
        lease: datetime | None,
        approved: RequestRow | None = None,
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
        max_gpus = self._policy.max_gpus(namespace)

        def check(base: int, grants: int) -> str | None:
            """The limits against the quota as it is now, with this request's change in it."""
            if permanent and base < 0:
                return f"the permanent quota is {base - effect} GPUs, so it cannot go down by {-effect}"
            total = base + grants
            return change_problem(before=total - effect, delta=effect, max_gpus=max_gpus)

        try:
            outcome = self._sync.converge_locked(namespace, request_id=request_id, check=check, read=read)
        except TemporaryError as error:
            waiting = say(
                ":hourglass_flowing_sand: Approved; waiting for the cluster: ",
                str(error),
                ". The bot keeps trying and says here when it is applied; nothing needs to be done.",
            )
            self._wait(request_id, str(error), out, waiting)
            return RequestState.APPROVED
        except GpuQuotaError as error:  # refused for good: 403, 422, the namespace gone, a limit broken now
            reason = str(error)
            self._db.run(lambda repo: self._fail_in(repo, out, request_id, reason))
            self._converge_after_failure(namespace, request_id)
            return RequestState.FAILED

        def applied(repo: Repository) -> None:
            mark_applied(repo, request_id, quota_after=outcome.after, effect=effect, now=self._clock.now())
            self._tell_applied(repo, out, request_id, outcome)

        self._db.run(applied)
        return RequestState.APPLIED

    def _wait(self, request_id: int, reason: str, out: Outgoing, waiting: Notice) -> None:
        """Keep the request approved and hand it to the reconcile after a backoff; on the first temporary
        fault of this apply the thread is told ``waiting``, in the same transaction."""

        def backoff(repo: Repository) -> int:
            now = self._clock.now()
            request = repo.request(request_id)
            assert request is not None
            request.apply_attempts += 1
            ceiling = min(RETRY_CAP, RETRY_FIRST * 2 ** (request.apply_attempts - 1)).total_seconds()
            request.apply_lease_until = now + timedelta(seconds=self._rng.uniform(ceiling / 2, ceiling))
            request.touch(now=now)
            if request.apply_attempts == 1:
                out.thread(repo, request_id, waiting)
            return request.apply_attempts

        attempts = self._db.run(backoff)
        log.warning("applying %s must wait for the cluster (attempt %d): %s", format_request_id(request_id), attempts, reason)

    def _fail_in(self, repo: Repository, out: Outgoing, request_id: int, reason: str) -> None:
        request = repo.request(request_id)
        assert request is not None
        fail_request(repo, request, reason, now=self._clock.now())
        self.tell_failed(repo, out, request, reason)

    def _converge_after_failure(self, namespace: str, request_id: int) -> None:
        """Still in the critical section: cluster = base + active grants, without the failed change."""
        try:
            self._sync.converge_locked(namespace, request_id=request_id)
        except GpuQuotaError as error:  # the sweep and the next apply converge it later
            log.error("could not converge %s after %s failed: %s", namespace, format_request_id(request_id), error)

    def _tell_applied(self, repo: Repository, out: Outgoing, request_id: int, outcome: SyncOutcome) -> None:
        request = repo.request(request_id)
        assert request is not None
        card = self._announce.card_of(repo, request)
        temporary = card.grant_ends_at is not None and not card.permanent
        parts: list[str | Part] = [
            ":white_check_mark: Applied: ",
            Code("requests.nvidia.com/gpu"),
            " in ",
            Strong(card.namespace),
            f" ({outcome.quota_name}) {gpus(card.hard_before)} → ",
            Strong(gpus(card.hard_after)),
            ".",
        ]
        if temporary:
            assert card.grant_ends_at is not None
            parts += ["\nThe grant ends ", Moment(card.grant_ends_at), "; the quota then goes back automatically."]
        if outcome.drift:
            parts += [
                f"\n:warning: Someone had changed this quota outside the bot by {outcome.drift:+d} GPUs (e.g. ",
                Code("kubectl edit"),
                "). The bot adopted that change into the base instead of overwriting it.",
            ]
        note = below_usage_note(new_hard=card.hard_after, used=outcome.used)
        if note:
            parts.append("\n" + note)
        out.thread(repo, request_id, say(*parts))
        until: list[str | Part] = [" until ", Moment(card.grant_ends_at), "."] if temporary and card.grant_ends_at else ["."]
        out.direct(
            repo,
            card.requester_id,
            say(f"{card.display_id} is applied: ", Strong(card.namespace), f" now has {gpus(card.hard_after)}", *until),
        )
        out.refresh(repo, request_id)

    def _apply_extension(self, request_id: int, out: Outgoing) -> RequestState:
        """An extension moves the end of a grant: nothing to write in the cluster."""

        def extend(repo: Repository) -> str | None:
            now = self._clock.now()
            request = repo.request(request_id)
            assert request is not None and request.extends_request_id is not None
            grant = repo.grant_of(request.extends_request_id)
            if grant is None or grant.state != GrantState.ACTIVE:
                problem = f"the grant of {format_request_id(request.extends_request_id)} has already ended"
                fail_request(repo, request, problem, now=now)
                self.tell_failed(repo, out, request, problem)
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
                detail=f"extends {format_request_id(request.extends_request_id)}",
            )
            self._tell_extended(repo, out, request)
            return None

        problem = self._db.run(extend)
        return RequestState.FAILED if problem else RequestState.APPLIED

    def _tell_extended(self, repo: Repository, out: Outgoing, request: RequestRow) -> None:
        card = self._announce.card_of(repo, request)
        assert card.extends_id is not None and card.grant_ends_at is not None
        new_end = (f"{format_request_id(card.extends_id)} now ends ", Moment(card.grant_ends_at), ".")
        out.thread(repo, request.id, say(":white_check_mark: Applied: ", *new_end))
        out.thread(repo, card.extends_id, say(f"Extended by {card.display_id}: ", *new_end))
        out.direct(repo, card.requester_id, say(f"{card.display_id} is applied: ", *new_end))
        out.refresh(repo, request.id)
        out.refresh(repo, card.extends_id)

    def tell_failed(self, repo: Repository, out: Outgoing, request: RequestRow, reason: str) -> None:
        """Record, in the transaction that failed ``request``, the thread's and the requester's word of it."""
        log.error("applying %s failed: %s", format_request_id(request.id), reason)
        card = self._announce.card_of(repo, request)
        out.thread(
            repo,
            request.id,
            say(
                f":x: Could not apply {card.display_id}: ",
                reason,  # the API server's (or the policy's) words: shown as text, never as markup
                "\nThe request is marked failed and nothing of it is counted; an admin can retry once the cause is fixed.",
            ),
            actions=[Action(ActionKind.RETRY, "Retry", str(request.id), "primary")],
        )
        out.direct(repo, card.requester_id, say(f"{card.display_id} could not be applied: ", reason))
        out.refresh(repo, request.id)

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
                detail=f"{grant.gpus:+d} GPUs, due {grant.ends_at:%Y-%m-%d %H:%M} UTC",
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

    def _finish_grant(self, grant: GrantRow, *, first_attempt: bool) -> bool:
        grant_id = grant.id
        try:
            outcome = self._sync.converge(grant.namespace, request_id=grant.request_id)
        except GpuQuotaError as error:
            log.error("could not put back the quota of %s: %s", format_request_id(grant.request_id), error)
            if first_attempt:
                self._announce.thread(
                    grant.request_id,
                    say(
                        ":warning: The grant is over but the quota could not be put back yet: ",
                        str(error),
                        ". The bot keeps retrying.",
                    ),
                )
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

    def _tell_ended(self, repo: Repository, out: Outgoing, grant: GrantRow, request: RequestRow, outcome: SyncOutcome) -> None:
        card = self._announce.card_of(repo, request)
        how: list[str | Part] = ["expired"] if grant.end_reason == "expired" else ["released by ", User(grant.ended_by or "?")]
        before = "no quota" if outcome.before is None else gpus(outcome.before)
        summary = ("grant ", *how, ": ", Strong(grant.namespace), f" {before} → ", Strong(gpus(outcome.after)), ".")
        note = below_usage_note(new_hard=outcome.after, used=outcome.used)
        out.thread(repo, grant.request_id, say(":hourglass: The ", *summary, *(["\n" + note] if note else [])))
        if grant.ended_by != card.requester_id:
            out.direct(repo, card.requester_id, say(f"{card.display_id}: ", *summary))
        out.refresh(repo, grant.request_id)
