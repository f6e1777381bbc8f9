"""The cost ledger against a real Prometheus (Debian's 2.42) loaded with a history of known truth.

Two stretches of history (1-9 and 11-20 November 2026, Europe/Berlin) with nothing on 10 November;
kube-state-metrics sampled every 5 minutes and DCGM every minute while the policy says 5 minutes;
a notebook idle 20 hours a day with a 4-hour burst, GPUs wobbling around the 5 % threshold, a
namespace scraped with ``exported_namespace``, an unmanaged namespace with team and cost-center
labels. The truth is the same history summed in Python, per sample.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.prometheus import PrometheusMetrics
from bot.clock import ManualClock
from bot.domain.costs import day_window
from bot.domain.policy import Policy, parse_policy
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from bot.sandbox.httpserver import Incoming, LoopbackServer, Outgoing
from bot.services.digest import NoMetrics
from bot.services.ledger import Ledger
from bot.services.spend import Spend, SpendReader
from tests.integration.processes import run_bot
from tests.prometheus_server import PrometheusServer, binaries_available

UTC = timezone.utc
BERLIN_MIDNIGHT = timedelta(hours=1)  # Berlin is UTC+1 in November
FIRST = datetime(2026, 11, 1, tzinfo=UTC) - BERLIN_MIDNIGHT
GAP_START = datetime(2026, 11, 10, tzinfo=UTC) - BERLIN_MIDNIGHT
GAP_END = datetime(2026, 11, 11, tzinfo=UTC) - BERLIN_MIDNIGHT
LAST = datetime(2026, 11, 21, tzinfo=UTC) - BERLIN_MIDNIGHT
NOW = datetime(2026, 11, 21, 9, tzinfo=UTC)
DAYS = [date(2026, 11, d) for d in range(1, 21)]
KSM_STEP, DCGM_STEP = timedelta(minutes=5), timedelta(minutes=1)

POLICY = {
    "admin_channel": "C0PLATFORM",
    "schedules": {"timezone": "Europe/Berlin"},
    "pricing": {"currency": "EUR", "default_per_gpu_hour": 1.0, "models": {A100: 2.0, H100: 4.0}},
    "metrics": {
        "team_label": "team",
        "cost_center_label": "cost_center",
        "idle_threshold_percent": 5,
        "idle_window": "6h",
        "sample_interval": "5m",
    },
    "teams": {
        "research": {
            "display_name": "Research",
            "channel": "C0FRONTIER",
            "namespaces": ["ns-notebook", "ns-edge"],
            "approvers": {"users": ["U0LEE"]},
            "budget": {"monthly": 5000},
        },
        "serving": {
            "display_name": "Serving",
            "channel": "C0BIZ",
            "namespaces": ["ns-serve"],
            "approvers": {"users": ["U0MAYA"]},
            "budget": {"monthly": 20000},
        },
    },
}


def stretch(start: datetime, end: datetime) -> History:
    history = History(
        step=KSM_STEP,
        dcgm_step=DCGM_STEP,
        start=start,
        end=end,
        namespace_labels={
            "ns-notebook": {"team": "research", "cost_center": "CC-100"},
            "ns-other": {"team": "analytics", "cost_center": "CC-900"},
        },
    )
    history.pods += [
        PodRun("ns-edge", "edge", 2, "node-b", A100, start, end, 0.045, wobble=0.02),  # around the threshold
        PodRun("ns-serve", "serve", 2, "node-c", H100, start, end, 0.5, wobble=0.3, exported_labels=True),
        PodRun("ns-other", "batch", 1, "node-d", A100, start, end, 0.3, profiling=False),
    ]
    day = start
    while day < end:  # the notebook: idle 20 h, then a 4 h burst, every day (a new pod each time)
        idle_end, burst_end = min(day + timedelta(hours=20), end), min(day + timedelta(hours=24), end)
        history.pods.append(PodRun("ns-notebook", f"nb-{day:%d}", 1, "node-a", H100, day, idle_end, 0.01))
        if idle_end < burst_end:
            history.pods.append(PodRun("ns-notebook", f"burst-{day:%d}", 1, "node-a", H100, idle_end, burst_end, 0.8))
        day += timedelta(hours=24)
    return history


STRETCHES = (stretch(FIRST, GAP_START), stretch(GAP_END, LAST))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"))
    for index, history in enumerate(STRETCHES):
        server.add_blocks(history, name=f"stretch-{index}")
    server.start(max_block="1d")  # day-sized blocks, so that a 10-day retention drops whole days
    yield server
    server.stop()


@pytest.fixture(scope="module")
def policy() -> Policy:
    return parse_policy(POLICY)


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One ledger for the module: recorded by the first test, read by the others, kept across a restart."""
    url = f"sqlite:///{tmp_path_factory.mktemp('ledger')}/bot.db"
    upgrade(url)
    return url


