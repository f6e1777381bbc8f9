"""The shipped alert rules and dashboard panels against what a real Prometheus stores when it scrapes
the bot's ``/metrics`` (the bot's WSGI app, served over HTTP): label names as they arrive after the
scrape, each alert able to fire (``promtool test rules`` over series with the scraped label sets),
and every panel returning the series its legend names."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from prometheus_client import REGISTRY

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.slack.http import WebApp
from bot.clock import SystemClock
from bot.observability import (
    APPLIES,
    APPLY_SECONDS,
    DECISIONS,
    LEADER,
    REFUSED,
    OutboxBacklog,
    RequestStates,
    count_error,
    exposition,
)
from bot.sandbox.history import A100, H100, History, PodRun
from jobs import run_job
from tests.integration.conftest import serve
from tests.integration.processes import wait_for
from tests.prometheus_server import PrometheusServer, binaries_available, with_labels

ROOT = Path(__file__).parents[2]
RULES = ROOT / "deploy" / "helm" / "gpu-quota-bot" / "files" / "alert-rules.yaml"
DASHBOARD = ROOT / "deploy" / "grafana-dashboard.json"
SCRAPE_JOB = "gpu-quota-bot"
# The backfilled cluster metrics end here (promtool leaves the last 3 hours to the server).
HISTORY_END = datetime.fromtimestamp((datetime.now(timezone.utc) - timedelta(hours=3)).timestamp() // 300 * 300, timezone.utc)


class Outcome:
    errors = ["the Kubernetes API answered 503"]


def _fail() -> object:
    raise RuntimeError("boom")


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """A real Prometheus scraping the bot's /metrics every second, with a day of cluster metrics backfilled
    (for the cost panels)."""
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    # What a bot that has been running a while exposes: jobs that succeeded and failed, a failed apply,
    # errors talking to Kubernetes, the leadership.
    run_job("reconcile", lambda: None)
    run_job("reconcile", _fail)
    run_job("digest", lambda: None)
    run_job("budget_warnings", Outcome)
    DECISIONS.labels(verdict="approve").inc()
    APPLIES.labels(outcome="applied").inc()
    APPLIES.labels(outcome="failed").inc()
    APPLY_SECONDS.observe(0.3)
    count_error("kubernetes", "temporary")
    REFUSED.labels(interaction="command", reason="busy").inc()
    LEADER.set(1)
    workdir = tmp_path_factory.mktemp("bot")
    upgrade(f"sqlite:///{workdir}/bot.db")
    database = Database.from_url(f"sqlite:///{workdir}/bot.db")
    REGISTRY.register(request_states := RequestStates(database))  # as bot.server does
    REGISTRY.register(outbox_backlog := OutboxBacklog(database, SystemClock()))
    url, http = serve(WebApp(None, metrics=exposition))  # type: ignore[arg-type]  # no Slack route needed
    step = timedelta(minutes=5)
    end = HISTORY_END
    start = end - timedelta(days=2)
    history = History(
        step=step,
        start=start,
        end=end,
        pods=[
            PodRun("ai-frontier-research", "train", 2, "n1", A100, start, end, 0.6),
            PodRun("biz-model-serving", "serve", 4, "n2", H100, start, end, 0.4),
        ],
        namespace_labels={"ai-frontier-research": {"team": "frontier"}, "biz-model-serving": {"team": "business"}},
    )
    # A second cluster in the same Prometheus (a Thanos or Mimir), its namespace of the same name told apart by the label.
    elsewhere = History(
        step=step,
        start=start,
        end=end,
        pods=[PodRun("ai-frontier-research", "train", 1, "n1", A100, start, end, 0.6)],
        namespace_labels={"ai-frontier-research": {"team": "frontier"}},
    )
    target = url.removeprefix("http://")
    config = (
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: {SCRAPE_JOB}\n    static_configs:\n      - targets: ['{target}']\n"
    )
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"))
    server.add_openmetrics(with_labels(history, {"cluster": "eu-1"}), name="eu-1")
    server.add_openmetrics(with_labels(elsewhere, {"cluster": "us-2"}), name="us-2")
    server.start(config_text=config)
    # Enough scrapes that every range in the panels ([1m]) holds several samples.
    wait_for(lambda: scrapes(server) >= 5, timeout=60, what="five scrapes of the bot")
    yield server
    server.stop()
    http.close()
    REGISTRY.unregister(request_states)
    REGISTRY.unregister(outbox_backlog)
    LEADER.set(0)  # the process-wide gauge, as the other tests expect it
    database.dispose()


def scrapes(server: PrometheusServer) -> float:
    result = instant(server, "count_over_time(gpu_quota_leader[1m])")
    return float(result[0]["value"][1]) if result else 0.0


def instant(server: PrometheusServer, query: str, at: datetime | None = None) -> list[dict[str, Any]]:
    params = {"query": query} | ({"time": str(at.timestamp())} if at else {})
    response = requests.get(f"{server.url}/api/v1/query", params=params, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["data"]["result"]


def series(server: PrometheusServer, name: str) -> list[dict[str, str]]:
    response = requests.get(f"{server.url}/api/v1/series", params={"match[]": name}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def one(server: PrometheusServer, name: str, **labels: str) -> dict[str, str]:
    found = [s for s in series(server, name) if all(s.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, f"{name}{labels}: scraped {series(server, name)}"
    return found[0]


@pytest.mark.prometheus
def test_the_scraped_job_label_is_the_scrape_job_and_the_bot_job_survives_as_task(scraped: PrometheusServer) -> None:
    for family in ("gpu_quota_job_runs_total", "gpu_quota_job_last_success_timestamp_seconds", "gpu_quota_job_seconds_count"):
        for labels in series(scraped, family):
            assert "exported_job" not in labels, labels  # Prometheus renamed a bot label: no rule would match it
            assert labels["job"] == SCRAPE_JOB and labels["task"]
    # Other tests in the same process may have run more tasks through the process-wide registry.
    assert {"reconcile", "digest", "budget_warnings"} <= {s["task"] for s in series(scraped, "gpu_quota_job_runs_total")}


def _rule_test(scraped: PrometheusServer) -> dict[str, Any]:
    """``promtool test rules`` input: the scraped series (their labels exactly as stored) with values over
    20 minutes that make every alert fire, the same series healthy, and a bot that is not scraped at all."""
    failing_job = one(scraped, "gpu_quota_job_runs_total", task="reconcile", outcome="error")
    stale = one(scraped, "gpu_quota_job_last_success_timestamp_seconds", task="reconcile")
    failed_apply = one(scraped, "gpu_quota_applies_total", outcome="failed")
    errors = one(scraped, "gpu_quota_errors_total", system="kubernetes", kind="temporary")
    leader = one(scraped, "gpu_quota_leader")
    dead = one(scraped, "gpu_quota_outbox_entries", state="dead", channel="slack")
    waiting = one(scraped, "gpu_quota_outbox_oldest_pending_seconds", channel="slack")
    mail_dead = one(scraped, "gpu_quota_outbox_entries", state="dead", channel="mail")
    mail_waiting = one(scraped, "gpu_quota_outbox_oldest_pending_seconds", channel="mail")
    refused = one(scraped, "gpu_quota_refused_total", interaction="command", reason="busy")

    def text(labels: dict[str, str]) -> str:
        name = labels["__name__"]
        return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__") + "}"

    def without_name(labels: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in labels.items() if k != "__name__"}

    rules = {r["alert"]: r for group in yaml.safe_load(RULES.read_text())["groups"] for r in group["rules"]}

    def fires(name: str, labels: dict[str, str], value: str = "") -> dict[str, Any]:
        """The alert ``name`` firing with ``labels``: the rule's own labels added, its annotations filled in."""

        def fill(template: str) -> str:
            template = re.sub(r"\{\{ \$value \| humanize(Duration)? \}\}", value, template)
            return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], template)

        annotations = {key: fill(text) for key, text in rules[name]["annotations"].items()}
        return {
            "eval_time": "20m",
            "alertname": name,
            "exp_alerts": [{"exp_labels": labels | rules[name]["labels"], "exp_annotations": annotations}],
        }

    failing = {
        "interval": "1m",
        "input_series": [
            {"series": text(leader), "values": "0x30"},
            {"series": text(failing_job), "values": "0+1x30"},
            {"series": text(stale), "values": "0x30"},  # last success at the epoch: long ago
            {"series": text(failed_apply), "values": "0+1x30"},
            {"series": text(errors), "values": "0+600x30"},  # 10 errors a second
            {"series": text(dead), "values": "0x10 1x20"},  # Slack refused one message for good at 10 min
            {"series": text(waiting), "values": "0+120x30"},  # nothing delivered: the oldest ages
            {"series": text(mail_dead), "values": "0x10 1x20"},  # the mail server refused a recipient for good
            {"series": text(mail_waiting), "values": "0+300x30"},  # the mail server down: the oldest mail ages
            {"series": text(refused), "values": "0+1x30"},  # a command refused every minute
        ],
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "GpuQuotaBotDown", "exp_alerts": []},
            fires("GpuQuotaBotNoLeader", {}),
            fires("GpuQuotaApplyFailures", without_name(failed_apply), value="20"),
            fires("GpuQuotaJobFailing", without_name(failing_job)),
            fires("GpuQuotaReconcileStale", {}),
            fires("GpuQuotaBotErrors", {"system": "kubernetes"}),
            fires("GpuQuotaSlackUndeliverable", {}),
            fires("GpuQuotaSlackBacklog", {}, value="40m 0s"),  # 20 min x 120 s a minute
            fires("GpuQuotaMailUndeliverable", {}),
            fires("GpuQuotaMailBacklog", {}, value="1h 40m 0s"),  # 20 min x 300 s a minute
            fires("GpuQuotaBotRefusing", {"interaction": "command", "reason": "busy"}, value="10"),
        ],
    }
    # The alert that matters most, spelled out: it names the bot's failing job, not the scrape job.
    job_failing = failing["alert_rule_test"][3]["exp_alerts"][0]  # type: ignore[index]
    assert job_failing["exp_labels"]["task"] == "reconcile"
    assert job_failing["exp_annotations"]["summary"] == "gpu-quota-bot job reconcile is failing"
    healthy = {
        "interval": "1m",
        "input_series": [
            {"series": text(leader), "values": "1x30"},
            {"series": text(failing_job), "values": "3x30"},
            {"series": text(stale), "values": "0+60x30"},  # succeeds every minute (value = the time)
            {"series": text(failed_apply), "values": "1x30"},
            {"series": text(errors), "values": "2x30"},
            {"series": text(dead), "values": "2x30"},  # old dead entries, none new
            {"series": text(waiting), "values": "0x30"},
            {"series": text(mail_dead), "values": "1x30"},  # an old dead mail, none new
            {"series": text(mail_waiting), "values": "0x30"},
            {"series": text(refused), "values": "4x30"},  # refused long ago, none since
        ],
        "alert_rule_test": [{"eval_time": "20m", "alertname": name, "exp_alerts": []} for name in rules],
    }
    down = {
        "interval": "1m",
        "input_series": [{"series": f'up{{job="{SCRAPE_JOB}",instance="{leader["instance"]}"}}', "values": "0x30"}],
        "alert_rule_test": [fires("GpuQuotaBotDown", {})],
    }
    return {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [failing, healthy, down]}


