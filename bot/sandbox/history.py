"""Synthetic GPU usage histories with known truth.

A ``History`` is a list of pod runs (namespace, GPUs, node, model, start/end, utilisation), and the labels of
the nodes they ran on (capacity type, pool). From it:

- ``write_openmetrics`` writes what kube-state-metrics and the DCGM exporter would have exposed,
  sample by sample, for ``promtool tsdb create-blocks-from openmetrics`` (tests, benchmark);
- ``HistoryMetrics`` answers the bot's ``MetricsSource`` questions by summing the same samples in
  Python: the truth the Prometheus tests compare against, and the sandbox shell's metrics.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any, TextIO

from bot.domain.capacity import (
    ON_DEMAND_PLACEMENT,
    Placement,
    SplitState,
    ksm_label_name,
    placement_of,
    read_node,
    split_state,
)
from bot.domain.clusters import HOME
from bot.domain.costs import NamespaceUsage, Window, placed_usage

A100 = "NVIDIA A100-SXM4-80GB"
H100 = "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class PodRun:
    namespace: str
    pod: str
    gpus: int
    node: str
    model: str
    start: datetime
    end: datetime
    utilisation: float  # 0..1, the level it hovers around
    wobble: float = 0.0  # +/- variation over time, deterministic
    profiling: bool = True  # False: only DCGM_FI_DEV_GPU_UTIL (no profiling module on the node)
    exported_labels: bool = False  # True: scraped with honorLabels false (exported_namespace, exported_pod)
    scheduled: bool = True  # False: Pending (node ""), never counted
    priority_class: str = ""  # spec.priorityClassName; set: exported in kube_pod_info

    def running_at(self, moment: datetime) -> bool:
        return self.scheduled and self.start <= moment < self.end

    def utilisation_at(self, moment: datetime, gpu: int) -> float:
        if not self.wobble:
            return self.utilisation
        phase = moment.timestamp() / 3600.0 + gpu * 1.3 + zlib.crc32(self.pod.encode()) % 7
        return min(1.0, max(0.0, self.utilisation + self.wobble * math.sin(phase)))


@dataclass
class History:
    step: timedelta
    start: datetime
    end: datetime
    pods: list[PodRun] = field(default_factory=list)
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    unattached_gpus: int = 0  # GPUs with no pod, as DCGM reports them behind a ServiceMonitor
    dcgm_step: timedelta | None = None  # the DCGM exporter's own sample spacing (default: ``step``)
    # ``requests.nvidia.com/gpu`` hard of each namespace's quota (``compute-quota``), exported by kube-state-metrics
    # over the whole history; its ``used`` is what the pods that have not finished request, Pending ones included.
    quotas: dict[str, int] = field(default_factory=dict)
    # A quota's hard from a moment on (None: the quota does not exist then), in the order they happened.
    quota_changes: dict[str, list[tuple[datetime, int | None]]] = field(default_factory=dict)
    # A second GPU quota of a namespace (name, hard), never the policy's, used as much as the first.
    extra_quotas: dict[str, tuple[str, int]] = field(default_factory=dict)
    # The Kubernetes labels of nodes (node -> label -> value), exported by kube-state-metrics in kube_node_labels
    # (its allowlist naming them) over the whole history; a node not listed has no kube_node_labels series.
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def dcgm_spacing(self) -> timedelta:
        return self.dcgm_step or self.step

    def quota_used(self, namespace: str, moment: datetime) -> int:
        """GPUs the quota counts as used at ``moment``: admitted pods, running or Pending, until they end."""
        return sum(pod.gpus for pod in self.pods if pod.namespace == namespace and pod.start <= moment < pod.end)

    def hard_at(self, namespace: str, moment: datetime) -> int | None:
        """The hard of the namespace's quota at ``moment``; None while it does not exist."""
        hard: int | None = self.quotas[namespace]
        for since, value in self.quota_changes.get(namespace, []):
            if since <= moment:
                hard = value
        return hard

    def steps(self, start: datetime, end: datetime, step: timedelta | None = None) -> Iterator[datetime]:
        """Sample times in [start, end), aligned to ``step`` (default: the kube-state-metrics step)."""
        size = int((step or self.step).total_seconds())
        first = math.ceil(start.timestamp() / size) * size
        stamp = first
        while stamp < end.timestamp():
            yield datetime.fromtimestamp(stamp, timezone.utc)
            stamp += size


