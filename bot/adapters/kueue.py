"""The Kueue side: one flavor and resource of a ClusterQueue read and written, and Workloads waiting for quota.

Kueue is found through discovery (``/apis/kueue.x-k8s.io``): ``v1beta2`` when served (Kueue 0.15 and
later), else ``v1beta1`` (whose ClusterQueue says ``spec.cohort`` for ``spec.cohortName``), asked once
per process. ``spec.resourceGroups`` is an atomic list, so a write is one JSON Patch on the indexes of
the read: a ``replace`` of ``metadata.resourceVersion`` with the read's (the registry compares the
patched object's version with the stored one: 409 when anyone wrote since; a ``test`` on it would fail
as a bare 422, like any test), ``test`` ops on the flavor's and the resource's names, the ``replace`` of
``nominalQuota`` (and of ``borrowingLimit`` when asked) and the bot's stamp annotations. A 409 or a
failed ``test`` is a ``QuotaConflict`` (read again), unless a fresh read finds the queue, the flavor or
the resource gone (``KueueObjectMissing``). The client's exceptions never leave this module; their
messages are the API server's, which carry no credentials.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from bot.adapters.kube import FIELD_MANAGER, KubeCalls
from bot.domain.kueue import ClusterQueueSnapshot, PendingWorkload, parse_shortfalls
from bot.domain.quota import stamp_annotations
from bot.errors import KueueObjectMissing, KueuePart, PermanentError, QuotaConflict, TemporaryError
from bot.observability import count_error

log = logging.getLogger(__name__)
T = TypeVar("T")
GROUP = "kueue.x-k8s.io"
SPOKEN = ("v1beta2", "v1beta1")  # the versions the bot speaks, the preferred first
COHORT_FIELD = {"v1beta2": "cohortName", "v1beta1": "cohort"}
JSON_PATCH = "application/json-patch+json"
_REJECTED_PATCH = "the server rejected our request due to an error in our request"  # patch.go's 422 for an op that does not apply


@dataclass(frozen=True)
class _Said:
    """A Status answer of the API server: its code, reason, message and details."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    retry_after: float = 1.0  # seconds: the Retry-After header, else details.retryAfterSeconds

    @property
    def failed_patch_operation(self) -> bool:
        """A JSON Patch operation did not apply (a failed ``test``, a path not there): patch.go's bare 422,
        unlike a validation 422, which names the kind and its causes."""
        return self.code == 422 and self.message == _REJECTED_PATCH and not self.details.get("kind")

    @property
    def webhook_denied(self) -> bool:
        return self.code == 403 and self.message.startswith("admission webhook")


class _Answered(Exception):
    """Internal: an answer the caller interprets itself (a missing object, a failed patch operation)."""

    def __init__(self, said: _Said) -> None:
        super().__init__(said.message)
        self.said = said


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
            group = self._call("discover Kueue", lambda: self._calls.get_kueue_group(_request_timeout=self._timeout), on=(404,))
        except _Answered:
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
            queue = self._call(
                f"read the ClusterQueue {name}",
                lambda: self._calls.get_cluster_queue(version, name, _request_timeout=self._timeout),
                on=(404,),
            )
        except _Answered:
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
            written = self._call(
                action,
                lambda: self._calls.patch_cluster_queue(
                    version, name, operations, dry_run="All" if dry_run else None, _request_timeout=self._timeout
                ),
                on=(404, 422),
            )
        except _Answered as answered:
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
            call = partial(self._calls.list_workloads, version, namespace, _request_timeout=self._timeout)
            listed = self._call(f"list the Kueue Workloads in {namespace}", call)
            found.extend(w for item in listed.get("items") or [] if (w := pending_workload(item)) is not None)
        return found

    # --- helpers -----------------------------------------------------------------------------

    def _require_version(self, name: str, flavor: str, resource: str) -> str:
        version = self.api_version()
        if version is None:
            raise KueueObjectMissing(KueuePart.KUEUE, cluster_queue=name, flavor=flavor, resource=resource, present=self._served)
        return version

    def _call(self, action: str, call: Callable[[], T], *, on: tuple[int, ...] = ()) -> T:
        """Run a client call; an answer of a status in ``on`` (a 422 only for a JSON Patch operation that did not
        apply) raises ``_Answered`` for the caller, any other failure the bot's error kind."""
        try:
            return call()
        except ApiException as error:
            said = _said(error)
            if said.code in on and (said.code != 422 or said.failed_patch_operation):
                raise _Answered(said) from None
            translated = _translate(said, action)
            count_error("kubernetes", "conflict" if isinstance(translated, QuotaConflict) else _kind(translated))
            raise translated from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            log.warning("Kubernetes API unreachable while trying to %s: %s", action, type(error).__name__)
            count_error("kubernetes", "temporary")
            raise TemporaryError(f"the Kubernetes API did not answer when the bot tried to {action}", delay=2.0) from None


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
    applied, applied_by_key = stamp_annotations(previous.resource, qualifier=previous.flavor)
    stamps = {applied: str(gpus), applied_by_key: applied_by}
    if not previous.annotated:
        return [*operations, {"op": "add", "path": "/metadata/annotations", "value": stamps}]
    return operations + [{"op": "add", "path": f"/metadata/annotations/{_escaped(key)}", "value": v} for key, v in stamps.items()]


