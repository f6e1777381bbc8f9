"""The Kueue side: one flavor and resource of a ClusterQueue read and written, and Workloads waiting for quota.

Kueue is found through discovery (``/apis/kueue.x-k8s.io``): ``v1beta2`` when served (Kueue 0.15 and
later), else ``v1beta1`` (whose ClusterQueue says ``spec.cohort`` for ``spec.cohortName``), asked once
per process. ``spec.resourceGroups`` is an atomic list, so a write is one JSON Patch on the indexes of
the read: a ``replace`` of ``metadata.resourceVersion`` with the read's (the registry compares the
patched object's version with the stored one: 409 when anyone wrote since; a ``test`` on it would fail
as a bare 422, like any test), ``test`` ops on the flavor's and the resource's names, the ``replace`` of
``nominalQuota`` (and of ``borrowingLimit`` when asked) and the bot's stamp annotations. A 409 or a
failed ``test`` is a ``QuotaConflict`` (read again), unless a fresh read finds the queue, the flavor or
the resource gone (``KueueObjectMissing``). Calls, their answers as the bot's errors and the stamp's
patch operations are ``bot.adapters.custom_objects``'.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from kubernetes import client

from bot.adapters.custom_objects import JSON_PATCH, Answered, call, stamp_operations, stamped, whole
from bot.adapters.kube import FIELD_MANAGER, KubeCalls
from bot.domain.kueue import ClusterQueueSnapshot, PendingWorkload, parse_shortfalls
from bot.errors import KueueObjectMissing, KueuePart, QuotaConflict
from bot.observability import count_error

log = logging.getLogger(__name__)
GROUP = "kueue.x-k8s.io"
SPOKEN = ("v1beta2", "v1beta1")  # the versions the bot speaks, the preferred first
COHORT_FIELD = {"v1beta2": "cohortName", "v1beta1": "cohort"}


class KueueCluster:
    """A ClusterQueue's quota for one flavor and resource as a quota target, and Kueue's waiting Workloads;
    built on the ``ApiClient`` of ``bot.adapters.kube``."""

    def __init__(self, api_client: client.ApiClient, *, timeout: tuple[float, float] = (5.0, 20.0)) -> None:
        self._calls = KueueCalls(api_client)
        self._timeout = timeout
        self._asked = False
        self._version: str | None = None
        self._served: tuple[str, ...] = ()

    def api_version(self) -> str | None:
        """The version of ``kueue.x-k8s.io`` the bot uses: ``v1beta2``, else ``v1beta1``; None when Kueue is not
        installed or serves neither. Asked once, then kept for the process (a failure to ask is not kept)."""
        if self._asked:
            return self._version
        try:
            group = call("discover Kueue", lambda: self._calls.get_kueue_group(_request_timeout=self._timeout), on=(404,))
        except Answered:
            group = {}
        self._served = tuple(str(v.get("version")) for v in group.get("versions") or [])
        self._version = next((v for v in SPOKEN if v in self._served), None)
        self._asked = True
        if self._version is None:
            log.info("Kueue is not usable: kueue.x-k8s.io serves %s", ", ".join(self._served) or "nothing")
        return self._version

    def read_cluster_queue(self, namespace: str, name: str, flavor: str, resource: str) -> ClusterQueueSnapshot:
        """The ClusterQueue ``name``'s quota of ``resource`` in ``flavor``, for the namespace it is governed for;
        ``KueueObjectMissing`` when Kueue, the queue, the flavor or the resource is not there."""
        version = self._require_version(name, flavor, resource)
        try:
            queue = call(
                f"read the ClusterQueue {name}",
                lambda: self._calls.get_cluster_queue(version, name, _request_timeout=self._timeout),
                on=(404,),
            )
        except Answered:
            raise KueueObjectMissing(KueuePart.CLUSTER_QUEUE, cluster_queue=name, flavor=flavor, resource=resource) from None
        return _snapshot(queue, namespace=namespace, flavor=flavor, resource=resource, version=version)

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
        """Set ``nominalQuota`` to ``gpus`` (and move a ``borrowingLimit`` by as much, never below 0, when
        ``borrowing_limit_delta``) on the queue exactly as ``previous`` read it, stamped ``applied_by``;
        ``dry_run``: the API server validates and stores nothing."""
        version = self._require_version(name, flavor, resource)
        operations = write_operations(previous, gpus=gpus, applied_by=applied_by, borrowing_limit_delta=borrowing_limit_delta)
        action = f"patch the ClusterQueue {name}" + (" (dry run)" if dry_run else "")
        try:
            written = call(
                action,
                lambda: self._calls.patch_cluster_queue(
                    version, name, operations, dry_run="All" if dry_run else None, _request_timeout=self._timeout
                ),
                on=(404, 422),
            )
        except Answered as answered:
            self.read_cluster_queue(namespace, name, flavor, resource)  # KueueObjectMissing when it is gone
            count_error("kubernetes", "conflict")
            log.info("The ClusterQueue %s changed since the bot read it (%s): reading it again", name, answered.said.message)
            raise QuotaConflict(f"the ClusterQueue {name} changed while the bot wrote it") from None
        return _snapshot(written, namespace=namespace, flavor=flavor, resource=resource, version=version)

    def pending_workloads(self, namespaces: Iterable[str]) -> list[PendingWorkload]:
        """The Workloads of ``namespaces`` whose ``QuotaReserved`` condition is False (finished and deactivated
        ones left out); none when Kueue is not installed."""
        version = self.api_version()
        if version is None:
            return []
        found: list[PendingWorkload] = []
        for namespace in namespaces:
            request = partial(self._calls.list_workloads, version, namespace, _request_timeout=self._timeout)
            listed = call(f"list the Kueue Workloads in {namespace}", request)
            found.extend(w for item in listed.get("items") or [] if (w := pending_workload(item)) is not None)
        return found

    # --- helpers -----------------------------------------------------------------------------

    def _require_version(self, name: str, flavor: str, resource: str) -> str:
        version = self.api_version()
        if version is None:
            raise KueueObjectMissing(KueuePart.KUEUE, cluster_queue=name, flavor=flavor, resource=resource, present=self._served)
        return version


class KueueCalls(KubeCalls):
    """The Kueue calls the bot makes, through the same ``ApiClient`` as ``KubeCalls`` and as
    ``kubernetes.client.CustomObjectsApi`` would make them (its generated module is not loaded); the
    answers are the API's JSON, as dicts."""

    def get_kueue_group(self, *, _request_timeout: Any) -> Any:
        return self._call("GET", f"/apis/{GROUP}", "object", {}, timeout=_request_timeout)

    def get_cluster_queue(self, version: str, name: str, *, _request_timeout: Any) -> Any:
        path = f"/apis/{GROUP}/{version}/clusterqueues/{{name}}"
        return self._call("GET", path, "object", {"name": name}, timeout=_request_timeout)

    def patch_cluster_queue(
        self, version: str, name: str, operations: list[dict[str, Any]], *, dry_run: str | None, _request_timeout: Any
    ) -> Any:
        return self._call(
            "PATCH",
            f"/apis/{GROUP}/{version}/clusterqueues/{{name}}",
            "object",
            {"name": name},
            query=([("dryRun", dry_run)] if dry_run else []) + [("fieldManager", FIELD_MANAGER)],
            body=operations,
            content_type=JSON_PATCH,
            timeout=_request_timeout,
        )

    def list_workloads(self, version: str, namespace: str, *, _request_timeout: Any) -> Any:
        path = f"/apis/{GROUP}/{version}/namespaces/{{namespace}}/workloads"
        return self._call("GET", path, "object", {"namespace": namespace}, timeout=_request_timeout)


