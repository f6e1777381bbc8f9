"""Queries the services need, on one SQLAlchemy session. The audit trail can only be appended to."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, text, update
from sqlalchemy.orm import make_transient_to_detached, selectinload
from sqlalchemy.sql.elements import ColumnElement

from bot.adapters.db import statements
from bot.adapters.db.models import (
    OUTBOX_PENDING,
    OutboxEntry,
    attribute,
    audit_events,
    grants,
    namespaces,
    requests,
)
from bot.adapters.db.record_store import RecordStore
from bot.domain.entities import Decision, Grant, Namespace, Request
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg, Verdict
from bot.domain.records import AuditEntry

BOT_ACTOR = "gpu-quota-bot"
_requests, _grants, _namespaces, _audit = requests.c, grants.c, namespaces.c, audit_events.c


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for a PostgreSQL advisory lock named ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class Repository(RecordStore):
    """Implements ``bot.services.ports.Repository`` on one session: requests, grants, namespaces and the
    audit trail here, the other ports in ``RecordStore`` (``session`` stays public for tests that set
    up rows directly; services use the named methods only)."""

    # --- requests ----------------------------------------------------------------------------

    def add_request(self, **fields: Any) -> Request:
        """A new request with these column values, inserted now, so it has its id.

        One plain ``INSERT ... RETURNING id`` (the ORM's flush of a new row costs several times that in
        CPU on every submission); the row is then handed to the session as loaded with exactly these
        values, so later changes in the transaction are tracked (and versioned) as usual and reading
        it, its decisions (none) or its grant (none) asks the database nothing.
        """
        values: dict[str, Any] = statements.NEW_REQUEST_DEFAULTS | fields
        request_id = self.session.execute(statements.ADD_REQUEST, values).scalar_one()
        request = Request(**{name: value for name, value in values.items() if name != "version"})
        request.id, request.version = request_id, values["version"]
        # Loaded as empty, so that reading them asks nothing (the dataclass leaves a plain default to its class
        # attribute, which the mapping replaced: an unset grant would be lazily loaded).
        request.decisions, request.grant = [], None
        make_transient_to_detached(request)
        self.session.add(request)
        return request

    def add_decision(self, request: Request, *, user_id: str, verdict: Verdict, decided_at: datetime) -> None:
        request.decisions.append(Decision(user_id=user_id, verdict=verdict, decided_at=decided_at))

    def count_requests_by_state(self) -> dict[str, int]:
        query = select(_requests.state, func.count()).group_by(_requests.state)
        return {str(state): int(count) for state, count in self.session.execute(query)}

    def request(self, request_id: int) -> Request | None:
        return self.session.get(Request, request_id, options=[selectinload(attribute(Request, "decisions"))])

    def set_message_ref(self, request_id: int, *, channel_id: str, ts: str) -> bool:
        values = {"request_id": request_id, "new_ts": ts, "new_channel": channel_id}
        return _changed(self.session.execute(statements.SET_MESSAGE_REF, values))

    def claim_post(self, request_id: int, *, copy: bool, now: datetime, until: datetime) -> bool:
        # One conditional UPDATE: of two posters (threads, replicas) the database lets one change the row;
        # on PostgreSQL the other waits for its commit, reads the row again and finds the claim taken.
        claimed, posted = _post_columns(copy)
        unposted = [posted.is_(None)] + (
            [_requests.message_ts.is_not(None), _requests.source_channel_id.is_not(None)] if copy else []
        )
        result = self.session.execute(
            update(Request)
            .where(_requests.id == request_id, *unposted, or_(claimed.is_(None), claimed <= now))
            .values({claimed: until})
            .execution_options(synchronize_session=False)
        )
        return _changed(result)

    def release_post(self, request_id: int, *, copy: bool, held: datetime, not_before: datetime) -> None:
        claimed, posted = _post_columns(copy)
        self.session.execute(
            update(Request)
            .where(_requests.id == request_id, posted.is_(None), claimed == held)
            .values({claimed: not_before})
            .execution_options(synchronize_session=False)
        )

    def outbox_streams_pending(self, streams: Sequence[str]) -> list[str]:
        found = set(self.session.scalars(statements.PENDING_STREAMS, {"streams": list(streams)}))
        return [stream for stream in streams if stream in found]

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
        if latest_only:
            # Locked until this transaction ends: a drain skips it (SKIP LOCKED) instead of rendering the
            # card before this change commits; a claim that got in first makes it not waiting (re-checked).
            waiting = self.session.scalar(
                select(OutboxEntry.id)
                .where(
                    OutboxEntry.stream == stream,
                    OutboxEntry.state == OUTBOX_PENDING,
                    or_(OutboxEntry.claimed_until.is_(None), OutboxEntry.claimed_until < now),
                )
                .limit(1)
                .with_for_update()
            )
            if waiting is not None:
                return
        self.session.add(
            OutboxEntry(
                stream=stream,
                kind=kind,
                request_id=request_id,
                target=target,
                notice=notice,
                actions=actions or [],
                state=OUTBOX_PENDING,
                attempts=0,
                last_error="",
                created_at=now,
            )
        )

    def requests_in(self, states: Iterable[RequestState], *, namespaces: Iterable[str] | None = None) -> Sequence[Request]:
        query = select(Request).where(_requests.state.in_(list(states))).order_by(_requests.id)
        if namespaces is not None:  # a shift is about its source namespace too
            names = list(namespaces)
            query = query.where(or_(_requests.namespace.in_(names), _requests.source_namespace.in_(names)))
        return self.session.scalars(query.options(selectinload(attribute(Request, "decisions")))).all()

    def pending_past_deadline(self, now: datetime) -> Sequence[Request]:
        query = select(Request).where(_requests.state == RequestState.PENDING, _requests.decide_by <= now)
        return self.session.scalars(query.order_by(_requests.id)).all()

    def unposted_requests(self, now: datetime) -> Sequence[int]:
        """Requests Slack never accepted a message for (it was down, or the channel was wrong)."""
        query = select(_requests.id).where(_requests.message_ts.is_(None), _claim_free(_requests.post_claimed_until, now))
        return self.session.scalars(query.order_by(_requests.id)).all()

    def unposted_copies(self, now: datetime) -> Sequence[int]:
        query = select(_requests.id).where(
            _requests.state == RequestState.PENDING,
            _requests.message_ts.is_not(None),
            _requests.source_channel_id.is_not(None),
            _requests.source_message_ts.is_(None),
            _claim_free(_requests.copy_claimed_until, now),
        )
        return self.session.scalars(query.order_by(_requests.id)).all()

    def set_copy_ref(self, request_id: int, *, ts: str) -> bool:
        result = self.session.execute(
            update(Request)
            .where(_requests.id == request_id, _requests.source_message_ts.is_(None))
            .values(source_message_ts=ts, copy_claimed_until=None)
            .execution_options(synchronize_session=False)
        )
        return _changed(result)

    def approved_unleased(self, now: datetime) -> Sequence[Request]:
        """Approved requests no live worker is applying: its lease lapsed (a crash, a lost replica, or
        the wait after a temporary failure is over)."""
        query = select(Request).where(
            _requests.state == RequestState.APPROVED,
            or_(_requests.apply_lease_until.is_(None), _requests.apply_lease_until <= now),
        )
        return self.session.scalars(query.order_by(_requests.id)).all()

    def failed_shifts_holding_source(self) -> Sequence[Request]:
        """Temporary shifts whose target side failed while their source stays lowered."""
        query = select(Request).where(
            _requests.kind == RequestKind.SHIFT,
            _requests.state == RequestState.FAILED,
            _requests.source_state == SourceLeg.APPLIED,
            _requests.duration_seconds.is_not(None),
        )
        return self.session.scalars(query.order_by(_requests.id)).all()

    def shift_sources_in_flight(self) -> dict[tuple[str, str], int]:
        """(source namespace, resource) of approved shifts whose decrease is recorded but not yet applied, with the shift's id."""
        query = select(_requests.source_namespace, _requests.resource, _requests.id).where(
            _requests.kind == RequestKind.SHIFT,
            _requests.state == RequestState.APPROVED,
            _requests.source_state == SourceLeg.RECORDED,
        )
        rows = self.session.execute(query)
        return {(name, resource): request_id for name, resource, request_id in rows if name is not None}

    def auto_approved_sizes_since(self, team: str, resource: str, start: datetime, end: datetime) -> list[tuple[int, int | None]]:
        scope = {"team": team, "resource": resource, "start": start, "end": end}
        rows = self.session.execute(statements.AUTO_APPROVED_SIZES, scope)
        return [(delta, seconds) for delta, seconds in rows]

    def lock_auto_approval(self, team: str) -> None:
        """Serialise auto-approval decisions of one team until this transaction ends; call it before reading.

        Counting the active auto-approved GPUs and then recording a new one is a read-then-write:
        without the lock, two requests submitted at the same moment both see room for one more.
        PostgreSQL: a transaction-level advisory lock per team. SQLite: nothing to do, every
        transaction already holds the database's single write lock from its ``BEGIN IMMEDIATE``
        (``bot.adapters.db.database``), so the reads that follow are serialised with other writers.
        """
        if self.session.get_bind().dialect.name == "postgresql":
            self.session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": advisory_key(f"auto-approval:{team}")})

    # --- namespaces --------------------------------------------------------------------------

    def namespace(self, name: str, resource: str) -> Namespace | None:
        return self.session.get(Namespace, (name, resource))

    def namespace_known(self, name: str, resource: str) -> bool:
        return self.session.execute(statements.NAMESPACE_KNOWN, {"name": name, "resource": resource}).first() is not None

    def add_namespace(
        self,
        *,
        name: str,
        resource: str,
        team: str,
        base_gpus: int,
        last_seen_gpus: int | None,
        seen_resource_version: str | None,
        updated_at: datetime,
    ) -> Namespace:
        row = Namespace(
            name=name,
            resource=resource,
            team=team,
            base_gpus=base_gpus,
            last_seen_gpus=last_seen_gpus,
            seen_resource_version=seen_resource_version,
            updated_at=updated_at,
        )
        self.session.add(row)
        self.session.flush()
        return row

    def namespaces(self, names: Iterable[str]) -> Sequence[Namespace]:
        return self.session.scalars(select(Namespace).where(_namespaces.name.in_(list(names)))).all()

    # --- grants ------------------------------------------------------------------------------

    def add_grant(
        self,
        *,
        request_id: int,
        namespace: str,
        resource: str,
        gpus: int,
        state: GrantState,
        starts_at: datetime,
        ends_at: datetime,
    ) -> Grant:
        grant = Grant(
            request_id=request_id,
            namespace=namespace,
            resource=resource,
            gpus=gpus,
            state=state,
            starts_at=starts_at,
            ends_at=ends_at,
        )
        self.session.add(grant)
        self.session.flush()
        return grant

    def active_grant_total(self, namespace: str, resource: str) -> int:
        query = select(func.coalesce(func.sum(_grants.gpus), 0)).where(
            _grants.namespace == namespace, _grants.resource == resource, _grants.state == GrantState.ACTIVE
        )
        return int(self.session.scalar(query) or 0)

    def grants(self, *, states: Iterable[GrantState], namespaces: Iterable[str] | None = None) -> Sequence[Grant]:
        query = select(Grant).where(_grants.state.in_(list(states))).order_by(_grants.ends_at)
        if namespaces is not None:
            query = query.where(_grants.namespace.in_(list(namespaces)))
        return self.session.scalars(query.options(selectinload(attribute(Grant, "request")))).all()

    def grants_due(self, now: datetime) -> Sequence[Grant]:
        query = select(Grant).where(_grants.state == GrantState.ACTIVE, _grants.ends_at <= now)
        return self.session.scalars(query.order_by(_grants.ends_at)).all()

    def grants_to_remind(self, horizon: datetime) -> Sequence[Grant]:
        query = select(Grant).where(_grants.state == GrantState.ACTIVE, _grants.reminded_at.is_(None), _grants.ends_at <= horizon)
        return self.session.scalars(query.order_by(_grants.ends_at)).all()

    def auto_approved_gpus(self, namespace: str, resource: str, *, excluding_request: int | None = None) -> int:
        """GPUs of the namespace's active grants that auto-approval gave or extended.

        A grant counts from approval (it is created then, before the apply), so approved requests
        whose apply has not finished are included.
        """
        # One query for the grants with their requests' flag (not one more per grant for grant.request).
        scope = {"namespace": namespace, "resource": resource}
        grants = self.session.execute(statements.ACTIVE_GRANTS_WITH_FLAG, scope).all()
        extended_by_bot = set(self.session.scalars(statements.EXTENDED_BY_BOT, scope).all())
        return sum(
            gpus
            for request_id, gpus, auto_approved in grants
            if request_id != excluding_request and (auto_approved or request_id in extended_by_bot)
        )

    def grant_of(self, request_id: int) -> Grant | None:
        return self.session.scalar(select(Grant).where(_grants.request_id == request_id))

    def grant(self, grant_id: int) -> Grant | None:
        return self.session.get(Grant, grant_id)

    def remove_grant(self, grant: Grant) -> None:
        """Forget a grant that never took effect (its request failed)."""
        self.session.delete(grant)

    # --- audit trail -------------------------------------------------------------------------

    def record(
        self,
        *,
        at: datetime,
        action: str,
        actor: str = BOT_ACTOR,
        namespace: str | None = None,
        request_id: int | None = None,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        detail: str = "",
    ) -> None:
        event = {"at": at, "actor": actor, "action": action, "namespace": namespace, "request_id": request_id}
        self.session.execute(statements.ADD_AUDIT_EVENT, event | {"before": before, "after": after, "detail": detail})

    def audit_trail(
        self, *, namespace: str | None = None, request_id: int | None = None, limit: int = 20
    ) -> Sequence[AuditEntry]:
        """The newest ``limit`` entries (oldest first) for a namespace or a request."""
        query = select(AuditEntry)
        conditions = []
        if namespace is not None:
            conditions.append(_audit.namespace == namespace)
        if request_id is not None:
            conditions.append(_audit.request_id == request_id)
        if conditions:
            query = query.where(or_(*conditions))
        rows = self.session.scalars(query.order_by(_audit.id.desc()).limit(limit)).all()
        return list(reversed(rows))

    def latest_audit_id(self, *, namespaces: Iterable[str], requester: str | None = None) -> int:
        """The newest audit event about these namespaces or about requests ``requester`` made (0 if none)."""
        condition: ColumnElement[bool] = _audit.namespace.in_(list(namespaces))
        if requester is not None:
            mine = select(_requests.id).where(_requests.requester_id == requester)
            condition = or_(condition, _audit.request_id.in_(mine))
        return int(self.session.scalar(select(func.coalesce(func.max(_audit.id), 0)).where(condition)) or 0)

    # --- Slack ---------------------------------------------------------------------------------

    def request_at(self, channel_id: str, message_ts: str) -> Request | None:
        """The request whose message (or a shift's copy for the source team) is at ``message_ts`` in ``channel_id``."""
        query = select(Request).where(
            or_(
                and_(_requests.channel_id == channel_id, _requests.message_ts == message_ts),
                and_(_requests.source_channel_id == channel_id, _requests.source_message_ts == message_ts),
            )
        )
        return self.session.scalar(query)


def _post_columns(copy: bool) -> tuple[Any, Any]:
    """The claim and the ts column of a request's card, or of its copy for a shift's source team."""
    if copy:
        return _requests.copy_claimed_until, _requests.source_message_ts
    return _requests.post_claimed_until, _requests.message_ts


def _claim_free(column: Any, now: datetime) -> ColumnElement[bool]:
    return or_(column.is_(None), column <= now)


def _changed(result: Any) -> bool:
    """Whether a conditional UPDATE of one row found it."""
    return bool(result.rowcount == 1)
