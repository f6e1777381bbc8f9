"""What the API server does for every custom resource, as ``k8s.io/apiextensions-apiserver`` serves a CRD.

Shared by the stand-in's custom resources (Kueue's in ``kueue_api``, Karmada's in ``karmada_api``): the
discovery bodies of a group, a PATCH body applied by its content type (``application/json-patch+json``:
an operation that does not apply is a bare 422 ``Invalid``, as ``handlers/patch.go`` answers it;
``application/merge-patch+json``; anything else 415), the registry's preconditions on an update (the
name, then ``metadata.resourceVersion``: 409 ``Conflict`` when stale), what an update stores (only
``status`` through ``/status``, never through the main resource; the system fields of the metadata
kept; ``metadata.generation`` moved on a spec change), and the failure bodies: a schema's 422
``Invalid`` (``errors.NewInvalid``: every ``field.Error`` in the message and as a cause) and a
validating webhook's 403 (``admission webhook "<name>" denied the request: <reasons>``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from kubernetes.utils import parse_quantity

from bot.sandbox.apimachinery import BadSelector, PatchError, fields_match, json_patch, labels_match, merge_patch, status
from bot.sandbox.httpserver import Incoming, Outgoing

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
# The CRDs' pattern for a resource.Quantity (x-kubernetes-int-or-string), quoted in its 422 message.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)
_SELECTABLE = {"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"}  # the fields a CR selects by
_REJECTED = "the server rejected our request due to an error in our request"
_STALE = "the object has been modified; please apply your changes to the latest version and try again"


@dataclass(frozen=True)
class Problem:
    """One ``field.Error`` of ``k8s.io/apimachinery``: ``<field>: Invalid value: "<value>": <detail>``."""

    field: str
    value: str
    detail: str
    quoted: bool = True
    kind: str = "Invalid value"
    cause: str = "FieldValueInvalid"

    @property
    def body(self) -> str:
        return f"{self.kind}: {self._value}: {self.detail}" if self.detail else f"{self.kind}: {self._value}"

    @property
    def _value(self) -> str:
        return f'"{self.value}"' if self.quoted else self.value

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"


def aggregate(problems: list[Problem]) -> str:
    """``field.ErrorList.ToAggregate().Error()``: one error as itself, several in brackets."""
    return str(problems[0]) if len(problems) == 1 else f"[{', '.join(str(p) for p in problems)}]"


def invalid(kind: str, group: str, name: str, problems: list[Problem]) -> Outgoing:
    """422 Invalid as ``errors.NewInvalid`` makes it for a ``kind`` of ``group``."""
    causes = [{"reason": p.cause, "message": p.body, "field": p.field} for p in problems]
    return status(
        422,
        f'{kind}.{group} "{name}" is invalid: {aggregate(problems)}',
        "Invalid",
        {"name": name, "group": group, "kind": kind, "causes": causes},
    )


def denied(webhook: str, problems: list[Problem]) -> Outgoing:
    """403 as the API server answers for a validating webhook that denied the request with these problems."""
    return status(403, f'admission webhook "{webhook}" denied the request: {aggregate(problems)}', "Forbidden")


def quantity(value: Any) -> Decimal | None:
    """A quantity as a CRD's int-or-string schema takes it, None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    if isinstance(value, str) and not _QUANTITY.match(value):
        return None
    try:
        return Decimal(parse_quantity(value))
    except (ValueError, InvalidOperation):
        return None


def quantity_problem(path: str, value: Any) -> Problem | None:
    """What the schema says of a value at ``path`` that must be a quantity (None: it is one)."""
    if quantity(value) is not None:
        return None
    return Problem(path, str(value), f"{path} in body should match '{QUANTITY_PATTERN}'")


