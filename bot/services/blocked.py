"""Workloads kept from starting, and why: the quota, or the cluster's free GPUs.

``FailedCreate`` events saying ``exceeded quota`` for a governed resource (``requests.<resource>``)
in managed namespaces produce one message to the team, with a [Request more] button that opens the
request form prefilled with what would have been needed, of that resource. GPU pods still pending with
``FailedScheduling`` events saying ``Insufficient <resource>`` are a different story (more quota would not help: the nodes
are full, and preemption decides who gets the next GPU), told in one message per namespace and check,
without that button. Each quota alert is counted per namespace and day: the weekly proposals cite
how often the quota blocked a team."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from functools import partial

from bot.clock import Clock
from bot.domain.policy import Policy
from bot.domain.priority import GpuPod, WaitCause, wait_cause
from bot.domain.quota import QuotaScope
from bot.domain.resources import GPU, quota_key
from bot.errors import GpuQuotaError
from bot.services.announce import Announcer, Outgoing
from bot.services.messages import QuotaBlocked, SchedulingWait, WaitingPod, WorkloadWaiting
from bot.services.pods import PodView
from bot.services.ports import (
    Action,
    ActionKind,
    ButtonLabel,
    KueueQuotas,
    QuotaCluster,
    QuotaRefusal,
    Repository,
    Transactions,
    Workloads,
)
from bot.services.stores import BlockedAlerts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Shortfall:
    requested: int
    used: int
    limited: int

    @property
    def missing(self) -> int:
        return max(1, self.used + self.requested - self.limited)


def shortfall(message: str, resource: str = GPU) -> Shortfall | None:
    """The figures of ``resource`` in an ``exceeded quota`` message, when it has them."""
    key = re.escape(quota_key(resource))
    figures = re.compile(
        rf"requested: (?:[^,]*,)*?\s*{key}=(\d+).*?used: (?:[^,]*,)*?\s*{key}=(\d+).*?limited: (?:[^,]*,)*?\s*{key}=(\d+)",
        re.DOTALL,
    )
    match = figures.search(message)
    return Shortfall(*(int(g) for g in match.groups())) if match else None


KEY_LIMIT = 300  # blocked_alerts.key


def alert_key(namespace: str, kind: str, name: str) -> str:
    """``namespace/kind/name``; a name too long for the column (names may have 253 characters) is hashed."""
    key = f"{namespace}/{kind}/{name}"
    if len(key) <= KEY_LIMIT:
        return key
    return f"{namespace}/{kind}/sha256:{hashlib.sha256(name.encode()).hexdigest()}"


class BlockedWatch:
    def __init__(
        self,
        *,
        policy: Policy,
        cluster: QuotaCluster,
        database: Transactions,
        announcer: Announcer,
        clock: Clock,
        workloads: Workloads | None = None,
        pods: PodView | None = None,
        queues: KueueQuotas | None = None,
    ) -> None:
        """``queues``: Kueue, whose Workloads waiting for quota are reported too (None: not read)."""
        self._queues = queues
        self._workloads = workloads
        self._pods = pods
        self._policy = policy
        self._cluster = cluster
        self._db = database
        self._announce = announcer
        self._clock = clock

    def check(self) -> list[str]:
        """The scheduled job; returns the keys (namespace/kind/name) of the workloads reported."""
        return self._check_quota() + self._check_scheduling() + self._check_queued()

    def _check_queued(self) -> list[str]:
        """Kueue Workloads waiting for quota of a governed resource: one message each, with [Request more]
        prefilled (that resource, what Kueue says is missing), once while it waits."""
        if self._queues is None:
            return []
        # Only where a ClusterQueue holds the quota: more of any other quota would not admit a Workload.
        watched = [ns for ns in self._policy.managed_namespaces() if self._alerts_for(ns) and self._queued_in(ns)]
        try:
            waiting = self._queues.pending_workloads(watched) if watched else []
        except GpuQuotaError as error:
            log.error("cannot read the Kueue Workloads waiting for quota: %s", error)
            return []
        reported = []
        for workload in waiting:
            # The flavor each resource is governed in: what another flavor of the queue lacks, more of it would not give.
            flavors = {
                r: ref.flavor
                for r in self._policy.governed_resources(workload.namespace)
                if (ref := self._policy.cluster_queue(workload.namespace, r))
            }
            short = next(
                (s for s in workload.shortfalls if s.resource in flavors and s.flavor in (None, flavors[s.resource])), None
            )
            if short is None or workload.preemption_pending:
                continue  # not short of a governed resource, or Kueue is already freeing what it needs
            team = self._policy.team_of(workload.namespace)
            assert team is not None
            key = alert_key(workload.namespace, "Workload", workload.name)
            notice = WorkloadWaiting(
                workload.namespace,
                workload.name,
                workload.queue_name,
                short.resource,
                workload.more_needed(short.resource, short.flavor),
                workload.message,
            )
            out = self._announce.outgoing()
            if self._db.run(partial(self._alert_queued, out=out, channel=team.channel, key=key, notice=notice)):
                reported.append(key)
            out.deliver()
        return reported

    def _alert_queued(self, repo: Repository, *, out: Outgoing, channel: str, key: str, notice: WorkloadWaiting) -> bool:
        """As ``_alert_quota``: remembered with its message in one transaction; False when alerted already."""
        if repo.blocked_alerted(key):
            return False
        now = self._clock.now()
        repo.remember_blocked_alert(
            key, namespace=notice.namespace, at=now, quota_day=now.astimezone(self._policy.schedules.zone).date()
        )
        more = f"+{notice.more}" if notice.more else "+1"
        value = json.dumps({"namespace": notice.namespace, "gpus": more, "resource": notice.resource})
        out.post(repo, channel, notice, actions=[Action(ActionKind.REQUEST_MORE, ButtonLabel.REQUEST_MORE, value, "primary")])
        return True

    def _queued_in(self, namespace: str) -> bool:
        """Whether the policy keeps a quota of the namespace in a Kueue ClusterQueue."""
        return any(self._policy.cluster_queue(namespace, r) for r in self._policy.governed_resources(namespace))

    def _alerts_for(self, namespace: str) -> bool:
        team = self._policy.team_of(namespace)
        return team is not None and team.notifications.blocked_workloads

    def _check_quota(self) -> list[str]:
        try:
            refusals = self._cluster.quota_refusals()
        except GpuQuotaError as error:
            log.error("cannot read quota refusals: %s", error)
            return []
        reported = []
        for refusal in refusals:
            team = self._policy.team_of(refusal.namespace)
            if team is None or not team.notifications.blocked_workloads:
                continue
            if refusal.resource not in self._policy.governed_resources(refusal.namespace):
                continue  # another resource's quota: more of a governed one would not help
            key = alert_key(refusal.namespace, refusal.kind, refusal.name)
            out = self._announce.outgoing()
            if self._db.run(partial(self._alert_quota, out=out, channel=team.channel, key=key, refusal=refusal)):
                reported.append(key)
            out.deliver()
        return reported

    def _alert_quota(self, repo: Repository, *, out: Outgoing, channel: str, key: str, refusal: QuotaRefusal) -> bool:
        """Remember the alert and record its message in one transaction (a crash between them can
        neither lose the alert nor send it twice); False when it was alerted already."""
        if repo.blocked_alerted(key):
            return False
        now = self._clock.now()
        day = now.astimezone(self._policy.schedules.zone).date()
        repo.remember_blocked_alert(key, namespace=refusal.namespace, at=now, quota_day=day)
        text, actions = _quota_notice(refusal)
        out.post(repo, channel, text, actions=actions)
        return True

    def _check_scheduling(self) -> list[str]:
        if self._workloads is None or self._pods is None:
            return []
        try:
            failures = self._workloads.scheduling_failures()
        except GpuQuotaError as error:
            log.error("cannot read scheduling failures: %s", error)
            return []
        waiting: dict[str, list[_Waiting]] = {}
        pending: dict[QuotaScope, dict[str, GpuPod]] = {}  # read once per namespace, resource and check
        seen: set[str] = set()  # a pod has one event per message the scheduler gave it: alerted once
        for failure in failures:
            team = self._policy.team_of(failure.namespace)
            if team is None or not team.notifications.blocked_workloads:
                continue
            if failure.resource not in self._policy.governed_resources(failure.namespace):
                continue  # waiting for something else than the GPUs the bot governs (rdma/hca, ...)
            key = alert_key(failure.namespace, "Pod", failure.pod)
            if key in seen or self._db.run(partial(_alerted, key=key)):
                continue
            seen.add(key)
            scope = QuotaScope(failure.namespace, failure.resource)
            if scope not in pending:
                pending[scope] = self._pending_pods(scope)
            pod = pending[scope].get(failure.pod)
            cause = wait_cause(failure.message, nominated_node=pod.nominated_node) if pod else None
            if pod is None or cause is None:
                continue  # scheduled or gone since (events outlive their cause by an hour)
            waiting.setdefault(failure.namespace, []).append(_Waiting(key, pod, cause, failure.resource))
        reported = []
        for namespace, pods in sorted(waiting.items()):
            team = self._policy.team_of(namespace)
            assert team is not None
            out = self._announce.outgoing()
            reported += self._db.run(
                partial(self._alert_scheduling, out=out, channel=team.channel, namespace=namespace, pods=pods)
            )
            out.deliver()
        return reported

    def _alert_scheduling(
        self, repo: Repository, *, out: Outgoing, channel: str, namespace: str, pods: list[_Waiting]
    ) -> list[str]:
        """Remember the pods' alerts and record the one message about them in one transaction; the keys
        told (none when another replica told them all meanwhile)."""
        fresh = [entry for entry in pods if not repo.blocked_alerted(entry.key)]
        if not fresh:
            return []
        for entry in fresh:
            repo.remember_blocked_alert(entry.key, namespace=namespace, at=self._clock.now())
        out.post(repo, channel, _scheduling_notice(namespace, fresh))
        return [entry.key for entry in fresh]

    def _pending_pods(self, scope: QuotaScope) -> dict[str, GpuPod]:
        """The scope's pending pods by name; none when they cannot be read (the next check tries again)."""
        assert self._pods is not None
        try:
            # Fresh: a pod that started waiting after the last status must not be missed for 30 s.
            pods = self._pods.pods(scope, fresh=True)
        except GpuQuotaError as error:
            log.warning("cannot read the GPU pods of %s: %s", scope.namespace, error)
            return {}
        return {pod.name: pod for pod in pods if pod.phase == "Pending"}


