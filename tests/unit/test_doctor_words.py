"""The words of ``doctor`` in each language: every check's every outcome worded (evidence and fix) from the same
fixtures, for the terminal and for Slack, and the weekly post; in Chinese nothing left in English but names,
metrics, commands and what the API server or Prometheus said."""

from __future__ import annotations

import pytest

from bot.adapters.i18n import speaking
from bot.adapters.slack.doctor_words import plain_lines, refusal_text, slack_lines, stack_broken_notice
from bot.adapters.slack.mrkdwn import render
from bot.domain.languages import Language
from bot.domain.stack_health import (
    DEVICE_PLUGIN_NAMES,
    Cause,
    Check,
    CheckResult,
    Checkup,
    DevicePluginEvidence,
    DownTarget,
    Exporter,
    Fix,
    MigEvidence,
    MissingClass,
    MissingQuota,
    NodeGpusEvidence,
    NodeState,
    PriorityClassEvidence,
    QuotaEvidence,
    QuotaGap,
    QuotaKind,
    SeriesEvidence,
    Status,
    TargetEvidence,
    UnlimitedPod,
    UnlimitedPodsEvidence,
    unchecked,
)
from bot.services.doctor import DoctorRefusal, Refusal
from bot.services.messages import BrokenCheck, StackBroken
from tests.language_checks import catalog_misses, foreign_words

PLUGIN = "gpu-operator/nvidia-device-plugin-daemonset"
NODES = tuple(f"gpu-node-{i}" for i in range(7))
API_SAID = "daemonsets.apps is forbidden: User cannot list resource"
PROMETHEUS_SAID = "Get http://prometheus:9090/api/v1/targets: dial tcp: connection refused"
SCRAPE_ERROR = "server returned HTTP status 404 Not Found"


def result(check: Check, status: Status, evidence: object, fix: Fix | None = None, cluster: str = "") -> CheckResult:
    return CheckResult(check, status, evidence, fix, cluster)  # type: ignore[arg-type]


def plugin(**changes: object) -> DevicePluginEvidence:
    values: dict[str, object] = {"daemon_sets": (PLUGIN,), "desired": 5, "ready": 5, "gpu_nodes": 5}
    values.update(changes)
    return DevicePluginEvidence(**values)  # type: ignore[arg-type]


