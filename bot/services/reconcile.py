"""The periodic reconcile: everything time-driven, read from the database so it survives restarts.

One tick expires undecided requests, reminds requesters before a grant ends, ends grants that are
due, retries quota reverts that failed, resumes approved requests whose apply lease lapsed (a crash
interrupted the apply, or the wait after a temporary fault is over), ends temporary shifts whose
target side failed, and re-posts request messages Slack refused (and copies of shift cards for the
source team that Slack was down for). Each step stands alone: one failing never stops the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from bot.clock import Clock
from bot.domain.commands import format_request_id
from bot.domain.entities import Request
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope
from bot.errors import GpuQuotaError, RateLimited
from bot.services.announce import Announcer
from bot.services.changes import ChangeApplier
from bot.services.messages import Expired, ExpiredToRequester, GrantEndsSoon, Message, QuotaEditedOutside
from bot.services.ports import Action, ActionKind, ButtonLabel, Repository, Transactions
from bot.services.quota_sync import QuotaSync
from bot.services.request_rows import move_request

log = logging.getLogger(__name__)


def next_write(request: Request) -> QuotaScope | None:
    """The quota the apply of ``request`` writes next: a shift's source until that leg is applied, then the
    target; None for an extension (it writes nothing in a cluster)."""
    if request.kind == RequestKind.EXTENSION:
        return None
    if request.kind == RequestKind.SHIFT and request.source_state == SourceLeg.RECORDED:
        return request.source_scope
    return request.scope


@dataclass
class TickReport:
    expired: list[int] = field(default_factory=list)
    reminded: list[int] = field(default_factory=list)
    grants_ended: list[int] = field(default_factory=list)
    resumed: list[int] = field(default_factory=list)
    reposted: list[int] = field(default_factory=list)
    drifted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Reconciler:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        applier: ChangeApplier,
        sync: QuotaSync,
        announcer: Announcer,
        clock: Clock,
    ) -> None:
        self._policy = policy
        self._db = database
        self._applier = applier
        self._sync = sync
        self._announce = announcer
        self._clock = clock

    def tick(self) -> TickReport:
        report = TickReport()
        for step in (self._expire_pending, self._remind, self._end_grants, self._resume_stuck, self._repost, self._deliver):
            self._guarded(step, report)
        return report

    def sweep(self) -> TickReport:
        """Converge every managed namespace: adopts hand edits promptly and repairs lost writes."""
        report = TickReport()
        in_flight = self._db.run(lambda repo: repo.shift_sources_in_flight())
        for scope in self._policy.governed_scopes():
            namespace = scope.namespace
            if (namespace, scope.resource) in in_flight:
                # Its shift lowers it (and meets any hand edit with the shift's own check): adopting an edit here
                # first would stop the base at zero and hide GPUs the source no longer has.
                log.info("sweep leaves %s (%s) to the shift that is lowering it", namespace, scope.resource)
                continue
            try:
                outcome = self._sync.converge(scope)
            except GpuQuotaError as error:
                report.errors.append(f"{namespace} ({scope.resource}): {error}")
                log.error("sweep could not converge %s (%s): %s", namespace, scope.resource, error)
                continue
            if outcome.drift:
                report.drifted.append(namespace)
                self._tell_admins(QuotaEditedOutside(namespace, outcome.drift, outcome.after))
        return report

    def _guarded(self, step: Callable[[TickReport], None], report: TickReport) -> None:
        try:
            step(report)
        except Exception as error:  # one broken step must not stop the rest of the tick
            log.exception("reconcile step %s failed", step.__name__)
            report.errors.append(f"{step.__name__}: {error}")

    def _expire_pending(self, report: TickReport) -> None:
        timeout = self._policy.defaults.pending_timeout
        out = self._announce.outgoing()

        def expire(repo: Repository) -> list[int]:
            now = self._clock.now()
            expired = []
            for request in repo.pending_past_deadline(now):
                move_request(request, RequestState.EXPIRED, now=now)
                request.decided_at = now
                repo.record(at=now, action="request_expired", namespace=request.namespace, request_id=request.id)
                out.thread(repo, request.id, Expired(request.id, timeout))
                out.direct(repo, request.requester_id, ExpiredToRequester(request.id, timeout))
                out.refresh(repo, request.id)
                expired.append(request.id)
            return expired

        report.expired.extend(self._db.run(expire))
        out.deliver()

    def _remind(self, report: TickReport) -> None:
        """Remind requesters of grants ending soon: marked reminded and said in one transaction."""
        out = self._announce.outgoing()

        def due(repo: Repository) -> list[int]:
            now = self._clock.now()
            reminded = []
            for grant in repo.grants_to_remind(now + self._policy.defaults.reminder_before):
                if grant.ends_at <= now:
                    continue  # already over (the bot was down): it is ended below, never "goes back in 1 h"
                grant.reminded_at = now
                request = repo.request(grant.request_id)
                assert request is not None
                out.direct(
                    repo,
                    request.requester_id,
                    GrantEndsSoon(request.id, grant.gpus, grant.namespace, grant.ends_at),
                    actions=[
                        Action(ActionKind.EXTEND, ButtonLabel.EXTEND, str(request.id), "primary"),
                        Action(ActionKind.RELEASE, ButtonLabel.RELEASE_NOW, str(request.id)),
                    ],
                )
                reminded.append(request.id)
            return reminded

        report.reminded.extend(self._db.run(due))
        out.deliver()

    def _end_grants(self, report: TickReport) -> None:
        """End grants that are due, and retry (once a tick) the reverts that failed before."""
        due = self._db.run(lambda repo: [(g.id, g.request_id) for g in repo.grants_due(self._clock.now())])
        for grant_id, request_id in due:
            if self._applier.end_grant(grant_id, reason="expired", actor="gpu-quota-bot") == GrantState.ENDED:
                report.grants_ended.append(request_id)
        tried = {grant_id for grant_id, _ in due}
        ending = self._db.run(lambda repo: [(g.id, g.request_id) for g in repo.grants(states=[GrantState.ENDING])])
        for grant_id, request_id in ending:
            if grant_id not in tried and self._applier.finish_grant(grant_id):
                report.grants_ended.append(request_id)
        self._end_failed_shifts(report)

    def _end_failed_shifts(self, report: TickReport) -> None:
        """A temporary shift whose target side failed has no grant to expire: at its end the source gets its GPUs back."""

        def due(repo: Repository) -> list[int]:
            now = self._clock.now()
            return [
                r.id
                for r in repo.failed_shifts_holding_source()
                if r.decided_at is not None and r.decided_at + timedelta(seconds=r.duration_seconds or 0) <= now
            ]

        for request_id in self._db.run(due):
            if self._applier.give_back_source(request_id, actor="gpu-quota-bot"):
                report.grants_ended.append(request_id)

    def _resume_stuck(self, report: TickReport) -> None:
        """Approved requests nobody is applying (their lease lapsed): apply them now. One whose cluster takes no
        call now (down and not due for another try, or hanging) waits for a later tick, with no write for
        nothing: after a cluster is due, the first of its requests is its try."""
        lapsed = self._db.run(lambda repo: [(r.id, next_write(r)) for r in repo.approved_unleased(self._clock.now())])
        waiting = 0
        for request_id, scope in lapsed:
            if scope is not None and not self._sync.answering(scope):
                waiting += 1
                continue
            log.info("resuming the apply of %s (its lease lapsed)", format_request_id(request_id))
            self._applier.apply(request_id, resume=True)
            report.resumed.append(request_id)
        if waiting:
            log.info("%d approved requests wait for a cluster that does not answer", waiting)

    def _repost(self, report: TickReport) -> None:
        """Cards (and shift copies) Slack did not take, or a crash came before, that nobody is posting; the
        post claim keeps out one whose post is in flight or whose Retry-After runs (``Announcer.post_card``)."""
        now = self._clock.now()
        for request_id in self._db.run(lambda repo: list(repo.unposted_requests(now))):
            refused = self._announce.post_card(request_id)
            if refused is None:
                report.reposted.append(request_id)
            elif isinstance(refused, RateLimited):
                # Slack limits posts per channel and workspace: the next card would get a 429 too, and its
                # next try pushed back by it. The next tick after the Retry-After goes on.
                log.info("Slack rate-limits card posts: the other unposted cards wait for the next tick")
                break
        for request_id in self._db.run(lambda repo: list(repo.unposted_copies(now))):
            self._announce.post_copy(request_id)

    def _deliver(self, report: TickReport) -> None:
        self._announce.deliver_pending()
        self._announce.forget_delivered()

    def _tell_admins(self, text: Message) -> None:
        if self._policy.admin_channel:
            self._announce.post(self._policy.admin_channel, text)