def _quota_notice(refusal: QuotaRefusal) -> tuple[QuotaBlocked, list[Action]]:
    """The message to the team about a workload the quota keeps from starting, with its [Request more]."""
    figures = shortfall(refusal.message, refusal.resource)
    more = f"+{figures.missing}" if figures else "+1"
    requested, used, limited = (figures.requested, figures.used, figures.limited) if figures else (None, 0, 0)
    text = QuotaBlocked(refusal.namespace, refusal.kind, refusal.name, refusal.count, requested, used, limited, refusal.resource)
    value = json.dumps({"namespace": refusal.namespace, "gpus": more, "resource": refusal.resource})
    return text, [Action(ActionKind.REQUEST_MORE, ButtonLabel.REQUEST_MORE, value, "primary")]


@dataclass(frozen=True)
class _Waiting:
    key: str
    pod: GpuPod
    cause: WaitCause
    resource: str


_SHOWN = 10


def _scheduling_notice(namespace: str, waiting: list[_Waiting]) -> SchedulingWait:
    pods = tuple(WaitingPod(e.pod.name, e.pod.gpus, e.pod.class_label, e.cause, e.resource) for e in waiting[:_SHOWN])
    return SchedulingWait(namespace, len(waiting), pods)


def _alerted(repo: BlockedAlerts, *, key: str) -> bool:
    return repo.blocked_alerted(key)
