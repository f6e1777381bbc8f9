"""The ResourceQuota as a quota target: the first implementation of ``ports.QuotaTarget``.

It names the namespace's quota from the policy and reads and writes it through ``QuotaCluster``
(``bot.adapters.kube``: a dry run, then a JSON merge patch carrying the read's ``resourceVersion`` and
the stamp annotations). Must not: decide what to write; that is ``QuotaSync``'s.
"""

from __future__ import annotations

from bot.domain.commands import format_request_id
from bot.domain.policy import Policy
from bot.domain.quota import QuotaSnapshot, Stamp
from bot.services.ports import QuotaCluster


class ResourceQuotaTarget:
    """Implements ``QuotaTarget`` with the ``requests.nvidia.com/gpu`` of one ResourceQuota per namespace."""

    def __init__(self, *, policy: Policy, cluster: QuotaCluster) -> None:
        self._policy = policy
        self._cluster = cluster

    def name(self, namespace: str) -> str:
        return self._policy.quota_name(namespace)

    def read(self, namespace: str) -> QuotaSnapshot | None:
        return self._cluster.read_quota(namespace, self.name(namespace))

    def stamp(self, gpus: int, *, request_id: int | None) -> Stamp:
        return Stamp(gpus=gpus, applied_by=format_request_id(request_id) if request_id else "reconcile")

    def dry_run(self, namespace: str, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._write(namespace, stamp, previous, dry_run=True)

    def write(self, namespace: str, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._write(namespace, stamp, previous, dry_run=False)

    def _write(self, namespace: str, stamp: Stamp, previous: QuotaSnapshot | None, *, dry_run: bool) -> QuotaSnapshot:
        return self._cluster.write_quota(
            namespace, self.name(namespace), gpus=stamp.gpus, previous=previous, dry_run=dry_run, applied_by=stamp.applied_by
        )
