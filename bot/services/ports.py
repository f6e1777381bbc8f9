"""The small interfaces the services need. Adapters implement them; unit tests use hand-written fakes.

Every method raises only the errors of ``bot.errors`` (adapters translate library exceptions).
The database is a port too: ``Transactions`` runs a unit of work on a ``Repository`` (implemented by
``bot.adapters.db``), which is the ports per aggregate of ``bot.services.stores`` together. What it
hands out are the domain's entities (``bot.domain.entities``, ``bot.domain.records``): services read
and change them, and create them through its methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from bot.domain.capacity import Placement
from bot.domain.clusters import HOME
from bot.domain.costs import NamespaceUsage, Window
from bot.domain.karmada import FederatedQuotaSnapshot
from bot.domain.kueue import ClusterQueueSnapshot, PendingWorkload
from bot.domain.priority import GpuPod
from bot.domain.quota import QuotaScope, QuotaSnapshot, Stamp
from bot.domain.scheduling import (
    AutoscalerStatus,
    DaemonSetFacts,
    NodeFacts,
    PodFacts,
    PriorityClassFacts,
    SchedulerEvent,
    WorkloadPods,
)
from bot.domain.stack_health import ScrapeTarget, SeriesFacts
from bot.services.mail_messages import MailMessage
from bot.services.messages import Said
from bot.services.reports import Digest
from bot.services.stores import (
    AuditTrail,
    AutoApprovals,
    BlockedAlerts,
    Budgets,
    Cards,
    Digests,
    DoctorRuns,
    Grants,
    HomeTabs,
    IdleNudges,
    LedgerDays,
    LedgerReads,
    MetricsOutages,
    Namespaces,
    OutboxRecords,
    Reclaims,
    Requests,
    RequestsDue,
    SlackEvents,
)
from bot.services.views import HomeView, RequestCard

T = TypeVar("T")


class Repository(
    Requests,
    RequestsDue,
    Cards,
    AutoApprovals,
    Grants,
    Namespaces,
    AuditTrail,
    OutboxRecords,
    SlackEvents,
    HomeTabs,
    BlockedAlerts,
    Budgets,
    Digests,
    IdleNudges,
    MetricsOutages,
    DoctorRuns,
    Reclaims,
    LedgerDays,
    LedgerReads,
    Protocol,
):
    """Reads and writes of one transaction: every port of ``bot.services.stores``. Entities it returns
    may be changed in place until it ends."""


@dataclass(frozen=True)
class Claimed:
    """The head of an outbox stream, leased to this replica until it is settled."""

    id: int
    stream: str
    kind: str
    request_id: int | None
    target: str | None
    notice: dict[str, Any] | list[dict[str, str]] | None  # a typed message; a list: an old entry's notice parts
    actions: list[dict[str, Any]]
    attempts: int
    created_at: datetime


@dataclass(frozen=True)
class OutboxHealth:
    """Entries per state, and when the oldest still pending was recorded (None: nothing pending); ``channels``:
    the same for each channel's entries (``slack``, ``mail``), every channel named even when it has none."""

    counts: dict[str, int]
    oldest_pending_at: datetime | None
    channels: dict[str, OutboxHealth] = field(default_factory=dict)


class Mailer(Protocol):
    """Mail to one recipient at a time (``bot.adapters.mail``), worded at delivery in the team's language.

    ``key`` names the outbox entry the mail is sent for: its Message-ID is made of it, the same on every
    try, so a receiver can drop the copy a retry sends after the server had taken the first one. Raises
    ``TemporaryError`` when the server may take it later (down, unreachable, a 4xx reply) and
    ``PermanentError`` when it will not (a 5xx for the recipient or the mail, the login refused), with
    the server's words and never a secret."""

    def send(self, recipient: str, mail: MailMessage, *, key: str) -> None: ...


