"""What each namespace and team spent, day by day this month, read from the metrics in one go."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from bot.domain.costs import CostLine, Window, add_lines, month_windows, price, today_so_far
from bot.domain.policy import Policy
from bot.services.ports import MetricsSource

UNMANAGED = "(not managed)"


@dataclass(frozen=True)
class Spend:
    """Priced usage per day per namespace; ``teams`` maps each namespace to its team's name."""

    days: dict[date, dict[str, CostLine]]
    teams: dict[str, str]

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


class SpendReader:
    def __init__(self, *, policy: Policy, metrics: MetricsSource) -> None:
        self._policy = policy
        self._metrics = metrics

    def month_through(self, day: date) -> Spend:
        """Every full day of ``day``'s month up to and including ``day``."""
        windows = month_windows(day, self._policy.schedules.zone)
        return self.read(windows, at=windows[-1].end)

    def month_so_far(self, now: datetime) -> Spend:
        """This month's full days and today up to ``now``."""
        zone = self._policy.schedules.zone
        today = today_so_far(now, zone)
        windows: list[Window] = month_windows(today.day - timedelta(days=1), zone) if today.day.day > 1 else []
        return self.read([*windows, today], at=now)

    def missing_days(self, windows: Sequence[Window]) -> list[date]:
        """The windows' days the metrics know nothing about (before their retention, or lost)."""
        covered = self._metrics.days_with_data(windows)
        return [w.day for w in windows if w.day not in covered]

    def read(self, windows: Sequence[Window], *, at: datetime) -> Spend:
        usage = self._metrics.usage(windows)
        teams = self._teams(at, {ns for per_day in usage.values() for ns in per_day})
        days = {
            day: {
                ns: price(ns, teams[ns], ns_usage, self._policy.pricing)
                for ns, ns_usage in per_ns.items()
                if ns in teams and (ns_usage.allocated_hours > 0 or self._policy.team_of(ns) is not None)
            }
            for day, per_ns in usage.items()
        }
        return Spend(days=days, teams=teams)

    def _teams(self, at: datetime, seen: set[str]) -> dict[str, str]:
        """Managed namespaces by the policy; others by their namespace label when one is configured."""
        teams = {ns: team.name for team in self._policy.teams.values() for ns in (n.name for n in team.namespaces)}
        label = self._policy.metrics.team_label
        if label:
            for ns, value in self._metrics.namespace_labels(at, label).items():
                teams.setdefault(ns, f"{value} {UNMANAGED}")
        return {ns: team for ns, team in teams.items() if ns in seen or self._policy.team_of(ns) is not None}
