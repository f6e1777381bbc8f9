"""The Kubernetes side: read and write one resource of a namespace's GPU quota with the official client.

Writes are a dry run first, then a JSON merge patch carrying the read's ``resourceVersion`` (the API
server answers 409 if anyone wrote in between), the resource's ``requests.<resource>`` and the bot's
annotations for it; ``limits.<resource>`` is kept equal where the quota has it. Other keys of the
quota are never touched. The client's exceptions never leave this module: they become
the bot's error kinds with a sentence a person can act on.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.utils import parse_quantity

from bot.domain.priority import GpuPod
from bot.domain.quota import QuotaSnapshot, stamp_annotations
from bot.domain.resources import GPU, limits_key, quota_key
from bot.errors import NamespaceNotFound, PermanentError, QuotaConflict, TemporaryError, Unreachable
from bot.observability import count_error
from bot.services.ports import GpuNodes, QuotaRefusal, SchedulingFailure

log = logging.getLogger(__name__)
T = TypeVar("T")
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # set by NVIDIA GPU feature discovery
FIELD_MANAGER = "gpu-quota-bot"
MERGE_PATCH = "application/merge-patch+json"
# Pods that still hold (or wait for) their GPUs; the API server filters, so finished pods never travel.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"


class KubernetesCluster:
    """Implements ``QuotaCluster`` over the Kubernetes API."""

    def __init__(self, api_client: client.ApiClient, *, timeout: tuple[float, float] = (5.0, 20.0)) -> None:
        self.api_client = api_client  # shared with the other adapters of this cluster (bot.adapters.kueue)
        self._core = KubeCalls(api_client)
        self.timeout = timeout  # (connect, read) seconds of every call, the other adapters' of this cluster too

    @classmethod
    def from_environment(
        cls, kubeconfig: Path | None = None, *, context: str | None = None, timeout: tuple[float, float] = (5.0, 20.0)
    ) -> KubernetesCluster:
        """A kubeconfig when one is given or found (``KUBECONFIG``, ``~/.kube/config``), else in-cluster."""
        configuration = client.Configuration()
        path = kubeconfig or (Path(os.environ["KUBECONFIG"]) if os.environ.get("KUBECONFIG") else None)
        default = Path.home() / ".kube" / "config"
        try:
            if path is not None or default.exists():
                config.load_kube_config(
                    config_file=str(path or default), context=context, client_configuration=configuration, persist_config=False
                )
            else:
                config.load_incluster_config(client_configuration=configuration)
        except (ConfigException, OSError) as error:
            raise PermanentError(f"cannot load the Kubernetes configuration: {error}") from error
        except (yaml.YAMLError, ValueError, TypeError, AttributeError, KeyError) as error:
            # A corrupted file: the loader trips over it in many ways (bad YAML, wrong shapes, bad base64).
            raise PermanentError(
                f"cannot load the Kubernetes configuration: {path or default} is not a valid kubeconfig ({type(error).__name__})"
            ) from error
        # The loaders' token-refresh hook assigns the same host before every call, and while the proxy comes
        # from the environment each assignment resolves it again from the whole environment (urllib's
        # getproxies: a scan of every variable, many in a pod). Resolved once now, it is kept as it is.
        configuration.proxy = configuration.proxy
        return cls(client.ApiClient(configuration), timeout=timeout)

    # --- QuotaCluster ------------------------------------------------------------------------

    def read_quota(self, namespace: str, name: str, resource: str, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        """Always read now (``max_age`` is for the caching wrapper, ``bot.services.capacity``)."""
        try:
            quota = self._call(
                f"read the ResourceQuota {name} in {namespace}",
                lambda: self._core.read_namespaced_resource_quota(name, namespace, _request_timeout=self.timeout),
                allow_missing=True,
            )
        except _NotFound:
            self._require_namespace(namespace)
            return None
        return _snapshot(quota, resource)

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
        applied, by = stamp_annotations(resource)
        annotations = {applied: str(gpus), by: applied_by}
        dry = "All" if dry_run else None
        if previous is None:
            body: Any = {  # the client takes the plain manifest as well as a V1ResourceQuota
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "annotations": annotations,
                    "labels": {"app.kubernetes.io/managed-by": FIELD_MANAGER},
                },
                "spec": {"hard": {quota_key(resource): str(gpus)}},
            }
            action = f"create the ResourceQuota {name} in {namespace}"
            call = lambda: self._core.create_namespaced_resource_quota(  # noqa: E731
                namespace,
                body,
                dry_run=dry,
                field_manager=FIELD_MANAGER,
                _request_timeout=self.timeout,
            )
        else:
            hard = {quota_key(resource): str(gpus)}
            if previous.limits is not None:
                hard[limits_key(resource)] = str(gpus)
            patch = {
                "metadata": {"resourceVersion": previous.resource_version, "annotations": annotations},
                "spec": {"hard": hard},
            }
            action = f"patch the ResourceQuota {name} in {namespace}"
            call = lambda: self._core.patch_namespaced_resource_quota(  # noqa: E731
                name,
                namespace,
                patch,
                dry_run=dry,
                field_manager=FIELD_MANAGER,
                _content_type=MERGE_PATCH,
                _request_timeout=self.timeout,
            )
        try:
            written = self._call(action + (" (dry run)" if dry_run else ""), call, allow_missing=True)
        except _NotFound:
            self._require_namespace(namespace)
            raise QuotaConflict(f"the ResourceQuota {name} in {namespace} disappeared while the bot wrote it") from None
        return _snapshot(written, resource)

    def gpu_nodes(self) -> GpuNodes:
        nodes = self._call("list nodes", lambda: self._core.list_node(_request_timeout=self.timeout))
        allocatable: dict[str, int] = {}
        models: dict[str, set[str]] = {}
        for node in nodes.items:
            offered = _extended_resources((node.status.allocatable if node.status else None) or {})
            product = ((node.metadata.labels if node.metadata else None) or {}).get(GPU_PRODUCT_LABEL)
            for resource, count in offered.items():
                allocatable[resource] = allocatable.get(resource, 0) + count
                if product:  # a GPU in MIG mode: its slices are its model's
                    models.setdefault(resource, set()).add(product)
        return GpuNodes(allocatable, {resource: frozenset(products) for resource, products in models.items()})

    def gpu_quota_totals(self, quota_names: Mapping[str, str]) -> dict[str, dict[str, int]]:
        quotas = self._call(
            "list ResourceQuotas", lambda: self._core.list_resource_quota_for_all_namespaces(_request_timeout=self.timeout)
        )
        totals: dict[str, dict[str, int]] = {}
        for quota in quotas.items:
            namespace, name = (quota.metadata.namespace or "", quota.metadata.name) if quota.metadata else ("", None)
            if quota_names.get(namespace) == name:
                hard = (quota.spec.hard if quota.spec else None) or {}
                totals[namespace] = {
                    key.removeprefix("requests."): _gpus(value) for key, value in hard.items() if _counts_extended(key)
                }
        return totals

    def quota_refusals(self) -> list[QuotaRefusal]:
        events = self._call(
            "list FailedCreate events",
            lambda: self._core.list_event_for_all_namespaces(field_selector="reason=FailedCreate", _request_timeout=self.timeout),
        )
        refusals = []
        for event in events.items:
            message = event.message or ""
            resource = _refused_resource(message)
            if resource is None:
                continue
            involved = event.involved_object
            refusals.append(
                QuotaRefusal(
                    namespace=involved.namespace or (event.metadata.namespace if event.metadata else None) or "",
                    kind=involved.kind or "workload",
                    name=involved.name or "?",
                    uid=involved.uid or "",
                    resource=resource,
                    message=message,
                    count=event.count or 1,
                    last_seen=event.last_timestamp,
                )
            )
        return refusals

    # --- Workloads -----------------------------------------------------------------------------

    def gpu_pods(self, namespace: str, resource: str) -> list[GpuPod]:
        # Raw JSON: V1Pod deserialisation makes a 1,000-pod list take about twice as long (bench/pod_listing.py).
        response: Any = self._call(
            f"list pods in {namespace}",
            lambda: self._core.list_namespaced_pod(
                namespace, field_selector=ACTIVE_PODS, _preload_content=False, _request_timeout=self.timeout
            ),
        )
        try:
            items = json.loads(response.data).get("items") or []
        except (ValueError, AttributeError) as error:
            raise TemporaryError(f"the Kubernetes API sent an unreadable pod list for {namespace} ({error})", delay=2.0) from None
        return [pod for item in items if (pod := gpu_pod(item, resource)) is not None]

    def priority_classes(self) -> dict[str, int]:
        classes = self._call("list PriorityClasses", lambda: self._core.list_priority_class(_request_timeout=self.timeout))
        return {str(item.metadata.name): int(item.value) for item in classes.items if item.metadata and item.value is not None}

    def scheduling_failures(self) -> list[SchedulingFailure]:
        events = self._call(
            "list FailedScheduling events",
            lambda: self._core.list_event_for_all_namespaces(
                field_selector="reason=FailedScheduling", _request_timeout=self.timeout
            ),
        )
        failures = []
        for event in events.items:
            message = event.message or ""
            involved = event.involved_object
            insufficient = _INSUFFICIENT.search(message)
            if insufficient is None or involved.kind != "Pod":
                continue
            failures.append(
                SchedulingFailure(
                    namespace=involved.namespace or (event.metadata.namespace if event.metadata else None) or "",
                    pod=involved.name or "?",
                    resource=insufficient["resource"],
                    message=message,
                    count=event.count or 1,
                    last_seen=event.last_timestamp,
                )
            )
        return failures

    def namespace_exists(self, namespace: str) -> bool:
        try:
            self._call(
                f"read the namespace {namespace}",
                lambda: self._core.read_namespace(namespace, _request_timeout=self.timeout),
                allow_missing=True,
            )
        except _NotFound:
            return False
        return True

    # --- helpers -----------------------------------------------------------------------------

    def _require_namespace(self, namespace: str) -> None:
        if not self.namespace_exists(namespace):
            raise NamespaceNotFound(f"the namespace {namespace} does not exist in the cluster", namespace=namespace)

    def _call(self, action: str, call: Callable[[], T], *, allow_missing: bool = False) -> T:
        """Run a client call; a 404 raises ``_NotFound`` when ``allow_missing``, else a PermanentError."""
        try:
            return call()
        except ApiException as error:
            if error.status == 404 and allow_missing:
                raise _NotFound(_status_message(error)) from None
            translated = _translate(error, action)
            count_error("kubernetes", _kind(translated))
            raise translated from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            log.warning("Kubernetes API unreachable while trying to %s: %s", action, type(error).__name__)
            count_error("kubernetes", "temporary")
            raise Unreachable(f"the Kubernetes API did not answer when the bot tried to {action}", delay=2.0) from None


class KubeCalls:
    """The Kubernetes calls the bot makes (CoreV1, and the PriorityClass list of scheduling.k8s.io/v1),
    named as ``kubernetes.client.CoreV1Api`` / ``SchedulingV1Api`` name them and made through the same
    ``ApiClient`` (configuration, auth, TLS, REST layer, ``ApiException``s, models).

    The generated ``CoreV1Api`` module alone is about 20 MiB of a running process (every one of its
    hundreds of methods wrapped by pydantic, some 250 model modules imported with it): the bot's whole
    Kubernetes use is the paths below, and only the models of their answers are loaded.
    """

    def __init__(self, api_client: client.ApiClient) -> None:
        self._api = api_client

    def read_namespaced_resource_quota(self, name: str, namespace: str, *, _request_timeout: Any) -> Any:
        path = "/api/v1/namespaces/{namespace}/resourcequotas/{name}"
        return self._call("GET", path, "V1ResourceQuota", {"namespace": namespace, "name": name}, timeout=_request_timeout)

    def create_namespaced_resource_quota(
        self, namespace: str, body: Any, *, dry_run: str | None, field_manager: str, _request_timeout: Any
    ) -> Any:
        return self._call(
            "POST",
            "/api/v1/namespaces/{namespace}/resourcequotas",
            "V1ResourceQuota",
            {"namespace": namespace},
            query=_write_query(dry_run, field_manager),
            body=body,
            content_type="application/json",
            timeout=_request_timeout,
        )

    def patch_namespaced_resource_quota(
        self,
        name: str,
        namespace: str,
        body: Any,
        *,
        dry_run: str | None,
        field_manager: str,
        _content_type: str,
        _request_timeout: Any,
    ) -> Any:
        return self._call(
            "PATCH",
            "/api/v1/namespaces/{namespace}/resourcequotas/{name}",
            "V1ResourceQuota",
            {"namespace": namespace, "name": name},
            query=_write_query(dry_run, field_manager),
            body=body,
            content_type=_content_type,
            timeout=_request_timeout,
        )

    def list_node(self, *, _request_timeout: Any) -> Any:
        return self._call("GET", "/api/v1/nodes", "V1NodeList", {}, timeout=_request_timeout)

    def list_resource_quota_for_all_namespaces(self, *, _request_timeout: Any) -> Any:
        return self._call("GET", "/api/v1/resourcequotas", "V1ResourceQuotaList", {}, timeout=_request_timeout)

    def list_event_for_all_namespaces(self, *, field_selector: str, _request_timeout: Any) -> Any:
        query = [("fieldSelector", field_selector)]
        return self._call("GET", "/api/v1/events", "CoreV1EventList", {}, query=query, timeout=_request_timeout)

    def read_namespace(self, name: str, *, _request_timeout: Any) -> Any:
        return self._call("GET", "/api/v1/namespaces/{name}", "V1Namespace", {"name": name}, timeout=_request_timeout)

    def list_namespaced_pod(self, namespace: str, *, field_selector: str, _preload_content: bool, _request_timeout: Any) -> Any:
        """With ``_preload_content=False`` the response itself (``.data`` holds the JSON), as the generated method gives."""
        query = [("fieldSelector", field_selector)]
        path, answer = "/api/v1/namespaces/{namespace}/pods", "V1PodList"
        if _preload_content:
            return self._call("GET", path, answer, {"namespace": namespace}, query=query, timeout=_request_timeout)
        return self._call("GET", path, None, {"namespace": namespace}, query=query, timeout=_request_timeout)

    def list_priority_class(self, *, _request_timeout: Any) -> Any:
        path = "/apis/scheduling.k8s.io/v1/priorityclasses"
        return self._call("GET", path, "V1PriorityClassList", {}, timeout=_request_timeout)

    def _call(
        self,
        method: str,
        path: str,
        answer: str | None,
        path_params: dict[str, str],
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: Any,
    ) -> Any:
        headers = {"Accept": "application/json"} | ({"Content-Type": content_type} if content_type else {})
        request = self._api.param_serialize(
            method=method,
            resource_path=path,
            path_params=path_params,
            query_params=query or [],
            header_params=headers,
            body=body,
            post_params=[],
            files={},
            auth_settings=["BearerToken"],
            collection_formats={},
        )
        response = self._api.call_api(*request, _request_timeout=timeout)
        response.read()
        if answer is None:  # the raw answer, unparsed; a status other than 2xx still raises
            self._api.response_deserialize(response_data=response, response_types_map={"2XX": "bytearray"})
            return response
        # A status other than 2xx raises ApiException here, as the generated methods do.
        return self._api.response_deserialize(response_data=response, response_types_map={"2XX": answer}).data


def _write_query(dry_run: str | None, field_manager: str) -> list[tuple[str, str]]:
    return ([("dryRun", dry_run)] if dry_run else []) + [("fieldManager", field_manager)]


def _kind(error: Exception) -> str:
    if isinstance(error, QuotaConflict):
        return "conflict"
    return "temporary" if isinstance(error, TemporaryError) else "permanent"


class _NotFound(Exception):
    """Internal: a 404, which callers interpret (missing quota vs missing namespace)."""


def _translate(error: ApiException, action: str) -> Exception:
    status = error.status or 0
    message = _status_message(error)
    log.warning("Kubernetes API answered %s to %s: %s", status, action, message)
    if status == 409:
        return QuotaConflict(f"could not {action}: {message}")
    if status in (401, 403):
        return PermanentError(
            f"the cluster refused to let the bot {action} (HTTP {status}: {message}). "
            "Check the bot's ServiceAccount and RBAC (see deploy/)"
        )
    if status == 422:
        return PermanentError(f"the cluster rejected the change when the bot tried to {action} (HTTP 422: {message})")
    if status == 429 or status >= 500:
        retry_after = _retry_after(error)
        return TemporaryError(f"the Kubernetes API failed to {action} (HTTP {status}: {message})", delay=retry_after)
    return PermanentError(f"the Kubernetes API refused to {action} (HTTP {status}: {message})")


def _status_message(error: ApiException) -> str:
    """The ``message`` of a Kubernetes Status body, else the HTTP reason."""
    try:
        body = json.loads(error.body or "")
        if isinstance(body, dict) and body.get("message"):
            return str(body["message"])
    except (TypeError, ValueError):
        pass
    return str(error.reason or "no reason given")


def _retry_after(error: ApiException) -> float:
    try:
        return float((error.headers or {}).get("Retry-After", 1))
    except (TypeError, ValueError):
        return 1.0


def _gpus(quantity: Any) -> int:
    if quantity in (None, ""):
        return 0
    value: Decimal = parse_quantity(str(quantity))
    return int(value)


def _extended_resources(quantities: Mapping[str, Any]) -> dict[str, int]:
    """The extended resources (vendor-prefixed names such as ``nvidia.com/gpu``) of a node's allocatable."""
    return {name: count for name, quantity in quantities.items() if "/" in name and (count := _gpus(quantity)) > 0}


