"""``gpu-quota-bot digest`` in real processes against a real Prometheus: only true figures reach Slack,
only for finished days the metrics hold, and every problem is one line (issue 8, items 7, 8 and 9)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.adapters.slack.reports import digest_report
from bot.clock import ManualClock
from bot.domain.policy import Policy
from bot.services.spend import SpendReader
from tests.integration.processes import free_port, run_bot, run_env
from tests.integration.test_prometheus import POLICY, FlakyProxy, make_sandbox, policy, prometheus, proxy, truth  # noqa: F401
from tests.prometheus_server import PrometheusServer

UTC = timezone.utc


def digest_env(tmp_path: Path, stand_ins: tuple, prometheus_url: str | None) -> dict[str, str]:
    slack, kube = stand_ins
    config = tmp_path / "policy.yaml"
    config.write_text(json.dumps(POLICY))  # JSON is YAML
    env = run_env(tmp_path, slack, kube, GPU_QUOTA_CONFIG=str(config))
    env.pop("PROMETHEUS_URL", None)
    if prometheus_url:
        env["PROMETHEUS_URL"] = prometheus_url
    return env


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def files(stand_ins: tuple) -> set[str]:
    return {r.channel for r in stand_ins[0].records if r.kind == "file"}


@pytest.mark.prometheus
def test_digest_post_never_posts_sandbox_figures(tmp_path: Path, stand_ins: tuple, prometheus: PrometheusServer) -> None:  # noqa: F811
    refused = run_bot("digest", "--post", "--date", "2026-11-02", env=digest_env(tmp_path, stand_ins, None), timeout=120)
    assert refused.returncode == 2 and "PROMETHEUS_URL" in one_line(refused.stderr)
    assert files(stand_ins) == set()
    env = digest_env(tmp_path, stand_ins, prometheus.url)
    first = run_bot("digest", "--post", "--date", "2026-11-02", env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "posted the digests of Nov 2, 2026: research, serving, and the organisation summary" in first.stdout
    assert files(stand_ins) == {"C0FRONTIER", "C0BIZ", "C0PLATFORM"}
    again = run_bot("digest", "--post", "--date", "2026-11-02", env=env, timeout=120)
    assert "nothing new (already posted)" in again.stdout


@pytest.mark.prometheus
@pytest.mark.parametrize("mode", ["--print", "--post"])
def test_digest_refuses_days_not_over_yet(tmp_path: Path, stand_ins: tuple, prometheus: PrometheusServer, mode: str) -> None:  # noqa: F811
    env = digest_env(tmp_path, stand_ins, prometheus.url)
    today = datetime.now(ZoneInfo("Europe/Berlin")).date()
    for day in (today, today + timedelta(days=400)):
        result = run_bot("digest", mode, "--date", day.isoformat(), "--chart-dir", str(tmp_path), env=env, timeout=120)
        assert result.returncode == 2 and "only for finished days" in one_line(result.stderr)
    assert files(stand_ins) == set() and not list(tmp_path.glob("*.png"))


@pytest.mark.prometheus
@pytest.mark.parametrize("mode", ["--print", "--post"])
def test_a_day_prometheus_does_not_hold_is_no_metrics_not_zero(
    tmp_path: Path,
    stand_ins: tuple,
    prometheus: PrometheusServer,  # noqa: F811
    mode: str,
) -> None:
    env = digest_env(tmp_path, stand_ins, prometheus.url)
    result = run_bot("digest", mode, "--date", "2026-10-05", "--chart-dir", str(tmp_path), env=env, timeout=120)
    assert result.returncode == 1 and "no metrics for Mon 05 Oct 2026" in one_line(result.stderr)
    assert files(stand_ins) == set()


@pytest.mark.prometheus
def test_digest_with_prometheus_down_is_one_line(tmp_path: Path, stand_ins: tuple) -> None:
    env = digest_env(tmp_path, stand_ins, f"http://127.0.0.1:{free_port()}")
    result = run_bot("digest", "--print", "--date", "2026-11-02", "--chart-dir", str(tmp_path), env=env, timeout=120)
    assert result.returncode == 1 and "Prometheus did not answer" in one_line(result.stderr)


@pytest.mark.prometheus
def test_the_summary_day_covers_the_namespaces_its_month_covers(policy: Policy, proxy: FlakyProxy) -> None:  # noqa: F811
    box = make_sandbox(policy, proxy, ManualClock(datetime(2026, 11, 3, 8, tzinfo=UTC)))
    try:
        digest = box.services.digest
        summary = digest_report(digest.build(date(2026, 11, 2)), with_chart=False).summary
        expected = SpendReader(policy=policy, metrics=truth(policy)).month_through(date(2026, 11, 2))
        day = sum(line.cost for line in expected.lines([date(2026, 11, 2)]))  # ns-other (unmanaged) included
        yesterday = float(summary.split("Yesterday ")[1].split(" ")[0].replace(",", ""))
        assert yesterday == pytest.approx(day, rel=0.01)
    finally:
        box.stop()
