"""The request aggregate (a request, its decisions, its grant) and a namespace's quota state: plain classes.

The services read and change them; the database adapter maps them onto its tables
(``bot.adapters.db.models``, SQLAlchemy's imperative mapping) and knows their versions. Nothing here
knows of the database: an entity is changed in memory and saved when its unit of work commits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from bot.domain.failure_reasons import FailureReason
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, Verdict
from bot.domain.prices import StoredBasis
from bot.domain.quota import QuotaScope


@dataclass(eq=False, kw_only=True, repr=False)
class Namespace:
    """The bot's view of one governed resource of a managed namespace: its base quota and the last value it saw/wrote."""

    name: str
    resource: str  # the governed extended resource (bot.domain.resources): one row per namespace and resource
    team: str
    base_gpus: int
    last_seen_gpus: int | None
    # The quota's resourceVersion whose hand edits are already in the base: never adopted twice.
    seen_resource_version: str | None
    updated_at: datetime
    version: int = field(init=False)  # kept by the adapter: two writers of one namespace cannot both win


@dataclass(eq=False, kw_only=True, repr=False)
class Decision:
    """One person's verdict on a request (one per person and request)."""

    user_id: str
    verdict: Verdict
    decided_at: datetime
    id: int = field(init=False)
    request_id: int = field(init=False)  # set when it is saved with its request


@dataclass(eq=False, kw_only=True, repr=False)
class Grant:
    """The temporary part of an applied request: ``gpus`` on top of the base until ``ends_at``."""

    request_id: int
    namespace: str
    resource: str
    gpus: int
    state: GrantState
    starts_at: datetime
    ends_at: datetime
    reminded_at: datetime | None = None
    ended_at: datetime | None = None
    end_reason: str | None = None  # expired | released
    ended_by: str | None = None
    id: int = field(init=False)
    version: int = field(init=False)

    @property
    def scope(self) -> QuotaScope:
        return QuotaScope(self.namespace, self.resource)


@dataclass(eq=False, kw_only=True, repr=False)
class Request:
    """A request for GPU quota (more, less, an extension or a shift between namespaces), from its
    submission to its end. Every change is followed by ``touch``: it is what makes two concurrent
    changes of one request conflict (the loser is run again from a fresh read)."""

    kind: RequestKind
    state: RequestState
    namespace: str
    resource: str  # the one resource it changes (a shift: in both namespaces)
    team: str
    requester_id: str
    amount_text: str  # as typed: "+4", "-2", "8"
    delta: int
    duration_seconds: int | None  # None: permanent
    reason: str
    approvals_required: int
    auto_approved: bool = False
    auto_note: str | None = None  # which auto-approval rule allowed it, or what kept it for a person
    # What the requester and the approvers saw when it was asked:
    hard_before: int
    used_before: int | None = None
    allocatable: int | None = None
    committed_after: int | None = None
    cost: float | None = None
    cost_basis: StoredBasis | None = None  # stored as JSON text (bot.domain.prices)
    # Where it lives in Slack:
    channel_id: str
    message_ts: str | None = None
    # Nobody posts the card before this time: a poster's claim (its lease) or Slack's Retry-After. Only
    # the one who holds it posts, and a ts is stored only while none is (bot.services.announce).
    post_claimed_until: datetime | None = None
    # Extensions point at the request whose grant they extend:
    extends_request_id: int | None = None
    failure_reason: FailureReason | None = None  # stored as JSON text (bot.domain.failure_reasons)
    # The apply: a worker owns it until the lease ends (then the reconcile resumes it); failed
    # attempts so far (temporary faults), and the quota before -> after it actually made.
    apply_lease_until: datetime | None = None
    apply_attempts: int = 0
    applied_from: int | None = None
    applied_to: int | None = None
    # A shift (kind 'shift'): namespace/team above are the target; the source leg, its state
    # (bot.domain.lifecycle.SourceLeg) and the source quota before -> after the bot made.
    source_namespace: str | None = None
    source_team: str | None = None
    source_state: str | None = None
    source_from: int | None = None
    source_to: int | None = None
    source_used: int | None = None  # GPUs in use in the source when asked
    source_channel_id: str | None = None  # the card's copy for the source team
    source_message_ts: str | None = None
    copy_claimed_until: datetime | None = None  # as post_claimed_until, for the copy
    created_at: datetime
    decide_by: datetime
    decided_at: datetime | None = None
    applied_at: datetime | None = None
    updated_at: datetime  # set on every change (``touch``)
    id: int = field(init=False)
    version: int = field(init=False)
    decisions: list[Decision] = field(init=False, default_factory=list)  # in the order they were made
    grant: Grant | None = field(init=False, default=None)

    @property
    def permanent(self) -> bool:
        return self.duration_seconds is None

    @property
    def scope(self) -> QuotaScope:
        """The quota it changes (a shift: its target's)."""
        return QuotaScope(self.namespace, self.resource)

    @property
    def source_scope(self) -> QuotaScope | None:
        """A shift's source quota (None: not a shift)."""
        return QuotaScope(self.source_namespace, self.resource) if self.source_namespace else None

    @property
    def approvals(self) -> list[Decision]:
        return [d for d in self.decisions if d.verdict == Verdict.APPROVE]

    def touch(self, *, now: datetime) -> None:
        """Mark the request changed, even when only its decisions changed: its version moves when it is
        saved, so a concurrent unit of work that read the old version fails and is run again."""
        self.updated_at = now
