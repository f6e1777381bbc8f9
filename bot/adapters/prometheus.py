"""GPU usage from Prometheus (kube-state-metrics + NVIDIA DCGM exporter) with prometheus-api-client.

Every measure is ONE aggregated query over all namespaces (``sum by (namespace) ...``) per run of
days; the number of queries depends on the calendar (weeks, DST days), never on the cluster's size.

GPU-hours are sums of samples times the sample spacing, never ``avg_over_time * 24`` (wrong for
pods that lived part of the day). Sums run over raw range vectors, so Prometheus reads each sample
once; a subquery with a fixed resolution would re-evaluate the pod join at every point and costs
minutes on a large cluster (see bench/digest_scale.py).

The spacing of each exporter is measured for each day from the samples themselves, never from a count
over a fixed length: the median difference between consecutive timestamps within each of its
``SPACING_SAMPLE_SERIES`` series with the most samples that day (``spacing_query`` names them; one
instant query per exporter and run reads their raw samples; ``median_spacing``). So the two exporters
may be scraped at different intervals, and a day whose data starts late, stops early or has a gap is
measured right. An exporter with samples but no series of at least 4 samples that day
(``MIN_SPACING_DIFFERENCES``) is counted at the policy's ``metrics.sample_interval``, said in a
warning, and the ledger keeps no spacing of it for that day (``spacings`` holds measured values only).
These reads touch a bounded number of series whatever the cluster's size: per run, 1 + 2 queries
(3 with the recording rule, which only idle hours need).

A window [start, end) is evaluated at ``end - 1s`` with a range of exactly ``end - start``, so a
sample at a midnight belongs to the day it starts, on Prometheus 2.x and 3.x alike.

Allocated GPUs: running samples of each pod (``kube_pod_status_phase{phase="Running"}`` is 1 while
it runs, 0 otherwise) times the GPUs its containers request on a node, by resource: the governed
resources (``resources``: whole GPUs ``nvidia.com/gpu`` by default, MIG profiles, ``amd.com/gpu``...)
selected by their exact kube-state-metrics spelling (``nvidia_com_mig_3g_40gb``) in one query. DCGM
labels a MIG instance's series with ``GPU_I_PROFILE`` (``3g.40gb``) and ``GPU_I_ID``, with the parent
GPU's ``modelName``; a whole GPU's series has no (or an empty) ``GPU_I_PROFILE``. The DCGM measures are
grouped by it too: a MIG instance counts slice-hours of its profile's resource, never GPU-hours. MIG
instances have no ``DCGM_FI_DEV_GPU_UTIL`` (NVIDIA/dcgm-exporter#216): their samples are counted from the
profiling metric. Nothing groups or joins on the exporter's host label, which newer exporters spell
``hostname`` and older ones ``Hostname`` (NVIDIA/dcgm-exporter#655): both count alike. DCGM series name the pod's
namespace ``namespace`` or, behind a ServiceMonitor with ``honorLabels: false``, ``exported_namespace``:
``label_replace`` takes the exported one when present. Utilisation is
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0-1) per GPU, falling back to ``DCGM_FI_DEV_GPU_UTIL`` / 100 for
GPUs without the profiling metric. Idle GPU-hours are the hours of GPUs whose average utilisation in
the window stayed under the threshold.

Idle GPU-hours are counted per sample: the DCGM samples under the idle threshold (a subquery at the
DCGM spacing over each utilisation metric, the one place a per-sample filter needs one), times the spacing.
Where the shipped recording rule ``gpu_quota:gpu_idle:bool`` runs with the policy's threshold and
covers the whole day, its evaluations are summed instead (a plain range function, much cheaper).
Only the Prometheus HTTP API and standard PromQL are used, so Thanos Query, Grafana Mimir and
VictoriaMetrics answer the same queries.
"""

from __future__ import annotations

import json
import logging
import math
import re
import statistics
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from bot.domain.costs import NamespaceUsage, Window
from bot.domain.resources import GPU, metrics_label, mig_resource
from bot.errors import PermanentError, TemporaryError
from bot.observability import count_error

log = logging.getLogger(__name__)

RUNNING = 'kube_pod_status_phase{phase="Running"}'
PROF = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
DEV = "DCGM_FI_DEV_GPU_UTIL"
MIG_PROFILE = "GPU_I_PROFILE"  # DCGM's label of a MIG instance's profile ("3g.40gb"); none on a whole GPU


