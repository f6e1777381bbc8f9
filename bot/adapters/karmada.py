"""The Karmada side: a member cluster's assignment of one resource in a FederatedResourceQuota, read and written.

Through the ``ApiClient`` of the Karmada plane's API server (its own kubeconfig context: not a member
cluster's). Karmada is found through discovery (``/apis/policy.karmada.io`` serving ``v1alpha1``), asked
once per process. What the bot governs for a namespace key is the member's entry of
``spec.staticAssignments`` (``bot.domain.karmada``). That list is atomic, so a write is one JSON Patch on
the read's index: a ``replace`` of ``metadata.resourceVersion`` with the read's (the registry compares
the patched object's version with the stored one: 409 when anyone wrote since), a ``test`` of the entry's
``clusterName``, the ``replace`` of the member's ``hard`` and of ``spec.overall`` of the resource moved by
as much (Karmada's webhook refuses an ``overall`` below the sum of the assignments, so both change in the
one patch), and the bot's stamps for the member. A 409 or a failed ``test`` is a ``QuotaConflict`` (read
again), unless a fresh read finds the FederatedResourceQuota, the member's entry or its resource gone
(``KarmadaObjectMissing``). Calls, their answers as the bot's errors and the stamp's patch operations are
``bot.adapters.custom_objects``'.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubernetes import client

from bot.adapters.custom_objects import JSON_PATCH, Answered, call, pointer_token, stamp_operations, stamped, whole
from bot.adapters.kube import FIELD_MANAGER, KubeCalls
from bot.domain.karmada import FederatedQuotaSnapshot, MemberAssignment
from bot.domain.resources import quota_key
from bot.errors import KarmadaObjectMissing, KarmadaPart, QuotaConflict
from bot.observability import count_error

log = logging.getLogger(__name__)
GROUP = "policy.karmada.io"
VERSION = "v1alpha1"  # the version of FederatedResourceQuota the bot speaks (the only one Karmada serves)


class KarmadaPlane:
    """Implements ``FederatedQuotas`` on one Karmada plane's API server."""

    def __init__(self, api_client: client.ApiClient, *, timeout: tuple[float, float] = (5.0, 20.0)) -> None:
        self._calls = KarmadaCalls(api_client)
        self._timeout = timeout
        self._asked = False
        self._served: tuple[str, ...] = ()

    def api_version(self) -> str | None:
        """``v1alpha1`` when the plane serves it in ``policy.karmada.io``; None when Karmada is not installed there.
        Asked once, then kept for the process (a failure to ask is not kept)."""
        if not self._asked:
            try:
                group = call("discover Karmada", lambda: self._calls.get_policy_group(_request_timeout=self._timeout), on=(404,))
            except Answered:
                group = {}
            self._served = tuple(str(v.get("version")) for v in group.get("versions") or [])
            self._asked = True
            if VERSION not in self._served:
                log.info("Karmada is not usable: policy.karmada.io serves %s", ", ".join(self._served) or "nothing")
        return VERSION if VERSION in self._served else None

    def read_federated_quota(
        self, namespace_key: str, namespace: str, name: str, member: str, resource: str
    ) -> FederatedQuotaSnapshot:
        """``member``'s assignment of ``resource`` in the FederatedResourceQuota ``name`` of ``namespace`` on the
        plane, for the namespace key it is governed for; ``KarmadaObjectMissing`` when Karmada, the quota, the
        member's entry or its limit of the resource is not there."""
        self._require_karmada(namespace, name, member, resource)
        try:
            quota = call(
                f"read the FederatedResourceQuota {namespace}/{name} on the Karmada plane",
                lambda: self._calls.get_federated_quota(namespace, name, _request_timeout=self._timeout),
                on=(404,),
            )
        except Answered:
            missing = KarmadaPart.FEDERATED_QUOTA
            raise KarmadaObjectMissing(
                missing, namespace=namespace, federated_quota=name, member=member, resource=resource
            ) from None
        return _snapshot(quota, namespace_key=namespace_key, member=member, resource=resource)

    def write_federated_quota(
        self,
        namespace_key: str,
        namespace: str,
        name: str,
        member: str,
        resource: str,
        *,
        gpus: int,
        previous: FederatedQuotaSnapshot,
        dry_run: bool,
        applied_by: str,
    ) -> FederatedQuotaSnapshot:
        """Set ``member``'s assignment to ``gpus`` and move ``spec.overall`` by as much, in one patch, on the quota
        exactly as ``previous`` read it, stamped ``applied_by``; ``dry_run``: the API server (and Karmada's
        webhook) validates and stores nothing."""
        self._require_karmada(namespace, name, member, resource)
        operations = write_operations(previous, gpus=gpus, applied_by=applied_by)
        action = f"patch the FederatedResourceQuota {namespace}/{name} on the Karmada plane" + (" (dry run)" if dry_run else "")
        try:
            written = call(
                action,
                lambda: self._calls.patch_federated_quota(
                    namespace, name, operations, dry_run="All" if dry_run else None, _request_timeout=self._timeout
                ),
                on=(404, 422),
            )
        except Answered as answered:
            self.read_federated_quota(namespace_key, namespace, name, member, resource)  # KarmadaObjectMissing when gone
            count_error("kubernetes", "conflict")
            log.info(
                "The FederatedResourceQuota %s/%s changed since the bot read it (%s): reading it again",
                namespace,
                name,
                answered.said.message,
            )
            raise QuotaConflict(f"the FederatedResourceQuota {namespace}/{name} changed while the bot wrote it") from None
        return _snapshot(written, namespace_key=namespace_key, member=member, resource=resource)

    def _require_karmada(self, namespace: str, name: str, member: str, resource: str) -> None:
        if self.api_version() is None:
            raise KarmadaObjectMissing(
                KarmadaPart.KARMADA,
                namespace=namespace,
                federated_quota=name,
                member=member,
                resource=resource,
                present=self._served,
            )


