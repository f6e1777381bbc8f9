"""The monthly close: once a month is over, each team's final figures of it, by mail to its ``budget.mail``.

The figures come from the cost ledger (caught up first, as the digest does): what the team spent against
its budget, its GPU-hours and what their idle hours cost, each namespace's part, and the chart of the
month's days. A month is closed once per team: the close is claimed in the database (a ``close`` mark
beside the team's budget warnings of that month) in the transaction that records its mails, so a rerun,
a restart or a second replica never sends it twice, and a run that could not read the whole month (a
cluster's metrics not recorded) sends nothing and fails, for the next scheduled run to close it.
"""

from __future__ import annotations

import logging
from datetime import date, timedelta

from bot.clock import Clock
from bot.domain.clusters import cluster_of
from bot.domain.costs import budget_pace, over_budget_since
from bot.domain.policy import Policy, Team
from bot.services.announce import Announcer
from bot.services.mail_messages import MonthlyCloseMail, NamespaceClose, chart_days
from bot.services.ports import Transactions
from bot.services.spend import MonthSummary, SpendReader

log = logging.getLogger(__name__)
CLOSE = "close"  # the mark of a month's close among the team's budget alerts of that month


class MonthlyClose:
    def __init__(self, *, policy: Policy, spend: SpendReader, database: Transactions, announcer: Announcer, clock: Clock) -> None:
        self._policy = policy
        self._spend = spend
        self._db = database
        self._announce = announcer
        self._clock = clock

    def run(self) -> list[str]:
        """The scheduled job: close the month before this one (in ``schedules.timezone``) for every team with
        mail recipients whose close is not sent yet; returns those teams. Raises the ledger's error (a failed run)
        when the month could not be read whole: nothing is sent then."""
        today = self._clock.now().astimezone(self._policy.schedules.zone).date()
        last = today.replace(day=1) - timedelta(days=1)
        month = f"{last:%Y-%m}"
        teams = [team for team in self._policy.teams.values() if team.budget is not None and team.budget.mail]
        if not teams or not self._announce.mails:
            return []
        closed_before = self._db.run(lambda repo: {t.name for t in teams if CLOSE in repo.budget_alerts_sent(t.name, month)})
        open_teams = [team for team in teams if team.name not in closed_before]
        if not open_teams:
            return []
        summary = self._spend.month_summary(last)
        closed = []
        for team in open_teams:
            mail = self._close(team, summary, last)
            out = self._announce.outgoing()
            with self._db.transaction() as repo:
                percent = 100 * mail.spent / mail.budget
                if not repo.claim_budget_alerts(team.name, month, [CLOSE], percent=percent, at=self._clock.now()):
                    continue  # another run closed it first
                assert team.budget is not None
                for address in team.budget.mail:
                    out.mail(repo, address, mail)
            out.deliver()
            log.info("monthly close of %s for %s sent to %d address(es)", month, team.name, len(team.budget.mail))
            closed.append(team.name)
        return closed

    def _close(self, team: Team, summary: MonthSummary, last: date) -> MonthlyCloseMail:
        assert team.budget is not None
        lines = summary.month_lines(team.name)
        daily = summary.daily_team_costs(team.name)
        totals = {day: sum(parts.values()) for day, parts in daily.items()}
        # Days unknown for every cluster, and those unknown for a cluster holding one of the team's namespaces.
        clusters = {self._policy.cluster_label(cluster_of(ns.name)) for ns in team.namespaces}
        missing = set(summary.missing) | {day for cluster in clusters for day in summary.missing_in.get(cluster, [])}
        return MonthlyCloseMail(
            team=team.name,
            team_label=team.label,
            month=last.replace(day=1),
            spent=sum(line.cost for line in lines),
            budget=team.budget.monthly,
            currency=self._policy.pricing.currency,
            over_since=over_budget_since(totals, team.budget.monthly),
            gpu_hours=sum(line.gpu_hours for line in lines),
            idle_hours=sum(line.idle_hours for line in lines),
            idle_cost=sum(line.idle_cost for line in lines),
            namespaces=tuple(NamespaceClose(line.namespace, line.cost, line.gpu_hours, line.idle_cost) for line in lines),
            daily=chart_days(daily),
            pace=budget_pace(team.budget.monthly, last),
            missing=tuple(sorted(missing)),
        )