def connect(url: str) -> PrometheusMetrics:
    # The configured interval (5 min) is right for kube-state-metrics and wrong for DCGM (1 min).
    return PrometheusMetrics.connect(url, interval=KSM_STEP, idle_threshold=0.05)


def ledger_of(policy: Policy, metrics: PrometheusMetrics | None, database_url: str) -> Ledger:
    return Ledger(policy=policy, metrics=metrics, database=Database.from_url(database_url), clock=ManualClock(NOW))


def truth(policy: Policy) -> Spend:
    """The month from the History itself: each stretch summed sample by sample, the gap day left out."""
    merged = Spend(days={}, teams={})
    for history in STRETCHES:
        part = SpendReader(policy=policy, metrics=HistoryMetrics(history, idle_threshold=0.05)).read(
            [
                day_window(d, policy.schedules.zone)
                for d in DAYS
                if history.start < day_window(d, policy.schedules.zone).end <= history.end
            ],
            at=history.end,
        )
        merged.days.update(part.days)
        merged.teams.update(part.teams)
    return merged


def within(measured: float | None, expected: float | None, tolerance: float = 0.005) -> bool:
    if measured is None or expected is None:
        return measured == expected
    return abs(measured - expected) <= tolerance * max(abs(expected), 1e-9) + 1e-6


def assert_month_matches(measured: Spend, expected: Spend) -> None:
    days = sorted(expected.days)
    got = {line.namespace: line for line in measured.lines(days)}
    want = {line.namespace: line for line in expected.lines(days)}
    assert set(got) == set(want)
    for namespace, line in want.items():
        for field in ("gpu_hours", "cost", "idle_hours", "idle_cost", "utilisation"):
            assert within(getattr(got[namespace], field), getattr(line, field)), (
                namespace,
                field,
                getattr(got[namespace], field),
                getattr(line, field),
            )


@pytest.mark.prometheus
def test_the_ledger_records_the_truth_per_sample_with_two_scrape_intervals(
    prometheus: PrometheusServer, policy: Policy, database_url: str
) -> None:
    metrics = connect(prometheus.url)
    done = ledger_of(policy, metrics, database_url).catch_up(date(2026, 11, 20))
    assert done.no_data == [date(2026, 11, 10)] and len(done.recorded) == 19
    assert metrics.spacings[date(2026, 11, 3)] == {"ksm": 300.0, "dcgm": 60.0}
    spend = SpendReader(policy=policy, metrics=metrics, ledger=ledger_of(policy, metrics, database_url)).month_through(
        date(2026, 11, 20)
    )
    assert spend.missing == [date(2026, 11, 10)]
    expected = truth(policy)
    assert_month_matches(spend, expected)
    # Per sample: the notebook is idle 20 h of every 24 (daily averages would have said 0 h).
    notebook = spend.line("ns-notebook", sorted(spend.days))
    assert notebook is not None and notebook.idle_hours == pytest.approx(19 * 20, rel=0.005)
    assert spend.teams["ns-other"] == "analytics (not managed)"
    # Recording again gives the same rows.
    before = ledger_of(policy, None, database_url).entries(date(2026, 11, 1), date(2026, 11, 20))
    ledger_of(policy, metrics, database_url).record([date(2026, 11, 5)])
    assert ledger_of(policy, None, database_url).entries(date(2026, 11, 1), date(2026, 11, 20)) == before


@pytest.mark.prometheus
def test_a_gap_day_is_reported_missing_not_zero(prometheus: PrometheusServer, policy: Policy, database_url: str) -> None:
    from bot.adapters.slack.reports import digest_report
    from bot.bootstrap import build_digest

    metrics = connect(prometheus.url)
    digest = build_digest(policy=policy, metrics=metrics, database=Database.from_url(database_url), clock=ManualClock(NOW))
    built = digest.build(date(2026, 11, 20))
    research = next(t for t in built.teams if t.team.name == "research")
    assert "No metrics for Nov 10: those days are not counted." in digest_report(research, with_chart=False).summary
    assert "No metrics for Nov 10" in digest_report(built, with_chart=False).summary
    with pytest.raises(NoMetrics, match="no metrics for Tue 10 Nov 2026"):
        digest.build(date(2026, 11, 10))


