"""Whether Prometheus answers: one notice to the admins when it stops, one when it is back."""

from __future__ import annotations

import logging
import threading

from bot.clock import Clock
from bot.domain.policy import Policy
from bot.services.announce import Announcer, Outgoing
from bot.services.messages import MetricsBack, MetricsUnavailable
from bot.services.ports import Repository, Transactions

log = logging.getLogger(__name__)


class MetricsHealth:
    def __init__(self, *, policy: Policy, database: Transactions, announcer: Announcer, clock: Clock) -> None:
        self._policy = policy
        self._db = database
        self._announce = announcer
        self._clock = clock
        self._lock = threading.Lock()  # the metric jobs may fail at the same moment

    def failed(self, cause: str) -> None:
        """Record that a job could not read the metrics; tell the admins the first time only."""
        log.error("metrics unavailable: %s", cause)
        out = self._announce.outgoing()
        with self._lock:
            self._db.run(lambda repo: self._open_or_start(repo, out, cause))
        out.deliver()

    def recovered(self) -> None:
        """Close an open outage, and say so where the outage was announced."""
        out = self._announce.outgoing()
        with self._lock:
            self._db.run(lambda repo: self._close(repo, out))
        out.deliver()

    def _open_or_start(self, repo: Repository, out: Outgoing, cause: str) -> None:
        """The open outage (started now if none is); the admins are told, once, with the outage marked notified."""
        outage = repo.open_metrics_outage()
        if outage is None:
            outage = repo.start_metrics_outage(at=self._clock.now(), cause=cause)
        if outage.notified_at is not None or not self._policy.admin_channel:
            return
        outage.notified_at = self._clock.now()
        out.post(repo, self._policy.admin_channel, MetricsUnavailable(outage.started_at, cause))

    def _close(self, repo: Repository, out: Outgoing) -> None:
        outage = repo.open_metrics_outage()
        if outage is None:
            return
        outage.ended_at = self._clock.now()
        if outage.notified_at is not None and self._policy.admin_channel:
            out.post(repo, self._policy.admin_channel, MetricsBack(outage.started_at))
