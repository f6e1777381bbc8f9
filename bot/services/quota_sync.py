"""Bring one namespace's ResourceQuota to what the database says it should be.

The database is the source of truth for the desired value (base + active grants); the cluster is
read first, a human's change since the bot's last write is adopted into the base (never silently
overwritten), then the write is dry-run and made with the read's resourceVersion as precondition.
A 409 means someone wrote in between: read again and redo. Because the value written is derived
from stored state rather than added to what the cluster holds, running this twice is harmless.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.adapters.db.database import Database
from bot.adapters.db.models import NamespaceRow
from bot.adapters.db.repository import Repository
from bot.clock import Clock
from bot.domain.commands import format_request_id
from bot.domain.policy import Policy
from bot.domain.quota import QuotaSnapshot, desired_gpus, in_sync, observe
from bot.errors import QuotaConflict, TemporaryError
from bot.services.ports import QuotaCluster

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncOutcome:
    namespace: str
    quota_name: str
    before: int | None  # hard in the cluster before the write; None when there was no quota
    after: int
    used: int
    drift: int  # GPUs a person changed by hand since the bot's last write, now adopted
    created: bool

    @property
    def changed(self) -> bool:
        return self.before != self.after or self.created


@dataclass(frozen=True)
class _Plan:
    desired: int
    drift: int


class QuotaSync:
    def __init__(
        self,
        *,
        policy: Policy,
        cluster: QuotaCluster,
        database: Database,
        clock: Clock,
        retry_delays: Sequence[float] = (0.5, 2.0, 5.0),
        sleep: Callable[[float], None] | None = None,
        max_conflicts: int = 5,
    ) -> None:
        self._policy = policy
        self._cluster = cluster
        self._db = database
        self._clock = clock
        self._retry_delays = tuple(retry_delays)
        self._sleep = sleep or time.sleep
        self._max_conflicts = max_conflicts

    def record_observation(self, repository: Repository, snapshot: QuotaSnapshot | None, namespace: str) -> NamespaceRow:
        """Create or update the namespace's stored base from a fresh read (adopting any drift)."""
        self._fold(repository, namespace, snapshot, request_id=None, actor="gpu-quota-bot")
        row = repository.namespace(namespace)
        assert row is not None
        return row

    def converge(self, namespace: str, *, request_id: int | None = None) -> SyncOutcome:
        """Make the cluster hold the desired quota; retries 409s and temporary failures, then raises."""
        quota_name = self._policy.quota_name(namespace)
        conflicts = 0
        failures = 0
        while True:
            try:
                return self._attempt(namespace, quota_name, request_id)
            except QuotaConflict:
                conflicts += 1
                log.info("quota %s/%s changed under us (409), reading again", namespace, quota_name)
                if conflicts >= self._max_conflicts:
                    raise TemporaryError(
                        f"the quota {quota_name} in {namespace} kept changing while the bot wrote it "
                        f"({conflicts} conflicts in a row)"
                    ) from None
            except TemporaryError as error:
                if failures >= len(self._retry_delays):
                    raise
                delay = max(self._retry_delays[failures], error.delay if failures else 0)
                failures += 1
                log.warning("temporary failure writing %s/%s: %s; retrying in %.1fs", namespace, quota_name, error, delay)
                self._sleep(delay)

    def _attempt(self, namespace: str, quota_name: str, request_id: int | None) -> SyncOutcome:
        # Read the cluster before the database: any change stored before this read is then included,
        # so a concurrent approval that already wrote the cluster can never be undone by a stale plan.
        snapshot = self._cluster.read_quota(namespace, quota_name)
        plan = self._db.run(lambda repo: self._fold(repo, namespace, snapshot, request_id=request_id, actor="gpu-quota-bot"))
        if in_sync(snapshot, plan.desired):
            assert snapshot is not None
            return SyncOutcome(namespace, quota_name, snapshot.hard, snapshot.hard, snapshot.used, plan.drift, False)
        applied_by = format_request_id(request_id) if request_id else "reconcile"
        self._cluster.write_quota(
            namespace, quota_name, gpus=plan.desired, previous=snapshot, dry_run=True, applied_by=applied_by
        )
        written = self._cluster.write_quota(
            namespace, quota_name, gpus=plan.desired, previous=snapshot, dry_run=False, applied_by=applied_by
        )
        self._db.run(lambda repo: self._record_write(repo, snapshot, written, request_id))
        used = snapshot.used if snapshot else written.used
        return SyncOutcome(
            namespace, quota_name, snapshot.hard if snapshot else None, written.hard, used, plan.drift, snapshot is None
        )

    def _fold(
        self, repo: Repository, namespace: str, snapshot: QuotaSnapshot | None, *, request_id: int | None, actor: str
    ) -> _Plan:
        now = self._clock.now()
        row = repo.namespace(namespace)
        grants = repo.active_grant_total(namespace)
        seen = observe(
            snapshot,
            base=row.base_gpus if row else None,
            last_seen=row.last_seen_gpus if row else None,
            active_grants=grants,
            default_quota=self._policy.default_quota(namespace),
        )
        if row is None:
            team = self._policy.team_of(namespace)
            row = repo.add_namespace(
                NamespaceRow(
                    name=namespace,
                    team=team.name if team else "",
                    base_gpus=seen.base,
                    last_seen_gpus=seen.last_seen,
                    updated_at=now,
                )
            )
            repo.record(
                at=now,
                action="namespace_adopted",
                namespace=namespace,
                after={"base_gpus": seen.base, "quota_gpus": snapshot.hard if snapshot else None},
                detail="first seen by the bot" + ("" if snapshot else "; no GPU quota in the cluster yet"),
            )
        elif (row.base_gpus, row.last_seen_gpus) != (seen.base, seen.last_seen):
            if seen.drift:
                repo.record(
                    at=now,
                    actor=actor,
                    action="manual_change_adopted",
                    namespace=namespace,
                    request_id=request_id,
                    before={"quota_gpus": row.last_seen_gpus, "base_gpus": row.base_gpus},
                    after={"quota_gpus": seen.last_seen, "base_gpus": seen.base},
                    detail=f"the quota was changed outside the bot by {seen.drift:+d} GPUs; adopted into the base",
                )
            row.base_gpus, row.last_seen_gpus, row.updated_at = seen.base, seen.last_seen, now
        return _Plan(desired=desired_gpus(seen.base, grants), drift=seen.drift)

    def _record_write(
        self, repo: Repository, before: QuotaSnapshot | None, written: QuotaSnapshot, request_id: int | None
    ) -> None:
        now: datetime = self._clock.now()
        row = repo.namespace(written.namespace)
        assert row is not None, "the namespace row is created before any write"
        row.last_seen_gpus, row.updated_at = written.hard, now
        repo.record(
            at=now,
            action="quota_created" if before is None else "quota_patched",
            namespace=written.namespace,
            request_id=request_id,
            before={"quota_gpus": before.hard, "resource_version": before.resource_version} if before else None,
            after={"quota_gpus": written.hard, "resource_version": written.resource_version},
            detail=f"{written.name}: requests.nvidia.com/gpu {before.hard if before else 'none'} -> {written.hard}",
        )
