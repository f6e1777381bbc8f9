"""What ``why`` and ``doctor`` read of one cluster (``ClusterInspection``), as ``bot.domain.scheduling`` facts.

Read only: every call is a GET through the cluster's shared ``ApiClient`` (``KubeCalls``: no generated API
module is loaded), its JSON parsed here without the client's models. A refusal by RBAC (401/403) is
``Forbidden`` naming the permission as ``kubectl auth can-i`` takes it; an API that does not answer is
``Unreachable``; 5xx and 429 are ``TemporaryError``s; a missing object is None where the port says so.
Namespaces here are the cluster's own names (``bot.adapters.inspect_clusters`` keys them).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

import urllib3
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.adapters.custom_objects import said_of, whole
from bot.adapters.kube import ACTIVE_PODS, KubeCalls, api_time
from bot.adapters.kueue import GROUP as KUEUE_GROUP
from bot.adapters.kueue import KueueCluster
from bot.domain.scheduling import (
    GPU_NODE_LABELS,
    AutoscalerStatus,
    DaemonSetFacts,
    NodeFacts,
    NodeGroupStatus,
    PodFacts,
    PriorityClassFacts,
    Requirement,
    SchedulerEvent,
    SelectorTerm,
    Taint,
    Toleration,
    WorkloadPods,
)
from bot.errors import Forbidden, PermanentError, TemporaryError, Unreachable
from bot.observability import count_error

log = logging.getLogger(__name__)
AUTOSCALER_NAMESPACE, AUTOSCALER_STATUS = "kube-system", "cluster-autoscaler-status"
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")  # Kubernetes 1.27+, and the older form it still sets
# Unfinished pods bound to a node: the API server filters, so pending and finished ones never travel.
BOUND_PODS = f"spec.nodeName!=,{ACTIVE_PODS}"
FINISHED = ("Succeeded", "Failed")


class ClusterInspector:
    """Implements ``ClusterInspection`` for one cluster; ``kueue`` finds the version of Kueue's Workloads."""

    def __init__(
        self, api_client: client.ApiClient, *, timeout: tuple[float, float] = (5.0, 20.0), kueue: KueueCluster | None = None
    ) -> None:
        self._calls = InspectCalls(api_client)
        self._timeout = timeout
        self._kueue = kueue

    def pod(self, namespace: str, name: str) -> PodFacts | None:
        item = self._get(f"/api/v1/namespaces/{namespace}/pods/{name}", f"get pods -n {namespace}", missing_ok=True)
        if item is None or (item.get("status") or {}).get("phase") in FINISHED:
            return None
        return self._with_nodes([item])[0]

    def workload_pods(self, namespace: str, name: str) -> WorkloadPods | None:
        """Tried in the port's order: a Job (its pods by its own selector, which the job controller gave every pod it
        made), a Deployment or StatefulSet (by ``spec.selector``), a Kueue Workload (its controller Job's pods)."""
        for kind, path, permission in (
            ("Job", f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}", f"get jobs.batch -n {namespace}"),
            ("Deployment", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", f"get deployments.apps -n {namespace}"),
            ("StatefulSet", f"/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}", f"get statefulsets.apps -n {namespace}"),
        ):
            found = self._get(path, permission, missing_ok=True)
            if found is not None:
                return WorkloadPods(kind, name, tuple(self._selected(namespace, _controller_selector(kind, found))))
        workload = self._workload(namespace, name)
        if workload is None:
            return None
        owner = _controller(workload)
        job = None
        if owner is not None and owner[0] == "Job":
            path = f"/apis/batch/v1/namespaces/{namespace}/jobs/{owner[1]}"
            job = self._get(path, f"get jobs.batch -n {namespace}", missing_ok=True)
        pods = self._selected(namespace, _controller_selector("Job", job)) if job is not None else []
        return WorkloadPods("Workload", name, tuple(pods))

    def pods(self, namespace: str) -> list[PodFacts]:
        return self._selected(namespace, "")

    def nodes(self, cluster: str = "") -> list[NodeFacts]:
        """Two calls whatever the cluster's size: the nodes, and every unfinished pod bound to one (any namespace,
        the API server filtering with a field selector), summed per node. One list per node would be N calls for
        the same pods; the scheduler's own view is the same sum."""
        nodes = self._items("/api/v1/nodes", "list nodes")
        bound = self._items("/api/v1/pods", "list pods -A", query=[("fieldSelector", BOUND_PODS)])
        requested: dict[str, dict[str, int]] = {}
        for item in bound:
            on = requested.setdefault(str((item.get("spec") or {}).get("nodeName")), {})
            for resource, count in effective_requests(item.get("spec") or {}).items():
                on[resource] = on.get(resource, 0) + count
        return [node_facts(item, requested.get(_name(item), {})) for item in nodes]

    def scheduling_events(self, namespace: str, pod: str) -> list[SchedulerEvent]:
        selector = f"involvedObject.kind=Pod,involvedObject.name={pod},reason=FailedScheduling"
        path = f"/api/v1/namespaces/{namespace}/events"
        items = self._items(path, f"list events -n {namespace}", query=[("fieldSelector", selector)])
        events = [scheduler_event(item) for item in items]
        return sorted(events, key=lambda e: e.last_seen.timestamp() if e.last_seen else 0.0, reverse=True)

    def priority_class_facts(self, cluster: str = "") -> dict[str, PriorityClassFacts]:
        items = self._items("/apis/scheduling.k8s.io/v1/priorityclasses", "list priorityclasses.scheduling.k8s.io")
        return {facts.name: facts for facts in map(priority_class_facts, items)}

    def autoscaler_status(self, cluster: str = "") -> AutoscalerStatus | None:
        path = f"/api/v1/namespaces/{AUTOSCALER_NAMESPACE}/configmaps/{AUTOSCALER_STATUS}"
        permission = f"get configmaps/{AUTOSCALER_STATUS} -n {AUTOSCALER_NAMESPACE}"
        config_map = self._get(path, permission, missing_ok=True)
        if config_map is None:
            return None
        return parse_autoscaler_status(str((config_map.get("data") or {}).get("status") or ""))

    def daemon_sets(self, cluster: str = "") -> list[DaemonSetFacts]:
        return [daemon_set_facts(item) for item in self._items("/apis/apps/v1/daemonsets", "list daemonsets.apps")]

    # --- helpers -----------------------------------------------------------------------------

    def _workload(self, namespace: str, name: str) -> dict[str, Any] | None:
        version = self._kueue.api_version() if self._kueue is not None else None
        if version is None:  # Kueue is not installed: no Workload has that name
            return None
        path = f"/apis/{KUEUE_GROUP}/{version}/namespaces/{namespace}/workloads/{name}"
        try:
            return self._get(path, f"get workloads.{KUEUE_GROUP} -n {namespace}", missing_ok=True)
        except Forbidden:
            # The chart grants Workloads only where the bot governs Kueue (kueue.enabled, a ClusterQueue named):
            # elsewhere a name that is nothing else is no workload of the bot's, not a check that failed.
            log.info("not allowed to read Workloads in %s: %s is taken for no Workload", namespace, name)
            return None

    def _selected(self, namespace: str, labels: str | None) -> list[PodFacts]:
        """The unfinished pods of ``namespace`` matching the label selector ``labels`` ("": all; None: none)."""
        if labels is None:
            return []
        query = [("fieldSelector", ACTIVE_PODS)] + ([("labelSelector", labels)] if labels else [])
        items = self._items(f"/api/v1/namespaces/{namespace}/pods", f"list pods -n {namespace}", query=query)
        return self._with_nodes(items)

    def _with_nodes(self, items: list[dict[str, Any]]) -> list[PodFacts]:
        """The pods as facts, ``node_gpu_labelled`` from their nodes' labels (one list of those nodes, when any is bound)."""
        bound = sorted({node for item in items if (node := (item.get("spec") or {}).get("nodeName"))})
        gpu_nodes: set[str] = set()
        if bound:
            query = [("fieldSelector", f"metadata.name={bound[0]}")] if len(bound) == 1 else []
            nodes = self._items("/api/v1/nodes", "list nodes", query=query)
            gpu_nodes = {_name(n) for n in nodes if _gpu_labelled((n.get("metadata") or {}).get("labels") or {})}
        return [pod_facts(item, node_gpu_labelled=(item.get("spec") or {}).get("nodeName") in gpu_nodes) for item in items]

    def _items(self, path: str, permission: str, *, query: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
        listed = self._get(path, permission, query=query)
        return [item for item in (listed or {}).get("items") or [] if isinstance(item, dict)]

    def _get(
        self, path: str, permission: str, *, query: list[tuple[str, str]] | None = None, missing_ok: bool = False
    ) -> dict[str, Any] | None:
        """GET ``path`` as JSON; None for a 404 when ``missing_ok``. ``permission`` is what a refusal names."""
        action = _action(permission)
        try:
            response = self._calls.get_raw(path, query=query or [], _request_timeout=self._timeout)
        except ApiException as error:
            said = said_of(error)
            if said.code == 404 and missing_ok:
                return None
            translated = _translate(said.code, said.message, said.retry_after, action, permission)
            count_error("kubernetes", "temporary" if isinstance(translated, TemporaryError) else "permanent")
            raise translated from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            log.warning("Kubernetes API unreachable while trying to %s: %s", action, type(error).__name__)
            count_error("kubernetes", "temporary")
            raise Unreachable(f"the Kubernetes API did not answer when the bot tried to {action}", delay=2.0) from None
        try:
            parsed = json.loads(response.data)
        except (ValueError, TypeError) as error:
            raise TemporaryError(f"the Kubernetes API sent an unreadable answer to {action} ({error})", delay=2.0) from None
        return parsed if isinstance(parsed, dict) else None


class InspectCalls(KubeCalls):
    """GETs of any path through the cluster's ``ApiClient``, answered raw (``.data`` holds the JSON), as the
    generated methods answer with ``_preload_content=False``."""

    def get_raw(self, path: str, *, query: list[tuple[str, str]], _request_timeout: Any) -> Any:
        return self._call("GET", path, None, {}, query=query, timeout=_request_timeout)


def _action(permission: str) -> str:
    """``list pods -n ns`` -> ``list pods in ns``; ``-A``: in all namespaces."""
    what, _, namespace = permission.partition(" -n ")
    if what.endswith(" -A"):
        return f"{what.removesuffix(' -A')} in all namespaces"
    return f"{what} in {namespace}" if namespace else what


def _translate(code: int, message: str, retry_after: float, action: str, permission: str) -> Exception:
    log.warning("Kubernetes API answered %s to %s: %s", code, action, message)
    if code in (401, 403):
        return Forbidden(f"the cluster refused to let the bot {action} (HTTP {code}: {message})", permission=permission)
    if code == 429 or code >= 500:
        return TemporaryError(f"the Kubernetes API failed to {action} (HTTP {code}: {message})", delay=retry_after)
    return PermanentError(f"the Kubernetes API refused to {action} (HTTP {code}: {message})")


# --- the API's JSON as facts (pure) ----------------------------------------------------------------


def pod_facts(item: Mapping[str, Any], *, node_gpu_labelled: bool = False) -> PodFacts:
    metadata, spec, state = item.get("metadata") or {}, item.get("spec") or {}, item.get("status") or {}
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    scheduled: Mapping[str, Any] = next((c for c in state.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    unschedulable = scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable"
    return PodFacts(
        namespace=str(metadata.get("namespace") or ""),
        name=_name(item),
        phase=str(state.get("phase") or "Unknown"),
        requests=effective_requests(spec),
        limited=is_limited(spec),
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
        required_terms=selector_terms(affinity),
        tolerations=tuple(toleration(t) for t in spec.get("tolerations") or []),
        priority_class=str(spec.get("priorityClassName") or ""),
        priority=int(spec.get("priority") or 0),
        preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
        node_name=spec.get("nodeName") or None,
        nominated_node=state.get("nominatedNodeName") or None,
        started_at=api_time(state.get("startTime")),
        created_at=api_time(metadata.get("creationTimestamp")),
        scheduling_gates=tuple(str(g.get("name")) for g in spec.get("schedulingGates") or []),
        unschedulable_message=str(scheduled.get("message") or "") if unschedulable else None,
        owner=_controller(item),
        labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
        node_gpu_labelled=node_gpu_labelled,
    )


def effective_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Each extended resource (a name with ``/``) the pod requests as the scheduler and the quota count it (the
    API's ``PodRequests``): the containers' sum plus the sidecars' (init containers with ``restartPolicy: Always``,
    which keep running beside them), or, when more, what the init phase needs at its peak (each ordinary init
    container with the sidecars started before it). A container giving only a limit requests that much (the API
    server defaults it so)."""
    containers = [_container_requests(c) for c in spec.get("containers") or []]
    init = [(_container_requests(c), c.get("restartPolicy") == "Always") for c in spec.get("initContainers") or []]
    names = {name for requests in containers + [r for r, _ in init] for name in requests}
    wanted = {}
    for name in names:
        sidecars, init_peak = 0, 0
        for requests, sidecar in init:
            if sidecar:
                sidecars += requests.get(name, 0)
                init_peak = max(init_peak, sidecars)
            else:
                init_peak = max(init_peak, sidecars + requests.get(name, 0))
        wanted[name] = max(sum(r.get(name, 0) for r in containers) + sidecars, init_peak)
    return {name: count for name, count in sorted(wanted.items()) if count > 0}


def is_limited(spec: Mapping[str, Any]) -> bool:
    """Every container asking for an extended resource has it in ``limits``."""
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        if any(
            "/" in name and whole(v, up=True) > 0 and name not in limits for name, v in (resources.get("requests") or {}).items()
        ):
            return False
    return True


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    quantities = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {str(name): whole(value, up=True) for name, value in quantities.items() if "/" in name}


def selector_terms(required: Any) -> tuple[SelectorTerm, ...]:
    """``requiredDuringSchedulingIgnoredDuringExecution`` (a ``NodeSelector``) as terms: its expressions and its
    fields (``metadata.name``)."""
    terms = []
    for term in (required or {}).get("nodeSelectorTerms") or []:
        entries = [*(term.get("matchExpressions") or []), *(term.get("matchFields") or [])]
        requirements = tuple(
            Requirement(str(e.get("key") or ""), str(e.get("operator") or ""), tuple(str(v) for v in e.get("values") or []))
            for e in entries
        )
        terms.append(SelectorTerm(requirements))
    return tuple(terms)


def toleration(entry: Mapping[str, Any]) -> Toleration:
    return Toleration(
        key=str(entry.get("key") or ""),
        operator=str(entry.get("operator") or "Equal"),
        value=str(entry.get("value") or ""),
        effect=str(entry.get("effect") or ""),
    )


def taint(entry: Mapping[str, Any]) -> Taint:
    return Taint(str(entry.get("key") or ""), str(entry.get("value") or ""), str(entry.get("effect") or ""))


def node_facts(item: Mapping[str, Any], requested: Mapping[str, int]) -> NodeFacts:
    metadata, spec, state = item.get("metadata") or {}, item.get("spec") or {}, item.get("status") or {}
    ready: Mapping[str, Any] = next((c for c in state.get("conditions") or [] if c.get("type") == "Ready"), {})
    allocatable = {str(name): whole(value) for name, value in (state.get("allocatable") or {}).items() if "/" in name}
    return NodeFacts(
        name=_name(item),
        labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
        taints=tuple(taint(t) for t in spec.get("taints") or []),
        allocatable=allocatable,
        requested=dict(requested),
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready.get("status") == "True",
    )


def scheduler_event(item: Mapping[str, Any]) -> SchedulerEvent:
    """A core/v1 Event; one recorded through events.k8s.io has its count and last time in ``series``."""
    series = item.get("series") or {}
    seen = item.get("lastTimestamp") or series.get("lastObservedTime") or item.get("eventTime") or item.get("firstTimestamp")
    return SchedulerEvent(
        message=str(item.get("message") or ""),
        count=int(item.get("count") or series.get("count") or 1),
        last_seen=api_time(seen),
    )


def priority_class_facts(item: Mapping[str, Any]) -> PriorityClassFacts:
    return PriorityClassFacts(
        name=_name(item),
        value=int(item.get("value") or 0),
        preemption_policy=str(item.get("preemptionPolicy") or "PreemptLowerPriority"),
        global_default=bool(item.get("globalDefault")),
    )


def daemon_set_facts(item: Mapping[str, Any]) -> DaemonSetFacts:
    metadata, spec, state = item.get("metadata") or {}, item.get("spec") or {}, item.get("status") or {}
    pod = ((spec.get("template") or {}).get("spec")) or {}
    affinity = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return DaemonSetFacts(
        namespace=str(metadata.get("namespace") or ""),
        name=_name(item),
        labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
        desired=int(state.get("desiredNumberScheduled") or 0),
        ready=int(state.get("numberReady") or 0),
        available=int(state.get("numberAvailable") or 0),
        node_selector={str(k): str(v) for k, v in (pod.get("nodeSelector") or {}).items()},
        required_terms=selector_terms(affinity),
        tolerations=tuple(toleration(t) for t in pod.get("tolerations") or []),
    )


def label_selector(selector: Mapping[str, Any] | None) -> str | None:
    """A ``LabelSelector`` as the query's ``labelSelector``; None for one that selects nothing (absent or empty
    selects nothing for a controller: the API refuses an empty one on Deployments and Jobs)."""
    if not selector:
        return None
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), ",".join(expression.get("values") or [])
        terms.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": f"{key}", "DoesNotExist": f"!{key}"}.get(
                str(operator), ""
            )
        )
    joined = ",".join(t for t in terms if t)
    return joined or None


def _controller_selector(kind: str, found: Mapping[str, Any]) -> str | None:
    """The pods of a Job, Deployment or StatefulSet: its ``spec.selector``; a Job without one by its name label."""
    selected = label_selector((found.get("spec") or {}).get("selector"))
    if selected is None and kind == "Job":
        return f"{JOB_NAME_LABELS[0]}={_name(found)}"
    return selected


def parse_autoscaler_status(text: str) -> AutoscalerStatus:
    """The cluster autoscaler's ``status``: the YAML of 1.29+ (``autoscalerStatus``, ``clusterWide``, ``nodeGroups``), or
    the older plain text, whose health is its first ``Health:`` line (else its first line) and whose node groups are
    not read."""
    try:
        document = yaml.load(text, Loader=yaml.BaseLoader)  # every scalar a string: the time as written
    except yaml.YAMLError:
        document = None
    if isinstance(document, dict) and {"autoscalerStatus", "clusterWide", "nodeGroups"} & document.keys():
        overall = _dig(document, "clusterWide", "health", "status")
        groups = tuple(_node_group(g) for g in document.get("nodeGroups") or [] if isinstance(g, dict))
        return AutoscalerStatus(health=overall, node_groups=groups, written_at=str(document.get("time") or ""))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    header = re.match(r"Cluster-autoscaler status at (?P<at>.+?):?$", lines[0]) if lines else None
    health = next((line.removeprefix("Health:").strip() for line in lines if line.startswith("Health:")), None)
    return AutoscalerStatus(
        health=health or (lines[0] if lines else ""),
        written_at=header["at"] if header else "",
    )


def _node_group(group: Mapping[str, Any]) -> NodeGroupStatus:
    backoff = _dig(group, "scaleUp", "backoffInfo", "errorCode"), _dig(group, "scaleUp", "backoffInfo", "errorMessage")
    return NodeGroupStatus(
        name=str(group.get("name") or ""),
        health=_dig(group, "health", "status"),
        scale_up=_dig(group, "scaleUp", "status"),
        registered=_number(_dig(group, "health", "nodeCounts", "registered", "total")),
        min_size=_number(_dig(group, "health", "minSize")),
        max_size=_number(_dig(group, "health", "maxSize")),
        backoff=": ".join(part for part in backoff if part),
    )


def _dig(document: Any, *path: str) -> str:
    for key in path:
        document = document.get(key) if isinstance(document, dict) else None
    return str(document) if isinstance(document, str | int) else ""


def _number(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


def _controller(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (kind, name) of the ``ownerReferences`` entry marked ``controller``."""
    owners: Iterable[Mapping[str, Any]] = (item.get("metadata") or {}).get("ownerReferences") or []
    found = next((o for o in owners if o.get("controller")), None)
    return (str(found.get("kind")), str(found.get("name"))) if found else None


def _gpu_labelled(labels: Mapping[str, str]) -> bool:
    return any(labels.get(label) not in (None, "", "false") for label in GPU_NODE_LABELS)


def _name(item: Mapping[str, Any]) -> str:
    return str((item.get("metadata") or {}).get("name") or "?")
