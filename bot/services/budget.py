"""Budget warnings: each threshold (50/80/100 % by default) once per team per month, plus an early
warning when the month-end forecast crosses 100 % first. The latest spend is kept in the database,
where the request flow reads it: a team over budget needs one more approval for increases.

A warning goes to the team's channel and, when the team lists addresses (``budget.mail``) and SMTP is
set up, to each of them by mail with the month's chart: all recorded in the transaction that claims the
warning, so each is sent once, or not at all when another run claimed it first."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import partial

from bot.clock import Clock
from bot.domain.clusters import cluster_of
from bot.domain.costs import (
    FORECAST,
    budget_pace,
    day_window,
    exhaustion,
    month_end_forecast,
    month_length,
    over_budget_since,
    thresholds_to_send,
)
from bot.domain.policy import Policy, Team
from bot.errors import GpuQuotaError, PartialMetrics
from bot.services.announce import Announcer, Outgoing
from bot.services.ledger import answered
from bot.services.mail_messages import BudgetWarningMail, chart_days
from bot.services.messages import BudgetAlert
from bot.services.metrics_health import MetricsHealth
from bot.services.ports import Transactions
from bot.services.spend import SpendReader
from bot.services.stores import Budgets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BudgetState:
    team: str
    month: str
    spent: float
    budget: float
    forecast: float
    over_since: date | None = None  # the day spend reached the budget
    runs_out: datetime | None = None  # at the current burn, when within this month
    daily: Mapping[date, float] = field(default_factory=dict)  # each day's cost so far (the mail's chart)
    day: date | None = None  # today, in schedules.timezone

    @property
    def percent(self) -> float:
        return 100 * self.spent / self.budget

    @property
    def forecast_percent(self) -> float:
        return 100 * self.forecast / self.budget


class BudgetWatch:
    def __init__(
        self,
        *,
        policy: Policy,
        spend: SpendReader,
        database: Transactions,
        announcer: Announcer,
        health: MetricsHealth,
        clock: Clock,
    ) -> None:
        self._policy = policy
        self._spend = spend
        self._db = database
        self._announce = announcer
        self._health = health
        self._clock = clock

    def check(self) -> list[tuple[str, str]]:
        """The hourly job: measure every team's month so far, send the warnings now due.

        When the metrics fail, the outage is recorded and the error raised: the run is a failed run. When only
        some clusters' metrics fail, the teams with no namespace in them are measured and warned as usual, the
        others keep their last measurement (their spend is not known now), and then the error is raised."""
        now = self._clock.now()
        teams = [t for t in self._policy.teams.values() if t.budget is not None]
        if not teams:
            return []
        unavailable: dict[str, str] = {}
        try:
            costs = answered(lambda: self._spend.team_costs_so_far(now), unavailable)
        except GpuQuotaError as error:
            self._health.failed(str(error))
            raise
        known = [t for t in teams if not any(cluster_of(ns.name) in unavailable for ns in t.namespaces)]
        sent = self._measure(known, costs, now)
        if unavailable:
            failure = PartialMetrics(sent, unavailable)
            self._health.failed(str(failure))
            raise failure
        self._health.recovered()
        return sent

    def _measure(self, teams: list[Team], costs: dict[str, dict[date, float]], now: datetime) -> list[tuple[str, str]]:
        """Each team's month so far remembered, and the warnings now due sent."""
        zone = self._policy.schedules.zone
        today = now.astimezone(zone).date()
        month_start = day_window(today.replace(day=1), zone).start
        elapsed, length = now - month_start, month_length(today, zone)
        sent: list[tuple[str, str]] = []
        for team in teams:
            assert team.budget is not None
            budget = team.budget.monthly
            daily = costs.get(team.name, {})
            spent = sum(daily.values())
            state = BudgetState(
                team.name,
                f"{today:%Y-%m}",
                spent,
                budget,
                month_end_forecast(spent, elapsed=elapsed, length=length),
                over_since=over_budget_since(daily, budget),
                runs_out=exhaustion(spent, budget, elapsed=elapsed, now=now, month_end=month_start + length),
                daily=daily,
                day=today,
            )
            self._db.run(partial(self._remember, state=state))
            if team.notifications.budget_warnings:
                sent.extend((team.name, key) for key in self._warn(team, state))
        return sent

    def over_budget_in(self, repo: Budgets, team: str) -> bool:
        """True when the last measurement of this month found the team at or over its budget, as
        ``repo``'s transaction reads it (the one recording a request)."""
        month = f"{self._clock.now().astimezone(self._policy.schedules.zone):%Y-%m}"
        return repo.team_over_budget(team, month)

    def _remember(self, repo: Budgets, *, state: BudgetState) -> None:
        repo.record_team_spend(
            state.team,
            month=state.month,
            spent=state.spent,
            budget=state.budget,
            forecast=state.forecast,
            at=self._clock.now(),
        )

    def _warn(self, team: Team, state: BudgetState) -> list[str]:
        assert team.budget is not None
        already = self._db.run(lambda repo: repo.budget_alerts_sent(team.name, state.month))
        due = thresholds_to_send(
            percent=state.percent,
            forecast_percent=state.forecast_percent,
            thresholds=team.budget.thresholds,
            already_sent=already,
        )
        if not due:
            return []
        out = self._announce.outgoing()
        if not self._claim(team, state, due, out):
            return []
        out.deliver()
        log.info("budget warning %s sent to %s (%.0f%%)", ",".join(due), team.name, state.percent)
        return due

    def _claim(self, team: Team, state: BudgetState, keys: list[str], out: Outgoing) -> bool:
        """Record the warnings and their message in one transaction; another run that recorded them first wins."""
        with self._db.transaction() as repo:
            if not repo.claim_budget_alerts(team.name, state.month, keys, percent=state.percent, at=self._clock.now()):
                return False
            warning = self._message(team, state, keys)
            out.post(repo, team.channel, warning)
            if team.budget is not None and team.budget.mail and self._announce.mails:
                mail = self._mail(team, state, warning)
                for address in team.budget.mail:
                    out.mail(repo, address, mail)
            return True

    def _mail(self, team: Team, state: BudgetState, warning: BudgetAlert) -> BudgetWarningMail:
        """The warning by mail, with the month's chart: each day's cost of the team, and the budget's pace."""
        day = state.day or self._clock.now().astimezone(self._policy.schedules.zone).date()
        daily = {d: {team.label: cost} for d, cost in state.daily.items()}
        return BudgetWarningMail(team.name, warning, day, chart_days(daily), budget_pace(state.budget, day))

    def _message(self, team: Team, state: BudgetState, keys: list[str]) -> BudgetAlert:
        owners = team.owners if not team.owners.empty else team.approvers
        thresholds = [int(k) for k in keys if k != FORECAST]
        return BudgetAlert(
            team.label,
            tuple(owners.users),
            tuple(owners.usergroups),
            state.spent,
            state.budget,
            state.forecast,
            self._policy.pricing.currency,
            max(thresholds) if thresholds else None,
            state.over_since,
            state.runs_out,
        )
