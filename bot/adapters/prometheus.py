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

Where each GPU-hour ran (``bot.domain.capacity``): the node of each pod's requests (kube-state-metrics'
``node`` label) joined to ``kube_node_labels`` by node, which carries the nodes' capacity-type labels (and the
policy's pool label) once kube-state-metrics' ``--metric-labels-allowlist`` names them. The join is inside the
same queries (no query per node): the allocated query and each DCGM measure are summed by those labels too, a
DCGM series reaching its pod's node through the pod's requests (``namespace``, ``pod``). A node without a
``kube_node_labels`` series still counts (its labels are empty: on-demand); a DCGM series of a pod that requests
no extended resource is not counted (no pod holds that GPU). A name reused by a pod on
another node the same day (a StatefulSet's pod after a spot interruption) counts its DCGM figures at one of
the nodes; its allocated hours are exact (per pod uid). The allocated query also counts the nodes by their
labels (the ``nodes`` part), which tells whether the day could be split at all (``SplitState``).

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
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from bot.domain.capacity import (
    CAPACITY_LABELS,
    NodeLabelFacts,
    Placement,
    SplitState,
    ksm_label_name,
    node_label_facts,
    placement_of,
    read_node,
    split_state,
)
from bot.domain.clusters import HOME, namespace_key
from bot.domain.costs import NamespaceUsage, Window, placed_usage
from bot.domain.resources import GPU, metrics_label, mig_resource
from bot.domain.stack_health import ScrapeTarget, SeriesFacts
from bot.errors import PermanentError, TemporaryError
from bot.observability import count_error
from bot.services.ports import Coverage

log = logging.getLogger(__name__)
T = TypeVar("T")

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


def _labels(*names: str, by: Sequence[str] = ()) -> str:
    """A ``by`` or ``on`` clause's labels: the cluster labels ``by`` (a Prometheus shared by several clusters) first."""
    return ", ".join([*by, *names])


def pod_namespace(expression: str) -> str:
    """DCGM results with the pod's namespace in ``namespace``, whichever spelling was scraped."""
    return f'label_replace({expression}, "namespace", "$1", "exported_namespace", "(.+)")'


def running_gpu_samples(seconds: int, resources: Sequence[str] = (GPU,), *, by: Sequence[str] = ()) -> str:
    """Per pod and resource: running samples in the window times what the pod requests of the resource."""
    pod = _labels("namespace", "pod", "uid", by=by)
    return (
        f"sum by ({_labels('namespace', 'pod', 'uid', 'resource', by=by)}) (max_over_time({requests_selector(resources)}[{seconds}s]))"
        f" * on ({pod}) group_left ()"
        f" sum by ({pod}) (sum_over_time({RUNNING}[{seconds}s]))"
    )


def utilisation(function: str, seconds: int, *, whole_gpus: bool = False) -> str:
    """A range function of each GPU's (and MIG instance's) utilisation (0-1): the profiling metric, else
    GPU_UTIL / 100; ``whole_gpus``: of whole GPUs only (series without a MIG profile)."""
    only = f'{{{MIG_PROFILE}=""}}' if whole_gpus else ""
    return f"({function}({PROF}{only}[{seconds}s]) or ({function}({DEV}{only}[{seconds}s]) / 100))"


NODE_LABELS = "kube_node_labels"
# The pods that request any extended resource on a node (GPUs, MIG slices, governed or not), with their node: what
# places a DCGM series (a pod holds the GPU it requests) and names the nodes without a kube_node_labels series.
POD_NODES = 'kube_pod_container_resource_requests{unit="integer", node!=""}'
NODES_PART = "gpu_quota_part"  # the label the node count of the allocated query carries (a name no exporter uses)


def node_label_names(pool_label: str | None = None) -> tuple[str, ...]:
    """The ``kube_node_labels`` labels that tell where a GPU-hour ran: the capacity-type labels, the pool label."""
    return tuple(ksm_label_name(label) for label in [*CAPACITY_LABELS, *([pool_label] if pool_label else [])])


def node_placements(seconds: int, labels: Sequence[str], *, by: Sequence[str] = ()) -> str:
    """One series per node (of each cluster, ``by`` its labels) with ``labels`` (empty where the node lacks them):
    from ``kube_node_labels`` over the window (one label set per node: a name reused by a node of other labels the
    same day keeps one), and, for the nodes the pods' requests name that it has no series of, a series without
    them; each of value 1."""
    node = _labels("node", by=by)
    known = f"topk by ({node}) (1, max by ({_labels('node', *labels, by=by)}) (max_over_time({NODE_LABELS}[{seconds}s])))"
    return f"({known} or on ({node}) group by ({node}) (max_over_time({POD_NODES}[{seconds}s])))"


def placed_gpu_samples(seconds: int, resources: Sequence[str], labels: Sequence[str], *, by: Sequence[str] = ()) -> str:
    """Per pod, resource and node: running samples in the window times what the pod requests, with the node's
    ``labels``."""
    pod = _labels("namespace", "pod", "uid", by=by)
    requested = f"sum by ({_labels('namespace', 'pod', 'uid', 'resource', 'node', by=by)}) (max_over_time({requests_selector(resources)}[{seconds}s]))"
    running = f"sum by ({pod}) (sum_over_time({RUNNING}[{seconds}s]))"
    nodes = node_placements(seconds, labels, by=by)
    return (
        f"({requested} * on ({pod}) group_left () {running})"
        f" * on ({_labels('node', by=by)}) group_left ({', '.join(labels)}) {nodes}"
    )


def pod_placements(seconds: int, labels: Sequence[str], *, by: Sequence[str] = ()) -> str:
    """One series per pod that requested an extended resource on a node in the window, with its node's ``labels``
    (a pod name on several nodes: one of them)."""
    pod = _labels("namespace", "pod", by=by)
    pods = f"group by ({_labels('namespace', 'pod', 'node', by=by)}) (max_over_time({POD_NODES}[{seconds}s]))"
    placed = f"{pods} * on ({_labels('node', by=by)}) group_left ({', '.join(labels)}) {node_placements(seconds, labels, by=by)}"
    return f"topk by ({pod}) (1, max by ({_labels('namespace', 'pod', *labels, by=by)}) ({placed}))"


def preemptible_query(seconds: int, classes: Sequence[str], labels: Sequence[str], *, by: Sequence[str] = ()) -> str:
    """Running whole-GPU samples of pods of the priority ``classes`` (kube_pod_info's ``priority_class``), by namespace
    and the node ``labels``; and of every pod, by namespace (tagged ``NODES_PART="all"``)."""
    pod = _labels("namespace", "pod", "uid", by=by)
    matcher = "|".join(re.escape(name) for name in sorted(classes))
    chosen = f"group by ({pod}) (max_over_time(kube_pod_info{{priority_class=~{_string(matcher)}}}[{seconds}s]))"
    preemptible = f"sum by ({_labels('namespace', *labels, by=by)}) ({placed_gpu_samples(seconds, (GPU,), labels, by=by)} * on ({pod}) group_left () {chosen})"
    every = f"sum by ({_labels('namespace', by=by)}) ({running_gpu_samples(seconds, (GPU,), by=by)})"
    return f'{preemptible} or label_replace({every}, "{NODES_PART}", "all", "", "")'


def nodes_count_query(seconds: int, labels: Sequence[str], *, by: Sequence[str] = ()) -> str:
    """The nodes ``kube_node_labels`` holds in the window, counted by ``labels`` (tagged ``NODES_PART``)."""
    nodes = f"max by ({_labels('node', *labels, by=by)}) (max_over_time({NODE_LABELS}[{seconds}s]))"
    return f'label_replace(count by ({_labels(*labels, by=by)}) ({nodes}), "{NODES_PART}", "nodes", "", "")'


def allocated_samples_query(
    seconds: int, resources: Sequence[str] = (GPU,), *, by: Sequence[str] = (), labels: Sequence[str] | None = None
) -> str:
    """Samples of running pods times what they request, by namespace, resource and the node ``labels`` (times the
    kube-state-metrics spacing: GPU-seconds, or slice-seconds of a MIG profile); and the nodes counted by those
    labels (``nodes_count_query``). ``labels`` None: the capacity-type labels."""
    labels = node_label_names() if labels is None else labels
    summed = (
        f"sum by ({_labels('namespace', 'resource', *labels, by=by)}) ({placed_gpu_samples(seconds, resources, labels, by=by)})"
    )
    return f"{summed} or {nodes_count_query(seconds, labels, by=by)}"


def allocated_now_query(*, by: Sequence[str] = ()) -> str:
    """The GPUs running pods request at an instant, by namespace."""
    pod = _labels("namespace", "pod", "uid", by=by)
    return f"sum by ({_labels('namespace', by=by)}) ({GPU_REQUESTS} * on ({pod}) group_left () ({RUNNING} == 1))"


def peak_allocated_query(seconds: int, step: int, *, by: Sequence[str] = ()) -> str:
    """The most GPUs requested by running pods at any sample of the range, by namespace."""
    return f"max_over_time(({allocated_now_query(by=by)})[{seconds}s:{step}s])"


IDLE_RULE = "gpu_quota:gpu_idle:bool"


def idle_rule(idle_threshold: float) -> str:
    """The recording rule's series for this threshold (deploy/helm/gpu-quota-bot/files/recording-rules.yaml)."""
    return f'{IDLE_RULE}{{threshold="{idle_threshold:g}"}}'


def pod_labels(expression: str) -> str:
    """DCGM results with the pod's namespace and name in ``namespace`` and ``pod``, whichever spelling was scraped."""
    return f'label_replace({pod_namespace(expression)}, "pod", "$1", "exported_pod", "(.+)")'


def measure_query(name: str, expression: str, *, by: Sequence[str] = (), placed: tuple[int, Sequence[str]] | None = None) -> str:
    """``expression`` summed by namespace, model and MIG profile (none: whole GPUs), labelled ``measure=name``.
    ``placed`` (seconds, node labels): each GPU's series joined to its pod's node labels
    (``pod_placements``) and summed by them too."""
    if placed is None:
        labels = _labels("namespace", "modelName", MIG_PROFILE, by=by)
        return f'label_replace(sum by ({labels}) ({pod_namespace(expression)}), "measure", "{name}", "", "")'
    seconds, names = placed
    labels = _labels("namespace", "modelName", MIG_PROFILE, *names, by=by)
    pods = pod_placements(seconds, names, by=by)
    joined = f"{pod_labels(expression)} * on ({_labels('namespace', 'pod', by=by)}) group_left ({', '.join(names)}) {pods}"
    return f'label_replace(sum by ({labels}) ({joined}), "measure", "{name}", "", "")'


def samples_count(seconds: int) -> str:
    """Each GPU's DCGM samples in the window: GPU_UTIL's, and a MIG instance's (which has none) from the
    profiling metric, only on MIG series (a whole GPU's profiling samples are not read twice)."""
    return f'(count_over_time({DEV}[{seconds}s]) or count_over_time({PROF}{{{MIG_PROFILE}!=""}}[{seconds}s]))'


def dcgm_queries(
    seconds: int,
    step: int,
    idle_threshold: float,
    *,
    with_rule: bool = False,
    idle: bool = True,
    by: Sequence[str] = (),
    labels: Sequence[str] | None = None,
) -> list[str]:
    """DCGM samples, samples under the idle threshold and the sum of utilisation, by namespace and model
    (times the DCGM spacing, or the rule's for the idle samples: GPU-seconds). ``with_rule``: count the idle
    samples from the recording rule, in the same query; without it the idle subquery is a query of its own,
    so that it runs beside the others (it costs more than all of them). ``idle=False``: the samples only
    (what prices a day needs no idle count nor utilisation). Each measure is summed by the node ``labels`` of the
    GPU's pod too (None: the capacity-type labels), through the pod's requests (``pod_placements``)."""
    placed = (seconds, node_label_names() if labels is None else labels)
    samples = measure_query("hours", samples_count(seconds), by=by, placed=placed)
    if not idle:
        return [samples]
    util = measure_query("util_hours", utilisation("sum_over_time", seconds), by=by, placed=placed)
    if with_rule:
        rule = measure_query("idle_hours", f"sum_over_time({idle_rule(idle_threshold)}[{seconds}s])", by=by, placed=placed)
        return [" or ".join([samples, rule, util])]
    idle_hours = measure_query("idle_hours", idle_samples_query(seconds, step, idle_threshold), by=by, placed=placed)
    return [f"{samples} or {util}", idle_hours]


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


def spacing_query(seconds: int, idle_threshold: float, *, rule: bool = True, by: Sequence[str] = ()) -> str:
    """The ``SPACING_SAMPLE_SERIES`` series of each exporter (and, with ``rule``, of the idle recording rule)
    with the most samples in the window (of each cluster, ``by`` its labels), with their counts (the rule's top
    count says whether it covers the day); plain range functions: cheap, unlike a subquery over every series."""
    series = {**SPACING_SERIES, **({"rule": idle_rule(idle_threshold)} if rule else {})}
    top = f"topk by ({_labels(by=by)})" if by else "topk"
    return " or ".join(
        f'label_replace({top}({SPACING_SAMPLE_SERIES}, count_over_time({selector}[{seconds}s])), "{EXPORTER_LABEL}", "{name}", "", "")'
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


def idle_query(window: int, interval: int, threshold: float, *, by: Sequence[str] = ()) -> str:
    """Namespaces whose whole GPUs all stayed under ``threshold`` while one of their pods ran the whole window
    (the nudge counts the GPUs they hold: a busy or idle MIG slice is not one)."""
    samples = int(window / interval * 0.95)  # tolerate a few missed scrapes
    namespace = _labels("namespace", by=by)
    return (
        f"max by ({namespace}) ({pod_namespace(utilisation('max_over_time', window, whole_gpus=True))}) < {threshold}"
        f" and on ({namespace}) max by ({namespace}) (sum_over_time({RUNNING}[{window}s])) >= {samples}"
    )


# The quotas' saturation is a share of the window, read at this resolution whatever the scrape interval:
# 4,032 points per quota over 14 days (a share to 0.03 %), and the subquery's cost stays that of those
# points (see ``quota_saturation_query``) when kube-state-metrics is scraped every 15 or 30 s.
SATURATION_STEP = 300


def quota_saturation_query(seconds: int, step: int, *, by: Sequence[str] = ()) -> str:
    """The share of the window's points at which each GPU quota was full (kube-state-metrics' used equal to
    a non-zero hard), by namespace and quota. A point without the quota's series (not created yet, not
    scraped) counts as not full: the sum is divided by the window's points, not averaged over the points
    that exist. Used above hard is a quota lowered below usage (a gradual reclaim), not one holding work
    back. A subquery, since "used == hard" compares two series point by point; it reads only the two
    ``kube_resourcequota`` series of each GPU quota (never the pods), so it costs (window / step) x 2
    samples per quota: 8,064 for 14 days."""
    labels = _labels("namespace", "resourcequota", by=by)
    quota = f'max by ({labels}) (kube_resourcequota{{resource="requests.nvidia.com/gpu", type="%s"}})'
    full = f"{quota % 'used'} == bool on ({labels}) ({quota % 'hard'} > 0)"
    return f"sum_over_time(({full})[{seconds}s:{step}s]) / {seconds // step}"


Part = tuple[str, str]  # (namespace key, resource)
Placed = tuple[str, str, Placement]  # (namespace key, resource, where it ran)
DcgmRow = tuple[str, dict[str, str], str, float, Placement]  # (namespace key, labels, resource, hours, where) of a DCGM measure
Spacing = dict[date, dict[str, dict[str, float]]]  # day -> cluster part -> exporter -> seconds between samples

# OpenCost's and Kubecost's cluster label: a series without ``metrics.cluster_label`` is taken by it.
OPENCOST_LABEL = "cluster_id"


@dataclass(frozen=True)
class ClusterLabels:
    """How the series of a Prometheus (Thanos, Mimir) that several clusters share are told apart. A series
    belongs to the cluster its ``label`` names; one without that label, to the cluster its OpenCost
    ``cluster_id`` names; one with neither, to ``unlabelled`` (the home cluster, when it shares this
    Prometheus: its own series often carry no label there), else to none. ``parts`` maps each label value
    (the policy's metrics name of a cluster) to the cluster's part of a namespace key; a value it does not
    list is a cluster the policy does not govern: not counted."""

    label: str
    parts: Mapping[str, str]
    unlabelled: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The labels every query keeps (``by``, ``on``)."""
        return (self.label,) if self.label == OPENCOST_LABEL else (self.label, OPENCOST_LABEL)

    @property
    def clusters(self) -> tuple[str, ...]:
        return tuple(sorted({*self.parts.values(), *([self.unlabelled] if self.unlabelled is not None else [])}))

    def cluster_of(self, metric: Mapping[str, str]) -> str | None:
        value = metric.get(self.label) or metric.get(OPENCOST_LABEL)
        return self.parts.get(value) if value else self.unlabelled

    def series_of(self, cluster: str) -> str:
        """The series that belong to ``cluster``, in words (for a line saying none are there)."""
        values = sorted(value for value, part in self.parts.items() if part == cluster)
        said = " or ".join(f'{name}="{value}"' for value in values for name in self.names)
        return said + (" or neither label" if cluster == self.unlabelled else "")


class PrometheusMetrics:
    """Implements ``MetricsSource`` and ``ClusterCoverage``; ``queries`` counts the HTTP queries issued (for the
    benchmark). ``resources``: the extended resources ``usage`` counts (every one the policy governs, in any
    namespace); whole GPUs always. Namespaces are keys: every series is ``cluster``'s (a Prometheus of one
    cluster, the home cluster by default: bare names, the queries as they always were), or, with ``labels``
    (a Prometheus several clusters share), the cluster its labels name, which every query then keeps.
    ``pool_label`` and ``pools``: the node label of the pools the policy prices and the values it prices (the
    hours of other nodes are placed by capacity type)."""

    def __init__(
        self,
        client: PrometheusConnect,
        *,
        interval: timedelta,
        idle_threshold: float,
        timeout: float = 30.0,
        resources: Sequence[str] = (GPU,),
        cluster: str = HOME,
        labels: ClusterLabels | None = None,
        pool_label: str | None = None,
        pools: Sequence[str] = (),
    ) -> None:
        self._client = client
        self._pool_label = pool_label
        self._pools = tuple(pools)
        self._node_labels = node_label_names(pool_label)
        self._label_keys = dict(zip(self._node_labels, [*CAPACITY_LABELS, *([pool_label] if pool_label else [])], strict=True))
        self._resources = tuple(sorted({GPU, *resources}))
        self._by_label = {metrics_label(resource): resource for resource in self._resources}
        self._interval = int(interval.total_seconds())
        self._cluster = cluster
        self._labels = labels
        self._by = labels.names if labels else ()
        self.clusters = labels.clusters if labels else (cluster,)  # the key parts whose series it holds
        # Measured per cluster and day: {"ksm": s, "dcgm": s}, no guess.
        self.cluster_spacings: dict[str, dict[date, dict[str, float]]] = {part: {} for part in self.clusters}
        # Per cluster and day read by ``usage``: whether its GPU-hours could be told apart by node.
        self.cluster_splits: dict[str, dict[date, SplitState]] = {part: {} for part in self.clusters}
        self._idle_threshold = idle_threshold
        self._timeout = timeout
        self.queries = 0
        self._count_lock = threading.Lock()

    @property
    def spacings(self) -> dict[date, dict[str, float]]:
        """The spacing measured on each day for the source's own cluster (the home cluster's when shared)."""
        return self.cluster_spacings.setdefault(self._cluster, {})

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
        cluster: str = HOME,
        labels: ClusterLabels | None = None,
        pool_label: str | None = None,
        pools: Sequence[str] = (),
    ) -> PrometheusMetrics:
        session = requests.Session()
        session.verify = str(ca_bundle) if ca_bundle else True
        headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else None
        retry = Retry(total=2, backoff_factor=0.5, status_forcelist=(429, 502, 503, 504), allowed_methods=("GET", "POST"))
        session.mount(url, HTTPAdapter(max_retries=retry))
        client = PrometheusConnect(url=url, headers=headers, auth=basic_auth, session=session, timeout=timeout, method="POST")
        return cls(
            client,
            interval=interval,
            idle_threshold=idle_threshold,
            timeout=timeout,
            resources=resources,
            cluster=cluster,
            labels=labels,
            pool_label=pool_label,
            pools=pools,
        )

    def _cluster_of(self, metric: Mapping[str, str]) -> str | None:
        """The key part of the cluster a series belongs to; None: a cluster not counted here."""
        return self._labels.cluster_of(metric) if self._labels else self._cluster

    def _namespace_key(self, metric: Mapping[str, str]) -> str | None:
        cluster = self._cluster_of(metric)
        return namespace_key(cluster, metric.get("namespace", "")) if cluster is not None else None

    def _by_namespace(self, rows: Iterable[tuple[dict[str, str], T]]) -> dict[str, T]:
        """Instant answers keyed by namespace key (a cluster not counted here left out)."""
        return {key: value for metric, value in rows if (key := self._namespace_key(metric)) is not None}

    # --- MetricsSource -----------------------------------------------------------------------

    def _node_of(self, metric: Mapping[str, str]) -> dict[str, str]:
        """The Kubernetes node labels a result carries (by their kube-state-metrics names)."""
        return {key: metric[name] for name, key in self._label_keys.items() if metric.get(name)}

    def _placement(self, metric: Mapping[str, str]) -> Placement:
        return placement_of(read_node(self._node_of(metric), self._pool_label), self._pools)

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        allocated: dict[date, dict[Placed, float]] = {}
        dcgm_rows: dict[date, list[DcgmRow]] = {}
        nodes: dict[tuple[date, str], list[dict[str, str]]] = {}
        unknown: set[str] = set()
        for run in _runs_of_equal_length(windows):
            seconds = run[0].seconds
            spacing = self._spacing_or_fallback(run, rule=idle)
            # The idle subquery steps at the DCGM spacing; a run whose days (or clusters) differ uses its first
            # day's (finest). The recording rule replaces it when it covers every day of the run.
            step = int(round(min(exporters["dcgm"] for exporters in spacing[run[0].day].values())))
            with_rule = all("rule" in exporters for w in run for exporters in spacing[w.day].values())
            labels = self._node_labels
            queries = [
                allocated_samples_query(seconds, self._resources, by=self._by, labels=labels),
                *dcgm_queries(
                    seconds,
                    step,
                    self._idle_threshold,
                    with_rule=with_rule,
                    idle=idle,
                    by=self._by,
                    labels=labels,
                ),
            ]
            # Two at a time: Prometheus evaluates each query on one core, and the slowest (the idle subquery)
            # then runs beside the others instead of after them.
            with ThreadPoolExecutor(max_workers=PARALLEL_QUERIES) as pool:
                answers = list(pool.map(self._per_window, queries, [run] * len(queries)))
            for day, metric, value in answers[0]:
                cluster = self._cluster_of(metric)
                if cluster is None:
                    continue
                if metric.get(NODES_PART):
                    nodes.setdefault((day, cluster), []).append(self._node_of(metric))
                    continue
                resource = self._by_label[metric.get("resource", "")]  # the selector names exactly these
                part = (namespace_key(cluster, metric.get("namespace", "")), resource, self._placement(metric))
                per_day = allocated.setdefault(day, {})
                per_day[part] = per_day.get(part, 0.0) + value * spacing[day][cluster]["ksm"] / 3600
            for day, metric, value in (row for answer in answers[1:] for row in answer):
                cluster = self._cluster_of(metric)
                if cluster is None:
                    continue
                hours = value * self._sample_seconds(metric, spacing[day][cluster], step=step, with_rule=with_rule) / 3600
                if (row := self._dcgm_row(metric, cluster, hours, unknown)) is not None:
                    dcgm_rows.setdefault(day, []).append(row)
        if unknown:
            log.warning(
                "DCGM series with a %s that names no MIG profile, not counted: %s", MIG_PROFILE, ", ".join(sorted(unknown))
            )
        for window in windows:
            for cluster in self.clusters:
                state = split_state(nodes.get((window.day, cluster), []), self._pool_label)
                self.cluster_splits.setdefault(cluster, {})[window.day] = state
        return {w.day: _usage_of(allocated.get(w.day, {}), dcgm_rows.get(w.day, [])) for w in windows}

    @property
    def splits(self) -> dict[date, SplitState]:
        """The split state read on each day for the source's own cluster (the home cluster's when shared)."""
        return self.cluster_splits.setdefault(self._cluster, {})

    def preemptible_use(
        self, start: datetime, end: datetime, priority_classes: Sequence[str]
    ) -> dict[str, dict[Placement, float]]:
        """See ``PreemptibleWork``: one instant query over [start, end)."""
        seconds = int((end - start).total_seconds())
        query = preemptible_query(seconds, priority_classes, self._node_labels, by=self._by)
        rows = self._instant(query, at=end - timedelta(seconds=1))
        every = {key: value for metric, value in rows if metric.get(NODES_PART) and (key := self._namespace_key(metric))}
        found: dict[str, dict[Placement, float]] = {}
        for metric, value in rows:
            key = self._namespace_key(metric)
            if metric.get(NODES_PART) or key is None or not every.get(key):
                continue
            per_place = found.setdefault(key, {})
            placement = self._placement(metric)
            per_place[placement] = per_place.get(placement, 0.0) + value / every[key]
        return found

    def node_label_facts(self, at: datetime, *, cluster: str = HOME) -> NodeLabelFacts:
        """What the nodes' labels in ``kube_node_labels`` say over the hour before ``at`` (of ``cluster`` in a shared
        Prometheus): one instant query of the nodes counted by the labels the bot reads."""
        rows = self._instant(nodes_count_query(3600, self._node_labels, by=self._by), at=at)
        sets = [self._node_of(metric) for metric, value in rows if value > 0 and self._cluster_of(metric) == cluster]
        return node_label_facts(sets, pool_label=self._pool_label, priced_pools=self._pools)

    def _sample_seconds(self, metric: Mapping[str, str], spacing: dict[str, float], *, step: int, with_rule: bool) -> float:
        """What one counted DCGM sample stands for: the rule's spacing for its idle samples, else the DCGM spacing;
        in a shared Prometheus the idle subquery's points are counted at its one ``step``, whatever each cluster's
        spacing (a point takes the latest sample, so a count at any step times that step is the idle time)."""
        if metric.get("measure") != "idle_hours":
            return spacing["dcgm"]
        if with_rule:
            return spacing["rule"]
        return float(step) if self._labels else spacing["dcgm"]

    def _dcgm_row(self, metric: dict[str, str], cluster: str, hours: float, unknown: set[str]) -> DcgmRow | None:
        """A DCGM answer with its namespace key and resource; None for a MIG profile nobody governs (neither
        allocated nor priced) and for a profile label that names no profile (noted in ``unknown``)."""
        resource = dcgm_resource(metric)
        if resource is None:
            unknown.add(metric.get(MIG_PROFILE, ""))
            return None
        key = namespace_key(cluster, metric.get("namespace", ""))
        return (key, metric, resource, hours, self._placement(metric)) if resource in self._resources else None

    def _spacing_or_fallback(self, run: Sequence[Window], *, rule: bool) -> Spacing:
        """``sample_spacing`` of every cluster, with the configured interval for an exporter it could not measure:
        said in a log line (and the ledger keeps no spacing for it). An exporter without any sample needs none."""
        spacing, unmeasured = self._measure_spacing(run, rule=rule)
        for day, clusters in unmeasured.items():
            for cluster, exporters in clusters.items():
                for exporter in exporters:
                    log.warning(
                        "%s: too few %s samples%s to measure their spacing; counted at metrics.sample_interval (%ss)",
                        day.isoformat(),
                        EXPORTER_NAMES[exporter],
                        f" of cluster {cluster or 'home'}" if self._labels else "",
                        self._interval,
                    )
        for per_cluster in spacing.values():
            for per_exporter in per_cluster.values():
                for exporter in SPACING_SERIES:
                    per_exporter.setdefault(exporter, float(self._interval))
        return spacing

    def sample_spacing(self, run: Sequence[Window], cluster: str | None = None) -> dict[date, dict[str, float]]:
        """See ``_measure_spacing``: of ``cluster`` (default: the source's own)."""
        wanted = self._cluster if cluster is None else cluster
        return {day: per_cluster.get(wanted, {}) for day, per_cluster in self._measure_spacing(run)[0].items()}

    def _measure_spacing(self, run: Sequence[Window], *, rule: bool = True) -> tuple[Spacing, dict[date, dict[str, list[str]]]]:
        """Each exporter's sample spacing (seconds) in each cluster on each day of ``run``, measured from the raw
        samples of its few series with the most samples that day: ``spacing_query`` names them (one query), one
        query per exporter reads their samples over the run. An exporter with too few samples to tell is left
        out; "rule" (the idle recording rule) only for a day it covers whole (not the day it was deployed).
        Second: per day and cluster, the exporters left out although they had samples. ``rule=False``: not the
        rule's (what only idle hours need): its series are neither counted nor read."""
        seconds = run[0].seconds
        chosen: dict[str, dict[tuple[date, str], list[dict[str, str]]]] = {}
        rule_samples: dict[tuple[date, str], float] = {}
        for day, metric, value in self._per_window(spacing_query(seconds, self._idle_threshold, rule=rule, by=self._by), run):
            exporter, cluster = metric.get(EXPORTER_LABEL, ""), self._cluster_of(metric)
            if cluster is None:
                continue
            if exporter in SPACING_METRICS:
                labels = {name: text for name, text in metric.items() if name != EXPORTER_LABEL}
                chosen.setdefault(exporter, {}).setdefault((day, cluster), []).append(labels)
            if exporter == "rule":
                rule_samples[(day, cluster)] = max(rule_samples.get((day, cluster), 0.0), value)
        found: Spacing = {w.day: {cluster: {} for cluster in self.clusters} for w in run}
        for exporter, per_day in chosen.items():
            every_series = [labels for of_day in per_day.values() for labels in of_day]
            stamps = self._raw_timestamps(SPACING_METRICS[exporter], every_series, run)
            for window in run:
                end = _eval_time(window).timestamp()
                for cluster in self.clusters:
                    series = [
                        [t for t in stamps.get(_key(labels), []) if end - window.seconds <= t <= end]
                        for labels in per_day.get((window.day, cluster), [])
                    ]
                    if (spacing := median_spacing(series)) is not None:
                        found[window.day][cluster][exporter] = spacing
        for day, per_cluster in found.items():
            for cluster, per_exporter in per_cluster.items():
                if "rule" in per_exporter and rule_samples.get((day, cluster), 0) * per_exporter["rule"] < 0.98 * seconds:
                    del per_exporter["rule"]
                measured = {k: v for k, v in per_exporter.items() if k in SPACING_SERIES}
                self.cluster_spacings.setdefault(cluster, {})[day] = measured
        unmeasured = {
            w.day: {
                cluster: [e for e in SPACING_SERIES if e not in found[w.day][cluster] and (w.day, cluster) in chosen.get(e, {})]
                for cluster in self.clusters
            }
            for w in run
        }
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
        return {day for days in self.days_by_cluster(windows).held.values() for day in days}

    def days_by_cluster(self, windows: Sequence[Window]) -> Coverage:
        """The days each cluster holds kube-state-metrics samples of: one query per run of days (by the cluster
        labels in a shared Prometheus). There, a cluster without any of the days that others have is ``absent``."""
        held: dict[str, set[date]] = {cluster: set() for cluster in self.clusters}
        count = f"count by ({_labels(by=self._by)})" if self._by else "count"
        for run in _runs_of_equal_length(windows):
            query = f"{count}(count_over_time({RUNNING}[{run[0].seconds}s]))"
            for day, metric, value in self._per_window(query, run):
                if value > 0 and (cluster := self._cluster_of(metric)) is not None:
                    held[cluster].add(day)
        absent = {}
        if self._labels is not None and any(held.values()):
            absent = {
                cluster: f"no kube-state-metrics series with {self._labels.series_of(cluster)} while other clusters' are there"
                for cluster, days in held.items()
                if not days
            }
        return Coverage(held, absent=absent)

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        rows = self._instant(allocated_now_query(by=self._by), at=moment)
        return self._by_namespace((metric, value) for metric, value in rows if value > 0)

    def peak_allocated(self, start: datetime, end: datetime) -> dict[str, float]:
        # The ledger keeps GPU-hours, not maxima: a subquery at the sample spacing, once a week.
        seconds = int((end - start).total_seconds())
        rows = self._instant(peak_allocated_query(seconds, self._interval, by=self._by), at=end - timedelta(seconds=1))
        return self._by_namespace((metric, value) for metric, value in rows if value > 0)

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        rows = self._instant(idle_query(int(window.total_seconds()), self._interval, threshold, by=self._by), at=moment)
        return self._by_namespace(rows)

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        name = "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)
        # Over the day before ``moment``: a namespace deleted during the day still has its labels.
        labels = _labels("namespace", name, by=self._by)
        rows = self._instant(f'max by ({labels}) (last_over_time(kube_namespace_labels{{{name}!=""}}[1d]))', at=moment)
        return self._by_namespace((metric, metric[name]) for metric, _ in rows if "namespace" in metric and name in metric)

    def series_present(self, names: Sequence[str], *, at: datetime | None = None) -> dict[str, bool]:
        """Whether Prometheus has any series of each metric at ``at`` (default now), in one query."""
        query = " or ".join(f'label_replace(count({name}), "metric", "{name}", "", "")' for name in names)
        rows = self._instant(query, at=at or datetime.now(timezone.utc))
        found = {metric.get("metric") for metric, value in rows if value > 0}
        return {name: name in found for name in names}

    # --- ScrapeInspection (doctor) -------------------------------------------------------------

    def targets(self, cluster: str = HOME) -> list[ScrapeTarget]:
        """The active targets; in a Prometheus several clusters share, those whose labels name ``cluster`` (by the
        cluster labels), or all of them when no target carries such a label (external labels are not on targets)."""
        data = self._call(lambda: [self._client.get_targets(state="active")])
        active = [target for answer in data for target in answer.get("activeTargets", [])]
        if self._labels is not None:
            labelled = [t for t in active if any(name in t.get("labels", {}) for name in self._labels.names)]
            if labelled:
                active = [t for t in labelled if self._labels.cluster_of(t.get("labels", {})) == cluster]
        return [scrape_target(target) for target in active]

    def series(self, metrics: Sequence[str], *, labels: Sequence[str] = (), cluster: str = HOME) -> dict[str, SeriesFacts]:
        """One instant query: each metric's series counted by ``labels`` (and the cluster labels), tagged with its name."""
        by = _labels(*labels, by=self._by)
        query = " or ".join(
            f'label_replace(count by ({by}) ({name}), "{SERIES_LABEL}", "{name}", "", "")'
            if by
            else f'label_replace(count({name}), "{SERIES_LABEL}", "{name}", "", "")'
            for name in metrics
        )
        found: dict[str, set[str]] = {}
        # At Prometheus's own now (no ``time``): a whole second earlier may precede the first sample of a new target.
        params = {"timeout": f"{int(self._timeout)}s"}
        for answer in self._call(lambda: self._client.custom_query(query, params=params)):
            metric, value = answer.get("metric", {}), _number(answer.get("value", [0, "NaN"])[1]) or 0.0
            if value > 0 and self._cluster_of(metric) == cluster:
                found.setdefault(metric.get(SERIES_LABEL, ""), set()).update(n for n in labels if metric.get(n))
        return {
            name: SeriesFacts(name, name in found, tuple(n for n in labels if n in found.get(name, set()))) for name in metrics
        }

    def quota_saturation(self, start: datetime, end: datetime, quota_names: Mapping[str, str]) -> dict[str, float]:
        rows = self._instant(
            quota_saturation_query(int((end - start).total_seconds()), max(self._interval, SATURATION_STEP), by=self._by),
            at=end - timedelta(seconds=1),
        )
        return {
            key: value
            for metric, value in rows
            if (key := self._namespace_key(metric)) is not None and quota_names.get(key) == metric.get("resourcequota")
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


def _usage_of(allocated: Mapping[Placed, float], rows: Sequence[DcgmRow]) -> dict[str, NamespaceUsage]:
    """Per namespace key its whole GPUs' use, with each other resource's in ``other_resources``, each split by where
    it ran (``placed``: kept when any of it ran elsewhere than on-demand). Answers of one namespace and model add up
    (in a shared Prometheus a cluster's series may come by its label or cluster_id)."""
    measures: dict[str, dict[Placed, dict[str, float]]] = {"hours": {}, "idle_hours": {}, "util_hours": {}}
    for key, metric, resource, value, placement in rows:
        part, model = (key, resource, placement), metric.get("modelName") or "unknown model"
        if (per_part := measures.get(metric.get("measure", ""))) is not None:
            per_model = per_part.setdefault(part, {})
            per_model[model] = per_model.get(model, 0.0) + value
    hours, idle, util = measures["hours"], measures["idle_hours"], measures["util_hours"]
    placed: dict[Part, dict[Placement, NamespaceUsage]] = {}
    for part in set(allocated) | set(hours):
        placed.setdefault(part[:2], {})[part[2]] = NamespaceUsage(
            allocated.get(part, 0.0),
            hours.get(part, {}),
            {m: h for m, h in idle.get(part, {}).items() if h > 0},
            sum(util.get(part, {}).values()),
            util_model_hours=util.get(part, {}),
        )
    parts = {part: placed_usage(per_placement) for part, per_placement in placed.items()}
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


# The label the series query tags each answer with (a name no exporter uses).
SERIES_LABEL = "gpu_quota_metric"


def scrape_target(raw: Mapping[str, Any]) -> ScrapeTarget:
    """A target of the targets API as a value (``scrapeInterval`` is a Prometheus duration: "15s", "1m30s")."""
    labels = raw.get("labels") or {}
    return ScrapeTarget(
        pool=str(raw.get("scrapePool", "")),
        job=str(labels.get("job", "")),
        url=str(raw.get("scrapeUrl", "")),
        health=str(raw.get("health", "unknown")),
        last_error=str(raw.get("lastError", "")),
        interval_seconds=prometheus_duration(str(raw.get("scrapeInterval", ""))),
    )


_DURATION_PART = re.compile(r"(\d+)(ms|y|w|d|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def prometheus_duration(text: str) -> float | None:
    """Seconds of a Prometheus duration ("30s", "1m30s", "500ms"); None for anything else (or nothing)."""
    parts = _DURATION_PART.findall(text)
    if not text or "".join(number + unit for number, unit in parts) != text:
        return None
    return float(sum(int(number) * _UNIT_SECONDS[unit] for number, unit in parts))
