"""Tables. Requests and namespaces carry a version column: two replicas (or two managers clicking at
once) that change the same row cannot both win; the loser's transaction is retried from a fresh read.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.orm.attributes import flag_modified

from bot.domain.lifecycle import GrantState, RequestKind, RequestState, Verdict


class UTCDateTime(TypeDecorator[datetime]):
    """Store UTC without a zone (SQLite has none) and always hand back aware UTC datetimes."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored: pass an aware UTC datetime")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return value.replace(tzinfo=timezone.utc) if value is not None else None


class Base(DeclarativeBase):
    pass


class NamespaceRow(Base):
    """The bot's view of one managed namespace: its base quota and the last value it saw/wrote."""

    __tablename__ = "namespaces"

    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    team: Mapped[str] = mapped_column(String(100))
    base_gpus: Mapped[int] = mapped_column(Integer)
    last_seen_gpus: Mapped[int | None] = mapped_column(Integer)
    # The quota's resourceVersion whose hand edits are already in the base: never adopted twice.
    seen_resource_version: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    version: Mapped[int] = mapped_column(Integer, nullable=False)

    __mapper_args__ = {"version_id_col": version}


class RequestRow(Base):
    __tablename__ = "requests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[RequestKind] = mapped_column(String(20))
    state: Mapped[RequestState] = mapped_column(String(20), index=True)
    namespace: Mapped[str] = mapped_column(String(63), index=True)
    team: Mapped[str] = mapped_column(String(100))
    requester_id: Mapped[str] = mapped_column(String(32), index=True)
    amount_text: Mapped[str] = mapped_column(String(16))  # as typed: "+4", "-2", "8"
    delta: Mapped[int] = mapped_column(Integer)
    duration_seconds: Mapped[int | None] = mapped_column(Integer)  # None: permanent
    reason: Mapped[str] = mapped_column(Text)
    approvals_required: Mapped[int] = mapped_column(Integer)
    auto_approved: Mapped[bool] = mapped_column(Boolean, default=False)
    auto_note: Mapped[str | None] = mapped_column(Text)  # which auto-approval rule allowed it, or what kept it for a person
    # What the requester and the approvers saw when it was asked:
    hard_before: Mapped[int] = mapped_column(Integer)
    used_before: Mapped[int | None] = mapped_column(Integer)
    allocatable: Mapped[int | None] = mapped_column(Integer)
    committed_after: Mapped[int | None] = mapped_column(Integer)
    cost: Mapped[float | None] = mapped_column(Float)
    cost_basis: Mapped[str | None] = mapped_column(String(400))  # "per month, at 4.80 USD/h, the ... price"
    # Where it lives in Slack:
    channel_id: Mapped[str] = mapped_column(String(32))
    message_ts: Mapped[str | None] = mapped_column(String(32))
    # Nobody posts the card before this time: a poster's claim (its lease) or Slack's Retry-After. Only
    # the one who holds it posts, and a ts is stored only while none is (bot.services.announce).
    post_claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Extensions point at the request whose grant they extend:
    extends_request_id: Mapped[int | None] = mapped_column(ForeignKey("requests.id"))
    failure_reason: Mapped[str | None] = mapped_column(Text)
    # The apply: a worker owns it until the lease ends (then the reconcile resumes it); failed
    # attempts so far (temporary faults), and the quota before -> after it actually made.
    apply_lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    apply_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    applied_from: Mapped[int | None] = mapped_column(Integer)
    applied_to: Mapped[int | None] = mapped_column(Integer)
    # A shift (kind 'shift'): namespace/team above are the target; the source leg, its state
    # (bot.domain.lifecycle.SourceLeg) and the source quota before -> after the bot made.
    source_namespace: Mapped[str | None] = mapped_column(String(63))
    source_team: Mapped[str | None] = mapped_column(String(100))
    source_state: Mapped[str | None] = mapped_column(String(10))
    source_from: Mapped[int | None] = mapped_column(Integer)
    source_to: Mapped[int | None] = mapped_column(Integer)
    source_used: Mapped[int | None] = mapped_column(Integer)  # GPUs in use in the source when asked
    source_channel_id: Mapped[str | None] = mapped_column(String(32))  # the card's copy for the source team
    source_message_ts: Mapped[str | None] = mapped_column(String(32))
    copy_claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime)  # as post_claimed_until, for the copy
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    decide_by: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    applied_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)  # set on every change: bumps the version
    version: Mapped[int] = mapped_column(Integer, nullable=False)

    decisions: Mapped[list[DecisionRow]] = relationship(
        back_populates="request", order_by="DecisionRow.id", cascade="all, delete-orphan"
    )
    grant: Mapped[GrantRow | None] = relationship(back_populates="request", uselist=False)

    __mapper_args__ = {"version_id_col": version}

    @property
    def permanent(self) -> bool:
        return self.duration_seconds is None

    @property
    def approvals(self) -> list[DecisionRow]:
        return [d for d in self.decisions if d.verdict == Verdict.APPROVE]

    def touch(self, *, now: datetime) -> None:
        """Mark the request changed so its version is bumped even when only its decisions changed:
        a concurrent transaction that read the old version then fails and is retried from a fresh read."""
        self.updated_at = now
        flag_modified(self, "updated_at")


