"""The daily cost digest: to each team's channel, and an organisation summary to the admin channel.

For a day: yesterday's and the month-to-date GPU-hours and cost per namespace and per GPU model,
budget used and the month-end forecast, utilisation, idle GPU-hours and their cost, grants ending
within 24 hours, top consumers, and the chart's figures (``bot.services.reports``: data, worded by the
notifier at the edge). Each (team, day) is claimed in the database before it
is posted, so reruns, restarts and a second replica never post it twice; days missed while the
metrics were down are posted by the next run.

Only finished days are reported, and only days the metrics know: a day before Prometheus's data (or
lost in an outage) is "no metrics", never a day of zero cost. A day recorded as posted outside the
catch-up window (a future date posted by hand) does not hold the schedule back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date, timedelta
from functools import partial

from bot.clock import Clock
from bot.domain.clusters import cluster_of
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
from bot.errors import GpuQuotaError, PartialMetrics
from bot.services.announce import Announcer
from bot.services.ledger import answered
from bot.services.metrics_health import MetricsHealth
from bot.services.ports import Transactions
from bot.services.refusals import DayNotOver, NoMetricsFor, Refused
from bot.services.reports import ClusterCost, Digest, ExpiringGrant, OrgDigest, TeamDigest
from bot.services.spend import MonthSummary, SpendReader

log = logging.getLogger(__name__)
ORG = "*"
CATCH_UP_DAYS = 7
TOP = 5


class NoMetrics(Refused):
    """The metrics hold nothing for the days asked for (``NoMetricsFor``): there is nothing true to report."""


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
    ) -> None:
        """``announcer`` and ``health`` are needed to post (``publish``, ``run``), not to build reports."""
        self._policy = policy
        self._spend = spend
        self._db = database
        self._announce = announcer
        self._health = health
        self._clock = clock

    # --- building ------------------------------------------------------------------------------

    def build(self, day: date) -> OrgDigest:
        """The digests of every team for ``day`` (metrics are read once for all of them).

        Raises Refused (DayNotOver) for a day not over yet and NoMetrics for a day the metrics do not hold, and
        PartialMetrics with the digest when some clusters' days could not be read (the digest says so)."""
        zone = self._policy.schedules.zone
        today = self._clock.now().astimezone(zone).date()
        if day >= today:
            raise Refused(DayNotOver(day, today))
        if self._spend.missing_days([day_window(day, zone)]):
            raise NoMetrics(NoMetricsFor((day,)))
        unavailable: dict[str, str] = {}
        spend = answered(lambda: self._spend.month_summary(day), unavailable)
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
        budgets = sum(t.budget or 0.0 for t in teams)
        digest = OrgDigest(
            day=day,
            currency=self._policy.pricing.currency,
            teams=teams,
            others=others,
            yesterday=yesterday,
            missing=spend.missing,
            top=every_namespace[:TOP],
            team_labels={name: team.label for name, team in self._policy.teams.items()},
            daily=daily,
            pace=budget_pace(budgets, day) if budgets else None,
            clusters=self._per_cluster(every_namespace, spend.day_lines()),
            missing_in=spend.missing_in,
            unsplit=spend.unsplit,
        )
        if unavailable:
            raise PartialMetrics(digest, unavailable)
        return digest

    def _per_cluster(self, month: list[CostLine], yesterday: list[CostLine]) -> list[ClusterCost]:
        """With several clusters in the policy, the lines' figures per cluster (home first; one with no line
        left out); none with one cluster."""
        if len(self._policy.cluster_names()) < 2:
            return []
        found = []
        for cluster in self._policy.cluster_names():
            of_month = [line for line in month if cluster_of(line.namespace) == cluster]
            of_day = [line for line in yesterday if cluster_of(line.namespace) == cluster]
            if of_month:
                found.append(
                    ClusterCost(self._policy.cluster_label(cluster), add_lines(of_day) if of_day else None, add_lines(of_month))
                )
        return found

    def _team_digest(self, team: Team, day: date, spend: MonthSummary, expiring: list[ExpiringGrant]) -> TeamDigest:
        zone = self._policy.schedules.zone
        month = spend.month_lines(team.name)
        spent = sum(line.cost for line in month)
        month_start = day_window(day.replace(day=1), zone).start
        elapsed = day_window(day, zone).end - month_start
        budget = team.budget.monthly if team.budget else None
        namespaces = {ns.name for ns in team.namespaces}
        own_clusters = {self._policy.cluster_label(cluster_of(namespace)) for namespace in namespaces}
        clusters = self._per_cluster(month, spend.day_lines(team.name))
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
            currency=self._policy.pricing.currency,
            yesterday=spend.day_lines(team.name),
            month=month,
            top=month[:TOP] if len(month) > 1 else [],
            daily=daily,
            pace=budget_pace(budget, day) if budget else None,
            spent=spent,
            forecast=month_end_forecast(spent, elapsed=elapsed, length=month_length(day, zone)),
            exhausts_at=runs_out,
            over_since=over_since,
            missing=spend.missing,
            expiring=[grant for grant in expiring if grant.namespace in namespaces],
            clusters=clusters if len(clusters) > 1 else [],
            missing_in={cluster: days for cluster, days in spend.missing_in.items() if cluster in own_clusters},
            unsplit=[fact for fact in spend.unsplit if fact.cluster in own_clusters],
        )

    def _expiring(self) -> list[ExpiringGrant]:
        horizon = self._clock.now() + timedelta(hours=24)
        grants = self._db.run(lambda repo: list(repo.grants(states=[GrantState.ACTIVE])))
        return [ExpiringGrant(g.request_id, g.namespace, g.gpus, g.ends_at) for g in grants if g.ends_at <= horizon]

    # --- posting -------------------------------------------------------------------------------

    def publish(self, day: date, *, teams: Sequence[str] | None = None, org: bool = True) -> list[str]:
        """Post the digests of ``day`` not posted yet; returns the scopes posted (team names, "*"). When some
        clusters' days could not be read, the digests are posted (saying so) and PartialMetrics is raised with
        the scopes posted."""
        assert self._announce is not None, "publishing needs an announcer"
        unavailable: dict[str, str] = {}
        digest = answered(lambda: self.build(day), unavailable)
        posted = []
        for team_digest in digest.teams:
            team = team_digest.team
            if (teams is not None and team.name not in teams) or not team.notifications.digest:
                continue
            if self._post_once(team.name, day, team.channel, team_digest):
                posted.append(team.name)
        if org and teams is None and self._policy.admin_channel:
            if self._post_once(ORG, day, self._policy.admin_channel, digest):
                posted.append(ORG)
        if unavailable:
            raise PartialMetrics(posted, unavailable)
        return posted

    def run(self) -> list[tuple[date, list[str]]]:
        """The scheduled job: post yesterday's digests, and any day missed (up to a week) before it.

        When the metrics fail, the outage is recorded and the error raised: the run is a failed run (also when
        only some clusters' metrics failed, after the digests of the others' figures are posted)."""
        yesterday = (self._clock.now().astimezone(self._policy.schedules.zone) - timedelta(days=1)).date()
        done: list[tuple[date, list[str]]] = []
        unknown: list[date] = []
        unavailable: dict[str, str] = {}
        try:
            for day in self._days_to_post(yesterday):
                try:
                    done.append((day, answered(partial(self.publish, day), unavailable)))
                except NoMetrics:  # Prometheus answers but holds nothing for that day
                    unknown.append(day)
            if unavailable:
                raise PartialMetrics(done, unavailable)
        except GpuQuotaError as error:
            if self._health is not None:
                self._health.failed(str(error))
            raise
        if self._health is not None:
            self._health.recovered()
        if unknown:
            raise NoMetrics(NoMetricsFor(tuple(unknown)))
        return done

    def _days_to_post(self, yesterday: date) -> list[date]:
        """The days after the last one posted in the catch-up window; a day posted beyond yesterday
        (by hand, or by an older version) is not a sign the schedule is up to date."""
        first = yesterday - timedelta(days=CATCH_UP_DAYS - 1)
        posted = self._db.run(lambda repo: repo.digest_days_posted(ORG, first=first, last=yesterday))
        latest = max(posted, default=None)
        start = latest + timedelta(days=1) if latest else yesterday
        return [start + timedelta(days=i) for i in range((yesterday - start).days + 1)]

    def _post_once(self, scope: str, day: date, channel: str, digest: Digest) -> bool:
        """Claim (scope, day), post, mark posted; a failed post gives the claim back for the next run."""
        assert self._announce is not None
        if not self._claim(scope, day):
            return False
        try:
            ref = self._announce.publish(channel, digest)
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
