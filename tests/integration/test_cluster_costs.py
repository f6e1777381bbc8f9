"""One cost view across clusters against real Prometheus servers (Debian's 2.42), on SQLite and PostgreSQL
(#21): each namespace recorded under its key, each cluster's days on their own.

Three days (1-3 November 2026, UTC) sampled every 5 minutes in three clusters, the same pod names in each
(so a query that lost the cluster label in a join would match many to many and fail):

- eu-1, the home cluster, whose series carry no cluster label: ai-frontier-research trains on 2 A100s
  (48 GPU-hours a day, 96 USD), biz-model-serving holds 4 idle H100s (96 GPU-hours, 384 USD);
- us-2, labelled ``cluster="us-2"``: its own ai-frontier-research on 1 H100 (24 GPU-hours, 96 USD) and ml-us,
  2 A100s from 2 November (48 GPU-hours, 96 USD);
- ap-3, labelled only with OpenCost's ``cluster_id="ap-tokyo-3"`` (its ``metrics_name``): biz-model-serving
  on 1 A100 (24 GPU-hours, 48 USD).

Served as one shared Prometheus (all three) and as one Prometheus per cluster (eu-1 and us-2).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.models import Base, LedgerDay
from bot.adapters.metrics_clusters import ClusterMetrics, label_problems
from bot.adapters.prometheus import PrometheusMetrics
from bot.adapters.slack.reports import digest_report
from bot.bootstrap import build_digest, connect_cluster_metrics
from bot.clock import ManualClock
from bot.domain.policy import Policy, parse_policy
from bot.errors import PartialMetrics
from bot.sandbox.history import A100, H100, History, PodRun
from bot.services.ledger import NO_DATA, RECORDED, Ledger, export_rows
from bot.services.ports import MetricsSource
from bot.settings import Settings
from tests.prometheus_server import PrometheusServer, binaries_available, with_labels

UTC = timezone.utc
START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 4, tzinfo=UTC)
NOW = datetime(2026, 11, 4, 9, tzinfo=UTC)
STEP = timedelta(minutes=5)
DAYS = [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)]
REFUSED = "http://127.0.0.1:9"  # nothing listens there: a Prometheus refusing connections

EU = History(
    step=STEP,
    start=START,
    end=END,
    pods=[
        PodRun("ai-frontier-research", "train", 2, "node-a", A100, START, END, 0.6),
        PodRun("biz-model-serving", "serve", 4, "node-b", H100, START, END, 0.02),
    ],
)
US = History(
    step=STEP,
    start=START,
    end=END,
    pods=[
        PodRun("ai-frontier-research", "train", 1, "node-a", H100, START, END, 0.5),
        PodRun("ml-us", "sweep", 2, "node-b", A100, START + timedelta(days=1), END, 0.4),
    ],
)
AP = History(step=STEP, start=START, end=END, pods=[PodRun("biz-model-serving", "serve", 1, "node-a", A100, START, END, 0.7)])

CLUSTERS = {
    "eu-1": {"home": True},
    "us-2": {"context": "us-2-admin"},
    "ap-3": {"context": "ap-3-admin", "metrics_name": "ap-tokyo-3"},
}
POLICY = {
    "admin_channel": "C0ADMIN",
    "schedules": {"timezone": "UTC"},
    "pricing": {"currency": "USD", "default_per_gpu_hour": 1.0, "models": {A100: 2.0, H100: 4.0}},
    "metrics": {"idle_threshold_percent": 5, "sample_interval": "5m"},
    "clusters": CLUSTERS,
    "teams": {
        "frontier": {
            "display_name": "Frontier",
            "channel": "C0FRONTIER",
            "namespaces": ["ai-frontier-research", "us-2/ai-frontier-research", "us-2/ml-us"],
            "approvers": {"users": ["U0LEE"]},
            "budget": {"monthly": 5000},
        },
        "business": {
            "display_name": "Business",
            "channel": "C0BIZ",
            "namespaces": ["biz-model-serving", "ap-3/biz-model-serving"],
            "approvers": {"users": ["U0MAYA"]},
        },
    },
}
# GPU-hours and cost of each namespace key on each day (ml-us starts on the 2nd).
TRUTH = {
    "ai-frontier-research": (48.0, 96.0),
    "biz-model-serving": (96.0, 384.0),
    "us-2/ai-frontier-research": (24.0, 96.0),
    "us-2/ml-us": (48.0, 96.0),
    "ap-3/biz-model-serving": (24.0, 48.0),
}


def serve(workdir: Path, *clusters: tuple[History, dict[str, str]]) -> PrometheusServer:
    server = PrometheusServer(workdir)
    for index, (history, labels) in enumerate(clusters):
        server.add_openmetrics(with_labels(history, labels), name=f"cluster-{index}")
    return server.start()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, PrometheusServer]]:
    """``shared``: the three clusters' series in one Prometheus; ``eu-1`` and ``us-2``: each cluster's own."""
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    started = {
        "shared": serve(
            tmp_path_factory.mktemp("shared"), (EU, {}), (US, {"cluster": "us-2"}), (AP, {"cluster_id": "ap-tokyo-3"})
        ),
        "eu-1": serve(tmp_path_factory.mktemp("eu"), (EU, {})),
        "us-2": serve(tmp_path_factory.mktemp("us"), (US, {"cluster": "us-2"})),
    }
    yield started
    for server in started.values():
        server.stop()


def policy_with(**clusters: dict[str, object]) -> Policy:
    return parse_policy({**POLICY, "clusters": {**CLUSTERS, **clusters}})


def two_clusters(us_url: str) -> Policy:
    """eu-1 and us-2 only, us-2 read from its own Prometheus at ``us_url``."""
    teams = {**POLICY["teams"], "business": {**POLICY["teams"]["business"], "namespaces": ["biz-model-serving"]}}  # type: ignore[dict-item]
    clusters = {"eu-1": CLUSTERS["eu-1"], "us-2": {**CLUSTERS["us-2"], "prometheus_url": us_url}}
    return parse_policy({**POLICY, "clusters": clusters, "teams": teams})


def metrics_of(policy: Policy, url: str) -> MetricsSource:
    metrics = connect_cluster_metrics(Settings(prometheus_url=url), policy)
    assert metrics is not None
    return metrics


def entries_by_key(ledger: Ledger) -> dict[tuple[date, str], tuple[float, float]]:
    found: dict[tuple[date, str], tuple[float, float]] = {}
    for entry in ledger.entries(DAYS[0], DAYS[-1]):
        hours, cost = found.get((entry.day, entry.namespace), (0.0, 0.0))
        found[(entry.day, entry.namespace)] = (hours + entry.use.allocated_hours, cost + entry.use.cost)
    return found


def truth(keys: set[str]) -> dict[tuple[date, str], tuple[float, float]]:
    return {
        (day, key): (pytest.approx(hours), pytest.approx(cost))
        for day in DAYS
        for key, (hours, cost) in TRUTH.items()
        if key in keys and not (key == "us-2/ml-us" and day == DAYS[0])
    }


@pytest.mark.prometheus
def test_a_shared_prometheus_tells_the_clusters_apart_by_their_label(
    servers: dict[str, PrometheusServer], database: Database
) -> None:
    policy = parse_policy(POLICY)
    metrics = metrics_of(policy, servers["shared"].url)
    assert isinstance(metrics, PrometheusMetrics)  # one Prometheus for all: one source, its queries keep the labels
    ledger = Ledger(policy=policy, metrics=metrics, database=database, clock=ManualClock(NOW))
    done = ledger.catch_up(DAYS[-1])
    assert (done.recorded, done.no_data, done.missing, done.errors) == (DAYS, [], {}, [])
    assert entries_by_key(ledger) == truth(set(TRUTH))
    assert ledger.cluster_status(DAYS) == {day: {"": RECORDED, "us-2": RECORDED, "ap-3": RECORDED} for day in DAYS}
    # Each cluster's spacing is measured from its own series.
    assert metrics.cluster_spacings["us-2"][DAYS[1]] == {"ksm": 300.0, "dcgm": 300.0}
    assert metrics.cluster_spacings["ap-3"][DAYS[1]] == {"ksm": 300.0, "dcgm": 300.0}
    # Idle hours stay in their cluster: eu-1's idle H100s, not ap-3's busy A100 of the same namespace name.
    idle = {e.namespace: e.use.idle_hours for e in ledger.entries(DAYS[1], DAYS[1])}
    assert idle["biz-model-serving"] == pytest.approx(96) and idle["ap-3/biz-model-serving"] == 0
    rows = export_rows(ledger, DAYS[0], currency="USD")
    assert {(r["namespace"], r["cluster"]) for r in rows} == {
        ("ai-frontier-research", "eu-1"),
        ("biz-model-serving", "eu-1"),
        ("us-2/ai-frontier-research", "us-2"),
        ("us-2/ml-us", "us-2"),
        ("ap-3/biz-model-serving", "ap-3"),
    }
    assert list(rows[0])[-4:] == ["resource", "cluster", "capacity_type", "pool"]


@pytest.mark.prometheus
def test_labels_shared_by_clusters_cost_no_more_queries_than_one_cluster(
    servers: dict[str, PrometheusServer], tmp_path: Path
) -> None:
    """One aggregated query per measure whatever the number of clusters in the Prometheus."""
    counts = []
    for policy in (parse_policy(POLICY), parse_policy({**POLICY, "clusters": {}, "teams": {}})):
        metrics = metrics_of(policy, servers["shared"].url)
        assert isinstance(metrics, PrometheusMetrics)
        database = Database.from_url(f"sqlite:///{tmp_path}/{len(counts)}.db")
        Base.metadata.create_all(database.engine)
        Ledger(policy=policy, metrics=metrics, database=database, clock=ManualClock(NOW)).record(DAYS)
        counts.append(metrics.queries)
    assert counts[0] == counts[1]


@pytest.mark.prometheus
def test_the_digest_shows_each_cluster_and_sums_each_team(servers: dict[str, PrometheusServer], database: Database) -> None:
    policy = parse_policy(POLICY)
    digest = build_digest(
        policy=policy, metrics=metrics_of(policy, servers["shared"].url), database=database, clock=ManualClock(NOW)
    ).build(DAYS[-1])
    assert [(c.cluster, c.month.cost, c.yesterday and c.yesterday.cost) for c in digest.clusters] == [
        ("eu-1", pytest.approx(3 * 480), pytest.approx(480)),
        ("ap-3", pytest.approx(3 * 48), pytest.approx(48)),
        ("us-2", pytest.approx(3 * 96 + 3 * 96 - 96), pytest.approx(192)),
    ]
    frontier = next(t for t in digest.teams if t.team.name == "frontier")
    assert frontier.spent == pytest.approx(3 * 96 + 3 * 96 + 2 * 96)  # summed over its clusters
    report = digest_report(frontier, with_chart=False)
    sections = {s.heading: list(s.lines) for s in report.sections}
    assert sections["Per cluster"] == [
        "*eu-1*: yesterday 48.0 GPU-h · 96.00 USD · month 144.0 GPU-h · 288.00 USD",
        "*us-2*: yesterday 72.0 GPU-h · 192.00 USD · month 168.0 GPU-h · 480.00 USD",
    ]
    assert [line.split(":")[0] for line in sections["Per namespace"]] == [
        "*ai-frontier-research*",
        "*us-2/ai-frontier-research*",
        "*us-2/ml-us*",
    ]
    org = {s.heading: list(s.lines) for s in digest_report(digest, with_chart=False).sections}
    assert [line.split(":")[0] for line in org["Per cluster"]] == ["*eu-1*", "*ap-3*", "*us-2*"]
    assert "No metrics" not in report.summary


@pytest.mark.prometheus
def test_a_cluster_label_no_series_carry_is_said_and_its_days_are_no_data(
    servers: dict[str, PrometheusServer], database: Database
) -> None:
    policy = policy_with(**{"sa-1": {"context": "sa-1-admin"}})
    metrics = metrics_of(policy, servers["shared"].url)
    ledger = Ledger(policy=policy, metrics=metrics, database=database, clock=ManualClock(NOW))
    done = ledger.catch_up(DAYS[-1])
    line = 'cluster sa-1: no kube-state-metrics series with cluster="sa-1" or cluster_id="sa-1" while other clusters\' are there'
    assert done.recorded == DAYS and done.missing == {"sa-1": DAYS} and done.errors == [line]
    assert {day: status["sa-1"] for day, status in ledger.cluster_status(DAYS).items()} == dict.fromkeys(DAYS, NO_DATA)
    assert ledger.missing_in(DAYS) == {"sa-1": DAYS}
    # check-config says the same over the last hour of the history.
    assert label_problems(metrics, at=END - STEP, names={"": "eu-1", "us-2": "us-2", "ap-3": "ap-3", "sa-1": "sa-1"}) == [line]
    # A label the policy names but nothing carries (cluster_label: region) leaves every labelled cluster absent.
    relabelled = parse_policy({**POLICY, "metrics": {**POLICY["metrics"], "cluster_label": "region"}})  # type: ignore[dict-item]
    problems = label_problems(metrics_of(relabelled, servers["shared"].url), at=END - STEP, names={"us-2": "us-2"})
    assert problems == [
        'cluster us-2: no kube-state-metrics series with region="us-2" or cluster_id="us-2" while other clusters\' are there'
    ]


@pytest.mark.prometheus
def test_each_cluster_read_from_its_own_prometheus(servers: dict[str, PrometheusServer], database: Database) -> None:
    policy = two_clusters(servers["us-2"].url)
    metrics = metrics_of(policy, servers["eu-1"].url)
    assert isinstance(metrics, ClusterMetrics)
    ledger = Ledger(policy=policy, metrics=metrics, database=database, clock=ManualClock(NOW))
    assert ledger.catch_up(DAYS[-1]).errors == []
    assert entries_by_key(ledger) == truth(
        {"ai-frontier-research", "biz-model-serving", "us-2/ai-frontier-research", "us-2/ml-us"}
    )


@pytest.mark.prometheus
def test_one_prometheus_down_the_others_figures_are_recorded_and_its_days_wait(
    servers: dict[str, PrometheusServer], database: Database
) -> None:
    down = two_clusters(REFUSED)
    clock = ManualClock(NOW)
    ledger = Ledger(policy=down, metrics=metrics_of(down, servers["eu-1"].url), database=database, clock=clock)
    done = ledger.catch_up(DAYS[-1])
    assert done.recorded == DAYS and set(done.unavailable) == {"us-2"}
    assert done.errors == ["the Prometheus of us-2: Prometheus did not answer (ConnectionError)"]
    assert ledger.cluster_status(DAYS) == {day: {"": RECORDED} for day in DAYS}  # us-2 unknown, not zero
    assert set(entries_by_key(ledger)) == {(day, ns) for day in DAYS for ns in ("ai-frontier-research", "biz-model-serving")}
    with pytest.raises(PartialMetrics) as partial:
        build_digest(policy=down, metrics=metrics_of(down, servers["eu-1"].url), database=database, clock=clock).build(DAYS[-1])
    frontier = next(t for t in partial.value.figures.teams if t.team.name == "frontier")
    assert frontier.missing_in == {"us-2": DAYS}
    assert "No metrics for us-2 on Nov 1\u2009–\u20093: not counted." in digest_report(frontier, with_chart=False).summary
    # us-2 answers again: its days are recorded, eu-1's stay as they were recorded.
    first = {day: recorded for day, recorded in recorded_at(database).items() if day[1] == ""}
    clock.advance(timedelta(hours=1))
    up = two_clusters(servers["us-2"].url)
    again = Ledger(policy=up, metrics=metrics_of(up, servers["eu-1"].url), database=database, clock=clock)
    assert again.catch_up(DAYS[-1]).errors == []
    assert {day: at for day, at in recorded_at(database).items() if day[1] == ""} == first
    assert again.cluster_status(DAYS) == {day: {"": RECORDED, "us-2": RECORDED} for day in DAYS}
    assert entries_by_key(again) == truth(
        {"ai-frontier-research", "biz-model-serving", "us-2/ai-frontier-research", "us-2/ml-us"}
    )


def recorded_at(database: Database) -> dict[tuple[date, str], datetime]:
    return database.run(lambda repo: {(row.day, row.cluster): row.recorded_at for row in repo.session.query(LedgerDay)})


@pytest.mark.prometheus
def test_a_cluster_with_no_prometheus_is_said_in_every_run(servers: dict[str, PrometheusServer], database: Database) -> None:
    policy = two_clusters(servers["us-2"].url)  # and no PROMETHEUS_URL for eu-1
    metrics = connect_cluster_metrics(Settings(prometheus_url=None), policy)
    assert isinstance(metrics, ClusterMetrics)
    done = Ledger(policy=policy, metrics=metrics, database=database, clock=ManualClock(NOW)).catch_up(DAYS[-1])
    assert done.errors == ["no Prometheus for cluster eu-1: set clusters.eu-1.prometheus_url or PROMETHEUS_URL"]
    assert done.recorded == DAYS and set(done.unavailable) == {""}
    assert connect_cluster_metrics(Settings(prometheus_url=None), parse_policy({**POLICY, "clusters": {}, "teams": {}})) is None
