"""GPU usage from Prometheus (kube-state-metrics + NVIDIA DCGM exporter) with prometheus-api-client.

Every measure is ONE aggregated query over all namespaces (``sum by (namespace) ...``); the number of
queries depends on the number of distinct window lengths asked for, never on the cluster's size.

GPU-hours are sums of samples times the sample step over a subquery with a fixed resolution, not
``avg_over_time * 24`` (which is wrong for pods that lived part of the day). Each window
[start, end) is evaluated at ``end - 1s`` with a range of exactly ``end - start``: the subquery's
points are then start, start+step, ..., end-step, each standing for one step, the same on
Prometheus 2.x (range includes both ends) and 3.x (left end excluded).

DCGM series name the pod's namespace ``namespace`` or, behind a ServiceMonitor with
``honorLabels: false``, ``exported_namespace``: both are accepted. Utilisation is
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0-1) per GPU, falling back to ``DCGM_FI_DEV_GPU_UTIL`` / 100 for
GPUs without the profiling metric.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from bot.domain.costs import NamespaceUsage, Window
from bot.errors import PermanentError, TemporaryError

log = logging.getLogger(__name__)

ALLOCATED = (
    'sum by (namespace, pod) (kube_pod_container_resource_requests{resource="nvidia_com_gpu", unit="integer", node!=""})'
    ' * on (namespace, pod) group_left () (max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1)'
)


def dcgm(metric: str) -> str:
    """A DCGM metric with the pod's namespace in ``namespace``, whichever spelling was scraped."""
    return (
        f'label_replace({metric}{{exported_namespace!=""}}, "namespace", "$1", "exported_namespace", "(.+)")'
        f' or {metric}{{exported_namespace=""}}'
    )


UTILISATION = f'(({dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE")}) * 1) or (({dcgm("DCGM_FI_DEV_GPU_UTIL")}) / 100)'


def allocated_hours_query(seconds: int, step: int) -> str:
    return f"sum by (namespace) (sum_over_time(({ALLOCATED})[{seconds}s:{step}s])) * {step} / 3600"


def dcgm_hours_query(seconds: int, step: int, idle_threshold: float) -> str:
    """GPU-hours DCGM saw, idle GPU-hours and utilisation-hours, by namespace and model, in one query."""
    window = f"[{seconds}s:{step}s]"
    scale = f"* {step} / 3600"
    return (
        f'label_replace(sum by (namespace, modelName) (count_over_time(({UTILISATION}){window})) {scale}, "measure", "hours", "", "")'
        f' or label_replace(sum by (namespace, modelName) (sum_over_time((({UTILISATION}) < bool {idle_threshold}){window})) {scale},'
        f' "measure", "idle_hours", "", "")'
        f' or label_replace(sum by (namespace, modelName) (sum_over_time(({UTILISATION}){window})) {scale}, "measure", "util_hours", "", "")'
    )


def idle_query(window: int, step: int, threshold: float) -> str:
    points = window // step
    return (
        f"(max by (namespace) (max_over_time(({UTILISATION})[{window}s:{step}s])) < {threshold})"
        f" and on (namespace) (count_over_time((sum by (namespace) ({ALLOCATED}))[{window}s:{step}s]) >= {points})"
    )