@pytest.mark.prometheus
def test_every_alert_fires_on_the_scraped_series_and_names_the_failing_bot_job(scraped: PrometheusServer, tmp_path: Path) -> None:
    spec = tmp_path / "rules-test.yaml"
    spec.write_text(yaml.safe_dump(_rule_test(scraped), sort_keys=False))
    result = subprocess.run(["promtool", "test", "rules", str(spec)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def _expression(expr: str, *, cluster: str = ".*") -> str:
    """A panel's query with the dashboard's variables as Grafana would fill them here (``cluster``: the clusters
    chosen, All by default)."""
    values = {
        "$__rate_interval": "1m",
        "$job": f".*{SCRAPE_JOB}.*",
        "$sample_interval": "300",  # the backfilled history's step
        "$price": "0.95",
        "$team_label": "team",
        "$cluster_label": "cluster",  # before $cluster, which it begins with
        "$cluster": cluster,
    }
    for name, value in values.items():
        expr = expr.replace(name, value)
    return expr


def _legend(template: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), "<missing " + m.group(1) + ">"), template)


def panel_legends(server: PrometheusServer, *, cluster: str = ".*") -> dict[str, set[str]]:
    """Each panel's legends as Grafana shows them with the clusters ``cluster`` chosen."""
    panels = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]
    legends: dict[str, set[str]] = {}
    for panel in panels:
        shown: set[str] = set()
        for target in panel["targets"]:
            # The bot's series are scraped now; the cluster's last backfilled sample is one step before HISTORY_END.
            at = HISTORY_END - timedelta(minutes=5) if "kube_" in target["expr"] else None
            result = instant(server, _expression(target["expr"], cluster=cluster), at)
            assert result, f"panel {panel['title']!r}: {target['expr']} returns nothing"
            template = _expression(target["legendFormat"])
            for item in result:
                legend = _legend(template, item["metric"])
                assert "<missing" not in legend, f"panel {panel['title']!r}: {legend} from {item['metric']}"
                shown.add(legend)
        legends[panel["title"]] = shown
    return legends


