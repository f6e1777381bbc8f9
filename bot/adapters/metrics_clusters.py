"""The metrics of several clusters as one ``MetricsSource``, from the Prometheus servers they are read from.

Each cluster is read from its own Prometheus (``clusters.<name>.prometheus_url``) or from one that several
share (``PROMETHEUS_URL``, a Thanos or Mimir), where ``metrics.cluster_label`` tells their series apart
(``bot.adapters.prometheus.ClusterLabels``). Every source answers with namespace keys (``us-2/ns``; the
home cluster's bare), so its answers are merged as they are: no two sources hold one cluster.

All sources are asked at once, each on its own thread: a Prometheus that hangs costs a call its own
timeout, never one per source, and once it has failed with a temporary fault (refused, timed out, 5xx)
it is not asked again for ``retry_after`` seconds (its error is given at once), so the several calls
of one run do not each wait for it. One that fails leaves the others' figures standing: the call
raises ``PartialMetrics`` with them and, for each cluster of the failing Prometheus, why
(``days_by_cluster`` returns that in its ``Coverage`` instead). When no source answers the call fails
as one Prometheus would.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, timedelta
from typing import TypeVar

from bot.adapters.prometheus import PrometheusMetrics
from bot.domain.capacity import NodeLabelFacts, Placement, SplitState
from bot.domain.clusters import HOME
from bot.domain.costs import NamespaceUsage, Window
from bot.domain.stack_health import ScrapeTarget, SeriesFacts
from bot.errors import GpuQuotaError, PartialMetrics, PermanentError, TemporaryError
from bot.services.ports import ClusterCoverage, Coverage

log = logging.getLogger(__name__)
T = TypeVar("T")


class ClusterMetrics:
    """Implements ``MetricsSource`` and ``ClusterCoverage`` over ``sources``, each holding the clusters it names
    (``PrometheusMetrics.clusters``, by the key's cluster part); ``names``: each part's name as people read it;
    ``unread``: the clusters no source holds, with why (said unavailable in every answer)."""

    def __init__(
        self,
        sources: Sequence[PrometheusMetrics],
        *,
        names: Mapping[str, str],
        unread: Mapping[str, str] | None = None,
        retry_after: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sources = list(sources)
        self._names = dict(names)
        self._unread = dict(unread or {})
        self._retry_after = retry_after
        self._monotonic = monotonic
        self._failed: dict[int, tuple[float, TemporaryError]] = {}  # source index -> when it failed, how
        self._lock = threading.Lock()
        for why in self._unread.values():
            log.warning("%s: its GPU costs are not recorded", why)

    @property
    def queries(self) -> int:
        return sum(source.queries for source in self._sources)

    @property
    def cluster_spacings(self) -> dict[str, dict[date, dict[str, float]]]:
        """The sample spacing each source measured, per cluster and day."""
        return {cluster: days for source in self._sources for cluster, days in source.cluster_spacings.items()}

    @property
    def spacings(self) -> dict[date, dict[str, float]]:
        return self.cluster_spacings.get(HOME, {})

    @property
    def cluster_splits(self) -> dict[str, dict[date, SplitState]]:
        """Whether each source could tell its clusters' GPU-hours apart by node, per cluster and day."""
        return {cluster: days for source in self._sources for cluster, days in source.cluster_splits.items()}

    def node_label_facts(self, at: datetime, *, cluster: str = HOME) -> NodeLabelFacts:
        """What the nodes' labels of ``cluster`` say (``PrometheusMetrics.node_label_facts``), from the Prometheus
        holding it."""
        return self._of_cluster(cluster, lambda source: source.node_label_facts(at, cluster=cluster))

    # --- MetricsSource -----------------------------------------------------------------------

    def usage(self, windows: Sequence[Window], *, idle: bool = True) -> dict[date, dict[str, NamespaceUsage]]:
        answers, unavailable = self._ask(lambda source: source.usage(windows, idle=idle))
        merged: dict[date, dict[str, NamespaceUsage]] = {window.day: {} for window in windows}
        for answer in answers:
            for day, per_namespace in answer.items():
                merged.setdefault(day, {}).update(per_namespace)
        return _partial(merged, unavailable)

    def days_with_data(self, windows: Sequence[Window]) -> set[date]:
        answers, unavailable = self._ask(lambda source: source.days_with_data(windows))
        return _partial({day for days in answers for day in days}, unavailable)

    def days_by_cluster(self, windows: Sequence[Window]) -> Coverage:
        answers, unavailable = self._ask(lambda source: source.days_by_cluster(windows))
        return Coverage(
            held={cluster: days for answer in answers for cluster, days in answer.held.items()},
            unavailable=unavailable,
            absent={cluster: why for answer in answers for cluster, why in answer.absent.items()},
        )

    def allocated_at(self, moment: datetime) -> dict[str, float]:
        return self._merged(lambda source: source.allocated_at(moment))

    def peak_allocated(self, start: datetime, end: datetime) -> dict[str, float]:
        return self._merged(lambda source: source.peak_allocated(start, end))

    def idle_namespaces(self, moment: datetime, *, window: timedelta, threshold: float) -> dict[str, float]:
        return self._merged(lambda source: source.idle_namespaces(moment, window=window, threshold=threshold))

    def namespace_labels(self, moment: datetime, label: str) -> dict[str, str]:
        return self._merged(lambda source: source.namespace_labels(moment, label))

    def quota_saturation(self, start: datetime, end: datetime, quota_names: Mapping[str, str]) -> dict[str, float]:
        return self._merged(lambda source: source.quota_saturation(start, end, quota_names))

    def preemptible_use(
        self, start: datetime, end: datetime, priority_classes: Sequence[str]
    ) -> dict[str, dict[Placement, float]]:
        return self._merged(lambda source: source.preemptible_use(start, end, priority_classes))

    # --- ScrapeInspection: the Prometheus that holds the cluster ------------------------------

    def targets(self, cluster: str = HOME) -> list[ScrapeTarget]:
        return self._of_cluster(cluster, lambda source: source.targets(cluster))

    def series(self, metrics: Sequence[str], *, labels: Sequence[str] = (), cluster: str = HOME) -> dict[str, SeriesFacts]:
        return self._of_cluster(cluster, lambda source: source.series(metrics, labels=labels, cluster=cluster))

    def _of_cluster(self, cluster: str, call: Callable[[PrometheusMetrics], T]) -> T:
        """``call`` on the one source holding ``cluster`` (a cluster no source holds: why, as an error)."""
        for index, source in enumerate(self._sources):
            if cluster in source.clusters:
                return self._call(index, call)
        raise PermanentError(self._unread.get(cluster, f"no Prometheus holds cluster {self._names.get(cluster, cluster)}"))

    # --- asking every source -----------------------------------------------------------------

    def _merged(self, call: Callable[[PrometheusMetrics], dict[str, T]]) -> dict[str, T]:
        """Per namespace key, what each source answered (keys of different clusters: no overlap)."""
        answers, unavailable = self._ask(call)
        return _partial({key: value for answer in answers for key, value in answer.items()}, unavailable)

    def _ask(self, call: Callable[[PrometheusMetrics], T]) -> tuple[list[T], dict[str, str]]:
        """Every source at once: the answers, and why each cluster of a source that failed has none. When none
        answers, the first source's error is raised as it is."""
        with ThreadPoolExecutor(max_workers=len(self._sources), thread_name_prefix="prometheus") as pool:
            futures = [(source, pool.submit(self._call, index, call)) for index, source in enumerate(self._sources)]
            answers: list[T] = []
            errors: list[tuple[PrometheusMetrics, GpuQuotaError]] = []
            for source, future in futures:
                try:
                    answers.append(future.result())
                except GpuQuotaError as error:
                    errors.append((source, error))
        if errors and not answers:
            raise errors[0][1]
        unavailable = dict(self._unread)
        for source, failure in errors:
            why = f"the Prometheus of {', '.join(self._names.get(c, c) for c in source.clusters)}: {failure}"
            log.warning("metrics unavailable: %s", why)
            unavailable.update(dict.fromkeys(source.clusters, why))
        return answers, unavailable

    def _call(self, index: int, call: Callable[[PrometheusMetrics], T]) -> T:
        """``call`` on source ``index``, unless it failed with a temporary fault less than ``retry_after`` ago."""
        with self._lock:
            failed = self._failed.get(index)
        if failed is not None and self._monotonic() - failed[0] < self._retry_after:
            raise failed[1]
        try:
            answer = call(self._sources[index])
        except TemporaryError as error:
            with self._lock:
                self._failed[index] = (self._monotonic(), error)
            raise
        with self._lock:
            self._failed.pop(index, None)
        return answer


def _partial(figures: T, unavailable: Mapping[str, str]) -> T:
    """``figures`` when every source answered, else PartialMetrics carrying them."""
    if unavailable:
        raise PartialMetrics(figures, unavailable)
    return figures


def label_problems(metrics: ClusterCoverage, *, at: datetime, names: Mapping[str, str]) -> list[str]:
    """What ``check-config`` says of the clusters' metrics over the hour before ``at``: one line per cluster a
    shared Prometheus holds no series of (its cluster label missing) and per cluster whose Prometheus does not
    answer. ``names``: each key part's name as people read it."""
    coverage = metrics.days_by_cluster([Window(at.date(), at - timedelta(hours=1), at)])
    lines = [f"cluster {names.get(cluster, cluster)}: {why}" for cluster, why in sorted(coverage.absent.items())]
    return lines + sorted(set(coverage.unavailable.values()))
