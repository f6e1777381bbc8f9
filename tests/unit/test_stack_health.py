"""The doctor's checks from facts: a healthy stack is ok, each broken part is named with its fix, warnings stay warnings."""

from __future__ import annotations

from bot.domain.scheduling import DaemonSetFacts, NodeFacts, PodFacts, Taint, Toleration
from bot.domain.stack_health import (
    Check,
    CheckResult,
    Checkup,
    Exporter,
    Fix,
    MissingQuota,
    NodeState,
    QuotaGap,
    QuotaKind,
    ScrapeTarget,
    SeriesFacts,
    Status,
    dcgm_series_check,
    device_plugin_check,
    is_device_plugin,
    ksm_series_check,
    mig_check,
    newly_broken,
    node_gpus_check,
    priority_class_check,
    profiling_series_check,
    quota_check,
    target_check,
    unlimited_pods_check,
)

GPU_TAINT = Taint("nvidia.com/gpu", "true", "NoSchedule")


def node(name: str, gpus: int = 8, *, labels: dict[str, str] | None = None, taints: tuple[Taint, ...] = ()) -> NodeFacts:
    return NodeFacts(
        name=name,
        labels={"nvidia.com/gpu.present": "true", **(labels or {})},
        taints=taints,
        allocatable={"nvidia.com/gpu": gpus} if gpus else {},
        requested={},
    )


def plugin(desired: int, ready: int, **extra: object) -> DaemonSetFacts:
    return DaemonSetFacts(
        namespace="gpu-operator",
        name="nvidia-device-plugin-daemonset",
        labels={"app": "nvidia-device-plugin-daemonset"},
        desired=desired,
        ready=ready,
        available=ready,
        **extra,  # type: ignore[arg-type]
    )


# --- device plugin ------------------------------------------------------------------------------


def test_the_device_plugin_is_found_by_the_operator_chart_and_manifest_names_not_the_mps_daemon() -> None:
    def ds(name: str, labels: dict[str, str]) -> DaemonSetFacts:
        return DaemonSetFacts("kube-system", name, labels, 1, 1, 1)

    assert is_device_plugin(ds("nvidia-device-plugin-daemonset", {}))  # the GPU operator's, the static manifest's
    assert is_device_plugin(ds("nvdp-nvidia-device-plugin", {"app.kubernetes.io/name": "nvidia-device-plugin"}))  # Helm
    assert not is_device_plugin(
        ds("nvdp-nvidia-device-plugin-mps-control-daemon", {"app.kubernetes.io/name": "nvidia-device-plugin"})
    )
    assert not is_device_plugin(ds("nvidia-dcgm-exporter", {"app": "nvidia-dcgm-exporter"}))


def test_a_device_plugin_ready_on_every_gpu_node_is_ok() -> None:
    result = device_plugin_check(
        [plugin(2, 2, tolerations=(Toleration("nvidia.com/gpu", "Exists"),))], [node("a", taints=(GPU_TAINT,)), node("b")]
    )
    assert (result.status, result.fix, result.evidence.gpu_nodes) == (Status.OK, None, 2)  # type: ignore[union-attr]


def test_a_device_plugin_with_a_pod_not_ready_is_broken_and_says_where_to_look() -> None:
    result = device_plugin_check([plugin(3, 2)], [node("a"), node("b"), node("c")])
    assert (result.status, result.fix) == (Status.BROKEN, Fix.READY_DEVICE_PLUGIN)
    assert (result.evidence.desired, result.evidence.ready, result.evidence.not_ready_namespace) == (3, 2, "gpu-operator")  # type: ignore[union-attr]


def test_a_device_plugin_whose_tolerations_leave_a_tainted_gpu_node_out_names_that_node() -> None:
    result = device_plugin_check([plugin(1, 1)], [node("a"), node("gpu-node-3", taints=(GPU_TAINT,))])
    assert (result.status, result.fix, result.evidence.not_covered) == (Status.BROKEN, Fix.PLACE_DEVICE_PLUGIN, ("gpu-node-3",))  # type: ignore[union-attr]