# --- truth -------------------------------------------------------------------------------------


class HistoryMetrics:
    """``MetricsSource`` computed from a History: exact sums over the same samples Prometheus stores."""

    def __init__(
        self, history: History, *, idle_threshold: float = 0.05, pool_label: str | None = None, pools: Sequence[str] = ()
    ) -> None:
        self.history = history
        self._idle_threshold = idle_threshold
        self._pool_label = pool_label
        self._pools = tuple(pools)
        # As the Prometheus source records it: whether each day read could be split by node.
        self.splits: dict[date, SplitState] = {}

    @property
    def cluster_splits(self) -> dict[str, dict[date, SplitState]]:
        return {HOME: self.splits}

    def placement(self, node: str) -> Placement:
        """Where the pods of ``node`` ran as the price list tells them apart (a node without labels: on-demand)."""
        labels = self.history.node_labels.get(node)
        if labels is None:
            return ON_DEMAND_PLACEMENT
        return placement_of(read_node(labels, self._pool_label), self._pools)

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        state = split_state(self.history.node_labels.values(), self._pool_label)
        self.splits.update({window.day: state for window in windows})
        return {window.day: self.window_usage(window) for window in windows}

    def window_usage(self, window: Window) -> dict[str, NamespaceUsage]:
        """Sums over the samples in the window: allocated GPU-steps from the pods (kube-state-metrics
        spacing), per-GPU utilisation from DCGM (its own spacing); each DCGM sample under the threshold
        is an idle sample. Utilisation is the value Prometheus stores (what the exporter wrote)."""
        ksm_hours = self.history.step.total_seconds() / 3600
        dcgm_step = self.history.dcgm_spacing
        dcgm_hours = dcgm_step.total_seconds() / 3600
        Part = tuple[str, Placement]
        allocated: dict[Part, float] = {}
        models: dict[Part, dict[str, float]] = {}
        idle: dict[Part, dict[str, float]] = {}
        util: dict[Part, dict[str, float]] = {}
        for pod in self.history.pods:
            lo, hi = max(window.start, pod.start), min(window.end, pod.end)
            if not pod.scheduled or lo >= hi:
                continue
            part = (pod.namespace, self.placement(pod.node))
            allocated[part] = allocated.get(part, 0.0) + pod.gpus * len(list(self.history.steps(lo, hi))) * ksm_hours
            moments = list(self.history.steps(lo, hi, dcgm_step))
            if not moments:
                continue
            for gpu in range(pod.gpus):
                values = [stored_utilisation(pod, moment, gpu) for moment in moments]
                _add(models, part, pod.model, len(values) * dcgm_hours)
                _add(util, part, pod.model, sum(values) * dcgm_hours)
                _add(idle, part, pod.model, sum(1 for v in values if v < self._idle_threshold) * dcgm_hours)
        placed: dict[str, dict[Placement, NamespaceUsage]] = {}
        for namespace, placement in set(allocated) | set(models):
            part = (namespace, placement)
            placed.setdefault(namespace, {})[placement] = NamespaceUsage(
                allocated.get(part, 0.0),
                models.get(part, {}),
                {m: h for m, h in idle.get(part, {}).items() if h > 0},
                sum(util.get(part, {}).values()),
                util_model_hours=util.get(part, {}),
            )
        return {ns: placed_usage(parts) for ns, parts in placed.items()}

    def days_with_data(self, windows: Sequence[Window]) -> set[date]:
        return {w.day for w in windows if w.start < self.history.end and w.end > self.history.start}

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        totals: dict[str, float] = {}
        for pod in self.history.pods:
            if pod.running_at(moment):
                totals[pod.namespace] = totals.get(pod.namespace, 0.0) + pod.gpus
        return totals

    def preemptible_use(
        self, start: datetime, end: datetime, priority_classes: Sequence[str]
    ) -> dict[str, dict[Placement, float]]:
        """Per namespace, the share of its running GPU samples in [start, end) of pods of ``priority_classes``, at each
        placement (``PreemptibleWork``)."""
        every: dict[str, float] = {}
        chosen: dict[str, dict[Placement, float]] = {}
        for pod in self.history.pods:
            samples = pod.gpus * sum(1 for m in self.history.steps(max(start, pod.start), min(end, pod.end)) if pod.running_at(m))
            if not samples:
                continue
            every[pod.namespace] = every.get(pod.namespace, 0.0) + samples
            if pod.priority_class in priority_classes:
                per_place = chosen.setdefault(pod.namespace, {})
                placement = self.placement(pod.node)
                per_place[placement] = per_place.get(placement, 0.0) + samples
        return {ns: {p: n / every[ns] for p, n in per_place.items()} for ns, per_place in chosen.items()}

    def peak_allocated(self, start: datetime, end: datetime) -> dict[str, float]:
        peaks: dict[str, float] = {}
        for moment in self.history.steps(start, end):
            for namespace, gpus in self.allocated_at(moment).items():
                peaks[namespace] = max(peaks.get(namespace, 0.0), gpus)
        return peaks

    def quota_saturation(self, start: datetime, end: datetime, quota_names: Mapping[str, str]) -> dict[str, float]:
        """The share of the samples in [start, end) at which each namespace's ``compute-quota`` was full: used
        equal to its non-zero hard (a moment without the quota, or over it, is not at it)."""
        moments = list(self.history.steps(start, end))
        at_quota = {
            ns: sum(1 for m in moments if (hard := self.history.hard_at(ns, m)) and self.history.quota_used(ns, m) == hard)
            for ns in self.history.quotas
            if quota_names.get(ns) == "compute-quota"
        }
        return {ns: count / len(moments) for ns, count in at_quota.items() if moments}

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        """Namespaces with a pod running (almost) all of the window, every GPU under ``threshold``."""
        start = moment - window
        needed = len(list(self.history.steps(start, moment))) * 0.95
        highest: dict[str, float] = {}
        held: set[str] = set()
        for pod in self.history.pods:
            moments = [m for m in self.history.steps(max(start, pod.start), min(moment, pod.end)) if pod.running_at(m)]
            if not moments:
                continue
            if len(moments) >= needed:
                held.add(pod.namespace)
            for gpu in range(pod.gpus):
                peak = max(pod.utilisation_at(m, gpu) for m in moments)
                highest[pod.namespace] = max(highest.get(pod.namespace, 0.0), peak)
        return {ns: value for ns, value in highest.items() if value < threshold and ns in held}

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        return {ns: labels[label] for ns, labels in self.history.namespace_labels.items() if label in labels}


