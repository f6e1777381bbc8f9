"""The sample spacing measured from the samples themselves, against a real Prometheus (Debian's 2.42)
loaded with 60-second samples whose truth is known (issue 18, point 1).

Three stretches of history (UTC calendar): the first starts at 23:00 on 1 November (a new install
in the evening); the second follows a two-hour gap in the evening of 3 November (20:00-22:00) and
stops at 05:07 on 5 November, read at 08:08 (scrapes stopped three hours ago); the third holds three
samples on 7 November (too few to tell the spacing). A spacing taken as a fixed length over a count
made the first day cost six times the truth, the partial day twice and the gap day 1.5 times.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.prometheus import PrometheusMetrics
from bot.clock import ManualClock
from bot.domain.costs import add_lines, day_window, today_so_far
from bot.domain.policy import Policy, parse_policy
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from bot.services.ledger import Ledger
from bot.services.spend import Spend, SpendReader
from tests.prometheus_server import PrometheusServer, binaries_available

UTC = timezone.utc
STEP = timedelta(minutes=1)
at = lambda *args: datetime(*args, tzinfo=UTC)  # noqa: E731
FIRST = (at(2026, 11, 1, 23), at(2026, 11, 3, 20))  # starts at 23:00
SECOND = (at(2026, 11, 3, 22), at(2026, 11, 5, 5, 7))  # after a 2-hour gap; stops at 05:07
FEW = (at(2026, 11, 7, 12), at(2026, 11, 7, 12, 3))  # three samples
NOW = at(2026, 11, 5, 8, 8)
ODD_MODEL = "NVIDIA H100 (80GB) HBM3+"  # regular-expression characters in a label the raw read must match literally
GPUS = 3  # GPUs running at every sample of every stretch
SAMPLE = GPUS * STEP.total_seconds() / 3600  # the GPU-hours of one sample of every pod

POLICY = {
    "admin_channel": "C0PLATFORM",
    "schedules": {"timezone": "UTC"},
    "pricing": {"currency": "EUR", "default_per_gpu_hour": 1.0, "models": {A100: 2.0, H100: 4.0}},
    "metrics": {"team_label": "team", "idle_threshold_percent": 5, "idle_window": "6h", "sample_interval": "1m"},
    "teams": {
        "research": {
            "display_name": "Research",
            "channel": "C0FRONTIER",
            "namespaces": ["ns-train", "ns-serve"],
            "approvers": {"users": ["U0LEE"]},
            "budget": {"monthly": 5000},
        },
    },
}


def stretch(start: datetime, end: datetime) -> History:
    """The same two pods (so the same series) in every stretch: a gap between stretches is a gap in them."""
    history = History(step=STEP, start=start, end=end, namespace_labels={"ns-train": {"team": "research"}})
    history.pods += [
        PodRun("ns-train", "train", 2, "node-a", A100, start, end, 0.6, wobble=0.3),
        PodRun("ns-serve", "serve", 1, "node-b", ODD_MODEL, start, end, 0.02, exported_labels=True),
    ]
    return history


STRETCHES = (stretch(*FIRST), stretch(*SECOND), stretch(*FEW))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"))
    for index, history in enumerate(STRETCHES):
        server.add_blocks(history, name=f"stretch-{index}")
    server.start(lookback="50s")  # under the 60-second sample step, as a scraped series' staleness marker
    yield server
    server.stop()


@pytest.fixture(scope="module")
def policy() -> Policy:
    return parse_policy(POLICY)


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/bot.db"
    upgrade(url)
    return url


def connect(prometheus: PrometheusServer) -> PrometheusMetrics:
    return PrometheusMetrics.connect(prometheus.url, interval=STEP, idle_threshold=0.05)


def ledger_of(policy: Policy, metrics: PrometheusMetrics, database_url: str) -> Ledger:
    return Ledger(
        policy=policy, metrics=metrics, database=Database.from_url(database_url), clock=ManualClock(NOW + timedelta(days=3))
    )


def truth(policy: Policy, day: date, *, until: datetime | None = None) -> Spend:
    """The day (or the day until ``until``) summed sample by sample over every stretch."""
    window = today_so_far(until, policy.schedules.zone) if until else day_window(day, policy.schedules.zone)
    parts = [
        SpendReader(policy=policy, metrics=HistoryMetrics(history, idle_threshold=0.05)).read([window], at=window.end)
        for history in STRETCHES
        if history.start < window.end and history.end > window.start
    ]
    namespaces = {ns for part in parts for ns in part.days[day]}
    lines = {ns: add_lines([part.days[day][ns] for part in parts if ns in part.days[day]]) for ns in namespaces}
    return Spend(days={day: lines}, teams={ns: team for part in parts for ns, team in part.teams.items()})


def recorded(policy: Policy, metrics: PrometheusMetrics, database_url: str, day: date) -> Spend:
    """The day as the ledger holds it."""
    days, teams = ledger_of(policy, metrics, database_url).lines(day, day)
    return Spend(days=days, teams=teams)


def assert_day_matches(measured: Spend, expected: Spend, day: date) -> None:
    """GPU-hours and cost of each namespace equal the truth within one sample."""
    got = {line.namespace: line for line in measured.lines([day])}
    want = {line.namespace: line for line in expected.lines([day])}
    assert set(got) == set(want) == {"ns-train", "ns-serve"}
    for namespace, line in want.items():
        assert got[namespace].gpu_hours == pytest.approx(line.gpu_hours, abs=SAMPLE), (namespace, day)
        assert got[namespace].cost == pytest.approx(line.cost, abs=SAMPLE * 4.0), (namespace, day)
        assert got[namespace].idle_hours == pytest.approx(line.idle_hours, abs=SAMPLE), (namespace, day)


def recorded_spacing(database_url: str, day: date) -> tuple[float | None, float | None]:
    with sa.create_engine(database_url).connect() as connection:
        row = connection.execute(
            sa.text("SELECT ksm_spacing, dcgm_spacing FROM ledger_days WHERE day = :day"), {"day": day.isoformat()}
        ).one()
    return row[0], row[1]


@pytest.mark.prometheus
@pytest.mark.parametrize(
    "day, hours",
    [
        (date(2026, 11, 1), 1),  # the data starts at 23:00
        (date(2026, 11, 2), 24),  # a full day
        (date(2026, 11, 3), 22),  # a gap in every series from 20:00 to 22:00
        (date(2026, 11, 4), 24),  # a full day after the gap
    ],
)
def test_the_ledger_records_the_truth_whatever_part_of_the_day_the_samples_cover(
    prometheus: PrometheusServer, policy: Policy, database_url: str, day: date, hours: int
) -> None:
    metrics = connect(prometheus)
    ledger = ledger_of(policy, metrics, database_url)
    assert ledger.record([day]).recorded == [day]
    expected = truth(policy, day)
    assert sum(line.gpu_hours for line in expected.lines([day])) == pytest.approx(GPUS * hours)
    assert_day_matches(recorded(policy, metrics, database_url, day), expected, day)
    assert metrics.spacings[day] == {"ksm": 60.0, "dcgm": 60.0}
    assert recorded_spacing(database_url, day) == (60.0, 60.0)


@pytest.mark.prometheus
def test_today_whose_last_three_hours_have_no_samples_costs_the_truth(prometheus: PrometheusServer, policy: Policy) -> None:
    """The hourly budget check's read of today at 08:08, the scrapes stopped at 05:07."""
    metrics = connect(prometheus)
    today = date(2026, 11, 5)
    spend = SpendReader(policy=policy, metrics=metrics).read([today_so_far(NOW, policy.schedules.zone)], at=NOW, idle=False)
    expected = truth(policy, today, until=NOW)
    assert sum(line.gpu_hours for line in expected.lines([today])) == pytest.approx(GPUS * (5 + 7 / 60))
    got = {line.namespace: line for line in spend.lines([today])}
    for line in expected.lines([today]):
        assert got[line.namespace].gpu_hours == pytest.approx(line.gpu_hours, abs=SAMPLE), line.namespace
        assert got[line.namespace].cost == pytest.approx(line.cost, abs=SAMPLE * 4.0), line.namespace
    assert metrics.spacings[today] == {"ksm": 60.0, "dcgm": 60.0}


@pytest.mark.prometheus
def test_a_day_with_too_few_samples_says_its_spacing_is_unmeasured(
    prometheus: PrometheusServer, policy: Policy, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = connect(prometheus)
    day = date(2026, 11, 7)
    with caplog.at_level(logging.WARNING, logger="bot.adapters.prometheus"):
        assert ledger_of(policy, metrics, database_url).record([day]).recorded == [day]
    assert metrics.spacings[day] == {}  # nothing measured, nothing pretended
    assert recorded_spacing(database_url, day) == (None, None)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for exporter in ("kube-state-metrics", "DCGM"):
        assert any(
            f"2026-11-07: too few {exporter} samples to measure their spacing; counted at metrics.sample_interval (60s)" in w
            for w in warnings
        ), warnings
    # Counted at the configured interval, announced: here it is the true one.
    spend = recorded(policy, metrics, database_url, day)
    assert sum(line.gpu_hours for line in spend.lines([day])) == pytest.approx(GPUS * 3 / 60)
