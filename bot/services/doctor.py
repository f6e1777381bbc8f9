"""``doctor``: the GPU stack's checklist, every check on its own (``bot.domain.stack_health`` judges the facts).

Reads the clusters through ``ClusterInspection`` (nodes, DaemonSets, PriorityClasses, pods), the quota objects
through ``QuotaSync`` (the same reads as the writes: ResourceQuota, ClusterQueue or FederatedResourceQuota), and
Prometheus through ``ScrapeInspection``. A read that fails makes only the checks that need it "could not check"
(an RBAC refusal naming the permission to grant); every other check still answers, and each cluster is examined
on its own thread, so one that hangs or is down never stops the others. Nothing is written, but the weekly run's
memory of what it found (``DoctorRuns``), so that the admin channel hears only of checks newly broken.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum

from bot.clock import Clock
from bot.domain.clusters import HOME, cluster_of
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope
from bot.domain.scheduling import PodFacts
from bot.domain.stack_health import (
    CLUSTER_CHECKS,
    DCGM_PROFILING,
    DCGM_UTIL,
    KSM_REQUESTS,
    NAMESPACE_LABELS,
    SCRAPE_CHECKS,
    Cause,
    Check,
    CheckResult,
    Checkup,
    DevicePluginEvidence,
    Exporter,
    MigEvidence,
    MissingQuota,
    NodeGpusEvidence,
    PriorityClassEvidence,
    QuotaEvidence,
    QuotaGap,
    QuotaKind,
    SeriesEvidence,
    Status,
    TargetEvidence,
    Unchecked,
    UnlimitedPodsEvidence,
    dcgm_series_check,
    device_plugin_check,
    ksm_series_check,
    mig_check,
    newly_broken,
    node_gpus_check,
    priority_class_check,
    profiling_series_check,
    quota_check,
    target_check,
    unchecked,
    unlimited_pods_check,
)
from bot.errors import (
    Forbidden,
    GpuQuotaError,
    KarmadaObjectMissing,
    KarmadaPart,
    KueueObjectMissing,
    KueuePart,
    NamespaceNotFound,
    TemporaryError,
)
from bot.services.announce import Announcer
from bot.services.messages import BrokenCheck, StackBroken
from bot.services.ports import ClusterInspection, Repository, ScrapeInspection, Transactions
from bot.services.quota_sync import QuotaSync

log = logging.getLogger(__name__)

PARALLEL_CLUSTERS = 4


class DoctorRefusal(StrEnum):
    NOT_ADMIN = "not_admin"
    UNKNOWN_CLUSTER = "unknown_cluster"


@dataclass(frozen=True)
class Refusal:
    """``doctor`` refused: not an admin, or a cluster the policy does not name (``known``: the names it does)."""

    reason: DoctorRefusal
    cluster: str = ""
    known: tuple[str, ...] = ()


@dataclass(frozen=True)
class WeeklyRun:
    """What the weekly run found, what became broken since the last one, and whether the admins were told.
    ``errors``: the checks that could not be done for a failing read (a failed run for the job's metrics)."""

    checkup: Checkup
    newly_broken: tuple[CheckResult, ...]
    posted: bool
    errors: tuple[str, ...] = ()


class Doctor:
    def __init__(
        self,
        *,
        policy: Policy,
        inspection: ClusterInspection | None,
        scrape: ScrapeInspection | None,
        sync: QuotaSync,
        database: Transactions,
        clock: Clock,
        announcer: Announcer | None = None,
        is_admin: Callable[[str], bool] | None = None,
    ) -> None:
        """``inspection`` None: no cluster reader (the cluster's checks say so); ``scrape`` None: no Prometheus."""
        self._policy = policy
        self._inspection = inspection
        self._scrape = scrape
        self._sync = sync
        self._db = database
        self._clock = clock
        self._announce = announcer
        self._is_admin = is_admin

    # --- the use cases -----------------------------------------------------------------------

    def for_admin(self, *, user: str, cluster: str | None = None) -> Checkup | Refusal:
        """``/gpu-quota doctor [cluster]``: admins only, refused before anything is read."""
        if self._is_admin is None or not self._is_admin(user):
            return Refusal(DoctorRefusal.NOT_ADMIN)
        return self.examine_named(cluster)

    def examine_named(self, cluster: str | None) -> Checkup | Refusal:
        """The checklist of every cluster, or of the one named as the policy names it."""
        if cluster is None:
            return self.examine()
        names = {self._policy.cluster_label(part) or part: part for part in self._policy.cluster_names()}
        if cluster not in names:
            return Refusal(DoctorRefusal.UNKNOWN_CLUSTER, cluster, tuple(name for name in names if name))
        return self.examine([names[cluster]])

    def examine(self, clusters: Sequence[str] | None = None) -> Checkup:
        """Every check in each cluster (key parts; default: every cluster of the policy), the clusters at once."""
        parts = list(clusters) if clusters is not None else self._policy.cluster_names()
        with ThreadPoolExecutor(max_workers=min(PARALLEL_CLUSTERS, len(parts)), thread_name_prefix="doctor") as pool:
            per_cluster = list(pool.map(self._cluster, parts))
        return Checkup(tuple(result for results in per_cluster for result in results))

    def weekly(self) -> WeeklyRun:
        """The weekly run: the checklist; the admin channel told (through the outbox) of checks that changed to
        broken since the last run. A check that could not be done keeps what was remembered of it."""
        checkup = self.examine()
        channel = self._policy.admin_channel
        out = self._announce.outgoing() if self._announce is not None else None

        def record(repo: Repository) -> tuple[CheckResult, ...]:
            before = repo.doctor_statuses()
            broken = newly_broken(before, checkup)
            seen = {key: status.value for key, status in checkup.statuses().items() if status is not Status.UNCHECKED}
            repo.remember_doctor_statuses({**before, **seen}, at=self._clock.now())
            if broken and channel and out is not None:
                out.post(repo, channel, StackBroken(tuple(self._broken_check(result) for result in broken)))
            return broken

        broken = self._db.run(record)
        if out is not None:
            out.deliver()
        errors = tuple(
            f"{result.key}: {result.evidence.detail}"
            for result in checkup.results
            if isinstance(result.evidence, Unchecked) and result.evidence.cause is not Cause.NOT_CONNECTED
        )
        return WeeklyRun(checkup, broken, posted=bool(broken and channel and out is not None), errors=errors)

    def _broken_check(self, result: CheckResult) -> BrokenCheck:
        """The notice's part of a result: the cluster by its policy name when there are several, else none."""
        several = len(self._policy.cluster_names()) > 1
        return BrokenCheck(result.check, self._policy.cluster_label(result.cluster) if several else "", subjects(result))

    # --- one cluster ---------------------------------------------------------------------------

    def _cluster(self, cluster: str) -> list[CheckResult]:
        """The cluster's checks; a fault of the bot's own in one cluster's checks (a bug: every failure of a read is
        already its check's could-not-check) is logged and makes that cluster's lines could-not-check, not the others'."""
        try:
            return self._checks(cluster)
        except Exception as error:
            log.exception("the checks of cluster %r failed", cluster)
            return [unchecked(check, Cause.FAILED, detail=type(error).__name__, cluster=cluster) for check in Check]

    def _checks(self, cluster: str) -> list[CheckResult]:
        return [
            *self._nodes_and_plugin(cluster),
            *self._priority_classes(cluster),
            *self._quotas(cluster),
            *self._unlimited_pods(cluster),
            *self._scrape_side(cluster),
        ]

    def _nodes_and_plugin(self, cluster: str) -> list[CheckResult]:
        inspection = self._inspection
        if inspection is None:
            return [unchecked(check, Cause.NOT_CONNECTED, cluster=cluster) for check in CLUSTER_CHECKS]
        try:
            nodes = inspection.nodes(cluster)
        except GpuQuotaError as error:
            return [_unchecked(check, error, cluster) for check in CLUSTER_CHECKS]
        try:
            plugin = device_plugin_check(inspection.daemon_sets(cluster), nodes, cluster=cluster)
        except GpuQuotaError as error:
            plugin = _unchecked(Check.DEVICE_PLUGIN, error, cluster)
        return [plugin, node_gpus_check(nodes, cluster=cluster), mig_check(nodes, cluster=cluster)]

    def _priority_classes(self, cluster: str) -> list[CheckResult]:
        named: dict[str, list[str]] = {}
        for namespace in self._namespaces(cluster):
            for name in self._policy.borrowed_priority_classes(namespace):
                named.setdefault(name, []).append(namespace)
        if not named:
            return [CheckResult(Check.PRIORITY_CLASSES, Status.OK, PriorityClassEvidence(named=()), None, cluster)]
        if self._inspection is None:
            return [unchecked(Check.PRIORITY_CLASSES, Cause.NOT_CONNECTED, cluster=cluster)]
        try:
            known = self._inspection.priority_class_facts(cluster)
        except GpuQuotaError as error:
            return [_unchecked(Check.PRIORITY_CLASSES, error, cluster)]
        return [priority_class_check(named, known, cluster=cluster)]

    def _quotas(self, cluster: str) -> list[CheckResult]:
        scopes = [scope for scope in self._policy.governed_scopes() if cluster_of(scope.namespace) == cluster]
        missing: list[MissingQuota] = []
        try:
            for scope in scopes:
                gap = self._quota_gap(scope)
                if gap is not None:
                    missing.append(
                        MissingQuota(scope.namespace, scope.resource, self._kind(scope), self._sync.quota_name(scope), gap)
                    )
        except GpuQuotaError as error:
            return [_unchecked(Check.QUOTA_OBJECTS, error, cluster)]
        return [quota_check(len(scopes), missing, cluster=cluster)]

    def _quota_gap(self, scope: QuotaScope) -> QuotaGap | None:
        """What is missing of the scope's quota object, read as the writes read it; None: it is there."""
        try:
            snapshot = self._sync.current(scope)
        except NamespaceNotFound:
            return QuotaGap.NAMESPACE
        except KueueObjectMissing as missing:
            return QuotaGap.OBJECT if missing.missing in (KueuePart.KUEUE, KueuePart.CLUSTER_QUEUE) else QuotaGap.RESOURCE
        except KarmadaObjectMissing as missing:
            return QuotaGap.OBJECT if missing.missing in (KarmadaPart.KARMADA, KarmadaPart.FEDERATED_QUOTA) else QuotaGap.RESOURCE
        if snapshot is None:
            return QuotaGap.OBJECT
        return None if snapshot.counted else QuotaGap.RESOURCE

    def _kind(self, scope: QuotaScope) -> QuotaKind:
        if self._policy.federated_quota(scope.namespace, scope.resource) is not None:
            return QuotaKind.FEDERATED
        if self._policy.cluster_queue(scope.namespace, scope.resource) is not None:
            return QuotaKind.CLUSTER_QUEUE
        return QuotaKind.RESOURCE_QUOTA

    def _unlimited_pods(self, cluster: str) -> list[CheckResult]:
        if self._inspection is None:
            return [unchecked(Check.UNLIMITED_PODS, Cause.NOT_CONNECTED, cluster=cluster)]
        pods: list[PodFacts] = []
        try:
            for namespace in self._namespaces(cluster):
                pods.extend(self._inspection.pods(namespace))
        except GpuQuotaError as error:
            return [_unchecked(Check.UNLIMITED_PODS, error, cluster)]
        return [unlimited_pods_check(pods, cluster=cluster)]

    def _scrape_side(self, cluster: str) -> list[CheckResult]:
        scrape = self._scrape
        if scrape is None:
            return [unchecked(check, Cause.NOT_CONNECTED, cluster=cluster) for check in SCRAPE_CHECKS]
        expected = self._policy.metrics.sample_interval.total_seconds()
        try:
            targets = scrape.targets(cluster)
            results = [
                target_check(exporter, targets, expected_seconds=expected, cluster=cluster)
                for exporter in (Exporter.DCGM, Exporter.KSM)
            ]
        except GpuQuotaError as error:
            results = [_unchecked(check, error, cluster) for check in (Check.DCGM_TARGET, Check.KSM_TARGET)]
        try:
            series = scrape.series([DCGM_UTIL, DCGM_PROFILING, KSM_REQUESTS], labels=NAMESPACE_LABELS, cluster=cluster)
            results += [
                dcgm_series_check(series[DCGM_UTIL], cluster=cluster),
                profiling_series_check(series[DCGM_PROFILING], cluster=cluster),
                ksm_series_check(series[KSM_REQUESTS], cluster=cluster),
            ]
        except GpuQuotaError as error:
            results += [
                _unchecked(check, error, cluster) for check in (Check.DCGM_SERIES, Check.PROFILING_SERIES, Check.KSM_SERIES)
            ]
        return results

    def _namespaces(self, cluster: str) -> list[str]:
        return [key for key in self._policy.managed_namespaces() if cluster_of(key) == cluster]


def _unchecked(check: Check, error: GpuQuotaError, cluster: str) -> CheckResult:
    """A check whose read failed: why, and for an RBAC refusal what to grant."""
    log.warning("doctor: %s in cluster %s not checked: %s", check.value, cluster or HOME or "home", error)
    if isinstance(error, Forbidden):
        return unchecked(check, Cause.FORBIDDEN, detail=str(error), permission=error.permission, cluster=cluster)
    cause = Cause.UNREACHABLE if isinstance(error, TemporaryError) else Cause.FAILED
    return unchecked(check, cause, detail=str(error), cluster=cluster)


def subjects(result: CheckResult) -> tuple[str, ...]:
    """What a result is about, for a short notice: the nodes, targets, namespaces, pods, classes or metric."""
    evidence = result.evidence
    if isinstance(evidence, DevicePluginEvidence):
        return evidence.not_covered or evidence.daemon_sets
    if isinstance(evidence, NodeGpusEvidence):
        return evidence.silent
    if isinstance(evidence, MigEvidence):
        return tuple(state.node for state in evidence.unsettled)
    if isinstance(evidence, TargetEvidence):
        return tuple(target.url for target in evidence.down)
    if isinstance(evidence, SeriesEvidence):
        return (evidence.metric,)
    if isinstance(evidence, PriorityClassEvidence):
        return tuple(missing.name for missing in evidence.missing)
    if isinstance(evidence, QuotaEvidence):
        return tuple(sorted({missing.namespace for missing in evidence.missing}))
    if isinstance(evidence, UnlimitedPodsEvidence):
        return tuple(pod.pod for pod in evidence.unlimited)
    return ()