# --- OpenMetrics for promtool ------------------------------------------------------------------


RULE = "gpu_quota:gpu_idle:bool"  # deploy/helm/gpu-quota-bot/files/recording-rules.yaml


def write_openmetrics(history: History, out: TextIO, *, idle_rule: float | None = None) -> int:
    """Write the history as OpenMetrics text (timestamps in seconds, ``# EOF`` last); returns samples written.
    ``idle_rule``: also the series the shipped recording rule ``gpu_quota:gpu_idle:bool`` would have
    recorded with this threshold (at the DCGM spacing), as on a cluster where the chart's rules run."""
    written = 0
    linger = timedelta(minutes=30)  # finished pods stay visible (phase no longer Running) for a while

    def series(name: str, labels: dict[str, str], points: Iterator[tuple[datetime, float]]) -> None:
        nonlocal written
        label_text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        for moment, value in points:
            out.write(f"{name}{{{label_text}}} {value:g} {int(moment.timestamp())}\n")
            written += 1

    def family(name: str, kind: str = "gauge") -> None:
        out.write(f"# TYPE {name} {kind}\n")

    pods = history.pods
    family("kube_pod_container_resource_requests")
    for pod in pods:
        labels = {
            "namespace": pod.namespace,
            "pod": pod.pod,
            "uid": f"uid-{pod.pod}",
            "container": "main",
            "node": pod.node if pod.scheduled else "",
            "resource": "nvidia_com_gpu",
            "unit": "integer",
        }
        series(
            "kube_pod_container_resource_requests",
            labels,
            ((m, pod.gpus) for m in history.steps(max(pod.start, history.start), min(pod.end + linger, history.end))),
        )
    with_class = [pod for pod in pods if pod.priority_class and pod.scheduled]
    if with_class:
        family("kube_pod_info")
    for pod in with_class:
        labels = {
            "namespace": pod.namespace,
            "pod": pod.pod,
            "uid": f"uid-{pod.pod}",
            "node": pod.node,
            "priority_class": pod.priority_class,
        }
        series(
            "kube_pod_info",
            labels,
            ((m, 1.0) for m in history.steps(max(pod.start, history.start), min(pod.end + linger, history.end))),
        )
    family("kube_pod_status_phase")
    for pod in pods:
        labels = {"namespace": pod.namespace, "pod": pod.pod, "uid": f"uid-{pod.pod}", "phase": "Running"}
        series(
            "kube_pod_status_phase",
            labels,
            (
                (m, 1.0 if pod.running_at(m) else 0.0)
                for m in history.steps(max(pod.start, history.start), min(pod.end + linger, history.end))
            ),
        )
    for metric, scale, needs_profiling in (("DCGM_FI_DEV_GPU_UTIL", 100.0, False), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1.0, True)):
        family(metric)
        for pod in pods:
            if not pod.scheduled or (needs_profiling and not pod.profiling):
                continue
            for gpu in range(pod.gpus):
                labels = _dcgm_labels(pod, gpu)
                series(
                    metric,
                    labels,
                    (
                        (m, round(pod.utilisation_at(m, gpu) * scale, 4))
                        for m in history.steps(max(pod.start, history.start), min(pod.end, history.end), history.dcgm_spacing)
                    ),
                )
        for gpu in range(history.unattached_gpus):
            labels = {
                "gpu": str(gpu),
                "UUID": f"GPU-spare-{gpu}",
                "device": f"nvidia{gpu}",
                "modelName": A100,
                "Hostname": "gpu-node-spare",
                "namespace": "gpu-operator",
                "pod": "dcgm-exporter-spare",
            }
            series(metric, labels, ((m, 0.0) for m in history.steps(history.start, history.end, history.dcgm_spacing)))
    if idle_rule is not None:
        family(RULE)
        for pod in pods:
            if not pod.scheduled:
                continue
            for gpu in range(pod.gpus):
                labels = {**_dcgm_labels(pod, gpu), "namespace": pod.namespace, "threshold": f"{idle_rule:g}"}
                series(
                    RULE,
                    labels,
                    (
                        (m, 1.0 if stored_utilisation(pod, m, gpu) < idle_rule else 0.0)
                        for m in history.steps(max(pod.start, history.start), min(pod.end, history.end), history.dcgm_spacing)
                    ),
                )
    if history.quotas or history.extra_quotas:
        family("kube_resourcequota")
    steps = list(history.steps(history.start, history.end))
    quotas = [(ns, "compute-quota", [(m, history.hard_at(ns, m)) for m in steps]) for ns in sorted(history.quotas)]
    quotas += [(ns, name, [(m, hard) for m in steps]) for ns, (name, hard) in sorted(history.extra_quotas.items())]
    for namespace, name, hards in quotas:
        for kind in ("hard", "used"):
            labels = {"namespace": namespace, "resourcequota": name, "resource": "requests.nvidia.com/gpu", "type": kind}
            series(
                "kube_resourcequota",
                labels,
                ((m, hard if kind == "hard" else history.quota_used(namespace, m)) for m, hard in hards if hard is not None),
            )
    if history.node_labels:
        family("kube_node_labels")
    for node, node_labels in sorted(history.node_labels.items()):
        labels = {"node": node, **{ksm_label_name(k): v for k, v in sorted(node_labels.items())}}
        series("kube_node_labels", labels, ((m, 1.0) for m in history.steps(history.start, history.end)))
    family("kube_namespace_labels")
    for namespace, namespace_labels in sorted(history.namespace_labels.items()):
        labels = {"namespace": namespace, **{f"label_{k}": v for k, v in namespace_labels.items()}}
        series("kube_namespace_labels", labels, ((m, 1.0) for m in history.steps(history.start, history.end)))
    out.write("# EOF\n")
    return written