class PrometheusMetrics:
    """Implements ``MetricsSource``; ``queries`` counts the HTTP queries issued (for the benchmark)."""

    def __init__(self, client: PrometheusConnect, *, step: timedelta, idle_threshold: float, timeout: float = 30.0) -> None:
        self._client = client
        self._step = int(step.total_seconds())
        self._idle_threshold = idle_threshold
        self._timeout = timeout
        self.queries = 0

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        step: timedelta,
        idle_threshold: float,
        bearer_token: str | None = None,
        basic_auth: tuple[str, str] | None = None,
        ca_bundle: Path | None = None,
        timeout: float = 30.0,
    ) -> PrometheusMetrics:
        session = requests.Session()
        session.verify = str(ca_bundle) if ca_bundle else True
        headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else None
        retry = Retry(total=2, backoff_factor=0.5, status_forcelist=(429, 502, 503, 504), allowed_methods=("GET", "POST"))
        session.mount(url, HTTPAdapter(max_retries=retry))
        client = PrometheusConnect(url=url, headers=headers, auth=basic_auth, session=session, timeout=timeout, method="POST")
        return cls(client, step=step, idle_threshold=idle_threshold, timeout=timeout)

    # --- MetricsSource -----------------------------------------------------------------------

    def usage(self, windows: Sequence[Window]) -> dict[date, dict[str, NamespaceUsage]]:
        allocated: dict[date, dict[str, float]] = {}
        dcgm_rows: dict[date, list[tuple[dict[str, str], float]]] = {}
        for run in _runs_of_equal_length(windows):
            seconds = run[0].seconds
            for day, metric, value in self._per_window(allocated_hours_query(seconds, self._step), run):
                allocated.setdefault(day, {})[metric.get("namespace", "")] = value
            for day, metric, value in self._per_window(dcgm_hours_query(seconds, self._step, self._idle_threshold), run):
                dcgm_rows.setdefault(day, []).append((metric, value))
        return {w.day: _usage_of(allocated.get(w.day, {}), dcgm_rows.get(w.day, [])) for w in windows}

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        rows = self._instant(f"sum by (namespace) ({ALLOCATED})", at=moment)
        return {metric.get("namespace", ""): value for metric, value in rows if value > 0}

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        rows = self._instant(idle_query(int(window.total_seconds()), self._step, threshold), at=moment)
        return {metric.get("namespace", ""): value for metric, value in rows}

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        name = "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)
        rows = self._instant(f'max by (namespace, {name}) (kube_namespace_labels{{{name}!=""}})', at=moment)
        return {metric["namespace"]: metric[name] for metric, _ in rows if "namespace" in metric and name in metric}

    # --- queries -----------------------------------------------------------------------------

    def _per_window(self, query: str, run: Sequence[Window]) -> list[tuple[date, dict[str, str], float]]:
        """Evaluate ``query`` at each window's ``end - 1s``: one instant query, or one range query for a run."""
        if len(run) == 1:
            return [(run[0].day, metric, value) for metric, value in self._instant(query, at=_eval_time(run[0]))]
        by_time = {int(_eval_time(w).timestamp()): w.day for w in run}
        result = self._call(
            lambda: self._client.custom_query_range(
                query, start_time=_eval_time(run[0]), end_time=_eval_time(run[-1]), step=str(86400),
                params={"timeout": f"{int(self._timeout)}s"},
            )
        )
        rows = []
        for series in result:
            for stamp, raw in series.get("values", []):
                value = _number(raw)
                day = by_time.get(int(float(stamp)))
                if value is not None and day is not None:
                    rows.append((day, series.get("metric", {}), value))
        return rows

    def _instant(self, query: str, *, at: datetime) -> list[tuple[dict[str, str], float]]:
        params = {"timeout": f"{int(self._timeout)}s", "time": str(int(at.timestamp()))}
        result = self._call(lambda: self._client.custom_query(query, params=params))
        rows = []
        for series in result:
            value = _number(series.get("value", [0, "NaN"])[1])
            if value is not None:
                rows.append((series.get("metric", {}), value))
        return rows

    def _call(self, query: Any) -> list[dict[str, Any]]:
        self.queries += 1
        try:
            return query() or []
        except PrometheusApiClientException as error:
            status = _status_of(str(error))
            if status in (400, 422):
                raise PermanentError(f"Prometheus rejected a query (HTTP {status}): {_short(str(error))}") from None
            raise TemporaryError(f"Prometheus answered HTTP {status or '?'}: {_short(str(error))}", delay=30) from None
        except requests.RequestException as error:
            raise TemporaryError(f"Prometheus did not answer ({type(error).__name__})", delay=30) from None


def _runs_of_equal_length(windows: Sequence[Window]) -> list[list[Window]]:
    """Consecutive windows of the same length, each a run one range query can answer (DST days stand alone)."""
    runs: list[list[Window]] = []
    for window in sorted(windows, key=lambda w: w.start):
        last = runs[-1][-1] if runs else None
        if last is not None and last.seconds == window.seconds and window.end - last.end == timedelta(seconds=86400):
            runs[-1].append(window)
        else:
            runs.append([window])
    return runs


def _eval_time(window: Window) -> datetime:
    return (window.end - timedelta(seconds=1)).astimezone(timezone.utc)


def _usage_of(allocated: dict[str, float], rows: list[tuple[dict[str, str], float]]) -> dict[str, NamespaceUsage]:
    hours: dict[str, dict[str, float]] = {}
    idle: dict[str, dict[str, float]] = {}
    util: dict[str, float] = {}
    for metric, value in rows:
        namespace, model = metric.get("namespace", ""), metric.get("modelName") or "unknown model"
        measure = metric.get("measure")
        if measure == "hours":
            hours.setdefault(namespace, {})[model] = value
        elif measure == "idle_hours":
            idle.setdefault(namespace, {})[model] = value
        elif measure == "util_hours":
            util[namespace] = util.get(namespace, 0.0) + value
    namespaces = set(allocated) | set(hours)
    return {
        ns: NamespaceUsage(allocated.get(ns, 0.0), hours.get(ns, {}), idle.get(ns, {}), util.get(ns, 0.0)) for ns in namespaces
    }


def _number(raw: Any) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) or math.isinf(value) else value


def _status_of(message: str) -> int | None:
    match = re.search(r"HTTP Status Code (\d+)", message)
    return int(match.group(1)) if match else None


def _short(message: str) -> str:
    match = re.search(r'"error":"([^"]+)"', message)
    return match.group(1) if match else message[:200]
