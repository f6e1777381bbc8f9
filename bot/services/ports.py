"""The small interfaces the services need. Adapters implement them; unit tests use hand-written fakes.

Every method raises only the errors of ``bot.errors`` (adapters translate library exceptions).
The database is a port too: ``Transactions`` runs a unit of work on a ``Repository`` (implemented by
``bot.adapters.db``). Its rows are the adapter's mapped classes, named here for type checking only:
services read and change their attributes, and create them through repository methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bot.domain.costs import NamespaceUsage, Window
from bot.domain.lifecycle import GrantState, RequestState, Verdict
from bot.domain.priority import GpuPod
from bot.domain.quota import QuotaSnapshot, Stamp
from bot.services.messages import Said
from bot.services.views import HomeView, RequestCard

if TYPE_CHECKING:
    from bot.adapters.db.models import (
        AuditRow,
        GrantRow,
        HomeTabRow,
        IdleNudge,
        MetricsOutage,
        NamespaceRow,
        Reclaim,
        RequestRow,
        TeamSpend,
    )

T = TypeVar("T")


class Repository(Protocol):
    """Reads and writes of one transaction. Rows it returns may be changed in place until it ends."""

    def add_request(self, **fields: Any) -> RequestRow:
        """A new request with these column values, with its id assigned."""
        ...

    def add_decision(self, request: RequestRow, *, user_id: str, verdict: Verdict, decided_at: datetime) -> None: ...

    def request(self, request_id: int) -> RequestRow | None: ...

    def set_message_ref(self, request_id: int, *, channel_id: str, ts: str) -> bool:
        """Where the request's message is in Slack, written without reading the row (its version bumped) and
        its post claim ended; False (nothing written) when a message is stored already."""
        ...

    def claim_post(self, request_id: int, *, copy: bool, now: datetime, until: datetime) -> bool:
        """Hold the right to post the request's card (``copy``: a shift's copy, once the card is posted)
        until ``until``; False when it is posted, or claimed (or waiting for Slack) past ``now``."""
        ...

    def release_post(self, request_id: int, *, copy: bool, not_before: datetime) -> None:
        """End a post claim that did not post: nobody posts it again before ``not_before``."""
        ...

    def outbox_streams_pending(self, streams: Sequence[str]) -> list[str]:
        """Those of ``streams`` with an undelivered outbox entry, in the order given."""
        ...

    def add_outbox_entry(
        self,
        *,
        stream: str,
        kind: str,
        now: datetime,
        request_id: int | None = None,
        target: str | None = None,
        notice: dict[str, Any] | list[dict[str, str]] | None = None,
        actions: list[dict[str, Any]] | None = None,
        latest_only: bool = False,
    ) -> None:
        """Record an outbox entry in this transaction: it exists if and only if the transaction commits.
        ``notice``: the typed message as JSON (``bot.services.messages.to_json``).
        ``latest_only``: skip it when an unclaimed entry of the stream is already waiting (a card update
        renders the request as it is at delivery, so one waiting is enough)."""
        ...

    def requests_in(self, states: Iterable[RequestState], *, namespaces: Iterable[str] | None = None) -> Sequence[RequestRow]: ...

    def count_requests_by_state(self) -> dict[str, int]: ...

    def pending_past_deadline(self, now: datetime) -> Sequence[RequestRow]: ...

    def unposted_requests(self, now: datetime) -> Sequence[int]:
        """Requests without a message in Slack that nobody is posting (nor waiting for Slack) at ``now``."""
        ...

    def unposted_copies(self, now: datetime) -> Sequence[int]:
        """Pending shifts whose card is posted but whose copy for the source team is not (nor given up),
        and that nobody is posting (nor waiting for Slack) at ``now``."""
        ...

    def set_copy_ref(self, request_id: int, *, ts: str) -> bool:
        """Where the copy of a shift's card is (``""``: refused by Slack, given up), its claim ended; False
        (nothing written) when one is stored already."""
        ...

    def approved_unleased(self, now: datetime) -> Sequence[RequestRow]: ...

    def failed_shifts_holding_source(self) -> Sequence[RequestRow]:
        """Temporary shifts whose target side failed while their source stays lowered."""
        ...

    def shift_sources_in_flight(self) -> dict[str, int]:
        """Source namespaces of approved shifts whose decrease is recorded but not yet applied, with the shift's id."""
        ...

    def auto_approved_sizes_since(self, team: str, start: datetime, end: datetime) -> list[tuple[int, int | None]]:
        """(delta, duration_seconds) of the team's auto-approved requests created in [start, end) that
        took effect or are taking it."""
        ...

    def lock_auto_approval(self, team: str) -> None:
        """Serialise the team's auto-approval decisions until the transaction ends; call it before reading."""
        ...

    def namespace(self, name: str) -> NamespaceRow | None: ...

    def namespace_known(self, name: str) -> bool:
        """Whether the bot has a row for ``name`` (``namespace(name) is not None``, without loading it)."""
        ...

    def add_namespace(
        self,
        *,
        name: str,
        team: str,
        base_gpus: int,
        last_seen_gpus: int | None,
        seen_resource_version: str | None,
        updated_at: datetime,
    ) -> NamespaceRow: ...

    def namespaces(self, names: Iterable[str]) -> Sequence[NamespaceRow]: ...

    def add_grant(
        self, *, request_id: int, namespace: str, gpus: int, state: GrantState, starts_at: datetime, ends_at: datetime
    ) -> GrantRow: ...

    def active_grant_total(self, namespace: str) -> int: ...

    def grants(self, *, states: Iterable[GrantState], namespaces: Iterable[str] | None = None) -> Sequence[GrantRow]: ...

    def grants_due(self, now: datetime) -> Sequence[GrantRow]: ...

    def grants_to_remind(self, horizon: datetime) -> Sequence[GrantRow]: ...

    def auto_approved_gpus(self, namespace: str, *, excluding_request: int | None = None) -> int: ...

    def grant_of(self, request_id: int) -> GrantRow | None: ...

    def grant(self, grant_id: int) -> GrantRow | None: ...

    def remove_grant(self, grant: GrantRow) -> None: ...

    def record(
        self,
        *,
        at: datetime,
        action: str,
        actor: str = ...,
        namespace: str | None = None,
        request_id: int | None = None,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        detail: str = "",
    ) -> None:
        """Append to the audit trail (``actor`` defaults to the bot)."""
        ...

    def audit_trail(
        self, *, namespace: str | None = None, request_id: int | None = None, limit: int = 20
    ) -> Sequence[AuditRow]: ...

    def latest_audit_id(self, *, namespaces: Iterable[str], requester: str | None = None) -> int: ...

    def request_at(self, channel_id: str, message_ts: str) -> RequestRow | None: ...

    def claim_event(self, event_id: str, *, at: datetime) -> bool:
        """Record an Events API delivery; False when it was recorded before."""
        ...

    def forget_events_before(self, moment: datetime) -> None: ...

    def blocked_alerted(self, key: str) -> bool: ...

    def remember_blocked_alert(self, key: str, *, namespace: str, at: datetime, quota_day: date | None = None) -> None:
        """Remember the alert; a quota alert (``quota_day`` given, schedules.timezone) also counts in the
        namespace's workloads blocked by the quota that day."""
        ...

    def quota_blocks(self, first: date, last: date) -> dict[str, int]:
        """Workloads blocked by the GPU quota per namespace over the days [first, last]."""
        ...

    def open_reclaim(self, namespace: str) -> Reclaim | None: ...

    def open_reclaims(self) -> Sequence[Reclaim]: ...

    def start_reclaim(self, *, namespace: str, request_id: int | None, quota: int, used: int, at: datetime) -> Reclaim: ...

    def finish_reclaim(self, reclaim_id: int, *, used: int, at: datetime) -> bool:
        """Close an open reclaim; False when it was closed already (by another replica)."""
        ...

    def home_tabs(self) -> Sequence[HomeTabRow]: ...

    def save_home_tab(self, user_id: str, *, at: datetime, last_audit_id: int) -> None: ...

    def team_spend(self, teams: Iterable[str]) -> Sequence[TeamSpend]: ...

    def team_over_budget(self, team: str, month: str) -> bool:
        """Whether the last measurement of ``month`` (``YYYY-MM``) found ``team`` at or over its budget."""
        ...

    def record_team_spend(self, team: str, *, month: str, spent: float, budget: float, forecast: float, at: datetime) -> None:
        """Keep the team's latest month-to-date measurement."""
        ...

    def budget_alerts_sent(self, team: str, month: str) -> set[str]: ...

    def claim_budget_alerts(self, team: str, month: str, keys: Iterable[str], *, percent: float, at: datetime) -> bool:
        """Record these warnings, all or none; False (nothing recorded) when any was recorded before."""
        ...

    def digest_days_posted(self, scope: str, *, first: date, last: date) -> set[date]: ...

    def claim_digest(self, scope: str, day: date, *, at: datetime) -> bool:
        """Claim the (scope, day) digest before posting it; False when it was claimed before."""
        ...

    def release_digest(self, scope: str, day: date) -> None: ...

    def mark_digest_posted(self, scope: str, day: date, *, at: datetime) -> None: ...

    def latest_ledger_day(self) -> date | None: ...

    def replace_ledger_day(
        self,
        day: date,
        *,
        status: str,
        recorded_at: datetime,
        ksm_spacing: float | None,
        dcgm_spacing: float | None,
        entries: Iterable[Mapping[str, Any]],
    ) -> None:
        """The day's ledger rows replaced whole by ``entries`` (column values)."""
        ...

    def ledger_status(self, first: date, last: date) -> list[tuple[date, str]]: ...

    def ledger_entries(self, first: date, last: date) -> list[tuple[Any, ...]]:
        """Plain column tuples (day, namespace, team, cost_center, model, allocated_hours, idle_hours,
        observed_hours, util_hours, price, cost, idle_cost), by day, namespace and model."""
        ...

    def ledger_costs(
        self, first: date, last: date, *, namespaces: Iterable[str] | None = None
    ) -> list[tuple[date, str, str, float | None]]:
        """(day, namespace, recorded team, summed cost) of the entries in [first, last] (of ``namespaces`` when given)."""
        ...

    def ledger_team_costs(self, first: date, last: date) -> list[tuple[date, str, float]]:
        """(day, recorded team, summed cost) of [first, last], grouped in the database."""
        ...

    def ledger_namespace_teams(self, first: date, last: date) -> list[tuple[str, str]]:
        """The distinct (namespace, recorded team) pairs of [first, last]."""
        ...

    def ledger_sums(self, first: date, last: date) -> list[tuple[Any, ...]]:
        """(namespace, team, model, allocated_hours, idle_hours, observed_hours, util_hours, cost, idle_cost,
        last day) summed over [first, last] per namespace, recorded team and model, in the database."""
        ...

    def ledger_model_hours(self, namespace: str, first: date, last: date) -> dict[str, float]:
        """GPU-hours of ``namespace`` per GPU model over [first, last]."""
        ...

    def open_metrics_outage(self) -> MetricsOutage | None:
        """The oldest Prometheus outage not yet over."""
        ...

    def start_metrics_outage(self, *, at: datetime, cause: str) -> MetricsOutage:
        """A new open outage, with its id assigned."""
        ...

    def idle_nudge(self, namespace: str) -> IdleNudge | None: ...

    def snooze_idle_nudges(self, namespace: str, *, until: datetime, by: str) -> None: ...

    def remember_idle_nudge(self, namespace: str, *, gpus: float, at: datetime) -> None:
        """The namespace was nudged about ``gpus`` idle GPUs: an idle episode is on."""
        ...


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
    """Entries per state, and when the oldest still pending was recorded (None: nothing pending)."""

    counts: dict[str, int]
    oldest_pending_at: datetime | None


