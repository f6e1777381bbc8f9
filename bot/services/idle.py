"""Idle-GPU nudges: a namespace that held GPUs for the whole idle window while every one of them
stayed under the threshold gets one message, with [Release grant] where it has an active grant and
[Snooze 24 h]. It is not repeated while snoozed, nor while the same idle episode goes on with the
same number of GPUs."""

from __future__ import annotations

import logging
from datetime import timedelta
from functools import partial

from bot.clock import Clock
from bot.domain.clusters import cluster_of
from bot.domain.lifecycle import GrantState
from bot.domain.policy import Policy
from bot.domain.resources import GPU
from bot.errors import GpuQuotaError, PartialMetrics
from bot.services.access import Access
from bot.services.announce import Announcer
from bot.services.ledger import answered
from bot.services.messages import IdleNudge, NudgesSnoozed
from bot.services.metrics_health import MetricsHealth
from bot.services.ports import Action, ActionKind, ButtonLabel, MetricsSource, Repository, Transactions
from bot.services.pricing import Pricer
from bot.services.refusals import NotYoursToSnooze, Refused
from bot.services.requests import managed_key
from bot.services.stores import IdleNudges

log = logging.getLogger(__name__)
SNOOZE = timedelta(hours=24)


class IdleWatch:
    def __init__(
        self,
        *,
        policy: Policy,
        metrics: MetricsSource,
        database: Transactions,
        announcer: Announcer,
        access: Access,
        health: MetricsHealth,
        clock: Clock,
        pricer: Pricer,
    ) -> None:
        """``pricer`` prices idle hours at the namespace's GPU models (the same price list as a request's cost)."""
        self._policy = policy
        self._metrics = metrics
        self._db = database
        self._announce = announcer
        self._access = access
        self._health = health
        self._clock = clock
        self._pricer = pricer

    def check(self) -> list[str]:
        """The scheduled job; returns the namespaces nudged. Raises when the metrics fail. When only some
        clusters' metrics fail, the others' namespaces are nudged as usual, the failing clusters' are left as
        they were (neither nudged nor their idle episode ended: unknown), and then the error is raised."""
        now = self._clock.now()
        settings = self._policy.metrics
        unavailable: dict[str, str] = {}
        try:
            idle = answered(
                lambda: self._metrics.idle_namespaces(
                    now, window=settings.idle_window, threshold=settings.idle_threshold_percent / 100
                ),
                unavailable,
            )
            held = answered(lambda: self._metrics.allocated_at(now), unavailable) if idle else {}
        except GpuQuotaError as error:
            self._health.failed(str(error))
            raise  # a failed run: the job counts it and keeps last_success as it was
        nudged = self._nudge_idle(idle, held, unavailable)
        if unavailable:
            failure = PartialMetrics(nudged, unavailable)
            self._health.failed(str(failure))
            raise failure
        self._health.recovered()
        return nudged

    def _nudge_idle(self, idle: dict[str, float], held: dict[str, float], unavailable: dict[str, str]) -> list[str]:
        """Each managed namespace of the clusters that answered: nudged when idle, its episode ended when not."""
        nudged = []
        for team in self._policy.teams.values():
            for namespace in (ns.name for ns in team.namespaces):
                if cluster_of(namespace) in unavailable:
                    continue
                if namespace not in idle:
                    self._db.run(partial(self._episode_over, namespace=namespace))
                elif team.notifications.idle_nudges and self._nudge(
                    team.channel, namespace, held.get(namespace, 0.0), idle[namespace]
                ):
                    nudged.append(namespace)
        return nudged

    def snooze(self, *, user: str, namespace: str) -> NudgesSnoozed:
        namespace = managed_key(self._policy, namespace)
        team = self._policy.team_of(namespace)
        assert team is not None
        if not self._access.may_request(user, team):
            raise Refused(NotYoursToSnooze(team.label, namespace))
        until = self._clock.now() + SNOOZE
        self._db.run(lambda repo: repo.snooze_idle_nudges(namespace, until=until, by=user))
        return NudgesSnoozed(namespace, until)

    def _nudge(self, channel: str, namespace: str, held: float, highest: float) -> bool:
        now = self._clock.now()
        row = self._db.run(lambda repo: repo.idle_nudge(namespace))
        if row is not None and row.snoozed_until is not None and row.snoozed_until > now:
            return False
        if row is not None and row.active and row.gpus == held:
            return False
        window = self._policy.metrics.idle_window
        idle_hours = held * window.total_seconds() / 3600
        price = self._pricer.price(namespace)
        cost = idle_hours * price.per_gpu_hour
        grant = self._latest_grant(namespace)
        actions = [Action(ActionKind.RELEASE, ButtonLabel.RELEASE_GRANT, str(grant), "primary")] if grant else []
        actions.append(Action(ActionKind.SNOOZE, ButtonLabel.SNOOZE, namespace))
        threshold = self._policy.metrics.idle_threshold_percent
        currency = self._policy.pricing.currency
        text = IdleNudge(namespace, int(held), threshold, window, highest, idle_hours, cost, currency, price)
        out = self._announce.outgoing()

        def nudge(repo: Repository) -> None:
            """The episode remembered and its nudge recorded together: neither lost nor doubled by a crash."""
            repo.remember_idle_nudge(namespace, gpus=held, at=now)
            out.post(repo, channel, text, actions=actions)

        self._db.run(nudge)
        out.deliver()
        log.info("nudged %s about %s idle GPUs", namespace, held)
        return True

    def _episode_over(self, repo: IdleNudges, *, namespace: str) -> None:
        row = repo.idle_nudge(namespace)
        if row is not None and row.active:
            row.active = False

    def _latest_grant(self, namespace: str) -> int | None:
        grants = self._db.run(lambda repo: list(repo.grants(states=[GrantState.ACTIVE], namespaces=[namespace])))
        # Idle nudges are about whole GPUs: a grant of MIG slices is not what their Release gives back.
        return max((g.request_id for g in grants if g.gpus > 0 and g.resource == GPU), default=None)
