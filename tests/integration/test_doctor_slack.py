"""``/gpu-quota doctor`` through signed Slack HTTP into the real Bolt app, against the Kubernetes API stand-in: an
admin gets the checklist (each broken part named), anyone else is refused before anything is read, nothing is
written; the weekly run posts to the admin channel only when a check changed to broken."""

from __future__ import annotations

from importlib import resources

import yaml

from bot.clock import ManualClock
from bot.domain.policy import parse_policy
from bot.domain.stack_health import Check, Status
from bot.sandbox.session import Sandbox
from bot.sandbox.world import sandbox_policy
from tests.integration.conftest import START, SlackOverHttp
from tests.language_checks import catalog_misses, foreign_words


def outbox_entries(sandbox: Sandbox) -> int:
    assert sandbox.database is not None
    return sum(sandbox.database.outbox().health().counts.values())


def test_an_admin_gets_the_checklist_with_the_broken_node_named_and_nothing_is_written(
    sandbox: Sandbox, slack: SlackOverHttp
) -> None:
    assert sandbox.kube is not None
    sandbox.kube.break_device_plugin("gpu-node-c")
    before = outbox_entries(sandbox)
    ack = slack.command("U0PAT", "doctor")
    assert ack.status_code == 200
    (answer,) = slack.responses()
    assert "*Something is broken*" in answer
    assert ":x: *GPUs in allocatable*: device plugin not running on gpu-node-c" in answer
    assert ":x: *device plugin*: gpu-operator/nvidia-device-plugin-daemonset: 4 of 5 pods ready" in answer
    assert ":white_check_mark: *quota objects*" in answer
    assert sandbox.kube.writes() == [] and outbox_entries(sandbox) == before


def test_someone_not_an_admin_is_refused_before_the_cluster_is_read(sandbox: Sandbox, slack: SlackOverHttp) -> None:
    assert sandbox.kube is not None
    reads = len(sandbox.kube.log)
    slack.command("U0ALICE", "doctor")
    (answer,) = slack.responses()
    assert "`doctor` is for the platform admins" in answer and "broken" not in answer
    assert len(sandbox.kube.log) == reads


def test_an_unknown_cluster_is_refused_by_name(sandbox: Sandbox, slack: SlackOverHttp) -> None:
    slack.command("U0PAT", "doctor mars")
    (answer,) = slack.responses()
    assert "no cluster `mars`" in answer


def test_the_weekly_run_posts_once_when_something_becomes_broken(sandbox: Sandbox, slack: SlackOverHttp) -> None:
    assert sandbox.services is not None and sandbox.services.doctor is not None and sandbox.kube is not None
    doctor = sandbox.services.doctor
    assert not doctor.weekly().posted  # healthy: nothing said
    sandbox.kube.break_device_plugin("gpu-node-a")
    assert doctor.weekly().posted
    assert not doctor.weekly().posted  # still broken, already said
    posts = [r.text for r in slack.channel_messages("C0PLATFORM")]
    assert len(posts) == 1
    assert "device plugin" in posts[0] and "gpu-node-a" in posts[0] and "/gpu-quota doctor" in posts[0]


def test_with_two_clusters_one_down_only_its_checks_say_could_not_check() -> None:
    box = Sandbox(policy=sandbox_policy(two_clusters=True), clock=ManualClock(START), kube_timeout=(2.0, 2.0)).start()
    try:
        assert box.services is not None and box.services.doctor is not None
        box.kubes["us-2"].refuse_connections()
        checkup = box.services.doctor.examine()
        by_cluster = {(r.cluster, r.check): r.status for r in checkup.results}
        assert by_cluster[("us-2", Check.NODE_GPUS)] is Status.UNCHECKED
        assert by_cluster[("us-2", Check.DEVICE_PLUGIN)] is Status.UNCHECKED
        assert by_cluster[("", Check.NODE_GPUS)] is Status.OK and by_cluster[("", Check.DEVICE_PLUGIN)] is Status.OK
        assert by_cluster[("us-2", Check.DCGM_TARGET)] is Status.OK  # its Prometheus answers
        assert box.services.doctor.examine(["us-2"]).results[0].cluster == "us-2"
    finally:
        box.stop()


def test_a_chinese_admin_gets_the_checklist_in_chinese(sandbox: Sandbox, slack: SlackOverHttp) -> None:
    assert sandbox.kube is not None
    sandbox.slack.locales["U0PAT"] = "zh-CN"
    sandbox.kube.break_device_plugin("gpu-node-c")
    with catalog_misses() as missed:
        slack.command("U0PAT", "doctor")
        slack.command("U0PAT", "doctor mars")
    answer, refused = slack.responses()[-2:]
    assert missed == set()
    assert answer.startswith("*有故障*：")
    assert ":x: *可分配资源中的 GPU*：设备插件没有在 gpu-node-c 上运行" in answer
    assert ":x: *设备插件*：gpu-operator/nvidia-device-plugin-daemonset：5 个 Pod 中有 4 个就绪" in answer
    assert "策略中没有集群 `mars`" in refused
    shown = (
        *("gpu-node-c", "gpu-operator/nvidia-device-plugin-daemonset", "gpu-operator", "low-priority-experiment", "mars"),
        *("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "kube_pod_container_resource_requests", "namespace"),
    )  # names, metrics and label names: shown as they are
    assert foreign_words(answer, values=shown) == [] and foreign_words(refused, values=shown) == []


def test_the_weekly_post_is_in_the_policy_s_language() -> None:
    document = yaml.safe_load(resources.files("bot.sandbox").joinpath("policy.yaml").read_text(encoding="utf-8"))
    document["language"] = "zh-CN"
    box = Sandbox(policy=parse_policy(document, source="test policy"), clock=ManualClock(START), kube_timeout=(2.0, 2.0)).start()
    try:
        assert box.services is not None and box.services.doctor is not None and box.kube is not None
        box.kube.break_device_plugin("gpu-node-a")
        with catalog_misses() as missed:
            assert box.services.doctor.weekly().posted
        posts = [m for m in box.slack.messages.values() if m.channel == "C0PLATFORM"]
    finally:
        box.stop()
    assert missed == set() and len(posts) == 1
    assert posts[0].text.startswith(":rotating_light: 自上次每周检查 GPU 栈以来出现故障：")
    assert "gpu-node-a" in posts[0].text and "`/gpu-quota doctor`" in posts[0].text
    assert foreign_words(posts[0].text, values=("gpu-node-a", "gpu-operator/nvidia-device-plugin-daemonset")) == []
