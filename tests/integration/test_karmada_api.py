"""The Karmada plane stand-in (bot/sandbox/karmada_api.py) driven by the real ``kubernetes`` client
(CustomObjectsApi, ApisApi, CoreV1Api) over HTTP through kubeconfigs: discovery, FederatedResourceQuota
reads and lists, JSON Patch with ``test``, merge patch, resourceVersion preconditions, dry run, the
schema's 422 and Karmada's webhook's 403 (an ``overall`` below the sum of the assignments), the status
subresource, and the controllers propagating each member's assignment to its own cluster's ResourceQuota
(one plane and two member clusters, three ports)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from bot.sandbox.karmada_api import KarmadaApiStandIn
from bot.sandbox.kube_api import KubeApiStandIn
from tests.integration.karmada_world import EU, FRQ, GPU_KEY, GPU_TOKEN, NAMESPACE, US, seed_karmada

GROUP, VERSION, PLURAL = "policy.karmada.io", "v1alpha1", "federatedresourcequotas"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
WEBHOOK_DENIED = 'admission webhook "federatedresourcequota.karmada.io" denied the request: '
REJECTED = "the server rejected our request due to an error in our request"


@pytest.fixture
def plane() -> Iterator[KarmadaApiStandIn]:
    stand_in = KarmadaApiStandIn().start()
    seed_karmada(stand_in)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def members() -> Iterator[dict[str, KubeApiStandIn]]:
    started = {EU: KubeApiStandIn().start(), US: KubeApiStandIn().start()}
    for member in started.values():
        member.add_namespace(NAMESPACE)
    yield started
    for member in started.values():
        member.stop()


@pytest.fixture
def api_client(plane: KarmadaApiStandIn, tmp_path: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(plane.write_kubeconfig(tmp_path / "karmada.config")))


@pytest.fixture
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def refusal(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as raised:
        call()
    return raised.value.status, json.loads(raised.value.body)


def frq(custom: client.CustomObjectsApi, name: str = FRQ) -> dict[str, Any]:
    return custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)


def json_patch(custom: client.CustomObjectsApi, operations: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    return custom.patch_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, FRQ, operations, _content_type=JSON_PATCH, **options
    )


def replace(path: str, value: Any) -> dict[str, Any]:
    return {"op": "replace", "path": path, "value": value}


# --- discovery and reads ----------------------------------------------------------------------------------


def test_discovery_names_the_policy_group_and_the_federated_quota_resource(api_client: client.ApiClient) -> None:
    groups = {g.name: g for g in client.ApisApi(api_client).get_api_versions().groups}
    assert [v.version for v in groups[GROUP].versions] == [VERSION]
    assert groups[GROUP].preferred_version.group_version == f"{GROUP}/{VERSION}"
    assert "kueue.x-k8s.io" not in groups  # Kueue runs in the member clusters, not on the plane
    by_name = {r.name: r for r in client.CustomObjectsApi(api_client).get_api_resources(GROUP, VERSION).resources}
    quotas = by_name[PLURAL]
    assert (quotas.namespaced, quotas.kind, quotas.singular_name) == (True, "FederatedResourceQuota", "federatedresourcequota")
    assert f"{PLURAL}/status" in by_name


def test_without_karmada_the_group_is_not_listed_and_its_paths_are_404(
    plane: KarmadaApiStandIn, api_client: client.ApiClient, custom: client.CustomObjectsApi
) -> None:
    plane.serve_karmada(False)
    assert GROUP not in {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    for call in (lambda: custom.get_api_resources(GROUP, VERSION), lambda: frq(custom)):
        code, body = refusal(call)
        assert (code, body["reason"], body["message"]) == (404, "NotFound", "the server could not find the requested resource")


def test_a_read_is_the_schema_karmada_defines(custom: client.CustomObjectsApi) -> None:
    quota = frq(custom)
    assert (quota["apiVersion"], quota["kind"]) == (f"{GROUP}/{VERSION}", "FederatedResourceQuota")
    assert (quota["metadata"]["namespace"], quota["metadata"]["name"]) == (NAMESPACE, FRQ)
    assert quota["spec"] == {
        "overall": {GPU_KEY: 24, "cpu": "100"},
        "staticAssignments": [
            {"clusterName": EU, "hard": {GPU_KEY: 8, "cpu": "40"}},
            {"clusterName": US, "hard": {GPU_KEY: 12, "cpu": "60"}},
        ],
    }
    assert "status" not in quota  # until Karmada's status controller reports


def test_lists_in_a_namespace_across_namespaces_and_by_name_and_a_missing_one_is_a_404(
    plane: KarmadaApiStandIn, custom: client.CustomObjectsApi
) -> None:
    plane.add_federated_quota("other", "small", overall={GPU_KEY: 2})
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL)
    assert listed["kind"] == "FederatedResourceQuotaList" and [q["metadata"]["name"] for q in listed["items"]] == [FRQ]
    everywhere = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert sorted(q["metadata"]["name"] for q in everywhere["items"]) == ["small", FRQ]
    chosen = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, field_selector="metadata.name=small")
    assert [q["metadata"]["namespace"] for q in chosen["items"]] == ["other"]
    code, body = refusal(lambda: frq(custom, "nope"))
    assert (code, body["message"]) == (404, f'{PLURAL}.{GROUP} "nope" not found')
    assert body["details"] == {"name": "nope", "group": GROUP, "kind": PLURAL}


# --- the webhook: overall and the assignments together ----------------------------------------------------


def test_overall_below_the_sum_of_the_assignments_is_denied_by_the_webhook_and_nothing_is_written(
    plane: KarmadaApiStandIn, custom: client.CustomObjectsApi
) -> None:
    code, body = refusal(lambda: json_patch(custom, [replace(f"/spec/overall/{GPU_TOKEN}", "16")]))
    assert (code, body["reason"]) == (403, "Forbidden")
    assert body["message"] == WEBHOOK_DENIED + f'spec.overall[{GPU_KEY}]: Invalid value: "16": overall is less than assignments'
    raised_alone = [replace(f"/spec/staticAssignments/1/hard/{GPU_TOKEN}", "20")]  # 8 + 20 > 24
    code, body = refusal(lambda: json_patch(custom, raised_alone))
    assert code == 403 and body["message"].endswith(
        f'spec.overall[{GPU_KEY}]: Invalid value: "24": overall is less than assignments'
    )
    assert plane.overall(NAMESPACE, FRQ, GPU_KEY) == 24 and plane.assignment(NAMESPACE, FRQ, US, GPU_KEY) == 12
    assert plane.federated_quota_writes() == 0


def test_overall_and_the_members_assignment_changed_in_one_patch_are_accepted(
    plane: KarmadaApiStandIn, custom: client.CustomObjectsApi
) -> None:
    before = frq(custom)
    written = json_patch(
        custom,
        [
            {"op": "test", "path": "/spec/staticAssignments/1/clusterName", "value": US},
            replace(f"/spec/staticAssignments/1/hard/{GPU_TOKEN}", "20"),
            replace(f"/spec/overall/{GPU_TOKEN}", "32"),
        ],
    )
    assert int(written["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert written["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert (plane.overall(NAMESPACE, FRQ, GPU_KEY), plane.assignment(NAMESPACE, FRQ, US, GPU_KEY)) == ("32", "20")
    assert plane.assignment(NAMESPACE, FRQ, EU, GPU_KEY) == 8 and plane.overall(NAMESPACE, FRQ, "cpu") == "100"
    assert plane.federated_quota_writes(FRQ) == 1


def test_negative_quantities_and_an_assignment_overall_does_not_name_are_denied(custom: client.CustomObjectsApi) -> None:
    code, body = refusal(lambda: json_patch(custom, [replace(f"/spec/staticAssignments/0/hard/{GPU_TOKEN}", "-1")]))
    assert code == 403
    assert (
        body["message"]
        == WEBHOOK_DENIED + f'spec.staticAssignments[0].hard[{GPU_KEY}]: Invalid value: "-1": must be greater than or equal to 0'
    )
    unnamed = [{"op": "add", "path": "/spec/staticAssignments/0/hard/requests.nvidia.com~1mig-1g.10gb", "value": "1"}]
    code, body = refusal(lambda: json_patch(custom, unnamed))
    key = "requests.nvidia.com/mig-1g.10gb"
    assert code == 403
    assert body["message"] == (
        WEBHOOK_DENIED
        + f'spec.staticAssignments[0].hard[{key}]: Invalid value: "{key}": assignment resourceName is not exist in overall'
    )


def test_several_denials_are_said_together_in_brackets(custom: client.CustomObjectsApi) -> None:
    both = [replace(f"/spec/overall/{GPU_TOKEN}", "-4")]
    code, body = refusal(lambda: json_patch(custom, both))
    assert code == 403
    assert body["message"] == WEBHOOK_DENIED + (
        f'[spec.overall[{GPU_KEY}]: Invalid value: "-4": must be greater than or equal to 0, '
        f'spec.overall[{GPU_KEY}]: Invalid value: "-4": overall is less than assignments]'
    )


def test_the_crd_schema_refuses_a_value_that_is_not_a_quantity_with_422(
    plane: KarmadaApiStandIn, custom: client.CustomObjectsApi
) -> None:
    code, body = refusal(lambda: json_patch(custom, [replace(f"/spec/overall/{GPU_TOKEN}", "lots")]))
    field = f"spec.overall.{GPU_KEY}"
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].startswith(
        f'FederatedResourceQuota.{GROUP} "{FRQ}" is invalid: {field}: Invalid value: "lots": {field} in body should match'
    )
    [cause] = body["details"]["causes"]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", field)
    assert plane.federated_quota_writes() == 0


# --- dry run, preconditions, test ops ---------------------------------------------------------------------


def test_a_dry_run_answers_the_change_stores_nothing_and_still_meets_the_webhook(
    plane: KarmadaApiStandIn, custom: client.CustomObjectsApi
) -> None:
    before = frq(custom)
    together = [replace(f"/spec/staticAssignments/0/hard/{GPU_TOKEN}", "10"), replace(f"/spec/overall/{GPU_TOKEN}", "26")]
    answer = json_patch(custom, together, dry_run="All")
    assert answer["spec"]["staticAssignments"][0]["hard"][GPU_KEY] == "10" and answer["spec"]["overall"][GPU_KEY] == "26"
    assert answer["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert frq(custom) == before and plane.federated_quota_writes() == 0
    code, body = refusal(lambda: json_patch(custom, [replace(f"/spec/overall/{GPU_TOKEN}", "1")], dry_run="All"))
    assert code == 403 and body["message"].startswith(WEBHOOK_DENIED)


def test_a_stale_resource_version_is_a_409_and_a_test_on_it_a_bare_422(
    plane: KarmadaApiStandIn, custom: client.CustomObjectsApi
) -> None:
    stale = frq(custom)["metadata"]["resourceVersion"]
    plane.edit_federated_quota(NAMESPACE, FRQ, assignments={EU: {GPU_KEY: "9"}})  # kubectl edit in between
    change = replace(f"/spec/staticAssignments/0/hard/{GPU_TOKEN}", "6")
    code, body = refusal(lambda: json_patch(custom, [replace("/metadata/resourceVersion", stale), change]))
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        f'Operation cannot be fulfilled on {PLURAL}.{GROUP} "{FRQ}": '
        "the object has been modified; please apply your changes to the latest version and try again"
    )
    assert body["details"] == {"name": FRQ, "group": GROUP, "kind": PLURAL}
    code, body = refusal(
        lambda: json_patch(custom, [{"op": "test", "path": "/metadata/resourceVersion", "value": stale}, change])
    )
    assert (code, body["message"], body["details"]) == (422, REJECTED, {})
    merge = {"metadata": {"resourceVersion": stale}, "spec": {"overall": {"cpu": "90"}}}
    code, _ = refusal(
        lambda: custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, FRQ, merge, _content_type=MERGE_PATCH)
    )
    assert code == 409 and plane.assignment(NAMESPACE, FRQ, EU, GPU_KEY) == "9" and plane.federated_quota_writes() == 0


def test_a_test_op_failing_after_the_assignments_were_reordered_is_a_422_that_writes_nothing(
    plane: KarmadaApiStandIn, custom: client.CustomObjectsApi
) -> None:
    plane.reorder_assignments(NAMESPACE, FRQ, [US, EU])
    version = frq(custom)["metadata"]["resourceVersion"]
    operations = [
        replace("/metadata/resourceVersion", version),
        {"op": "test", "path": "/spec/staticAssignments/0/clusterName", "value": EU},
        replace(f"/spec/staticAssignments/0/hard/{GPU_TOKEN}", "4"),
    ]
    code, body = refusal(lambda: json_patch(custom, operations))
    assert (code, body["reason"], body["message"]) == (422, "Invalid", REJECTED)
    missing = [replace(f"/spec/staticAssignments/5/hard/{GPU_TOKEN}", "4")]
    assert refusal(lambda: json_patch(custom, missing))[0] == 422
    assert plane.assignment(NAMESPACE, FRQ, US, GPU_KEY) == 12 and plane.federated_quota_writes() == 0


def test_a_merge_patch_with_the_current_version_writes(plane: KarmadaApiStandIn, custom: client.CustomObjectsApi) -> None:
    version = frq(custom)["metadata"]["resourceVersion"]
    merge = {"metadata": {"resourceVersion": version, "annotations": {"team": "frontier"}}, "spec": {"overall": {"cpu": "120"}}}
    written = custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, FRQ, merge, _content_type=MERGE_PATCH)
    assert written["spec"]["overall"] == {GPU_KEY: 24, "cpu": "120"} and written["metadata"]["annotations"] == {
        "team": "frontier"
    }
    assert plane.federated_quota_writes() == 1


# --- status and the member clusters -----------------------------------------------------------------------


def test_the_controllers_propagate_each_assignment_to_its_members_resource_quota_and_aggregate_its_status(
    plane: KarmadaApiStandIn, members: dict[str, KubeApiStandIn], custom: client.CustomObjectsApi, tmp_path: Path
) -> None:
    members[US].set_used(NAMESPACE, 5)
    plane.sync_members(members)
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(members[US].write_kubeconfig(tmp_path / "us-2"))))
    propagated = core.read_namespaced_resource_quota(FRQ, NAMESPACE)
    assert propagated.spec.hard == {GPU_KEY: "12", "cpu": "60"} and propagated.status.used[GPU_KEY] == "5"
    assert members[EU].hard(NAMESPACE, FRQ, GPU_KEY) == "8"
    state = frq(custom)["status"]
    assert state["overall"] == {GPU_KEY: 24, "cpu": "100"} and state["overallUsed"][GPU_KEY] == "5"
    assert [(e["clusterName"], e["hard"][GPU_KEY], e["used"][GPU_KEY]) for e in state["aggregatedStatus"]] == [
        (EU, "8", "0"),
        (US, "12", "5"),
    ]
    json_patch(
        custom, [replace(f"/spec/staticAssignments/1/hard/{GPU_TOKEN}", "14"), replace(f"/spec/overall/{GPU_TOKEN}", "26")]
    )
    plane.sync_members({US: members[US]})
    assert core.read_namespaced_resource_quota(FRQ, NAMESPACE).spec.hard[GPU_KEY] == "14"
    assert frq(custom)["status"]["aggregatedStatus"][1]["hard"][GPU_KEY] == "14"


def test_status_is_written_only_through_the_status_subresource(plane: KarmadaApiStandIn, custom: client.CustomObjectsApi) -> None:
    reported = {"status": {"overall": {GPU_KEY: "24"}}, "spec": {"overall": {"cpu": "1"}}}
    written = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NAMESPACE, PLURAL, FRQ, reported, _content_type=MERGE_PATCH
    )
    assert written["status"] == {"overall": {GPU_KEY: "24"}} and written["spec"]["overall"]["cpu"] == "100"
    ignored = custom.patch_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, FRQ, {"status": {"overall": {}}}, _content_type=MERGE_PATCH
    )
    assert ignored["status"] == {"overall": {GPU_KEY: "24"}}
    assert plane.federated_quota_writes() == 1  # the main-resource patch changed nothing, so nothing was stored
