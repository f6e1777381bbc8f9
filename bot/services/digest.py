"""The daily cost digest: to each team's channel, and an organisation summary to the admin channel.

For a day: yesterday's and the month-to-date GPU-hours and cost per namespace and per GPU model,
budget used and the month-end forecast, utilisation, idle GPU-hours and their cost, grants ending
within 24 hours, top consumers, and a chart. Each (team, day) is claimed in the database before it
is posted, so reruns, restarts and a second replica never post it twice; days missed while the
metrics were down are posted by the next run.

Only finished days are reported, and only days the metrics know: a day before Prometheus's data (or
lost in an outage) is "no metrics", never a day of zero cost. A day recorded as posted outside the
catch-up window (a future date posted by hand) does not hold the schedule back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import partial

from bot.clock import Clock
from bot.domain.costs import (
    CostLine,
    add_lines,
    budget_pace,
    day_window,
    exhaustion,
    month_end_forecast,
    month_length,
    over_budget_since,
)
from bot.domain.lifecycle import GrantState
from bot.domain.policy import Policy, Team
from bot.errors import GpuQuotaError, UserError
from bot.services.announce import Announcer
from bot.services.ledger import day_ranges
from bot.services.metrics_health import MetricsHealth
from bot.services.ports import Attachment, Report, ReportSection, Transactions
from bot.services.spend import MonthSummary, SpendReader
from bot.services.text import money, when

log = logging.getLogger(__name__)
ORG = "*"
CATCH_UP_DAYS = 7
TOP = 5
Chart = Callable[..., bytes]


class NoMetrics(UserError):
    """The metrics hold nothing for the day asked for: there is nothing true to report."""


@dataclass(frozen=True)
class ExpiringGrant:
    request_id: int
    namespace: str
    gpus: int
    ends_at: datetime


@dataclass(frozen=True)
class TeamDigest:
    team: Team
    day: date
    yesterday: list[CostLine]
    month: list[CostLine]
    daily: dict[date, dict[str, float]]
    spent: float
    forecast: float
    exhausts_at: datetime | None  # only when it falls after now and within the month
    over_since: date | None
    missing: list[date]  # days of the month the metrics held nothing for: not counted, not zero
    expiring: list[ExpiringGrant]

    @property
    def budget(self) -> float | None:
        return self.team.budget.monthly if self.team.budget else None


@dataclass(frozen=True)
class OrgDigest:
    day: date
    teams: list[TeamDigest]
    others: dict[str, float]  # month cost of namespaces outside the policy, by their label team
    yesterday: float  # the day's cost over the same namespaces as the month's totals
    missing: list[date]
    top: list[CostLine]
    daily: dict[date, dict[str, float]]


class DigestService:
    def __init__(
        self,
        *,
        policy: Policy,
        spend: SpendReader,
        database: Transactions,
        announcer: Announcer | None,
        health: MetricsHealth | None,
        clock: Clock,
        chart: Chart,
    ) -> None:
        """``announcer`` and ``health`` are needed to post (``publish``, ``run``), not to build reports."""
        self._policy = policy
        self._spend = spend
        self._db = database
        self._announce = announcer
        self._health = health
        self._clock = clock
        self._chart = chart

    # --- building ------------------------------------------------------------------------------

    def build(self, day: date) -> OrgDigest:
        """The digests of every team for ``day`` (metrics are read once for all of them).

        Raises UserError for a day not over yet and NoMetrics for a day the metrics do not hold."""
        zone = self._policy.schedules.zone
        today = self._clock.now().astimezone(zone).date()
        if day >= today:
            raise UserError(f"Digests are only for finished days: {day:%a %d %b %Y} is not over yet (today is {today}).")
        if self._spend.missing_days([day_window(day, zone)]):
            raise NoMetrics(f"no metrics for {day:%a %d %b %Y}: Prometheus holds no data for that day.")
        spend = self._spend.month_summary(day)
        expiring = self._expiring()
        teams = [self._team_digest(team, day, spend, expiring) for team in self._policy.teams.values()]
        managed = set(self._policy.managed_namespaces())
        month_days = spend.days
        every_namespace = spend.month_lines()
        others: dict[str, float] = {}
        for line in every_namespace:
            if line.namespace not in managed:
                others[line.team] = others.get(line.team, 0.0) + line.cost
        daily = {d: {t.team.label: sum(t.daily.get(d, {}).values()) for t in teams} for d in month_days}
        yesterday = sum(line.cost for line in spend.day_lines())
        return OrgDigest(
            day=day,
            teams=teams,
            others=others,
            yesterday=yesterday,
            missing=spend.missing,
            top=every_namespace[:TOP],
            daily=daily,
        )

    def _team_digest(self, team: Team, day: date, spend: MonthSummary, expiring: list[ExpiringGrant]) -> TeamDigest:
        zone = self._policy.schedules.zone
        month = spend.month_lines(team.name)
        spent = sum(line.cost for line in month)
        month_start = day_window(day.replace(day=1), zone).start
        elapsed = day_window(day, zone).end - month_start
        budget = team.budget.monthly if team.budget else None
        namespaces = {ns.name for ns in team.namespaces}
        daily = spend.daily_team_costs(team.name)
        over_since = over_budget_since({d: sum(c.values()) for d, c in daily.items()}, budget) if budget else None
        runs_out = None
        if budget:
            month_end = month_start + month_length(day, zone)
            runs_out = exhaustion(spent, budget, elapsed=elapsed, now=day_window(day, zone).end, month_end=month_end)
        if runs_out is not None and runs_out <= self._clock.now():
            runs_out = None  # a late digest (catch-up, --date) never announces a run-out already past
        return TeamDigest(
            team=team,
            day=day,
            yesterday=spend.day_lines(team.name),
            month=month,
            daily=daily,
            spent=spent,
            forecast=month_end_forecast(spent, elapsed=elapsed, length=month_length(day, zone)),
            exhausts_at=runs_out,
            over_since=over_since,
            missing=spend.missing,
            expiring=[grant for grant in expiring if grant.namespace in namespaces],
        )

    def _expiring(self) -> list[ExpiringGrant]:
        horizon = self._clock.now() + timedelta(hours=24)
        grants = self._db.run(lambda repo: list(repo.grants(states=[GrantState.ACTIVE])))
        return [ExpiringGrant(g.request_id, g.namespace, g.gpus, g.ends_at) for g in grants if g.ends_at <= horizon]

    # --- reports -------------------------------------------------------------------------------

    def team_report(self, digest: TeamDigest, *, with_chart: bool = True) -> Report:
        currency = self._policy.pricing.currency
        sections = [ReportSection(heading="Per namespace", lines=_namespace_lines(digest, currency))]
        month = add_lines(digest.month) if digest.month else None
        if month is not None:
            sections.append(ReportSection(heading="Per GPU model (month to date)", lines=_model_lines(month, currency)))
            sections.append(
                ReportSection(heading="Utilisation and idle GPUs (month to date)", lines=[_usage_line(month, currency)])
            )
        if digest.expiring:
            sections.append(
                ReportSection(
                    heading="Grants ending in the next 24 h",
                    lines=[
                        f"GQ-{g.request_id}: {g.gpus:+d} GPUs in {g.namespace}, ends {when(g.ends_at)}" for g in digest.expiring
                    ],
                )
            )
        if len(digest.month) > 1:
            sections.append(
                ReportSection(
                    heading="Top consumers (month to date)",
                    lines=[
                        f"{i}. {line.namespace}: {money(line.cost, currency)}" for i, line in enumerate(digest.month[:TOP], 1)
                    ],
                )
            )
        attachment = None
        if with_chart:
            png = self._chart(
                title=f"{digest.team.label}: GPU cost per day",
                daily=digest.daily,
                pace=budget_pace(digest.budget, digest.day) if digest.budget else None,
                currency=currency,
            )
            attachment = Attachment(
                f"gpu-cost-{digest.team.name}-{digest.day.isoformat()}.png",
                f"{digest.team.label} GPU cost, {digest.day:%B %Y}",
                png,
            )
        return Report(
            title=f"GPU cost digest · {digest.team.label} · {digest.day:%a %d %b %Y}",
            summary=_team_summary(digest, currency),
            sections=sections,
            attachment=attachment,
        )

    def org_report(self, digest: OrgDigest, *, with_chart: bool = True) -> Report:
        currency = self._policy.pricing.currency
        lines = []
        for team in sorted(digest.teams, key=lambda t: t.spent, reverse=True):
            budget = f" of {money(team.budget, currency)} ({team.spent / team.budget:.0%})" if team.budget else ""
            forecast = f" · forecast {money(team.forecast, currency)}" if team.spent else ""
            lines.append(f"*{team.team.label}*: {money(team.spent, currency)}{budget}{forecast}")
        for label, cost in sorted(digest.others.items(), key=lambda item: item[1], reverse=True):
            lines.append(f"{label}: {money(cost, currency)}")
        total = sum(t.spent for t in digest.teams) + sum(digest.others.values())
        budgets = sum(t.budget or 0.0 for t in digest.teams)
        sections = [
            ReportSection(heading="Per team (month to date)", lines=lines),
            ReportSection(
                heading="Top namespaces (month to date)",
                lines=[
                    f"{i}. {line.namespace} ({self._team_label(line.team)}): {money(line.cost, currency)}"
                    for i, line in enumerate(digest.top, 1)
                ],
            ),
        ]
        attachment = None
        if with_chart:
            png = self._chart(
                title="GPU cost per day, by team",
                daily=digest.daily,
                pace=budget_pace(budgets, digest.day) if budgets else None,
                currency=currency,
            )
            attachment = Attachment(f"gpu-cost-org-{digest.day.isoformat()}.png", f"GPU cost by team, {digest.day:%B %Y}", png)
        return Report(
            title=f"GPU cost summary · {digest.day:%a %d %b %Y}",
            summary=f"Yesterday {money(digest.yesterday, currency)} · month to date {money(total, currency)}"
            + (f" of {money(budgets, currency)} budgeted ({total / budgets:.0%})" if budgets else "")
            + _missing_note(digest.missing),
            sections=sections,
            attachment=attachment,
        )

    def _team_label(self, name: str) -> str:
        team = self._policy.teams.get(name)
        return team.label if team else name

    # --- posting -------------------------------------------------------------------------------

    def publish(self, day: date, *, teams: Sequence[str] | None = None, org: bool = True) -> list[str]:
        """Post the digests of ``day`` not posted yet; returns the scopes posted (team names, "*")."""
        assert self._announce is not None, "publishing needs an announcer"
        digest = self.build(day)
        posted = []
        for team_digest in digest.teams:
            team = team_digest.team
            if (teams is not None and team.name not in teams) or not team.notifications.digest:
                continue
            if self._post_once(team.name, day, team.channel, partial(self.team_report, team_digest)):
                posted.append(team.name)
        if org and teams is None and self._policy.admin_channel:
            if self._post_once(ORG, day, self._policy.admin_channel, lambda: self.org_report(digest)):
                posted.append(ORG)
        return posted

    def run(self) -> list[tuple[date, list[str]]]:
        """The scheduled job: post yesterday's digests, and any day missed (up to a week) before it.

        When the metrics fail, the outage is recorded and the error raised: the run is a failed run."""
        yesterday = (self._clock.now().astimezone(self._policy.schedules.zone) - timedelta(days=1)).date()
        done: list[tuple[date, list[str]]] = []
        unknown: list[str] = []
        try:
            for day in self._days_to_post(yesterday):
                try:
                    done.append((day, self.publish(day)))
                except NoMetrics as missing:  # Prometheus answers but holds nothing for that day
                    unknown.append(str(missing))
        except GpuQuotaError as error:
            if self._health is not None:
                self._health.failed(str(error))
            raise
        if self._health is not None:
            self._health.recovered()
        if unknown:
            raise NoMetrics("; ".join(unknown))
        return done

    def _days_to_post(self, yesterday: date) -> list[date]:
        """The days after the last one posted in the catch-up window; a day posted beyond yesterday
        (by hand, or by an older version) is not a sign the schedule is up to date."""
        first = yesterday - timedelta(days=CATCH_UP_DAYS - 1)
        posted = self._db.run(lambda repo: repo.digest_days_posted(ORG, first=first, last=yesterday))
        latest = max(posted, default=None)
        start = latest + timedelta(days=1) if latest else yesterday
        return [start + timedelta(days=i) for i in range((yesterday - start).days + 1)]

    def _post_once(self, scope: str, day: date, channel: str, report: Callable[[], Report]) -> bool:
        """Claim (scope, day), post, mark posted; a failed post gives the claim back for the next run."""
        assert self._announce is not None
        if not self._claim(scope, day):
            return False
        try:
            ref = self._announce.publish(channel, report())
        except Exception:
            self._release(scope, day)
            raise
        if ref is None:
            self._release(scope, day)
            return False
        self._db.run(lambda repo: repo.mark_digest_posted(scope, day, at=self._clock.now()))
        return True

    def _claim(self, scope: str, day: date) -> bool:
        with self._db.transaction() as repo:
            return repo.claim_digest(scope, day, at=self._clock.now())

    def _release(self, scope: str, day: date) -> None:
        self._db.run(lambda repo: repo.release_digest(scope, day))


def _team_summary(digest: TeamDigest, currency: str) -> str:
    yesterday_hours = sum(line.gpu_hours for line in digest.yesterday)
    yesterday_cost = sum(line.cost for line in digest.yesterday)
    month_hours = sum(line.gpu_hours for line in digest.month)
    text = (
        f"Yesterday *{yesterday_hours:,.1f} GPU-h · {money(yesterday_cost, currency)}*. "
        f"Month to date *{month_hours:,.1f} GPU-h · {money(digest.spent, currency)}*"
    )
    if digest.budget:
        text += f", {digest.spent / digest.budget:.0%} of the {money(digest.budget, currency)} budget."
        text += (
            f" Month-end forecast at the current burn: {money(digest.forecast, currency)} ({digest.forecast / digest.budget:.0%})"
        )
        if digest.over_since is not None:
            text += f" :rotating_light: over budget since {digest.over_since:%a %d %b}"
        elif digest.forecast > digest.budget and digest.exhausts_at is not None:
            text += f" :warning: the budget runs out around {when(digest.exhausts_at)}"
    return text + "." + _missing_note(digest.missing)


def _missing_note(missing: list[date]) -> str:
    """Days Prometheus no longer (or never) held: said, so a month-to-date without them is not taken as whole."""
    return f" No metrics for {day_ranges(missing)}: those days are not counted." if missing else ""


def _namespace_lines(digest: TeamDigest, currency: str) -> list[str]:
    yesterday: Mapping[str, CostLine] = {line.namespace: line for line in digest.yesterday}
    lines = []
    for line in digest.month:
        day = yesterday.get(line.namespace)
        day_text = f"{day.gpu_hours:,.1f} GPU-h · {money(day.cost, currency)}" if day else "0 GPU-h"
        lines.append(
            f"*{line.namespace}*: yesterday {day_text} · month {line.gpu_hours:,.1f} GPU-h · {money(line.cost, currency)}"
        )
    return lines or ["No GPU use recorded this month."]


def _model_lines(month: CostLine, currency: str) -> list[str]:
    return [
        f"{model}: {hours:,.1f} GPU-h · {money(cost, currency)}"
        for model, (hours, cost) in sorted(month.by_model.items(), key=lambda item: item[1][1], reverse=True)
    ]


def _usage_line(month: CostLine, currency: str) -> str:
    utilisation = "n/a (no DCGM data)" if month.utilisation is None else f"{month.utilisation:.0%}"
    return (
        f"Average GPU utilisation {utilisation}. Idle allocated GPUs (under the idle threshold): "
        f"{month.idle_hours:,.1f} GPU-h · {money(month.idle_cost, currency)}"
    )
