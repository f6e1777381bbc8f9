"""Statements of the submission path, built once: plain SQL expressions on the tables (no ORM entities).

Every `/gpu-quota request` runs these. Built per call, SQLAlchemy spends more CPU assembling and
coercing the expression (and the ORM layer its compile state) than SQLite spends running it; built
once with bind parameters, only the values change and the compiled form comes from the engine's cache.
Rows read here are plain tuples: nothing the session would track.
"""

from __future__ import annotations

from sqlalchemy import bindparam, func, insert, select, update

from bot.adapters.db.models import (
    OUTBOX_PENDING,
    LedgerEntry,
    OutboxEntry,
    audit_events,
    grants,
    namespaces,
    requests,
    team_spend,
)
from bot.domain.lifecycle import GrantState, RequestState

_requests = requests.c
_grants = grants.c
_ledger = LedgerEntry.__table__.c
_outbox = OutboxEntry.__table__.c
_spend = team_spend.c
_namespaces = namespaces.c
_GRANTED = [RequestState.APPROVED, RequestState.APPLIED]

# A new request row (every column given, see ``NEW_REQUEST_DEFAULTS``), its id returned.
ADD_REQUEST = insert(requests).returning(_requests.id)

# The columns a new request leaves to their defaults: what the ORM would have written.
NEW_REQUEST_DEFAULTS: dict[str, object] = {column.name: None for column in requests.columns if column.name != "id"} | {
    "auto_approved": False,
    "apply_attempts": 0,
    "version": 1,
}

# One audit event (the trail is appended to, never changed).
ADD_AUDIT_EVENT = insert(audit_events)

# A team's auto-approved requests created in [start, end): their GPUs and seconds.
AUTO_APPROVED_SIZES = select(_requests.delta, _requests.duration_seconds).where(
    _requests.team == bindparam("team"),
    _requests.resource == bindparam("resource"),
    _requests.auto_approved.is_(True),
    _requests.state.in_(_GRANTED),
    _requests.created_at >= bindparam("start"),
    _requests.created_at < bindparam("end"),
)

# A namespace's active grants with their requests' auto-approval flag.
ACTIVE_GRANTS_WITH_FLAG = (
    select(_grants.request_id, _grants.gpus, _requests.auto_approved)
    .join_from(grants, requests, _requests.id == _grants.request_id)
    .where(
        _grants.namespace == bindparam("namespace"),
        _grants.resource == bindparam("resource"),
        _grants.state == GrantState.ACTIVE,
    )
)

# The requests a namespace's auto-approved extensions extend.
EXTENDED_BY_BOT = select(_requests.extends_request_id).where(
    _requests.namespace == bindparam("namespace"),
    _requests.resource == bindparam("resource"),
    _requests.auto_approved.is_(True),
    _requests.extends_request_id.is_not(None),
    _requests.state.in_(_GRANTED),
)

# The hours of one resource on each model a namespace had over [first, last].
LEDGER_MODEL_HOURS = (
    select(_ledger.model, func.sum(_ledger.allocated_hours))
    .where(
        _ledger.namespace == bindparam("namespace"),
        _ledger.resource == bindparam("resource"),
        _ledger.day >= bindparam("first"),
        _ledger.day <= bindparam("last"),
    )
    .group_by(_ledger.model)
)

LEDGER_PLACEMENT_HOURS = (
    select(_ledger.model, _ledger.capacity_type, _ledger.pool, func.sum(_ledger.allocated_hours))
    .where(
        _ledger.namespace == bindparam("namespace"),
        _ledger.resource == bindparam("resource"),
        _ledger.day >= bindparam("first"),
        _ledger.day <= bindparam("last"),
    )
    .group_by(_ledger.model, _ledger.capacity_type, _ledger.pool)
)

# Where a request's message is, unless one is stored already (its poster's claim ends); the version moves
# as the ORM's version counter would.
SET_MESSAGE_REF = (
    update(requests)
    .where(_requests.id == bindparam("request_id"), _requests.message_ts.is_(None))
    .values(
        message_ts=bindparam("new_ts"),
        channel_id=bindparam("new_channel"),
        post_claimed_until=None,
        version=_requests.version + 1,
    )
)

# Which of these outbox streams have entries waiting.
PENDING_STREAMS = (
    select(_outbox.stream)
    .where(_outbox.stream.in_(bindparam("streams", expanding=True)), _outbox.state == OUTBOX_PENDING)
    .distinct()
)

# Whether the budget job's last measurement of ``month`` found the team at or over its budget.
TEAM_OVER_BUDGET = select(_spend.team).where(
    _spend.team == bindparam("team"), _spend.month == bindparam("month"), _spend.spent >= _spend.budget
)

# Whether the bot has a row for this namespace.
NAMESPACE_KNOWN = select(_namespaces.name).where(
    _namespaces.name == bindparam("name"), _namespaces.resource == bindparam("resource")
)