def stored_utilisation(pod: PodRun, moment: datetime, gpu: int) -> float:
    """The utilisation (0..1) Prometheus holds for one sample: the profiling metric where the node has
    it, else GPU_UTIL / 100, each rounded as ``write_openmetrics`` writes it."""
    value = pod.utilisation_at(moment, gpu)
    return round(value, 4) if pod.profiling else round(value * 100.0, 4) / 100.0


def _dcgm_labels(pod: PodRun, gpu: int) -> dict[str, str]:
    labels = {
        "gpu": str(gpu),
        "UUID": f"GPU-{pod.pod}-{gpu}",
        "device": f"nvidia{gpu}",
        "modelName": pod.model,
        "Hostname": pod.node,
    }
    if pod.exported_labels:
        labels.update(
            {
                "namespace": "gpu-operator",
                "pod": f"dcgm-exporter-{pod.node}",
                "exported_namespace": pod.namespace,
                "exported_pod": pod.pod,
                "exported_container": "main",
            }
        )
    else:
        labels.update({"namespace": pod.namespace, "pod": pod.pod, "container": "main"})
    return labels


# --- ready-made histories ----------------------------------------------------------------------


# The sandbox's synthetic use begins on this fixed day, whatever today is: a given day's numbers are
# the same on every machine and every run, so the README's digest example is exactly what a reader gets.
SANDBOX_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def sandbox_history(now: datetime, *, ahead: int = 30, step: timedelta = timedelta(minutes=5), seed: int = 7) -> History:
    """Plausible use of the sandbox's two namespaces from ``SANDBOX_START`` to ``ahead`` days after ``now``
    (the shell's clock can move forward). The same seed always gives the same pods from the start on."""
    rng = random.Random(seed)
    size = int(step.total_seconds())
    aligned = datetime.fromtimestamp(int(now.timestamp()) // size * size, timezone.utc)
    start, end = SANDBOX_START, max(aligned, SANDBOX_START) + timedelta(days=ahead)
    history = History(
        step=step,
        start=start,
        end=end,
        namespace_labels={"ai-frontier-research": {"team": "frontier"}, "biz-model-serving": {"team": "business"}},
    )
    # Serving: a steady fleet on H100s, busy by day.
    for index in range(3):
        history.pods.append(
            PodRun(
                "biz-model-serving",
                f"serving-{index}",
                4,
                f"gpu-node-{'abc'[index]}",
                H100,
                start,
                end + timedelta(days=1),
                0.55,
                wobble=0.3,
            )
        )
    # Frontier: bursty experiments on A100s, some of them left idle.
    moment = start
    counter = 0
    while moment < end:
        length = timedelta(hours=rng.choice([3, 6, 12, 20, 30]))
        gpus = rng.choice([1, 2, 2, 3])
        idle = rng.random() < 0.2
        history.pods.append(
            PodRun(
                "ai-frontier-research",
                f"experiment-{counter}",
                gpus,
                "gpu-node-a",
                A100,
                moment,
                min(moment + length, end + timedelta(days=1)),
                0.02 if idle else rng.uniform(0.4, 0.9),
                wobble=0.0 if idle else 0.1,
            )
        )
        counter += 1
        moment += timedelta(hours=rng.choice([2, 4, 8, 16]))
    return history


def _add(table: dict[Any, dict[str, float]], namespace: Any, model: str, hours: float) -> None:
    per_model = table.setdefault(namespace, {})
    per_model[model] = per_model.get(model, 0.0) + hours
