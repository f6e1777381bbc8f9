"""``why <namespace>/<pod>``: why a GPU pod (or a Job's, Deployment's, StatefulSet's or Kueue Workload's) is pending.

Who may ask is checked first, from the policy alone: a namespace the policy does not manage, or another team's, is
refused by name before anything is read from a cluster. Then the pod is found (else a workload of that name and its
first pending pod; else the namespace's pending GPU pods to pick from) and the facts are read through the
``ClusterInspection`` port, the quota through ``QuotaSync``'s current read and ``PodView``, Kueue's waiting
Workloads through ``KueueQuotas``; ``bot.domain.diagnosis`` reasons on them. A read that fails (the API server
down, RBAC missing a permission) is a "could not check" entry of the answer; the other checks still answer.
Nothing is written: no database row, no outbox entry, no cluster object.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import TypeVar

from bot.domain.clusters import cluster_of
from bot.domain.diagnosis import (
    KUEUE_GATE,
    Diagnosis,
    Facts,
    QueueFacts,
    QueueWait,
    QuotaFull,
    QuotaRefused,
    Scheduled,
    diagnose,
    quota_causes,
    short_nodes,
    why_target,
)
from bot.domain.kueue import ClusterQueueSnapshot, PendingWorkload
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope
from bot.domain.scheduling import PodFacts, WorkloadPods
from bot.errors import Forbidden, GpuQuotaError
from bot.services.access import Access
from bot.services.blocked import shortfall
from bot.services.pods import PodView
from bot.services.ports import Action, ActionKind, ButtonLabel, ClusterInspection, KueueQuotas, QuotaCluster
from bot.services.quota_sync import QuotaSync
from bot.services.refusals import NotYoursToDiagnose, Refused
from bot.services.requests import managed_key

log = logging.getLogger(__name__)
T = TypeVar("T")


class Check(StrEnum):
    """What ``why`` reads, each of which may fail on its own."""

    POD = "pod"  # the pod, or the workload of that name
    PODS = "pods"  # the namespace's pods (the pending ones to pick from)
    NODES = "nodes"
    EVENTS = "events"  # the pod's FailedScheduling events
    PRIORITY_CLASSES = "priority_classes"
    HOLDERS = "holders"  # the pods holding the GPUs of the nodes it could use
    AUTOSCALER = "autoscaler"  # the cluster autoscaler's status ConfigMap
    QUOTA = "quota"  # the namespace's quota and the pods holding it
    REFUSALS = "refusals"  # the quota's refusals of a controller's pods (FailedCreate events)
    QUEUE = "queue"  # Kueue's ClusterQueue and waiting Workloads


@dataclass(frozen=True)
class CouldNotCheck:
    """A read that failed: the failing system's words and, for an RBAC refusal, the permission to grant."""

    check: Check
    problem: str
    permission: str | None = None


@dataclass(frozen=True)
class WhyAnswer:
    """The answer about ``kind``/``name`` (Pod, Job, Deployment, StatefulSet, Workload): its finding (of its first
    pending pod for a workload; ``others_pending`` more pend), the [Request +N] buttons of its fixes, what could
    not be checked."""

    namespace: str
    kind: str
    name: str
    finding: Diagnosis | Scheduled
    others_pending: int = 0
    actions: tuple[Action, ...] = ()
    unchecked: tuple[CouldNotCheck, ...] = ()


@dataclass(frozen=True)
class PendingChoice:
    name: str
    asks: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PickAPod:
    """No name given, or ``missing`` names nothing: the namespace's pending GPU pods to pick from (oldest first)."""

    namespace: str
    missing: str | None
    pods: tuple[PendingChoice, ...]
    unchecked: tuple[CouldNotCheck, ...] = ()


@dataclass(frozen=True)
class Unanswered:
    """The pod could not be looked for: ``problem`` is why (None: the bot reads no cluster for ``why``)."""

    namespace: str
    name: str | None
    problem: CouldNotCheck | None = None


