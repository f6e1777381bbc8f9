"""Kueue in the Kubernetes API stand-in: its CRDs, conversion and webhooks as a cluster with Kueue serves them.

ResourceFlavors and ClusterQueues (cluster-scoped), LocalQueues and Workloads (namespaced) of
``kueue.x-k8s.io``, served as ``v1beta2`` (Kueue 0.15 and later; the storage version since 0.16) and
``v1beta1`` (``serve_kueue``: both, ``v1beta1`` alone as before 0.15, or none: Kueue not installed).
Objects are stored as ``v1beta2`` and converted per request as Kueue's conversion webhook does (a
ClusterQueue's ``spec.cohortName`` is ``spec.cohort`` in ``v1beta1``). Discovery answers as the API
server does (``/apis/kueue.x-k8s.io`` an ``APIGroup``, ``/apis/kueue.x-k8s.io/<version>`` an
``APIResourceList``; the stand-in's ``/apis`` lists the group), so a client can tell whether Kueue is
there and which versions it serves; the resource lists name only the four kinds modelled here.

Writes behave as the API server's (``bot.sandbox.crd``: what it does for every CRD):
``metadata.resourceVersion`` moves on each persisted change (a write that changes nothing stores
nothing, as etcd3's update does) and ``metadata.generation`` on a spec
change; PATCH takes ``application/json-patch+json`` (RFC 6902: an operation that does not apply, a failed
``test`` or a missing path, is a 422 ``Invalid`` saying only "the server rejected our request due to an
error in our request", as ``handlers/patch.go`` answers it) and ``application/merge-patch+json``; the
patched object's ``metadata.resourceVersion`` is the precondition (the registry compares it with the
stored one: 409 ``Conflict``); ``dryRun=All`` validates and answers without storing; the ``/status``
subresource writes only ``status`` and the main resource never does. A ClusterQueue is validated as its
CRD schema does (quantities, ``borrowingLimit`` only in a cohort: 422 ``Invalid``) and then as Kueue's
validating webhook (negative quotas, ``lendingLimit`` above ``nominalQuota``: 403 ``admission webhook
"vclusterqueue.kb.io" denied the request``). Server-side apply is not served.

``add_*`` seed objects as ``kubectl apply`` and Kueue's mutating webhook leave them; ``edit_cluster_queue``,
``reorder_flavors`` and ``remove_flavor`` play a person running ``kubectl edit``;
``set_cluster_queue_status`` plays Kueue's controller; ``kueue_writes`` counts the persisted writes.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from bot.sandbox.apimachinery import now, status
from bot.sandbox.apps_api import job_uid
from bot.sandbox.crd import (
    Problem,
    api_group,
    api_resource_list,
    api_resources,
    denied,
    details,
    invalid,
    listed,
    merged_write,
    no_such_path,
    not_found,
    patched,
    precondition_failure,
    quantity,
    quantity_problem,
    selected,
    version_mismatch,
)
from bot.sandbox.httpserver import Incoming, Outgoing

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")  # the versions the stand-in can serve, the preferred first
CLUSTER_QUEUE_WEBHOOK = "vclusterqueue.kb.io"
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"

KUEUE_ROUTES = [
    ("kueue_group", re.compile(r"^/apis/kueue\.x-k8s\.io/?$")),
    ("kueue_resources", re.compile(r"^/apis/kueue\.x-k8s\.io/(?P<version>[^/]+)/?$")),
    (
        "kueue_collection",
        re.compile(r"^/apis/kueue\.x-k8s\.io/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)$"),
    ),
    (
        "kueue_object",
        re.compile(
            r"^/apis/kueue\.x-k8s\.io/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+))?"
            r"/(?P<plural>[^/]+)/(?P<name>[^/]+)(?P<subresource>/status)?$"
        ),
    ),
]


@dataclass(frozen=True)
class _Kind:
    kind: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...]
    status: bool  # has the status subresource


_KINDS = {
    "resourceflavors": _Kind("ResourceFlavor", "resourceflavor", False, ("flavor", "flavors", "rf"), status=False),
    "clusterqueues": _Kind("ClusterQueue", "clusterqueue", False, ("cq",), status=True),
    "localqueues": _Kind("LocalQueue", "localqueue", True, ("queue", "queues", "lq"), status=True),
    "workloads": _Kind("Workload", "workload", True, ("wl",), status=True),
}
# What Kueue's conversion webhook renames between v1beta2 (the hub) and v1beta1:
# (resource, the object's section, the v1beta2 field, the v1beta1 field).
_RENAMED = [
    ("clusterqueues", "spec", "cohortName", "cohort"),
    ("workloads", "status", "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds"),
]


class KueueObjects:
    """The Kueue part of ``KubeApiStandIn`` (a base class of it): the objects, their seeding and their routes.

    It shares the stand-in's lock, resourceVersion counter and namespaces."""

    namespaces: dict[str, dict[str, Any]]
    _lock: threading.RLock
    _next_rv: Callable[[], str]

    def _init_kueue(self) -> None:
        self.kueue_versions: tuple[str, ...] = VERSIONS
        self._kueue: dict[tuple[str, str, str], dict[str, Any]] = {}  # (resource, namespace or "", name) -> v1beta2
        self._kueue_persisted: list[tuple[str, str]] = []  # (resource, name) of each persisted write through the API

    # --- seeding and inspection --------------------------------------------------------------

    def serve_kueue(self, *versions: str) -> None:
        """The versions of ``kueue.x-k8s.io`` the cluster serves: ``"v1beta2", "v1beta1"`` (Kueue 0.15 and
        later, the default), ``"v1beta1"`` alone (before 0.15), or none (Kueue is not installed)."""
        assert set(versions) <= set(VERSIONS), versions
        with self._lock:
            self.kueue_versions = tuple(v for v in VERSIONS if v in versions)

    def add_resource_flavor(self, name: str, *, node_labels: dict[str, str] | None = None) -> None:
        self._seed("resourceflavors", "", name, {"spec": {"nodeLabels": dict(node_labels or {})}})

    def add_cluster_queue(
        self,
        name: str,
        resource_groups: list[dict[str, Any]],
        *,
        cohort: str | None = None,
        annotations: dict[str, str] | None = None,
    ) -> None:
        """A ClusterQueue as ``kubectl apply`` and Kueue's webhook leave it (``resource_groups`` as the spec
        has them, see ``resource_group``), with the status Kueue's controller writes for an idle queue."""
        spec: dict[str, Any] = {
            "resourceGroups": copy.deepcopy(resource_groups),
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "stopPolicy": "None",
        }
        if cohort:
            spec["cohortName"] = cohort
        metadata = {"finalizers": [RESOURCE_IN_USE_FINALIZER], **({"annotations": dict(annotations)} if annotations else {})}
        queue = {"metadata": metadata, "spec": spec}
        problems = _schema_problems("clusterqueues", queue) or _webhook_problems("clusterqueues", queue)
        assert not problems, problems
        self._seed("clusterqueues", "", name, {**queue, "status": _idle_status(resource_groups)})

    def add_local_queue(self, namespace: str, name: str, cluster_queue: str) -> None:
        self._seed("localqueues", namespace, name, {"spec": {"clusterQueue": cluster_queue, "stopPolicy": "None"}})

    def add_workload(
        self,
        namespace: str,
        name: str,
        *,
        queue: str,
        requests: dict[str, int] | None = None,
        count: int = 1,
        pod_set: str = "main",
        pending: str | None = None,
        created: datetime | None = None,
        job: str | None = None,
    ) -> None:
        """A Workload of one pod set (``count`` pods each requesting ``requests``) in the LocalQueue ``queue``:
        waiting for quota (``QuotaReserved`` False, reason ``Pending``, the scheduler's message ``pending``),
        or, without ``pending``, admitted. ``job``: the batch/v1 Job it was made for, linked as Kueue's job
        reconciler links them (the Job as its controller ownerReference, the Job's uid in ``kueue.x-k8s.io/job-uid``)."""
        at = (created or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
        resources = {key: str(value) for key, value in (requests or {}).items()}
        container = {"name": pod_set, "image": "registry.example/train:1", "resources": {"requests": resources}}
        template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
        with self._lock:
            local = self._kueue.get(("localqueues", namespace, queue))
        cluster_queue = local["spec"]["clusterQueue"] if local else queue
        if pending is not None:
            conditions = [_condition("QuotaReserved", "False", "Pending", pending, at)]
        else:
            conditions = [
                _condition("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cluster_queue}", at),
                _condition("Admitted", "True", "Admitted", "The workload is admitted", at),
            ]
        metadata: dict[str, Any] = {"labels": {"kueue.x-k8s.io/queue-name": queue}, "creationTimestamp": at}
        if job is not None:
            uid = job_uid(namespace, job)
            metadata["labels"]["kueue.x-k8s.io/job-uid"] = uid
            metadata["ownerReferences"] = [
                {"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": uid, "controller": True, "blockOwnerDeletion": True}
            ]
        workload = {
            "metadata": metadata,
            "spec": {"queueName": queue, "active": True, "podSets": [{"name": pod_set, "count": count, "template": template}]},
            "status": {"conditions": conditions},
        }
        self._seed("workloads", namespace, name, workload)

    def edit_cluster_queue(
        self, name: str, flavor: str, resource: str, *, nominal_quota: int | str | None = None, borrowing_limit: Any = ...
    ) -> None:
        """What ``kubectl edit clusterqueue`` does: change one flavor/resource's quota (``borrowing_limit`` None
        removes the limit), keep everything else, move the resourceVersion and the generation."""

        def edit(queue: dict[str, Any]) -> None:
            quota = _quota_of(queue, flavor, resource)
            if nominal_quota is not None:
                quota["nominalQuota"] = nominal_quota
            if borrowing_limit is None:
                quota.pop("borrowingLimit", None)
            elif borrowing_limit is not ...:
                quota["borrowingLimit"] = borrowing_limit

        self._hand_edit(name, edit)

    def reorder_flavors(self, name: str, order: list[str], *, group: int = 0) -> None:
        """A person reorders the flavors of one resource group (Kueue tries them in this order)."""

        def edit(queue: dict[str, Any]) -> None:
            flavors = {f["name"]: f for f in queue["spec"]["resourceGroups"][group]["flavors"]}
            assert sorted(flavors) == sorted(order), (sorted(flavors), order)
            queue["spec"]["resourceGroups"][group]["flavors"] = [flavors[f] for f in order]

        self._hand_edit(name, edit)

    def remove_flavor(self, name: str, flavor: str) -> None:
        """A person removes a flavor from the ClusterQueue (every resource group)."""

        def edit(queue: dict[str, Any]) -> None:
            for group in queue["spec"]["resourceGroups"]:
                group["flavors"] = [f for f in group["flavors"] if f["name"] != flavor]

        self._hand_edit(name, edit)

    def set_cluster_queue_status(
        self,
        name: str,
        flavor: str,
        resource: str,
        *,
        reserved: int,
        in_use: int | None = None,
        borrowed: int = 0,
        pending_workloads: int | None = None,
    ) -> None:
        """What Kueue's controller writes (a status update: the resourceVersion moves, the spec does not):
        the quota reserved (``flavorsReservation``) and used by admitted workloads (``flavorsUsage``, the
        reserved quota unless ``in_use`` says otherwise) for one flavor/resource, and the pending count."""
        with self._lock:
            queue = copy.deepcopy(self._kueue[("clusterqueues", "", name)])
            state = queue.setdefault("status", {})
            for field, total in (("flavorsReservation", reserved), ("flavorsUsage", reserved if in_use is None else in_use)):
                usage = _usage_of(state.setdefault(field, []), flavor, resource)
                usage.update({"total": str(total), "borrowed": str(borrowed)})
            if pending_workloads is not None:
                state["pendingWorkloads"] = pending_workloads
            queue["metadata"]["resourceVersion"] = self._next_rv()
            self._kueue[("clusterqueues", "", name)] = queue

    def cluster_queue(self, name: str) -> dict[str, Any] | None:
        """The ClusterQueue as stored (``v1beta2``), a copy; None when there is none."""
        with self._lock:
            queue = self._kueue.get(("clusterqueues", "", name))
            return copy.deepcopy(queue) if queue else None

    def nominal_quota(self, name: str, flavor: str, resource: str) -> Any:
        """The stored ``nominalQuota`` of one flavor/resource of a ClusterQueue, as written."""
        with self._lock:
            return _quota_of(self._kueue[("clusterqueues", "", name)], flavor, resource).get("nominalQuota")

    def kueue_writes(self, resource: str = "clusterqueues", name: str | None = None) -> int:
        """Creates, patches and updates of Kueue objects that were persisted (dry runs, refusals and writes
        that changed nothing not counted)."""
        with self._lock:
            return sum(1 for r, n in self._kueue_persisted if r == resource and name in (None, n))

    def kueue_api_groups(self) -> list[dict[str, Any]]:
        """The ``kueue.x-k8s.io`` entry of ``/apis`` (an ``APIGroupList``), none when Kueue is not installed."""
        return [api_group(GROUP, self.kueue_versions)] if self.kueue_versions else []

    # --- HTTP ------------------------------------------------------------------------------------

    def _get_kueue_group(self, incoming: Incoming, body: Any) -> Outgoing:
        groups = self.kueue_api_groups()
        if not groups:
            return no_such_path()
        return Outgoing.json(200, {"kind": "APIGroup", "apiVersion": "v1", **groups[0]})

    def _get_kueue_resources(self, incoming: Incoming, body: Any, version: str) -> Outgoing:
        if version not in self.kueue_versions:
            return no_such_path()
        resources = [
            entry
            for plural, kind in _KINDS.items()
            for entry in api_resources(
                plural,
                singular=kind.singular,
                namespaced=kind.namespaced,
                kind=kind.kind,
                short_names=kind.short_names,
                has_status=kind.status,
            )
        ]
        return api_resource_list(GROUP, version, resources)

    def _get_kueue_collection(self, incoming: Incoming, body: Any, version: str, ns: str | None, plural: str) -> Outgoing:
        kind = self._served(version, plural, ns, listing=True)
        if kind is None:
            return no_such_path()
        items = [obj for (p, namespace, _), obj in sorted(self._kueue.items()) if p == plural and ns in (None, namespace)]
        chosen = selected(items, incoming)
        if isinstance(chosen, Outgoing):
            return chosen
        return listed(GROUP, version, kind.kind, [_to_version(obj, plural, version) for obj in chosen], self._next_rv())

    def _post_kueue_collection(self, incoming: Incoming, body: Any, version: str, ns: str | None, plural: str) -> Outgoing:
        kind = self._served(version, plural, ns)
        if kind is None:
            return no_such_path()
        mismatch = version_mismatch(body, GROUP, version)
        if mismatch is not None:
            return mismatch
        if ns is not None and ns not in self.namespaces:
            return status(404, f'namespaces "{ns}" not found', "NotFound", {"name": ns, "kind": "namespaces"})
        name = (body.get("metadata") or {}).get("name", "")
        if (plural, ns or "", name) in self._kueue:
            return status(409, f'{plural}.{GROUP} "{name}" already exists', "AlreadyExists", details(GROUP, plural, name))
        created = _to_hub(body, plural, version)
        created.pop("status", None)  # a status subresource: a create never sets it
        if plural == "clusterqueues":
            _default_cluster_queue(created)
        refused = _validate(plural, name, created)
        if refused is not None:
            return refused
        created["metadata"].update(
            {
                **({"namespace": ns} if ns else {}),
                "uid": f"{kind.singular}-{ns or ''}-{name}",
                "resourceVersion": self._next_rv(),
                "generation": 1,
                "creationTimestamp": now(),
            }
        )
        if incoming.query.get("dryRun") != "All":
            self._kueue[(plural, ns or "", name)] = created
            self._kueue_persisted.append((plural, name))
        return Outgoing.json(201, _to_version(created, plural, version))

    def _get_kueue_object(
        self, incoming: Incoming, body: Any, version: str, ns: str | None, plural: str, name: str, subresource: str | None
    ) -> Outgoing:
        found = self._addressed(version, ns, plural, name, subresource)
        if isinstance(found, Outgoing):
            return found
        return Outgoing.json(200, _to_version(found, plural, version))

    def _patch_kueue_object(
        self, incoming: Incoming, body: Any, version: str, ns: str | None, plural: str, name: str, subresource: str | None
    ) -> Outgoing:
        found = self._addressed(version, ns, plural, name, subresource)
        if isinstance(found, Outgoing):
            return found
        result = patched(incoming, body, _to_version(found, plural, version))
        if isinstance(result, Outgoing):
            return result
        return self._update(incoming, version, ns, plural, name, subresource, result)

    def _put_kueue_object(
        self, incoming: Incoming, body: Any, version: str, ns: str | None, plural: str, name: str, subresource: str | None
    ) -> Outgoing:
        found = self._addressed(version, ns, plural, name, subresource)
        if isinstance(found, Outgoing):
            return found
        mismatch = version_mismatch(body, GROUP, version)
        if mismatch is not None:
            return mismatch
        return self._update(incoming, version, ns, plural, name, subresource, copy.deepcopy(body))

    # --- the write path ----------------------------------------------------------------------------

    def _update(
        self,
        incoming: Incoming,
        version: str,
        ns: str | None,
        plural: str,
        name: str,
        subresource: str | None,
        wanted: dict[str, Any],
    ) -> Outgoing:
        """Store ``wanted`` (the object as the request makes it, in ``version``) as the registry does: the name
        checked, its resourceVersion as the precondition, only status on ``/status`` and never on the main
        resource, validated, and not stored on a dry run."""
        key = (plural, ns or "", name)
        current = self._kueue[key]
        failed = precondition_failure(wanted, current, kind=_KINDS[plural].kind, group=GROUP, plural=plural, name=name)
        if failed is not None:
            return failed
        result = merged_write(current, _to_hub(wanted, plural, version), status_only=subresource is not None)
        refused = None if subresource else _validate(plural, name, result)
        if refused is not None:
            return refused
        if result == current or incoming.query.get("dryRun") == "All":
            return Outgoing.json(200, _to_version(result, plural, version))
        result["metadata"]["resourceVersion"] = self._next_rv()
        self._kueue[key] = result
        self._kueue_persisted.append((plural, name))
        return Outgoing.json(200, _to_version(result, plural, version))

    # --- helpers -------------------------------------------------------------------------------

    def _served(self, version: str, plural: str, ns: str | None, *, listing: bool = False) -> _Kind | None:
        """The kind at this path, None when the path is not served (404): a version not served, a resource that
        is not Kueue's, a namespace in the path of a cluster-scoped one, or none for a namespaced one
        (except a list across namespaces)."""
        kind = _KINDS.get(plural)
        if version not in self.kueue_versions or kind is None:
            return None
        if (ns is not None and not kind.namespaced) or (ns is None and kind.namespaced and not listing):
            return None
        return kind

    def _addressed(
        self, version: str, ns: str | None, plural: str, name: str, subresource: str | None
    ) -> dict[str, Any] | Outgoing:
        kind = self._served(version, plural, ns)
        if kind is None or (subresource and not kind.status):
            return no_such_path()
        found = self._kueue.get((plural, ns or "", name))
        if found is None:
            return not_found(GROUP, plural, name)
        return found

    def _seed(self, plural: str, namespace: str, name: str, parts: dict[str, Any]) -> None:
        kind = _KINDS[plural]
        metadata = {
            "name": name,
            **({"namespace": namespace} if namespace else {}),
            "uid": f"{kind.singular}-{namespace}-{name}",
            "generation": 1,
            "creationTimestamp": now(),
            **copy.deepcopy(parts.get("metadata") or {}),
        }
        with self._lock:
            metadata["resourceVersion"] = self._next_rv()
            obj = {"apiVersion": f"{GROUP}/v1beta2", "kind": kind.kind, **copy.deepcopy(parts), "metadata": metadata}
            self._kueue[(plural, namespace, name)] = obj

    def _hand_edit(self, name: str, edit: Callable[[dict[str, Any]], None]) -> None:
        with self._lock:
            queue = copy.deepcopy(self._kueue[("clusterqueues", "", name)])
            edit(queue)
            queue["metadata"]["resourceVersion"] = self._next_rv()
            queue["metadata"]["generation"] = queue["metadata"].get("generation", 1) + 1
            self._kueue[("clusterqueues", "", name)] = queue


def resource_group(covered: list[str], flavors: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A ``spec.resourceGroups`` entry: ``flavors`` maps each flavor to its quota per covered resource, a
    ``nominalQuota`` or the resource's whole entry (``{"nominalQuota": 8, "borrowingLimit": 4}``)."""

    def quota(resource: str, value: Any) -> dict[str, Any]:
        return {"name": resource, **(value if isinstance(value, dict) else {"nominalQuota": value})}

    return {
        "coveredResources": list(covered),
        "flavors": [{"name": f, "resources": [quota(r, quotas[r]) for r in covered]} for f, quotas in flavors.items()],
    }


def _to_version(obj: dict[str, Any], plural: str, version: str) -> dict[str, Any]:
    """The stored (``v1beta2``) object as ``version`` serves it."""
    converted = copy.deepcopy(obj)
    converted["apiVersion"] = f"{GROUP}/{version}"
    if version == "v1beta1":
        _rename(converted, plural, to_v1beta1=True)
    return converted


def _to_hub(obj: dict[str, Any], plural: str, version: str) -> dict[str, Any]:
    converted = copy.deepcopy(obj)
    converted["apiVersion"] = f"{GROUP}/v1beta2"
    converted["kind"] = _KINDS[plural].kind
    converted.setdefault("metadata", {})
    if version == "v1beta1":
        _rename(converted, plural, to_v1beta1=False)
    return converted


def _rename(obj: dict[str, Any], plural: str, *, to_v1beta1: bool) -> None:
    for resource, section, hub, old in _RENAMED:
        part = obj.get(section)
        source, target = (hub, old) if to_v1beta1 else (old, hub)
        if resource == plural and isinstance(part, dict) and source in part:
            part[target] = part.pop(source)


def _default_cluster_queue(queue: dict[str, Any]) -> None:
    """The CRD's defaults and Kueue's mutating webhook (its finalizer) on a new ClusterQueue."""
    spec = queue.setdefault("spec", {})
    spec.setdefault("queueingStrategy", "BestEffortFIFO")
    spec.setdefault("stopPolicy", "None")
    finalizers = queue["metadata"].setdefault("finalizers", [])
    if RESOURCE_IN_USE_FINALIZER not in finalizers:
        finalizers.append(RESOURCE_IN_USE_FINALIZER)


def _validate(plural: str, name: str, obj: dict[str, Any]) -> Outgoing | None:
    """The CRD schema (422 Invalid), then Kueue's validating webhook (403), as the API server runs them."""
    problems = _schema_problems(plural, obj)
    if problems:
        return invalid(_KINDS[plural].kind, GROUP, name, problems)
    refused = _webhook_problems(plural, obj)
    return denied(CLUSTER_QUEUE_WEBHOOK, refused) if refused else None


def _quota_fields(queue: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """Each quota of a ClusterQueue: its field path, its entry, and its field's name."""
    found: list[tuple[str, dict[str, Any], str]] = []
    for g, group in enumerate((queue.get("spec") or {}).get("resourceGroups") or []):
        for f, flavor in enumerate(group.get("flavors") or []):
            for r, quota in enumerate(flavor.get("resources") or []):
                path = f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                found.extend((f"{path}.{field}", quota, field) for field in ("nominalQuota", "borrowingLimit", "lendingLimit"))
    return found


def _schema_problems(plural: str, queue: dict[str, Any]) -> list[Problem]:
    """What the ClusterQueue CRD's structural schema and CEL rules refuse."""
    if plural != "clusterqueues":
        return []
    problems = []
    for path, quota, field in _quota_fields(queue):
        problem = quantity_problem(path, quota[field]) if field in quota else None
        if problem is not None:
            problems.append(problem)
    spec = queue.get("spec") or {}
    for g, group in enumerate(spec.get("resourceGroups") or []):
        if any(len(f.get("resources") or []) != len(group.get("coveredResources") or []) for f in group.get("flavors") or []):
            detail = "flavors must have the same number of resources as the coveredResources"
            problems.append(Problem(f"spec.resourceGroups[{g}]", "object", detail))
    if not spec.get("cohortName") and any(field == "borrowingLimit" and field in q for _, q, field in _quota_fields(queue)):
        problems.append(Problem("spec", "object", "borrowingLimit must be nil when cohort is empty"))
    return problems


def _webhook_problems(plural: str, queue: dict[str, Any]) -> list[Problem]:
    """What Kueue's ClusterQueue webhook (``pkg/webhooks/clusterqueue_webhook.go``) denies."""
    if plural != "clusterqueues":
        return []
    problems, seen = [], set()
    spec = queue.get("spec") or {}
    for g, group in enumerate(spec.get("resourceGroups") or []):
        covered = group.get("coveredResources") or []
        for f, flavor in enumerate(group.get("flavors") or []):
            if flavor.get("name") in seen:
                problems.append(
                    Problem(
                        f"spec.resourceGroups[{g}].flavors[{f}].name",
                        flavor["name"],
                        "",
                        kind="Duplicate value",
                        cause="FieldValueDuplicate",
                    )
                )
            seen.add(flavor.get("name"))
            for r, quota in enumerate((flavor.get("resources") or [])[: len(covered)]):
                if quota.get("name") != covered[r]:
                    path = f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}].name"
                    problems.append(Problem(path, str(quota.get("name")), "must match the name in coveredResources"))
    for path, quota, field in _quota_fields(queue):
        value = quantity(quota.get(field)) if field in quota else None
        if value is None:
            continue
        if value < 0:
            problems.append(Problem(path, str(quota[field]), "must be greater than or equal to 0"))
        if field != "nominalQuota" and not spec.get("cohortName"):
            problems.append(Problem(path, str(quota[field]), "must be nil when cohort is empty"))
        nominal = quantity(quota.get("nominalQuota"))
        if field == "lendingLimit" and nominal is not None and value > nominal:
            problems.append(Problem(path, str(quota[field]), "must be less than or equal to the nominalQuota"))
    return problems


def _condition(condition: str, state: str, reason: str, message: str, at: str) -> dict[str, Any]:
    return {
        "type": condition,
        "status": state,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": 1,
    }


def _idle_status(resource_groups: list[dict[str, Any]]) -> dict[str, Any]:
    """A ClusterQueue's status with nothing admitted: every flavor's resources at zero."""
    usage = [
        {"name": f["name"], "resources": [{"name": r["name"], "total": "0", "borrowed": "0"} for r in f["resources"]]}
        for group in resource_groups
        for f in group["flavors"]
    ]
    return {
        "flavorsReservation": copy.deepcopy(usage),
        "flavorsUsage": usage,
        "pendingWorkloads": 0,
        "reservingWorkloads": 0,
        "admittedWorkloads": 0,
        "conditions": [_condition("Active", "True", "Ready", "Can admit new workloads", now())],
    }


def _quota_of(queue: dict[str, Any], flavor: str, resource: str) -> dict[str, Any]:
    for group in queue["spec"]["resourceGroups"]:
        for entry in group["flavors"]:
            if entry["name"] == flavor:
                return next(q for q in entry["resources"] if q["name"] == resource)
    raise KeyError(f"{flavor}/{resource}")


def _usage_of(flavors: list[dict[str, Any]], flavor: str, resource: str) -> dict[str, Any]:
    entry = next((f for f in flavors if f["name"] == flavor), None)
    if entry is None:
        entry = {"name": flavor, "resources": []}
        flavors.append(entry)
    usage = next((r for r in entry["resources"] if r["name"] == resource), None)
    if usage is None:
        usage = {"name": resource, "total": "0", "borrowed": "0"}
        entry["resources"].append(usage)
    return usage
