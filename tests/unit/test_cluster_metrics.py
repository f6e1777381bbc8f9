"""``ClusterMetrics``: the answers of each cluster's Prometheus merged, one that fails leaving the others'
figures standing (``PartialMetrics``), and one that failed not asked again at every call (#21). The sources
are hand-written stand-ins for ``PrometheusMetrics``; the real ones are in tests/integration/test_cluster_costs.py."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from bot.adapters.metrics_clusters import ClusterMetrics
from bot.errors import PartialMetrics, PermanentError, TemporaryError

AT = datetime(2026, 11, 10, tzinfo=timezone.utc)
NAMES = {"": "eu-1", "us-2": "us-2", "ap-3": "ap-3"}


class Source:
    """What ``ClusterMetrics`` asks of a ``PrometheusMetrics``: its clusters and one answer (or error)."""

    def __init__(self, clusters: tuple[str, ...], held: dict[str, float]) -> None:
        self.clusters = clusters
        self.held = held
        self.failing: Exception | None = None
        self.calls = 0
        self.queries = 0
        self.cluster_spacings: dict[str, dict] = {}

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        self.calls += 1
        if self.failing is not None:
            raise self.failing
        return self.held


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def sources() -> tuple[Source, Source]:
    return Source(("",), {"ai-frontier-research": 2.0}), Source(("us-2", "ap-3"), {"us-2/ml-us": 4.0, "ap-3/serve": 1.0})


def test_the_answers_of_every_prometheus_are_merged_by_namespace_key(sources: tuple[Source, Source]) -> None:
    metrics = ClusterMetrics(list(sources), names=NAMES)  # type: ignore[arg-type]
    assert metrics.allocated_at(AT) == {"ai-frontier-research": 2.0, "us-2/ml-us": 4.0, "ap-3/serve": 1.0}


def test_one_prometheus_failing_leaves_the_others_figures_and_names_its_clusters(sources: tuple[Source, Source]) -> None:
    home, shared = sources
    shared.failing = TemporaryError("Prometheus did not answer (ConnectionError)")
    with pytest.raises(PartialMetrics) as partial:
        ClusterMetrics([home, shared], names=NAMES).allocated_at(AT)  # type: ignore[list-item]
    assert partial.value.figures == {"ai-frontier-research": 2.0}
    why = "the Prometheus of us-2, ap-3: Prometheus did not answer (ConnectionError)"
    assert partial.value.unavailable == {"us-2": why, "ap-3": why} and str(partial.value) == why


def test_when_no_prometheus_answers_the_error_is_what_one_prometheus_raises(sources: tuple[Source, Source]) -> None:
    for source in sources:
        source.failing = PermanentError("Prometheus refused the bot's credentials (HTTP 401)")
    with pytest.raises(PermanentError, match="HTTP 401") as raised:
        ClusterMetrics(list(sources), names=NAMES).allocated_at(AT)  # type: ignore[arg-type]
    assert not isinstance(raised.value, PartialMetrics)


def test_a_prometheus_that_failed_is_not_asked_again_until_retry_after(sources: tuple[Source, Source]) -> None:
    home, shared = sources
    clock = Clock()
    metrics = ClusterMetrics([home, shared], names=NAMES, retry_after=60, monotonic=clock)  # type: ignore[list-item]
    shared.failing = TemporaryError("Prometheus answered HTTP 503: overloaded")
    for _ in range(3):
        with pytest.raises(PartialMetrics, match="HTTP 503"):
            metrics.allocated_at(AT)
    assert (home.calls, shared.calls) == (3, 1)  # the failing one's error given at once, not waited for again
    shared.failing = None
    clock.now = 61
    assert metrics.allocated_at(AT)["us-2/ml-us"] == 4.0 and shared.calls == 2


def test_a_cluster_no_prometheus_holds_is_unavailable_in_every_answer(sources: tuple[Source, Source]) -> None:
    why = "no Prometheus for cluster sa-1: set clusters.sa-1.prometheus_url or PROMETHEUS_URL"
    metrics = ClusterMetrics(list(sources), names=NAMES, unread={"sa-1": why})  # type: ignore[arg-type]
    with pytest.raises(PartialMetrics) as partial:
        metrics.allocated_at(AT)
    assert partial.value.unavailable == {"sa-1": why} and len(partial.value.figures) == 3
