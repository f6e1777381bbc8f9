"""The doctor service over hand-written fakes: every check answers on its own (a failing read makes only its checks
"could not check", RBAC naming the permission), nothing is written, and the weekly run posts only what became broken."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.adapters.slack.doctor_words import slack_lines
from bot.adapters.slack.words import render
from bot.bootstrap import build_doctor
from bot.domain.clusters import HOME
from bot.domain.scheduling import DaemonSetFacts, NodeFacts, PodFacts, PriorityClassFacts
from bot.domain.stack_health import (
    Cause,
    Check,
    CheckResult,
    Checkup,
    DownTarget,
    Exporter,
    Fix,
    QuotaGap,
    ScrapeTarget,
    SeriesFacts,
    Status,
    TargetEvidence,
    Unchecked,
)
from bot.errors import Forbidden, GpuQuotaError, Unreachable
from bot.services.announce import Announcer
from bot.services.doctor import Doctor, DoctorRefusal, Refusal
from bot.services.messages import BrokenCheck, StackBroken, from_json, to_json
from tests.unit.conftest import POLICY, World, make_world

GPU_LABELS = {"nvidia.com/gpu.present": "true"}


class FakeInspection:
    """The cluster as the doctor reads it; ``failing``: method name -> the error it raises."""

    def __init__(self) -> None:
        self.node_list = [NodeFacts(f"gpu-node-{i}", GPU_LABELS, (), {"nvidia.com/gpu": 8}, {}) for i in (1, 2)]
        self.plugins = [DaemonSetFacts("gpu-operator", "nvidia-device-plugin-daemonset", {}, 2, 2, 2)]
        self.pod_list: dict[str, list[PodFacts]] = {}
        self.classes = {"low-priority-experiment": PriorityClassFacts("low-priority-experiment", 100)}
        self.failing: dict[str, GpuQuotaError] = {}
        self.calls: list[str] = []

    def _read(self, what: str) -> None:
        self.calls.append(what)
        if what in self.failing:
            raise self.failing[what]

    def nodes(self, cluster: str = HOME) -> list[NodeFacts]:
        self._read("nodes")
        return self.node_list

    def daemon_sets(self, cluster: str = HOME) -> list[DaemonSetFacts]:
        self._read("daemon_sets")
        return self.plugins

    def pods(self, namespace: str) -> list[PodFacts]:
        self._read("pods")
        return self.pod_list.get(namespace, [])

    def priority_class_facts(self, cluster: str = HOME) -> dict[str, PriorityClassFacts]:
        self._read("priority_class_facts")
        return self.classes


class FakeScrape:
    def __init__(self) -> None:
        self.target_list = [
            ScrapeTarget(
                "serviceMonitor/gpu-operator/nvidia-dcgm-exporter/0",
                "nvidia-dcgm-exporter",
                "http://10.0.0.1:9400/metrics",
                "up",
                "",
                30.0,
            ),
            ScrapeTarget("kube-state-metrics", "kube-state-metrics", "http://10.0.0.9:8080/metrics", "up", "", 30.0),
        ]
        self.absent: set[str] = set()
        self.failing: dict[str, GpuQuotaError] = {}

    def targets(self, cluster: str = HOME) -> list[ScrapeTarget]:
        if "targets" in self.failing:
            raise self.failing["targets"]
        return self.target_list

    def series(self, metrics: Sequence[str], *, labels: Sequence[str] = (), cluster: str = HOME) -> dict[str, SeriesFacts]:
        if "series" in self.failing:
            raise self.failing["series"]
        return {m: SeriesFacts(m, m not in self.absent, ("namespace",) if m not in self.absent else ()) for m in metrics}


POLICY_WITH_CLASSES = {
    **POLICY,
    "teams": {
        **POLICY["teams"],  # type: ignore[dict-item]
        "frontier": {**POLICY["teams"]["frontier"], "borrowed_priority_classes": ["low-priority-experiment"]},  # type: ignore[index]
    },
}


@pytest.fixture
def world() -> World:
    return make_world(POLICY_WITH_CLASSES)


def doctor(world: World, inspection: FakeInspection | None, scrape: FakeScrape | None) -> Doctor:
    announcer = Announcer(notifier=world.notifier, policy=world.policy, database=world.database, clock=world.clock)
    return build_doctor(
        policy=world.policy,
        inspection=inspection,  # type: ignore[arg-type]
        scrape=scrape,
        sync=world.services.sync,
        database=world.database,
        clock=world.clock,
        announcer=announcer,
        is_admin=world.services.access.is_admin,
    )


def statuses(checkup) -> dict[Check, Status]:  # type: ignore[no-untyped-def]
    return {result.check: result.status for result in checkup.results}


def test_a_healthy_stack_is_ok_everywhere_and_nothing_is_written(world: World) -> None:
    checkup = doctor(world, FakeInspection(), FakeScrape()).examine()
    assert statuses(checkup) == dict.fromkeys(Check, Status.OK)
    assert not checkup.broken
    assert world.cluster.writes == [] and world.notifier.sent == []


def test_a_failing_node_read_makes_the_node_checks_unchecked_and_the_others_answer(world: World) -> None:
    inspection = FakeInspection()
    inspection.failing["nodes"] = Unreachable("the API server of the cluster did not answer")
    scrape = FakeScrape()
    scrape.absent.add("kube_pod_container_resource_requests")
    found = statuses(doctor(world, inspection, scrape).examine())
    assert [found[c] for c in (Check.DEVICE_PLUGIN, Check.NODE_GPUS, Check.MIG)] == [Status.UNCHECKED] * 3
    assert found[Check.KSM_SERIES] is Status.BROKEN
    assert found[Check.QUOTA_OBJECTS] is Status.OK and found[Check.PRIORITY_CLASSES] is Status.OK


def test_an_rbac_refusal_names_the_permission_and_only_that_check_is_unchecked(world: World) -> None:
    inspection = FakeInspection()
    inspection.failing["daemon_sets"] = Forbidden("daemonsets is forbidden", permission="list daemonsets.apps")
    checkup = doctor(world, inspection, FakeScrape()).examine()
    plugin = next(r for r in checkup.results if r.check is Check.DEVICE_PLUGIN)
    assert plugin.status is Status.UNCHECKED
    assert plugin.evidence == Unchecked(Cause.FORBIDDEN, "daemonsets is forbidden", "list daemonsets.apps")
    assert statuses(checkup)[Check.NODE_GPUS] is Status.OK


def test_prometheus_down_leaves_the_cluster_checks_standing(world: World) -> None:
    scrape = FakeScrape()
    scrape.failing = {"targets": Unreachable("Prometheus did not answer"), "series": Unreachable("Prometheus did not answer")}
    found = statuses(doctor(world, FakeInspection(), scrape).examine())
    assert {found[c] for c in (Check.DCGM_TARGET, Check.KSM_TARGET, Check.DCGM_SERIES, Check.KSM_SERIES)} == {Status.UNCHECKED}
    assert found[Check.DEVICE_PLUGIN] is Status.OK


def test_without_a_cluster_reader_or_prometheus_the_checks_say_not_connected(world: World) -> None:
    checkup = doctor(world, None, None).examine()
    causes = {r.check: r.evidence.cause for r in checkup.results if isinstance(r.evidence, Unchecked)}
    assert causes[Check.NODE_GPUS] is Cause.NOT_CONNECTED and causes[Check.DCGM_TARGET] is Cause.NOT_CONNECTED
    assert statuses(checkup)[Check.QUOTA_OBJECTS] is Status.OK  # read through the quota targets


def test_a_namespace_without_its_resource_quota_is_named(world: World) -> None:
    world.cluster.quotas = {key: quota for key, quota in world.cluster.quotas.items() if key[0] != "biz-model-serving"}
    result = next(r for r in doctor(world, FakeInspection(), FakeScrape()).examine().results if r.check is Check.QUOTA_OBJECTS)
    assert result.status is Status.BROKEN
    assert [(m.namespace, m.name, m.gap) for m in result.evidence.missing] == [
        ("biz-model-serving", "compute-quota", QuotaGap.OBJECT)
    ]  # type: ignore[union-attr]


def test_a_missing_priority_class_and_an_unlimited_gpu_pod_are_broken(world: World) -> None:
    inspection = FakeInspection()
    inspection.classes = {}
    inspection.pod_list["ai-frontier-research"] = [
        PodFacts("ai-frontier-research", "sneaky", "Running", {}, True, node_name="gpu-node-1", node_gpu_labelled=True)
    ]
    found = statuses(doctor(world, inspection, FakeScrape()).examine())
    assert found[Check.PRIORITY_CLASSES] is Status.BROKEN and found[Check.UNLIMITED_PODS] is Status.BROKEN


def test_doctor_is_for_admins_and_refuses_an_unknown_cluster_before_reading(world: World) -> None:
    inspection = FakeInspection()
    service = doctor(world, inspection, FakeScrape())
    assert service.for_admin(user="U0ALICE") == Refusal(DoctorRefusal.NOT_ADMIN)
    assert service.for_admin(user="U0PAT", cluster="mars") == Refusal(DoctorRefusal.UNKNOWN_CLUSTER, "mars", ())
    assert inspection.calls == []
    assert not isinstance(service.for_admin(user="U0PAT"), Refusal)


def test_the_weekly_run_posts_only_when_a_check_changed_to_broken(world: World) -> None:
    inspection = FakeInspection()
    service = doctor(world, inspection, FakeScrape())
    assert service.weekly().posted is False
    inspection.node_list = [*inspection.node_list, NodeFacts("gpu-node-3", GPU_LABELS, (), {}, {})]
    first = service.weekly()
    assert first.posted and [r.check for r in first.newly_broken] == [Check.NODE_GPUS]
    posts = world.notifier.of("post")
    assert len(posts) == 1 and posts[0].target == "C0PLATFORM" and "gpu-node-3" in posts[0].text
    assert service.weekly().posted is False  # still broken: nothing new to say
    inspection.failing["nodes"] = Unreachable("down")
    assert service.weekly().errors  # could not look: a failed run, and what was broken is kept
    del inspection.failing["nodes"]
    assert service.weekly().posted is False
    assert len(world.notifier.of("post")) == 1


def test_the_weekly_run_remembers_in_the_database(world: World) -> None:
    doctor(world, FakeInspection(), FakeScrape()).weekly()
    remembered = world.database.run(lambda repo: repo.doctor_statuses())
    assert remembered["device_plugin@"] == "ok" and remembered[f"{Check.DCGM_TARGET.value}@"] == "ok"


def test_the_weekly_notice_survives_the_outbox_and_slack_lines_escape_cluster_text() -> None:
    said = StackBroken((BrokenCheck(Check.NODE_GPUS, "us-2", ("gpu-node-3",)),))
    assert from_json(to_json(said)) == said
    assert "*[us-2] GPUs in allocatable*" in render(said) and "gpu-node-3" in render(said)
    evil = TargetEvidence(Exporter.DCGM, up=0, down=(DownTarget("http://x/metrics", "down", "<!channel> & boom"),))
    lines = slack_lines(Checkup((CheckResult(Check.DCGM_TARGET, Status.BROKEN, evil, Fix.REPAIR_TARGET),)), {"": ""})
    assert "&lt;!channel&gt; &amp; boom" in lines[1] and "<!channel>" not in "".join(lines)


def test_a_fault_of_the_bots_own_in_a_clusters_checks_makes_its_lines_could_not_check(world: World) -> None:
    inspection = FakeInspection()
    inspection.failing["nodes"] = KeyError("status")  # not an error of the ports: a bug in reading the answer
    checkup = doctor(world, inspection, FakeScrape()).examine()
    assert checkup.results and {r.status for r in checkup.results} == {Status.UNCHECKED}
    assert {r.evidence.cause for r in checkup.results if isinstance(r.evidence, Unchecked)} == {Cause.FAILED}
