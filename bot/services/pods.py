"""What runs on a namespace's GPUs, by priority class: a small cached view over the ``Workloads`` port.

``status``, request cards and the blocked-workload alert ask for the same namespaces within seconds
of each other; each namespace's pod list and the cluster's PriorityClasses are kept for ``ttl``
seconds (30 by default), so a burst of requests costs one list call per namespace. A failed read is
remembered for ``failure_ttl`` seconds (5) only, so a hung API server costs one client timeout per
namespace then, not one per card rendered; callers get the reason (and a log line) and show the rest
of their answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from bot.domain.clusters import cluster_of
from bot.domain.policy import Policy
from bot.domain.priority import GpuPod, borrowed_class_warnings, pod_mix
from bot.domain.quota import QuotaScope
from bot.errors import GpuQuotaError
from bot.services.error_reasons import read_failure
from bot.services.ports import Workloads
from bot.services.views import PodsInView

log = logging.getLogger(__name__)
T = TypeVar("T")
_CLASSES = "\0priorityclasses"  # the cache key of the PriorityClass list (never a namespace name)


class PodView:
    def __init__(
        self,
        *,
        workloads: Workloads,
        policy: Policy,
        ttl: float = 30.0,
        failure_ttl: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._failure_ttl = failure_ttl
        self._failures: dict[str, tuple[float, GpuQuotaError]] = {}
        self._workloads = workloads
        self._policy = policy
        self._ttl = ttl
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, object]] = {}

    def pods(self, scope: QuotaScope, *, fresh: bool = False) -> list[GpuPod]:
        """The namespace's unfinished pods of the scope's resource (cached; read anew when ``fresh``); raises the port's errors."""
        namespace, resource = scope.namespace, scope.resource
        key = f"{namespace}/{resource}"
        return list(self._cached(key, lambda: tuple(self._workloads.gpu_pods(namespace, resource)), fresh=fresh))

    def in_view(self, scope: QuotaScope) -> PodsInView:
        """The scope's pods, their mix and class warnings; ``error`` says why when the cluster could not be read."""
        namespace = scope.namespace
        try:
            pods = self.pods(scope)
            allowed = self._policy.borrowed_priority_classes(namespace)
            cluster = cluster_of(namespace)
            read_classes = partial(self._workloads.priority_classes, cluster)
            values = self._cached(_CLASSES + cluster, read_classes) if allowed else {}
        except GpuQuotaError as error:
            log.warning("cannot read the GPU pods of %s: %s", namespace, error)
            return PodsInView(pod_mix([]), error=read_failure(error))
        warnings = borrowed_class_warnings(pods, allowed=allowed, values=values)
        return PodsInView(pod_mix(pods), tuple(pods), allowed, tuple(warnings))

    def _cached(self, key: str, read: Callable[[], T], *, fresh: bool = False) -> T:
        now = self._monotonic()
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and now - entry[0] < self._ttl and not fresh:
                return entry[1]  # type: ignore[return-value]
            failed = self._failures.get(key)
            if failed is not None and now - failed[0] < self._failure_ttl and not fresh:
                raise failed[1]
        try:
            value = read()  # outside the lock: one slow namespace does not hold up the others
        except GpuQuotaError as error:
            with self._lock:
                self._failures[key] = (now, error)
            raise
        with self._lock:
            self._cache[key] = (now, value)
            self._failures.pop(key, None)
        return value
