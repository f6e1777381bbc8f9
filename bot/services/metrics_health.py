"""Whether Prometheus answers: one notice to the admins when it stops, one when it is back."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from bot.clock import Clock
from bot.domain.policy import Policy
from bot.services.announce import Announcer
from bot.services.ports import Repository, Transactions
from bot.services.text import Moment, say

if TYPE_CHECKING:
    from bot.adapters.db.models import MetricsOutage

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
        with self._lock:
            outage = self._db.run(lambda repo: self._open_or_start(repo, cause))
            if outage.notified_at is not None or not self._policy.admin_channel:
                return
            text = say(
                ":warning: GPU metrics unavailable since ",
                Moment(outage.started_at),
                f": {cause}. The bot keeps serving requests; digests catch up when Prometheus answers again.",
            )
            if self._announce.post(self._policy.admin_channel, text):
                self._db.run(lambda repo: self._mark_notified(repo, outage.id))

    def recovered(self) -> None:
        """Close an open outage, and say so where the outage was announced."""
        with self._lock:
            outage = self._db.run(self._close)
        if outage is not None and outage.notified_at is not None and self._policy.admin_channel:
            self._announce.post(
                self._policy.admin_channel,
                say(":white_check_mark: GPU metrics are back (unavailable since ", Moment(outage.started_at), ")."),
            )

    def _open_or_start(self, repo: Repository, cause: str) -> MetricsOutage:
        outage = repo.open_metrics_outage()
        if outage is None:
            outage = repo.start_metrics_outage(at=self._clock.now(), cause=cause)
        return outage

    def _mark_notified(self, repo: Repository, outage_id: int) -> None:
        outage = repo.metrics_outage(outage_id)
        if outage is not None:
            outage.notified_at = self._clock.now()

    def _close(self, repo: Repository) -> MetricsOutage | None:
        outage = repo.open_metrics_outage()
        if outage is not None:
            outage.ended_at = self._clock.now()
        return outage