@pytest.mark.prometheus
def test_backfill_and_the_csv_export_sum_to_the_digest_month_to_date(
    prometheus: PrometheusServer, policy: Policy, tmp_path: Path
) -> None:
    from bot.bootstrap import build_digest

    url = f"sqlite:///{tmp_path}/bot.db"
    config = tmp_path / "policy.yaml"
    config.write_text(json.dumps(POLICY))
    env = {"GPU_QUOTA_CONFIG": str(config), "DATABASE_URL": url, "PROMETHEUS_URL": prometheus.url, "PATH": "/usr/bin:/bin"}
    backfill = run_bot("ledger", "backfill", "--from", "2026-11-01", "--to", "2026-11-20", env=env, timeout=300)
    assert backfill.returncode == 0, backfill.stderr
    assert "recorded 19 days from Nov 1, 2026 to Nov 20, 2026; no metrics for Nov 10" in backfill.stdout
    export = run_bot("cost", "export", "--month", "2026-11", "--format", "csv", env=env)
    assert export.returncode == 0, export.stderr
    rows = list(csv.DictReader(io.StringIO(export.stdout)))
    assert {r["cost_center"] for r in rows if r["namespace"] == "ns-other"} == {"CC-900"}
    assert {r["team"] for r in rows if r["namespace"] == "ns-serve"} == {"serving"}
    assert len({(r["day"], r["namespace"], r["gpu_model"]) for r in rows}) == len(rows)
    digest = build_digest(
        policy=policy, metrics=connect(prometheus.url), database=Database.from_url(url), clock=ManualClock(NOW)
    ).build(date(2026, 11, 20))
    month_to_date = sum(t.spent for t in digest.teams) + sum(digest.others.values())
    assert sum(float(r["cost"]) for r in rows) == pytest.approx(month_to_date, rel=1e-6)
    research = next(t for t in digest.teams if t.team.name == "research")
    assert sum(float(r["cost"]) for r in rows if r["team"] == "research") == pytest.approx(research.spent, rel=1e-6)
    as_json = run_bot("cost", "export", "--month", "2026-11", "--format", "json", env=env)
    assert len(json.loads(as_json.stdout)) == len(rows)


@pytest.mark.prometheus
def test_check_config_names_an_exporter_whose_spacing_differs_from_the_policy(
    prometheus: PrometheusServer, policy: Policy
) -> None:
    from bot.check_config import interval_problems

    assert interval_problems(connect(prometheus.url), policy, NOW - timedelta(days=2)) == [
        "metrics.sample_interval is 300s but the DCGM exporter samples every 60s in Prometheus"
    ]