def requests_selector(resources: Sequence[str]) -> str:
    """What running pods request on a node of ``resources`` (kube-state-metrics' sanitised spelling): one
    resource by equality (whole GPUs alone: the query as it always was), several by an exact alternation."""
    labels = sorted({metrics_label(resource) for resource in resources})
    matcher = f'resource="{labels[0]}"' if len(labels) == 1 else f'resource=~"{"|".join(labels)}"'
    return f'kube_pod_container_resource_requests{{{matcher}, unit="integer", node!=""}}'


GPU_REQUESTS = requests_selector((GPU,))


def pod_namespace(expression: str) -> str:
    """DCGM results with the pod's namespace in ``namespace``, whichever spelling was scraped."""
    return f'label_replace({expression}, "namespace", "$1", "exported_namespace", "(.+)")'


def running_gpu_samples(seconds: int, resources: Sequence[str] = (GPU,)) -> str:
    """Per pod and resource: running samples in the window times what the pod requests of the resource."""
    return (
        f"sum by (namespace, pod, uid, resource) (max_over_time({requests_selector(resources)}[{seconds}s]))"
        f" * on (namespace, pod, uid) group_left ()"
        f" sum by (namespace, pod, uid) (sum_over_time({RUNNING}[{seconds}s]))"
    )


def utilisation(function: str, seconds: int, *, whole_gpus: bool = False) -> str:
    """A range function of each GPU's (and MIG instance's) utilisation (0-1): the profiling metric, else
    GPU_UTIL / 100; ``whole_gpus``: of whole GPUs only (series without a MIG profile)."""
    only = f'{{{MIG_PROFILE}=""}}' if whole_gpus else ""
    return f"({function}({PROF}{only}[{seconds}s]) or ({function}({DEV}{only}[{seconds}s]) / 100))"


def allocated_samples_query(seconds: int, resources: Sequence[str] = (GPU,)) -> str:
    """Samples of running pods times what they request, by namespace and resource (times the kube-state-metrics
    spacing: GPU-seconds, or slice-seconds of a MIG profile)."""
    return f"sum by (namespace, resource) ({running_gpu_samples(seconds, resources)})"


def peak_allocated_query(seconds: int, step: int) -> str:
    """The most GPUs requested by running pods at any sample of the range, by namespace."""
    allocated = f"sum by (namespace) ({GPU_REQUESTS} * on (namespace, pod, uid) group_left () ({RUNNING} == 1))"
    return f"max_over_time(({allocated})[{seconds}s:{step}s])"


IDLE_RULE = "gpu_quota:gpu_idle:bool"


def idle_rule(idle_threshold: float) -> str:
    """The recording rule's series for this threshold (deploy/helm/gpu-quota-bot/files/recording-rules.yaml)."""
    return f'{IDLE_RULE}{{threshold="{idle_threshold:g}"}}'


def measure_query(name: str, expression: str) -> str:
    """``expression`` summed by namespace, model and MIG profile (none: whole GPUs), labelled ``measure=name``."""
    return (
        f'label_replace(sum by (namespace, modelName, {MIG_PROFILE}) ({pod_namespace(expression)}), "measure", "{name}", "", "")'
    )


def samples_count(seconds: int) -> str:
    """Each GPU's DCGM samples in the window: GPU_UTIL's, and a MIG instance's (which has none) from the
    profiling metric, only on MIG series (a whole GPU's profiling samples are not read twice)."""
    return f'(count_over_time({DEV}[{seconds}s]) or count_over_time({PROF}{{{MIG_PROFILE}!=""}}[{seconds}s]))'


def dcgm_queries(seconds: int, step: int, idle_threshold: float, *, with_rule: bool = False, idle: bool = True) -> list[str]:
    """DCGM samples, samples under the idle threshold and the sum of utilisation, by namespace and model
    (times the DCGM spacing, or the rule's for the idle samples: GPU-seconds). ``with_rule``: count the idle
    samples from the recording rule, in the same query; without it the idle subquery is a query of its own,
    so that it runs beside the others (it costs more than all of them). ``idle=False``: the samples only
    (what prices a day needs no idle count nor utilisation)."""
    samples = measure_query("hours", samples_count(seconds))
    if not idle:
        return [samples]
    util = measure_query("util_hours", utilisation("sum_over_time", seconds))
    if with_rule:
        return [
            " or ".join([samples, measure_query("idle_hours", f"sum_over_time({idle_rule(idle_threshold)}[{seconds}s])"), util])
        ]
    return [f"{samples} or {util}", measure_query("idle_hours", idle_samples_query(seconds, step, idle_threshold))]


