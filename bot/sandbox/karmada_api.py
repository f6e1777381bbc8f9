"""The Karmada control plane's API server on loopback: karmada-apiserver, a kube-apiserver with Karmada's CRDs.

A ``KubeApiStandIn`` (its token, faults, request log and core API: a Karmada plane has namespaces) on a
port of its own, without Kueue (that is a member cluster's), serving ``policy.karmada.io/v1alpha1``
``FederatedResourceQuota`` (namespaced; ``pkg/apis/policy/v1alpha1/federatedresourcequota_types.go``):
``spec.overall`` and ``spec.staticAssignments`` (``[{clusterName, hard}]``), ``status.overall``,
``status.overallUsed`` and ``status.aggregatedStatus`` (``[{clusterName, hard, used}]``, by cluster name).
Discovery, GET, LIST (in a namespace and across), PATCH (JSON Patch with ``test``, merge patch), PUT and
the ``/status`` subresource behave as the API server does for any CRD (``bot.sandbox.crd``:
``resourceVersion`` preconditions and 409, ``dryRun=All``). A write is checked by the CRD's schema
(quantities: 422 ``Invalid``), then, except on ``/status``, by Karmada's validating webhook
``federatedresourcequota.karmada.io`` (``pkg/webhook/federatedresourcequota/validating.go``; 403): a name
longer than 63 characters, a negative quantity, an ``overall`` below the sum of the staticAssignments of
a resource (``overall is less than assignments``), an assignment of a resource ``overall`` does not name.
The webhook has no side effects, so the API server calls it on a dry run too: a dry run shows its refusal.

``add_federated_quota`` seeds one as ``kubectl apply`` leaves it; ``edit_federated_quota``,
``reorder_assignments`` and ``remove_assignment`` play a person running ``kubectl edit`` (what the webhook
would deny is a test's mistake); ``sync_members`` plays Karmada's controllers: the sync controller
propagates each member's assignment as a ResourceQuota of the same namespace and name in that member
cluster (another ``KubeApiStandIn``), the status controller aggregates their status.
``federated_quota_writes`` counts the writes through the API that were persisted.
"""

from __future__ import annotations

import copy
import re
import ssl
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, ClassVar

