"""A Kubernetes API stand-in on loopback, faithful where the bot depends on it.

It serves namespaces, nodes, ResourceQuotas, pods (with label and field selectors) and events under
``/api/v1`` and PriorityClasses under ``/apis/scheduling.k8s.io/v1``, with the real wire format,
checks a bearer token, honours ``dryRun=All``, applies JSON merge patches, enforces
``metadata.resourceVersion`` preconditions (409 with the API server's message), validates
quantities (422), copies ``spec.hard`` into ``status.hard`` like the quota controller, and can be
told to fail or stall a route (403, 404, 500, timeouts; a number of times or for a while; only for
bodies matching a pattern) or to refuse connections for a while. A stalled write is still applied
after the stall, as a real API server that already accepted it would. ``edit_quota`` plays a person
running ``kubectl edit``; ``quota_writes`` counts the writes that changed a quota. Nodes carry taints, labels, a
cordon and their Ready condition (``taint_node``, ``untaint_node``, ``break_device_plugin`` change them as
``kubectl taint`` and a device plugin gone would); pods carry tolerations, node selectors, affinity,
scheduling gates, owners and their PodScheduled condition. ``/apis`` lists the API groups it serves;
DaemonSets, Deployments, StatefulSets, Jobs and ConfigMaps are ``bot.sandbox.apps_api``, Kueue's
(``kueue.x-k8s.io``) is ``bot.sandbox.kueue_api``.
"""

from __future__ import annotations

import copy
import itertools
import re
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import yaml

from bot.sandbox.apimachinery import BadSelector as _BadSelector
from bot.sandbox.apimachinery import fields_match as _fields_match
from bot.sandbox.apimachinery import labels_match as _labels_match
from bot.sandbox.apimachinery import merge_patch as _merge
from bot.sandbox.apimachinery import now as _now
from bot.sandbox.apimachinery import status as _status
from bot.sandbox.apps_api import APPS_ROUTES, JOB_NAME_LABEL, JOB_UID_LABEL, AppsObjects, job_uid
from bot.sandbox.httpserver import Incoming, LoopbackServer, Outgoing
from bot.sandbox.kueue_api import KUEUE_ROUTES, KueueObjects