def idle_samples_query(seconds: int, step: int, idle_threshold: float) -> str:
    """Per GPU: its utilisation samples under the threshold, from the profiling metric for a GPU that has it
    over the window, else from GPU_UTIL. Each subquery only filters one metric: choosing the metric per GPU
    once for the window (``or`` / ``unless`` outside the subqueries) costs a fifth of choosing it at every
    step (an ``or`` inside the subquery: 6.8 s of Prometheus time at 3,000 namespaces, bench/ledger_queries.py).
    A GPU whose profiling metric never fell under the threshold has no first part, and the ``unless`` keeps its
    GPU_UTIL count out."""
    window = f"[{seconds}s:{step}s]"
    by_prof = f"count_over_time(({PROF} < {idle_threshold}){window})"
    by_dev = f"count_over_time(({DEV} < {idle_threshold * 100:g}){window})"
    return f"({by_prof} or ({by_dev} unless count_over_time({PROF}[{seconds}s])))"


SPACING_SERIES = {"ksm": RUNNING, "dcgm": DEV}
SPACING_METRICS = {"ksm": "kube_pod_status_phase", "dcgm": DEV, "rule": IDLE_RULE}  # their metric names
EXPORTER_NAMES = {"ksm": "kube-state-metrics", "dcgm": "DCGM"}

# The spacing of an exporter is the median difference between consecutive samples of its few series
# with the most samples in the window: a handful of series whatever the cluster's size, and the median
# ignores gaps, scrape jitter and a series that starts or stops inside the window.
SPACING_SAMPLE_SERIES = 3
# A series with fewer differences than this between consecutive samples tells nothing.
MIN_SPACING_DIFFERENCES = 3
# The label the spacing query names each series' exporter with (a name no exporter uses).
EXPORTER_LABEL = "gpu_quota_exporter"


def spacing_query(seconds: int, idle_threshold: float, *, rule: bool = True) -> str:
    """The ``SPACING_SAMPLE_SERIES`` series of each exporter (and, with ``rule``, of the idle recording rule)
    with the most samples in the window, with their counts (the rule's top count says whether it covers the
    day); plain range functions: cheap, unlike a subquery over every series."""
    series = {**SPACING_SERIES, **({"rule": idle_rule(idle_threshold)} if rule else {})}
    return " or ".join(
        f'label_replace(topk({SPACING_SAMPLE_SERIES}, count_over_time({selector}[{seconds}s])), "{EXPORTER_LABEL}", "{name}", "", "")'
        for name, selector in series.items()
    )


def raw_samples_selector(metric: str, series: Sequence[dict[str, str]], seconds: int) -> str:
    """A range selector over ``seconds`` for the raw samples of ``series`` (label sets of ``metric``), one
    regular expression per label: it may match a few more series, which the caller drops."""
    names = sorted({name for labels in series for name in labels})
    matchers = [f"__name__={_string(metric)}"] + [
        f"{name}=~{_string('|'.join(sorted({re.escape(labels.get(name, '')) for labels in series})))}" for name in names
    ]
    return f"{{{', '.join(matchers)}}}[{seconds}s]"


def median_spacing(series: Sequence[Sequence[float]]) -> float | None:
    """The median difference between consecutive timestamps (seconds) within each series that has at least
    ``MIN_SPACING_DIFFERENCES`` of them, snapped with ``spacing_of``; None without such a series."""
    differences = [b - a for stamps in series if len(stamps) > MIN_SPACING_DIFFERENCES for a, b in pairwise(stamps)]
    return spacing_of(statistics.median(differences)) if differences else None


def _string(value: str) -> str:
    """A PromQL string literal (its escapes are Go's, which JSON's are a subset of)."""
    return json.dumps(value, ensure_ascii=False)


# Scrape intervals people configure; a measured spacing this close to one of them is that one
# (scrape jitter moves each timestamp by some milliseconds).
COMMON_INTERVALS = (1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 600, 900)


def spacing_of(raw: float) -> float:
    """A measured spacing (seconds), snapped to the common scrape interval it is within 3 % of."""
    nearest = min(COMMON_INTERVALS, key=lambda interval: abs(interval - raw))
    return float(nearest) if abs(nearest - raw) <= 0.03 * nearest else raw