def _counts_extended(key: str) -> bool:
    """A ResourceQuota key that counts an extended resource (``requests.nvidia.com/mig-3g.40gb``)."""
    return key.startswith("requests.") and "/" in key


# The API server's quota refusal: "exceeded quota: compute-quota, requested: requests.nvidia.com/gpu=2, used: ...".
_REQUESTED = re.compile(r"requested: (?P<keys>[^ ]+)")
# The scheduler's "0/3 nodes are available: 3 Insufficient nvidia.com/mig-3g.40gb."
_INSUFFICIENT = re.compile(r"Insufficient (?P<resource>[a-z0-9.-]+/[A-Za-z0-9._-]*[A-Za-z0-9])")


def _refused_resource(message: str) -> str | None:
    """The first extended resource an ``exceeded quota`` refusal names as requested (None: not one)."""
    requested = _REQUESTED.search(message) if "exceeded quota" in message else None
    if requested is None:
        return None
    keys = (part.partition("=")[0] for part in requested["keys"].rstrip(",").split(","))
    return next((key.removeprefix("requests.") for key in keys if _counts_extended(key)), None)


def gpu_pod(item: Mapping[str, Any], resource: str = GPU) -> GpuPod | None:
    """A pod of the API's JSON as a ``GpuPod`` of ``resource``, None when it requests none of it.

    Its GPUs are what the scheduler and the quota count: the sum over its containers, or the largest
    init container when that is more."""
    spec = item.get("spec") or {}
    status = item.get("status") or {}
    metadata = item.get("metadata") or {}

    def requested(container: Mapping[str, Any]) -> int:
        return _gpus(((container.get("resources") or {}).get("requests") or {}).get(resource))

    gpus = max(
        sum(requested(c) for c in spec.get("containers") or []),
        max((requested(c) for c in spec.get("initContainers") or []), default=0),
    )
    if gpus <= 0:
        return None
    return GpuPod(
        namespace=metadata.get("namespace") or "",
        name=metadata.get("name") or "?",
        gpus=gpus,
        priority_class=spec.get("priorityClassName") or "",
        phase=status.get("phase") or "Unknown",
        started_at=api_time(status.get("startTime") or metadata.get("creationTimestamp")),
        priority=spec.get("priority"),
        nominated_node=status.get("nominatedNodeName") or None,
    )


def api_time(text: Any) -> datetime | None:
    """An API object's RFC 3339 time (``2026-12-01T09:00:00Z``) as a datetime; None when absent or not one."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _snapshot(quota: Any, resource: str) -> QuotaSnapshot:
    hard = (quota.spec.hard if quota.spec else None) or {}
    used = (quota.status.used if quota.status else None) or {}
    annotations = quota.metadata.annotations or {}
    applied = annotations.get(stamp_annotations(resource)[0])
    requests, limits = quota_key(resource), limits_key(resource)
    return QuotaSnapshot(
        namespace=quota.metadata.namespace,
        name=quota.metadata.name,
        hard=_gpus(hard.get(requests)),
        used=_gpus(used.get(requests)),
        limits=_gpus(hard[limits]) if limits in hard else None,
        counted=requests in hard,
        resource_version=quota.metadata.resource_version,
        bot_applied=int(applied) if applied is not None and applied.lstrip("-").isdigit() else None,
    )
