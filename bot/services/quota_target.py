"""Quota targets, the implementations of ``ports.QuotaTarget``: where the policy keeps a scope's quota.

- ``ResourceQuotaTarget``: the scope's ``requests.<resource>`` in the namespace's ResourceQuota, through
  ``QuotaCluster`` (``bot.adapters.kube``: a dry run, then a JSON merge patch carrying the read's
  ``resourceVersion`` and the stamp annotations). Every resource of a namespace lives in its one
  ResourceQuota, so they share its critical section (named by the namespace, as before resources were
  configurable: replicas of either release exclude each other).
- ``ClusterQueueTarget``: a Kueue ClusterQueue flavor's ``nominalQuota`` of the resource, through
  ``KueueQuotas`` (``bot.adapters.kueue``); its critical section is the queue's.
- ``FederatedQuotaTarget``: a member cluster's assignment in a Karmada FederatedResourceQuota (moved together
  with ``spec.overall``), through ``FederatedQuotas`` (``bot.adapters.karmada``) on the plane the scope's
  ``FederatedQuotaRef`` names; its critical section is the FederatedResourceQuota's, every member's alike.
- ``PolicyTargets``: each scope to the one the policy names.

Must not: decide what to write; that is ``QuotaSync``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bot.domain.clusters import split_key
from bot.domain.commands import format_request_id
from bot.domain.karmada import FederatedQuotaRef, FederatedQuotaSnapshot
from bot.domain.kueue import ClusterQueueSnapshot
from bot.domain.policy import ClusterQueueRef, Policy
from bot.domain.quota import QuotaScope, QuotaSnapshot, Stamp
from bot.errors import KarmadaObjectMissing, KarmadaPart, KueueObjectMissing, KueuePart
from bot.services.ports import FederatedQuotas, KueueQuotas, QuotaCluster


def stamp_for(gpus: int, *, request_id: int | None) -> Stamp:
    """The stamp of a write for ``request_id`` (None: a reconcile): ``GQ-17`` or ``reconcile``."""
    return Stamp(gpus=gpus, applied_by=format_request_id(request_id) if request_id else "reconcile")


class _OneWrite:
    """What the targets share: a dry run and the write are one write, with ``dry_run`` told; the stamp is
    ``stamp_for``'s."""

    def stamp(self, gpus: int, *, request_id: int | None) -> Stamp:
        return stamp_for(gpus, request_id=request_id)

    def dry_run(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._write(scope, stamp, previous, dry_run=True)

    def write(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._write(scope, stamp, previous, dry_run=False)

    def _write(self, scope: QuotaScope, stamp: Stamp, previous: QuotaSnapshot | None, *, dry_run: bool) -> QuotaSnapshot:
        raise NotImplementedError


class ResourceQuotaTarget(_OneWrite):
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


class ClusterQueueTarget(_OneWrite):
    """Implements ``QuotaTarget`` with one flavor's ``nominalQuota`` of a Kueue ClusterQueue (``KueueQuotas``:
    a JSON Patch with ``test`` ops on the flavor's and the resource's place, the read's resourceVersion as
    precondition, a server-side dry run first). The queue is never created: a missing one is refused.
    Scopes writing one ClusterQueue share its critical section, in every replica."""

    def __init__(self, *, policy: Policy, kueue: KueueQuotas) -> None:
        self._policy = policy
        self._kueue = kueue

    def lock_name(self, scope: QuotaScope) -> str:
        return f"clusterqueue/{self._ref(scope).name}"

    def name(self, scope: QuotaScope) -> str:
        return self._ref(scope).name

    def read(self, scope: QuotaScope, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        ref = self._ref(scope)
        return self._kueue.read_cluster_queue(scope.namespace, ref.name, ref.flavor, scope.resource)

    def _write(self, scope: QuotaScope, stamp: Stamp, previous: QuotaSnapshot | None, *, dry_run: bool) -> QuotaSnapshot:
        ref = self._ref(scope)
        assert isinstance(previous, ClusterQueueSnapshot), "a ClusterQueue is read before it is written, never created"
        return self._kueue.write_cluster_queue(
            scope.namespace,
            ref.name,
            ref.flavor,
            scope.resource,
            gpus=stamp.gpus,
            previous=previous,
            dry_run=dry_run,
            applied_by=stamp.applied_by,
            borrowing_limit_delta=ref.adjust_borrowing_limit,
        )

    def _ref(self, scope: QuotaScope) -> ClusterQueueRef:
        ref = self._policy.cluster_queue(scope.namespace, scope.resource)
        assert ref is not None, "only scopes the policy keeps in a ClusterQueue are routed here"
        return ref


class PolicyTargets:
    """Implements ``QuotaTarget`` by the policy: a scope the policy keeps in a Kueue ClusterQueue goes to
    ``ClusterQueueTarget``, one kept in a Karmada FederatedResourceQuota to ``FederatedQuotaTarget``, every
    other to ``ResourceQuotaTarget``."""

    def __init__(
        self,
        *,
        policy: Policy,
        quotas: ResourceQuotaTarget,
        queues: ClusterQueueTarget | None,
        federated: FederatedQuotaTarget | None = None,
    ) -> None:
        """``queues`` / ``federated`` None: the bot has no Kueue / Karmada client (a scope the policy keeps there
        is refused)."""
        self._policy = policy
        self._quotas = quotas
        self._queues = queues
        self._federated = federated

    def _of(self, scope: QuotaScope) -> ResourceQuotaTarget | ClusterQueueTarget | FederatedQuotaTarget:
        federated = self._policy.federated_quota(scope.namespace, scope.resource)
        if federated is not None:
            if self._federated is None:
                raise KarmadaObjectMissing(
                    KarmadaPart.KARMADA,
                    namespace=scope.namespace,
                    federated_quota=federated.name,
                    member=federated.member,
                    resource=scope.resource,
                )
            return self._federated
        ref = self._policy.cluster_queue(scope.namespace, scope.resource)
        if ref is None:
            return self._quotas
        if self._queues is None:
            raise KueueObjectMissing(KueuePart.KUEUE, cluster_queue=ref.name, flavor=ref.flavor, resource=scope.resource)
        return self._queues

    def lock_name(self, scope: QuotaScope) -> str:
        return self._of(scope).lock_name(scope)

    def name(self, scope: QuotaScope) -> str:
        return self._of(scope).name(scope)

    def read(self, scope: QuotaScope, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        return self._of(scope).read(scope, max_age=max_age)

    def stamp(self, gpus: int, *, request_id: int | None) -> Stamp:
        return stamp_for(gpus, request_id=request_id)

    def dry_run(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._of(scope).dry_run(scope, stamp, previous=previous)

    def write(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        return self._of(scope).write(scope, stamp, previous=previous)


class FederatedQuotaTarget(_OneWrite):
    """Implements ``QuotaTarget`` with a member cluster's assignment of the resource in a Karmada
    FederatedResourceQuota (``FederatedQuotas``: one JSON Patch setting the assignment and moving
    ``spec.overall`` by as much, a ``test`` on the member's place, the read's resourceVersion as precondition,
    a server-side dry run first). The quota lives on the plane in the namespace of the scope's name (the key's
    name part: Karmada propagates a namespace under its own name); it is never created: a missing one is
    refused. Every member's scope of one FederatedResourceQuota writes the same object, so they share its
    critical section, in every replica."""

    def __init__(
        self,
        *,
        refs: Callable[[QuotaScope], FederatedQuotaRef | None],
        planes: Mapping[str, FederatedQuotas],
    ) -> None:
        """``refs``: the policy's FederatedResourceQuota of a scope; ``planes``: each Karmada plane the policy
        names, by name."""
        self._refs = refs
        self._planes = planes

    def lock_name(self, scope: QuotaScope) -> str:
        return f"federatedresourcequota/{split_key(scope.namespace)[1]}/{self._ref(scope).name}"

    def name(self, scope: QuotaScope) -> str:
        return self._ref(scope).name

    def read(self, scope: QuotaScope, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        ref = self._ref(scope)
        return self._plane(ref).read_federated_quota(
            scope.namespace, split_key(scope.namespace)[1], ref.name, ref.member, scope.resource
        )

    def _write(self, scope: QuotaScope, stamp: Stamp, previous: QuotaSnapshot | None, *, dry_run: bool) -> QuotaSnapshot:
        ref = self._ref(scope)
        assert isinstance(previous, FederatedQuotaSnapshot), (
            "a FederatedResourceQuota is read before it is written, never created"
        )
        return self._plane(ref).write_federated_quota(
            scope.namespace,
            split_key(scope.namespace)[1],
            ref.name,
            ref.member,
            scope.resource,
            gpus=stamp.gpus,
            previous=previous,
            dry_run=dry_run,
            applied_by=stamp.applied_by,
        )

    def _ref(self, scope: QuotaScope) -> FederatedQuotaRef:
        ref = self._refs(scope)
        assert ref is not None, "only scopes the policy keeps in a FederatedResourceQuota are routed here"
        return ref

    def _plane(self, ref: FederatedQuotaRef) -> FederatedQuotas:
        plane = self._planes.get(ref.plane)
        assert plane is not None, f"every Karmada plane the policy names is built in the bootstrap ({ref.plane})"
        return plane