def write_operations(
    previous: ClusterQueueSnapshot, *, gpus: int, applied_by: str, borrowing_limit_delta: bool
) -> list[dict[str, Any]]:
    """The JSON Patch that sets ``previous``'s quota to ``gpus`` on the queue exactly as it was read."""
    flavor_path = f"/spec/resourceGroups/{previous.group_index}/flavors/{previous.flavor_index}"
    quota_path = f"{flavor_path}/resources/{previous.resource_index}"
    operations: list[dict[str, Any]] = [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": previous.resource_version},
        {"op": "test", "path": f"{flavor_path}/name", "value": previous.flavor},
        {"op": "test", "path": f"{quota_path}/name", "value": previous.resource},
        {"op": "replace", "path": f"{quota_path}/nominalQuota", "value": gpus},
    ]
    if borrowing_limit_delta and previous.borrowing_limit is not None:
        moved = max(0, previous.borrowing_limit + gpus - previous.hard)
        operations.append({"op": "replace", "path": f"{quota_path}/borrowingLimit", "value": moved})
    stamps = stamp_operations(
        previous.resource, qualifier=previous.flavor, gpus=gpus, applied_by=applied_by, annotated=previous.annotated
    )
    return operations + stamps


def _snapshot(queue: Mapping[str, Any], *, namespace: str, flavor: str, resource: str, version: str) -> ClusterQueueSnapshot:
    metadata, spec, state = queue.get("metadata") or {}, queue.get("spec") or {}, queue.get("status") or {}
    name = str(metadata.get("name"))
    group_index, flavor_index, resource_index, quota = _locate(spec, name, flavor, resource)
    annotations = metadata.get("annotations")
    reserved = _usage(state.get("flavorsReservation"), flavor, resource)
    return ClusterQueueSnapshot(
        namespace=namespace,
        name=name,
        hard=whole(quota.get("nominalQuota")),
        used=whole(reserved.get("total")),
        limits=None,
        resource_version=str(metadata.get("resourceVersion")),
        bot_applied=stamped(annotations, resource, qualifier=flavor),
        flavor=flavor,
        resource=resource,
        group_index=group_index,
        flavor_index=flavor_index,
        resource_index=resource_index,
        borrowing_limit=whole(quota["borrowingLimit"]) if quota.get("borrowingLimit") is not None else None,
        cohort=spec.get(COHORT_FIELD[version]) or None,
        in_use=whole(_usage(state.get("flavorsUsage"), flavor, resource).get("total")),
        borrowed=whole(reserved.get("borrowed")),
        pending_workloads=int(state.get("pendingWorkloads") or 0),
        annotated=annotations is not None,
    )


