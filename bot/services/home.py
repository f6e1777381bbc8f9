"""The App Home tab: what one person has to do with GPU quota, on one page.

Their teams' quotas (hard / used / grants and their end), their pending requests, the requests
waiting for their decision, and each team's month-to-date cost against its budget. Published when
they open the tab, and again by a periodic job when something of theirs changed since (a new audit
event about their namespaces or their requests).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.clock import Clock
from bot.domain.lifecycle import RequestState
from bot.domain.policy import Policy, Team
from bot.errors import GpuQuotaError
from bot.services.access import Access
from bot.services.ports import HomePublisher, Transactions
from bot.services.queries import Queries, pending_line
from bot.services.views import HomeView, TeamSpendLine

log = logging.getLogger(__name__)

# A tab is published after each decision and by the home_tabs job: the quotas the bot read or wrote
# this recently will do (its own writes are in them at once), instead of a cluster read per namespace.
QUOTA_MAX_AGE = 30.0


class HomeService:
    def __init__(
        self, *, policy: Policy, database: Transactions, access: Access, queries: Queries, publisher: HomePublisher, clock: Clock
    ) -> None:
        self._policy = policy
        self._db = database
        self._access = access
        self._queries = queries
        self._publisher = publisher
        self._clock = clock

    def view_for(self, user: str, *, notice: str = "") -> HomeView:
        teams = self._access.teams_of(user)
        decidable = [team for team in self._policy.teams.values() if self._access.may_decide(user, team, fresh=False)]
        quotas = tuple(
            status
            for team in teams
            for ns in team.namespaces
            for status in self._queries.statuses_of(ns.name, max_age=QUOTA_MAX_AGE)
        )
        month = f"{self._clock.now().astimezone(self._policy.schedules.zone):%Y-%m}"
        labels = {team.name: team.label for team in teams}

        def load(repo):  # type: ignore[no-untyped-def]
            spend = [row for row in repo.team_spend(labels) if row.month == month]
            pending = repo.requests_in([RequestState.PENDING])
            return spend, pending

        spend_rows, pending = self._db.run(load)
        decidable_names = {team.name for team in decidable}
        return HomeView(
            user_id=user,
            currency=self._policy.pricing.currency,
            quotas=quotas,
            spend=tuple(TeamSpendLine(labels[r.team], r.month, r.spent, r.budget) for r in spend_rows),
            mine=tuple(pending_line(r) for r in pending if r.requester_id == user),
            to_decide=tuple(
                pending_line(r)
                for r in pending
                if (r.team in decidable_names or r.source_team in decidable_names)
                and r.requester_id != user
                and all(d.user_id != user for d in r.decisions)
            ),
            notice=notice,
        )

    def publish(self, user: str, *, notice: str = "") -> None:
        """Build and publish the person's tab; a Slack failure is logged (the tab keeps its last version)."""
        audit_id = self._latest_audit_id(user)
        try:
            self._publisher.publish_home(self.view_for(user, notice=notice))
        except GpuQuotaError as error:
            log.error("could not publish the App Home of %s: %s", user, error)
            return
        self._db.run(lambda repo: repo.save_home_tab(user, at=self._clock.now(), last_audit_id=audit_id))

    def publish_all(self, users: Sequence[str]) -> None:
        """Publish each person's tab once, as part of the work that changed it; a failure is logged and the
        next person's tab is still published (the ``home_tabs`` job tries again)."""
        for user in dict.fromkeys(users):
            try:
                self.publish(user)
            except Exception as error:  # the database, mostly: the decision is made, its tab can follow
                log.error("could not re-publish the App Home of %s: %s", user, error)

    def refresh_changed(self) -> list[str]:
        """Re-publish the tabs of people something happened to since their tab was published."""
        tabs = self._db.run(lambda repo: [(t.user_id, t.last_audit_id) for t in repo.home_tabs()])
        refreshed = []
        for user, seen in tabs:
            if self._latest_audit_id(user) > seen:
                self.publish(user)
                refreshed.append(user)
        return refreshed

    def _latest_audit_id(self, user: str) -> int:
        namespaces = self._namespaces_of(user)
        return self._db.run(lambda repo: repo.latest_audit_id(namespaces=namespaces, requester=user))

    def _namespaces_of(self, user: str) -> list[str]:
        """The namespaces whose changes the person's tab shows: their teams' and those they decide for."""
        teams: dict[str, Team] = {t.name: t for t in self._access.teams_of(user)}
        teams.update({t.name: t for t in self._policy.teams.values() if self._access.may_decide(user, t, fresh=False)})
        return [ns.name for team in teams.values() for ns in team.namespaces]
