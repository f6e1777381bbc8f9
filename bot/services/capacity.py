"""A cached view of cluster capacity: allocatable GPUs (and the nodes' GPU models, for prices) and the
managed quotas, kept off the request path.

Every submission shows (and auto-approval checks) allocatable GPUs against the sum of all managed
quotas. Listing every node and every ResourceQuota of the cluster for each request cost most of a
request's CPU and two cluster-wide calls. ``CapacityCachingCluster`` wraps the cluster port and
answers those two lists from a view that is

- read once, then refreshed in a background thread when older than ``refresh_after`` (the caller
  gets the current view at once, never waits for the refresh);
- kept exact for this bot's own changes: a quota written (or read) through it updates the view at
  once, so auto-approvals in a row see each other's GPUs;
- read again synchronously when older than ``max_age`` (a refresh kept failing): past that age the
  figure is not trusted, and a failure surfaces as before ("capacity unknown").

Hand edits and node changes show up within ``refresh_after``.

It also remembers each namespace's quota as last read or written through it, with when: a caller
that can live with a quota ``max_age`` seconds old (a submission's card: the approval reads it again)
gets that copy instead of a read. The apply, the approval's recheck and every writer read the cluster.
Everything else passes through.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bot.domain.clusters import HOME, cluster_of
from bot.domain.quota import QuotaSnapshot
from bot.errors import GpuQuotaError
from bot.services.ports import GpuNodes, QuotaCluster, QuotaRefusal

log = logging.getLogger(__name__)


@dataclass
class _Entry:
    read_at: float
    nodes: GpuNodes
    totals: dict[str, dict[str, int]]  # {namespace: {resource: hard}}


def _in_a_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="capacity-refresh", daemon=True).start()


class CapacityCachingCluster:
    """``QuotaCluster`` with ``gpu_nodes`` and ``gpu_quota_totals(quota_names)`` served from a view."""

    def __init__(
        self,
        cluster: QuotaCluster,
        *,
        quota_names: Mapping[str, str],
        refresh_after: float = 30.0,
        max_age: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
        start: Callable[[Callable[[], None]], None] = _in_a_thread,
    ) -> None:
        self._cluster = cluster
        self._names = dict(quota_names)
        self._refresh_after = refresh_after
        self._max_age = max_age
        self._monotonic = monotonic
        self._start = start
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}  # per cluster (a key's cluster part)
        self._refreshing: set[str] = set()
        self._quotas: dict[tuple[str, str, str], tuple[float, QuotaSnapshot | None]] = {}

    # --- the cached view -----------------------------------------------------------------------

    def gpu_nodes(self, cluster: str = HOME) -> GpuNodes:
        return self._view(cluster).nodes

    def gpu_quota_totals(self, quota_names: Mapping[str, str]) -> dict[str, dict[str, int]]:
        if dict(quota_names) != self._names:
            return self._cluster.gpu_quota_totals(quota_names)  # not the view's question: ask the cluster
        clusters = sorted({cluster_of(namespace) for namespace in self._names})
        return {namespace: dict(hard) for cluster in clusters for namespace, hard in self._view(cluster).totals.items()}

    def _view(self, cluster: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(cluster)
            age = self._monotonic() - entry.read_at if entry is not None else None
            if entry is not None and age is not None and age <= self._max_age:
                if age > self._refresh_after and cluster not in self._refreshing:
                    self._refreshing.add(cluster)
                    self._start(lambda: self._refresh(cluster))
                return entry
        return self._read(cluster)  # no view yet, or too old to trust: the caller waits for a fresh one

    def _read(self, cluster: str) -> _Entry:
        """Both lists of ``cluster``, now; raises the cluster's errors."""
        nodes = self._cluster.gpu_nodes(cluster)
        totals = self._cluster.gpu_quota_totals({ns: name for ns, name in self._names.items() if cluster_of(ns) == cluster})
        entry = _Entry(read_at=self._monotonic(), nodes=nodes, totals=totals)
        with self._lock:
            self._entries[cluster] = entry
        return entry

    def _refresh(self, cluster: str) -> None:
        try:
            self._read(cluster)
        except GpuQuotaError as error:
            log.warning("capacity view not refreshed (kept until it is %.0f s old): %s", self._max_age, error)
        except Exception:
            log.exception("capacity view refresh crashed")
        finally:
            with self._lock:
                self._refreshing.discard(cluster)

    def _observe(self, snapshot: QuotaSnapshot | None, *, namespace: str, name: str, resource: str) -> None:
        """A quota just read or written is newer than the view: put it in."""
        with self._lock:
            self._quotas[(namespace, name, resource)] = (self._monotonic(), snapshot)
            entry = self._entries.get(cluster_of(namespace))
            if snapshot is not None and entry is not None and self._names.get(snapshot.namespace) == snapshot.name:
                entry.totals.setdefault(snapshot.namespace, {})[resource] = snapshot.hard

    # --- passed through --------------------------------------------------------------------------

    def read_quota(self, namespace: str, name: str, resource: str, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        if max_age > 0:
            with self._lock:
                read_at, snapshot = self._quotas.get((namespace, name, resource), (None, None))
            if read_at is not None and self._monotonic() - read_at <= max_age:
                return snapshot
        snapshot = self._cluster.read_quota(namespace, name, resource)
        self._observe(snapshot, namespace=namespace, name=name, resource=resource)
        return snapshot

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
        written = self._cluster.write_quota(
            namespace, name, resource, gpus=gpus, previous=previous, dry_run=dry_run, applied_by=applied_by
        )
        if not dry_run:
            self._observe(written, namespace=namespace, name=name, resource=resource)
        return written

    def quota_refusals(self) -> list[QuotaRefusal]:
        return self._cluster.quota_refusals()