def _escaped(key: str) -> str:
    """A key as a JSON Pointer token (RFC 6901): ``~`` as ``~0``, ``/`` as ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def _snapshot(queue: Mapping[str, Any], *, namespace: str, flavor: str, resource: str, version: str) -> ClusterQueueSnapshot:
    metadata, spec, state = queue.get("metadata") or {}, queue.get("spec") or {}, queue.get("status") or {}
    name = str(metadata.get("name"))
    group_index, flavor_index, resource_index, quota = _locate(spec, name, flavor, resource)
    annotations = metadata.get("annotations")
    stamp = (annotations or {}).get(stamp_annotations(resource, qualifier=flavor)[0])
    reserved = _usage(state.get("flavorsReservation"), flavor, resource)
    return ClusterQueueSnapshot(
        namespace=namespace,
        name=name,
        hard=_count(quota.get("nominalQuota")),
        used=_count(reserved.get("total")),
        limits=None,
        resource_version=str(metadata.get("resourceVersion")),
        bot_applied=int(stamp) if isinstance(stamp, str) and stamp.lstrip("-").isdigit() else None,
        flavor=flavor,
        resource=resource,
        group_index=group_index,
        flavor_index=flavor_index,
        resource_index=resource_index,
        borrowing_limit=_count(quota["borrowingLimit"]) if quota.get("borrowingLimit") is not None else None,
        cohort=spec.get(COHORT_FIELD[version]) or None,
        in_use=_count(_usage(state.get("flavorsUsage"), flavor, resource).get("total")),
        borrowed=_count(reserved.get("borrowed")),
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
    return {name: _count(value, up=True) for name, value in requests.items() if "/" in name}


def _count(quantity: Any, *, up: bool = False) -> int:
    """A quantity as a whole number (rounded down, or ``up``); 0 when absent."""
    if quantity in (None, ""):
        return 0
    value = parse_quantity(str(quantity))
    return math.ceil(value) if up else int(value)


def _moment(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _said(error: ApiException) -> _Said:
    """The Status body of an answer, else its HTTP status and reason."""
    try:
        body = json.loads(error.body or "")
    except (TypeError, ValueError):
        body = None
    body = body if isinstance(body, dict) else {}
    details: dict[str, Any] = body["details"] if isinstance(body.get("details"), dict) else {}
    message = str(body.get("message") or error.reason or "no reason given")
    wait = (error.headers or {}).get("Retry-After") or details.get("retryAfterSeconds") or 1
    try:
        retry_after = float(wait)
    except (TypeError, ValueError):
        retry_after = 1.0
    return _Said(int(error.status or 0), str(body.get("reason") or ""), message, details, retry_after)


def _translate(said: _Said, action: str) -> Exception:
    log.warning("Kubernetes API answered %s to %s: %s", said.code, action, said.message)
    if said.code == 409:
        return QuotaConflict(f"could not {action}: {said.message}")
    if said.webhook_denied or said.code == 422:
        return PermanentError(
            f"the cluster rejected the change when the bot tried to {action} (HTTP {said.code}: {said.message})"
        )
    if said.code in (401, 403):
        return PermanentError(
            f"the cluster refused to let the bot {action} (HTTP {said.code}: {said.message}). "
            "Check the bot's ServiceAccount and RBAC (see deploy/)"
        )
    if said.code == 429 or said.code >= 500:
        return TemporaryError(f"the Kubernetes API failed to {action} (HTTP {said.code}: {said.message})", delay=said.retry_after)
    return PermanentError(f"the Kubernetes API refused to {action} (HTTP {said.code}: {said.message})")


def _kind(error: Exception) -> str:
    return "temporary" if isinstance(error, TemporaryError) else "permanent"
