"""Applying decided requests to the cluster, and ending grants.

Approval records the request's effect in the database (a new grant, or a moved base) in the same
transaction that marks it approved; this module then makes the cluster match. On failure the
effect is taken back in the transaction that marks the request failed, so the database never
describes a change the cluster refused. An admin can retry a failed request.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy.orm.attributes import flag_modified

from bot.adapters.db.database import Database
from bot.adapters.db.models import GrantRow, RequestRow
from bot.adapters.db.repository import Repository
from bot.clock import Clock
from bot.domain.commands import format_request_id
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, check_grant_transition, check_request_transition
from bot.domain.policy import Policy
from bot.domain.quota import below_usage_note
from bot.errors import GpuQuotaError
from bot.logs import request_context
from bot.observability import APPLIES, APPLY_SECONDS, timed
from bot.services.announce import Announcer
from bot.services.ports import Action, ActionKind
from bot.services.quota_sync import QuotaSync, SyncOutcome
from bot.services.text import gpus, mention, when

log = logging.getLogger(__name__)


def touch(request: RequestRow, *, now: datetime) -> None:
    """Mark the request changed so its version is bumped even when only its decisions changed:
    a concurrent transaction that read the old version then fails and is retried from a fresh read."""
    request.updated_at = now
    flag_modified(request, "updated_at")


def move_request(request: RequestRow, target: RequestState, *, now: datetime) -> None:
    check_request_transition(RequestState(request.state), target)
    request.state = target
    touch(request, now=now)


def move_grant(grant: GrantRow, target: GrantState) -> None:
    check_grant_transition(GrantState(grant.state), target)
    grant.state = target


def record_effect(repo: Repository, request: RequestRow, *, now: datetime) -> None:
    """Put an approved change into the desired state: a grant, or a new base (extensions act at apply)."""
    if request.kind == RequestKind.EXTENSION:
        return
    if request.permanent:
        namespace = repo.namespace(request.namespace)
        assert namespace is not None, "a request's namespace is recorded when it is submitted"
        namespace.base_gpus += request.delta
        namespace.updated_at = now
        return
    assert request.duration_seconds is not None
    repo.add_grant(
        GrantRow(
            request_id=request.id,
            namespace=request.namespace,
            gpus=request.delta,
            state=GrantState.ACTIVE,
            starts_at=now,
            ends_at=now + timedelta(seconds=request.duration_seconds),
        )
    )


def take_back_effect(repo: Repository, request: RequestRow, *, now: datetime) -> None:
    if request.kind == RequestKind.EXTENSION:
        return
    if request.permanent:
        namespace = repo.namespace(request.namespace)
        assert namespace is not None
        namespace.base_gpus -= request.delta
        namespace.updated_at = now
        return
    grant = repo.grant_of(request.id)
    if grant is not None:
        repo.session.delete(grant)


class ChangeApplier:
    def __init__(self, *, policy: Policy, database: Database, sync: QuotaSync, announcer: Announcer, clock: Clock) -> None:
        self._policy = policy
        self._db = database
        self._sync = sync
        self._announce = announcer
        self._clock = clock

    # --- requests ----------------------------------------------------------------------------

    def apply(self, request_id: int) -> RequestState:
        """Apply an approved request; returns its final state (applied or failed)."""
        with request_context(format_request_id(request_id)), timed(APPLY_SECONDS):
            state = self._apply(request_id)
        APPLIES.labels(outcome=str(state)).inc()
        return state

    def _apply(self, request_id: int) -> RequestState:
        request = self._db.run(lambda repo: repo.request(request_id))
        if request is None or request.state != RequestState.APPROVED:
            return RequestState(request.state) if request else RequestState.FAILED
        if request.kind == RequestKind.EXTENSION:
            return self._apply_extension(request_id)
        try:
            outcome = self._sync.converge(request.namespace, request_id=request_id)
        except GpuQuotaError as error:
            self._fail(request_id, str(error))
            return RequestState.FAILED
        self._db.run(lambda repo: self._mark_applied(repo, request_id, outcome))
        self._report_applied(request_id, outcome)
        return RequestState.APPLIED

    def _mark_applied(self, repo: Repository, request_id: int, outcome: SyncOutcome) -> None:
        now = self._clock.now()
        request = repo.request(request_id)
        assert request is not None
        move_request(request, RequestState.APPLIED, now=now)
        request.applied_at = now
        grant = repo.grant_of(request_id)
        if grant is not None:
            # The grant runs for its full duration from the moment the GPUs became available.
            grant.starts_at, grant.ends_at = now, now + (grant.ends_at - grant.starts_at)
        repo.record(
            at=now,
            action="request_applied",
            namespace=request.namespace,
            request_id=request_id,
            before={"quota_gpus": outcome.before},
            after={"quota_gpus": outcome.after},
            detail="permanent" if request.permanent or grant is None else f"until {grant.ends_at:%Y-%m-%d %H:%M} UTC",
        )

    def _report_applied(self, request_id: int, outcome: SyncOutcome) -> None:
        card = self._announce.card(request_id)
        before = "no quota" if outcome.before is None else gpus(outcome.before)
        lines = [
            f":white_check_mark: Applied: `requests.nvidia.com/gpu` in *{card.namespace}* "
            f"({outcome.quota_name}) {before} → *{gpus(outcome.after)}*."
        ]
        if card.grant_ends_at is not None and not card.permanent:
            lines.append(f"The grant ends {when(card.grant_ends_at)}; the quota then goes back automatically.")
        if outcome.drift:
            lines.append(
                f":warning: Someone had changed this quota outside the bot by {outcome.drift:+d} GPUs"
                " (e.g. `kubectl edit`). The bot adopted that change into the base instead of overwriting it."
            )
        note = below_usage_note(new_hard=outcome.after, used=outcome.used)
        if note:
            lines.append(note)
        self._announce.thread(request_id, "\n".join(lines))
        self._announce.direct(
            card.requester_id,
            f"{card.display_id} is applied: *{card.namespace}* now has {gpus(outcome.after)}"
            + ("." if card.permanent or card.grant_ends_at is None else f" until {when(card.grant_ends_at)}."),
        )
        self._announce.refresh(request_id)

    def _apply_extension(self, request_id: int) -> RequestState:
        def extend(repo: Repository) -> str | None:
            now = self._clock.now()
            request = repo.request(request_id)
            assert request is not None and request.extends_request_id is not None
            grant = repo.grant_of(request.extends_request_id)
            if grant is None or grant.state != GrantState.ACTIVE:
                return f"the grant of {format_request_id(request.extends_request_id)} has already ended"
            before = grant.ends_at
            grant.ends_at = max(grant.ends_at, now) + timedelta(seconds=request.duration_seconds or 0)
            grant.reminded_at = None
            move_request(request, RequestState.APPLIED, now=now)
            request.applied_at = now
            repo.record(
                at=now,
                action="grant_extended",
                namespace=request.namespace,
                request_id=request_id,
                before={"ends_at": before.isoformat()},
                after={"ends_at": grant.ends_at.isoformat()},
                detail=f"extends {format_request_id(request.extends_request_id)}",
            )
            return None

        problem = self._db.run(extend)
        if problem:
            self._fail(request_id, problem)
            return RequestState.FAILED
        card = self._announce.card(request_id)
        assert card.extends_id is not None and card.grant_ends_at is not None
        new_end = f"{format_request_id(card.extends_id)} now ends {when(card.grant_ends_at)}."
        self._announce.thread(request_id, f":white_check_mark: Applied: {new_end}")
        self._announce.thread(card.extends_id, f"Extended by {card.display_id}: {new_end}")
        self._announce.direct(card.requester_id, f"{card.display_id} is applied: {new_end}")
        self._announce.refresh(request_id)
        self._announce.refresh(card.extends_id)
        return RequestState.APPLIED

    def _fail(self, request_id: int, reason: str) -> None:
        def fail(repo: Repository) -> None:
            now = self._clock.now()
            request = repo.request(request_id)
            assert request is not None
            move_request(request, RequestState.FAILED, now=now)
            request.failure_reason = reason
            take_back_effect(repo, request, now=now)
            repo.record(at=now, action="request_failed", namespace=request.namespace, request_id=request_id, detail=reason)

        self._db.run(fail)
        log.error("applying %s failed: %s", format_request_id(request_id), reason)
        card = self._announce.card(request_id)
        self._announce.thread(
            request_id,
            f":x: Could not apply {card.display_id}: {reason}\nThe request is marked failed and nothing of it is "
            "counted; an admin can retry once the cause is fixed.",
            actions=[Action(ActionKind.RETRY, "Retry", str(request_id), "primary")],
        )
        self._announce.direct(card.requester_id, f"{card.display_id} could not be applied: {reason}")
        self._announce.refresh(request_id)

    # --- grants ------------------------------------------------------------------------------

    def end_grant(self, grant_id: int, *, reason: str, actor: str) -> GrantState | None:
        """Stop counting a grant and put the quota back.

        Returns ENDED when the quota is back, ENDING when putting it back failed (the reconcile job
        retries), None when the grant was not active.
        """

        def start(repo: Repository) -> bool:
            now = self._clock.now()
            grant = repo.session.get(GrantRow, grant_id)
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
        grant = self._db.run(lambda repo: repo.session.get(GrantRow, grant_id))
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
                    f":warning: The grant is over but the quota could not be put back yet: {error}. The bot keeps retrying.",
                )
            return False

        def finish(repo: Repository) -> None:
            row = repo.session.get(GrantRow, grant_id)
            assert row is not None
            move_grant(row, GrantState.ENDED)
            row.ended_at = self._clock.now()

        self._db.run(finish)
        self._report_ended(grant, outcome)
        return True

    def _report_ended(self, grant: GrantRow, outcome: SyncOutcome) -> None:
        card = self._announce.card(grant.request_id)
        how = "expired" if grant.end_reason == "expired" else f"released by {mention(grant.ended_by or '?')}"
        before = "no quota" if outcome.before is None else gpus(outcome.before)
        summary = f"grant {how}: *{grant.namespace}* {before} → *{gpus(outcome.after)}*."
        note = below_usage_note(new_hard=outcome.after, used=outcome.used)
        self._announce.thread(grant.request_id, f":hourglass: The {summary}" + (f"\n{note}" if note else ""))
        if grant.ended_by != card.requester_id:
            self._announce.direct(card.requester_id, f"{card.display_id}: {summary}")
        self._announce.refresh(grant.request_id)