def _locate(spec: Mapping[str, Any], name: str, flavor: str, resource: str) -> tuple[int, int, int, Mapping[str, Any]]:
    """Where ``flavor``'s quota of ``resource`` is in ``spec.resourceGroups``, and that quota."""
    groups = spec.get("resourceGroups") or []
    flavors = [(g, f, entry) for g, group in enumerate(groups) for f, entry in enumerate(group.get("flavors") or [])]
    found = next(((g, f, entry) for g, f, entry in flavors if entry.get("name") == flavor), None)
    if found is None:
        present = tuple(str(entry.get("name")) for _, _, entry in flavors)
        raise KueueObjectMissing(KueuePart.FLAVOR, cluster_queue=name, flavor=flavor, resource=resource, present=present)
    group_index, flavor_index, entry = found
    quotas = entry.get("resources") or []
    resource_index = next((r for r, quota in enumerate(quotas) if quota.get("name") == resource), None)
    if resource_index is None:
        present = tuple(str(quota.get("name")) for quota in quotas)
        raise KueueObjectMissing(KueuePart.RESOURCE, cluster_queue=name, flavor=flavor, resource=resource, present=present)
    return group_index, flavor_index, resource_index, quotas[resource_index]


def _usage(flavors: Any, flavor: str, resource: str) -> Mapping[str, Any]:
    """One flavor/resource entry of ``flavorsReservation`` or ``flavorsUsage`` (empty before Kueue reports it)."""
    entry: Mapping[str, Any] = next((f for f in flavors or [] if f.get("name") == flavor), {})
    return next((r for r in entry.get("resources") or [] if r.get("name") == resource), {})


def pending_workload(item: Mapping[str, Any]) -> PendingWorkload | None:
    """A Workload of the API's JSON as a ``PendingWorkload``; None unless its ``QuotaReserved`` is False
    (and it neither finished nor was deactivated)."""
    metadata, spec = item.get("metadata") or {}, item.get("spec") or {}
    conditions = {c.get("type"): c for c in (item.get("status") or {}).get("conditions") or []}
    reserved = conditions.get("QuotaReserved")
    finished = (conditions.get("Finished") or {}).get("status") == "True"
    if reserved is None or reserved.get("status") != "False" or finished or spec.get("active") is False:
        return None
    message = str(reserved.get("message") or "")
    return PendingWorkload(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or "?"),
        queue_name=str(spec.get("queueName") or ""),
        created_at=_moment(metadata.get("creationTimestamp")),
        waiting_since=_moment(reserved.get("lastTransitionTime")),
        reason=str(reserved.get("reason") or ""),
        message=message,
        shortfalls=parse_shortfalls(message),
        requests=_requests(spec.get("podSets") or []),
    )


def _requests(pod_sets: list[Mapping[str, Any]]) -> dict[str, int]:
    """The extended resources (names with a ``/``) a Workload's pods request in all: per pod the sum over its
    containers or its largest init container, whichever is more (as the scheduler counts), times the count."""
    total: dict[str, int] = {}
    for pod_set in pod_sets:
        pod = ((pod_set.get("template") or {}).get("spec")) or {}
        containers = [_container_requests(c) for c in pod.get("containers") or []]
        init = [_container_requests(c) for c in pod.get("initContainers") or []]
        for name in {n for requests in containers + init for n in requests}:
            per_pod = max(sum(r.get(name, 0) for r in containers), max((r.get(name, 0) for r in init), default=0))
            total[name] = total.get(name, 0) + per_pod * int(pod_set.get("count") or 1)
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    requests = (container.get("resources") or {}).get("requests") or {}
    return {name: whole(value, up=True) for name, value in requests.items() if "/" in name}


def _moment(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