# Every outcome of every check (each branch of its words), as the checks make them.
RESULTS = (
    result(Check.DEVICE_PLUGIN, Status.OK, plugin()),
    result(Check.DEVICE_PLUGIN, Status.BROKEN, plugin(ready=4, not_ready_namespace="gpu-operator"), Fix.READY_DEVICE_PLUGIN),
    result(Check.DEVICE_PLUGIN, Status.BROKEN, plugin(not_covered=NODES), Fix.PLACE_DEVICE_PLUGIN),
    result(
        Check.DEVICE_PLUGIN, Status.BROKEN, plugin(daemon_sets=(), desired=0, ready=0, gpu_nodes=1), Fix.INSTALL_DEVICE_PLUGIN
    ),
    result(
        Check.DEVICE_PLUGIN, Status.BROKEN, plugin(daemon_sets=(), desired=0, ready=0, gpu_nodes=3), Fix.INSTALL_DEVICE_PLUGIN
    ),
    result(Check.DEVICE_PLUGIN, Status.WARNING, plugin(daemon_sets=(), desired=0, ready=0), Fix.NAME_DEVICE_PLUGIN),
    result(Check.DEVICE_PLUGIN, Status.WARNING, plugin(daemon_sets=(), desired=0, ready=0, gpu_nodes=0)),
    result(Check.NODE_GPUS, Status.OK, NodeGpusEvidence(1)),
    result(Check.NODE_GPUS, Status.OK, NodeGpusEvidence(5)),
    result(Check.NODE_GPUS, Status.BROKEN, NodeGpusEvidence(5, NODES[:2]), Fix.RESTART_DEVICE_PLUGIN, "us-2"),
    result(Check.MIG, Status.OK, MigEvidence(0)),
    result(Check.MIG, Status.OK, MigEvidence(2)),
    result(Check.MIG, Status.WARNING, MigEvidence(2, (NodeState("gpu-node-1", "pending"),)), Fix.WAIT_MIG),
    result(
        Check.MIG, Status.BROKEN, MigEvidence(2, (NodeState("gpu-node-1", "failed"), NodeState("gpu-node-2", ""))), Fix.REPAIR_MIG
    ),
    result(Check.DCGM_TARGET, Status.OK, TargetEvidence(Exporter.DCGM, 2, (), (30.0,), 30.0)),
    result(Check.KSM_TARGET, Status.OK, TargetEvidence(Exporter.KSM, 1, (), (), 30.0)),
    result(Check.DCGM_TARGET, Status.BROKEN, TargetEvidence(Exporter.DCGM, 0), Fix.SCRAPE_EXPORTER),
    result(Check.KSM_TARGET, Status.BROKEN, TargetEvidence(Exporter.KSM, 0), Fix.SCRAPE_EXPORTER),
    result(
        Check.DCGM_TARGET,
        Status.WARNING,
        TargetEvidence(
            Exporter.DCGM,
            1,
            (
                DownTarget("http://10.0.0.2:9400/metrics", "down", SCRAPE_ERROR),
                DownTarget("http://10.0.0.3:9400/metrics", "unknown", ""),
            ),
        ),
        Fix.REPAIR_TARGET,
    ),
    result(Check.DCGM_TARGET, Status.WARNING, TargetEvidence(Exporter.DCGM, 2, (), (60.0, 15.5), 30.0), Fix.SET_SAMPLE_INTERVAL),
    result(Check.DCGM_SERIES, Status.OK, SeriesEvidence("DCGM_FI_DEV_GPU_UTIL", True, ("namespace", "exported_namespace"))),
    result(Check.DCGM_SERIES, Status.WARNING, SeriesEvidence("DCGM_FI_DEV_GPU_UTIL", True), Fix.MAP_PODS),
    result(Check.DCGM_SERIES, Status.BROKEN, SeriesEvidence("DCGM_FI_DEV_GPU_UTIL", False), Fix.SCRAPE_EXPORTER),
    result(Check.PROFILING_SERIES, Status.OK, SeriesEvidence("DCGM_FI_PROF_GR_ENGINE_ACTIVE", True)),
    result(Check.PROFILING_SERIES, Status.WARNING, SeriesEvidence("DCGM_FI_PROF_GR_ENGINE_ACTIVE", False), Fix.LOAD_PROFILING),
    result(Check.KSM_SERIES, Status.BROKEN, SeriesEvidence("kube_pod_container_resource_requests", False), Fix.SCRAPE_EXPORTER),
    result(Check.PRIORITY_CLASSES, Status.OK, PriorityClassEvidence(())),
    result(Check.PRIORITY_CLASSES, Status.OK, PriorityClassEvidence(("low-priority-experiment",))),
    result(Check.PRIORITY_CLASSES, Status.OK, PriorityClassEvidence(("low-priority-experiment", "high-priority-business"))),
    result(
        Check.PRIORITY_CLASSES,
        Status.BROKEN,
        PriorityClassEvidence(
            ("low-priority-experiment",),
            (MissingClass("low-priority-experiment", ("ai-frontier-research", "biz-model-serving")),),
        ),
        Fix.CREATE_PRIORITY_CLASS,
    ),
    result(Check.QUOTA_OBJECTS, Status.OK, QuotaEvidence(1)),
    result(Check.QUOTA_OBJECTS, Status.OK, QuotaEvidence(4)),
    result(
        Check.QUOTA_OBJECTS,
        Status.BROKEN,
        QuotaEvidence(
            4,
            (
                MissingQuota(
                    "biz-model-serving", "nvidia.com/gpu", QuotaKind.RESOURCE_QUOTA, "compute-quota", QuotaGap.NAMESPACE
                ),
                MissingQuota("ai-frontier-research", "nvidia.com/gpu", QuotaKind.CLUSTER_QUEUE, "frontier-cq", QuotaGap.OBJECT),
                MissingQuota(
                    "ai-frontier-research", "nvidia.com/mig-3g.40gb", QuotaKind.FEDERATED, "frontier", QuotaGap.RESOURCE
                ),
            ),
        ),
        Fix.CREATE_QUOTA,
    ),
    result(Check.UNLIMITED_PODS, Status.OK, UnlimitedPodsEvidence(1)),
    result(Check.UNLIMITED_PODS, Status.OK, UnlimitedPodsEvidence(12)),
    result(
        Check.UNLIMITED_PODS,
        Status.BROKEN,
        UnlimitedPodsEvidence(12, (UnlimitedPod("ai-frontier-research/sneaky", "gpu-node-1", True),)),
        Fix.ADD_GPU_LIMITS,
    ),
    result(
        Check.UNLIMITED_PODS,
        Status.WARNING,
        UnlimitedPodsEvidence(12, tuple(UnlimitedPod(f"ai-frontier-research/wait-{i}", None, False) for i in range(7))),
        Fix.ADD_GPU_LIMITS,
    ),
    unchecked(Check.DEVICE_PLUGIN, Cause.FORBIDDEN, detail=API_SAID, permission="list daemonsets.apps"),
    unchecked(Check.NODE_GPUS, Cause.UNREACHABLE, detail="the API server of the cluster did not answer"),
    unchecked(Check.MIG, Cause.FAILED, detail="KeyError"),
    unchecked(Check.MIG, Cause.FAILED),
    unchecked(Check.DCGM_TARGET, Cause.UNREACHABLE, detail=PROMETHEUS_SAID),
    unchecked(Check.NODE_GPUS, Cause.NOT_CONNECTED),
    unchecked(Check.KSM_SERIES, Cause.NOT_CONNECTED),
)
# What is shown as it is: names, metrics, label names, URLs, health words and what the systems said.
VALUES = (
    PLUGIN, *NODES, *DEVICE_PLUGIN_NAMES, API_SAID, PROMETHEUS_SAID, SCRAPE_ERROR, "the API server of the cluster did not answer",
    "KeyError", "gpu-operator", "pending", "failed", "down", "unknown", "low-priority-experiment", "high-priority-business",
    "ai-frontier-research", "biz-model-serving", "compute-quota", "frontier-cq", "frontier", "exported_namespace", "namespace",
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "kube_pod_container_resource_requests", "sneaky", "us-1",
    "us-2", "http://10.0.0.2:9400/metrics", "http://10.0.0.3:9400/metrics", *(f"wait-{i}" for i in range(7)),
)  # fmt: skip
CLUSTERS = {"": "us-1", "us-2": "us-2"}


