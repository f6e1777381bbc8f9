"""The scrape side of the sandbox's synthetic metrics (``bot.sandbox.history``): what ``doctor`` reads of Prometheus.

Implements ``ScrapeInspection`` for every cluster of the sandbox: one DCGM exporter and one kube-state-metrics
target each, scraped at ``interval`` (the policy's metrics.sample_interval), their series present (the DCGM ones with the pod's namespace
in ``namespace``, or ``exported_namespace`` where the history's runs were scraped so). ``scrape off dcgm`` in
the shell turns an exporter off: its targets are down with Prometheus's own words for a refused connection,
and its series are absent, as they are once the last samples go stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from bot.domain.clusters import HOME
from bot.domain.stack_health import DCGM_PROFILING, DCGM_UTIL, KSM_REQUESTS, Exporter, ScrapeTarget, SeriesFacts
from bot.sandbox.history import History

_URLS = {
    Exporter.DCGM: "http://nvidia-dcgm-exporter.gpu-operator.svc:9400/metrics",
    Exporter.KSM: "http://kube-state-metrics.monitoring.svc:8080/metrics",
}
_POOLS = {
    Exporter.DCGM: "serviceMonitor/gpu-operator/nvidia-dcgm-exporter/0",
    Exporter.KSM: "serviceMonitor/monitoring/kube-state-metrics/0",
}
_METRICS = {DCGM_UTIL: Exporter.DCGM, DCGM_PROFILING: Exporter.DCGM, KSM_REQUESTS: Exporter.KSM}


class SandboxScrape:
    def __init__(self, history: History, *, interval: timedelta, clusters: Sequence[str] = (HOME,)) -> None:
        self._history = history
        self._interval = interval.total_seconds()
        self._clusters = tuple(clusters)
        self.off: set[Exporter] = set()

    def targets(self, cluster: str = HOME) -> list[ScrapeTarget]:
        return [
            ScrapeTarget(
                pool=_POOLS[exporter],
                job=_POOLS[exporter].split("/")[2],
                url=_URLS[exporter],
                health="down" if exporter in self.off else "up",
                last_error=f'Get "{_URLS[exporter]}": dial tcp 10.96.0.42:{_URLS[exporter].split(":")[-1].split("/")[0]}: connect: connection refused'
                if exporter in self.off
                else "",
                interval_seconds=self._interval,
            )
            for exporter in Exporter
            if cluster in self._clusters
        ]

    def series(self, metrics: Sequence[str], *, labels: Sequence[str] = (), cluster: str = HOME) -> dict[str, SeriesFacts]:
        exported = any(pod.exported_labels for pod in self._history.pods)
        namespace = "exported_namespace" if exported else "namespace"
        found = {}
        for metric in metrics:
            present = cluster in self._clusters and metric in _METRICS and _METRICS[metric] not in self.off
            carried = tuple(label for label in labels if label == namespace) if metric != KSM_REQUESTS else ("namespace",)
            found[metric] = SeriesFacts(metric, present, tuple(label for label in carried if label in labels) if present else ())
        return found
