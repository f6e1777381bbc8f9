"""Queries the services need, on one SQLAlchemy session. The audit trail can only be appended to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, selectinload

from bot.adapters.db.models import AuditRow, GrantRow, NamespaceRow, RequestRow
from bot.domain.lifecycle import GrantState, RequestState

BOT_ACTOR = "gpu-quota-bot"


class Repository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # --- requests ----------------------------------------------------------------------------

    def add_request(self, request: RequestRow) -> RequestRow:
        self.session.add(request)
        self.session.flush()  # assigns the id
        return request

    def request(self, request_id: int) -> RequestRow | None:
        return self.session.get(RequestRow, request_id, options=[selectinload(RequestRow.decisions)])

    def requests_in(self, states: Iterable[RequestState], *, namespaces: Iterable[str] | None = None) -> Sequence[RequestRow]:
        query = select(RequestRow).where(RequestRow.state.in_(list(states))).order_by(RequestRow.id)
        if namespaces is not None:
            query = query.where(RequestRow.namespace.in_(list(namespaces)))
        return self.session.scalars(query.options(selectinload(RequestRow.decisions))).all()

    def pending_past_deadline(self, now: datetime) -> Sequence[RequestRow]:
        query = select(RequestRow).where(RequestRow.state == RequestState.PENDING, RequestRow.decide_by <= now)
        return self.session.scalars(query.order_by(RequestRow.id)).all()

    def unposted_requests(self) -> Sequence[RequestRow]:
        """Requests Slack never accepted a message for (it was down, or the channel was wrong)."""
        query = select(RequestRow).where(RequestRow.message_ts.is_(None)).order_by(RequestRow.id)
        return self.session.scalars(query).all()

    def approved_unleased(self, now: datetime) -> Sequence[RequestRow]:
        """Approved requests no live worker is applying: its lease lapsed (a crash, a lost replica, or
        the wait after a temporary failure is over)."""
        query = select(RequestRow).where(
            RequestRow.state == RequestState.APPROVED,
            or_(RequestRow.apply_lease_until.is_(None), RequestRow.apply_lease_until <= now),
        )
        return self.session.scalars(query.order_by(RequestRow.id)).all()

    # --- namespaces --------------------------------------------------------------------------

    def namespace(self, name: str) -> NamespaceRow | None:
        return self.session.get(NamespaceRow, name)

    def add_namespace(self, row: NamespaceRow) -> NamespaceRow:
        self.session.add(row)
        self.session.flush()
        return row

    def namespaces(self, names: Iterable[str]) -> Sequence[NamespaceRow]:
        return self.session.scalars(select(NamespaceRow).where(NamespaceRow.name.in_(list(names)))).all()

    # --- grants ------------------------------------------------------------------------------

    def add_grant(self, grant: GrantRow) -> GrantRow:
        self.session.add(grant)
        self.session.flush()
        return grant

    def active_grant_total(self, namespace: str) -> int:
        query = select(func.coalesce(func.sum(GrantRow.gpus), 0)).where(
            GrantRow.namespace == namespace, GrantRow.state == GrantState.ACTIVE
        )
        return int(self.session.scalar(query) or 0)

    def grants(self, *, states: Iterable[GrantState], namespaces: Iterable[str] | None = None) -> Sequence[GrantRow]:
        query = select(GrantRow).where(GrantRow.state.in_(list(states))).order_by(GrantRow.ends_at)
        if namespaces is not None:
            query = query.where(GrantRow.namespace.in_(list(namespaces)))
        return self.session.scalars(query.options(selectinload(GrantRow.request))).all()

    def grants_due(self, now: datetime) -> Sequence[GrantRow]:
        query = select(GrantRow).where(GrantRow.state == GrantState.ACTIVE, GrantRow.ends_at <= now)
        return self.session.scalars(query.order_by(GrantRow.ends_at)).all()

    def grants_to_remind(self, horizon: datetime) -> Sequence[GrantRow]:
        query = select(GrantRow).where(
            GrantRow.state == GrantState.ACTIVE, GrantRow.reminded_at.is_(None), GrantRow.ends_at <= horizon
        )
        return self.session.scalars(query.order_by(GrantRow.ends_at)).all()

    def grant_of(self, request_id: int) -> GrantRow | None:
        return self.session.scalar(select(GrantRow).where(GrantRow.request_id == request_id))

    def grant(self, grant_id: int) -> GrantRow | None:
        return self.session.get(GrantRow, grant_id)

    def remove_grant(self, grant: GrantRow) -> None:
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
        self.session.add(
            AuditRow(
                at=at,
                actor=actor,
                action=action,
                namespace=namespace,
                request_id=request_id,
                before=before,
                after=after,
                detail=detail,
            )
        )

    def audit_trail(self, *, namespace: str | None = None, request_id: int | None = None, limit: int = 20) -> Sequence[AuditRow]:
        """The newest ``limit`` entries (oldest first) for a namespace or a request."""
        query = select(AuditRow)
        conditions = []
        if namespace is not None:
            conditions.append(AuditRow.namespace == namespace)
        if request_id is not None:
            conditions.append(AuditRow.request_id == request_id)
        if conditions:
            query = query.where(or_(*conditions))
        rows = self.session.scalars(query.order_by(AuditRow.id.desc()).limit(limit)).all()
        return list(reversed(rows))
