"""What each namespace and team spent, day by day this month, read from the metrics in one go."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import cached_property

from bot.domain.capacity import SplitUnavailable
from bot.domain.costs import CostLine, Window, add_lines, month_windows, price, today_so_far
from bot.domain.policy import Policy
from bot.errors import PartialMetrics
from bot.services.ledger import NO_DATA, Ledger, answered, managed_teams, team_map
from bot.services.ports import MetricsSource


@dataclass(frozen=True)
class Spend:
    """Priced usage per day per namespace; ``teams`` maps each namespace to its team's name."""

    days: dict[date, dict[str, CostLine]]
    teams: dict[str, str]
    missing: list[date] = field(default_factory=list)  # days the metrics held nothing for: unknown, not zero

    def namespaces_of(self, team: str) -> list[str]:
        return sorted(ns for ns, owner in self.teams.items() if owner == team)

    def line(self, namespace: str, days: Iterable[date]) -> CostLine | None:
        lines = [self.days[d][namespace] for d in days if namespace in self.days.get(d, {})]
        return add_lines(lines) if lines else None

    def lines(self, days: Iterable[date], *, team: str | None = None) -> list[CostLine]:
        """One line per namespace (of ``team``, or all) over ``days``, most expensive first."""
        chosen = list(days)
        namespaces = self.namespaces_of(team) if team is not None else sorted(self.teams)
        found = [line for ns in namespaces if (line := self.line(ns, chosen)) is not None]
        return sorted(found, key=lambda line: line.cost, reverse=True)

    def team_cost(self, team: str, days: Iterable[date]) -> float:
        return sum(line.cost for line in self.lines(days, team=team))

    def daily_team_costs(self, team: str) -> dict[date, dict[str, float]]:
        """Per day, the cost of each of the team's namespaces (for the stacked chart)."""
        return {
            day: {ns: line.cost for ns, line in per_ns.items() if self.teams.get(ns) == team}
            for day, per_ns in sorted(self.days.items())
        }