def test_no_device_plugin_is_broken_when_no_gpu_is_advertised_and_a_warning_when_gpus_are() -> None:
    silent = device_plugin_check([], [node("a", gpus=0)])
    assert (silent.status, silent.fix) == (Status.BROKEN, Fix.INSTALL_DEVICE_PLUGIN)
    unnamed = device_plugin_check([], [node("a")])
    assert (unnamed.status, unnamed.fix) == (Status.WARNING, Fix.NAME_DEVICE_PLUGIN)
    none = device_plugin_check([], [NodeFacts("cpu-1", {}, (), {}, {})])
    assert (none.status, none.evidence.gpu_nodes) == (Status.WARNING, 0)  # type: ignore[union-attr]


# --- nodes and MIG ----------------------------------------------------------------------------


def test_a_gpu_labelled_node_advertising_no_gpu_is_named() -> None:
    result = node_gpus_check([node("gpu-node-1"), node("gpu-node-3", gpus=0), NodeFacts("cpu-1", {}, (), {}, {})])
    assert (result.status, result.fix, result.evidence.silent) == (Status.BROKEN, Fix.RESTART_DEVICE_PLUGIN, ("gpu-node-3",))  # type: ignore[union-attr]
    assert node_gpus_check([node("gpu-node-1")]).status is Status.OK


def test_a_mig_node_only_advertising_slices_counts_as_advertising() -> None:
    mig = NodeFacts("mig-1", {"nvidia.com/gpu.product": "A100"}, (), {"nvidia.com/mig-1g.10gb": 7}, {})
    assert node_gpus_check([mig]).status is Status.OK


def test_mig_states_pending_and_rebooting_warn_failed_breaks() -> None:
    def mig(name: str, state: str) -> NodeFacts:
        return node(name, labels={"nvidia.com/mig.config.state": state})

    assert mig_check([mig("a", "success"), node("plain")]).status is Status.OK
    settling = mig_check([mig("a", "success"), mig("b", "rebooting"), mig("c", "pending")])
    assert (settling.status, settling.fix) == (Status.WARNING, Fix.WAIT_MIG)
    assert settling.evidence.unsettled == (NodeState("b", "rebooting"), NodeState("c", "pending"))  # type: ignore[union-attr]
    failed = mig_check([mig("b", "rebooting"), mig("d", "failed")])
    assert (failed.status, failed.fix) == (Status.BROKEN, Fix.REPAIR_MIG)


# --- the scrape side ------------------------------------------------------------------------------

DCGM_UP = ScrapeTarget(
    "serviceMonitor/gpu-operator/nvidia-dcgm-exporter/0", "nvidia-dcgm-exporter", "http://10.0.0.1:9400/metrics", "up", "", 30.0
)
KSM_UP = ScrapeTarget("kube-state-metrics", "kube-state-metrics", "http://10.0.0.9:8080/metrics", "up", "", 30.0)


def down(target: ScrapeTarget, error: str) -> ScrapeTarget:
    return ScrapeTarget(target.pool, target.job, target.url.replace(".1:", ".2:"), "down", error, target.interval_seconds)


def test_exporter_targets_up_at_the_configured_interval_are_ok() -> None:
    for exporter in Exporter:
        assert target_check(exporter, [DCGM_UP, KSM_UP], expected_seconds=30).status is Status.OK


def test_no_target_of_an_exporter_is_broken() -> None:
    result = target_check(Exporter.DCGM, [KSM_UP], expected_seconds=30)
    assert (result.check, result.status, result.fix) == (Check.DCGM_TARGET, Status.BROKEN, Fix.SCRAPE_EXPORTER)


def test_one_dcgm_target_down_of_two_is_a_warning_with_its_last_error_all_down_broken() -> None:
    refused = down(DCGM_UP, "connection refused")
    some = target_check(Exporter.DCGM, [DCGM_UP, refused], expected_seconds=30)
    assert (some.status, some.fix, some.evidence.up) == (Status.WARNING, Fix.REPAIR_TARGET, 1)  # type: ignore[union-attr]
    assert some.evidence.down[0].last_error == "connection refused"  # type: ignore[union-attr]
    assert target_check(Exporter.DCGM, [refused], expected_seconds=30).status is Status.BROKEN


def test_a_scrape_interval_other_than_the_policy_sample_interval_warns() -> None:
    result = target_check(Exporter.KSM, [KSM_UP], expected_seconds=15)
    assert (result.status, result.fix, result.evidence.intervals) == (Status.WARNING, Fix.SET_SAMPLE_INTERVAL, (30.0,))  # type: ignore[union-attr]


