"""The ResourceQuota as a quota target: the first implementation of ``ports.QuotaTarget``.

It names the namespace's quota from the policy and reads and writes the scope's ``requests.<resource>``
through ``QuotaCluster`` (``bot.adapters.kube``: a dry run, then a JSON merge patch carrying the read's
``resourceVersion`` and the stamp annotations). Every resource of a namespace lives in its one
ResourceQuota, so they share its critical section (named by the namespace, as before resources were
configurable: replicas of either release exclude each other). Must not: decide what to write; that is
``QuotaSync``'s.
"""

from __future__ import annotations

from bot.domain.commands import format_request_id
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope, QuotaSnapshot, Stamp
from bot.services.ports import QuotaCluster


def stamp_for(gpus: int, *, request_id: int | None) -> Stamp:
    """The stamp of a write for ``request_id`` (None: a reconcile): ``GQ-17`` or ``reconcile``."""
    return Stamp(gpus=gpus, applied_by=format_request_id(request_id) if request_id else "reconcile")


class ResourceQuotaTarget:
    """Implements ``QuotaTarget`` with ``requests.<resource>`` of one ResourceQuota per namespace."""

    def __init__(self, *, policy: Policy, cluster: QuotaCluster) -> None:
        self._policy = policy
        self._cluster = cluster

    def lock_name(self, scope: QuotaScope) -> str:
        return scope.namespace

    def name(self, scope: QuotaScope) -> str:
        return self._policy.quota_name(scope.namespace)

    def read(self, scope: QuotaScope, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        return self._cluster.read_quota(scope.namespace, self.name(scope), scope.resource, max_age=max_age)

    def stamp(self, gpus: int, *, request_id: int | None) -> Stamp:
        return stamp_for(gpus, request_id=request_id)

    def dry_run(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._write(scope, stamp, previous, dry_run=True)

    def write(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._write(scope, stamp, previous, dry_run=False)

    def _write(self, scope: QuotaScope, stamp: Stamp, previous: QuotaSnapshot | None, *, dry_run: bool) -> QuotaSnapshot:
        return self._cluster.write_quota(
            scope.namespace,
            self.name(scope),
            scope.resource,
            gpus=stamp.gpus,
            previous=previous,
            dry_run=dry_run,
            applied_by=stamp.applied_by,
        )