@dataclass(frozen=True)
class MonthSummary:
    """A month up to ``day`` as the digest reads it: per namespace the month's line and the day's, and
    per team each day's cost by namespace (its ``CHART_NAMESPACES`` dearest, the rest as "others").
    From the ledger it is summed in the database (``Ledger.summary``)."""

    day: date
    month: dict[str, CostLine]
    last_day: dict[str, CostLine]
    days: list[date]  # the days with costs
    team_daily: dict[str, dict[date, dict[str, float]]]  # team -> day -> namespace (or "others") -> cost
    teams: dict[str, str]
    missing: list[date] = field(default_factory=list)  # days no cluster's metrics held: unknown, not zero
    # With several clusters: per cluster (its name), the days counted for others and not for it (unknown).
    missing_in: dict[str, list[date]] = field(default_factory=dict)
    # The days whose GPU-hours could not be told apart by node (priced on-demand), per cluster and why.
    unsplit: list[SplitUnavailable] = field(default_factory=list)

    @cached_property
    def _by_team(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for namespace, team in sorted(self.teams.items()):
            grouped.setdefault(team, []).append(namespace)
        return grouped

    def month_lines(self, team: str | None = None) -> list[CostLine]:
        """One line per namespace (of ``team``, or all) over the month, most expensive first."""
        return _by_cost(self.month, self._by_team.get(team, []) if team is not None else None)

    def day_lines(self, team: str | None = None) -> list[CostLine]:
        """The same for ``day`` alone."""
        return _by_cost(self.last_day, self._by_team.get(team, []) if team is not None else None)

    def daily_team_costs(self, team: str) -> dict[date, dict[str, float]]:
        """Per day, the cost of the team's namespaces (for the stacked chart; they sum to the team's day)."""
        mine = self.team_daily.get(team, {})
        return {day: dict(mine.get(day, {})) for day in self.days}


def team_daily_of(daily: dict[date, dict[str, float]], teams: dict[str, str]) -> dict[str, dict[date, dict[str, float]]]:
    """Per day per namespace costs split by team (the whole month read from Prometheus: no ledger)."""
    split: dict[str, dict[date, dict[str, float]]] = {}
    for day, per_ns in daily.items():
        for namespace, cost in per_ns.items():
            split.setdefault(teams[namespace], {}).setdefault(day, {})[namespace] = cost
    return split


def _by_cost(lines: dict[str, CostLine], namespaces: list[str] | None) -> list[CostLine]:
    found = list(lines.values()) if namespaces is None else [lines[ns] for ns in namespaces if ns in lines]
    return sorted(found, key=lambda line: line.cost, reverse=True)


class SpendReader:
    """Month-to-date spend. With a ledger, finished days come from it (caught up first) and only today
    is read from the metrics; without one (``digest --print`` on the sandbox), everything is read."""

    def __init__(self, *, policy: Policy, metrics: MetricsSource, ledger: Ledger | None = None) -> None:
        self._policy = policy
        self._metrics = metrics
        self._ledger = ledger

    def month_through(self, day: date) -> Spend:
        """Every full day of ``day``'s month up to and including ``day``."""
        windows = month_windows(day, self._policy.schedules.zone)
        if self._ledger is not None:
            return self._from_ledger(day.replace(day=1), day)
        return self.read(windows, at=windows[-1].end)

    def month_summary(self, day: date) -> MonthSummary:
        """The month through ``day`` as the digest needs it: with a ledger, summed in the database. Raises
        PartialMetrics with the summary when the ledger could not read some clusters' days (not counted)."""
        if self._ledger is None:
            spend = self.month_through(day)
            daily = {d: {ns: line.cost for ns, line in per_ns.items()} for d, per_ns in spend.days.items()}
            return MonthSummary(
                day=day,
                month={line.namespace: line for line in spend.lines(sorted(spend.days))},
                last_day={line.namespace: line for line in spend.lines([day])},
                days=sorted(spend.days),
                team_daily=team_daily_of(daily, spend.teams),
                teams=spend.teams,
                missing=spend.missing,
            )
        first = day.replace(day=1)
        caught_up = self._ledger.catch_up(day)
        summary = self._ledger.summary(first, day)
        days = [first + timedelta(days=i) for i in range((day - first).days + 1)]
        missing = sorted(d for d, state in self._ledger.status(days).items() if state == NO_DATA)
        month = MonthSummary(
            day,
            summary.month,
            summary.last_day,
            summary.days,
            summary.team_daily,
            summary.teams,
            missing,
            missing_in=self._ledger.missing_in(days),
            unsplit=self._ledger.unsplit(first, day),
        )
        if caught_up.unavailable:
            raise PartialMetrics(month, caught_up.unavailable)
        return month

    def month_so_far(self, now: datetime) -> Spend:
        """This month's full days and today up to ``now``."""
        zone = self._policy.schedules.zone
        today = today_so_far(now, zone)
        if self._ledger is not None:
            partial = self.read([today], at=now, idle=False)  # budgets need today's cost, not its idle hours
            if today.day.day == 1:
                return partial
            past = self._from_ledger(today.day.replace(day=1), today.day - timedelta(days=1))
            return Spend(days={**past.days, **partial.days}, teams={**partial.teams, **past.teams}, missing=past.missing)
        windows: list[Window] = month_windows(today.day - timedelta(days=1), zone) if today.day.day > 1 else []
        return self.read([*windows, today], at=now)

    def team_costs_so_far(self, now: datetime) -> dict[str, dict[date, float]]:
        """Per team, the cost of each day of this month up to ``now``: with a ledger, its recorded days
        summed in the database plus today's partial day from the metrics (the hourly budget check). Raises
        PartialMetrics with the costs when some clusters' metrics could not be read (their namespaces' part of
        a day is then missing from them)."""
        if self._ledger is None:
            spend = self.month_so_far(now)
            return {team: _day_totals(spend.daily_team_costs(team)) for team in set(spend.teams.values())}
        today = today_so_far(now, self._policy.schedules.zone)
        costs: dict[str, dict[date, float]] = {}
        unavailable: dict[str, str] = {}
        if today.day.day > 1:
            yesterday = today.day - timedelta(days=1)
            unavailable.update(self._ledger.catch_up(yesterday).unavailable)
            costs = self._ledger.team_day_costs(today.day.replace(day=1), yesterday)
        partial = answered(lambda: self.read([today], at=now, idle=False), unavailable)
        for team in set(partial.teams.values()):
            costs.setdefault(team, {}).update(_day_totals(partial.daily_team_costs(team)))
        if unavailable:
            raise PartialMetrics(costs, unavailable)
        return costs

    def missing_days(self, windows: Sequence[Window]) -> list[date]:
        """The windows' days the metrics know nothing about (before their retention, or lost)."""
        if self._ledger is not None:
            self._ledger.catch_up(max(w.day for w in windows))
            status = self._ledger.status(w.day for w in windows)
            if all(w.day in status for w in windows):
                return [w.day for w in windows if status[w.day] == NO_DATA]
        covered = self._metrics.days_with_data(windows)
        return [w.day for w in windows if w.day not in covered]

    def _from_ledger(self, first: date, last: date) -> Spend:
        assert self._ledger is not None
        self._ledger.catch_up(last)
        days, teams = self._ledger.lines(first, last)
        status = self._ledger.status(first + timedelta(days=i) for i in range((last - first).days + 1))
        missing = sorted(day for day, state in status.items() if state == NO_DATA)
        return Spend(days=days, teams=teams, missing=missing)

    def read(self, windows: Sequence[Window], *, at: datetime, idle: bool = True) -> Spend:
        """The windows priced from the metrics; raises PartialMetrics with the Spend of the clusters that answered
        when some did not."""
        unavailable: dict[str, str] = {}
        usage = answered(lambda: self._metrics.usage(windows, idle=idle), unavailable)
        seen = {ns for per_day in usage.values() for ns in per_day}
        teams = team_map(self._policy, self._metrics, at, seen, unavailable)
        managed = managed_teams(self._policy)
        days = {
            day: {
                ns: price(ns, teams[ns], ns_usage, self._policy.pricing)
                for ns, ns_usage in per_ns.items()
                if ns in teams and (ns_usage.held or ns in managed)
            }
            for day, per_ns in usage.items()
        }
        if unavailable:
            raise PartialMetrics(Spend(days=days, teams=teams), unavailable)
        return Spend(days=days, teams=teams)


def _day_totals(daily: dict[date, dict[str, float]]) -> dict[date, float]:
    return {day: sum(costs.values()) for day, costs in daily.items()}