def test_dcgm_series_need_a_namespace_label_of_either_spelling() -> None:
    assert dcgm_series_check(SeriesFacts("DCGM_FI_DEV_GPU_UTIL", True, ("exported_namespace",))).status is Status.OK
    unmapped = dcgm_series_check(SeriesFacts("DCGM_FI_DEV_GPU_UTIL", True, ()))
    assert (unmapped.status, unmapped.fix) == (Status.WARNING, Fix.MAP_PODS)
    assert dcgm_series_check(SeriesFacts("DCGM_FI_DEV_GPU_UTIL", False)).status is Status.BROKEN


def test_profiling_series_absent_is_only_a_warning_and_ksm_series_absent_broken() -> None:
    assert profiling_series_check(SeriesFacts("DCGM_FI_PROF_GR_ENGINE_ACTIVE", False)).status is Status.WARNING
    assert ksm_series_check(SeriesFacts("kube_pod_container_resource_requests", False)).status is Status.BROKEN
    assert ksm_series_check(SeriesFacts("kube_pod_container_resource_requests", True)).status is Status.OK


# --- policy objects and pods ----------------------------------------------------------------------


def test_a_priority_class_the_policy_names_but_the_cluster_lacks_is_named_with_its_namespaces() -> None:
    named = {"low-priority-experiment": ["ai-frontier-research"], "borrowed": ["a", "b"]}
    result = priority_class_check(named, ["low-priority-experiment", "system-node-critical"])
    assert (result.status, result.fix) == (Status.BROKEN, Fix.CREATE_PRIORITY_CLASS)
    assert [(m.name, m.namespaces) for m in result.evidence.missing] == [("borrowed", ("a", "b"))]  # type: ignore[union-attr]
    assert priority_class_check({"x": ["a"]}, ["x"]).status is Status.OK


def test_a_missing_quota_object_is_broken() -> None:
    gap = MissingQuota("ai-frontier-research", "nvidia.com/gpu", QuotaKind.RESOURCE_QUOTA, "compute-quota", QuotaGap.OBJECT)
    assert (quota_check(3, [gap]).status, quota_check(3, [gap]).fix) == (Status.BROKEN, Fix.CREATE_QUOTA)
    assert quota_check(3, []).status is Status.OK


def pod(
    name: str,
    *,
    requests: dict[str, int] | None = None,
    gpu_node: bool = False,
    phase: str = "Running",
    tolerations: tuple[Toleration, ...] = (),
) -> PodFacts:
    return PodFacts(
        namespace="ai-frontier-research",
        name=name,
        phase=phase,
        requests=requests or {},
        limited=True,
        tolerations=tolerations,
        node_name="gpu-node-1" if phase == "Running" else None,
        node_gpu_labelled=gpu_node,
    )


def test_a_pod_on_a_gpu_node_without_gpu_limits_is_broken_one_only_tolerating_the_taint_a_warning() -> None:
    fine = [pod("train", requests={"nvidia.com/gpu": 2}, gpu_node=True), pod("web")]
    assert unlimited_pods_check(fine).status is Status.OK
    escaping = unlimited_pods_check([*fine, pod("sneaky", gpu_node=True)])
    assert (escaping.status, escaping.fix) == (Status.BROKEN, Fix.ADD_GPU_LIMITS)
    assert [p.pod for p in escaping.evidence.unlimited] == ["ai-frontier-research/sneaky"]  # type: ignore[union-attr]
    waiting = unlimited_pods_check([pod("later", phase="Pending", tolerations=(Toleration("nvidia.com/gpu", "Exists"),))])
    assert (waiting.status, waiting.evidence.unlimited[0].node) == (Status.WARNING, None)  # type: ignore[union-attr]


# --- the weekly comparison --------------------------------------------------------------------------


def test_only_checks_that_became_broken_are_new() -> None:
    ok = quota_check(1, [])
    broken = node_gpus_check([node("gpu-node-3", gpus=0)])
    still = CheckResult(Check.MIG, Status.BROKEN, mig_check([]).evidence)
    now = Checkup((ok, broken, still))
    assert newly_broken({"mig@": "broken", "node_gpus@": "ok"}, now) == (broken,)
    assert newly_broken({}, now) == (broken, still)  # the first run: nothing was broken before