class RecordingProxy:
    """Prometheus behind a proxy that notes every path and parameter the bot uses."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.calls: list[tuple[str, str, set[str]]] = []
        self._server = LoopbackServer(self._forward).start()
        self.url = self._server.url

    def _forward(self, incoming: Incoming) -> Outgoing:
        form = dict(p.split("=", 1) for p in incoming.body.decode().split("&") if "=" in p) if incoming.body else {}
        self.calls.append((incoming.method, incoming.path.split("?")[0], set(form) | set(incoming.query)))
        answer = requests.request(
            incoming.method,
            self.target + incoming.path,
            params=incoming.query,
            data=incoming.body,
            headers={"content-type": incoming.headers.get("content-type", "")},
            timeout=60,
        )
        return Outgoing(answer.status_code, answer.content, {"Content-Type": "application/json"})

    def stop(self) -> None:
        self._server.stop()


@pytest.mark.prometheus
def test_queries_use_nothing_beyond_the_prometheus_http_api(prometheus: PrometheusServer, policy: Policy, tmp_path: Path) -> None:
    """What Thanos Query, Grafana Mimir and VictoriaMetrics serve: /api/v1/query and /api/v1/query_range."""
    proxy = RecordingProxy(prometheus.url)
    try:
        url = f"sqlite:///{tmp_path}/bot.db"
        upgrade(url)
        metrics = connect(proxy.url)
        ledger = ledger_of(policy, metrics, url)
        SpendReader(policy=policy, metrics=metrics, ledger=ledger).month_so_far(NOW)
        metrics.idle_namespaces(NOW - timedelta(days=1), window=timedelta(hours=6), threshold=0.05)
        metrics.allocated_at(NOW - timedelta(days=1))
    finally:
        proxy.stop()
    assert {path for _, path, _ in proxy.calls} == {"/api/v1/query", "/api/v1/query_range"}
    assert set().union(*(params for _, _, params in proxy.calls)) <= {"query", "time", "start", "end", "step", "timeout"}


@pytest.mark.prometheus
def test_the_cost_command_answers_from_the_ledger(prometheus: PrometheusServer, policy: Policy, database_url: str) -> None:
    from bot.sandbox.session import Sandbox

    box = Sandbox(policy=policy, clock=ManualClock(NOW), metrics=connect(prometheus.url), seed=False, database_url=database_url)
    box.start()
    try:
        box.send(box.side.slash_command(user_id="U0LEE", text="cost research 2026-11"))
        answer = [r.text for r in box.slack.records if r.kind == "response"][-1]
        days, teams = ledger_of(policy, None, database_url).lines(date(2026, 11, 1), date(2026, 11, 20))
        research = sum(line.cost for per_ns in days.values() for ns, line in per_ns.items() if teams[ns] == "research")
        assert "*Research* · November 2026 (through Nov 20)" in answer
        assert f"{research:,.2f} EUR of 5,000.00 EUR" in answer
        assert "Idle (samples under the threshold)" in answer and H100 in answer and A100 in answer
        assert "No metrics for Nov 10: not counted." in answer
        box.send(box.side.slash_command(user_id="U0MAYA", text="cost ns-notebook"))
        refused = [r.text for r in box.slack.records if r.kind == "response"][-1]
        assert "Only the people of Research and admins can see its costs." in refused
    finally:
        box.stop()


@pytest.mark.prometheus
def test_the_shipped_recording_rule_gives_the_same_idle_hours(
    prometheus: PrometheusServer, policy: Policy, tmp_path: Path
) -> None:
    """promtool evaluates the chart's recording rules over the history (as Prometheus would have live)."""
    rules = Path(__file__).parents[2] / "deploy" / "helm" / "gpu-quota-bot" / "files" / "recording-rules.yaml"
    blocks = tmp_path / "rule-blocks"
    result = subprocess.run(
        [
            "promtool",
            "tsdb",
            "create-blocks-from",
            "rules",
            f"--start={int(FIRST.timestamp())}",
            f"--end={int(LAST.timestamp())}",
            f"--url={prometheus.url}",
            f"--output-dir={blocks}",
            "--eval-interval=60s",
            str(rules),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    prometheus.stop()
    for block in blocks.iterdir():
        shutil.move(str(block), prometheus.data / block.name)
    prometheus.start(max_block="1d")
    metrics = connect(prometheus.url)
    zone = policy.schedules.zone
    days = [day_window(d, zone) for d in (date(2026, 11, 3), date(2026, 11, 4))]
    assert all("rule" in spacing for spacing in metrics.sample_spacing(days).values())  # the rule is used
    url = f"sqlite:///{tmp_path}/bot.db"
    upgrade(url)
    ledger_of(policy, metrics, url).catch_up(date(2026, 11, 20))
    measured = SpendReader(policy=policy, metrics=metrics, ledger=ledger_of(policy, metrics, url)).month_through(
        date(2026, 11, 20)
    )
    expected = truth(policy)
    for namespace in ("ns-notebook", "ns-edge", "ns-serve", "ns-other"):
        got, want = measured.line(namespace, DAYS), expected.line(namespace, DAYS)
        assert got is not None and want is not None
        assert within(got.idle_hours, want.idle_hours), (namespace, got.idle_hours, want.idle_hours)


@pytest.mark.prometheus
def test_month_to_date_survives_prometheus_dropping_the_first_days(
    prometheus: PrometheusServer, policy: Policy, database_url: str
) -> None:
    """Last in the module: it restarts the shared Prometheus with a 10-day retention."""
    prometheus.stop()
    prometheus.start(retention="10d", max_block="1d")
    metrics = connect(prometheus.url)
    zone = policy.schedules.zone
    assert metrics.days_with_data([day_window(date(2026, 11, 1), zone)]) == set()  # Prometheus has dropped it
    without_ledger = SpendReader(policy=policy, metrics=metrics).month_through(date(2026, 11, 20))
    with_ledger = SpendReader(policy=policy, metrics=metrics, ledger=ledger_of(policy, metrics, database_url)).month_through(
        date(2026, 11, 20)
    )
    expected = truth(policy)
    total = sum(line.cost for line in expected.lines(sorted(expected.days)))
    assert sum(line.cost for line in without_ledger.lines(sorted(without_ledger.days))) < 0.8 * total  # what it was before
    assert_month_matches(with_ledger, expected)
