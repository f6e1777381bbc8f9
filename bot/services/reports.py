"""The daily cost digest as data: what a team's report and the organisation's summary say, in figures.

``bot.services.digest`` builds these; the notifier words them at the edge (``bot.adapters.slack.reports``:
the sentences, the money and the dates, the chart's title, axis and legend), where the language is
chosen. No word is made here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from bot.domain.capacity import SplitUnavailable
from bot.domain.costs import CostLine, add_lines
from bot.domain.policy import Team


@dataclass(frozen=True)
class ExpiringGrant:
    request_id: int
    namespace: str
    gpus: int
    ends_at: datetime


@dataclass(frozen=True)
class ClusterCost:
    """One cluster's part of a team's or the organisation's figures: yesterday (None: nothing ran) and the month."""

    cluster: str  # its name in the policy
    yesterday: CostLine | None
    month: CostLine


@dataclass(frozen=True)
class TeamDigest:
    """One team's day: yesterday's and the month's lines per namespace (dearest first), the budget's
    outlook, the grants ending within a day and the chart's figures."""

    team: Team
    day: date
    currency: str
    yesterday: list[CostLine]
    month: list[CostLine]
    top: list[CostLine]  # the month's top consumers (a list only when the team has several namespaces)
    daily: dict[date, dict[str, float]]  # per day, the cost of each namespace: what the stacked chart draws
    pace: float | None  # the budget's daily pace, the chart's dashed line (None: no budget)
    spent: float
    forecast: float
    exhausts_at: datetime | None  # only when it falls after now and within the month
    over_since: date | None
    missing: list[date]  # days of the month the metrics held nothing for: not counted, not zero
    expiring: list[ExpiringGrant]
    # With several clusters: the team's figures per cluster (when it has namespaces in more than one), and per
    # cluster the days counted for others but not for it (no metrics, or not read yet: not counted).
    clusters: list[ClusterCost] = field(default_factory=list)
    missing_in: dict[str, list[date]] = field(default_factory=dict)
    # The days of the month whose GPU-hours could not be told apart by node (priced on-demand), per cluster of
    # the team's namespaces and why; only when the policy prices by node (spot, pools).
    unsplit: list[SplitUnavailable] = field(default_factory=list)

    @property
    def budget(self) -> float | None:
        return self.team.budget.monthly if self.team.budget else None

    @property
    def yesterday_total(self) -> CostLine | None:
        """Yesterday's namespaces as one line (per resource, per GPU model), None when nothing ran."""
        return add_lines(self.yesterday) if self.yesterday else None

    @property
    def month_total(self) -> CostLine | None:
        """The month's namespaces as one line (per resource, per GPU model, utilisation, idle), None when nothing ran."""
        return add_lines(self.month) if self.month else None


@dataclass(frozen=True)
class OrgDigest:
    """The organisation's day: each team's month, the namespaces outside the policy, the top namespaces."""

    day: date
    currency: str
    teams: list[TeamDigest]
    others: dict[str, float]  # month cost of namespaces outside the policy, by their label team
    yesterday: float  # the day's cost over the same namespaces as the month's totals
    missing: list[date]
    top: list[CostLine]
    team_labels: dict[str, str]  # the label of each team of the policy, by its name (for ``top``)
    daily: dict[date, dict[str, float]]  # per day, the cost of each team
    pace: float | None  # the budgets' daily pace (None: no team has a budget)
    clusters: list[ClusterCost] = field(default_factory=list)  # with several clusters: each one's figures
    missing_in: dict[str, list[date]] = field(default_factory=dict)  # as in TeamDigest
    unsplit: list[SplitUnavailable] = field(default_factory=list)  # as in TeamDigest, of every cluster

    @property
    def spent(self) -> float:
        return sum(t.spent for t in self.teams) + sum(self.others.values())

    @property
    def budgets(self) -> float:
        return sum(t.budget or 0.0 for t in self.teams)


Digest = TeamDigest | OrgDigest
