"""Writes deploy/grafana-dashboard.json: the bot's own health, and GPU cost per team from the same
PromQL the digest uses (bot.adapters.prometheus), of the clusters chosen in the ``cluster`` variable
(their ``$cluster_label``, the policy's metrics.cluster_label; a series without it, a home cluster's
own, counts under All). Run it after changing either; a test checks the committed file is up to date.

    .venv/bin/python scripts/dashboard.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.adapters.prometheus import running_gpu_samples  # noqa: E402

TARGET = Path(__file__).resolve().parents[1] / "deploy" / "grafana-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
CLUSTER = "$cluster_label"
# The clusters chosen: a filter for ``and on (CLUSTER)`` (All is ".*", which the empty value matches too).
CHOSEN = f'count by ({CLUSTER}) (kube_pod_status_phase{{{CLUSTER}=~"$cluster"}})'
# The digest's allocated GPU-hours per cluster and namespace over one day, as Grafana evaluates it at each point.
DAILY_GPU_HOURS = (
    f"sum by ({CLUSTER}, namespace) ({running_gpu_samples(86400, by=(CLUSTER,))}) * $sample_interval / 3600"
    f" and on ({CLUSTER}) {CHOSEN}"
)


def panel(
    panel_id: int,
    title: str,
    kind: str,
    targets: list[tuple[str, str]],
    grid: tuple[int, int, int, int],
    unit: str = "short",
    stack: bool = False,
) -> dict[str, Any]:
    x, y, w, h = grid
    return {
        "id": panel_id,
        "title": title,
        "type": kind,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {
            "defaults": {"unit": unit, "custom": {"stacking": {"mode": "normal" if stack else "none"}}},
            "overrides": [],
        },
        "targets": [
            {"refId": chr(65 + i), "expr": expr, "legendFormat": legend, "datasource": DATASOURCE}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def dashboard() -> dict[str, Any]:
    health = [
        panel(
            1,
            "Replicas and leader",
            "stat",
            [('sum(up{job=~"$job"})', "replicas up"), ("max(gpu_quota_leader)", "leader")],
            (0, 0, 6, 5),
        ),
        panel(
            2,
            "Requests by state",
            "timeseries",
            [("sum by (state) (max by (state, instance) (gpu_quota_requests))", "{{state}}")],
            (6, 0, 9, 8),
        ),
        panel(
            3,
            "Decisions",
            "timeseries",
            [("sum by (verdict) (increase(gpu_quota_decisions_total[$__rate_interval]))", "{{verdict}}")],
            (15, 0, 9, 8),
        ),
        panel(
            4,
            "Apply latency",
            "timeseries",
            [
                ("histogram_quantile(0.5, sum by (le) (rate(gpu_quota_apply_seconds_bucket[$__rate_interval])))", "p50"),
                ("histogram_quantile(0.95, sum by (le) (rate(gpu_quota_apply_seconds_bucket[$__rate_interval])))", "p95"),
            ],
            (0, 8, 8, 8),
            unit="s",
        ),
        panel(
            5,
            "Applies by outcome",
            "timeseries",
            [("sum by (outcome) (increase(gpu_quota_applies_total[$__rate_interval]))", "{{outcome}}")],
            (8, 8, 8, 8),
        ),
        panel(
            6,
            "Errors by system and kind",
            "timeseries",
            [("sum by (system, kind) (rate(gpu_quota_errors_total[$__rate_interval]))", "{{system}} {{kind}}")],
            (16, 8, 8, 8),
            unit="reqps",
        ),
        panel(
            7,
            "Job runs",
            "timeseries",
            [("sum by (task, outcome) (increase(gpu_quota_job_runs_total[$__rate_interval]))", "{{task}} {{outcome}}")],
            (0, 16, 12, 8),
        ),
        panel(
            8,
            "Since each job last succeeded",
            "stat",
            [("time() - max by (task) (gpu_quota_job_last_success_timestamp_seconds)", "{{task}}")],
            (12, 16, 12, 8),
            unit="s",
        ),
    ]
    cost = [
        panel(
            9,
            "GPU-hours allocated per namespace and cluster (last 24 h, as in the digest)",
            "timeseries",
            # The chosen label copied to "cluster", the one the legend can name whatever the label is.
            [(f'label_replace({DAILY_GPU_HOURS}, "cluster", "$1", "{CLUSTER}", "(.*)")', "{{cluster}} {{namespace}}")],
            (0, 25, 12, 9),
        ),
        panel(
            10,
            "Daily GPU cost per team (at $price per GPU-hour)",
            "timeseries",
            [
                (
                    f"sum by (label_$team_label) (({DAILY_GPU_HOURS}) * on ({CLUSTER}, namespace) group_left (label_$team_label) "
                    f"max by ({CLUSTER}, namespace, label_$team_label) (kube_namespace_labels)) * $price",
                    "{{label_$team_label}}",
                )
            ],
            (12, 25, 12, 9),
            unit="currencyUSD",
            stack=True,
        ),
    ]
    return {
        "title": "gpu-quota-bot",
        "uid": "gpu-quota-bot",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-7d", "to": "now"},
        "refresh": "1m",
        "tags": ["gpu", "quota", "cost"],
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
                {
                    "name": "job",
                    "type": "custom",
                    "query": ".*gpu-quota-bot.*",
                    "current": {"text": ".*gpu-quota-bot.*", "value": ".*gpu-quota-bot.*"},
                },
                {
                    "name": "sample_interval",
                    "type": "constant",
                    "query": "30",
                    "label": "scrape interval (s) of kube-state-metrics",
                },
                {"name": "price", "type": "textbox", "query": "0.95", "label": "price per GPU-hour"},
                {"name": "team_label", "type": "textbox", "query": "team", "label": "namespace label naming the team"},
                {
                    "name": "cluster_label",
                    "type": "textbox",
                    "query": "cluster",
                    "label": "label naming the cluster (metrics.cluster_label)",
                },
                {
                    "name": "cluster",
                    "type": "query",
                    "label": "cluster",
                    "datasource": DATASOURCE,
                    "query": {"query": f"label_values(kube_pod_status_phase, {CLUSTER})", "refId": "clusters"},
                    "definition": f"label_values(kube_pod_status_phase, {CLUSTER})",
                    "refresh": 2,
                    "multi": True,
                    "includeAll": True,
                    "allValue": ".*",
                    "current": {"text": "All", "value": "$__all"},
                },
            ]
        },
        "panels": [
            {
                "id": 100,
                "type": "row",
                "title": "The bot",
                "gridPos": {"x": 0, "y": 0, "w": 24, "h": 1},
                "collapsed": False,
                "panels": [],
            },
            *health,
            {
                "id": 101,
                "type": "row",
                "title": "GPU cost (the digest's queries)",
                "gridPos": {"x": 0, "y": 24, "w": 24, "h": 1},
                "collapsed": False,
                "panels": [],
            },
            *cost,
        ],
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render())
    print(f"wrote {TARGET}")