class KarmadaCalls(KubeCalls):
    """The Karmada calls the bot makes, through the plane's ``ApiClient`` as ``kubernetes.client.CustomObjectsApi``
    would make them (its generated module is not loaded); the answers are the API's JSON, as dicts."""

    def get_policy_group(self, *, _request_timeout: Any) -> Any:
        return self._call("GET", f"/apis/{GROUP}", "object", {}, timeout=_request_timeout)

    def get_federated_quota(self, namespace: str, name: str, *, _request_timeout: Any) -> Any:
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/federatedresourcequotas/{{name}}"
        return self._call("GET", path, "object", {"namespace": namespace, "name": name}, timeout=_request_timeout)

    def patch_federated_quota(
        self, namespace: str, name: str, operations: list[dict[str, Any]], *, dry_run: str | None, _request_timeout: Any
    ) -> Any:
        return self._call(
            "PATCH",
            f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/federatedresourcequotas/{{name}}",
            "object",
            {"namespace": namespace, "name": name},
            query=([("dryRun", dry_run)] if dry_run else []) + [("fieldManager", FIELD_MANAGER)],
            body=operations,
            content_type=JSON_PATCH,
            timeout=_request_timeout,
        )


def write_operations(previous: FederatedQuotaSnapshot, *, gpus: int, applied_by: str) -> list[dict[str, Any]]:
    """The JSON Patch that sets ``previous``'s member assignment to ``gpus`` and moves ``overall`` with it, on the
    FederatedResourceQuota exactly as it was read."""
    token = pointer_token(quota_key(previous.resource))
    entry = f"/spec/staticAssignments/{previous.assignment_index}"
    operations: list[dict[str, Any]] = [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": previous.resource_version},
        {"op": "test", "path": f"{entry}/clusterName", "value": previous.member},
        {"op": "replace", "path": f"{entry}/hard/{token}", "value": str(gpus)},
        {"op": "replace", "path": f"/spec/overall/{token}", "value": str(previous.overall_for(gpus))},
    ]
    stamps = stamp_operations(
        previous.resource, qualifier=previous.member, gpus=gpus, applied_by=applied_by, annotated=previous.annotated
    )
    return operations + stamps


def _snapshot(quota: Mapping[str, Any], *, namespace_key: str, member: str, resource: str) -> FederatedQuotaSnapshot:
    metadata, spec, state = quota.get("metadata") or {}, quota.get("spec") or {}, quota.get("status") or {}
    namespace, name, key = str(metadata.get("namespace")), str(metadata.get("name")), quota_key(resource)
    entries = spec.get("staticAssignments") or []
    index = next((i for i, entry in enumerate(entries) if entry.get("clusterName") == member), None)
    if index is None:
        present = tuple(str(entry.get("clusterName")) for entry in entries)
        missing = KarmadaPart.MEMBER
        raise KarmadaObjectMissing(
            missing, namespace=namespace, federated_quota=name, member=member, resource=resource, present=present
        )
    hard = entries[index].get("hard") or {}
    overall = spec.get("overall") or {}
    if key not in hard or key not in overall:
        missing = KarmadaPart.RESOURCE
        raise KarmadaObjectMissing(
            missing, namespace=namespace, federated_quota=name, member=member, resource=resource, present=tuple(hard)
        )
    reported: Mapping[str, Any] = next((e for e in state.get("aggregatedStatus") or [] if e.get("clusterName") == member), {})
    enforced = (reported.get("hard") or {}).get(key)
    annotations = metadata.get("annotations")
    return FederatedQuotaSnapshot(
        namespace=namespace_key,
        name=name,
        hard=whole(hard[key]),
        used=whole((reported.get("used") or {}).get(key)),
        limits=None,
        resource_version=str(metadata.get("resourceVersion")),
        bot_applied=stamped(annotations, resource, qualifier=member),
        member=member,
        resource=resource,
        assignment_index=index,
        overall=whole(overall[key]),
        assignments=tuple(_assignment(entry, key) for entry in entries),
        enforced=whole(enforced) if enforced is not None else None,
        annotated=annotations is not None,
    )


def _assignment(entry: Mapping[str, Any], key: str) -> MemberAssignment:
    limit = (entry.get("hard") or {}).get(key)
    return MemberAssignment(str(entry.get("clusterName")), whole(limit) if limit is not None else None)
