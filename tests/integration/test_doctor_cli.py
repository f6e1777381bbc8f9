"""``gpu-quota-bot doctor`` as a real process against the Kubernetes API stand-in: one line per check, exit 0 when
nothing is broken, 1 when something is (the broken part named), 2 for a settings problem; nothing written."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.session import BOT_TOKEN
from bot.sandbox.slack_api import SlackApiStandIn
from bot.sandbox.world import sandbox_slack, seed_cluster
from tests.integration.processes import SANDBOX_POLICY, free_port, run_bot, run_env
from tests.language_checks import foreign_words

STATUSES = ("ok", "warning", "BROKEN", "could not check")


@pytest.fixture
def kube() -> Iterator[KubeApiStandIn]:
    stand_in = KubeApiStandIn().start()
    seed_cluster(stand_in)
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackApiStandIn]:
    stand_in = sandbox_slack(BOT_TOKEN).start()
    yield stand_in
    stand_in.stop()


def doctor(
    tmp_path: Path, slack: SlackApiStandIn, kube: KubeApiStandIn, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = run_env(
        tmp_path, slack, kube, PROMETHEUS_URL=f"http://127.0.0.1:{free_port()}", PROMETHEUS_TIMEOUT_SECONDS="2", **env
    )
    result = run_bot("doctor", *args, env=environment, timeout=180)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def lines_of(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each line by its check's title, its status word first."""
    found = {}
    for line in result.stdout.splitlines():
        status = next(word for word in STATUSES if line.startswith(word))
        title = line[len(status) :].strip().split(":", 1)[0]
        found[title] = line
    return found


def test_a_healthy_cluster_exits_0_with_a_line_per_check_and_nothing_written(
    tmp_path: Path, slack: SlackApiStandIn, kube: KubeApiStandIn
) -> None:
    result = doctor(tmp_path, slack, kube)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = lines_of(result)
    assert lines["device plugin"].startswith("ok") and "5 of 5 ready, on every GPU node" in lines["device plugin"]
    assert lines["GPUs in allocatable"].startswith("ok") and lines["MIG"].startswith("ok")
    assert lines["quota objects"].startswith("ok") and lines["PriorityClasses"].startswith("ok")
    # Prometheus does not answer: its lines say so, the run is not broken for it.
    assert lines["DCGM exporter target"].startswith("could not check") and "unreachable" in lines["DCGM exporter target"]
    assert kube.writes() == []


def test_a_node_without_its_device_plugin_exits_1_naming_it(tmp_path: Path, slack: SlackApiStandIn, kube: KubeApiStandIn) -> None:
    kube.break_device_plugin("gpu-node-b")
    result = doctor(tmp_path, slack, kube)
    assert result.returncode == 1
    lines = lines_of(result)
    assert lines["GPUs in allocatable"].startswith("BROKEN")
    assert "device plugin not running on gpu-node-b" in lines["GPUs in allocatable"] and " -> " in lines["GPUs in allocatable"]
    assert lines["device plugin"].startswith("BROKEN") and "4 of 5 pods ready" in lines["device plugin"]
    assert kube.writes() == []


def test_an_rbac_refusal_names_the_permission_and_the_others_answer(
    tmp_path: Path, slack: SlackApiStandIn, kube: KubeApiStandIn
) -> None:
    kube.fail("GET", r"/apis/apps/v1/daemonsets$", 403, message="daemonsets.apps is forbidden", seconds=120)
    result = doctor(tmp_path, slack, kube)
    assert result.returncode == 0
    lines = lines_of(result)
    assert (
        lines["device plugin"].startswith("could not check")
        and "grant the bot's ServiceAccount `list daemonsets.apps`" in lines["device plugin"]
    )
    assert lines["GPUs in allocatable"].startswith("ok")


def test_settings_problems_exit_2_in_one_line(tmp_path: Path, slack: SlackApiStandIn, kube: KubeApiStandIn) -> None:
    missing = doctor(tmp_path, slack, kube, KUBECONFIG=str(tmp_path / "nonexistent"))
    assert (missing.returncode, missing.stderr.strip().count("\n")) == (2, 0)
    assert missing.stderr.startswith("gpu-quota-bot: KUBECONFIG") and missing.stdout == ""
    unknown = doctor(tmp_path, slack, kube, "--cluster", "mars")
    assert unknown.returncode == 2 and "no cluster 'mars'" in unknown.stderr
    without_policy = {name: value for name, value in run_env(tmp_path, slack, kube).items() if name != "GPU_QUOTA_CONFIG"}
    no_policy = run_bot("doctor", env=without_policy)
    assert no_policy.returncode == 2 and "GPU_QUOTA_CONFIG" in no_policy.stderr and "Traceback" not in no_policy.stderr


CHINESE_STATUSES = ("正常", "警告", "故障", "无法检查")
# What the lines show as they are: names, metrics, label names, URLs and what Prometheus's client said.
SHOWN_AS_IS = (
    "gpu-node-b", "gpu-operator/nvidia-device-plugin-daemonset", "gpu-operator", "low-priority-experiment",
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "kube_pod_container_resource_requests", "namespace",
)  # fmt: skip


def chinese_lines(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    found = {}
    for line in result.stdout.splitlines():
        status = next(word for word in CHINESE_STATUSES if line.startswith(word))
        found[line[len(status) :].strip().split("：", 1)[0]] = line
    return found


def test_lang_zh_cn_prints_the_checklist_in_chinese(tmp_path: Path, slack: SlackApiStandIn, kube: KubeApiStandIn) -> None:
    kube.break_device_plugin("gpu-node-b")
    result = doctor(tmp_path, slack, kube, "--lang", "zh-CN")
    assert result.returncode == 1
    lines = chinese_lines(result)
    assert lines["可分配资源中的 GPU"].startswith("故障") and "设备插件没有在 gpu-node-b 上运行" in lines["可分配资源中的 GPU"]
    assert lines["设备插件"].startswith("故障") and "5 个 Pod 中有 4 个就绪" in lines["设备插件"]
    assert lines["DCGM 导出器的抓取目标"].startswith("无法检查") and "无法连接" in lines["DCGM 导出器的抓取目标"]
    for line in lines.values():
        words = re.sub(r"无法连接：.*? -> ", "无法连接 -> ", line)  # what the Prometheus client said is shown as it is
        assert foreign_words(words, values=SHOWN_AS_IS) == [], line


def test_the_policy_s_language_is_the_default_and_lang_overrides_it(
    tmp_path: Path, slack: SlackApiStandIn, kube: KubeApiStandIn
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(SANDBOX_POLICY.read_text() + "\nlanguage: zh-CN\n")
    chinese = doctor(tmp_path, slack, kube, GPU_QUOTA_CONFIG=str(policy))
    assert chinese.returncode == 0 and set(chinese_lines(chinese)) >= {"设备插件", "配额对象"}
    english = doctor(tmp_path, slack, kube, "--lang", "en", GPU_QUOTA_CONFIG=str(policy))
    assert english.returncode == 0 and lines_of(english)["device plugin"].startswith("ok")
    unknown = doctor(tmp_path, slack, kube, "--cluster", "mars", GPU_QUOTA_CONFIG=str(policy))
    assert unknown.returncode == 2 and "策略中没有集群 'mars'" in unknown.stderr
