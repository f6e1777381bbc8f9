"""Gradual reclaim, visible: a quota lowered below what a namespace uses evicts nothing (Kubernetes
only refuses new pods), so usage shrinks as jobs finish. The bot opens a reclaim when it writes such
a quota (``follow_reclaim``, called by ``QuotaSync`` in the namespace's critical section), and the
``reclaims`` job follows it until ``status.used`` is within the quota, then says so once in the
request's thread (the team's channel when no request lowered it). Closing is claimed in the
database, so one replica posts. Nothing here touches pods or writes a quota.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from bot.clock import Clock
from bot.domain.audit_details import (
    AuditDetail,
    ReclaimCovered,
    ReclaimFreed,
    ReclaimGone,
    ReclaimRaisedByHand,
    ReclaimStarted,
    to_text,
)
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope, QuotaSnapshot
from bot.domain.records import Reclaim
from bot.errors import GpuQuotaError, NamespaceNotFound
from bot.services.announce import Announcer, Outgoing
from bot.services.messages import ReclaimEnded
from bot.services.ports import QuotaTarget, Repository, Transactions

log = logging.getLogger(__name__)


def follow_reclaim(repo: Repository, scope: QuotaScope, *, request_id: int | None, hard: int, used: int, at: datetime) -> None:
    """After a quota write: open a reclaim when usage is above the new quota (or move the open one to
    the new value); end the open one quietly when the new quota covers usage again."""
    namespace = scope.namespace
    current = repo.open_reclaim(namespace, scope.resource)
    if used > hard:
        if current is None:
            repo.start_reclaim(namespace=namespace, resource=scope.resource, request_id=request_id, quota=hard, used=used, at=at)
            repo.record(
                at=at,
                action="reclaim_started",
                namespace=namespace,
                request_id=request_id,
                after={"quota_gpus": hard, "used_gpus": used},
                detail=to_text(ReclaimStarted(used, hard)),
            )
        else:
            current.quota = hard
            current.request_id = request_id if request_id is not None else current.request_id
    elif current is not None and repo.finish_reclaim(current.id, used=used, at=at):
        repo.record(
            at=at,
            action="reclaim_ended",
            namespace=namespace,
            request_id=request_id,
            after={"quota_gpus": hard, "used_gpus": used},
            detail=to_text(ReclaimCovered()),
        )


@dataclass
class ReclaimReport:
    finished: list[str] = field(default_factory=list)
    following: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class ReclaimWatch:
    def __init__(
        self, *, policy: Policy, target: QuotaTarget, database: Transactions, announcer: Announcer, clock: Clock
    ) -> None:
        self._policy = policy
        self._target = target
        self._db = database
        self._announce = announcer
        self._clock = clock

    def check(self) -> ReclaimReport:
        """The scheduled job: close (and announce, once) every open reclaim whose usage is within its quota."""
        report = ReclaimReport()
        for reclaim in self._db.run(lambda repo: [_Open.of(r) for r in repo.open_reclaims()]):
            try:
                snapshot = self._target.read(QuotaScope(reclaim.namespace, reclaim.resource))
            except NamespaceNotFound:
                snapshot = None
            except GpuQuotaError as error:
                report.errors.append(f"{reclaim.namespace}: {error}")
                continue
            if snapshot is not None and snapshot.used > snapshot.hard:
                report.following.append(reclaim.namespace)
                continue
            if self._finish(reclaim, snapshot):
                report.finished.append(reclaim.namespace)
        return report

    def _finish(self, reclaim: _Open, snapshot: QuotaSnapshot | None) -> bool:
        """Claim the end of the reclaim and say it in the same transaction; False when another replica
        claimed it first.

        Said only when jobs finishing freed GPUs: a quota (or namespace) gone, or raised by hand over
        usage, ends it quietly, in the audit trail only."""
        now = self._clock.now()
        used = snapshot.used if snapshot is not None else 0
        freed = reclaim.used_at_start - used
        span = now - reclaim.started_at
        why: AuditDetail
        if snapshot is None:
            why = ReclaimGone()
        elif freed <= 0:
            why = ReclaimRaisedByHand()
        else:
            why = ReclaimFreed(freed, int(span.total_seconds() // 60))

        out = self._announce.outgoing()

        def claim(repo: Repository) -> bool:
            if not repo.finish_reclaim(reclaim.id, used=used, at=now):
                return False  # another replica closed it
            repo.record(
                at=now,
                action="reclaim_ended",
                namespace=reclaim.namespace,
                request_id=reclaim.request_id,
                before={"used_gpus": reclaim.used_at_start},
                after={"quota_gpus": snapshot.hard if snapshot else None, "used_gpus": used},
                detail=to_text(why),
            )
            if snapshot is not None and freed > 0:  # said with the close: recorded if and only if it commits
                self._announce_end(repo, out, reclaim, ReclaimEnded(reclaim.namespace, freed, span, snapshot.hard))
            return True

        if not self._db.run(claim):
            return False
        log.info("reclaim in %s ended: %s", reclaim.namespace, why)
        out.deliver()
        return True

    def _announce_end(self, repo: Repository, out: Outgoing, reclaim: _Open, notice: ReclaimEnded) -> None:
        if reclaim.request_id is not None:
            out.thread(repo, reclaim.request_id, notice)
            return
        team = self._policy.team_of(reclaim.namespace)
        if team is not None:
            out.post(repo, team.channel, notice)


@dataclass(frozen=True)
class _Open:
    id: int
    namespace: str
    resource: str
    request_id: int | None
    quota: int
    used_at_start: int
    started_at: datetime

    @classmethod
    def of(cls, row: Reclaim) -> _Open:
        return cls(row.id, row.namespace, row.resource, row.request_id, row.quota, row.used_at_start, row.started_at)
