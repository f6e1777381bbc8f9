"""The workload controllers' objects of the Kubernetes API stand-in: DaemonSets, Deployments and StatefulSets
(``apps/v1``), Jobs (``batch/v1``) and ConfigMaps (``v1``), as the API server stores them once their controllers
have written a status. Read only through the API (get by name; DaemonSets also listed, in a namespace or all);
seeded by the ``add_*`` methods. A base class of ``KubeApiStandIn``, sharing its lock and resourceVersions.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable
from typing import Any

from bot.sandbox.apimachinery import BadSelector, labels_match, now, status
from bot.sandbox.crd import api_group, not_found
from bot.sandbox.httpserver import Incoming, Outgoing

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # Kubernetes 1.27+; the job controller also sets the older "job-name"
JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
_NS = r"/namespaces/(?P<ns>[^/]+)"
APPS_ROUTES = [
    ("all_daemon_sets", re.compile(r"^/apis/apps/v1/daemonsets$")),
    ("daemon_sets", re.compile(rf"^/apis/apps/v1{_NS}/daemonsets$")),
    ("daemon_set", re.compile(rf"^/apis/apps/v1{_NS}/daemonsets/(?P<name>[^/]+)$")),
    ("deployment", re.compile(rf"^/apis/apps/v1{_NS}/deployments/(?P<name>[^/]+)$")),
    ("stateful_set", re.compile(rf"^/apis/apps/v1{_NS}/statefulsets/(?P<name>[^/]+)$")),
    ("job", re.compile(rf"^/apis/batch/v1{_NS}/jobs/(?P<name>[^/]+)$")),
    ("config_map", re.compile(rf"^/api/v1{_NS}/configmaps/(?P<name>[^/]+)$")),
]
# (group, plural) of each kind this module serves; "" is the core group.
_PLURAL = {
    "DaemonSet": ("apps", "daemonsets"),
    "Deployment": ("apps", "deployments"),
    "StatefulSet": ("apps", "statefulsets"),
    "Job": ("batch", "jobs"),
    "ConfigMap": ("", "configmaps"),
}


class AppsObjects:
    """DaemonSets, Deployments, StatefulSets, Jobs and ConfigMaps of ``KubeApiStandIn`` (a base class of it)."""

    _lock: threading.RLock
    _next_rv: Callable[[], str]

    def _init_apps(self) -> None:
        self.apps: dict[tuple[str, str, str], dict[str, Any]] = {}  # (kind, namespace, name) -> the stored object

    # --- seeding -------------------------------------------------------------------------------

    def add_daemon_set(
        self,
        namespace: str,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        desired: int,
        ready: int,
        available: int | None = None,
        node_selector: dict[str, str] | None = None,
        tolerations: list[dict[str, Any]] | None = None,
    ) -> None:
        """A DaemonSet whose controller found ``desired`` nodes for it, ``ready`` of its pods ready (``available``:
        as many as ready unless given); its pods carry ``labels`` (its selector) and the node selector and
        tolerations of its template."""
        pod_labels = dict(labels or {"app": name})
        pod_spec: dict[str, Any] = {"containers": [{"name": name, "image": f"registry.example/{name}:1"}]}
        if node_selector:
            pod_spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            pod_spec["tolerations"] = copy.deepcopy(tolerations)
        available = ready if available is None else available
        spec = {
            "selector": {"matchLabels": pod_labels},
            "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10,
        }
        state = {
            "currentNumberScheduled": desired,
            "desiredNumberScheduled": desired,
            "numberMisscheduled": 0,
            "numberReady": ready,
            "numberAvailable": available,
            "observedGeneration": 1,
            "updatedNumberScheduled": desired,
        }
        if desired - available > 0:
            state["numberUnavailable"] = desired - available  # omitted when 0, as the API's omitempty
        self._store("DaemonSet", namespace, name, {"labels": dict(pod_labels)}, spec, state)

    def add_deployment(self, namespace: str, name: str, *, match_labels: dict[str, str], replicas: int = 1) -> None:
        """A Deployment selecting its pods by ``match_labels`` (its template's labels)."""
        spec = {
            "replicas": replicas,
            "selector": {"matchLabels": dict(match_labels)},
            "template": {"metadata": {"labels": dict(match_labels)}, "spec": _template_spec(name, "Always")},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        }
        state = {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas}
        self._store("Deployment", namespace, name, {}, spec, state)

    def add_stateful_set(self, namespace: str, name: str, *, match_labels: dict[str, str], replicas: int = 1) -> None:
        """A StatefulSet selecting its pods by ``match_labels``."""
        spec = {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": dict(match_labels)},
            "template": {"metadata": {"labels": dict(match_labels)}, "spec": _template_spec(name, "Always")},
            "podManagementPolicy": "OrderedReady",
        }
        state = {"observedGeneration": 1, "replicas": replicas, "currentReplicas": replicas, "updatedReplicas": replicas}
        self._store("StatefulSet", namespace, name, {}, spec, state)

    def add_job(self, namespace: str, name: str, *, suspend: bool = False, pod_labels: dict[str, str] | None = None) -> None:
        """A Job as the API server defaults it: its selector is its own uid, and its pods' labels carry its name and
        uid (both the ``batch.kubernetes.io/`` forms and the older bare ones) beside ``pod_labels``. ``suspend``:
        held (as Kueue holds a Job until its Workload is admitted), condition ``Suspended``."""
        uid = job_uid(namespace, name)
        generated = {JOB_UID_LABEL: uid, JOB_NAME_LABEL: name, "controller-uid": uid, "job-name": name}
        spec = {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "suspend": suspend,
            "manualSelector": False,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {JOB_UID_LABEL: uid}},
            "template": {"metadata": {"labels": {**(pod_labels or {}), **generated}}, "spec": _template_spec(name, "Never")},
        }
        at = now()
        if suspend:
            state: dict[str, Any] = {
                "conditions": [
                    {
                        "type": "Suspended",
                        "status": "True",
                        "reason": "JobSuspended",
                        "message": "Job suspended",
                        "lastProbeTime": at,
                        "lastTransitionTime": at,
                    }
                ]
            }
        else:
            state = {"active": 1, "startTime": at, "ready": 0, "terminating": 0}
        self._store("Job", namespace, name, {"labels": dict(generated)}, spec, state)

    def add_config_map(self, namespace: str, name: str, data: dict[str, str]) -> None:
        with self._lock:
            self.apps[("ConfigMap", namespace, name)] = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": self._metadata("ConfigMap", namespace, name, {}),
                "data": dict(data),
            }

    def device_plugin_lost(self, node_count: int = 1) -> None:
        """The device plugin's DaemonSets (a name with ``device-plugin``) have ``node_count`` pods fewer ready."""
        with self._lock:
            for (kind, _, name), obj in self.apps.items():
                if kind != "DaemonSet" or "device-plugin" not in name:
                    continue
                state = obj["status"]
                state["numberReady"] = max(0, state["numberReady"] - node_count)
                state["numberAvailable"] = max(0, state["numberAvailable"] - node_count)
                state["numberUnavailable"] = state["desiredNumberScheduled"] - state["numberAvailable"]
                obj["metadata"]["resourceVersion"] = self._next_rv()

    def apps_api_groups(self) -> list[dict[str, Any]]:
        return [api_group("apps", ("v1",)), api_group("batch", ("v1",))]

    # --- HTTP ----------------------------------------------------------------------------------

    def _get_all_daemon_sets(self, incoming: Incoming, body: Any) -> Outgoing:
        return self._apps_list("DaemonSet", None, incoming)

    def _get_daemon_sets(self, incoming: Incoming, body: Any, ns: str) -> Outgoing:
        return self._apps_list("DaemonSet", ns, incoming)

    def _get_daemon_set(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        return self._apps_get("DaemonSet", ns, name)

    def _get_deployment(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        return self._apps_get("Deployment", ns, name)

    def _get_stateful_set(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        return self._apps_get("StatefulSet", ns, name)

    def _get_job(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        return self._apps_get("Job", ns, name)

    def _get_config_map(self, incoming: Incoming, body: Any, ns: str, name: str) -> Outgoing:
        return self._apps_get("ConfigMap", ns, name)

    def _apps_get(self, kind: str, ns: str, name: str) -> Outgoing:
        found = self.apps.get((kind, ns, name))
        if found is None:
            group, plural = _PLURAL[kind]
            if not group:
                return status(404, f'{plural} "{name}" not found', "NotFound", {"name": name, "kind": plural})
            return not_found(group, plural, name)
        return Outgoing.json(200, copy.deepcopy(found))

    def _apps_list(self, kind: str, ns: str | None, incoming: Incoming) -> Outgoing:
        selector = incoming.query.get("labelSelector", "")
        try:
            items = [
                copy.deepcopy(obj)
                for (k, namespace, _), obj in sorted(self.apps.items())
                if k == kind and ns in (None, namespace) and labels_match(obj["metadata"].get("labels") or {}, selector)
            ]
        except BadSelector as error:
            return status(400, str(error), "BadRequest")
        group, _ = _PLURAL[kind]
        return Outgoing.json(
            200,
            {
                "kind": f"{kind}List",
                "apiVersion": f"{group}/v1",
                "metadata": {"resourceVersion": self._next_rv()},
                "items": items,
            },
        )

    # --- helpers -------------------------------------------------------------------------------

    def _store(self, kind: str, namespace: str, name: str, metadata: dict[str, Any], spec: Any, state: Any) -> None:
        group, _ = _PLURAL[kind]
        with self._lock:
            self.apps[(kind, namespace, name)] = {
                "apiVersion": f"{group}/v1",
                "kind": kind,
                "metadata": self._metadata(kind, namespace, name, metadata),
                "spec": spec,
                "status": state,
            }

    def _metadata(self, kind: str, namespace: str, name: str, extra: dict[str, Any]) -> dict[str, Any]:
        uid = job_uid(namespace, name) if kind == "Job" else f"{kind.lower()}-{namespace}-{name}"
        generation = {} if kind == "ConfigMap" else {"generation": 1}
        return {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": self._next_rv(),
            **generation,
            "creationTimestamp": now(),
            **extra,
        }


def job_uid(namespace: str, name: str) -> str:
    """The uid ``add_job`` gives a Job (its pods' ownerReference and labels name it)."""
    return f"job-{namespace}-{name}"


def _template_spec(name: str, restart: str) -> dict[str, Any]:
    return {"containers": [{"name": "main", "image": f"registry.example/{name}:1"}], "restartPolicy": restart}
