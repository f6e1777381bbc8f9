"""Workloads the GPU quota keeps from starting: ``FailedCreate`` events saying ``exceeded quota`` for
``requests.nvidia.com/gpu`` in managed namespaces produce one message to the team, with a
[Request more] button that opens the request form prefilled with what would have been needed. Each
alert is counted per namespace and day: the weekly proposals cite how often the quota blocked a team."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import partial

from bot.clock import Clock
from bot.domain.policy import Policy
from bot.errors import GpuQuotaError
from bot.services.announce import Announcer
from bot.services.ports import Action, ActionKind, QuotaCluster, QuotaRefusal, Repository, Transactions
from bot.services.text import Code, Strong, say

log = logging.getLogger(__name__)
_FIGURES = re.compile(
    r"requested: (?:[^,]*,)*?\s*requests\.nvidia\.com/gpu=(\d+).*?used: (?:[^,]*,)*?\s*requests\.nvidia\.com/gpu=(\d+)"
    r".*?limited: (?:[^,]*,)*?\s*requests\.nvidia\.com/gpu=(\d+)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Shortfall:
    requested: int
    used: int
    limited: int

    @property
    def missing(self) -> int:
        return max(1, self.used + self.requested - self.limited)


def shortfall(message: str) -> Shortfall | None:
    """The GPU figures of an ``exceeded quota`` message, when it has them."""
    match = _FIGURES.search(message)
    return Shortfall(*(int(g) for g in match.groups())) if match else None


class BlockedWatch:
    def __init__(
        self, *, policy: Policy, cluster: QuotaCluster, database: Transactions, announcer: Announcer, clock: Clock
    ) -> None:
        self._policy = policy
        self._cluster = cluster
        self._db = database
        self._announce = announcer
        self._clock = clock

    def check(self) -> list[str]:
        """The scheduled job; returns the keys (namespace/kind/name) of the workloads reported."""
        try:
            refusals = self._cluster.quota_refusals()
        except GpuQuotaError as error:
            log.error("cannot read quota refusals: %s", error)
            return []
        reported = []
        for refusal in refusals:
            team = self._policy.team_of(refusal.namespace)
            if team is None or not team.notifications.blocked_workloads:
                continue
            key = f"{refusal.namespace}/{refusal.kind}/{refusal.name}"
            if self._db.run(partial(_alerted, key=key)):
                continue
            if self._report(team.channel, refusal):
                now = self._clock.now()
                day = now.astimezone(self._policy.schedules.zone).date()
                self._db.run(partial(_remember, key=key, namespace=refusal.namespace, at=now, day=day))
                reported.append(key)
        return reported

    def _report(self, channel: str, refusal: QuotaRefusal) -> bool:
        figures = shortfall(refusal.message)
        more = f"+{figures.missing}" if figures else "+1"
        detail = (
            f" It asks for {figures.requested} GPU(s) while {figures.used} of {figures.limited} are in use." if figures else ""
        )
        # Workload names come from whoever created them: they are notice parts, escaped by the adapter.
        text = say(
            ":no_entry: ",
            Strong(f"{refusal.kind} {refusal.name}"),
            " in ",
            Strong(refusal.namespace),
            " cannot start pods: the GPU quota is full (",
            Code("exceeded quota"),
            f", {refusal.count} time{'s' if refusal.count != 1 else ''}).{detail} "
            "Ask for more, or wait for running jobs to finish.",
        )
        value = json.dumps({"namespace": refusal.namespace, "gpus": more})
        return self._announce.post(channel, text, actions=[Action(ActionKind.REQUEST_MORE, "Request more", value, "primary")])


def _alerted(repo: Repository, *, key: str) -> bool:
    return repo.blocked_alerted(key)


def _remember(repo: Repository, *, key: str, namespace: str, at: datetime, day: date) -> None:
    repo.remember_blocked_alert(key, namespace=namespace, at=at, day=day)
