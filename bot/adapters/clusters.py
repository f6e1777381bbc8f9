"""Several clusters behind the cluster ports: each call goes to the cluster a namespace key names.

The services speak namespace keys (``bot.domain.clusters``: ``name`` in the home cluster,
``cluster/name`` in another). ``ClusterSet`` implements ``QuotaCluster``, ``Workloads`` and
``KueueQuotas`` over one Kubernetes client (its own connection pool and timeouts) and one Kueue
client per cluster: it splits the key, calls that cluster with the bare name, and gives back what it
answered with the key in every namespace field. Calls that span the clusters (quota refusals, scheduling failures,
Workloads) ask each cluster and leave out, with a log line, one that fails.

One cluster down delays only itself. A cluster that does not answer (refused, reset, timed out:
``Unreachable``) is *down* from then on: for ``retry_after`` seconds every call to it fails at once
(``ClusterDown``, a TemporaryError: the apply waits and the reconcile tries again) instead of waiting
out its timeout again, and with several clusters at most ``in_flight`` calls (4) to one of them run at a
time, so a hanging cluster never holds more than that many of the bot's threads. The first answer after that makes it up again.
A call that finds every slot taken waits for one while the cluster answers; it is refused at once
while the cluster *hangs*: a read or write of one object (fast on any healthy API server: the
Kubernetes SLO for them is 1 s) has waited longer than ``slow_after`` for its answer. Whoever waits
to call a cluster (for a namespace's critical section) asks ``check_answering`` and gives up then too.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import TypeVar

from bot.adapters.kube import KubernetesCluster
from bot.adapters.kueue import KueueCluster
from bot.domain.clusters import HOME, namespace_key, split_key
from bot.domain.kueue import ClusterQueueSnapshot, PendingWorkload
from bot.domain.priority import GpuPod
from bot.domain.quota import QuotaSnapshot
from bot.errors import ClusterUnavailable, GpuQuotaError, PermanentError, TemporaryError, Unreachable
from bot.services.ports import GpuNodes, QuotaRefusal, SchedulingFailure

log = logging.getLogger(__name__)
T = TypeVar("T")
Keyed = TypeVar("Keyed", QuotaSnapshot, ClusterQueueSnapshot, QuotaRefusal, SchedulingFailure, GpuPod, PendingWorkload)


class ClusterDown(ClusterUnavailable):
    """A cluster has not answered since ``since``; calls to it wait until it is tried again."""


@dataclass(frozen=True)
class _InFlight:
    started: float  # time.monotonic(): how long a call waits is real time, whatever ``monotonic`` the set is given
    one_object: bool  # a read or write of one object: no answer past ``slow_after`` means the cluster hangs


@dataclass
class _Health:
    freed: threading.Condition  # notified when one of its calls ends (on the ClusterSet's lock)
    down_since: datetime | None = None
    cause: str = ""
    tried_at: float = 0.0
    calls: dict[object, _InFlight] = field(default_factory=dict)  # the calls in flight


@dataclass(frozen=True)
class ClusterState:
    """What ``/readyz``, ``/metrics`` and ``status`` say of a cluster."""

    cluster: str
    up: bool
    since: datetime | None  # down since (None: up)
    cause: str


class ClusterSet:
    """Implements ``QuotaCluster``, ``Workloads`` and ``KueueQuotas`` over each cluster's clients."""

    def __init__(
        self,
        members: Mapping[str, tuple[KubernetesCluster, KueueCluster]],
        *,
        retry_after: float = 10.0,
        in_flight: int | None = None,
        slow_after: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self._kube = {cluster: kube for cluster, (kube, _) in members.items()}
        self._kueue = {cluster: kueue for cluster, (_, kueue) in members.items()}
        self._retry_after = retry_after
        # A share of the work pool per cluster, so that a hanging one cannot take it all; with one cluster there
        # is nobody to keep a share for, and calls are never held back (as before clusters were configurable).
        self._in_flight = in_flight if in_flight is not None else (4 if len(members) > 1 else sys.maxsize)
        self._slow_after = slow_after
        self._monotonic = monotonic
        self._now = now
        self._lock = threading.Lock()
        self._health = {cluster: _Health(freed=threading.Condition(self._lock)) for cluster in self._kube}

    @property
    def clusters(self) -> list[str]:
        return sorted(self._kube)

    def states(self) -> list[ClusterState]:
        with self._lock:
            return [
                ClusterState(cluster, health.down_since is None, health.down_since, health.cause)
                for cluster, health in sorted(self._health.items())
            ]

    def check_answering(self, namespace: str) -> None:
        """Raise ``ClusterDown`` while a call to the cluster of ``namespace`` (a key) would be refused or would
        hang: it is down and not due for another try, or it hangs (see the module). Asks nothing of the
        cluster and takes no try of a down one."""
        cluster, _ = self._split(namespace)
        health = self._health[cluster]
        with self._lock:
            hanging = self._hanging(health)
            waited = self._monotonic() - health.tried_at
            if health.down_since is not None and (hanging is not None or waited < self._retry_after):
                since, cause, delay = health.down_since, health.cause, max(0.0, self._retry_after - waited)
            elif hanging is not None:
                since, cause, delay = (
                    self._now() - timedelta(seconds=hanging),
                    f"no answer for {hanging:.0f} s",
                    self._retry_after,
                )
            else:
                return
        raise ClusterDown(cluster, since, cause, delay=delay)

    def member(self, cluster: str) -> tuple[KubernetesCluster, KueueCluster]:
        """The clients of ``cluster`` (a key's cluster part), for the adapters sharing their connection."""
        return self._kube[cluster], self._kueue[cluster]

    def guarded(self, cluster: str, call: Callable[[], T], *, one_object: bool = False) -> T:
        """``call`` to ``cluster`` (a key's cluster part) kept by this set's health of it, as its own calls are:
        ``ClusterDown`` at once while it is down, down when it does not answer (``bot.adapters.inspect_clusters``)."""
        if cluster not in self._kube:
            raise PermanentError(f"no cluster {cluster} is configured")
        return self._call(cluster, call, one_object=one_object)

    # --- QuotaCluster ----------------------------------------------------------------------------

    def read_quota(self, namespace: str, name: str, resource: str, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        cluster, bare = self._split(namespace)
        read = self._call(cluster, lambda: self._kube[cluster].read_quota(bare, name, resource, max_age=max_age), one_object=True)
        return _keyed(read, cluster) if read is not None else None

    def write_quota(
        self,
        namespace: str,
        name: str,
        resource: str,
        *,
        gpus: int,
        previous: QuotaSnapshot | None,
        dry_run: bool,
        applied_by: str,
    ) -> QuotaSnapshot:
        cluster, bare = self._split(namespace)
        before = dataclasses.replace(previous, namespace=bare) if previous is not None else None
        written = self._call(
            cluster,
            lambda: self._kube[cluster].write_quota(
                bare, name, resource, gpus=gpus, previous=before, dry_run=dry_run, applied_by=applied_by
            ),
            one_object=True,
        )
        return _keyed(written, cluster)

    def gpu_nodes(self, cluster: str = HOME) -> GpuNodes:
        return self._call(cluster, lambda: self._kube[cluster].gpu_nodes())

    def gpu_quota_totals(self, quota_names: Mapping[str, str]) -> dict[str, dict[str, int]]:
        totals: dict[str, dict[str, int]] = {}
        for cluster, names in _by_cluster(quota_names).items():
            read = partial(self._kube[cluster].gpu_quota_totals, names)
            for bare, hard in self._call(cluster, read).items():
                totals[namespace_key(cluster, bare)] = hard
        return totals

    def quota_refusals(self) -> list[QuotaRefusal]:
        return self._each("quota refusals", lambda cluster: [_keyed(r, cluster) for r in self._kube[cluster].quota_refusals()])

    def namespace_exists(self, namespace: str) -> bool:
        cluster, bare = self._split(namespace)
        return self._call(cluster, lambda: self._kube[cluster].namespace_exists(bare), one_object=True)

    # --- Workloads -------------------------------------------------------------------------------

    def gpu_pods(self, namespace: str, resource: str) -> list[GpuPod]:
        cluster, bare = self._split(namespace)
        return [_keyed(pod, cluster) for pod in self._call(cluster, lambda: self._kube[cluster].gpu_pods(bare, resource))]

    def priority_classes(self, cluster: str = HOME) -> dict[str, int]:
        return self._call(cluster, lambda: self._kube[cluster].priority_classes())

    def scheduling_failures(self) -> list[SchedulingFailure]:
        return self._each(
            "scheduling failures", lambda cluster: [_keyed(f, cluster) for f in self._kube[cluster].scheduling_failures()]
        )

    # --- KueueQuotas -----------------------------------------------------------------------------

    def api_version(self, cluster: str = HOME) -> str | None:
        return self._call(cluster, lambda: self._kueue[cluster].api_version(), one_object=True)

    def read_cluster_queue(self, namespace: str, name: str, flavor: str, resource: str) -> ClusterQueueSnapshot:
        cluster, bare = self._split(namespace)
        read = partial(self._kueue[cluster].read_cluster_queue, bare, name, flavor, resource)
        return _keyed(self._call(cluster, read, one_object=True), cluster)

    def write_cluster_queue(
        self,
        namespace: str,
        name: str,
        flavor: str,
        resource: str,
        *,
        gpus: int,
        previous: ClusterQueueSnapshot,
        dry_run: bool,
        applied_by: str,
        borrowing_limit_delta: bool = False,
    ) -> ClusterQueueSnapshot:
        cluster, bare = self._split(namespace)
        before = dataclasses.replace(previous, namespace=bare)
        written = self._call(
            cluster,
            lambda: self._kueue[cluster].write_cluster_queue(
                bare,
                name,
                flavor,
                resource,
                gpus=gpus,
                previous=before,
                dry_run=dry_run,
                applied_by=applied_by,
                borrowing_limit_delta=borrowing_limit_delta,
            ),
            one_object=True,
        )
        return _keyed(written, cluster)

    def pending_workloads(self, namespaces: Iterable[str]) -> list[PendingWorkload]:
        wanted = _by_cluster({key: key for key in namespaces})
        return self._each(
            "Kueue workloads",
            lambda cluster: [_keyed(w, cluster) for w in self._kueue[cluster].pending_workloads(wanted[cluster])],
            only=wanted,
        )

    # --- helpers ---------------------------------------------------------------------------------

    def _split(self, key: str) -> tuple[str, str]:
        cluster, bare = split_key(key)
        if cluster not in self._kube:
            raise PermanentError(f"no cluster {cluster} is configured for {key}")
        return cluster, bare

    def _each(self, what: str, call: Callable[[str], list[Keyed]], *, only: Iterable[str] | None = None) -> list[Keyed]:
        """``call`` for every cluster (or those of ``only``), merged; one that fails is logged and left out."""
        found: list[Keyed] = []
        for cluster in sorted(only if only is not None else self._kube):
            try:
                found.extend(self._call(cluster, lambda: call(cluster)))  # noqa: B023 (called at once)
            except TemporaryError as error:
                log.warning("%s of cluster %s left out: %s", what, cluster or "home", error)
        return found

    def _call(self, cluster: str, call: Callable[[], T], *, one_object: bool = False) -> T:
        """``call`` to ``cluster``, unless it is down and not due for another try; its temporary faults make it down.
        ``one_object``: a read or write of one object (how long it waits tells whether the cluster hangs)."""
        health = self._health[cluster]
        self._refuse_while_down(cluster, health)
        with self._slot(cluster, health, one_object=one_object):
            try:
                result = call()
            except Unreachable as error:  # refused, reset or timed out: a cluster that answers (even 5xx) is up
                self._down(cluster, health, str(error))
                raise
            except GpuQuotaError:
                self._up(cluster, health)  # it answered
                raise
        self._up(cluster, health)
        return result

    @contextmanager
    def _slot(self, cluster: str, health: _Health, *, one_object: bool) -> Iterator[None]:
        """One of the cluster's ``in_flight`` slots for a call: waited for while its calls end, refused when
        none ended for ``slow_after`` or at once while the cluster hangs."""
        call = object()
        with self._lock:
            while len(health.calls) >= self._in_flight:
                if self._hanging(health) is not None or not health.freed.wait(self._slow_after):
                    raise TemporaryError(
                        f"cluster {cluster or 'home'} has too many calls in flight (it is slow to answer)", delay=2.0
                    )
            health.calls[call] = _InFlight(time.monotonic(), one_object)
        try:
            yield
        finally:
            with self._lock:
                del health.calls[call]
                health.freed.notify()

    def _hanging(self, health: _Health) -> float | None:
        """How long the oldest read or write of one object in flight has waited, if past ``slow_after`` (the lock held)."""
        started = [c.started for c in health.calls.values() if c.one_object]
        waited = time.monotonic() - min(started) if started else 0.0
        return waited if waited > self._slow_after else None

    def _refuse_while_down(self, cluster: str, health: _Health) -> None:
        with self._lock:
            if health.down_since is None:
                return
            waited = self._monotonic() - health.tried_at
            if waited >= self._retry_after:
                health.tried_at = self._monotonic()  # this call is the next try
                return
            since, cause = health.down_since, health.cause
        raise ClusterDown(cluster, since, cause, delay=self._retry_after - waited)

    def _down(self, cluster: str, health: _Health, cause: str) -> None:
        with self._lock:
            first = health.down_since is None
            health.down_since = health.down_since or self._now()
            health.cause, health.tried_at = cause, self._monotonic()
        if first:
            log.error("cluster %s is not answering: %s", cluster or "home", cause)

    def _up(self, cluster: str, health: _Health) -> None:
        with self._lock:
            was = health.down_since
            health.down_since, health.cause = None, ""
        if was is not None:
            log.info("cluster %s answers again (down since %s)", cluster or "home", was.isoformat())


def _by_cluster(by_key: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """{key: value} as {cluster: {bare name: value}}."""
    grouped: dict[str, dict[str, str]] = {}
    for key, value in by_key.items():
        cluster, bare = split_key(key)
        grouped.setdefault(cluster, {})[bare] = value
    return grouped


def _keyed(found: Keyed, cluster: str) -> Keyed:
    """What a member answered, its namespace the key again."""
    return dataclasses.replace(found, namespace=namespace_key(cluster, found.namespace))
