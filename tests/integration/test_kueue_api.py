"""Kueue in the Kubernetes API stand-in, driven by the real ``kubernetes`` client (CustomObjectsApi, ApisApi)
over HTTP through a kubeconfig: discovery, conversion between v1beta2 and v1beta1, JSON Patch with
``test``, merge patch, resourceVersion preconditions, dry run, the status subresource and validation, with
the status codes and Status bodies of the real API server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from bot.sandbox.kube_api import KubeApiStandIn
from tests.integration.kueue_world import COHORT, GPU, RESEARCH, RESEARCH_QUEUE, WAITING_MESSAGE, seed_kueue

GROUP = "kueue.x-k8s.io"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
H100_QUOTA = "/spec/resourceGroups/1/flavors/0/resources/0"  # research-cq's h100 nvidia.com/gpu entry
REJECTED = {  # what patch.go answers when a JSON Patch operation does not apply
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}


@pytest.fixture
def kube() -> Iterator[KubeApiStandIn]:
    stand_in = KubeApiStandIn().start()
    seed_kueue(stand_in)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def api_client(kube: KubeApiStandIn, tmp_path: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kubeconfig")))


@pytest.fixture
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def refusal(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as raised:
        call()
    return raised.value.status, json.loads(raised.value.body)


def queue(custom: client.CustomObjectsApi, version: str = "v1beta2") -> dict[str, Any]:
    return custom.get_cluster_custom_object(GROUP, version, "clusterqueues", RESEARCH_QUEUE)


def json_patch(custom: client.CustomObjectsApi, operations: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    return custom.patch_cluster_custom_object(
        GROUP, "v1beta2", "clusterqueues", RESEARCH_QUEUE, operations, _content_type=JSON_PATCH, **options
    )


# --- discovery --------------------------------------------------------------------------------------------


def test_discovery_names_both_versions_and_prefers_v1beta2(kube: KubeApiStandIn, api_client: client.ApiClient) -> None:
    groups = {g.name: g for g in client.ApisApi(api_client).get_api_versions().groups}
    assert [v.version for v in groups[GROUP].versions] == ["v1beta2", "v1beta1"]
    assert groups[GROUP].preferred_version.group_version == f"{GROUP}/v1beta2"
    assert "scheduling.k8s.io" in groups
    resources = client.CustomObjectsApi(api_client).get_api_resources(GROUP, "v1beta2")
    by_name = {r.name: r for r in resources.resources}
    assert (by_name["clusterqueues"].namespaced, by_name["clusterqueues"].kind) == (False, "ClusterQueue")
    assert by_name["workloads"].namespaced and "clusterqueues/status" in by_name and "resourceflavors/status" not in by_name


def test_a_cluster_serving_only_v1beta1_says_so_and_answers_404_for_v1beta2(
    kube: KubeApiStandIn, api_client: client.ApiClient, custom: client.CustomObjectsApi
) -> None:
    kube.serve_kueue("v1beta1")
    group = next(g for g in client.ApisApi(api_client).get_api_versions().groups if g.name == GROUP)
    assert [v.version for v in group.versions] == ["v1beta1"] and group.preferred_version.version == "v1beta1"
    code, body = refusal(lambda: queue(custom))
    assert code == 404 and body["message"] == "the server could not find the requested resource"
    assert queue(custom, "v1beta1")["spec"]["cohort"] == COHORT


def test_without_kueue_discovery_has_no_kueue_group_and_its_paths_are_404(
    kube: KubeApiStandIn, api_client: client.ApiClient, custom: client.CustomObjectsApi
) -> None:
    kube.serve_kueue()
    assert GROUP not in {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    for call in (lambda: custom.get_api_resources(GROUP, "v1beta2"), lambda: queue(custom)):
        code, body = refusal(call)
        assert (code, body["reason"]) == (404, "NotFound")


# --- reads and conversion ---------------------------------------------------------------------------------


def test_v1beta2_says_cohort_name_and_v1beta1_says_cohort(custom: client.CustomObjectsApi) -> None:
    current, old = queue(custom), queue(custom, "v1beta1")
    assert current["apiVersion"] == f"{GROUP}/v1beta2" and old["apiVersion"] == f"{GROUP}/v1beta1"
    assert current["spec"]["cohortName"] == COHORT and "cohort" not in current["spec"]
    assert old["spec"]["cohort"] == COHORT and "cohortName" not in old["spec"]
    assert current["metadata"]["resourceVersion"] == old["metadata"]["resourceVersion"]
    assert current["status"]["flavorsReservation"][1] == {
        "name": "h100",
        "resources": [{"name": GPU, "total": "6", "borrowed": "0"}],
    }


def test_a_missing_object_is_a_404_naming_it(custom: client.CustomObjectsApi) -> None:
    code, body = refusal(lambda: custom.get_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", "nope"))
    assert code == 404
    assert body["message"] == f'clusterqueues.{GROUP} "nope" not found'
    assert body["details"] == {"name": "nope", "group": GROUP, "kind": "clusterqueues"}


def test_workloads_list_per_namespace_across_namespaces_and_by_selector(custom: client.CustomObjectsApi) -> None:
    listed = custom.list_namespaced_custom_object(GROUP, "v1beta2", RESEARCH, "workloads")
    assert listed["kind"] == "WorkloadList" and listed["metadata"]["resourceVersion"]
    assert [w["metadata"]["name"] for w in listed["items"]] == ["job-sweep-1", "job-train-a"]
    everywhere = custom.list_cluster_custom_object(GROUP, "v1beta2", "workloads")
    assert len(everywhere["items"]) == 2
    assert custom.list_namespaced_custom_object(GROUP, "v1beta2", "ml-prod", "workloads")["items"] == []
    chosen = custom.list_namespaced_custom_object(
        GROUP, "v1beta2", RESEARCH, "workloads", field_selector="metadata.name=job-sweep-1"
    )
    [waiting] = chosen["items"]
    [condition] = waiting["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["message"]) == ("QuotaReserved", "False", WAITING_MESSAGE)
    labelled = custom.list_namespaced_custom_object(
        GROUP, "v1beta2", RESEARCH, "workloads", label_selector="kueue.x-k8s.io/queue-name=x"
    )
    assert labelled["items"] == []
    code, body = refusal(
        lambda: custom.list_cluster_custom_object(GROUP, "v1beta2", "workloads", field_selector="spec.queueName=x")
    )
    assert (code, body["message"]) == (400, "field label not supported: spec.queueName")


# --- JSON Patch -------------------------------------------------------------------------------------------


def test_a_json_patch_with_passing_tests_writes_and_moves_the_version_and_generation(
    kube: KubeApiStandIn, custom: client.CustomObjectsApi
) -> None:
    before = queue(custom)
    written = json_patch(
        custom,
        [
            {"op": "test", "path": "/spec/resourceGroups/1/flavors/0/name", "value": "h100"},
            {"op": "test", "path": f"{H100_QUOTA}/name", "value": GPU},
            {"op": "replace", "path": f"{H100_QUOTA}/nominalQuota", "value": 10},
            {"op": "add", "path": "/metadata/annotations", "value": {"example.com/a~b/c": "1"}},
        ],
    )
    assert int(written["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert written["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 10 and kube.nominal_quota(RESEARCH_QUEUE, "a100", GPU) == 4
    escaped = [{"op": "replace", "path": "/metadata/annotations/example.com~1a~0b~1c", "value": "2"}]
    assert json_patch(custom, escaped)["metadata"]["annotations"] == {"example.com/a~b/c": "2"}
    assert kube.kueue_writes(name=RESEARCH_QUEUE) == 2


def test_a_failed_test_or_a_missing_path_is_a_422_that_writes_nothing(
    kube: KubeApiStandIn, custom: client.CustomObjectsApi
) -> None:
    version = queue(custom)["metadata"]["resourceVersion"]
    reordered = [
        {"op": "test", "path": "/spec/resourceGroups/1/flavors/0/name", "value": "a100"},
        {"op": "replace", "path": "/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota", "value": 1},
    ]
    missing = [{"op": "replace", "path": "/spec/resourceGroups/1/flavors/5/resources/0/nominalQuota", "value": 1}]
    no_member = [{"op": "replace", "path": f"{H100_QUOTA}/lendingLimit", "value": 1}]
    for operations in (reordered, missing, no_member):
        assert refusal(lambda ops=operations: json_patch(custom, ops)) == (422, REJECTED)  # type: ignore[misc]
    assert queue(custom)["metadata"]["resourceVersion"] == version and kube.kueue_writes() == 0
    assert kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 8


def test_a_stale_resource_version_in_the_patch_is_a_409_conflict(kube: KubeApiStandIn, custom: client.CustomObjectsApi) -> None:
    """The patched object's resourceVersion is the registry's precondition: a JSON Patch carries it with a
    ``replace`` (409 when stale); a ``test`` on it fails as any test does (422), telling nothing apart."""
    stale = queue(custom)["metadata"]["resourceVersion"]
    kube.edit_cluster_queue(RESEARCH_QUEUE, "h100", GPU, nominal_quota=9)  # kubectl edit in between
    change = {"op": "replace", "path": f"{H100_QUOTA}/nominalQuota", "value": 12}
    code, body = refusal(
        lambda: json_patch(custom, [{"op": "replace", "path": "/metadata/resourceVersion", "value": stale}, change])
    )
    assert code == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        f'Operation cannot be fulfilled on clusterqueues.{GROUP} "{RESEARCH_QUEUE}": '
        "the object has been modified; please apply your changes to the latest version and try again"
    )
    assert body["details"] == {"name": RESEARCH_QUEUE, "group": GROUP, "kind": "clusterqueues"}
    tested = [{"op": "test", "path": "/metadata/resourceVersion", "value": stale}, change]
    assert refusal(lambda: json_patch(custom, tested)) == (422, REJECTED)
    merge = {"metadata": {"resourceVersion": stale}, "spec": {"stopPolicy": "Hold"}}
    code, _ = refusal(
        lambda: custom.patch_cluster_custom_object(
            GROUP, "v1beta2", "clusterqueues", RESEARCH_QUEUE, merge, _content_type=MERGE_PATCH
        )
    )
    assert code == 409 and kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 9 and kube.kueue_writes() == 0
    current = queue(custom)["metadata"]["resourceVersion"]
    fresh = json_patch(custom, [{"op": "replace", "path": "/metadata/resourceVersion", "value": current}, change])
    assert fresh["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["nominalQuota"] == 12


def test_a_dry_run_answers_the_change_and_stores_nothing(kube: KubeApiStandIn, custom: client.CustomObjectsApi) -> None:
    before = queue(custom)
    answer = json_patch(custom, [{"op": "replace", "path": f"{H100_QUOTA}/nominalQuota", "value": 3}], dry_run="All")
    assert answer["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["nominalQuota"] == 3
    assert answer["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert queue(custom) == before and kube.kueue_writes() == 0
    code, _ = refusal(lambda: json_patch(custom, [{"op": "test", "path": "/spec/stopPolicy", "value": "Hold"}], dry_run="All"))
    assert code == 422


def test_a_v1beta1_patch_writes_the_cohort_as_v1beta2_stores_it(kube: KubeApiStandIn, custom: client.CustomObjectsApi) -> None:
    custom.patch_cluster_custom_object(
        GROUP,
        "v1beta1",
        "clusterqueues",
        RESEARCH_QUEUE,
        [{"op": "replace", "path": "/spec/cohort", "value": "other"}],
        _content_type=JSON_PATCH,
    )
    stored = kube.cluster_queue(RESEARCH_QUEUE)
    assert stored is not None and stored["spec"]["cohortName"] == "other" and "cohort" not in stored["spec"]


def test_a_strategic_merge_patch_is_not_accepted_for_a_custom_resource(custom: client.CustomObjectsApi) -> None:
    code, body = refusal(
        lambda: custom.patch_cluster_custom_object(
            GROUP,
            "v1beta2",
            "clusterqueues",
            RESEARCH_QUEUE,
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    )
    assert code == 415 and body["reason"] == "UnsupportedMediaType"


# --- validation -------------------------------------------------------------------------------------------


def test_the_crd_schema_refuses_a_quota_that_is_not_a_quantity_with_422(
    kube: KubeApiStandIn, custom: client.CustomObjectsApi
) -> None:
    code, body = refusal(lambda: json_patch(custom, [{"op": "replace", "path": f"{H100_QUOTA}/nominalQuota", "value": "lots"}]))
    field = "spec.resourceGroups[1].flavors[0].resources[0].nominalQuota"
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].startswith(
        f'ClusterQueue.{GROUP} "{RESEARCH_QUEUE}" is invalid: {field}: Invalid value: "lots": {field} in body should match'
    )
    [cause] = body["details"]["causes"]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", field)
    assert body["details"]["kind"] == "ClusterQueue" and kube.kueue_writes() == 0


def test_a_borrowing_limit_without_a_cohort_is_refused_by_the_crds_rule(custom: client.CustomObjectsApi) -> None:
    code, body = refusal(lambda: json_patch(custom, [{"op": "remove", "path": "/spec/cohortName"}]))
    assert code == 422
    assert (
        body["message"]
        == f'ClusterQueue.{GROUP} "{RESEARCH_QUEUE}" is invalid: spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty'
    )


def test_kueues_webhook_denies_a_negative_quota_and_a_lending_limit_above_nominal_with_403(
    custom: client.CustomObjectsApi,
) -> None:
    code, body = refusal(lambda: json_patch(custom, [{"op": "replace", "path": f"{H100_QUOTA}/nominalQuota", "value": "-1"}]))
    field = "spec.resourceGroups[1].flavors[0].resources[0]"
    assert (code, body["reason"]) == (403, "Forbidden")
    assert (
        body["message"]
        == f'admission webhook "vclusterqueue.kb.io" denied the request: {field}.nominalQuota: Invalid value: "-1": must be greater than or equal to 0'
    )
    code, body = refusal(lambda: json_patch(custom, [{"op": "add", "path": f"{H100_QUOTA}/lendingLimit", "value": 9}]))
    assert code == 403 and body["message"].endswith(
        f'{field}.lendingLimit: Invalid value: "9": must be less than or equal to the nominalQuota'
    )


# --- the status subresource -------------------------------------------------------------------------------


def test_status_is_written_only_through_the_status_subresource(kube: KubeApiStandIn, custom: client.CustomObjectsApi) -> None:
    usage = {"status": {"pendingWorkloads": 5}, "spec": {"stopPolicy": "Hold"}}
    written = custom.patch_cluster_custom_object_status(
        GROUP, "v1beta2", "clusterqueues", RESEARCH_QUEUE, usage, _content_type=MERGE_PATCH
    )
    assert written["status"]["pendingWorkloads"] == 5 and written["spec"]["stopPolicy"] == "None"
    ignored = custom.patch_cluster_custom_object(
        GROUP, "v1beta2", "clusterqueues", RESEARCH_QUEUE, {"status": {"pendingWorkloads": 0}}, _content_type=MERGE_PATCH
    )
    assert ignored["status"]["pendingWorkloads"] == 5
    assert kube.kueue_writes() == 1  # the main-resource patch changed nothing, so nothing was stored
    wl = custom.get_namespaced_custom_object_status(GROUP, "v1beta2", RESEARCH, "workloads", "job-sweep-1")
    assert wl["status"]["conditions"][0]["reason"] == "Pending"


# --- create -----------------------------------------------------------------------------------------------


def test_create_defaults_and_refuses_a_second_one(kube: KubeApiStandIn, custom: client.CustomObjectsApi) -> None:
    body = {"apiVersion": f"{GROUP}/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "new-cq"}, "spec": {"cohort": "x"}}
    dry = custom.create_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", body, dry_run="All")
    assert dry["spec"]["queueingStrategy"] == "BestEffortFIFO" and kube.cluster_queue("new-cq") is None
    custom.create_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", body)
    stored = kube.cluster_queue("new-cq")
    assert stored is not None and stored["spec"]["cohortName"] == "x"
    assert stored["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    code, again = refusal(lambda: custom.create_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", body))
    assert (code, again["reason"], again["message"]) == (409, "AlreadyExists", f'clusterqueues.{GROUP} "new-cq" already exists')


def test_an_update_replaces_the_object_with_its_version_as_the_precondition(
    kube: KubeApiStandIn, custom: client.CustomObjectsApi
) -> None:
    current = queue(custom)
    current["spec"]["stopPolicy"] = "Hold"
    updated = custom.replace_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", RESEARCH_QUEUE, current)
    assert updated["spec"]["stopPolicy"] == "Hold" and updated["status"] == current["status"]
    code, body = refusal(lambda: custom.replace_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", RESEARCH_QUEUE, current))
    assert (code, body["reason"]) == (409, "Conflict") and kube.kueue_writes() == 1


def test_local_queues_and_flavors_are_served_too(custom: client.CustomObjectsApi) -> None:
    local = custom.get_namespaced_custom_object(GROUP, "v1beta1", RESEARCH, "localqueues", "research-lq")
    assert (local["kind"], local["spec"]["clusterQueue"]) == ("LocalQueue", RESEARCH_QUEUE)
    flavors = custom.list_cluster_custom_object(GROUP, "v1beta2", "resourceflavors")
    assert [f["metadata"]["name"] for f in flavors["items"]] == ["a100", "default-flavor", "h100"]
    code, _ = refusal(lambda: custom.get_cluster_custom_object_status(GROUP, "v1beta2", "resourceflavors", "h100"))
    assert code == 404  # a ResourceFlavor has no status subresource
