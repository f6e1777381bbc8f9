"""The queries of the ports besides requests, grants, namespaces and the audit trail, on one session:
Slack events, blocked-workload alerts, reclaims, home tabs, budgets, Prometheus outages, idle nudges,
digests and the cost ledger (``bot.services.stores``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from bot.adapters.db import statements
from bot.adapters.db.models import (
    BlockedAlert,
    BudgetAlert,
    DigestRun,
    LedgerDay,
    LedgerEntry,
    QuotaBlockDay,
    SlackEventRow,
    doctor_results,
    home_tabs,
    metrics_outages,
    reclaims,
    team_spend,
)
from bot.domain.clusters import HOME
from bot.domain.records import HomeTab, IdleNudge, MetricsOutage, Reclaim, TeamSpend
from bot.domain.resources import GPU

_home_tabs, _outages, _reclaims, _spend = home_tabs.c, metrics_outages.c, reclaims.c, team_spend.c


class RecordStore:
    """Implements the ports of ``bot.services.stores`` that keep records beside the requests."""

    def __init__(self, session: Session) -> None:
        self.session = session

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

    def open_reclaim(self, namespace: str, resource: str) -> Reclaim | None:
        query = (
            select(Reclaim)
            .where(_reclaims.namespace == namespace, _reclaims.resource == resource, _reclaims.finished_at.is_(None))
            .order_by(_reclaims.id)
        )
        return self.session.scalars(query.limit(1)).first()

    def open_reclaims(self) -> Sequence[Reclaim]:
        return self.session.scalars(select(Reclaim).where(_reclaims.finished_at.is_(None)).order_by(_reclaims.id)).all()

    def start_reclaim(
        self, *, namespace: str, resource: str, request_id: int | None, quota: int, used: int, at: datetime
    ) -> Reclaim:
        row = Reclaim(
            namespace=namespace, resource=resource, request_id=request_id, quota=quota, used_at_start=used, started_at=at
        )
        self.session.add(row)
        self.session.flush()
        return row

    def finish_reclaim(self, reclaim_id: int, *, used: int, at: datetime) -> bool:
        """Close an open reclaim; False when it was closed already (by another replica)."""
        statement = (
            update(Reclaim)
            .where(_reclaims.id == reclaim_id, _reclaims.finished_at.is_(None))
            .values(finished_at=at, used_at_end=used)
        )
        return self.session.execute(statement).rowcount == 1  # type: ignore[attr-defined]

    def home_tabs(self) -> Sequence[HomeTab]:
        return self.session.scalars(select(HomeTab).order_by(_home_tabs.user_id)).all()

    def save_home_tab(self, user_id: str, *, at: datetime, last_audit_id: int) -> None:
        row = self.session.get(HomeTab, user_id)
        if row is None:
            self.session.add(HomeTab(user_id=user_id, published_at=at, last_audit_id=last_audit_id))
        else:
            row.published_at, row.last_audit_id = at, last_audit_id

    def team_over_budget(self, team: str, month: str) -> bool:
        return self.session.execute(statements.TEAM_OVER_BUDGET, {"team": team, "month": month}).first() is not None

    def team_spend(self, teams: Iterable[str]) -> Sequence[TeamSpend]:
        """The month-to-date spend the budget job last measured, for these teams."""
        return self.session.scalars(select(TeamSpend).where(_spend.team.in_(list(teams)))).all()

    # --- metrics outages -----------------------------------------------------------------------

    def open_metrics_outage(self) -> MetricsOutage | None:
        """The oldest outage not yet over, if any."""
        query = select(MetricsOutage).where(_outages.ended_at.is_(None)).order_by(_outages.id)
        return self.session.scalar(query)

    def start_metrics_outage(self, *, at: datetime, cause: str) -> MetricsOutage:
        """A new open outage; flushed, so it has its id."""
        outage = MetricsOutage(started_at=at, cause=cause)
        self.session.add(outage)
        self.session.flush()
        return outage

    # --- the weekly doctor run -----------------------------------------------------------------

    def doctor_statuses(self) -> dict[str, str]:
        rows = self.session.execute(select(doctor_results.c.check_key, doctor_results.c.status)).all()
        return {key: status for key, status in rows}

    def remember_doctor_statuses(self, statuses: Mapping[str, str], *, at: datetime) -> None:
        self.session.execute(delete(doctor_results))
        if statuses:
            self.session.execute(
                doctor_results.insert(),
                [{"check_key": key, "status": status, "recorded_at": at} for key, status in sorted(statuses.items())],
            )

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
            self.session.add(TeamSpend(team=team, month=month, spent=spent, budget=budget, forecast=forecast, measured_at=at))
            return
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
        cluster: str = HOME,
        status: str,
        recorded_at: datetime,
        ksm_spacing: float | None,
        dcgm_spacing: float | None,
        entries: Iterable[Mapping[str, Any]],
        split: str | None = None,
    ) -> None:
        """The day's rows of ``cluster`` (its namespace keys) replaced whole by ``entries`` (column values of
        ``ledger_entries``); the other clusters' rows of the day stay."""
        of_cluster = (
            LedgerEntry.namespace.startswith(f"{cluster}/", autoescape=True)
            if cluster != HOME
            else LedgerEntry.namespace.not_like("%/%")
        )
        self.session.execute(delete(LedgerEntry).where(LedgerEntry.day == day, of_cluster))
        row = self.session.get(LedgerDay, (day, cluster)) or LedgerDay(day=day, cluster=cluster)
        row.status, row.recorded_at = status, recorded_at
        row.ksm_spacing, row.dcgm_spacing, row.split = ksm_spacing, dcgm_spacing, split
        self.session.add(row)
        for entry in entries:
            self.session.add(LedgerEntry(**entry))

    def ledger_status(self, first: date, last: date) -> list[tuple[date, str, str]]:
        """(day, cluster, status) of the days recorded for each cluster in [first, last]."""
        days = LedgerDay
        query = select(days.day, days.cluster, days.status).where(days.day >= first, days.day <= last)
        return [(day, cluster, status) for day, cluster, status in self.session.execute(query)]

    def ledger_splits(self, first: date, last: date) -> list[tuple[date, str, str | None]]:
        """(day, cluster, split state or None) of the days recorded with data for each cluster in [first, last]."""
        days = LedgerDay
        query = select(days.day, days.cluster, days.split).where(days.day >= first, days.day <= last, days.status == "recorded")
        return [(day, cluster, split) for day, cluster, split in self.session.execute(query)]

    def ledger_entries(self, first: date, last: date) -> list[tuple[Any, ...]]:
        """Plain column tuples (day, namespace, team, cost_center, model, allocated_hours, idle_hours,
        observed_hours, util_hours, price, cost, idle_cost, resource, capacity_type, pool), by day, namespace,
        resource, model and placement."""
        e = LedgerEntry
        query = (
            select(e.day, e.namespace, e.team, e.cost_center, e.model, e.allocated_hours, e.idle_hours)
            .add_columns(e.observed_hours, e.util_hours, e.price, e.cost, e.idle_cost, e.resource, e.capacity_type, e.pool)
            .where(e.day >= first, e.day <= last)
            .order_by(e.day, e.namespace, e.resource, e.model, e.capacity_type, e.pool)
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
        """Per namespace, recorded team, resource, model and placement over [first, last], summed in the database:
        (namespace, team, model, allocated_hours, idle_hours, observed_hours, util_hours, cost, idle_cost, last day
        of the team, resource, capacity_type, pool)."""
        e = LedgerEntry
        sums = [func.sum(c) for c in (e.allocated_hours, e.idle_hours, e.observed_hours, e.util_hours, e.cost, e.idle_cost)]
        query = (
            select(e.namespace, e.team, e.model, *sums, func.max(e.day), e.resource, e.capacity_type, e.pool)
            .where(e.day >= first, e.day <= last)
            .group_by(e.namespace, e.team, e.resource, e.model, e.capacity_type, e.pool)
        )
        return [tuple(row) for row in self.session.execute(query)]

    def ledger_model_hours(self, namespace: str, first: date, last: date, *, resource: str = GPU) -> dict[str, float]:
        """The hours ``namespace`` had of ``resource`` on each GPU model over [first, last]."""
        values = {"namespace": namespace, "first": first, "last": last, "resource": resource}
        rows = self.session.execute(statements.LEDGER_MODEL_HOURS, values)
        return {model: float(hours or 0.0) for model, hours in rows}

    def ledger_placement_hours(
        self, namespace: str, first: date, last: date, *, resource: str = GPU
    ) -> dict[tuple[str, str, str], float]:
        """The hours ``namespace`` had of ``resource`` per (GPU model, capacity type, pool) over [first, last]."""
        values = {"namespace": namespace, "first": first, "last": last, "resource": resource}
        rows = self.session.execute(statements.LEDGER_PLACEMENT_HOURS, values)
        return {(model, capacity, pool): float(hours or 0.0) for model, capacity, pool, hours in rows}