WhyOutcome = WhyAnswer | PickAPod | Unanswered


class _Reads:
    """Runs the reads of one answer, keeping each failure as a ``CouldNotCheck``."""

    def __init__(self) -> None:
        self.failed: list[CouldNotCheck] = []

    def get(self, check: Check, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except GpuQuotaError as error:
            log.warning("why: could not check the %s: %s", check.value, error)
            permission = error.permission if isinstance(error, Forbidden) else None
            self.failed.append(CouldNotCheck(check, str(error), permission))
            return None

    def failure(self, check: Check) -> CouldNotCheck | None:
        return next((f for f in self.failed if f.check is check), None)


class Why:
    def __init__(
        self,
        *,
        policy: Policy,
        access: Access,
        inspection: ClusterInspection | None,
        sync: QuotaSync,
        cluster: QuotaCluster,
        pods: PodView | None = None,
        queues: KueueQuotas | None = None,
    ) -> None:
        self._policy = policy
        self._access = access
        self._inspection = inspection
        self._sync = sync
        self._cluster = cluster
        self._pods = pods
        self._queues = queues

    def answer(self, *, user: str, target: str, name: str | None = None) -> WhyOutcome:
        """Why ``target`` (``ns/pod``, ``us-2/ns/pod``, ``ns``, ``us-2/ns``; ``name`` a second word) is pending."""
        wanted = why_target(
            target,
            name,
            clusters=set(self._policy.clusters),
            managed=lambda typed: isinstance(self._policy.namespace_key(typed), str),
        )
        namespace = managed_key(self._policy, wanted.namespace)
        self._check_access(user, namespace)
        if self._inspection is None:
            return Unanswered(namespace, wanted.name)
        if wanted.name is None:
            return self._pick(self._inspection, namespace, None)
        return self._explain(self._inspection, namespace, wanted.name)

    def _check_access(self, user: str, namespace: str) -> None:
        team = self._policy.team_of(namespace)
        assert team is not None, "a managed namespace has a team"
        access = self._access
        if not (access.belongs_to(user, team, fresh=False) or access.may_request(user, team, fresh=False)):
            raise Refused(NotYoursToDiagnose(team.label, namespace))

    def _pick(self, inspection: ClusterInspection, namespace: str, missing: str | None) -> PickAPod | Unanswered:
        reads = _Reads()
        pods = reads.get(Check.PODS, lambda: inspection.pods(namespace))
        if pods is None:
            return Unanswered(namespace, missing, reads.failure(Check.PODS))
        pending = sorted(
            (p for p in pods if p.pending and p.gpu_resources), key=lambda p: (p.created_at is None, p.created_at, p.name)
        )
        choices = tuple(PendingChoice(p.name, {r: p.asks(r) for r in p.gpu_resources}) for p in pending)
        return PickAPod(namespace, missing, choices)

    def _explain(self, inspection: ClusterInspection, namespace: str, name: str) -> WhyOutcome:
        reads = _Reads()
        pod = reads.get(Check.POD, lambda: inspection.pod(namespace, name))
        if pod is None and (failed := reads.failure(Check.POD)):
            return Unanswered(namespace, name, failed)
        if pod is not None:
            return self._answer(namespace, "Pod", name, self._diagnose(inspection, pod, reads), 0, reads)
        workload = reads.get(Check.POD, lambda: inspection.workload_pods(namespace, name))
        if workload is None:
            failed = reads.failure(Check.POD)
            return Unanswered(namespace, name, failed) if failed else self._pick(inspection, namespace, name)
        return self._explain_workload(inspection, namespace, workload, reads)

    def _explain_workload(
        self, inspection: ClusterInspection, namespace: str, workload: WorkloadPods, reads: _Reads
    ) -> WhyAnswer:
        pending = [p for p in workload.pods if p.pending]
        chosen = pending[0] if pending else next(iter(workload.pods), None)
        refused = self._refused(namespace, workload, reads) if workload.kind != "Workload" else ()
        if chosen is None:
            queues = self._queue_facts(namespace, _workload_names(workload), None, reads)
            waiting = Diagnosis(namespace, None, {}, tuple(quota_causes(refused, queues)))
            return self._answer(namespace, workload.kind, workload.name, waiting, 0, reads)
        finding = self._diagnose(inspection, chosen, reads, refused=refused)
        return self._answer(namespace, workload.kind, workload.name, finding, max(len(pending) - 1, 0), reads)

    def _answer(
        self, namespace: str, kind: str, name: str, finding: Diagnosis | Scheduled, others: int, reads: _Reads
    ) -> WhyAnswer:
        causes = finding.causes if isinstance(finding, Diagnosis) else ()
        fixes = [c.fix for c in causes if isinstance(c, QuotaFull | QueueWait) and c.fix is not None]
        actions = tuple(Action(ActionKind.REQUEST_MORE, ButtonLabel.REQUEST_MORE, fix.value, "primary") for fix in fixes)
        return WhyAnswer(namespace, kind, name, finding, others, actions, tuple(reads.failed))

    def _diagnose(
        self, inspection: ClusterInspection, pod: PodFacts, reads: _Reads, *, refused: Sequence[QuotaRefused] = ()
    ) -> Diagnosis | Scheduled:
        if not pod.pending:
            return diagnose(Facts(pod))  # bound: nothing more to read
        cluster = cluster_of(pod.namespace)
        found = reads.get(Check.NODES, lambda: inspection.nodes(cluster))
        nodes = tuple(found) if found is not None else None
        events = reads.get(Check.EVENTS, lambda: inspection.scheduling_events(pod.namespace, pod.name))
        classes = reads.get(Check.PRIORITY_CLASSES, lambda: inspection.priority_class_facts(cluster))
        short = short_nodes(pod, nodes) if nodes is not None else ()
        holders = autoscaler = None
        if short:
            holders = reads.get(Check.HOLDERS, lambda: self._holders(inspection, cluster, short))
            autoscaler = reads.get(Check.AUTOSCALER, lambda: inspection.autoscaler_status(cluster))
        queues: tuple[QueueFacts, ...] = ()
        if KUEUE_GATE in pod.scheduling_gates:
            queues = self._queue_facts(pod.namespace, (f"pod-{pod.name}-",), pod, reads)
        facts = Facts(
            pod,
            nodes=nodes,
            classes=classes,
            holders=holders,
            autoscaler=autoscaler,
            event=events[0] if events else None,
            queues=queues,
            refused=tuple(refused),
        )
        return diagnose(facts)

    def _holders(self, inspection: ClusterInspection, cluster: str, nodes: Sequence[str]) -> tuple[PodFacts, ...]:
        """The GPU pods bound to ``nodes``, of the managed namespaces of ``cluster`` (what the bot may read)."""
        on = set(nodes)
        managed = [key for key in self._policy.managed_namespaces() if cluster_of(key) == cluster]
        return tuple(p for key in managed for p in inspection.pods(key) if p.node_name in on and p.gpu_resources)

    def _refused(self, namespace: str, workload: WorkloadPods, reads: _Reads) -> tuple[QuotaRefused, ...]:
        """The quota refusing the workload's pods (its own FailedCreate, or its ReplicaSet's), with the quota now."""
        refusals = reads.get(Check.REFUSALS, self._cluster.quota_refusals)
        if not refusals:
            return ()
        governed = self._policy.governed_resources(namespace)
        mine = [r for r in refusals if r.namespace == namespace and r.resource in governed and _made_by(workload, r.kind, r.name)]
        found: dict[str, QuotaRefused] = {}
        for refusal in mine:
            if refusal.resource in found:
                continue
            figures = shortfall(refusal.message, refusal.resource)
            scope = QuotaScope(namespace, refusal.resource)
            snapshot = reads.get(Check.QUOTA, partial(self._sync.current, scope))
            hard = snapshot.hard if snapshot else (figures.limited if figures else 0)
            used = snapshot.used if snapshot else (figures.used if figures else 0)
            holders: tuple[str, ...] = ()
            if self._pods is not None:
                held = reads.get(Check.QUOTA, partial(self._pods.pods, scope, fresh=True))
                holders = tuple(sorted(p.name for p in held or () if p.running))
            asks = figures.requested if figures else None
            found[refusal.resource] = QuotaRefused(namespace, refusal.resource, asks, hard, used, holders)
        return tuple(found.values())

    def _queue_facts(self, namespace: str, names: Sequence[str], pod: PodFacts | None, reads: _Reads) -> tuple[QueueFacts, ...]:
        """Kueue's view of the workload named ``names`` (an exact name, or a prefix ending in ``-``) for each resource
        of the namespace a ClusterQueue holds (the pod's, when given)."""
        if self._queues is None:
            return ()
        refs = {
            r: ref
            for r in self._policy.governed_resources(namespace)
            if (ref := self._policy.cluster_queue(namespace, r)) and (pod is None or pod.asks(r) > 0)
        }
        if not refs:
            return ()
        sharing = sorted(
            {ns for ns, _, ref in self._policy.cluster_queues() if ref.name in {r.name for r in refs.values()}} | {namespace}
        )
        queues = self._queues
        waiting = reads.get(Check.QUEUE, lambda: queues.pending_workloads(sharing))
        if waiting is None:
            return ()
        mine = next((w for w in waiting if w.namespace == namespace and _named(w.name, names)), None)
        facts = []
        for resource, ref in refs.items():
            if mine is not None and mine.requests and resource not in mine.requests:
                continue
            scope = QuotaScope(namespace, resource)
            snapshot = reads.get(Check.QUEUE, partial(self._sync.current, scope))
            queued = isinstance(snapshot, ClusterQueueSnapshot)
            in_queue = [w for w in waiting if self._queue_of(w) == ref.name]
            position = _position(in_queue, mine) if mine is not None else None
            facts.append(
                QueueFacts(
                    namespace,
                    resource,
                    ref.name,
                    ref.flavor,
                    snapshot.hard if queued and snapshot else None,
                    snapshot.used if queued and snapshot else None,
                    mine,
                    position,
                    len(in_queue),
                )
            )
        return tuple(facts)

    def _queue_of(self, workload: PendingWorkload) -> str | None:
        """The ClusterQueue the policy keeps the workload's namespace's quota in (its first, by policy order)."""
        return next(
            (
                ref.name
                for r in self._policy.governed_resources(workload.namespace)
                if (ref := self._policy.cluster_queue(workload.namespace, r))
            ),
            None,
        )


def _workload_names(workload: WorkloadPods) -> tuple[str, ...]:
    """What Kueue names the Workload of a workload: its own name, or ``job-<name>-<hash>`` for a Job."""
    return (workload.name,) if workload.kind == "Workload" else (f"{workload.kind.lower()}-{workload.name}-",)


def _named(name: str, names: Sequence[str]) -> bool:
    return any(name.startswith(n) if n.endswith("-") else name == n for n in names)


def _position(in_queue: Sequence[PendingWorkload], mine: PendingWorkload) -> int | None:
    """Its place among the queue's waiting workloads, oldest first (Kueue orders by priority first: an estimate)."""
    ordered = sorted(in_queue, key=lambda w: (w.created_at is None, w.created_at, w.namespace, w.name))
    return next((i + 1 for i, w in enumerate(ordered) if (w.namespace, w.name) == (mine.namespace, mine.name)), None)


def _made_by(workload: WorkloadPods, kind: str, name: str) -> bool:
    """Whether a FailedCreate of ``kind``/``name`` is the workload's: its own, or a Deployment's ReplicaSet's."""
    if workload.kind == "Deployment":
        return kind == "ReplicaSet" and name.startswith(f"{workload.name}-")
    return (kind, name) == (workload.kind, workload.name)