def checkup() -> Checkup:
    return Checkup(RESULTS)


@pytest.mark.parametrize("language", list(Language))
@pytest.mark.parametrize("names", [{"": ""}, CLUSTERS], ids=["one cluster", "two clusters"])
def test_every_check_outcome_is_worded_for_the_terminal_and_slack_in_each_language(
    language: Language, names: dict[str, str]
) -> None:
    with speaking(language), catalog_misses() as missed:
        plain = plain_lines(checkup(), names)
        slack = slack_lines(checkup(), names)
    assert missed == set()
    assert len(plain) == len(RESULTS) and len(slack) == len(RESULTS) + 1
    assert all(line.strip() and len(line) < 3000 for line in plain + slack)
    assert (
        sum(" -> " in line for line in plain)
        == sum(" → " in line for line in slack[1:])
        == sum(1 for r in RESULTS if r.fix or r.status is Status.UNCHECKED)
    )
    if language is Language.ZH_CN:
        assert {line: words for line in plain + slack if (words := foreign_words(line, values=VALUES))} == {}
        assert slack[0].startswith("*有故障*：")


def test_the_terminal_s_status_words_line_up_in_chinese_too() -> None:
    """The evidence starts at the same column on every line: a terminal gives a Chinese character two."""

    def column(line: str) -> int:
        status = line.split()[0]
        rest = line[len(status) :]
        return sum(2 if "\u4e00" <= char <= "\u9fff" else 1 for char in status) + len(rest) - len(rest.lstrip(" "))

    with speaking(Language.ZH_CN):
        lines = plain_lines(checkup(), {"": ""})
    assert len({column(line) for line in lines}) == 1, lines
    assert {line.split()[0] for line in lines} == {"正常", "警告", "故障", "无法检查"}


@pytest.mark.parametrize("language", list(Language))
def test_the_weekly_post_and_the_refusals_in_each_language(language: Language) -> None:
    said = StackBroken(
        (
            BrokenCheck(Check.NODE_GPUS, "us-2", NODES),
            BrokenCheck(Check.MIG, "", ()),
            BrokenCheck(Check.DCGM_TARGET, "", ("http://10.0.0.2:9400/metrics",)),
        )
    )
    refusals = (
        Refusal(DoctorRefusal.NOT_ADMIN),
        Refusal(DoctorRefusal.UNKNOWN_CLUSTER, "mars", ("us-1", "us-2")),
        Refusal(DoctorRefusal.UNKNOWN_CLUSTER, "mars", ()),
    )
    with speaking(language), catalog_misses() as missed:
        texts = [render(stack_broken_notice(said)), *(refusal_text(refusal) for refusal in refusals)]
        assert slack_lines(refusals[0], {"": ""}) == [texts[1]]
    assert missed == set()
    assert "gpu-node-0" in texts[0] and "`/gpu-quota doctor`" in texts[0] and "`mars`" in texts[2] and "`us-2`" in texts[2]
    if language is Language.EN:
        assert "*[us-2] GPUs in allocatable* (`gpu-node-0`" not in texts[0]  # subjects are plain names
        assert "*[us-2] GPUs in allocatable* (gpu-node-0, " in texts[0] and "and 2 more" in texts[0]
    else:
        assert "*[us-2] 可分配资源中的 GPU*（gpu-node-0、" in texts[0]
        assert {text: words for text in texts if (words := foreign_words(text, values=(*VALUES, "mars", "us-1")))} == {}
