"""Costs across clusters in the scheduled jobs (#21): with one cluster's metrics failing, the other clusters'
digests, budgets and idle nudges go on, the failing cluster's namespaces are left as they were (unknown, not
zero), and the run counts as failed with the admins told. The metrics are a hand-written fake of the port over
two histories; the shared and per-cluster Prometheus servers are in tests/integration/test_cluster_costs.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta, timezone
from typing import TypeVar

import pytest
from prometheus_client import REGISTRY

from bot.adapters.db.database import Database
from bot.adapters.db.models import Base
from bot.adapters.prometheus import ClusterLabels
from bot.bootstrap import SlackPorts, build_services
from bot.clock import ManualClock
from bot.domain.costs import NamespaceUsage, Window
from bot.domain.policy import PolicyError, parse_policy
from bot.errors import PartialMetrics
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from bot.services.container import Services
from bot.services.ports import Coverage
from jobs import run_job
from tests.fakes import FakeCluster, FakeDirectory, FakeHomeTabs, FakeNotifier

UTC = timezone.utc
MONTH_START = datetime(2026, 11, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)
US = "us-2"
DOWN = "the Prometheus of us-2: Prometheus did not answer (ConnectionError)"
T = TypeVar("T")


class TwoClusters:
    """The ``MetricsSource`` of two clusters as ``ClusterMetrics`` answers: the home cluster's namespaces bare,
    us-2's as ``us-2/...``; while ``us_down`` is set, us-2's part fails (``PartialMetrics`` with home's)."""

    def __init__(self, home: History, us: History) -> None:
        self.home, self.us = HistoryMetrics(home), HistoryMetrics(us)
        self.us_down = False

    def _both(self, home: T, us: T) -> T:
        if self.us_down:
            raise PartialMetrics(home, {US: DOWN})
        return {**home, **{f"{US}/{key}": value for key, value in us.items()}}  # type: ignore[attr-defined, return-value]

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        home, us = self.home.usage(windows, idle=idle), self.us.usage(windows, idle=idle)
        if self.us_down:
            raise PartialMetrics(home, {US: DOWN})
        return {day: self._both(home[day], us.get(day, {})) for day in home}

    def days_with_data(self, windows: Sequence[Window]) -> set[date]:
        return self.home.days_with_data(windows) | (set() if self.us_down else self.us.days_with_data(windows))

    def days_by_cluster(self, windows: Sequence[Window]) -> Coverage:
        home = {"": self.home.days_with_data(windows)}
        if self.us_down:
            return Coverage(home, unavailable={US: DOWN})
        return Coverage({**home, US: self.us.days_with_data(windows)})

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        return self._both(self.home.allocated_at(moment), self.us.allocated_at(moment))

    def peak_allocated(self, start: datetime, end: datetime) -> dict[str, float]:
        return self._both(self.home.peak_allocated(start, end), self.us.peak_allocated(start, end))

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        home = self.home.idle_namespaces(moment, window=window, threshold=threshold)
        return self._both(home, self.us.idle_namespaces(moment, window=window, threshold=threshold))

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        return self._both(self.home.namespace_labels(moment, label), self.us.namespace_labels(moment, label))

    def quota_saturation(self, start: datetime, end: datetime, quota_names: Mapping[str, str]) -> dict[str, float]:
        return {}


def running(*pods: tuple[str, str, int, str, float]) -> History:
    """A month of pods (namespace, pod, GPUs, model, utilisation) running from the 1st."""
    end = datetime(2027, 1, 1, tzinfo=UTC)
    return History(
        step=timedelta(minutes=5),
        start=MONTH_START,
        end=end,
        pods=[PodRun(ns, pod, gpus, "n1", model, MONTH_START, end, util) for ns, pod, gpus, model, util in pods],
    )


POLICY = {
    "admin_channel": "C0ADMIN",
    "pricing": {"default_per_gpu_hour": 1.0, "models": {A100: 2.0, H100: 4.0}},
    "metrics": {"idle_window": "6h", "idle_threshold_percent": 5},
    "clusters": {"eu-1": {"home": True}, US: {"context": "us-2-admin"}},
    "teams": {
        "frontier": {
            "channel": "C0FRONTIER",
            "namespaces": ["ai-frontier-research"],
            "approvers": {"users": ["U0LEE"]},
            "budget": {"monthly": 1000},
        },
        "business": {
            "channel": "C0BIZ",
            "namespaces": ["biz-model-serving", "us-2/ml-us"],
            "approvers": {"users": ["U0MAYA"]},
            "budget": {"monthly": 1000},
        },
    },
}


def services_on(metrics: TwoClusters) -> tuple[Services, FakeNotifier]:
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    notifier = FakeNotifier()
    cluster = FakeCluster()
    for namespace in ("ai-frontier-research", "biz-model-serving", "us-2/ml-us"):
        cluster.add(namespace, 8)
    services = build_services(
        policy=parse_policy(POLICY),
        database=database,
        cluster=cluster,
        slack=SlackPorts(notifier=notifier, directory=FakeDirectory(), home_tabs=FakeHomeTabs()),
        clock=ManualClock(NOW),
        metrics=metrics,  # type: ignore[arg-type]
        sleep=lambda _: None,
    )
    return services, notifier


def posts(notifier: FakeNotifier, channel: str) -> list[str]:
    return [s.text for s in notifier.sent if s.target == channel and s.kind in ("post", "report")]


@pytest.fixture
def metrics() -> TwoClusters:
    """Frontier trains on 2 A100s at home (96 a day); business runs 1 A100 at home (48) and 2 idle H100s in us-2 (192)."""
    home = running(("ai-frontier-research", "train", 2, A100, 0.7), ("biz-model-serving", "serve", 1, A100, 0.6))
    return TwoClusters(home, running(("ml-us", "parked", 2, H100, 0.01)))


def test_budgets_of_teams_in_the_clusters_that_answer_are_checked(metrics: TwoClusters) -> None:
    services, notifier = services_on(metrics)
    assert services.budget is not None
    metrics.us_down = True
    with pytest.raises(PartialMetrics, match="us-2"):
        services.budget.check()
    # Frontier (home only): 9 days x 96 + 9 h x 4 = 900 of 1,000; business's spend is not known: not measured.
    assert len(posts(notifier, "C0FRONTIER")) == 1 and posts(notifier, "C0BIZ") == []
    assert services.database.run(lambda repo: repo.team_over_budget("business", "2026-11")) is False
    assert any("GPU metrics unavailable" in text and "us-2" in text for text in posts(notifier, "C0ADMIN"))
    metrics.us_down = False
    # Business: 9 days x 240 + 9 h x 10, over its budget: measured and warned once us-2 answers.
    assert [key for team, key in services.budget.check() if team == "business"] == ["50", "80", "100"]


def test_idle_nudges_go_on_where_the_metrics_answer_and_a_failing_cluster_keeps_its_episodes(metrics: TwoClusters) -> None:
    services, notifier = services_on(metrics)
    assert services.idle is not None
    assert services.idle.check() == ["us-2/ml-us"]
    metrics.us_down = True
    with pytest.raises(PartialMetrics):
        services.idle.check()
    row = services.database.run(lambda repo: repo.idle_nudge("us-2/ml-us"))
    assert row is not None and row.active  # unknown while us-2 does not answer: the episode is not over
    metrics.us_down = False
    assert services.idle.check() == []  # the same idle episode: not nudged twice
    assert len([text for text in posts(notifier, "C0BIZ") if "us-2/ml-us" in text]) == 1


def test_the_digest_posts_the_figures_read_and_says_which_cluster_is_missing(metrics: TwoClusters) -> None:
    services, notifier = services_on(metrics)
    assert services.digest is not None
    metrics.us_down = True
    with pytest.raises(PartialMetrics, match="us-2"):
        services.digest.run()
    business = next(s.report for s in notifier.of("report") if s.target == "C0BIZ")
    assert "No metrics for us-2 on Nov 1\u2009–\u20099: not counted." in business.summary
    frontier = next(s.report for s in notifier.of("report") if s.target == "C0FRONTIER")
    assert "No metrics" not in frontier.summary  # frontier has no namespace in us-2
    metrics.us_down = False
    assert services.digest.run() == []  # posted once: the next run has nothing new to post
    assert services.ledger is not None and services.ledger.run().errors == []  # the ledger job records us-2's days
    assert services.ledger.missing_in([date(2026, 11, 9)]) == {}


def test_the_ledger_job_records_the_clusters_that_answer_and_fails_naming_the_other(metrics: TwoClusters) -> None:
    services, _ = services_on(metrics)
    assert services.ledger is not None
    metrics.us_down = True
    done = services.ledger.run()
    assert done.recorded == [date(2026, 11, 1) + timedelta(days=i) for i in range(9)] and done.errors == [DOWN]
    run_job("ledger_clusters", services.ledger.run)  # still down: a failed run, its line in the log
    assert REGISTRY.get_sample_value("gpu_quota_job_runs_total", {"task": "ledger_clusters", "outcome": "error"}) == 1
    assert set(services.ledger.cluster_status([date(2026, 11, 9)])[date(2026, 11, 9)]) == {""}  # us-2: unknown
    metrics.us_down = False
    assert services.ledger.run().errors == []
    assert services.ledger.cluster_status([date(2026, 11, 9)])[date(2026, 11, 9)] == {"": "recorded", US: "recorded"}


def test_a_series_belongs_to_its_label_else_its_cluster_id_else_the_home_cluster() -> None:
    labels = ClusterLabels("cluster", {"eu-1": "", "us-2": US, "ap-tokyo-3": "ap-3"}, unlabelled="")
    assert labels.names == ("cluster", "cluster_id")
    assert labels.cluster_of({"cluster": "us-2", "cluster_id": "ap-tokyo-3"}) == US  # the configured label first
    assert labels.cluster_of({"cluster_id": "ap-tokyo-3"}) == "ap-3"
    assert labels.cluster_of({"cluster": "", "namespace": "ns"}) == ""  # no label: home's, when it shares
    assert labels.cluster_of({"cluster": "sa-1"}) is None  # a cluster the policy does not list: not counted
    assert ClusterLabels("cluster", {US: US}).cluster_of({}) is None  # home reads another Prometheus
    assert ClusterLabels("cluster_id", {US: US}).names == ("cluster_id",)


def test_the_policy_refuses_two_clusters_with_one_metrics_name_and_a_bad_label() -> None:
    clusters = {
        "eu-1": {"home": True},
        "us-2": {"context": "a", "metrics_name": "us"},
        "us-3": {"context": "b", "metrics_name": "us"},
    }
    with pytest.raises(PolicyError, match="clusters us-2 and us-3 have the same metrics name us"):
        parse_policy({**POLICY, "clusters": clusters})
    with pytest.raises(PolicyError, match="cluster_label"):
        parse_policy({**POLICY, "metrics": {"cluster_label": "cluster-name"}})
    assert parse_policy(POLICY).metrics.cluster_label == "cluster"