def idle_query(window: int, interval: int, threshold: float) -> str:
    """Namespaces whose whole GPUs all stayed under ``threshold`` while one of their pods ran the whole window
    (the nudge counts the GPUs they hold: a busy or idle MIG slice is not one)."""
    samples = int(window / interval * 0.95)  # tolerate a few missed scrapes
    return (
        f"max by (namespace) ({pod_namespace(utilisation('max_over_time', window, whole_gpus=True))}) < {threshold}"
        f" and on (namespace) max by (namespace) (sum_over_time({RUNNING}[{window}s])) >= {samples}"
    )


# The quotas' saturation is a share of the window, read at this resolution whatever the scrape interval:
# 4,032 points per quota over 14 days (a share to 0.03 %), and the subquery's cost stays that of those
# points (see ``quota_saturation_query``) when kube-state-metrics is scraped every 15 or 30 s.
SATURATION_STEP = 300


def quota_saturation_query(seconds: int, step: int) -> str:
    """The share of the window's points at which each GPU quota was full (kube-state-metrics' used equal to
    a non-zero hard), by namespace and quota. A point without the quota's series (not created yet, not
    scraped) counts as not full: the sum is divided by the window's points, not averaged over the points
    that exist. Used above hard is a quota lowered below usage (a gradual reclaim), not one holding work
    back. A subquery, since "used == hard" compares two series point by point; it reads only the two
    ``kube_resourcequota`` series of each GPU quota (never the pods), so it costs (window / step) x 2
    samples per quota: 8,064 for 14 days."""
    quota = 'max by (namespace, resourcequota) (kube_resourcequota{resource="requests.nvidia.com/gpu", type="%s"})'
    full = f"{quota % 'used'} == bool on (namespace, resourcequota) ({quota % 'hard'} > 0)"
    return f"sum_over_time(({full})[{seconds}s:{step}s]) / {seconds // step}"


Part = tuple[str, str]  # (namespace, resource)
DcgmRow = tuple[dict[str, str], str, float]  # (labels, resource, hours) of a DCGM measure


