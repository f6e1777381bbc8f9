"""The bot's own metrics (prometheus-client), served on ``/metrics``.

Counters and histograms live in the default registry, as prometheus-client intends; the gauge of
requests by state (``RequestStates``) and the outbox's backlog, Slack's and the mail's (``OutboxBacklog``),
are read from the database at scrape time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bot.clock import Clock
from bot.domain.lifecycle import RequestState
from bot.services.ports import Transactions

log = logging.getLogger(__name__)

DECISIONS = Counter("gpu_quota_decisions", "Approvals and denials recorded", ["verdict"])
APPLIES = Counter("gpu_quota_applies", "Requests applied to the cluster, by outcome", ["outcome"])
APPLY_SECONDS = Histogram(
    "gpu_quota_apply_seconds",
    "Time to apply an approved request (read, dry run, patch, record)",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
ERRORS = Counter("gpu_quota_errors", "Failures talking to other systems", ["system", "kind"])
# ``interaction``: command | click | form | event; ``reason``: busy (the work queue was full, the person
# was told at once) | expired (it waited past the response URL's life and was answered "expired").
REFUSED = Counter("gpu_quota_refused", "Interactions the bot acknowledged but did not do", ["interaction", "reason"])
# The scheduled job is the ``task`` label, never ``job``: Prometheus owns ``job`` (the scrape job) and
# renames a scraped ``job`` label to ``exported_job``, which no rule or panel would then match.
JOB_RUNS = Counter("gpu_quota_job_runs", "Scheduled job runs, by outcome", ["task", "outcome"])
JOB_SECONDS = Histogram("gpu_quota_job_seconds", "Scheduled job duration", ["task"], buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 900))
JOB_LAST_SUCCESS = Gauge("gpu_quota_job_last_success_timestamp_seconds", "When each job last finished without error", ["task"])
LEADER = Gauge("gpu_quota_leader", "1 while this replica runs the scheduled jobs")


def count_error(system: str, kind: str) -> None:
    """``system``: kubernetes | slack | prometheus | smtp; ``kind``: temporary | permanent | conflict | undeliverable
    (an outbox entry given up on)."""
    ERRORS.labels(system=system, kind=kind).inc()


@contextmanager
def timed(histogram: Histogram, **labels: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        (histogram.labels(**labels) if labels else histogram).observe(time.perf_counter() - started)


class ClusterStates(Collector):
    """``gpu_quota_cluster_up{cluster}``: 1 while a cluster answers, 0 since it stopped (``states()`` gives
    each cluster's name and whether it is up, as the cluster adapter saw it last)."""

    def __init__(self, states: Callable[[], list[tuple[str, bool]]]) -> None:
        self._states = states

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("gpu_quota_cluster_up", "1 while the bot reaches the cluster", labels=["cluster"])
        for cluster, up in self._states():
            family.add_metric([cluster], 1.0 if up else 0.0)
        yield family


class RequestStates(Collector):
    """``gpu_quota_requests{state}``: how many requests are in each state, read at scrape time."""

    def __init__(self, database: Transactions) -> None:
        self._db = database

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("gpu_quota_requests", "Quota requests by state", labels=["state"])
        try:
            counts = self._db.run(lambda repo: repo.count_requests_by_state())
        except Exception:
            log.exception("could not count requests for /metrics")
            return
        for state in RequestState:
            family.add_metric([state.value], counts.get(state.value, 0))
        yield family


class OutboxBacklog(Collector):
    """``gpu_quota_outbox_entries{channel,state}`` and ``gpu_quota_outbox_oldest_pending_seconds{channel}``: what
    the bot still has to say in Slack (``channel="slack"``) and by mail (``channel="mail"``), and for how long the
    oldest of it has waited (0 when nothing waits). Every channel is exposed, with zeros when it has nothing."""

    def __init__(self, database: Transactions, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            health = self._db.outbox().health()
        except Exception:
            log.exception("could not read the outbox for /metrics")
            return
        entries = GaugeMetricFamily(
            "gpu_quota_outbox_entries", "Outbox entries by channel and state", labels=["channel", "state"]
        )
        waited = GaugeMetricFamily(
            "gpu_quota_outbox_oldest_pending_seconds",
            "Age of the oldest message not delivered yet, by channel",
            labels=["channel"],
        )
        for channel, backlog in health.channels.items():
            for state in ("pending", "sent", "dead"):
                entries.add_metric([channel, state], backlog.counts.get(state, 0))
            oldest = backlog.oldest_pending_at
            waited.add_metric([channel], 0.0 if oldest is None else max(0.0, (self._clock.now() - oldest).total_seconds()))
        yield entries
        yield waited


def exposition() -> tuple[bytes, str]:
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
