"""Read-only answers: status of namespaces, the pending list, the audit trail."""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.clock import Clock
from bot.domain.kueue import ClusterQueueSnapshot
from bot.domain.lifecycle import GrantState, RequestState
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope
from bot.errors import GpuQuotaError
from bot.services.access import Access
from bot.services.error_reasons import read_failure
from bot.services.pods import PodView
from bot.services.ports import QuotaTarget, Transactions
from bot.services.refusals import Asked, InNoTeam, NoSuchRequest, NotYoursToAudit, Refused
from bot.services.requests import managed_key
from bot.services.views import AuditLine, GrantLine, NamespaceStatus, PendingLine, QueueLine

log = logging.getLogger(__name__)


class Queries:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        target: QuotaTarget,
        access: Access,
        clock: Clock,
        pods: PodView | None = None,
    ) -> None:
        self._pods = pods
        self._policy = policy
        self._db = database
        self._target = target
        self._access = access
        self._clock = clock

    def status(self, *, user: str, namespace: str | None = None) -> list[NamespaceStatus]:
        if namespace is not None:
            names = [managed_key(self._policy, namespace)]
        else:
            names = sorted(ns.name for team in self._access.teams_of(user) for ns in team.namespaces)
            if not names:
                raise Refused(InNoTeam(Asked.STATUS))
        return [status for name in names for status in self.statuses_of(name)]

    def statuses_of(self, namespace: str, *, max_age: float = 0.0) -> list[NamespaceStatus]:
        """The status of each resource the namespace governs (``status_of``)."""
        return [
            self.status_of(QuotaScope(namespace, resource), max_age=max_age)
            for resource in self._policy.governed_resources(namespace)
        ]

    def status_of(self, scope: QuotaScope, *, max_age: float = 0.0) -> NamespaceStatus:
        """Quota in the cluster (or why it could not be read), base, grants, pending requests and GPU pods of one scope;
        ``max_age``: a quota read (or written) by the bot this many seconds ago will do."""
        namespace, resource = scope.namespace, scope.resource
        team = self._policy.team_of(namespace)
        assert team is not None
        quota_name = self._target.name(scope)
        hard = used = None
        error = None
        queue = None
        try:
            snapshot = self._target.read(scope, max_age=max_age)
            if snapshot is not None:
                hard, used = snapshot.hard, snapshot.used
            if isinstance(snapshot, ClusterQueueSnapshot):
                queue = QueueLine(
                    snapshot.flavor,
                    snapshot.in_use,
                    snapshot.pending_workloads,
                    snapshot.cohort,
                    snapshot.borrowed,
                    snapshot.borrowing_limit,
                )
        except GpuQuotaError as failure:
            log.warning("status of %s (%s): %s", namespace, resource, failure)
            error = read_failure(failure)

        def load(repo):  # type: ignore[no-untyped-def]
            row = repo.namespace(namespace, resource)
            grants = repo.grants(states=[GrantState.ACTIVE, GrantState.ENDING], namespaces=[namespace])
            pending = repo.requests_in([RequestState.PENDING], namespaces=[namespace])
            reclaim = repo.open_reclaim(namespace, resource)
            return (
                row.base_gpus if row else None,
                tuple(GrantLine(g.request_id, g.gpus, g.ends_at, GrantState(g.state)) for g in grants if g.resource == resource),
                tuple(pending_line(r) for r in pending if r.resource == resource),
                reclaim.started_at if reclaim else None,
            )

        base, grants, pending, since = self._db.run(load)
        pods = self._pods.in_view(scope) if self._pods is not None else None
        return NamespaceStatus(
            namespace, team.label, quota_name, resource, hard, used, base, grants, pending, error, pods, since, queue
        )

    def pending_for(self, *, user: str) -> list[PendingLine]:
        """Pending requests the user made or may decide."""
        pending = self._db.run(lambda repo: list(repo.requests_in([RequestState.PENDING])))
        lines = []
        for request in pending:
            # A shift is decided by approvers of its source team too.
            teams = [t for name in (request.team, request.source_team) if name and (t := self._policy.teams.get(name))]
            mine = request.requester_id == user
            if mine or any(self._access.may_decide(user, team, fresh=False) for team in teams):
                lines.append(pending_line(request))
        return lines

    def request_at(self, channel_id: str, message_ts: str) -> int | None:
        """The id of the request whose message is at ``message_ts`` (a thread's parent), if any."""
        return self._db.run(lambda repo: row.id if (row := repo.request_at(channel_id, message_ts)) else None)

    def audit(
        self, *, user: str, namespace: str | None = None, request_id: int | None = None, limit: int = 20
    ) -> list[AuditLine]:
        if namespace is None and request_id is not None:
            request = self._db.run(lambda repo: repo.request(request_id))
            if request is None:
                raise Refused(NoSuchRequest(request_id))
            # A shift belongs to both its teams.
            teams = [t for name in (request.team, request.source_team) if name and (t := self._policy.teams.get(name))]
        else:
            namespace = managed_key(self._policy, namespace or "")
            team = self._policy.team_of(namespace)
            assert team is not None
            teams = [team]
        allowed = any(self._access.may_request(user, team, fresh=False) for team in teams)
        if not (allowed or self._access.is_admin(user, fresh=False)):
            raise Refused(NotYoursToAudit())
        rows = self._db.run(lambda repo: list(repo.audit_trail(namespace=namespace, request_id=request_id, limit=limit)))
        return [AuditLine(r.at, r.actor, r.action, r.namespace, r.request_id, r.before, r.after, r.detail) for r in rows]


def pending_line(request) -> PendingLine:  # type: ignore[no-untyped-def]
    """A pending request as the lists show it."""
    return PendingLine(
        request_id=request.id,
        namespace=request.namespace,
        amount_text=request.amount_text,
        delta=request.delta,
        duration=timedelta(seconds=request.duration_seconds) if request.duration_seconds is not None else None,
        requester_id=request.requester_id,
        approvals=len(request.approvals),
        approvals_required=request.approvals_required,
        decide_by=request.decide_by,
        source_namespace=request.source_namespace,
    )