class PrometheusMetrics:
    """Implements ``MetricsSource``; ``queries`` counts the HTTP queries issued (for the benchmark). ``resources``:
    the extended resources ``usage`` counts (every one the policy governs, in any namespace); whole GPUs always."""

    def __init__(
        self,
        client: PrometheusConnect,
        *,
        interval: timedelta,
        idle_threshold: float,
        timeout: float = 30.0,
        resources: Sequence[str] = (GPU,),
    ) -> None:
        self._client = client
        self._resources = tuple(sorted({GPU, *resources}))
        self._by_label = {metrics_label(resource): resource for resource in self._resources}
        self._interval = int(interval.total_seconds())
        self.spacings: dict[date, dict[str, float]] = {}  # measured per day: {"ksm": s, "dcgm": s}, no guess
        self._idle_threshold = idle_threshold
        self._timeout = timeout
        self.queries = 0
        self._count_lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        interval: timedelta,
        idle_threshold: float,
        bearer_token: str | None = None,
        basic_auth: tuple[str, str] | None = None,
        ca_bundle: Path | None = None,
        timeout: float = 30.0,
        resources: Sequence[str] = (GPU,),
    ) -> PrometheusMetrics:
        session = requests.Session()
        session.verify = str(ca_bundle) if ca_bundle else True
        headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else None
        retry = Retry(total=2, backoff_factor=0.5, status_forcelist=(429, 502, 503, 504), allowed_methods=("GET", "POST"))
        session.mount(url, HTTPAdapter(max_retries=retry))
        client = PrometheusConnect(url=url, headers=headers, auth=basic_auth, session=session, timeout=timeout, method="POST")
        return cls(client, interval=interval, idle_threshold=idle_threshold, timeout=timeout, resources=resources)

    # --- MetricsSource -----------------------------------------------------------------------

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        allocated: dict[date, dict[Part, float]] = {}
        dcgm_rows: dict[date, list[DcgmRow]] = {}
        unknown: set[str] = set()
        for run in _runs_of_equal_length(windows):
            seconds = run[0].seconds
            spacing = self._spacing_or_fallback(run, rule=idle)
            # The idle subquery steps at the DCGM spacing; a run whose days differ uses its first day's.
            # The recording rule replaces it when it covers every day of the run.
            step = int(round(spacing[run[0].day]["dcgm"]))
            with_rule = all("rule" in spacing[w.day] for w in run)
            queries = [
                allocated_samples_query(seconds, self._resources),
                *dcgm_queries(seconds, step, self._idle_threshold, with_rule=with_rule, idle=idle),
            ]
            # Two at a time: Prometheus evaluates each query on one core, and the slowest (the idle subquery)
            # then runs beside the others instead of after them.
            with ThreadPoolExecutor(max_workers=PARALLEL_QUERIES) as pool:
                answers = list(pool.map(self._per_window, queries, [run] * len(queries)))
            for day, metric, value in answers[0]:
                resource = self._by_label[metric.get("resource", "")]  # the selector names exactly these
                allocated.setdefault(day, {})[(metric.get("namespace", ""), resource)] = value * spacing[day]["ksm"] / 3600
            for day, metric, value in (row for answer in answers[1:] for row in answer):
                idle_by_rule = with_rule and metric.get("measure") == "idle_hours"
                hours = value * spacing[day]["rule" if idle_by_rule else "dcgm"] / 3600
                if (row := self._dcgm_row(metric, hours, unknown)) is not None:
                    dcgm_rows.setdefault(day, []).append(row)
        if unknown:
            log.warning(
                "DCGM series with a %s that names no MIG profile, not counted: %s", MIG_PROFILE, ", ".join(sorted(unknown))
            )
        return {w.day: _usage_of(allocated.get(w.day, {}), dcgm_rows.get(w.day, [])) for w in windows}

    def _dcgm_row(self, metric: dict[str, str], hours: float, unknown: set[str]) -> DcgmRow | None:
        """A DCGM answer with its resource; None for a MIG profile nobody governs (neither allocated nor priced)
        and for a profile label that names no profile (noted in ``unknown``)."""
        resource = dcgm_resource(metric)
        if resource is None:
            unknown.add(metric.get(MIG_PROFILE, ""))
            return None
        return (metric, resource, hours) if resource in self._resources else None

    def _spacing_or_fallback(self, run: Sequence[Window], *, rule: bool) -> dict[date, dict[str, float]]:
        """``sample_spacing``, with the configured interval for an exporter it could not measure: said in a
        log line (and the ledger keeps no spacing for it). An exporter without any sample needs none."""
        spacing, unmeasured = self._measure_spacing(run, rule=rule)
        for day, exporters in unmeasured.items():
            for exporter in exporters:
                log.warning(
                    "%s: too few %s samples to measure their spacing; counted at metrics.sample_interval (%ss)",
                    day.isoformat(),
                    EXPORTER_NAMES[exporter],
                    self._interval,
                )
        for per_exporter in spacing.values():
            for exporter in SPACING_SERIES:
                per_exporter.setdefault(exporter, float(self._interval))
        return spacing

    def sample_spacing(self, run: Sequence[Window]) -> dict[date, dict[str, float]]:
        """See ``_measure_spacing``."""
        return self._measure_spacing(run)[0]

    def _measure_spacing(
        self, run: Sequence[Window], *, rule: bool = True
    ) -> tuple[dict[date, dict[str, float]], dict[date, list[str]]]:
        """Each exporter's sample spacing (seconds) on each day of ``run``, measured from the raw samples of its
        few series with the most samples that day: ``spacing_query`` names them (one query), one query per
        exporter reads their samples over the run. An exporter with too few samples to tell is left out;
        "rule" (the idle recording rule) only for a day it covers whole (not the day it was deployed). Second:
        per day, the exporters left out although they had samples. ``rule=False``: not the rule's (what only
        idle hours need): its series are neither counted nor read."""
        seconds = run[0].seconds
        chosen: dict[str, dict[date, list[dict[str, str]]]] = {}
        rule_samples: dict[date, float] = {}
        for day, metric, value in self._per_window(spacing_query(seconds, self._idle_threshold, rule=rule), run):
            exporter = metric.get(EXPORTER_LABEL, "")
            if exporter in SPACING_METRICS:
                labels = {name: text for name, text in metric.items() if name != EXPORTER_LABEL}
                chosen.setdefault(exporter, {}).setdefault(day, []).append(labels)
            if exporter == "rule":
                rule_samples[day] = max(rule_samples.get(day, 0.0), value)
        found: dict[date, dict[str, float]] = {w.day: {} for w in run}
        for exporter, per_day in chosen.items():
            every_series = [labels for of_day in per_day.values() for labels in of_day]
            stamps = self._raw_timestamps(SPACING_METRICS[exporter], every_series, run)
            for window in run:
                end = _eval_time(window).timestamp()
                series = [
                    [t for t in stamps.get(_key(labels), []) if end - window.seconds <= t <= end]
                    for labels in per_day.get(window.day, [])
                ]
                if (spacing := median_spacing(series)) is not None:
                    found[window.day][exporter] = spacing
        for day, per_exporter in found.items():
            if "rule" in per_exporter and rule_samples.get(day, 0) * per_exporter["rule"] < 0.98 * seconds:
                del per_exporter["rule"]
            self.spacings[day] = {k: v for k, v in per_exporter.items() if k in SPACING_SERIES}
        unmeasured = {w.day: [e for e in SPACING_SERIES if e not in found[w.day] and w.day in chosen.get(e, {})] for w in run}
        return found, unmeasured

    def _raw_timestamps(
        self, metric: str, series: Sequence[dict[str, str]], run: Sequence[Window]
    ) -> dict[frozenset[tuple[str, str]], list[float]]:
        """The timestamps of the raw samples of ``series`` over ``run``, in one query (a range selector in an
        instant query returns the samples themselves); series the selector matched beyond them are dropped."""
        wanted = {_key(labels) for labels in series}
        span = int((run[-1].end - run[0].start).total_seconds())
        params = {"timeout": f"{int(self._timeout)}s", "time": str(int(_eval_time(run[-1]).timestamp()))}
        result = self._call(lambda: self._client.custom_query(raw_samples_selector(metric, series, span), params=params))
        found: dict[frozenset[tuple[str, str]], list[float]] = {}
        for answer in result:
            key = _key({name: text for name, text in answer.get("metric", {}).items() if name != "__name__"})
            if key in wanted:
                found[key] = sorted(float(stamp) for stamp, _ in answer.get("values", []))
        return found

    def days_with_data(self, windows: Sequence[Window]) -> set[date]:
        days: set[date] = set()
        for run in _runs_of_equal_length(windows):
            query = f"count(count_over_time({RUNNING}[{run[0].seconds}s]))"
            days.update(day for day, _, value in self._per_window(query, run) if value > 0)
        return days

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        rows = self._instant(
            f"sum by (namespace) ({GPU_REQUESTS} * on (namespace, pod, uid) group_left () ({RUNNING} == 1))", at=moment
        )
        return {metric.get("namespace", ""): value for metric, value in rows if value > 0}

    def peak_allocated(self, start: datetime, end: datetime) -> dict[str, float]:
        # The ledger keeps GPU-hours, not maxima: a subquery at the sample spacing, once a week.
        rows = self._instant(
            peak_allocated_query(int((end - start).total_seconds()), self._interval), at=end - timedelta(seconds=1)
        )
        return {metric.get("namespace", ""): value for metric, value in rows if value > 0}

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        rows = self._instant(idle_query(int(window.total_seconds()), self._interval, threshold), at=moment)
        return {metric.get("namespace", ""): value for metric, value in rows}

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        name = "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)
        # Over the day before ``moment``: a namespace deleted during the day still has its labels.
        rows = self._instant(f'max by (namespace, {name}) (last_over_time(kube_namespace_labels{{{name}!=""}}[1d]))', at=moment)
        return {metric["namespace"]: metric[name] for metric, _ in rows if "namespace" in metric and name in metric}

    def series_present(self, names: Sequence[str], *, at: datetime | None = None) -> dict[str, bool]:
        """Whether Prometheus has any series of each metric at ``at`` (default now), in one query."""
        query = " or ".join(f'label_replace(count({name}), "metric", "{name}", "", "")' for name in names)
        rows = self._instant(query, at=at or datetime.now(timezone.utc))
        found = {metric.get("metric") for metric, value in rows if value > 0}
        return {name: name in found for name in names}

    def quota_saturation(self, start: datetime, end: datetime, quota_names: Mapping[str, str]) -> dict[str, float]:
        rows = self._instant(
            quota_saturation_query(int((end - start).total_seconds()), max(self._interval, SATURATION_STEP)),
            at=end - timedelta(seconds=1),
        )
        return {
            metric["namespace"]: value
            for metric, value in rows
            if quota_names.get(metric.get("namespace", "")) == metric.get("resourcequota")
        }

    # --- queries -----------------------------------------------------------------------------

    def _per_window(self, query: str, run: Sequence[Window]) -> list[tuple[date, dict[str, str], float]]:
        """Evaluate ``query`` at each window's ``end - 1s``: one instant query, or one range query for a run."""
        if len(run) == 1:
            return [(run[0].day, metric, value) for metric, value in self._instant(query, at=_eval_time(run[0]))]
        by_time = {int(_eval_time(w).timestamp()): w.day for w in run}
        result = self._call(
            lambda: self._client.custom_query_range(
                query,
                start_time=_eval_time(run[0]),
                end_time=_eval_time(run[-1]),
                step=str(86400),
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
        with self._count_lock:
            self.queries += 1
        try:
            return query() or []
        except PrometheusApiClientException as error:
            status = _status_of(str(error))
            if status in (401, 403):
                count_error("prometheus", "permanent")
                raise PermanentError(
                    f"Prometheus refused the bot's credentials (HTTP {status}): check PROMETHEUS_BEARER_TOKEN or the basic auth"
                ) from None
            if status in (400, 422):
                count_error("prometheus", "permanent")
                raise PermanentError(f"Prometheus rejected a query (HTTP {status}): {_short(str(error))}") from None
            count_error("prometheus", "temporary")
            raise TemporaryError(f"Prometheus answered HTTP {status or '?'}: {_short(str(error))}", delay=30) from None
        except requests.RequestException as error:
            count_error("prometheus", "temporary")
            raise TemporaryError(f"Prometheus did not answer ({type(error).__name__})", delay=30) from None


# The day's queries run this many at a time (see ``usage``).
PARALLEL_QUERIES = 2

# A range query reads every sample of its days at once: a week keeps each query well inside
# Prometheus's default 2-minute timeout on a large cluster, at a handful of queries per month.
MAX_RUN_DAYS = 7


def _runs_of_equal_length(windows: Sequence[Window]) -> list[list[Window]]:
    """Consecutive windows of the same length (a DST day stands alone), at most a week each: each run
    is one range query."""
    runs: list[list[Window]] = []
    for window in sorted(windows, key=lambda w: w.start):
        last = runs[-1][-1] if runs else None
        if (
            last is not None
            and len(runs[-1]) < MAX_RUN_DAYS
            and last.seconds == window.seconds
            and window.end - last.end == timedelta(seconds=86400)
        ):
            runs[-1].append(window)
        else:
            runs.append([window])
    return runs


def _key(labels: dict[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


def _eval_time(window: Window) -> datetime:
    return (window.end - timedelta(seconds=1)).astimezone(timezone.utc)


def dcgm_resource(metric: Mapping[str, str]) -> str | None:
    """The resource a DCGM series counts: a MIG instance's profile (``GPU_I_PROFILE``), else whole GPUs; None
    for a profile label that names no MIG profile."""
    profile = metric.get(MIG_PROFILE, "")
    return mig_resource(profile) if profile else GPU


def _usage_of(allocated: dict[Part, float], rows: list[DcgmRow]) -> dict[str, NamespaceUsage]:
    """Per namespace its whole GPUs' use, with each other resource's in ``other_resources``."""
    hours: dict[Part, dict[str, float]] = {}
    idle: dict[Part, dict[str, float]] = {}
    util: dict[Part, dict[str, float]] = {}
    for metric, resource, value in rows:
        part, model = (metric.get("namespace", ""), resource), metric.get("modelName") or "unknown model"
        measure = metric.get("measure")
        if measure == "hours":
            hours.setdefault(part, {})[model] = value
        elif measure == "idle_hours":
            idle.setdefault(part, {})[model] = value
        elif measure == "util_hours":
            util.setdefault(part, {})[model] = value
    parts = {
        part: NamespaceUsage(
            allocated.get(part, 0.0),
            hours.get(part, {}),
            {m: h for m, h in idle.get(part, {}).items() if h > 0},
            sum(util.get(part, {}).values()),
            util_model_hours=util.get(part, {}),
        )
        for part in set(allocated) | set(hours)
    }
    others: dict[str, dict[str, NamespaceUsage]] = {}
    for (namespace, resource), usage in parts.items():
        if resource != GPU:
            others.setdefault(namespace, {})[resource] = usage
    return {
        ns: replace(parts.get((ns, GPU), NamespaceUsage()), other_resources=others.get(ns, {}))
        for ns in {namespace for namespace, _ in parts}
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