_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d+)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i?|[mkMGTPE])?$")
_ROUTES = [
    ("namespaces", re.compile(r"^/api/v1/namespaces$")),
    ("namespace", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)$")),
    ("nodes", re.compile(r"^/api/v1/nodes$")),
    ("node", re.compile(r"^/api/v1/nodes/(?P<name>[^/]+)$")),
    ("all_quotas", re.compile(r"^/api/v1/resourcequotas$")),
    ("quotas", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/resourcequotas$")),
    ("quota", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/resourcequotas/(?P<name>[^/]+)$")),
    ("all_pods", re.compile(r"^/api/v1/pods$")),
    ("pods", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods$")),
    ("pod", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)$")),
    ("priority_classes", re.compile(r"^/apis/scheduling\.k8s\.io/v1/priorityclasses$")),
    ("all_events", re.compile(r"^/api/v1/events$")),
    ("events", re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/events$")),
    ("api_groups", re.compile(r"^/apis/?$")),
    *APPS_ROUTES,
    *KUEUE_ROUTES,
]
_SCHEDULING = {"groupVersion": "scheduling.k8s.io/v1", "version": "v1"}


@dataclass
class _Fault:
    method: str
    path: re.Pattern[str]
    status: int
    times: int
    delay: float
    message: str
    until: float | None = None  # a monotonic deadline: the fault holds until then (``times`` ignored)
    body: re.Pattern[str] | None = None  # only requests whose JSON body matches
    dry_run: bool | None = None  # only dry runs (True), only real writes (False), or both


class KubeApiStandIn(KueueObjects, AppsObjects):
    routes: ClassVar[list[tuple[str, re.Pattern[str]]]] = _ROUTES  # a stand-in serving more adds its own (karmada_api)

    def __init__(self, *, token: str = "sandbox-token", tls: ssl.SSLContext | None = None) -> None:
        self.token = token
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.quotas: dict[tuple[str, str], dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        # What ResourceQuota status.used reports of nvidia.com/gpu, and of other resources by (namespace,
        # resource); pods are separate data (a test sets both as it needs).
        self.used: dict[str, int] = {}
        self.used_of: dict[tuple[str, str], int] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.priority_classes: dict[str, dict[str, Any]] = {}
        self.log: list[tuple[str, str, dict[str, str], Any]] = []  # method, path, query, body
        self._faults: list[_Fault] = []
        self._persisted: list[str] = []  # the namespace of each persisted quota write
        self._rv = itertools.count(100)
        self._lock = threading.RLock()
        self._broken_plugins: set[str] = set()  # nodes whose device plugin ``break_device_plugin`` took away
        self._init_kueue()
        self._init_apps()
        self._server = LoopbackServer(self._handle, tls=tls)

    # --- lifecycle and seeding -------------------------------------------------------------

    def start(self) -> KubeApiStandIn:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def connections(self) -> int:
        """Connections accepted since ``start()``."""
        return self._server.connections

    def write_kubeconfig(self, path: Path, *, certificate_authority: Path | None = None) -> Path:
        """A kubeconfig for this server; over HTTPS the client trusts ``certificate_authority``."""
        return write_kubeconfig(path, {"sandbox": self}, current="sandbox", certificate_authority=certificate_authority)

    def add_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        with self._lock:
            self.namespaces[name] = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/metadata.name": name, **(labels or {})},
                    "resourceVersion": self._next_rv(),
                    "uid": f"ns-{name}",
                },
                "status": {"phase": "Active"},
            }

    def delete_namespace(self, name: str) -> None:
        """Like ``kubectl delete namespace``: the namespace and everything in it go."""
        with self._lock:
            self.namespaces.pop(name, None)
            for key in [key for key in self.quotas if key[0] == name]:
                del self.quotas[key]
            for key in [key for key in self.pods if key[0] == name]:
                del self.pods[key]

    def add_node(
        self,
        name: str,
        gpus: int,
        *,
        product: str | None = None,
        resources: dict[str, int] | None = None,
        labels: dict[str, str] | None = None,
        taints: list[str] | None = None,
        unschedulable: bool = False,
        ready: bool = True,
    ) -> None:
        """``product``: the ``nvidia.com/gpu.product`` label GPU feature discovery would set; ``resources``: other
        extended resources it advertises (a node in MIG ``mixed`` mode: ``{"nvidia.com/mig-1g.10gb": 7}`` and no
        whole GPUs); ``labels``: more labels; ``taints``: as ``kubectl taint`` writes them (``key=value:Effect``,
        ``key:Effect``); ``unschedulable``: cordoned; ``ready``: its Ready condition. The node lifecycle controller's
        taints follow a cordon (``node.kubernetes.io/unschedulable:NoSchedule``) and a node that is not ready
        (``node.kubernetes.io/not-ready``, NoSchedule and NoExecute), as the API server then holds them."""
        own = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        all_labels = {**own, **({GPU_PRODUCT: product} if product else {}), **(labels or {})}
        offered = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
        offered.update({resource: str(count) for resource, count in (resources or {}).items()})
        spec: dict[str, Any] = {"podCIDR": "10.244.0.0/24", "providerID": f"sandbox://{name}"}
        held = [parse_taint(taint) for taint in taints or []]
        if unschedulable:
            spec["unschedulable"] = True
            held.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": _now()})
        if not ready:
            held += [
                {"key": "node.kubernetes.io/not-ready", "effect": e, "timeAdded": _now()} for e in ("NoSchedule", "NoExecute")
            ]
        if held:
            spec["taints"] = held
        with self._lock:
            self.nodes[name] = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "resourceVersion": self._next_rv(),
                    "uid": f"node-{name}",
                    "labels": all_labels,
                    "creationTimestamp": _now(),
                },
                "spec": spec,
                "status": {"allocatable": dict(offered), "capacity": dict(offered), "conditions": _node_conditions(ready)},
            }

    def taint_node(self, name: str, taint: str) -> None:
        """``kubectl taint nodes NAME key=value:Effect``: a taint of the same key and effect is replaced."""
        added = parse_taint(taint)
        added["timeAdded"] = _now()
        with self._lock:
            node = self.nodes[name]
            kept = [t for t in node["spec"].get("taints") or [] if (t["key"], t["effect"]) != (added["key"], added["effect"])]
            node["spec"]["taints"] = [*kept, added]
            node["metadata"]["resourceVersion"] = self._next_rv()

    def untaint_node(self, name: str, key: str) -> None:
        """``kubectl taint nodes NAME key-``: every taint of that key goes (the field too when none is left)."""
        with self._lock:
            node = self.nodes[name]
            kept = [t for t in node["spec"].get("taints") or [] if t["key"] != key]
            if kept:
                node["spec"]["taints"] = kept
            else:
                node["spec"].pop("taints", None)
            node["metadata"]["resourceVersion"] = self._next_rv()

    def break_device_plugin(self, node: str) -> None:
        """The NVIDIA device plugin stops on ``node``: the kubelet advertises 0 of every ``nvidia.com/`` resource
        (capacity and allocatable, as after a kubelet restart without the plugin), and the device plugin DaemonSet,
        if any, has one pod fewer ready (once per node)."""
        with self._lock:
            state = self.nodes[node]["status"]
            for quantities in (state["allocatable"], state["capacity"]):
                for resource in quantities:
                    if resource.startswith("nvidia.com/"):
                        quantities[resource] = "0"
            self.nodes[node]["metadata"]["resourceVersion"] = self._next_rv()
            if node not in self._broken_plugins:
                self._broken_plugins.add(node)
                self.device_plugin_lost()

    def add_quota(self, namespace: str, name: str, hard: dict[str, str], *, used_gpus: int = 0) -> None:
        with self._lock:
            self.used[namespace] = used_gpus
            self.quotas[(namespace, name)] = self._with_status(
                {
                    "apiVersion": "v1",
                    "kind": "ResourceQuota",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "resourceVersion": self._next_rv(),
                        "uid": f"rq-{namespace}-{name}",
                        "creationTimestamp": _now(),
                    },
                    "spec": {"hard": dict(hard)},
                }
            )

    def edit_quota(self, namespace: str, name: str, resource: str, value: str) -> None:
        """What ``kubectl edit`` does: change one hard value, keep annotations, bump the version."""
        with self._lock:
            quota = copy.deepcopy(self.quotas[(namespace, name)])
            quota["spec"]["hard"][resource] = value
            quota["metadata"]["resourceVersion"] = self._next_rv()
            self.quotas[(namespace, name)] = self._with_status(quota)

    def set_used(self, namespace: str, gpus: int, *, resource: str = "nvidia.com/gpu") -> None:
        """Running pods started or finished: the quota controller recomputes ``status.used`` of the
        namespace's quotas (a status update, so the resourceVersion moves; ``spec`` is untouched)."""
        with self._lock:
            if resource == "nvidia.com/gpu":
                self.used[namespace] = gpus
            else:
                self.used_of[(namespace, resource)] = gpus
            for key in [key for key in self.quotas if key[0] == namespace]:
                quota = copy.deepcopy(self.quotas[key])
                quota["metadata"]["resourceVersion"] = self._next_rv()
                self.quotas[key] = self._with_status(quota)

    def hard(self, namespace: str, name: str, resource: str = "requests.nvidia.com/gpu") -> str | None:
        with self._lock:
            quota = self.quotas.get((namespace, name))
            return quota["spec"]["hard"].get(resource) if quota else None

    def add_priority_class(
        self, name: str, value: int, *, global_default: bool = False, preemption_policy: str = "PreemptLowerPriority"
    ) -> None:
        with self._lock:
            self.priority_classes[name] = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name, "resourceVersion": self._next_rv(), "uid": f"pc-{name}", "creationTimestamp": _now()},
                "value": value,
                "globalDefault": global_default,
                "preemptionPolicy": preemption_policy,
            }

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        gpus: int = 0,
        priority_class: str = "",
        phase: str = "Running",
        labels: dict[str, str] | None = None,
        started: datetime | None = None,
        node: str | None = None,
        nominated_node: str | None = None,
        resources: dict[str, int] | None = None,
        node_selector: dict[str, str] | None = None,
        affinity: dict[str, Any] | None = None,
        tolerations: list[dict[str, Any]] | None = None,
        owner: tuple[str, str] | None = None,
        scheduling_gates: list[str] | None = None,
        unschedulable_message: str | None = None,
    ) -> None:
        """A pod as the API server stores it after admission: the priority and preemption policy resolved from its
        class (or the global default class, whose name admission fills in), extended resources in requests equal
        to limits (``resources`` instead of ``gpus``: ``{"nvidia.com/mig-1g.10gb": 1}``), the not-ready/unreachable
        tolerations DefaultTolerationSeconds adds. Pending: no ``nodeName``, ``PodScheduled`` False (reason
        ``SchedulingGated`` with ``scheduling_gates``, else ``Unschedulable`` with the scheduler's
        ``unschedulable_message``, when given); otherwise bound to ``node``. ``owner``: its controller's (kind, name);
        a Job's pods also carry the labels the job controller gives them. ``affinity``/``tolerations``: as the API has them."""
        extended = dict(resources) if resources is not None else ({"nvidia.com/gpu": gpus} if gpus else {})
        with self._lock:
            if not priority_class:
                priority_class = next((n for n, pc in self.priority_classes.items() if pc["globalDefault"]), "")
            known = self.priority_classes.get(priority_class)
            container: dict[str, Any] = {"name": "main", "image": "registry.example/train:1", "resources": {}}
            if extended:
                wanted = {resource: str(count) for resource, count in extended.items()}
                container["resources"] = {"requests": {"cpu": "4", **wanted}, "limits": dict(wanted)}
            spec: dict[str, Any] = {
                "containers": [container],
                "schedulerName": "default-scheduler",
                "restartPolicy": "Never",
                "priority": known["value"] if known else 0,
                "preemptionPolicy": known["preemptionPolicy"] if known else "PreemptLowerPriority",
                "tolerations": [*copy.deepcopy(tolerations or []), *_DEFAULT_TOLERATIONS],
            }
            if priority_class:
                spec["priorityClassName"] = priority_class
            if node_selector:
                spec["nodeSelector"] = dict(node_selector)
            if affinity:
                spec["affinity"] = copy.deepcopy(affinity)
            if scheduling_gates:
                spec["schedulingGates"] = [{"name": gate} for gate in scheduling_gates]
            at = (started or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
            status: dict[str, Any] = {"phase": phase, "qosClass": "Burstable" if extended else "BestEffort"}
            if phase != "Pending":
                spec["nodeName"] = node or "gpu-node-a"
                status["startTime"] = at
                status["conditions"] = [_condition("PodScheduled", "True", at)]
            elif scheduling_gates:
                message = "Scheduling is blocked due to non-empty scheduling gates"
                status["conditions"] = [_condition("PodScheduled", "False", at, "SchedulingGated", message)]
            elif unschedulable_message is not None:
                status["conditions"] = [_condition("PodScheduled", "False", at, "Unschedulable", unschedulable_message)]
            if nominated_node:
                status["nominatedNodeName"] = nominated_node
            metadata: dict[str, Any] = {
                "name": name,
                "namespace": namespace,
                "labels": dict(labels or {}),
                "resourceVersion": self._next_rv(),
                "uid": f"pod-{namespace}-{name}",
                "creationTimestamp": at,
            }
            if owner is not None:
                metadata["ownerReferences"] = [self._owner_reference(namespace, *owner)]
                if owner[0] == "Job":
                    uid = job_uid(namespace, owner[1])
                    generated = {JOB_UID_LABEL: uid, JOB_NAME_LABEL: owner[1], "controller-uid": uid, "job-name": owner[1]}
                    metadata["labels"] = {**metadata["labels"], **generated}
            self.pods[(namespace, name)] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": metadata,
                "spec": spec,
                "status": status,
            }

    def _owner_reference(self, namespace: str, kind: str, name: str) -> dict[str, Any]:
        stored = self.apps.get((kind, namespace, name))
        uid = (
            stored["metadata"]["uid"]
            if stored
            else job_uid(namespace, name)
            if kind == "Job"
            else f"{kind.lower()}-{namespace}-{name}"
        )
        api_version = "batch/v1" if kind == "Job" else "apps/v1"
        return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True, "blockOwnerDeletion": True}

    def set_pod_phase(self, namespace: str, name: str, phase: str) -> None:
        with self._lock:
            pod = self.pods[(namespace, name)]
            pod["status"]["phase"] = phase
            pod["metadata"]["resourceVersion"] = self._next_rv()

    def finish_pods(self, namespace: str, keep_gpus: int) -> list[str]:
        """Running GPU pods of the namespace finish (phase ``Succeeded``), largest first, until at most
        ``keep_gpus`` GPUs are held by the ones still running; ``status.used`` is then what the quota
        controller would recompute: what the running pods hold (``keep_gpus`` when the namespace has no
        pods here). Returns the names of the pods that finished."""
        with self._lock:
            running = sorted(
                ((name, pod) for (ns, name), pod in self.pods.items() if ns == namespace and pod["status"]["phase"] == "Running"),
                key=lambda item: (-_pod_gpus(item[1]), item[0]),
            )
            held = sum(_pod_gpus(pod) for _, pod in running)
            finished = []
            for name, pod in running:
                if held <= keep_gpus:
                    break
                held -= _pod_gpus(pod)
                pod["status"]["phase"] = "Succeeded"
                pod["metadata"]["resourceVersion"] = self._next_rv()
                finished.append(name)
            self.set_used(namespace, held if running else keep_gpus)
        return finished

    def add_event(self, event: dict[str, Any]) -> None:
        with self._lock:
            event.setdefault("metadata", {})["resourceVersion"] = self._next_rv()
            self.events.append(event)

    def fail(
        self,
        method: str,
        path_pattern: str,
        status: int,
        *,
        times: int = 1,
        delay: float = 0.0,
        message: str = "",
        seconds: float | None = None,
        body: str | None = None,
        dry_run: bool | None = None,
    ) -> None:
        """Make matching requests fail with ``status`` (0: stall for ``delay`` seconds then answer normally),
        ``times`` times or, with ``seconds``, every time for that long; ``body`` narrows it to requests
        whose JSON body matches that pattern, ``dry_run`` to dry runs (True) or real writes (False)."""
        until = time.monotonic() + seconds if seconds is not None else None
        with self._lock:
            self._faults.append(
                _Fault(
                    method.upper(),
                    re.compile(path_pattern),
                    status,
                    times,
                    delay,
                    message,
                    until,
                    re.compile(body) if body is not None else None,
                    dry_run,
                )
            )

    def refuse_connections(self, seconds: float | None = None) -> None:
        """The API server goes away for ``seconds`` (None: until ``accept_connections()``): connections are
        refused, then it is back."""
        self._server.refuse()
        if seconds is not None:
            timer = threading.Timer(seconds, self._server.resume)
            timer.daemon = True
            timer.start()

    def accept_connections(self) -> None:
        """The API server is back after ``refuse_connections()``."""
        self._server.resume()

    def quota_writes(self, namespace: str | None = None) -> int:
        """Creates and patches of ResourceQuotas that were persisted (dry runs and refusals not counted)."""
        with self._lock:
            return sum(1 for ns in self._persisted if namespace is None or ns == namespace)

    def writes(self) -> list[tuple[str, str, dict[str, str], Any]]:
        with self._lock:
            return [entry for entry in self.log if entry[0] in ("PATCH", "POST", "PUT")]

    # --- HTTP ------------------------------------------------------------------------------

    def _handle(self, incoming: Incoming) -> Outgoing:
        body = incoming.json() if incoming.body else None
        with self._lock:
            self.log.append((incoming.method, incoming.path, incoming.query, body))
            fault = self._take_fault(incoming)
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status:
                return _status(
                    fault.status,
                    fault.message or _REASONS.get(fault.status, "error"),
                    _REASONS.get(fault.status, "InternalError"),
                )
        if incoming.headers.get("authorization") != f"Bearer {self.token}":
            return _status(401, "Unauthorized", "Unauthorized")
        for name, pattern in self.routes:
            match = pattern.match(incoming.path)
            if match:
                handler = getattr(self, f"_{incoming.method.lower()}_{name}", None)
                if handler is None:
                    return _status(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")
                with self._lock:
                    return handler(incoming, body, **match.groupdict())
        return _status(404, "the server could not find the requested resource", "NotFound")

    def _take_fault(self, incoming: Incoming) -> _Fault | None:
        for fault in self._faults:
            if fault.method != incoming.method or not fault.path.search(incoming.path):
                continue
            if fault.body is not None and not fault.body.search(incoming.body.decode("utf-8", "replace")):
                continue
            if fault.dry_run is not None and fault.dry_run != (incoming.query.get("dryRun") == "All"):
                continue
            if fault.until is not None:
                if time.monotonic() < fault.until:
                    return fault
            elif fault.times > 0:
                fault.times -= 1
                return fault
        return None

    def _get_namespaces(self, incoming: Incoming, body: Any) -> Outgoing:
        return _list("NamespaceList", list(self.namespaces.values()), self._next_rv())

    def _get_namespace(self, incoming: Incoming, body: Any, ns: str) -> Outgoing:
        if ns not in self.namespaces:
            return _not_found("namespaces", ns)
        return Outgoing.json(200, self.namespaces[ns])

    def _get_nodes(self, incoming: Incoming, body: Any) -> Outgoing:
        fields = incoming.query.get("fieldSelector", "")
        try:
            selected = [node for node in self.nodes.values() if _fields_match(_node_fields(node), fields, _NODE_FIELDS)]
        except _BadSelector as error:
            return _status(400, str(error), "BadRequest")
        return _list("NodeList", copy.deepcopy(selected), self._next_rv())

    def _get_node(self, incoming: Incoming, body: Any, name: str) -> Outgoing:
        node = self.nodes.get(name)
        return Outgoing.json(200, copy.deepcopy(node)) if node else _not_found("nodes", name)

    def _get_all_quotas(self, incoming: Incoming, body: Any) -> Outgoing:
        return _list("ResourceQuotaList", list(self.quotas.values()), self._next_rv())

    def _get_quotas(self, incoming: Incoming, body: Any, ns: str) -> Outgoing:
        items = [q for (namespace, _), q in self.quotas.items() if namespace == ns]
        return _list("ResourceQuotaList", items, self._next_rv())

    def _get_quota(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        quota = self.quotas.get((ns, name))
        return Outgoing.json(200, quota) if quota else _not_found("resourcequotas", name)

    def _post_quotas(self, incoming: Incoming, body: Any, ns: str) -> Outgoing:
        if ns not in self.namespaces:
            return _not_found("namespaces", ns)
        name = ((body or {}).get("metadata") or {}).get("name", "")
        if (ns, name) in self.quotas:
            return _status(409, f'resourcequotas "{name}" already exists', "AlreadyExists")
        invalid = _invalid(name, (body.get("spec") or {}).get("hard") or {})
        if invalid:
            return invalid
        quota = copy.deepcopy(body)
        quota["metadata"].update(
            {"namespace": ns, "resourceVersion": self._next_rv(), "uid": f"rq-{ns}-{name}", "creationTimestamp": _now()}
        )
        quota = self._with_status(quota)
        if incoming.query.get("dryRun") != "All":
            self.quotas[(ns, name)] = quota
            self._persisted.append(ns)
        return Outgoing.json(201, quota)

    def _patch_quota(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        content_type = incoming.headers.get("content-type", "")
        if content_type.split(";")[0] not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            return _status(
                415,
                f"the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json (got {content_type})",
                "UnsupportedMediaType",
            )
        current = self.quotas.get((ns, name))
        if current is None:
            return _not_found("resourcequotas", name)
        wanted_rv = ((body or {}).get("metadata") or {}).get("resourceVersion")
        if wanted_rv is not None and wanted_rv != current["metadata"]["resourceVersion"]:
            return _status(
                409,
                f'Operation cannot be fulfilled on resourcequotas "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                "Conflict",
            )
        patched = _merge(copy.deepcopy(current), copy.deepcopy(body))
        invalid = _invalid(name, (patched.get("spec") or {}).get("hard") or {})
        if invalid:
            return invalid
        if incoming.query.get("dryRun") == "All":
            return Outgoing.json(200, self._with_status(patched))
        patched["metadata"]["resourceVersion"] = self._next_rv()
        patched = self._with_status(patched)
        self.quotas[(ns, name)] = patched
        self._persisted.append(ns)
        return Outgoing.json(200, patched)

    def _get_all_pods(self, incoming: Incoming, body: Any) -> Outgoing:
        return self._pod_list(list(self.pods.values()), incoming)

    def _get_pods(self, incoming: Incoming, body: Any, ns: str) -> Outgoing:
        return self._pod_list([pod for (namespace, _), pod in self.pods.items() if namespace == ns], incoming)

    def _get_pod(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        pod = self.pods.get((ns, name))
        return Outgoing.json(200, copy.deepcopy(pod)) if pod else _not_found("pods", name)

    def _pod_list(self, pods: list[dict[str, Any]], incoming: Incoming) -> Outgoing:
        fields = incoming.query.get("fieldSelector", "")
        labels = incoming.query.get("labelSelector", "")
        try:
            selected = [
                pod
                for pod in pods
                if _fields_match(pod, fields, _POD_FIELDS) and _labels_match(pod["metadata"].get("labels") or {}, labels)
            ]
        except _BadSelector as error:
            return _status(400, str(error), "BadRequest")
        return _list("PodList", copy.deepcopy(selected), self._next_rv())

    def _get_priority_classes(self, incoming: Incoming, body: Any) -> Outgoing:
        items = copy.deepcopy(list(self.priority_classes.values()))
        return Outgoing.json(
            200,
            {
                "kind": "PriorityClassList",
                "apiVersion": "scheduling.k8s.io/v1",
                "metadata": {"resourceVersion": self._next_rv()},
                "items": items,
            },
        )

    def _get_api_groups(self, incoming: Incoming, body: Any) -> Outgoing:
        scheduling = {"name": "scheduling.k8s.io", "versions": [_SCHEDULING], "preferredVersion": _SCHEDULING}
        groups = [*self.apps_api_groups(), scheduling, *self.api_groups()]
        return Outgoing.json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    def api_groups(self) -> list[dict[str, Any]]:
        """The groups of custom resources ``/apis`` lists (a stand-in serving more adds its own)."""
        return self.kueue_api_groups()

    def _get_all_events(self, incoming: Incoming, body: Any) -> Outgoing:
        return self._event_list(self.events, incoming)

    def _get_events(self, incoming: Incoming, body: Any, ns: str) -> Outgoing:
        events = [e for e in self.events if e["metadata"].get("namespace") == ns]
        return self._event_list(events, incoming)

    def _event_list(self, events: list[dict[str, Any]], incoming: Incoming) -> Outgoing:
        try:
            selected = [e for e in events if _fields_match(e, incoming.query.get("fieldSelector", ""), _EVENT_FIELDS)]
        except _BadSelector as error:
            return _status(400, str(error), "BadRequest")
        return _list("EventList", selected, self._next_rv())

    # --- helpers ---------------------------------------------------------------------------

    def _with_status(self, quota: dict[str, Any]) -> dict[str, Any]:
        """What the quota controller does: status.hard mirrors spec.hard; status.used is the usage."""
        hard = dict((quota.get("spec") or {}).get("hard") or {})
        namespace = quota["metadata"]["namespace"]

        def used_of(key: str) -> int:
            resource = key.removeprefix("requests.")
            if resource == "nvidia.com/gpu":
                return self.used.get(namespace, 0)
            return self.used_of.get((namespace, resource), 0)

        used = {key: str(used_of(key)) for key in hard if not key.startswith("limits.nvidia.com")}
        quota["status"] = {"hard": hard, "used": used}
        return quota

    def _next_rv(self) -> str:
        return str(next(self._rv))


GPU_PRODUCT = "nvidia.com/gpu.product"
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# What the DefaultTolerationSeconds admission plugin adds to every pod.
_DEFAULT_TOLERATIONS = [
    {"key": f"node.kubernetes.io/{condition}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for condition in ("not-ready", "unreachable")
]
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


# The field selectors the API server supports, each to the path it reads: on pods
# (pkg/registry/core/pod/strategy.go, PodToSelectableFields) and events (pkg/registry/core/event/strategy.go).
_POD_FIELDS = {
    name: name
    for name in (
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
}
# pkg/registry/core/node/strategy.go, NodeToSelectableFields (spec.unschedulable is "true" or "false" there).
_NODE_FIELDS = {"metadata.name": "metadata.name", "spec.unschedulable": "spec.unschedulable"}
_EVENT_FIELDS = {
    **{
        name: name
        for name in (
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
        )
    },
    "source": "source.component",
}


def scheduling_failure_event(
    namespace: str, pod: str, *, nodes: int, gpu_nodes: int | None = None, count: int = 1
) -> dict[str, Any]:
    """A ``FailedScheduling`` event as the kube-scheduler records it when no node has the GPUs a pod asks
    for and preemption finds no lower-priority pod to evict (the message shape of Kubernetes 1.24+)."""
    short = nodes if gpu_nodes is None else gpu_nodes
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod}.{count:x}", "namespace": namespace},
        "involvedObject": {
            "kind": "Pod",
            "namespace": namespace,
            "name": pod,
            "uid": f"pod-{namespace}-{pod}",
            "apiVersion": "v1",
        },
        "reason": "FailedScheduling",
        "type": "Warning",
        "count": count,
        "lastTimestamp": _now(),
        "firstTimestamp": _now(),
        "source": {"component": "default-scheduler"},
        "reportingComponent": "default-scheduler",
        "message": f"0/{nodes} nodes are available: {short} Insufficient nvidia.com/gpu. "
        f"preemption: 0/{nodes} nodes are available: {short} No preemption victims found for incoming pod.",
    }


def failed_scheduling_event(namespace: str, pod: str, message: str, *, count: int = 1) -> dict[str, Any]:
    """A ``FailedScheduling`` event of a pod as the kube-scheduler records it, in its words (``message``)."""
    event = scheduling_failure_event(namespace, pod, nodes=0, count=count)
    event["message"] = message
    return event


def parse_taint(text: str) -> dict[str, Any]:
    """``key=value:Effect`` or ``key:Effect`` (as ``kubectl taint`` takes it) as the API's taint; ValueError otherwise."""
    spec, colon, effect = text.rpartition(":")
    key, _, value = spec.partition("=")
    if not colon or not key or effect not in _TAINT_EFFECTS:
        raise ValueError(f"invalid taint spec: {text} (key=value:Effect, the effect one of {', '.join(_TAINT_EFFECTS)})")
    return {"key": key, **({"value": value} if value else {}), "effect": effect}


def _condition(kind: str, state: str, at: str, reason: str = "", message: str = "") -> dict[str, Any]:
    condition: dict[str, Any] = {"type": kind, "status": state, "lastProbeTime": None, "lastTransitionTime": at}
    if reason:
        condition.update(reason=reason, message=message)
    return condition


def _node_conditions(ready: bool) -> list[dict[str, Any]]:
    """What the kubelet reports of itself: no pressure, and ready or not."""
    at = _now()

    def condition(kind: str, state: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": state,
            "lastHeartbeatTime": at,
            "lastTransitionTime": at,
            "reason": reason,
            "message": message,
        }

    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        if ready
        else condition("Ready", "False", "KubeletNotReady", "container runtime network not ready: NetworkReady=false"),
    ]


def quota_refusal_event(
    namespace: str, kind: str, name: str, *, requested: int, used: int, limited: int, count: int = 1
) -> dict[str, Any]:
    """A ``FailedCreate`` event as the ReplicaSet/Job controller records it when the GPU quota is full."""
    gpu = "requests.nvidia.com/gpu"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{count:x}", "namespace": namespace},
        "involvedObject": {"kind": kind, "namespace": namespace, "name": name, "uid": f"uid-{name}", "apiVersion": "apps/v1"},
        "reason": "FailedCreate",
        "type": "Warning",
        "count": count,
        "lastTimestamp": _now(),
        "firstTimestamp": _now(),
        "source": {"component": "replicaset-controller" if kind == "ReplicaSet" else "job-controller"},
        "message": f'Error creating: pods "{name}-x7k2p" is forbidden: exceeded quota: compute-quota, '
        f"requested: {gpu}={requested}, used: {gpu}={used}, limited: {gpu}={limited}",
    }


def _invalid(name: str, hard: dict[str, Any]) -> Outgoing | None:
    for resource, value in hard.items():
        text = str(value)
        if not _QUANTITY.match(text):
            return _status(
                422,
                f'ResourceQuota "{name}" is invalid: spec.hard[{resource}]: Invalid value: "{text}": '
                "must match the regex for a quantity",
                "Invalid",
            )
        if text.startswith("-"):
            return _status(
                422,
                f'ResourceQuota "{name}" is invalid: spec.hard[{resource}]: Invalid value: "{text}": '
                "must be greater than or equal to 0",
                "Invalid",
            )
    return None


def _node_fields(node: dict[str, Any]) -> dict[str, Any]:
    """A node with ``spec.unschedulable`` spelt out, as the field selector sees it (absent is ``false``)."""
    return {"metadata": node["metadata"], "spec": {"unschedulable": bool(node["spec"].get("unschedulable"))}}


def _not_found(kind: str, name: str) -> Outgoing:
    """The API server's 404 for a core-group object: ``pods "x" not found`` with its details."""
    return _status(404, f'{kind} "{name}" not found', "NotFound", {"name": name, "kind": kind})


def _list(kind: str, items: list[dict[str, Any]], rv: str) -> Outgoing:
    return Outgoing.json(200, {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": items})


def _pod_gpus(pod: dict[str, Any]) -> int:
    """The ``nvidia.com/gpu`` a stand-in pod requests (its one container, as ``add_pod`` makes it)."""
    return int(pod["spec"]["containers"][0]["resources"].get("requests", {}).get("nvidia.com/gpu", 0))


def write_kubeconfig(
    path: Path, contexts: Mapping[str, KubeApiStandIn], *, current: str, certificate_authority: Path | None = None
) -> Path:
    """One kubeconfig with a context (its cluster and user of the same name) per stand-in, ``current`` the
    current context, as an operator merges the kubeconfigs of several clusters; over HTTPS every cluster
    is trusted through ``certificate_authority``."""
    clusters = []
    for name, kube in contexts.items():
        cluster: dict[str, str] = {"server": kube.url}
        if certificate_authority is not None:
            cluster["certificate-authority"] = str(certificate_authority)
        clusters.append({"name": name, "cluster": cluster})
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": [{"name": name, "user": {"token": kube.token}} for name, kube in contexts.items()],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name in contexts],
        "current-context": current,
    }
    path.write_text(yaml.safe_dump(document))
    return path