class Outbox(Protocol):
    """What the bot means to say in Slack or by mail, recorded first (``Repository.add_outbox_entry``), then
    delivered in order per stream."""

    def due_streams(self, now: datetime) -> list[str]: ...

    def claim_head(self, stream: str, *, now: datetime, lease: timedelta) -> Claimed | None: ...

    def sent(self, entry_id: int, *, now: datetime) -> None: ...

    def release(self, entry_id: int) -> None: ...

    def retry_later(self, entry_id: int, *, at: datetime, error: str, attempts: int) -> None: ...

    def dead(self, entry_id: int, *, error: str, attempts: int) -> None: ...

    def forget(self, *, sent_before: datetime, dead_before: datetime) -> int: ...

    def health(self) -> OutboxHealth: ...


class Transactions(Protocol):
    """Units of work on the database. Lost races are retried by ``run`` and end in ``LostRace``."""

    def run(self, work: Callable[[Repository], T], *, attempts: int = 6) -> T:
        """Run ``work`` in one transaction, again from a fresh read when it loses a race."""
        ...

    def transaction(self) -> AbstractContextManager[Repository]:
        """One transaction, committed on success and rolled back on any error (no retry)."""
        ...

    def namespace_lock(
        self, namespace: str, *, while_waiting: Callable[[], object] | None = None
    ) -> AbstractContextManager[None]:
        """Be the only writer of ``namespace`` (across processes sharing the database) while it is held.
        ``while_waiting``: called now and then while another thread of this process holds it; what it
        raises ends the wait, and the block does not run."""
        ...

    def outbox(self) -> Outbox: ...


@dataclass(frozen=True)
class QuotaRefusal:
    """A controller could not create a pod because the GPU quota was full (a FailedCreate event)."""

    namespace: str
    kind: str  # of the controller: ReplicaSet, Job, ...
    name: str
    uid: str
    resource: str  # the extended resource whose ``requests.`` quota refused it
    message: str
    count: int
    last_seen: datetime | None


@dataclass(frozen=True)
class SchedulingFailure:
    """The scheduler could not place a GPU pod for lack of GPUs (a FailedScheduling event)."""

    namespace: str
    pod: str
    resource: str  # the extended resource no node had enough of ("Insufficient nvidia.com/mig-3g.40gb")
    message: str
    count: int
    last_seen: datetime | None


class Workloads(Protocol):
    """What runs on the GPUs: pods, their priority classes, and why pending ones wait. Read only."""

    def gpu_pods(self, namespace: str, resource: str) -> list[GpuPod]:
        """Pods of ``namespace`` requesting ``resource`` that have not finished (one list call)."""
        ...

    def priority_classes(self, cluster: str = HOME) -> dict[str, int]:
        """Every PriorityClass of ``cluster`` (a key's cluster part), name to value."""
        ...

    def scheduling_failures(self) -> list[SchedulingFailure]:
        """FailedScheduling events saying ``Insufficient <an extended resource>``, all namespaces, one call."""
        ...


class ClusterInspection(Protocol):
    """What ``why`` and ``doctor`` read of a cluster, never write (``bot.adapters.inspect``). Namespaces are keys
    (``us-2/ns`` outside the home cluster; what comes back carries the key); ``cluster`` a key's cluster part.
    A read the bot's RBAC does not allow raises ``Forbidden`` naming the permission."""

    def pod(self, namespace: str, name: str) -> PodFacts | None:
        """The pod (any phase but finished); None when there is none of that name."""
        ...

    def workload_pods(self, namespace: str, name: str) -> WorkloadPods | None:
        """The Job, Deployment, StatefulSet or Kueue Workload of that name (in that order) and its unfinished pods;
        None when nothing has that name."""
        ...

    def pods(self, namespace: str) -> list[PodFacts]:
        """Every unfinished pod of the namespace (one list call)."""
        ...

    def nodes(self, cluster: str = HOME) -> list[NodeFacts]:
        """Every node of the cluster with what its unfinished pods request."""
        ...

    def scheduling_events(self, namespace: str, pod: str) -> list[SchedulerEvent]:
        """The pod's ``FailedScheduling`` events, latest first."""
        ...

    def priority_class_facts(self, cluster: str = HOME) -> dict[str, PriorityClassFacts]:
        """Every PriorityClass of the cluster by name."""
        ...

    def autoscaler_status(self, cluster: str = HOME) -> AutoscalerStatus | None:
        """The cluster autoscaler's status ConfigMap (``kube-system/cluster-autoscaler-status``); None without one."""
        ...

    def daemon_sets(self, cluster: str = HOME) -> list[DaemonSetFacts]:
        """Every DaemonSet of the cluster (the doctor picks the device plugin's)."""
        ...