@pytest.mark.prometheus
def test_every_dashboard_panel_shows_its_series_on_a_real_scrape(scraped: PrometheusServer) -> None:
    legends = panel_legends(scraped)
    # One line per bot job, not one per scrape job.
    assert {"reconcile ok", "reconcile error", "digest ok", "budget_warnings error"} <= legends["Job runs"]
    assert {"reconcile", "digest"} <= legends["Since each job last succeeded"]
    assert legends["GPU-hours allocated per namespace and cluster (last 24 h, as in the digest)"] == {
        "eu-1 ai-frontier-research",
        "eu-1 biz-model-serving",
        "us-2 ai-frontier-research",
    }
    assert legends["Daily GPU cost per team (at $price per GPU-hour)"] == {"frontier", "business"}


@pytest.mark.prometheus
def test_the_dashboards_cluster_variable_filters_the_cost_panels(scraped: PrometheusServer) -> None:
    legends = panel_legends(scraped, cluster="us-2")
    assert legends["GPU-hours allocated per namespace and cluster (last 24 h, as in the digest)"] == {"us-2 ai-frontier-research"}
    assert legends["Daily GPU cost per team (at $price per GPU-hour)"] == {"frontier"}
    us_only = instant(
        scraped,
        _expression(json.loads(DASHBOARD.read_text())["panels"][-1]["targets"][0]["expr"], cluster="us-2"),
        HISTORY_END - timedelta(minutes=5),
    )
    # us-2's one A100 over a day's range (Prometheus 2.x holds both ends: 289 samples), not eu-1's six GPUs.
    assert float(us_only[0]["value"][1]) == pytest.approx(289 * 300 / 3600 * 0.95)
