"""The small interfaces the services need. Adapters implement them; unit tests use hand-written fakes.

Every method raises only the errors of ``bot.errors`` (adapters translate library exceptions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from bot.domain.costs import NamespaceUsage, Window
from bot.domain.quota import QuotaSnapshot
from bot.services.cards import RequestCard
from bot.services.text import Notice

if TYPE_CHECKING:
    from bot.services.home import HomeView


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


class QuotaCluster(Protocol):
    def read_quota(self, namespace: str, name: str) -> QuotaSnapshot | None:
        """The quota, or None when the namespace has none. Raises NamespaceNotFound."""
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


class MetricsSource(Protocol):
    """GPU usage, aggregated by namespace in a fixed number of queries whatever the cluster's size."""

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        """Usage per window (keyed by the window's day) per namespace; ``idle=False`` may leave the idle
        hours out (the costliest measure, which pricing does not need)."""
        ...

    def days_with_data(self, windows: Sequence[Window]) -> set[date]:
        """The windows' days for which the metrics hold any kube-state-metrics sample: a day without
        any is unknown (before the retention, an outage), never a day of zero use."""
        ...

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        """GPUs requested by running pods at ``moment``, per namespace."""
        ...

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        """Namespaces that held GPUs for all of the ``window`` before ``moment`` while every GPU stayed
        under ``threshold`` utilisation (0..1); the value is the highest utilisation seen."""
        ...

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        """The value of a namespace label (from kube_namespace_labels), per namespace."""
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
    """Slack (or a fake): notices are rendered by the implementation, which escapes all text in them."""

    def post_request(self, card: RequestCard) -> MessageRef:
        """Post the request message (with its buttons while pending) in the team's channel."""
        ...

    def update_request(self, card: RequestCard) -> None:
        """Re-render the request message in place."""
        ...

    def reply(self, ref: MessageRef, notice: Notice, *, actions: Sequence[Action] = ()) -> None:
        """Post in the request's thread."""
        ...

    def tell_user(self, user_id: str, notice: Notice, *, actions: Sequence[Action] = ()) -> None:
        """A direct message from the bot."""
        ...

    def post(self, channel_id: str, notice: Notice, *, actions: Sequence[Action] = ()) -> MessageRef:
        """A message in a channel, outside any request (admin notices, warnings)."""
        ...

    def publish(self, channel_id: str, report: Report) -> MessageRef:
        """A report (a digest), with its attachment uploaded in the same channel."""
        ...


class Directory(Protocol):
    def usergroup_members(self, usergroup_id: str, *, fresh: bool = False) -> frozenset[str]:
        """User ids in a Slack user group: cached briefly by the adapter, read anew when ``fresh`` (decisions)."""
        ...


class HomePublisher(Protocol):
    def publish_home(self, view: HomeView) -> None:
        """Publish (replace) the person's App Home tab."""
        ...