@runtime_checkable
class ScrapeInspection(Protocol):
    """What ``doctor`` reads of the Prometheus side, never writes (``bot.adapters.prometheus``; several clusters'
    servers: ``bot.adapters.metrics_clusters``). ``cluster``: a key's cluster part."""

    def targets(self, cluster: str = HOME) -> list[ScrapeTarget]:
        """The cluster's active scrape targets (``/api/v1/targets?state=active``)."""
        ...

    def series(self, metrics: Sequence[str], *, labels: Sequence[str] = (), cluster: str = HOME) -> dict[str, SeriesFacts]:
        """Per metric whether the cluster has series of it now and which of ``labels`` they carry (one query)."""
        ...


@dataclass(frozen=True)
class GpuNodes:
    allocatable: Mapping[str, int]  # each extended resource's allocatable over all nodes (nvidia.com/gpu, MIG profiles...)
    # The ``nvidia.com/gpu.product`` labels (GPU feature discovery) of the nodes offering each resource.
    models: Mapping[str, frozenset[str]]

    def of(self, resource: str) -> int:
        return self.allocatable.get(resource, 0)

    def models_of(self, resource: str) -> frozenset[str]:
        return self.models.get(resource, frozenset())


class QuotaCluster(Protocol):
    def read_quota(self, namespace: str, name: str, resource: str, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        """``resource`` in the quota, or None when the namespace has no such quota. Raises NamespaceNotFound.

        ``max_age``: a copy read (or written) by this process at most that many seconds ago will do.
        """
        ...

    def write_quota(
        self,
        namespace: str,
        name: str,
        resource: str,
        *,
        gpus: int,
        previous: QuotaSnapshot | None,
        dry_run: bool,
        applied_by: str,
    ) -> QuotaSnapshot:
        """Create the quota or patch its ``resource``, failing with QuotaConflict if it changed since ``previous``."""
        ...

    def gpu_quota_totals(self, quota_names: Mapping[str, str]) -> dict[str, dict[str, int]]:
        """{namespace: {resource: hard}} of the extended resources in the given {namespace: quota name}, in one list call."""
        ...

    def quota_refusals(self) -> list[QuotaRefusal]:
        """FailedCreate events saying ``exceeded quota`` for an extended resource, all namespaces, one call."""
        ...

    def gpu_nodes(self, cluster: str = HOME) -> GpuNodes:
        """Each extended resource's allocatable and the GPU models of ``cluster``'s nodes, from one node list."""
        ...


class QuotaTarget(Protocol):
    """The object that limits one scope's GPUs (a governed resource of a namespace), as ``QuotaSync`` keeps
    it: a ResourceQuota's ``requests.<resource>`` or a Kueue ClusterQueue flavor's ``nominalQuota``
    (``bot.services.quota_target``).

    A write is a dry run, then the write itself with the read as its precondition (a change by anyone
    since raises ``QuotaConflict``), and it carries the target's ``stamp``: what the bot wrote and for
    what, so that a later read tells a person's edit from the bot's own write (``bot_applied``).
    """

    def lock_name(self, scope: QuotaScope) -> str:
        """What the scope's critical section is named by: the object written (scopes sharing it share it)."""
        ...

    def name(self, scope: QuotaScope) -> str:
        """The object's name (what the bot says it changed)."""
        ...

    def read(self, scope: QuotaScope, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        """The object as it is now (None: the namespace has none yet). Raises NamespaceNotFound.

        ``max_age``: a copy this process read (or wrote) at most that many seconds ago will do (for what a
        person is shown; every writer reads now)."""
        ...

    def stamp(self, gpus: int, *, request_id: int | None) -> Stamp:
        """What a write of ``gpus`` for ``request_id`` (None: a reconcile) leaves on the object."""
        ...

    def dry_run(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        """Validate the write without persisting it (the same permission as the write)."""
        ...

    def write(self, scope: QuotaScope, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        """Create the object (``previous`` None) or change it from ``previous``; QuotaConflict when it changed since."""
        ...


class KueueQuotas(Protocol):
    """Kueue's side of the cluster (``bot.adapters.kueue``): a ClusterQueue flavor's quota of one resource,
    and the Workloads waiting for quota."""

    def api_version(self) -> str | None:
        """The version of ``kueue.x-k8s.io`` in use (v1beta2, else v1beta1); None: Kueue is not installed."""
        ...

    def read_cluster_queue(self, namespace: str, name: str, flavor: str, resource: str) -> ClusterQueueSnapshot:
        """The queue's ``nominalQuota`` of ``resource`` in ``flavor``; KueueObjectMissing when any of them is not there."""
        ...

    def write_cluster_queue(
        self,
        namespace: str,
        name: str,
        flavor: str,
        resource: str,
        *,
        gpus: int,
        previous: ClusterQueueSnapshot,
        dry_run: bool,
        applied_by: str,
        borrowing_limit_delta: bool = False,
    ) -> ClusterQueueSnapshot:
        """Set the quota on the queue exactly as ``previous`` read it; QuotaConflict when it changed since."""
        ...

    def pending_workloads(self, namespaces: Iterable[str]) -> list[PendingWorkload]:
        """Workloads of ``namespaces`` whose ``QuotaReserved`` condition is False (none without Kueue)."""
        ...


class MetricsSource(Protocol):
    """GPU usage, aggregated by namespace in a fixed number of queries whatever the cluster's size. Every
    namespace is its key (``us-2/ns`` in another cluster than home). A source of several clusters whose
    Prometheus servers did not all answer raises ``PartialMetrics`` with what the others answered."""

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        """Usage per window (keyed by the window's day) per namespace key; ``idle=False`` may leave the idle
        hours and the utilisation out (what pricing does not need: the cheap read of today for budgets)."""
        ...

    def days_with_data(self, windows: Sequence[Window]) -> set[date]:
        """The windows' days for which the metrics hold any kube-state-metrics sample: a day without
        any is unknown (before the retention, an outage), never a day of zero use."""
        ...

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        """GPUs requested by running pods at ``moment``, per namespace."""
        ...

    def peak_allocated(self, start: datetime, end: datetime) -> dict[str, float]:
        """The most GPUs running pods requested at any sample in [start, end), per namespace (one query)."""
        ...

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        """Namespaces that held GPUs for all of the ``window`` before ``moment`` while every GPU stayed
        under ``threshold`` utilisation (0..1); the value is the highest utilisation seen."""
        ...

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        """The value of a namespace label (from kube_namespace_labels), per namespace."""
        ...

    def quota_saturation(self, start: datetime, end: datetime, quota_names: Mapping[str, str]) -> dict[str, float]:
        """The share (0..1) of [start, end) each namespace's GPU quota (the one ``quota_names`` names) was full
        (kube-state-metrics' ``kube_resourcequota`` used == a non-zero hard; a moment without the quota or over
        it is not), for the namespaces with such a series (one query)."""
        ...


@runtime_checkable
class PreemptibleWork(Protocol):
    """What a metrics source tells of pods' priority classes beside ``MetricsSource`` (kube-state-metrics'
    ``kube_pod_info``): the proposals' spot savings. A source without it names no saving."""

    def preemptible_use(
        self, start: datetime, end: datetime, priority_classes: Sequence[str]
    ) -> dict[str, dict[Placement, float]]:
        """Per namespace key, the share (0..1) of its whole-GPU running samples in [start, end) that were of pods of
        ``priority_classes``, at each placement (one query)."""
        ...


@dataclass(frozen=True)
class Coverage:
    """Which of some windows' days each cluster's metrics hold, by the key's cluster part (HOME: the home
    cluster), and the clusters whose days could not be told, each with why (a sentence): ``unavailable``, its
    Prometheus did not answer (its days are unknown: neither recorded nor empty); ``absent``, a Prometheus it
    shares holds other clusters' series but none of its own (its cluster label is missing, or nothing of it
    arrives): its days hold nothing."""

    held: dict[str, set[date]]
    unavailable: dict[str, str] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class ClusterCoverage(Protocol):
    """What a metrics source of several clusters tells beside ``MetricsSource`` (``days_with_data`` per cluster).
    A source without it holds the same days for every cluster."""

    def days_by_cluster(self, windows: Sequence[Window]) -> Coverage: ...


class ActionKind(StrEnum):
    """Buttons, named by what they do; the Slack adapter maps them to action ids."""

    APPROVE = "approve"
    DENY = "deny"
    RETRY = "retry"
    EXTEND = "extend"
    RELEASE = "release"
    SNOOZE = "snooze"
    REQUEST_MORE = "request_more"
    PROPOSE_SHIFT = "propose_shift"  # value "<source>:<target>:<gpus>": opens the shift form prefilled


class ButtonLabel(StrEnum):
    """Which words a button shows, worded at the Slack edge (``bot.adapters.slack.buttons``)."""

    RETRY = "retry"
    GIVE_BACK = "give_back"  # a failed shift's source gets its GPUs back
    RELEASE_GRANT = "release_grant"  # names the grant's request (the action's value)
    RELEASE_NOW = "release_now"
    EXTEND = "extend"
    SNOOZE = "snooze"
    REQUEST_MORE = "request_more"
    PROPOSE_SHIFT = "propose_shift"


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    label: ButtonLabel | str  # a str: the words an outbox entry of an earlier version stored, shown as they are
    value: str
    style: str | None = None  # "primary" | "danger"


@dataclass(frozen=True)
class MessageRef:
    channel_id: str
    ts: str


class Notifier(Protocol):
    """Slack (or a fake): messages are worded by the implementation, which escapes all text in them."""

    def post_request(self, card: RequestCard) -> MessageRef:
        """Post the request message (with its buttons while pending) in the team's channel."""
        ...

    def update_request(self, card: RequestCard) -> None:
        """Re-render the request message in place."""
        ...

    def reply(self, ref: MessageRef, message: Said, *, actions: Sequence[Action] = ()) -> None:
        """Post in the request's thread."""
        ...

    def tell_user(self, user_id: str, message: Said, *, actions: Sequence[Action] = ()) -> None:
        """A direct message from the bot."""
        ...

    def post(self, channel_id: str, message: Said, *, actions: Sequence[Action] = ()) -> MessageRef:
        """A message in a channel, outside any request (admin notices, warnings)."""
        ...

    def publish(self, channel_id: str, digest: Digest) -> MessageRef:
        """A digest, worded by the implementation, with its chart uploaded in the same channel."""
        ...

    def delete(self, ref: MessageRef) -> None:
        """Delete a message the bot posted (a card that lost the race to be the request's)."""
        ...


class Directory(Protocol):
    def usergroup_members(self, usergroup_id: str, *, fresh: bool = False) -> frozenset[str]:
        """User ids in a Slack user group: cached briefly by the adapter, read anew when ``fresh`` (decisions)."""
        ...


class HomePublisher(Protocol):
    def publish_home(self, view: HomeView) -> None:
        """Publish (replace) the person's App Home tab."""
        ...


class FederatedQuotas(Protocol):
    """A Karmada plane's side (``bot.adapters.karmada``): a member cluster's assignment of one resource in a
    FederatedResourceQuota, written together with ``spec.overall``."""

    def api_version(self) -> str | None:
        """The version of ``policy.karmada.io`` in use (v1alpha1); None: Karmada is not installed on the plane."""
        ...

    def read_federated_quota(
        self, namespace_key: str, namespace: str, name: str, member: str, resource: str
    ) -> FederatedQuotaSnapshot:
        """``member``'s assignment of ``resource`` in the FederatedResourceQuota ``name`` of ``namespace`` (on the
        plane), governed for ``namespace_key``; KarmadaObjectMissing when Karmada, the quota, the member's entry
        or its resource is not there."""
        ...

    def write_federated_quota(
        self,
        namespace_key: str,
        namespace: str,
        name: str,
        member: str,
        resource: str,
        *,
        gpus: int,
        previous: FederatedQuotaSnapshot,
        dry_run: bool,
        applied_by: str,
    ) -> FederatedQuotaSnapshot:
        """Set the member's assignment to ``gpus`` and move ``overall`` by as much, in one patch, on the quota
        exactly as ``previous`` read it; QuotaConflict when it changed since."""
        ...
