"""What the services keep besides requests and namespaces: the audit trail, reclaims, Prometheus
outages, idle-GPU nudges, published home tabs and the teams' measured spend. Plain classes, mapped
onto their tables by the database adapter (``bot.adapters.db.models``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(eq=False, kw_only=True, repr=False)
class AuditEntry:
    """One event of the append-only audit trail."""

    at: datetime
    actor: str  # a Slack user id, or "gpu-quota-bot"
    action: str
    namespace: str | None = None
    request_id: int | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    detail: str = ""
    id: int = field(init=False)


@dataclass(eq=False, kw_only=True, repr=False)
class Reclaim:
    """A quota lowered below what the namespace was using: followed until usage is within it (gradual
    reclaim: running pods are never evicted, the quota only refuses new ones)."""

    namespace: str
    resource: str
    request_id: int | None  # the change that lowered it (its thread hears the end)
    quota: int  # the lowered hard value
    used_at_start: int
    started_at: datetime
    used_at_end: int | None = None
    finished_at: datetime | None = None  # None: still reclaiming
    id: int = field(init=False)


@dataclass(eq=False, kw_only=True, repr=False)
class MetricsOutage:
    """Prometheus could not be read: when it started, whether admins were told, when it ended."""

    started_at: datetime
    cause: str
    notified_at: datetime | None = None
    ended_at: datetime | None = None
    id: int = field(init=False)


@dataclass(eq=False, kw_only=True, repr=False)
class IdleNudge:
    """The idle-GPU nudge state of a namespace: not repeated while snoozed or unchanged."""

    namespace: str
    gpus: float = 0.0
    active: bool = False  # the idle episode that was nudged is still going on
    nudged_at: datetime | None = None
    snoozed_until: datetime | None = None
    snoozed_by: str | None = None


@dataclass(eq=False, kw_only=True, repr=False)
class HomeTab:
    """A person who opened the bot's App Home: their tab is re-published when something of theirs changes."""

    user_id: str
    published_at: datetime
    last_audit_id: int  # the newest audit event the published tab reflects


@dataclass(eq=False, kw_only=True, repr=False)
class TeamSpend:
    """The latest month-to-date spend of a team, as the budget job last measured it."""

    team: str
    month: str
    spent: float
    budget: float
    forecast: float
    measured_at: datetime
