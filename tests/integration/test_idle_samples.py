"""Idle GPU-hours per sample on a real Prometheus, for each branch of the idle query: GPUs with the
profiling metric (idle, busy, wobbling around the threshold) and GPUs with GPU_UTIL only (idle, around the
threshold, busy), beside each other in one namespace. The truth is the same history summed in Python."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from bot.adapters.prometheus import PrometheusMetrics
from bot.domain.costs import day_window
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from tests.prometheus_server import PrometheusServer, binaries_available

UTC = timezone.utc
START = datetime(2026, 9, 1, tzinfo=UTC)
END = datetime(2026, 9, 3, tzinfo=UTC)
STEP = timedelta(minutes=5)
THRESHOLD = 0.05


def history() -> History:
    h = History(step=STEP, start=START, end=END)
    h.pods += [
        PodRun("ns-prof", "idle", 1, "node-a", H100, START, END, 0.01),
        PodRun("ns-prof", "edge", 2, "node-a", H100, START, END, 0.045, wobble=0.02),
        PodRun("ns-prof", "busy", 1, "node-b", H100, START, END, 0.6),
        PodRun("ns-dev", "idle", 1, "node-c", A100, START, END, 0.01, profiling=False),
        PodRun("ns-dev", "edge", 2, "node-c", A100, START, END, 0.05, wobble=0.02, profiling=False, exported_labels=True),
        PodRun("ns-dev", "busy", 1, "node-d", A100, START, END, 0.6, profiling=False),
        PodRun("ns-both", "prof-idle", 1, "node-e", H100, START, END, 0.02),
        PodRun("ns-both", "dev-edge", 1, "node-f", A100, START, END, 0.04, wobble=0.03, profiling=False),
    ]
    return h


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus")).load(history()).start()
    yield server
    server.stop()


@pytest.mark.prometheus
def test_idle_hours_per_sample_match_the_truth_with_and_without_the_profiling_metric(prometheus: PrometheusServer) -> None:
    window = day_window(date(2026, 9, 2), ZoneInfo("UTC"))
    measured = PrometheusMetrics.connect(prometheus.url, interval=STEP, idle_threshold=THRESHOLD).usage([window])[window.day]
    expected = HistoryMetrics(history(), idle_threshold=THRESHOLD).usage([window])[window.day]
    for namespace in ("ns-prof", "ns-dev", "ns-both"):
        truth = expected[namespace].idle_model_hours
        assert 0 < sum(truth.values()) < expected[namespace].observed_hours  # some samples idle, not all
        assert measured[namespace].idle_model_hours.keys() == truth.keys()
        for model, hours in truth.items():
            assert measured[namespace].idle_model_hours[model] == pytest.approx(hours, rel=0.005), (namespace, model)