class Outbox(Protocol):
    """What the bot means to say in Slack, recorded first (``Repository.add_outbox_entry``), then
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

    def namespace_lock(self, namespace: str) -> AbstractContextManager[None]:
        """Be the only writer of ``namespace`` (across processes sharing the database) while it is held."""
        ...

    def outbox(self) -> Outbox: ...


@dataclass(frozen=True)
class QuotaRefusal:
    """A controller could not create a pod because the GPU quota was full (a FailedCreate event)."""

    namespace: str
    kind: str  # of the controller: ReplicaSet, Job, ...
    name: str
    uid: str
    message: str
    count: int
    last_seen: datetime | None


@dataclass(frozen=True)
class SchedulingFailure:
    """The scheduler could not place a GPU pod for lack of GPUs (a FailedScheduling event)."""

    namespace: str
    pod: str
    message: str
    count: int
    last_seen: datetime | None


class Workloads(Protocol):
    """What runs on the GPUs: pods, their priority classes, and why pending ones wait. Read only."""

    def gpu_pods(self, namespace: str) -> list[GpuPod]:
        """Pods of ``namespace`` requesting ``nvidia.com/gpu`` that have not finished (one list call)."""
        ...

    def priority_classes(self) -> dict[str, int]:
        """Every PriorityClass of the cluster, name to value."""
        ...

    def scheduling_failures(self) -> list[SchedulingFailure]:
        """FailedScheduling events saying ``Insufficient nvidia.com/gpu``, all namespaces, one call."""
        ...


@dataclass(frozen=True)
class GpuNodes:
    allocatable: int  # ``nvidia.com/gpu`` allocatable over all nodes
    models: frozenset[str]  # the ``nvidia.com/gpu.product`` labels of the nodes with GPUs (GPU feature discovery)


class QuotaCluster(Protocol):
    def read_quota(self, namespace: str, name: str, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        """The quota, or None when the namespace has none. Raises NamespaceNotFound.

        ``max_age``: a copy read (or written) by this process at most that many seconds ago will do.
        """
        ...

    def write_quota(
        self, namespace: str, name: str, *, gpus: int, previous: QuotaSnapshot | None, dry_run: bool, applied_by: str
    ) -> QuotaSnapshot:
        """Create or patch the GPU quota, failing with QuotaConflict if it changed since ``previous``."""
        ...

    def allocatable_gpus(self) -> int:
        """The sum of ``nvidia.com/gpu`` allocatable over all nodes."""
        ...

    def gpu_quota_totals(self, quota_names: Mapping[str, str]) -> dict[str, int]:
        """``requests.nvidia.com/gpu`` hard of the given {namespace: quota name}, in one list call."""
        ...

    def quota_refusals(self) -> list[QuotaRefusal]:
        """FailedCreate events saying ``exceeded quota`` for ``requests.nvidia.com/gpu``, all namespaces, one call."""
        ...

    def gpu_nodes(self) -> GpuNodes:
        """The allocatable GPUs and the GPU models of the nodes, from one node list."""
        ...


class QuotaTarget(Protocol):
    """The object that limits one namespace's GPUs, as ``QuotaSync`` keeps it: the ResourceQuota first
    (``bot.services.quota_target``); MIG resources and Kueue ClusterQueues are further implementations.

    A write is a dry run, then the write itself with the read as its precondition (a change by anyone
    since raises ``QuotaConflict``), and it carries the target's ``stamp``: what the bot wrote and for
    what, so that a later read tells a person's edit from the bot's own write (``bot_applied``).
    """

    def name(self, namespace: str) -> str:
        """The object's name in ``namespace`` (what the bot says it changed)."""
        ...

    def read(self, namespace: str) -> QuotaSnapshot | None:
        """The object as it is now (None: the namespace has none yet). Raises NamespaceNotFound."""
        ...

    def stamp(self, gpus: int, *, request_id: int | None) -> Stamp:
        """What a write of ``gpus`` for ``request_id`` (None: a reconcile) leaves on the object."""
        ...

    def dry_run(self, namespace: str, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        """Validate the write without persisting it (the same permission as the write)."""
        ...

    def write(self, namespace: str, stamp: Stamp, *, previous: QuotaSnapshot | None) -> QuotaSnapshot:
        """Create the object (``previous`` None) or change it from ``previous``; QuotaConflict when it changed since."""
        ...


class MetricsSource(Protocol):
    """GPU usage, aggregated by namespace in a fixed number of queries whatever the cluster's size."""

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        """Usage per window (keyed by the window's day) per namespace; ``idle=False`` may leave the idle
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

    def quota_saturation(self, start: datetime, end: datetime) -> dict[str, float]:
        """The share (0..1) of [start, end) each namespace's GPU quota was full (kube-state-metrics'
        ``kube_resourcequota`` used >= hard), for the namespaces with such a series (one query)."""
        ...


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


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    label: str
    value: str
    style: str | None = None  # "primary" | "danger"


@dataclass(frozen=True)
class MessageRef:
    channel_id: str
    ts: str


@dataclass(frozen=True)
class ReportSection:
    heading: str | None = None
    lines: Sequence[str] = ()
    fields: Sequence[tuple[str, str]] = ()


@dataclass(frozen=True)
class Attachment:
    filename: str
    title: str
    content: bytes


@dataclass(frozen=True)
class Report:
    """A message with sections and an optional file, independent of Slack (digests, summaries)."""

    title: str
    summary: str
    sections: Sequence[ReportSection] = ()
    attachment: Attachment | None = None
    actions: Sequence[Action] = field(default_factory=tuple)


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

    def publish(self, channel_id: str, report: Report) -> MessageRef:
        """A report (a digest), with its attachment uploaded in the same channel."""
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
