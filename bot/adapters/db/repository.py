"""Queries the services need, on one SQLAlchemy session. The audit trail can only be appended to."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import and_, delete, func, or_, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, make_transient_to_detached, selectinload
from sqlalchemy.sql.elements import ColumnElement

from bot.adapters.db import statements
from bot.adapters.db.models import (
    OUTBOX_PENDING,
    AuditRow,
    BlockedAlert,
    BudgetAlert,
    DecisionRow,
    DigestRun,
    GrantRow,
    HomeTabRow,
    IdleNudge,
    LedgerDay,
    LedgerEntry,
    MetricsOutage,
    NamespaceRow,
    OutboxEntry,
    QuotaBlockDay,
    Reclaim,
    RequestRow,
    SlackEventRow,
    TeamSpend,
)
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg, Verdict

BOT_ACTOR = "gpu-quota-bot"


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for a PostgreSQL advisory lock named ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class Repository:
    """Implements ``bot.services.ports.Repository`` on one session (``session`` stays public for tests
    that set up rows directly; services use the named methods only)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    # --- requests ----------------------------------------------------------------------------

    def add_request(self, **fields: Any) -> RequestRow:
        """A new request with these column values, inserted now, so it has its id.

        One plain ``INSERT ... RETURNING id`` (the ORM's flush of a new row costs several times that in
        CPU on every submission); the row is then handed to the session as loaded with exactly these
        values, so later changes in the transaction are tracked (and versioned) as usual and reading
        it, its decisions (none) or its grant (none) asks the database nothing.
        """
        values = statements.NEW_REQUEST_DEFAULTS | fields
        request_id = self.session.execute(statements.ADD_REQUEST, values).scalar_one()
        request = RequestRow(id=request_id, decisions=[], grant=None, **values)
        make_transient_to_detached(request)
        self.session.add(request)
        return request

    def add_decision(self, request: RequestRow, *, user_id: str, verdict: Verdict, decided_at: datetime) -> None:
        request.decisions.append(DecisionRow(user_id=user_id, verdict=verdict, decided_at=decided_at))

    def count_requests_by_state(self) -> dict[str, int]:
        query = select(RequestRow.state, func.count()).group_by(RequestRow.state)
        return {str(state): int(count) for state, count in self.session.execute(query)}

    def request(self, request_id: int) -> RequestRow | None:
        return self.session.get(RequestRow, request_id, options=[selectinload(RequestRow.decisions)])

    def set_message_ref(self, request_id: int, *, channel_id: str, ts: str) -> bool:
        values = {"request_id": request_id, "new_ts": ts, "new_channel": channel_id}
        return _changed(self.session.execute(statements.SET_MESSAGE_REF, values))

    def claim_post(self, request_id: int, *, copy: bool, now: datetime, until: datetime) -> bool:
        # One conditional UPDATE: of two posters (threads, replicas) the database lets one change the row;
        # on PostgreSQL the other waits for its commit, reads the row again and finds the claim taken.
        claimed, posted = _post_columns(copy)
        unposted = [posted.is_(None)] + (
            [RequestRow.message_ts.is_not(None), RequestRow.source_channel_id.is_not(None)] if copy else []
        )
        result = self.session.execute(
            update(RequestRow)
            .where(RequestRow.id == request_id, *unposted, or_(claimed.is_(None), claimed <= now))
            .values({claimed: until})
            .execution_options(synchronize_session=False)
        )
        return _changed(result)

    def release_post(self, request_id: int, *, copy: bool, not_before: datetime) -> None:
        claimed, posted = _post_columns(copy)
        self.session.execute(
            update(RequestRow)
            .where(RequestRow.id == request_id, posted.is_(None))
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

    def requests_in(self, states: Iterable[RequestState], *, namespaces: Iterable[str] | None = None) -> Sequence[RequestRow]:
        query = select(RequestRow).where(RequestRow.state.in_(list(states))).order_by(RequestRow.id)
        if namespaces is not None:  # a shift is about its source namespace too
            names = list(namespaces)
            query = query.where(or_(RequestRow.namespace.in_(names), RequestRow.source_namespace.in_(names)))
        return self.session.scalars(query.options(selectinload(RequestRow.decisions))).all()

    def pending_past_deadline(self, now: datetime) -> Sequence[RequestRow]:
        query = select(RequestRow).where(RequestRow.state == RequestState.PENDING, RequestRow.decide_by <= now)
        return self.session.scalars(query.order_by(RequestRow.id)).all()

    def unposted_requests(self, now: datetime) -> Sequence[int]:
        """Requests Slack never accepted a message for (it was down, or the channel was wrong)."""
        query = select(RequestRow.id).where(RequestRow.message_ts.is_(None), _claim_free(RequestRow.post_claimed_until, now))
        return self.session.scalars(query.order_by(RequestRow.id)).all()

    def unposted_copies(self, now: datetime) -> Sequence[int]:
        query = select(RequestRow.id).where(
            RequestRow.state == RequestState.PENDING,
            RequestRow.message_ts.is_not(None),
            RequestRow.source_channel_id.is_not(None),
            RequestRow.source_message_ts.is_(None),
            _claim_free(RequestRow.copy_claimed_until, now),
        )
        return self.session.scalars(query.order_by(RequestRow.id)).all()

    def set_copy_ref(self, request_id: int, *, ts: str) -> bool:
        result = self.session.execute(
            update(RequestRow)
            .where(RequestRow.id == request_id, RequestRow.source_message_ts.is_(None))
            .values(source_message_ts=ts, copy_claimed_until=None)
            .execution_options(synchronize_session=False)
        )
        return _changed(result)

    def approved_unleased(self, now: datetime) -> Sequence[RequestRow]:
        """Approved requests no live worker is applying: its lease lapsed (a crash, a lost replica, or
        the wait after a temporary failure is over)."""
        query = select(RequestRow).where(
            RequestRow.state == RequestState.APPROVED,
            or_(RequestRow.apply_lease_until.is_(None), RequestRow.apply_lease_until <= now),
        )
        return self.session.scalars(query.order_by(RequestRow.id)).all()

    def failed_shifts_holding_source(self) -> Sequence[RequestRow]:
        """Temporary shifts whose target side failed while their source stays lowered."""
        query = select(RequestRow).where(
            RequestRow.kind == RequestKind.SHIFT,
            RequestRow.state == RequestState.FAILED,
            RequestRow.source_state == SourceLeg.APPLIED,
            RequestRow.duration_seconds.is_not(None),
        )
        return self.session.scalars(query.order_by(RequestRow.id)).all()

    def shift_sources_in_flight(self) -> dict[str, int]:
        """Source namespaces of approved shifts whose decrease is recorded but not yet applied, with the shift's id."""
        query = select(RequestRow.source_namespace, RequestRow.id).where(
            RequestRow.kind == RequestKind.SHIFT,
            RequestRow.state == RequestState.APPROVED,
            RequestRow.source_state == SourceLeg.RECORDED,
        )
        return {name: request_id for name, request_id in self.session.execute(query) if name is not None}

    def auto_approved_sizes_since(self, team: str, start: datetime, end: datetime) -> list[tuple[int, int | None]]:
        rows = self.session.execute(statements.AUTO_APPROVED_SIZES, {"team": team, "start": start, "end": end})
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

    def namespace(self, name: str) -> NamespaceRow | None:
        return self.session.get(NamespaceRow, name)

    def namespace_known(self, name: str) -> bool:
        return self.session.execute(statements.NAMESPACE_KNOWN, {"name": name}).first() is not None

    def add_namespace(
        self,
        *,
        name: str,
        team: str,
        base_gpus: int,
        last_seen_gpus: int | None,
        seen_resource_version: str | None,
        updated_at: datetime,
    ) -> NamespaceRow:
        row = NamespaceRow(
            name=name,
            team=team,
            base_gpus=base_gpus,
            last_seen_gpus=last_seen_gpus,
            seen_resource_version=seen_resource_version,
            updated_at=updated_at,
        )
        self.session.add(row)
        self.session.flush()
        return row

    def namespaces(self, names: Iterable[str]) -> Sequence[NamespaceRow]:
        return self.session.scalars(select(NamespaceRow).where(NamespaceRow.name.in_(list(names)))).all()

    # --- grants ------------------------------------------------------------------------------

    def add_grant(
        self, *, request_id: int, namespace: str, gpus: int, state: GrantState, starts_at: datetime, ends_at: datetime
    ) -> GrantRow:
        grant = GrantRow(request_id=request_id, namespace=namespace, gpus=gpus, state=state, starts_at=starts_at, ends_at=ends_at)
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

    def auto_approved_gpus(self, namespace: str, *, excluding_request: int | None = None) -> int:
        """GPUs of the namespace's active grants that auto-approval gave or extended.

        A grant counts from approval (it is created then, before the apply), so approved requests
        whose apply has not finished are included.
        """
        # One query for the grants with their requests' flag (not one more per grant for grant.request).
        grants = self.session.execute(statements.ACTIVE_GRANTS_WITH_FLAG, {"namespace": namespace}).all()
        extended_by_bot = set(self.session.scalars(statements.EXTENDED_BY_BOT, {"namespace": namespace}).all())
        return sum(
            gpus
            for request_id, gpus, auto_approved in grants
            if request_id != excluding_request and (auto_approved or request_id in extended_by_bot)
        )

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
        event = {"at": at, "actor": actor, "action": action, "namespace": namespace, "request_id": request_id}
        self.session.execute(statements.ADD_AUDIT_EVENT, event | {"before": before, "after": after, "detail": detail})

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

    def latest_audit_id(self, *, namespaces: Iterable[str], requester: str | None = None) -> int:
        """The newest audit event about these namespaces or about requests ``requester`` made (0 if none)."""
        condition: ColumnElement[bool] = AuditRow.namespace.in_(list(namespaces))
        if requester is not None:
            mine = select(RequestRow.id).where(RequestRow.requester_id == requester)
            condition = or_(condition, AuditRow.request_id.in_(mine))
        return int(self.session.scalar(select(func.coalesce(func.max(AuditRow.id), 0)).where(condition)) or 0)

    # --- Slack ---------------------------------------------------------------------------------

    def request_at(self, channel_id: str, message_ts: str) -> RequestRow | None:
        """The request whose message (or a shift's copy for the source team) is at ``message_ts`` in ``channel_id``."""
        query = select(RequestRow).where(
            or_(
                and_(RequestRow.channel_id == channel_id, RequestRow.message_ts == message_ts),
                and_(RequestRow.source_channel_id == channel_id, RequestRow.source_message_ts == message_ts),
            )
        )
        return self.session.scalar(query)

    def claim_event(self, event_id: str, *, at: datetime) -> bool:
        """Record an Events API delivery; False when it was recorded before (Slack re-sent it)."""
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        statement = dialect.insert(SlackEventRow).values(event_id=event_id, received_at=at).on_conflict_do_nothing()
        return self.session.execute(statement.returning(SlackEventRow.event_id)).first() is not None

    def forget_events_before(self, moment: datetime) -> None:
        """Slack stops re-sending an event within minutes; older records only take space."""
        self.session.execute(delete(SlackEventRow).where(SlackEventRow.received_at < moment))

    def blocked_alerted(self, key: str) -> bool:
        """Whether the workload ``key`` (namespace/kind/name) was reported as blocked by the quota."""
        return self.session.get(BlockedAlert, key) is not None

    def remember_blocked_alert(self, key: str, *, namespace: str, at: datetime, quota_day: date | None = None) -> None:
        """Remember the alert; one of the quota's (``quota_day`` given) also counts in the namespace's
        workloads blocked by the quota that day."""
        self.session.add(BlockedAlert(key=key, namespace=namespace, alerted_at=at))
        if quota_day is None:
            return
        day = quota_day
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        statement = dialect.insert(QuotaBlockDay).values(namespace=namespace, day=day, blocked=1)
        self.session.execute(
            statement.on_conflict_do_update(index_elements=["namespace", "day"], set_={"blocked": QuotaBlockDay.blocked + 1})
        )

    def quota_blocks(self, first: date, last: date) -> dict[str, int]:
        """Workloads blocked by the GPU quota per namespace over the days [first, last]."""
        b = QuotaBlockDay
        query = select(b.namespace, func.sum(b.blocked)).where(b.day >= first, b.day <= last).group_by(b.namespace)
        return {namespace: int(total) for namespace, total in self.session.execute(query)}

    # --- reclaims ------------------------------------------------------------------------------

    def open_reclaim(self, namespace: str) -> Reclaim | None:
        query = select(Reclaim).where(Reclaim.namespace == namespace, Reclaim.finished_at.is_(None)).order_by(Reclaim.id)
        return self.session.scalars(query.limit(1)).first()

    def open_reclaims(self) -> Sequence[Reclaim]:
        return self.session.scalars(select(Reclaim).where(Reclaim.finished_at.is_(None)).order_by(Reclaim.id)).all()

    def start_reclaim(self, *, namespace: str, request_id: int | None, quota: int, used: int, at: datetime) -> Reclaim:
        row = Reclaim(namespace=namespace, request_id=request_id, quota=quota, used_at_start=used, started_at=at)
        self.session.add(row)
        self.session.flush()
        return row

    def finish_reclaim(self, reclaim_id: int, *, used: int, at: datetime) -> bool:
        """Close an open reclaim; False when it was closed already (by another replica)."""
        statement = (
            update(Reclaim)
            .where(Reclaim.id == reclaim_id, Reclaim.finished_at.is_(None))
            .values(finished_at=at, used_at_end=used)
        )
        return self.session.execute(statement).rowcount == 1  # type: ignore[attr-defined]

    def home_tabs(self) -> Sequence[HomeTabRow]:
        return self.session.scalars(select(HomeTabRow).order_by(HomeTabRow.user_id)).all()

    def save_home_tab(self, user_id: str, *, at: datetime, last_audit_id: int) -> None:
        row = self.session.get(HomeTabRow, user_id)
        if row is None:
            self.session.add(HomeTabRow(user_id=user_id, published_at=at, last_audit_id=last_audit_id))
        else:
            row.published_at, row.last_audit_id = at, last_audit_id

    def team_over_budget(self, team: str, month: str) -> bool:
        return self.session.execute(statements.TEAM_OVER_BUDGET, {"team": team, "month": month}).first() is not None

    def team_spend(self, teams: Iterable[str]) -> Sequence[TeamSpend]:
        """The month-to-date spend the budget job last measured, for these teams."""
        return self.session.scalars(select(TeamSpend).where(TeamSpend.team.in_(list(teams)))).all()

    # --- metrics outages -----------------------------------------------------------------------

    def open_metrics_outage(self) -> MetricsOutage | None:
        """The oldest outage not yet over, if any."""
        query = select(MetricsOutage).where(MetricsOutage.ended_at.is_(None)).order_by(MetricsOutage.id)
        return self.session.scalar(query)

    def start_metrics_outage(self, *, at: datetime, cause: str) -> MetricsOutage:
        """A new open outage; flushed, so it has its id."""
        outage = MetricsOutage(started_at=at, cause=cause)
        self.session.add(outage)
        self.session.flush()
        return outage

    # --- idle-GPU nudges -----------------------------------------------------------------------

    def idle_nudge(self, namespace: str) -> IdleNudge | None:
        return self.session.get(IdleNudge, namespace)

    def snooze_idle_nudges(self, namespace: str, *, until: datetime, by: str) -> None:
        row = self.session.get(IdleNudge, namespace) or IdleNudge(namespace=namespace, gpus=0.0, active=False)
        row.snoozed_until, row.snoozed_by = until, by
        self.session.add(row)

    def remember_idle_nudge(self, namespace: str, *, gpus: float, at: datetime) -> None:
        """The namespace was nudged about ``gpus`` idle GPUs: an idle episode is on."""
        row = self.session.get(IdleNudge, namespace) or IdleNudge(namespace=namespace)
        row.gpus, row.active, row.nudged_at = gpus, True, at
        self.session.add(row)

    # --- budgets -------------------------------------------------------------------------------

    def record_team_spend(self, team: str, *, month: str, spent: float, budget: float, forecast: float, at: datetime) -> None:
        """Keep the team's latest month-to-date measurement (one row per team)."""
        row = self.session.get(TeamSpend, team)
        if row is None:
            row = TeamSpend(team=team)
            self.session.add(row)
        row.month, row.spent, row.budget, row.forecast, row.measured_at = month, spent, budget, forecast, at

    def budget_alerts_sent(self, team: str, month: str) -> set[str]:
        """The thresholds (and ``forecast``) already claimed for the team this month."""
        query = select(BudgetAlert.threshold).where(BudgetAlert.team == team, BudgetAlert.month == month)
        return set(self.session.scalars(query))

    def claim_budget_alerts(self, team: str, month: str, keys: Iterable[str], *, percent: float, at: datetime) -> bool:
        """Record these warnings, all or none: False (nothing recorded) when any was recorded before.

        Insert ... on conflict do nothing: a concurrent claim of the same warning waits for the other
        transaction, then finds its row; the rows this call did insert are removed again.
        """
        keys = list(keys)
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        rows = [{"team": team, "month": month, "threshold": key, "percent": percent, "sent_at": at} for key in keys]
        statement = dialect.insert(BudgetAlert).values(rows).on_conflict_do_nothing()
        claimed = list(self.session.scalars(statement.returning(BudgetAlert.threshold)))
        if len(claimed) == len(keys):
            return True
        self.forget_budget_alerts(team, month, claimed)
        return False

    def forget_budget_alerts(self, team: str, month: str, keys: Iterable[str]) -> None:
        query = delete(BudgetAlert).where(
            BudgetAlert.team == team, BudgetAlert.month == month, BudgetAlert.threshold.in_(list(keys))
        )
        self.session.execute(query)

    # --- digests -------------------------------------------------------------------------------

    def digest_days_posted(self, scope: str, *, first: date, last: date) -> set[date]:
        query = select(DigestRun.day).where(
            DigestRun.scope == scope, DigestRun.status == "posted", DigestRun.day >= first, DigestRun.day <= last
        )
        return set(self.session.scalars(query))

    def claim_digest(self, scope: str, day: date, *, at: datetime) -> bool:
        """Claim the (scope, day) digest; False when it was claimed before (insert ... on conflict do nothing)."""
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        statement = dialect.insert(DigestRun).values(scope=scope, day=day, status="claimed", claimed_at=at)
        statement = statement.on_conflict_do_nothing()
        return self.session.execute(statement.returning(DigestRun.id)).first() is not None

    def release_digest(self, scope: str, day: date) -> None:
        self.session.execute(delete(DigestRun).where(DigestRun.scope == scope, DigestRun.day == day))

    def mark_digest_posted(self, scope: str, day: date, *, at: datetime) -> None:
        run = self.session.scalar(select(DigestRun).where(DigestRun.scope == scope, DigestRun.day == day))
        if run is None:
            raise LookupError(f"digest {scope} {day} was not claimed")
        run.status, run.posted_at = "posted", at

    # --- the cost ledger -----------------------------------------------------------------------

    def latest_ledger_day(self) -> date | None:
        return self.session.scalar(select(LedgerDay.day).order_by(LedgerDay.day.desc()).limit(1))

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
        """The day's rows replaced whole by ``entries`` (column values of ``ledger_entries``)."""
        self.session.execute(delete(LedgerEntry).where(LedgerEntry.day == day))
        row = self.session.get(LedgerDay, day) or LedgerDay(day=day)
        row.status, row.recorded_at = status, recorded_at
        row.ksm_spacing, row.dcgm_spacing = ksm_spacing, dcgm_spacing
        self.session.add(row)
        for entry in entries:
            self.session.add(LedgerEntry(**entry))

    def ledger_status(self, first: date, last: date) -> list[tuple[date, str]]:
        """(day, status) of the recorded days in [first, last]."""
        query = select(LedgerDay.day, LedgerDay.status).where(LedgerDay.day >= first, LedgerDay.day <= last)
        return [(day, status) for day, status in self.session.execute(query)]

    def ledger_entries(self, first: date, last: date) -> list[tuple[Any, ...]]:
        """Plain column tuples (day, namespace, team, cost_center, model, allocated_hours, idle_hours,
        observed_hours, util_hours, price, cost, idle_cost), by day, namespace and model."""
        e = LedgerEntry
        query = (
            select(e.day, e.namespace, e.team, e.cost_center, e.model, e.allocated_hours, e.idle_hours)
            .add_columns(e.observed_hours, e.util_hours, e.price, e.cost, e.idle_cost)
            .where(e.day >= first, e.day <= last)
            .order_by(e.day, e.namespace, e.model)
        )
        return [tuple(row) for row in self.session.execute(query)]

    def ledger_costs(
        self, first: date, last: date, *, namespaces: Iterable[str] | None = None
    ) -> list[tuple[date, str, str, float | None]]:
        """(day, namespace, recorded team, summed cost), summed in the database; of ``namespaces`` only when given."""
        e = LedgerEntry
        query = select(e.day, e.namespace, e.team, func.sum(e.cost)).where(e.day >= first, e.day <= last)
        if namespaces is not None:
            query = query.where(e.namespace.in_(list(namespaces)))
        rows = self.session.execute(query.group_by(e.day, e.namespace, e.team))
        return [(day, namespace, team, cost) for day, namespace, team, cost in rows]

    def ledger_team_costs(self, first: date, last: date) -> list[tuple[date, str, float]]:
        """(day, recorded team, summed cost): one row per team and day, summed in the database."""
        e = LedgerEntry
        query = select(e.day, e.team, func.sum(e.cost)).where(e.day >= first, e.day <= last).group_by(e.day, e.team)
        return [(day, team, float(cost or 0.0)) for day, team, cost in self.session.execute(query)]

    def ledger_namespace_teams(self, first: date, last: date) -> list[tuple[str, str]]:
        """The distinct (namespace, recorded team) pairs of [first, last]."""
        e = LedgerEntry
        query = select(e.namespace, e.team).where(e.day >= first, e.day <= last).distinct()
        return [(namespace, team) for namespace, team in self.session.execute(query)]

    def ledger_sums(self, first: date, last: date) -> list[tuple[Any, ...]]:
        """Per namespace, recorded team and model over [first, last], summed in the database: (namespace, team,
        model, allocated_hours, idle_hours, observed_hours, util_hours, cost, idle_cost, last day of the team)."""
        e = LedgerEntry
        sums = [func.sum(c) for c in (e.allocated_hours, e.idle_hours, e.observed_hours, e.util_hours, e.cost, e.idle_cost)]
        query = (
            select(e.namespace, e.team, e.model, *sums, func.max(e.day))
            .where(e.day >= first, e.day <= last)
            .group_by(e.namespace, e.team, e.model)
        )
        return [tuple(row) for row in self.session.execute(query)]

    def ledger_model_hours(self, namespace: str, first: date, last: date) -> dict[str, float]:
        """The GPU-hours ``namespace`` had of each model over [first, last]."""
        rows = self.session.execute(statements.LEDGER_MODEL_HOURS, {"namespace": namespace, "first": first, "last": last})
        return {model: float(hours or 0.0) for model, hours in rows}


def _post_columns(copy: bool) -> tuple[Any, Any]:
    """The claim and the ts column of a request's card, or of its copy for a shift's source team."""
    if copy:
        return RequestRow.copy_claimed_until, RequestRow.source_message_ts
    return RequestRow.post_claimed_until, RequestRow.message_ts


def _claim_free(column: Any, now: datetime) -> ColumnElement[bool]:
    return or_(column.is_(None), column <= now)


def _changed(result: Any) -> bool:
    """Whether a conditional UPDATE of one row found it."""
    return bool(result.rowcount == 1)
