"""``ClusterInspection`` over several clusters: each call goes to the cluster a namespace key (or ``cluster``) names.

Like ``ClusterSet`` for the other cluster ports, whose health it shares: a cluster that stopped answering is
down for inspection too (``ClusterDown`` at once, no second timeout), and one that answers here is up for
the quota writes. What comes back carries the namespace key. Every call reads one cluster, so a down
cluster fails only the calls about it; the others answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TypeVar

from bot.adapters.clusters import ClusterSet
from bot.adapters.inspect import ClusterInspector
from bot.domain.clusters import HOME, namespace_key, split_key
from bot.domain.scheduling import (
    AutoscalerStatus,
    DaemonSetFacts,
    NodeFacts,
    PodFacts,
    PriorityClassFacts,
    SchedulerEvent,
    WorkloadPods,
)

T = TypeVar("T")


class ClusterInspections:
    """Implements ``ClusterInspection`` over one ``ClusterInspector`` per cluster of ``clusters``."""

    def __init__(self, clusters: ClusterSet, inspectors: Mapping[str, ClusterInspector]) -> None:
        self._clusters = clusters
        self._inspectors = dict(inspectors)

    def pod(self, namespace: str, name: str) -> PodFacts | None:
        cluster, bare = split_key(namespace)
        found = self._call(cluster, lambda inspector: inspector.pod(bare, name), one_object=True)
        return _keyed(found, cluster) if found is not None else None

    def workload_pods(self, namespace: str, name: str) -> WorkloadPods | None:
        cluster, bare = split_key(namespace)
        found = self._call(cluster, lambda inspector: inspector.workload_pods(bare, name))
        if found is None:
            return None
        return dataclasses.replace(found, pods=tuple(_keyed(pod, cluster) for pod in found.pods))

    def pods(self, namespace: str) -> list[PodFacts]:
        cluster, bare = split_key(namespace)
        return [_keyed(pod, cluster) for pod in self._call(cluster, lambda inspector: inspector.pods(bare))]

    def nodes(self, cluster: str = HOME) -> list[NodeFacts]:
        return self._call(cluster, lambda inspector: inspector.nodes())

    def scheduling_events(self, namespace: str, pod: str) -> list[SchedulerEvent]:
        cluster, bare = split_key(namespace)
        return self._call(cluster, lambda inspector: inspector.scheduling_events(bare, pod))

    def priority_class_facts(self, cluster: str = HOME) -> dict[str, PriorityClassFacts]:
        return self._call(cluster, lambda inspector: inspector.priority_class_facts())

    def autoscaler_status(self, cluster: str = HOME) -> AutoscalerStatus | None:
        return self._call(cluster, lambda inspector: inspector.autoscaler_status(), one_object=True)

    def daemon_sets(self, cluster: str = HOME) -> list[DaemonSetFacts]:
        return [
            dataclasses.replace(d, namespace=namespace_key(cluster, d.namespace))
            for d in self._call(cluster, lambda inspector: inspector.daemon_sets())
        ]

    def _call(self, cluster: str, call: Callable[[ClusterInspector], T], *, one_object: bool = False) -> T:
        return self._clusters.guarded(cluster, lambda: call(self._inspectors[cluster]), one_object=one_object)


def _keyed(pod: PodFacts, cluster: str) -> PodFacts:
    return dataclasses.replace(pod, namespace=namespace_key(cluster, pod.namespace))