from bot.sandbox.apimachinery import now
from bot.sandbox.crd import (
    Problem,
    api_group,
    api_resource_list,
    api_resources,
    denied,
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
from bot.sandbox.kube_api import KubeApiStandIn

GROUP = "policy.karmada.io"
VERSION = "v1alpha1"
PLURAL = "federatedresourcequotas"
KIND = "FederatedResourceQuota"
WEBHOOK = "federatedresourcequota.karmada.io"
NAME_LIMIT = 63  # validation.DNS1123LabelMaxLength: the webhook's limit (the name is used in labels)
_PREFIX = r"^/apis/policy\.karmada\.io"
KARMADA_ROUTES = [
    ("karmada_group", re.compile(rf"{_PREFIX}/?$")),
    ("karmada_resources", re.compile(rf"{_PREFIX}/(?P<version>[^/]+)/?$")),
    ("federated_quotas", re.compile(rf"{_PREFIX}/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)$")),
    (
        "federated_quota",
        re.compile(
            rf"{_PREFIX}/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<plural>[^/]+)/(?P<name>[^/]+)(?P<subresource>/status)?$"
        ),
    ),
]


class KarmadaApiStandIn(KubeApiStandIn):
    """A Karmada control plane's API server serving FederatedResourceQuotas."""

    routes: ClassVar[list[tuple[str, re.Pattern[str]]]] = [*KubeApiStandIn.routes, *KARMADA_ROUTES]

    def __init__(self, *, token: str = "karmada-token", tls: ssl.SSLContext | None = None) -> None:
        super().__init__(token=token, tls=tls)
        self.serve_kueue()  # Kueue runs in the member clusters, not on the plane
        self.karmada_installed = True
        self._federated: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) -> the stored object
        self._federated_persisted: list[str] = []  # the name of each persisted write through the API

    # --- seeding, hand edits, the controllers ----------------------------------------------------

    def serve_karmada(self, installed: bool = True) -> None:
        """Whether ``policy.karmada.io`` is served (False: a cluster without Karmada's CRDs)."""
        with self._lock:
            self.karmada_installed = installed

    def add_federated_quota(
        self,
        namespace: str,
        name: str,
        *,
        overall: Mapping[str, Any],
        assignments: Mapping[str, Mapping[str, Any]] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        """A FederatedResourceQuota as ``kubectl apply`` leaves it: ``assignments`` maps each member cluster to
        its ``hard``, in the order of ``spec.staticAssignments``; no status until ``sync_members``."""
        spec: dict[str, Any] = {"overall": dict(overall)}
        if assignments:
            spec["staticAssignments"] = [{"clusterName": member, "hard": dict(hard)} for member, hard in assignments.items()]
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "uid": f"frq-{namespace}-{name}",
            "generation": 1,
            "creationTimestamp": now(),
            **({"annotations": dict(annotations)} if annotations else {}),
        }
        quota = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": metadata, "spec": spec}
        refused = _problems(name, quota, webhook=True)
        assert refused is None, refused.body
        with self._lock:
            metadata["resourceVersion"] = self._next_rv()
            self._federated[(namespace, name)] = quota

    def edit_federated_quota(
        self,
        namespace: str,
        name: str,
        *,
        overall: Mapping[str, Any] | None = None,
        assignments: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """What ``kubectl edit`` does: set these keys of ``spec.overall`` and of members' ``hard`` (a member
        not assigned yet is appended), keep everything else, move the resourceVersion and the generation."""

        def edit(quota: dict[str, Any]) -> None:
            spec = quota["spec"]
            spec["overall"].update(overall or {})
            entries = spec.setdefault("staticAssignments", [])
            for member, hard in (assignments or {}).items():
                entry = next((e for e in entries if e["clusterName"] == member), None)
                if entry is None:
                    entry = {"clusterName": member, "hard": {}}
                    entries.append(entry)
                entry["hard"].update(hard)

        self._edit_federated(namespace, name, edit)

    def reorder_assignments(self, namespace: str, name: str, order: list[str]) -> None:
        """A person reorders ``spec.staticAssignments`` (an atomic list: its indexes move)."""

        def edit(quota: dict[str, Any]) -> None:
            entries = {e["clusterName"]: e for e in quota["spec"]["staticAssignments"]}
            assert sorted(entries) == sorted(order), (sorted(entries), order)
            quota["spec"]["staticAssignments"] = [entries[member] for member in order]

        self._edit_federated(namespace, name, edit)

    def remove_assignment(self, namespace: str, name: str, member: str) -> None:
        """A person takes a member cluster out of ``spec.staticAssignments``."""

        def edit(quota: dict[str, Any]) -> None:
            spec = quota["spec"]
            spec["staticAssignments"] = [e for e in spec.get("staticAssignments") or [] if e["clusterName"] != member]

        self._edit_federated(namespace, name, edit)

    def sync_members(self, members: Mapping[str, KubeApiStandIn]) -> None:
        """What Karmada's controllers do, once: each assignment becomes (or updates) the ResourceQuota of the
        same namespace and name in its member cluster (``members``: by cluster name; one not given is not
        reached), then ``status`` aggregates what those quotas report (a member not reached keeps its entry)."""
        with self._lock:
            for (namespace, name), quota in self._federated.items():
                for entry in quota["spec"].get("staticAssignments") or []:
                    member = members.get(entry["clusterName"])
                    if member is not None:
                        _propagate(member, namespace, name, entry["hard"])
                state = _aggregated(quota, namespace, name, members)
                if state != quota.get("status"):
                    quota["status"] = state
                    quota["metadata"]["resourceVersion"] = self._next_rv()

    def federated_quota(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The FederatedResourceQuota as stored, a copy; None when there is none."""
        with self._lock:
            quota = self._federated.get((namespace, name))
            return copy.deepcopy(quota) if quota else None

    def assignment(self, namespace: str, name: str, member: str, key: str) -> Any:
        """A member's stored ``hard`` of ``key``, as written (None: the member or the key is not there)."""
        with self._lock:
            entries = self._federated[(namespace, name)]["spec"].get("staticAssignments") or []
            return next((e["hard"].get(key) for e in entries if e["clusterName"] == member), None)

    def overall(self, namespace: str, name: str, key: str) -> Any:
        """The stored ``spec.overall`` of ``key``, as written."""
        with self._lock:
            return self._federated[(namespace, name)]["spec"]["overall"].get(key)

    def federated_quota_writes(self, name: str | None = None) -> int:
        """Patches and updates of FederatedResourceQuotas that were persisted (dry runs, refusals and writes
        that changed nothing not counted)."""
        with self._lock:
            return sum(1 for written in self._federated_persisted if name in (None, written))

    def api_groups(self) -> list[dict[str, Any]]:
        return [*super().api_groups(), *([api_group(GROUP, (VERSION,))] if self.karmada_installed else [])]

    # --- HTTP ------------------------------------------------------------------------------------

    def _get_karmada_group(self, incoming: Incoming, body: Any) -> Outgoing:
        if not self.karmada_installed:
            return no_such_path()
        return Outgoing.json(200, {"kind": "APIGroup", "apiVersion": "v1", **api_group(GROUP, (VERSION,))})

    def _get_karmada_resources(self, incoming: Incoming, body: Any, version: str) -> Outgoing:
        if not self._serves_federated(version, PLURAL):
            return no_such_path()
        entries = api_resources(
            PLURAL, singular="federatedresourcequota", namespaced=True, kind=KIND, short_names=(), has_status=True
        )
        return api_resource_list(GROUP, version, entries)

    def _get_federated_quotas(self, incoming: Incoming, body: Any, version: str, ns: str | None, plural: str) -> Outgoing:
        if not self._serves_federated(version, plural):
            return no_such_path()
        chosen = selected([q for (namespace, _), q in sorted(self._federated.items()) if ns in (None, namespace)], incoming)
        if isinstance(chosen, Outgoing):
            return chosen
        return listed(GROUP, version, KIND, copy.deepcopy(chosen), self._next_rv())

    def _get_federated_quota(
        self, incoming: Incoming, body: Any, version: str, ns: str, plural: str, name: str, subresource: str | None
    ) -> Outgoing:
        found = self._federated_at(version, ns, plural, name)
        return found if isinstance(found, Outgoing) else Outgoing.json(200, copy.deepcopy(found))

    def _patch_federated_quota(
        self, incoming: Incoming, body: Any, version: str, ns: str, plural: str, name: str, subresource: str | None
    ) -> Outgoing:
        found = self._federated_at(version, ns, plural, name)
        if isinstance(found, Outgoing):
            return found
        result = patched(incoming, body, copy.deepcopy(found))
        if isinstance(result, Outgoing):
            return result
        return self._update_federated_quota(incoming, ns, name, subresource, result)

    def _put_federated_quota(
        self, incoming: Incoming, body: Any, version: str, ns: str, plural: str, name: str, subresource: str | None
    ) -> Outgoing:
        found = self._federated_at(version, ns, plural, name)
        if isinstance(found, Outgoing):
            return found
        mismatch = version_mismatch(body, GROUP, version)
        if mismatch is not None:
            return mismatch
        return self._update_federated_quota(incoming, ns, name, subresource, copy.deepcopy(body))

    # --- helpers -------------------------------------------------------------------------------

    def _serves_federated(self, version: str, plural: str) -> bool:
        return self.karmada_installed and version == VERSION and plural == PLURAL

    def _federated_at(self, version: str, ns: str, plural: str, name: str) -> dict[str, Any] | Outgoing:
        if not self._serves_federated(version, plural):
            return no_such_path()
        return self._federated.get((ns, name)) or not_found(GROUP, PLURAL, name)

    def _update_federated_quota(
        self, incoming: Incoming, ns: str, name: str, subresource: str | None, wanted: dict[str, Any]
    ) -> Outgoing:
        """Store ``wanted`` as the registry does (``bot.sandbox.crd``), checked by the schema and, on the main
        resource, by Karmada's webhook; not stored on a dry run."""
        current = self._federated[(ns, name)]
        failed = precondition_failure(wanted, current, kind=KIND, group=GROUP, plural=PLURAL, name=name)
        if failed is not None:
            return failed
        result = merged_write(
            current, {**wanted, "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND}, status_only=subresource is not None
        )
        result["metadata"]["namespace"] = ns
        refused = _problems(name, result, webhook=subresource is None)
        if refused is not None:
            return refused
        if result == current or incoming.query.get("dryRun") == "All":
            return Outgoing.json(200, result)
        result["metadata"]["resourceVersion"] = self._next_rv()
        self._federated[(ns, name)] = result
        self._federated_persisted.append(name)
        return Outgoing.json(200, copy.deepcopy(result))

    def _edit_federated(self, namespace: str, name: str, edit: Callable[[dict[str, Any]], None]) -> None:
        with self._lock:
            quota = copy.deepcopy(self._federated[(namespace, name)])
            edit(quota)
            refused = _problems(name, quota, webhook=True)
            assert refused is None, refused.body
            quota["metadata"]["resourceVersion"] = self._next_rv()
            quota["metadata"]["generation"] = quota["metadata"].get("generation", 1) + 1
            self._federated[(namespace, name)] = quota


def _spec_lists(quota: dict[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each ResourceList of the spec with its field path: ``overall``, then each assignment's ``hard``."""
    spec = quota.get("spec") or {}
    entries = spec.get("staticAssignments") or []
    return [("spec.overall", spec.get("overall") or {})] + [
        (f"spec.staticAssignments[{i}].hard", e.get("hard") or {}) for i, e in enumerate(entries)
    ]


def _status_lists(quota: dict[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each ResourceList of the status with its field path."""
    state = quota.get("status") or {}
    found: list[tuple[str, Mapping[str, Any]]] = [
        (f"status.{part}", state.get(part) or {}) for part in ("overall", "overallUsed")
    ]
    for i, entry in enumerate(state.get("aggregatedStatus") or []):
        found += [(f"status.aggregatedStatus[{i}].{part}", entry.get(part) or {}) for part in ("hard", "used")]
    return found


def _problems(name: str, quota: dict[str, Any], *, webhook: bool) -> Outgoing | None:
    """The CRD schema's refusal (422), then, with ``webhook``, Karmada's webhook's (403); None: accepted."""
    # The schema's path of a map's key is ``<map>.<key>`` (kube-openapi), the webhook's ``<map>[<key>]``.
    lists = _spec_lists(quota) + _status_lists(quota)
    schema = [p for path, resources in lists for key, v in resources.items() if (p := quantity_problem(f"{path}.{key}", v))]
    if schema:
        return invalid(KIND, GROUP, name, schema)
    refused = _webhook_problems(name, quota) if webhook else []
    return denied(WEBHOOK, refused) if refused else None


def _webhook_problems(name: str, quota: dict[str, Any]) -> list[Problem]:
    """What ``validateFederatedResourceQuota`` denies, in its order: the name; the spec's negative quantities,
    then overall against the assignments; the status's negative quantities."""
    problems = []
    if len(name) > NAME_LIMIT:
        problems.append(Problem("metadata.name", name, f"must be no more than {NAME_LIMIT} characters"))
    problems += _negative(_spec_lists(quota))
    spec = quota.get("spec") or {}
    overall, entries = spec.get("overall") or {}, spec.get("staticAssignments") or []
    for key, value in overall.items():
        if _amount(value) < sum(_amount(e.get("hard", {}).get(key, 0)) for e in entries):
            problems.append(Problem(f"spec.overall[{key}]", _shown(value), "overall is less than assignments"))
    for i, entry in enumerate(entries):
        for key in entry.get("hard") or {}:
            if key not in overall:
                path = f"spec.staticAssignments[{i}].hard[{key}]"
                problems.append(Problem(path, key, "assignment resourceName is not exist in overall"))
    return problems + _negative(_status_lists(quota))


def _negative(lists: list[tuple[str, Mapping[str, Any]]]) -> list[Problem]:
    """``ValidateNonnegativeQuantity`` over each list's quantities."""
    return [
        Problem(f"{path}[{key}]", _shown(v), "must be greater than or equal to 0")
        for path, resources in lists
        for key, v in resources.items()
        if _amount(v) < 0
    ]


def _amount(value: Any) -> Decimal:
    """A quantity the schema accepted."""
    amount = quantity(value)
    assert amount is not None, value
    return amount


def _shown(value: Any) -> str:
    """A quantity as ``resource.Quantity.String()`` prints a whole one (``"8"``); others as written."""
    amount = _amount(value)
    return str(int(amount)) if amount == amount.to_integral_value() else str(value)


def _propagate(member: KubeApiStandIn, namespace: str, name: str, hard: Mapping[str, Any]) -> None:
    """The sync controller: the member's ResourceQuota ``name`` in ``namespace`` carries ``hard``."""
    wanted = {key: _shown(value) for key, value in hard.items()}
    if (namespace, name) not in member.quotas:
        member.add_quota(namespace, name, wanted, used_gpus=member.used.get(namespace, 0))
        return
    for key, value in wanted.items():
        if member.hard(namespace, name, key) != value:
            member.edit_quota(namespace, name, key, value)


def _aggregated(quota: dict[str, Any], namespace: str, name: str, members: Mapping[str, KubeApiStandIn]) -> dict[str, Any]:
    """The status controller: each reached member's ResourceQuota status (others keep their entry), by name."""
    kept = {e["clusterName"]: e for e in (quota.get("status") or {}).get("aggregatedStatus") or []}
    for entry in quota["spec"].get("staticAssignments") or []:
        member = members.get(entry["clusterName"])
        propagated = member.quotas.get((namespace, name)) if member is not None else None
        if propagated is not None:
            reported = propagated.get("status") or {}
            kept[entry["clusterName"]] = {
                "clusterName": entry["clusterName"],
                "hard": dict(reported.get("hard") or {}),
                "used": dict(reported.get("used") or {}),
            }
    entries = [kept[member] for member in sorted(kept)]
    used: dict[str, Decimal] = {}
    for entry in entries:
        for key, value in entry["used"].items():
            used[key] = used.get(key, Decimal(0)) + _amount(value)
    state: dict[str, Any] = {
        "overall": dict(quota["spec"]["overall"]),
        "overallUsed": {k: _shown(str(v)) for k, v in used.items()},
    }
    if entries:
        state["aggregatedStatus"] = entries
    return state