class DecisionRow(Base):
    __tablename__ = "decisions"
    __table_args__ = (UniqueConstraint("request_id", "user_id", name="uq_decision_per_user"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    request_id: Mapped[int] = mapped_column(ForeignKey("requests.id"), index=True)
    user_id: Mapped[str] = mapped_column(String(32))
    verdict: Mapped[Verdict] = mapped_column(String(10))
    decided_at: Mapped[datetime] = mapped_column(UTCDateTime)

    request: Mapped[RequestRow] = relationship(back_populates="decisions")


class GrantRow(Base):
    """The temporary part of an applied request: ``gpus`` on top of the base until ``ends_at``."""

    __tablename__ = "grants"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    request_id: Mapped[int] = mapped_column(ForeignKey("requests.id"), unique=True)
    namespace: Mapped[str] = mapped_column(String(63), index=True)
    gpus: Mapped[int] = mapped_column(Integer)
    state: Mapped[GrantState] = mapped_column(String(10), index=True)
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ends_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    reminded_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    end_reason: Mapped[str | None] = mapped_column(String(20))  # expired | released
    ended_by: Mapped[str | None] = mapped_column(String(32))
    version: Mapped[int] = mapped_column(Integer, nullable=False)

    request: Mapped[RequestRow] = relationship(back_populates="grant")

    __mapper_args__ = {"version_id_col": version}


class AuditRow(Base):
    """Append-only: rows are inserted, never updated or deleted (the repository offers no way to)."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    actor: Mapped[str] = mapped_column(String(64))  # a Slack user id, or "gpu-quota-bot"
    action: Mapped[str] = mapped_column(String(40))
    namespace: Mapped[str | None] = mapped_column(String(63), index=True)
    request_id: Mapped[int | None] = mapped_column(Integer, index=True)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    detail: Mapped[str] = mapped_column(Text, default="")


class DigestRun(Base):
    """One digest per scope (a team, or "*" for the organisation summary) per day: claimed, then posted."""

    __tablename__ = "digest_runs"
    __table_args__ = (UniqueConstraint("scope", "day", name="uq_digest_per_scope_day"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(100))
    day: Mapped[date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(String(10))  # claimed | posted
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    posted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class BudgetAlert(Base):
    """A budget threshold (or the early forecast warning) sent to a team: once per team per month."""

    __tablename__ = "budget_alerts"
    __table_args__ = (UniqueConstraint("team", "month", "threshold", name="uq_budget_alert_once"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    team: Mapped[str] = mapped_column(String(100))
    month: Mapped[str] = mapped_column(String(7))  # 2026-11
    threshold: Mapped[str] = mapped_column(String(10))  # "50" | "80" | "100" | "forecast"
    percent: Mapped[float] = mapped_column(Float)
    sent_at: Mapped[datetime] = mapped_column(UTCDateTime)


class TeamSpend(Base):
    """The latest month-to-date spend per team, as the budget job last measured it."""

    __tablename__ = "team_spend"

    team: Mapped[str] = mapped_column(String(100), primary_key=True)
    month: Mapped[str] = mapped_column(String(7))
    spent: Mapped[float] = mapped_column(Float)
    budget: Mapped[float] = mapped_column(Float)
    forecast: Mapped[float] = mapped_column(Float)
    measured_at: Mapped[datetime] = mapped_column(UTCDateTime)


class IdleNudge(Base):
    """The idle-GPU nudge state of a namespace: not repeated while snoozed or unchanged."""

    __tablename__ = "idle_nudges"

    namespace: Mapped[str] = mapped_column(String(63), primary_key=True)
    gpus: Mapped[float] = mapped_column(Float)
    active: Mapped[bool] = mapped_column(Boolean)  # the idle episode that was nudged is still going on
    nudged_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    snoozed_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    snoozed_by: Mapped[str | None] = mapped_column(String(32))


class BlockedAlert(Base):
    """A workload the GPU quota kept from starting, told to its team once."""

    __tablename__ = "blocked_alerts"

    key: Mapped[str] = mapped_column(String(300), primary_key=True)  # namespace/kind/name
    namespace: Mapped[str] = mapped_column(String(63))
    alerted_at: Mapped[datetime] = mapped_column(UTCDateTime)


class MetricsOutage(Base):
    """Prometheus could not be read: when it started, whether admins were told, when it ended."""

    __tablename__ = "metrics_outages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    cause: Mapped[str] = mapped_column(Text)
    notified_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)


class SlackEventRow(Base):
    """An Events API delivery already handled: Slack re-sends an event it thinks was missed
    (``X-Slack-Retry-Num``, the same ``event_id``), and a decision typed in a thread must count once."""

    __tablename__ = "slack_events"

    event_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class HomeTabRow(Base):
    """A person who opened the bot's App Home: their tab is re-published when something of theirs changes."""

    __tablename__ = "home_tabs"

    user_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    published_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_audit_id: Mapped[int] = mapped_column(Integer)  # the newest audit event the published tab reflects


# The states of an outbox entry.
OUTBOX_PENDING, OUTBOX_SENT, OUTBOX_DEAD = "pending", "sent", "dead"


class OutboxEntry(Base):
    """A thread reply, direct message, channel post or request-message update, until Slack has it.

    Entries of one ``stream`` (a request's thread, its message, a person, a channel) are delivered in
    ``id`` order; ``claimed_until`` is the lease of the replica delivering the stream's head.
    """

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_stream_state", "stream", "state", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    stream: Mapped[str] = mapped_column(String(120))
    kind: Mapped[str] = mapped_column(String(10))  # reply | direct | post | card
    request_id: Mapped[int | None] = mapped_column(Integer)
    target: Mapped[str | None] = mapped_column(String(64))  # the user of a direct message, the channel of a post
    # The typed message (``bot.services.messages.to_json``), or a notice's parts (a list) in an entry recorded
    # before typed messages; None for a card: rendered from the request.
    notice: Mapped[dict[str, Any] | list[dict[str, str]] | None] = mapped_column(JSON)
    actions: Mapped[list[dict[str, str | None]]] = mapped_column(JSON, default=list)
    state: Mapped[str] = mapped_column(String(10), index=True)  # pending | sent | dead
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    not_before: Mapped[datetime | None] = mapped_column(UTCDateTime)
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class LedgerDay(Base):
    """One finished calendar day (in ``schedules.timezone``) of the cost ledger: recorded from the
    metrics, or ``no_data`` when Prometheus held nothing for it (before its retention, an outage)."""

    __tablename__ = "ledger_days"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    status: Mapped[str] = mapped_column(String(10))  # recorded | no_data
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ksm_spacing: Mapped[float | None] = mapped_column(Float)  # seconds between samples, as measured
    dcgm_spacing: Mapped[float | None] = mapped_column(Float)


class LedgerEntry(Base):
    """What one namespace used of one GPU model on one day, priced at that day's price."""

    __tablename__ = "ledger_entries"
    __table_args__ = (
        UniqueConstraint("day", "namespace", "model", name="uq_ledger_day_namespace_model"),
        Index("ix_ledger_entries_namespace_day", "namespace", "day"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    day: Mapped[date] = mapped_column(Date, index=True)
    namespace: Mapped[str] = mapped_column(String(63))
    model: Mapped[str] = mapped_column(String(200))
    team: Mapped[str] = mapped_column(String(200))  # the policy's team, or "<label> (not managed)"
    cost_center: Mapped[str | None] = mapped_column(String(200))
    allocated_hours: Mapped[float] = mapped_column(Float)
    idle_hours: Mapped[float] = mapped_column(Float)  # of the samples under the idle threshold
    observed_hours: Mapped[float] = mapped_column(Float)  # GPU-hours DCGM saw
    util_hours: Mapped[float] = mapped_column(Float)  # utilisation (0..1) x hours
    price: Mapped[float] = mapped_column(Float)  # per GPU-hour, as on that day
    cost: Mapped[float] = mapped_column(Float)
    idle_cost: Mapped[float] = mapped_column(Float)


class Reclaim(Base):
    """A quota lowered below what the namespace was using: followed until usage is within it (gradual
    reclaim: running pods are never evicted, the quota only refuses new ones)."""

    __tablename__ = "reclaims"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(63), index=True)
    request_id: Mapped[int | None] = mapped_column(Integer)  # the change that lowered it (its thread hears the end)
    quota: Mapped[int] = mapped_column(Integer)  # the lowered hard value
    used_at_start: Mapped[int] = mapped_column(Integer)
    used_at_end: Mapped[int | None] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)  # None: still reclaiming


class QuotaBlockDay(Base):
    """How many workloads the GPU quota kept from starting in a namespace on a day (UTC): what
    proposals cite as "blocked by quota N times"."""

    __tablename__ = "quota_block_days"

    namespace: Mapped[str] = mapped_column(String(63), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    blocked: Mapped[int] = mapped_column(Integer)
