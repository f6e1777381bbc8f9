"""The view models: what a request card, the App Home tab, ``status``, ``list`` and ``audit`` show,
independent of Slack. Services build them; the Slack edge renders them; the ports name them. They
import nothing of the services, so every service module may use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.domain.auto_notes import AutoApprovalNote
from bot.domain.commands import format_request_id
from bot.domain.failure_reasons import FailureReason
from bot.domain.lifecycle import GrantState, RequestKind, RequestState
from bot.domain.prices import StoredBasis
from bot.domain.priority import ClassWarning, GpuPod, PodMix
from bot.domain.quota import CapacityImpact
from bot.domain.reclaim import over_quota


@dataclass(frozen=True)
class ShiftSide:
    """The source of a shift: where the GPUs come from, its quota before -> after (as asked, then as made)."""

    namespace: str
    team_label: str
    before: int
    after: int
    applied: bool  # the source's quota is lowered in the cluster
    returned: bool  # a temporary shift ended and the source has its GPUs back
    used: int | None = None  # GPUs in use in the source when it was asked
    channel_id: str | None = None  # the copy of the card in the source team's channel
    message_ts: str | None = None


@dataclass(frozen=True)
class RequestCard:
    request_id: int
    kind: RequestKind
    state: RequestState
    namespace: str
    resource: str  # the governed resource it changes (bot.domain.resources)
    team_label: str
    requester_id: str
    amount_text: str
    delta: int
    hard_before: int
    used_before: int | None
    duration: timedelta | None
    reason: str
    approvals: tuple[str, ...]
    approvals_required: int
    denied_by: str | None
    auto_approved: bool
    capacity: CapacityImpact | None
    cost: float | None
    cost_basis: StoredBasis | None
    currency: str
    decide_by: datetime
    grant_ends_at: datetime | None
    grant_state: GrantState | None
    extends_id: int | None
    failure_reason: FailureReason | None
    channel_id: str
    message_ts: str | None
    # Which auto-approval rule allowed it, or what kept it for a person (a sentence when an earlier version stored one).
    auto_note: AutoApprovalNote | str | None = None
    # The before -> after actually applied (recomputed at apply time; may differ from when asked).
    applied_from: int | None = None
    applied_to: int | None = None
    # While pending: the namespace's GPU pods by priority class, read when the card is rendered.
    pods: PodsInView | None = None
    shift: ShiftSide | None = None  # a shift's source side (the fields above describe the target)
    thread_in: str | None = None  # set on the copy of a shift's card: the channel of the card with the thread

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)

    @property
    def hard_after(self) -> int:
        return self.hard_before + self.delta

    @property
    def permanent(self) -> bool:
        return self.duration is None


@dataclass(frozen=True)
class PodsInView:
    """A namespace's GPU pods (name, GPUs, class, phase, start) and their mix by class and, when the policy
    names classes for borrowed GPUs, what falls outside them; or why the pods could not be read."""

    mix: PodMix
    pods: tuple[GpuPod, ...] = ()
    allowed: tuple[str, ...] = ()
    warnings: tuple[ClassWarning, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class GrantLine:
    request_id: int
    gpus: int
    ends_at: datetime
    state: GrantState


@dataclass(frozen=True)
class PendingLine:
    request_id: int
    namespace: str
    amount_text: str
    delta: int
    duration: timedelta | None
    requester_id: str
    approvals: int
    approvals_required: int
    decide_by: datetime
    source_namespace: str | None = None  # a shift: where its GPUs come from (``namespace`` is where they go)


@dataclass(frozen=True)
class QueueLine:
    """A ClusterQueue flavor's state as Kueue reports it: ``used`` of the status is its reservation."""

    flavor: str
    in_use: int  # flavorsUsage: what admitted workloads use
    pending_workloads: int  # the whole queue's
    cohort: str | None
    borrowed: int  # of the reservation, borrowed from the cohort
    borrowing_limit: int | None


@dataclass(frozen=True)
class NamespaceStatus:
    namespace: str
    team_label: str
    quota_name: str
    resource: str  # the governed resource (bot.domain.resources) this status is about
    hard: int | None  # None: no GPU quota in the cluster (or unreadable: see error)
    used: int | None
    base: int | None
    grants: tuple[GrantLine, ...]
    pending: tuple[PendingLine, ...]
    error: str | None = None
    pods: PodsInView | None = None  # the GPU pods by priority class; None when unknown or not read
    reclaiming_since: datetime | None = None  # the quota was lowered below usage then; running pods keep their GPUs
    queue: QueueLine | None = None  # the quota is a Kueue ClusterQueue's (``quota_name``): what Kueue says of it

    @property
    def over_quota(self) -> int:
        """GPUs in use beyond the quota (a lowered quota evicts nothing)."""
        return over_quota(self.hard, self.used)


@dataclass(frozen=True)
class AuditLine:
    at: datetime
    actor: str
    action: str
    namespace: str | None
    request_id: int | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    detail: str


@dataclass(frozen=True)
class TeamSpendLine:
    team_label: str
    month: str  # 2026-11
    spent: float
    budget: float


@dataclass(frozen=True)
class HomeView:
    user_id: str
    currency: str
    quotas: tuple[NamespaceStatus, ...]
    spend: tuple[TeamSpendLine, ...]
    mine: tuple[PendingLine, ...]  # pending requests the person made
    to_decide: tuple[PendingLine, ...]  # pending requests the person may approve or deny
    notice: str = ""  # the outcome of what the person just did from the tab


@dataclass(frozen=True)
class ResourceChoice:
    """A resource the request form offers for a namespace that governs several, with its quota there today."""

    resource: str  # the governed resource name (nvidia.com/mig-3g.40gb)
    hard: int | None  # None: not known (give the policy's default_quota where the cluster has no quota yet)
    used: int | None  # None: not known