def patched(incoming: Incoming, body: Any, current: dict[str, Any]) -> dict[str, Any] | Outgoing:
    """``current`` with the PATCH body applied by its content type, or the API server's refusal."""
    content_type = incoming.headers.get("content-type", "").split(";")[0].strip()
    if content_type == JSON_PATCH:
        if not isinstance(body, list):
            return status(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch", "BadRequest")
        try:
            result: dict[str, Any] = json_patch(current, body)
        except PatchError:
            return status(422, _REJECTED, "Invalid", {})
        return result
    if content_type == MERGE_PATCH:
        if not isinstance(body, dict):
            return status(400, "Invalid JSON Patch", "BadRequest")
        return dict(merge_patch(copy.deepcopy(current), copy.deepcopy(body)))
    return status(
        415,
        "the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE_PATCH}, application/apply-patch+yaml",
        "UnsupportedMediaType",
    )


def selected(items: list[dict[str, Any]], incoming: Incoming) -> list[dict[str, Any]] | Outgoing:
    """The objects a list's field and label selectors choose (a custom resource selects by name and namespace),
    or the 400 for a selector the API server refuses."""
    try:
        return [
            obj
            for obj in items
            if fields_match(obj, incoming.query.get("fieldSelector", ""), _SELECTABLE)
            and labels_match(obj["metadata"].get("labels") or {}, incoming.query.get("labelSelector", ""))
        ]
    except BadSelector as error:
        return status(400, str(error), "BadRequest")


def listed(group: str, version: str, kind: str, items: list[dict[str, Any]], resource_version: str) -> Outgoing:
    """A list answer: ``<Kind>List`` of ``items`` at the store's ``resource_version``."""
    return Outgoing.json(
        200,
        {
            "apiVersion": f"{group}/{version}",
            "items": items,
            "kind": f"{kind}List",
            "metadata": {"continue": "", "resourceVersion": resource_version},
        },
    )


def precondition_failure(
    wanted: dict[str, Any], current: dict[str, Any], *, kind: str, group: str, plural: str, name: str
) -> Outgoing | None:
    """The registry's checks before an update stores ``wanted``: its name is the URL's, and it carries the
    stored ``metadata.resourceVersion`` (missing: 422; another: 409 Conflict)."""
    metadata = wanted.get("metadata") or {}
    if metadata.get("name") != name:
        return status(
            400, f"the name of the object ({metadata.get('name')}) does not match the name on the URL ({name})", "BadRequest"
        )
    if not metadata.get("resourceVersion"):
        problem = Problem("metadata.resourceVersion", "0x0", "must be specified for an update", quoted=False)
        return invalid(kind, group, name, [problem])
    if metadata["resourceVersion"] != current["metadata"]["resourceVersion"]:
        return status(
            409, f'Operation cannot be fulfilled on {plural}.{group} "{name}": {_STALE}', "Conflict", details(group, plural, name)
        )
    return None


def merged_write(current: dict[str, Any], wanted: dict[str, Any], *, status_only: bool) -> dict[str, Any]:
    """What a write stores: the status alone on ``/status``; everything but the status on the main resource,
    the system fields of the metadata kept and the generation moved when the spec changes."""
    result = copy.deepcopy(current)
    if status_only:
        if "status" in wanted:
            result["status"] = wanted["status"]
        else:
            result.pop("status", None)
        return result
    result = copy.deepcopy(wanted)
    result.pop("status", None)
    if "status" in current:
        result["status"] = copy.deepcopy(current["status"])
    system = {
        k: current["metadata"][k]
        for k in ("uid", "creationTimestamp", "generation", "resourceVersion")
        if k in current["metadata"]
    }
    result["metadata"] = {**wanted.get("metadata", {}), **system}
    if result.get("spec") != current.get("spec"):
        result["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
    return result


def version_mismatch(body: Any, group: str, version: str) -> Outgoing | None:
    """A 400 for a body that is not an object of ``group/version``, as the create and update handlers answer."""
    found = body.get("apiVersion") if isinstance(body, dict) else None
    if found == f"{group}/{version}":
        return None
    said = f"the API version in the data ({found}) does not match the expected API version ({group}/{version})"
    return status(400, said, "BadRequest")


def details(group: str, plural: str, name: str) -> dict[str, Any]:
    return {"name": name, "group": group, "kind": plural}


def not_found(group: str, plural: str, name: str) -> Outgoing:
    return status(404, f'{plural}.{group} "{name}" not found', "NotFound", details(group, plural, name))


def no_such_path() -> Outgoing:
    return status(404, "the server could not find the requested resource", "NotFound", {})


def api_group(group: str, versions: tuple[str, ...]) -> dict[str, Any]:
    """A group's entry of ``/apis`` (and, with ``kind``/``apiVersion``, the ``APIGroup`` of ``/apis/<group>``)."""
    served = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": served, "preferredVersion": served[0]}


def api_resources(
    plural: str, *, singular: str, namespaced: bool, kind: str, short_names: tuple[str, ...], has_status: bool
) -> list[dict[str, Any]]:
    """A resource's entries of an ``APIResourceList``: itself and, with ``has_status``, its ``/status``."""
    entries = [
        {
            "name": plural,
            "singularName": singular,
            "namespaced": namespaced,
            "kind": kind,
            "verbs": VERBS,
            **({"shortNames": list(short_names)} if short_names else {}),
        }
    ]
    if has_status:
        entries.append(
            {
                "name": f"{plural}/status",
                "singularName": "",
                "namespaced": namespaced,
                "kind": kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    return entries


def api_resource_list(group: str, version: str, resources: list[dict[str, Any]]) -> Outgoing:
    """``/apis/<group>/<version>``: the ``APIResourceList`` of what the version serves."""
    return Outgoing.json(
        200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}", "resources": resources}
    )
