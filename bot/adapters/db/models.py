"""Tables, and how the domain's entities are mapped onto them (SQLAlchemy's imperative mapping: the
classes of ``bot.domain.entities`` and ``bot.domain.records`` know nothing of the database).

Requests, grants and namespaces carry a version column: two replicas (or two managers clicking at
once) that change the same row cannot both win; the loser's transaction is retried from a fresh read.
The tables only the adapter reads and writes (digest runs, alerts, the outbox, the ledger) are
declared with their row classes.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    event,
)
from sqlalchemy import inspect as inspect_state
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship
from sqlalchemy.orm.attributes import QueryableAttribute, flag_modified

from bot.domain import failure_reasons, prices
from bot.domain.clusters import HOME
from bot.domain.entities import Decision, Grant, Namespace, Request
from bot.domain.failure_reasons import FailureReason
from bot.domain.prices import BasisAsStored, StoredBasis
from bot.domain.records import AuditEntry, HomeTab, IdleNudge, MetricsOutage, Reclaim, TeamSpend
from bot.domain.resources import GPU


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


class ReasonText(TypeDecorator[FailureReason]):
    """A failure reason in a text column: JSON (``{"reason": ...``); an earlier version's plain text is read as said."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: FailureReason | None, dialect: Any) -> str | None:
        return failure_reasons.to_text(value) if value is not None else None

    def process_result_value(self, value: str | None, dialect: Any) -> FailureReason | None:
        return failure_reasons.from_text(value) if value is not None else None


class BasisText(TypeDecorator[StoredBasis]):
    """A cost's basis in a string column: compact JSON (``{"cost_basis":...``); an earlier version's text as stored."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: StoredBasis | None, dialect: Any) -> str | None:
        if value is None:
            return None
        return value.text if isinstance(value, BasisAsStored) else prices.to_text(value)

    def process_result_value(self, value: str | None, dialect: Any) -> StoredBasis | None:
        return prices.from_text(value) if value is not None else None


class Base(DeclarativeBase):
    pass


metadata = Base.metadata
NAMESPACE_KEY_LENGTH = 127  # a namespace key: cluster/name, two labels of at most 63 characters (bot.domain.clusters)

namespaces = Table(
    "namespaces",
    metadata,
    Column("name", String(NAMESPACE_KEY_LENGTH), primary_key=True),
    Column("resource", String(253), primary_key=True, server_default=GPU),  # one row per governed resource
    Column("team", String(100), nullable=False),
    Column("base_gpus", Integer, nullable=False),
    Column("last_seen_gpus", Integer),
    Column("seen_resource_version", String(64)),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("version", Integer, nullable=False),
)

requests = Table(
    "requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(20), nullable=False),
    Column("state", String(20), nullable=False, index=True),
    Column("namespace", String(NAMESPACE_KEY_LENGTH), nullable=False, index=True),
    Column("resource", String(253), nullable=False, server_default=GPU),
    Column("team", String(100), nullable=False),
    Column("requester_id", String(32), nullable=False, index=True),
    Column("amount_text", String(16), nullable=False),
    Column("delta", Integer, nullable=False),
    Column("duration_seconds", Integer),
    Column("reason", Text, nullable=False),
    Column("approvals_required", Integer, nullable=False),
    Column("auto_approved", Boolean, nullable=False, default=False),
    Column("auto_note", Text),
    Column("hard_before", Integer, nullable=False),
    Column("used_before", Integer),
    Column("allocatable", Integer),
    Column("committed_after", Integer),
    Column("cost", Float),
    Column("cost_basis", BasisText(400)),
    Column("channel_id", String(32), nullable=False),
    Column("message_ts", String(32)),
    Column("post_claimed_until", UTCDateTime),
    Column("extends_request_id", Integer, ForeignKey("requests.id")),
    Column("failure_reason", ReasonText),
    Column("apply_lease_until", UTCDateTime, index=True),
    Column("apply_attempts", Integer, nullable=False, default=0, server_default="0"),
    Column("applied_from", Integer),
    Column("applied_to", Integer),
    Column("source_namespace", String(NAMESPACE_KEY_LENGTH)),
    Column("source_team", String(100)),
    Column("source_state", String(10)),
    Column("source_from", Integer),
    Column("source_to", Integer),
    Column("source_used", Integer),
    Column("source_channel_id", String(32)),
    Column("source_message_ts", String(32)),
    Column("copy_claimed_until", UTCDateTime),
    Column("created_at", UTCDateTime, nullable=False),
    Column("decide_by", UTCDateTime, nullable=False, index=True),
    Column("decided_at", UTCDateTime),
    Column("applied_at", UTCDateTime),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("version", Integer, nullable=False),
)

decisions = Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("request_id", Integer, ForeignKey("requests.id"), nullable=False, index=True),
    Column("user_id", String(32), nullable=False),
    Column("verdict", String(10), nullable=False),
    Column("decided_at", UTCDateTime, nullable=False),
    UniqueConstraint("request_id", "user_id", name="uq_decision_per_user"),
)

grants = Table(
    "grants",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("request_id", Integer, ForeignKey("requests.id"), nullable=False, unique=True),
    Column("namespace", String(NAMESPACE_KEY_LENGTH), nullable=False, index=True),
    Column("resource", String(253), nullable=False, server_default=GPU),
    Column("gpus", Integer, nullable=False),
    Column("state", String(10), nullable=False, index=True),
    Column("starts_at", UTCDateTime, nullable=False),
    Column("ends_at", UTCDateTime, nullable=False, index=True),
    Column("reminded_at", UTCDateTime),
    Column("ended_at", UTCDateTime),
    Column("end_reason", String(20)),
    Column("ended_by", String(32)),
    Column("version", Integer, nullable=False),
)

# Append-only: rows are inserted, never updated or deleted (the repository offers no way to).
audit_events = Table(
    "audit_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime, nullable=False, index=True),
    Column("actor", String(64), nullable=False),
    Column("action", String(40), nullable=False),
    Column("namespace", String(NAMESPACE_KEY_LENGTH), index=True),
    Column("request_id", Integer, index=True),
    Column("before", JSON),
    Column("after", JSON),
    Column("detail", Text, nullable=False, default=""),
)

team_spend = Table(
    "team_spend",
    metadata,
    Column("team", String(100), primary_key=True),
    Column("month", String(7), nullable=False),
    Column("spent", Float, nullable=False),
    Column("budget", Float, nullable=False),
    Column("forecast", Float, nullable=False),
    Column("measured_at", UTCDateTime, nullable=False),
)

idle_nudges = Table(
    "idle_nudges",
    metadata,
    Column("namespace", String(NAMESPACE_KEY_LENGTH), primary_key=True),
    Column("gpus", Float, nullable=False),
    Column("active", Boolean, nullable=False),
    Column("nudged_at", UTCDateTime),
    Column("snoozed_until", UTCDateTime),
    Column("snoozed_by", String(32)),
)

metrics_outages = Table(
    "metrics_outages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("cause", Text, nullable=False),
    Column("notified_at", UTCDateTime),
    Column("ended_at", UTCDateTime, index=True),
)

# What the weekly doctor run found: each check's status by its key ("device_plugin@us-2"), to post only changes.
doctor_results = Table(
    "doctor_results",
    metadata,
    Column("check_key", String(128), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("recorded_at", UTCDateTime, nullable=False),
)

home_tabs = Table(
    "home_tabs",
    metadata,
    Column("user_id", String(32), primary_key=True),
    Column("published_at", UTCDateTime, nullable=False),
    Column("last_audit_id", Integer, nullable=False),
)

reclaims = Table(
    "reclaims",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("namespace", String(NAMESPACE_KEY_LENGTH), nullable=False, index=True),
    Column("resource", String(253), nullable=False, server_default=GPU),
    Column("request_id", Integer),
    Column("quota", Integer, nullable=False),
    Column("used_at_start", Integer, nullable=False),
    Column("used_at_end", Integer),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, index=True),
)


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


class BlockedAlert(Base):
    """A workload the GPU quota kept from starting, told to its team once."""

    __tablename__ = "blocked_alerts"

    key: Mapped[str] = mapped_column(String(300), primary_key=True)  # namespace/kind/name
    namespace: Mapped[str] = mapped_column(String(NAMESPACE_KEY_LENGTH))
    alerted_at: Mapped[datetime] = mapped_column(UTCDateTime)


class SlackEventRow(Base):
    """An Events API delivery already handled: Slack re-sends an event it thinks was missed
    (``X-Slack-Retry-Num``, the same ``event_id``), and a decision typed in a thread must count once."""

    __tablename__ = "slack_events"

    event_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


# The states of an outbox entry.
OUTBOX_PENDING, OUTBOX_SENT, OUTBOX_DEAD = "pending", "sent", "dead"
OUTBOX_MAIL = "mail"  # the kind of a mail's entry (``bot.services.announce.MAIL``); every other kind is Slack's
OUTBOX_TARGET_LENGTH = 254  # a whole mail address (RFC 5321's forward-path less its brackets)


class OutboxEntry(Base):
    """A thread reply, direct message, channel post or request-message update, until Slack has it; a mail,
    until the mail server has it.

    Entries of one ``stream`` (a request's thread, its message, a person, a channel, a mail recipient) are
    delivered in ``id`` order; ``claimed_until`` is the lease of the replica delivering the stream's head.
    """

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_stream_state", "stream", "state", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # Wide enough for "mail:" and a whole mail address (migration 0018; 120 before).
    stream: Mapped[str] = mapped_column(String(OUTBOX_TARGET_LENGTH + 8))
    kind: Mapped[str] = mapped_column(String(10))  # reply | direct | post | card | mail
    request_id: Mapped[int | None] = mapped_column(Integer)
    # The user of a direct message, the channel of a post, the address of a mail (64 before migration 0018).
    target: Mapped[str | None] = mapped_column(String(OUTBOX_TARGET_LENGTH))
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
    """One finished calendar day (in ``schedules.timezone``) of the cost ledger in one cluster: recorded from
    the metrics, or ``no_data`` when Prometheus held nothing for it (before its retention, an outage). A day
    without a row for a cluster is not known for it yet (its Prometheus did not answer)."""

    __tablename__ = "ledger_days"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    # The namespace keys' cluster part: "" for the home cluster (every day recorded before clusters).
    cluster: Mapped[str] = mapped_column(String(63), primary_key=True, default=HOME, server_default=HOME)
    status: Mapped[str] = mapped_column(String(10))  # recorded | no_data
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ksm_spacing: Mapped[float | None] = mapped_column(Float)  # seconds between samples, as measured
    dcgm_spacing: Mapped[float | None] = mapped_column(Float)
    # Whether its GPU-hours could be told apart by node (bot.domain.capacity.SplitState); None: not read (a day
    # recorded before 0017, or a source that does not tell).
    split: Mapped[str | None] = mapped_column(String(24))


class LedgerEntry(Base):
    """What one namespace used of one resource on one GPU model on one day at one placement (spot, on-demand, a
    priced pool), priced at that day's price there."""

    __tablename__ = "ledger_entries"
    __table_args__ = (
        UniqueConstraint(
            "day",
            "namespace",
            "resource",
            "model",
            "capacity_type",
            "pool",
            name="uq_ledger_day_namespace_resource_model_placement",
        ),
        Index("ix_ledger_entries_namespace_day", "namespace", "day"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    day: Mapped[date] = mapped_column(Date, index=True)
    namespace: Mapped[str] = mapped_column(String(NAMESPACE_KEY_LENGTH))
    model: Mapped[str] = mapped_column(String(200))
    # The extended resource (nvidia.com/gpu, nvidia.com/mig-3g.40gb); its hours and price are of that resource.
    resource: Mapped[str] = mapped_column(String(253), default=GPU, server_default=GPU)
    # Where it ran (bot.domain.capacity): the nodes' capacity type (unknown: on-demand), and the pool the policy
    # priced it in ("": none). Rows recorded before 0017 are on-demand.
    capacity_type: Mapped[str] = mapped_column(String(16), default="on-demand", server_default="on-demand")
    pool: Mapped[str] = mapped_column(String(63), default="", server_default="")
    team: Mapped[str] = mapped_column(String(200))  # the policy's team, or "<label> (not managed)"
    cost_center: Mapped[str | None] = mapped_column(String(200))
    allocated_hours: Mapped[float] = mapped_column(Float)
    idle_hours: Mapped[float] = mapped_column(Float)  # of the samples under the idle threshold
    observed_hours: Mapped[float] = mapped_column(Float)  # GPU-hours DCGM saw
    util_hours: Mapped[float] = mapped_column(Float)  # utilisation (0..1) x hours
    price: Mapped[float] = mapped_column(Float)  # per hour of the resource, as on that day
    cost: Mapped[float] = mapped_column(Float)
    idle_cost: Mapped[float] = mapped_column(Float)


class QuotaBlockDay(Base):
    """How many workloads the GPU quota kept from starting in a namespace on a day (UTC): what
    proposals cite as "blocked by quota N times"."""

    __tablename__ = "quota_block_days"

    namespace: Mapped[str] = mapped_column(String(NAMESPACE_KEY_LENGTH), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    blocked: Mapped[int] = mapped_column(Integer)


def _map_entities() -> None:
    """Map the domain's classes onto their tables, once (on import: whoever reads the tables has them)."""
    mapped = Base.registry.map_imperatively
    mapped(Namespace, namespaces, version_id_col=namespaces.c.version)
    mapped(Decision, decisions, properties={"request": relationship(Request, back_populates="decisions")})
    mapped(
        Grant,
        grants,
        version_id_col=grants.c.version,
        properties={"request": relationship(Request, back_populates="grant")},
    )
    mapped(
        Request,
        requests,
        version_id_col=requests.c.version,
        properties={
            "decisions": relationship(Decision, back_populates="request", order_by=decisions.c.id, cascade="all, delete-orphan"),
            "grant": relationship(Grant, back_populates="request", uselist=False),
        },
    )
    for entity, table in (
        (AuditEntry, audit_events),
        (TeamSpend, team_spend),
        (IdleNudge, idle_nudges),
        (MetricsOutage, metrics_outages),
        (HomeTab, home_tabs),
        (Reclaim, reclaims),
    ):
        mapped(entity, table)


_map_entities()


def attribute(entity: type, name: str) -> QueryableAttribute[Any]:
    """The mapped attribute ``name`` of an entity class, for queries and loader options (the plain
    class names it as the value type, which the type checker sees)."""
    found: QueryableAttribute[Any] = getattr(entity, name)
    return found


@event.listens_for(Session, "before_flush")
def _touched_requests_move_their_version(session: Session, _context: object, _instances: object) -> None:
    """A request whose ``updated_at`` was set (``Request.touch``) is written, and its version moved,
    even when the value is the one it had or only its decisions changed: a concurrent transaction that
    read the old version then fails and is retried from a fresh read."""
    for instance in session.dirty:
        if isinstance(instance, Request) and "updated_at" in inspect_state(instance).committed_state:
            flag_modified(instance, "updated_at")
