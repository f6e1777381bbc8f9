from datetime import timedelta
from pathlib import Path

import pytest

from bot.domain.policy import (
    AutoApprovalCheck,
    PolicyError,
    approvals_required,
    auto_approval,
    limit_problems,
    load_policy,
    parse_policy,
)

EXAMPLE = Path(__file__).parents[2] / "deploy" / "config.example.yaml"


def minimal(**team: object) -> dict:
    base = {"channel": "C1", "namespaces": ["ns-a"], "approvers": {"users": ["U1"]}}
    return {"teams": {"t": {**base, **team}}}


def test_the_documented_example_loads() -> None:
    policy = load_policy(EXAMPLE)
    frontier = policy.team_of("ai-frontier-research")
    assert frontier is not None and frontier.name == "frontier"
    assert policy.quota_name("ai-frontier-research") == "compute-quota"
    assert policy.managed_namespaces() == ["ai-frontier-research", "biz-model-serving"]
    assert frontier.limits.max_duration == timedelta(days=14)
    assert policy.pricing.price_for("NVIDIA H100 80GB HBM3") == 4.80
    assert policy.pricing.price_for("unknown model") == 0.95


def test_namespace_overrides() -> None:
    policy = parse_policy(minimal(namespaces=[{"name": "ns-a", "quota_name": "gpu", "max_gpus": 2, "default_quota": 1}]))
    assert (policy.quota_name("ns-a"), policy.max_gpus("ns-a"), policy.default_quota("ns-a")) == ("gpu", 2, 1)
    assert policy.team_of("ns-b") is None


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        (minimal(approvers={"users": []}), "approvers"),
        (minimal(approvers={"users": ["lee"]}), "Slack user ids"),
        (minimal(namespaces=["Not_Valid"]), "namespace name"),
        (minimal(limits={"max_duration": "forever"}), "duration"),
        (minimal(surprise=1), "surprise"),
        ({"teams": {"a": minimal()["teams"]["t"], "b": minimal()["teams"]["t"]}}, "belongs to both"),
        ([], "mapping"),
    ],
)
def test_bad_policies_are_refused_with_the_place_named(raw: object, complaint: str) -> None:
    with pytest.raises(PolicyError) as error:
        parse_policy(raw)
    assert complaint in str(error.value)


def test_unreadable_policy_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("teams: [unclosed")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(broken)


def test_approvals_required() -> None:
    team = parse_policy(
        minimal(approvals={"temporary": 1, "permanent": 2, "large_change": {"above_gpus": 8, "required": 3}})
    ).teams["t"]
    assert approvals_required(team, delta=4, permanent=False) == 1
    assert approvals_required(team, delta=4, permanent=True) == 2
    assert approvals_required(team, delta=9, permanent=False) == 3
    assert approvals_required(team, delta=-9, permanent=False) == 3
    assert approvals_required(team, delta=4, permanent=False, over_budget=True) == 2
    assert approvals_required(team, delta=-4, permanent=False, over_budget=True) == 1


def test_limits() -> None:
    policy = parse_policy(minimal(limits={"max_gpus_per_namespace": 10, "max_duration": "7d"}))
    assert limit_problems(policy, "ns-a", current=4, delta=4, duration=timedelta(days=3)) == []
    assert limit_problems(policy, "ns-a", current=4, delta=7, duration=None) == ["ns-a may hold at most 10 GPUs; 4 +7 = 11"]
    assert "at most 1w (asked for 8d)" in limit_problems(policy, "ns-a", current=4, delta=1, duration=timedelta(days=8))[0]
    assert "cannot go down" in limit_problems(policy, "ns-a", current=4, delta=-5, duration=None)[0]
    assert "nothing to change" in limit_problems(policy, "ns-a", current=4, delta=0, duration=None)[0]
    # Going down is always allowed, even from above the limit.
    assert limit_problems(policy, "ns-a", current=12, delta=-1, duration=None) == []


def test_auto_approval_only_for_small_short_increases_within_capacity() -> None:
    team = parse_policy(minimal(auto_approve={"max_gpus": 1, "max_duration": "4h"})).teams["t"]
    four_hours = timedelta(hours=4)

    def approved(*, gpus: int = 1, length: timedelta | None = four_hours, capacity: bool = True) -> bool:
        check = AutoApprovalCheck(
            gpus=gpus,
            grant_length=length,
            gpu_hours=0.0,
            active_auto_gpus=0,
            auto_gpu_hours_today=0.0,
            over_budget=False,
            within_capacity=capacity,
        )
        verdict = auto_approval(team, check)
        return verdict is not None and verdict.approved

    assert approved()
    assert not approved(gpus=2)
    assert not approved(length=timedelta(hours=5))
    assert not approved(length=None)
    assert not approved(capacity=False)
    assert not approved(gpus=-1)
    no_rule = parse_policy(minimal()).teams["t"]
    assert no_rule.auto_approve is None


@pytest.mark.parametrize("cron", ["99 * * * *", "*/0 * * * *", "0 25 * * *", "0 9 * * 8", "5-1 * * * *"])
def test_a_cron_apscheduler_cannot_run_is_a_policy_error_naming_the_schedule(cron: str) -> None:
    with pytest.raises(PolicyError) as error:
        parse_policy({**minimal(), "schedules": {"budget_warnings": cron}}, source="p.yaml")
    (line,) = str(error.value).splitlines()
    assert line.startswith("p.yaml: schedules.budget_warnings: ") and f"'{cron}' is not a valid cron expression" in line


def test_valid_crons_with_names_and_ranges_load() -> None:
    policy = parse_policy({**minimal(), "schedules": {"digest": "30 8 * * mon-fri", "idle_nudges": "*/15 8-18 * * *"}})
    assert policy.schedules.digest == "30 8 * * mon-fri"


MIG = "nvidia.com/mig-3g.40gb"
QUEUE = {"name": "frontier-cq", "flavor": "h100"}


def test_a_namespace_governs_whole_gpus_unless_the_policy_names_its_resources() -> None:
    policy = parse_policy(minimal())
    assert policy.governed_resources("ns-a") == ("nvidia.com/gpu",)
    assert policy.governed_resources("not-managed") == ()
    assert policy.cluster_queue("ns-a") is None and policy.cluster_queues() == []


def test_a_namespace_s_resources_replace_the_team_s_in_policy_order() -> None:
    policy = parse_policy(
        minimal(resources=["nvidia.com/gpu", MIG], namespaces=["ns-a", {"name": "ns-b", "resources": ["amd.com/gpu"]}])
    )
    assert policy.governed_resources("ns-a") == ("nvidia.com/gpu", MIG)
    assert policy.governed_resources("ns-b") == ("amd.com/gpu",)
    assert policy.all_governed_resources() == ("amd.com/gpu", "nvidia.com/gpu", MIG)
    assert policy.governed("ns-b", "nvidia.com/gpu") is None


def test_limits_per_resource_fall_back_from_the_resource_to_the_namespace_to_the_team() -> None:
    policy = parse_policy(
        {
            "defaults": {"default_quota": 1},
            "teams": {
                "t": {
                    **minimal()["teams"]["t"],
                    "limits": {"max_gpus_per_namespace": 10},
                    "resources": ["nvidia.com/gpu", {"name": MIG, "max_gpus": 4, "default_quota": 2}],
                    "namespaces": ["ns-a", {"name": "ns-b", "max_gpus": 6, "default_quota": 3}],
                }
            },
        }
    )
    assert (policy.max_gpus("ns-a"), policy.max_gpus("ns-a", MIG)) == (10, 4)
    assert (policy.max_gpus("ns-b"), policy.max_gpus("ns-b", resource=MIG)) == (6, 4)
    assert (policy.default_quota("ns-a"), policy.default_quota("ns-a", MIG)) == (1, 2)
    assert (policy.default_quota("ns-b"), policy.default_quota("ns-b", resource=MIG)) == (3, 2)


def test_limit_problems_are_per_resource_and_refuse_a_resource_not_governed() -> None:
    policy = parse_policy(minimal(resources=["nvidia.com/gpu", {"name": MIG, "max_gpus": 4}]))
    assert limit_problems(policy, "ns-a", current=2, delta=3, duration=None, resource=MIG) == [
        "ns-a may hold at most 4 mig-3g.40gb; 2 +3 = 5"
    ]
    assert limit_problems(policy, "ns-a", current=2, delta=3, duration=None) == []
    assert limit_problems(policy, "ns-a", current=0, delta=1, duration=None, resource="amd.com/gpu") == [
        f"ns-a does not govern amd.com/gpu; it governs nvidia.com/gpu, {MIG}"
    ]


def test_a_resource_kept_in_a_cluster_queue_is_listed_with_its_namespace() -> None:
    policy = parse_policy(
        minimal(
            namespaces=[
                {
                    "name": "ns-a",
                    "resources": [{"name": "nvidia.com/gpu", "cluster_queue": {**QUEUE, "adjust_borrowing_limit": True}}],
                },
                {"name": "ns-b", "resources": [MIG, {"name": "nvidia.com/gpu", "cluster_queue": {**QUEUE, "flavor": "a100"}}]},
            ]
        )
    )
    queue_a = policy.cluster_queue("ns-a")
    assert queue_a is not None and (queue_a.name, queue_a.flavor, queue_a.adjust_borrowing_limit) == ("frontier-cq", "h100", True)
    assert policy.cluster_queue("ns-b", resource=MIG) is None
    assert [(ns, resource, ref.flavor) for ns, resource, ref in policy.cluster_queues()] == [
        ("ns-a", "nvidia.com/gpu", "h100"),
        ("ns-b", "nvidia.com/gpu", "a100"),
    ]


@pytest.mark.parametrize(
    ("resources", "complaint"),
    [
        (["nvidia.com/mig-3g40gb"], "'nvidia.com/mig-3g40gb' is not a MIG profile: did you mean nvidia.com/mig-3g.40gb?"),
        (["nvidia.com/mig-1g.10gb+me"], "did you mean nvidia.com/mig-1g.10gb.me?"),
        (["nvidia.com/mig-9g.40gb"], "nvidia.com/mig-<g>g.<memory>gb, g from 1 to 7"),
        (["requests.nvidia.com/gpu"], "is a quota key: name the resource alone ('nvidia.com/gpu')"),
        (["gpu"], "'gpu' is not an extended resource name"),
        (["nvidia.com/gpu", MIG, "nvidia.com/gpu"], "nvidia.com/gpu listed more than once"),
        ([], "name at least one resource"),
        ([{"name": MIG, "max_gpus": -1}], "resources.0.max_gpus"),
        (
            [{"name": MIG, "cluster_queue": {"name": "Frontier CQ", "flavor": "h100"}}],
            "'Frontier CQ' is not a Kubernetes object name",
        ),
        ([{"name": MIG, "cluster_queue": {"name": "cq"}}], "cluster_queue.flavor"),
        ([{"name": MIG, "queue": "cq"}], "resources.0.queue"),
    ],
)
def test_bad_resources_are_refused_with_the_spelling_they_need(resources: list, complaint: str) -> None:
    with pytest.raises(PolicyError) as error:
        parse_policy(minimal(resources=resources), source="p.yaml")
    assert complaint in str(error.value) and "p.yaml: teams.t.resources" in str(error.value)


def test_one_cluster_queue_flavor_and_resource_may_serve_only_one_namespace() -> None:
    shared = [{"name": "nvidia.com/gpu", "cluster_queue": QUEUE}]
    with pytest.raises(PolicyError) as error:
        parse_policy(minimal(namespaces=["ns-a", "ns-b"], resources=shared))
    assert "the ClusterQueue frontier-cq (flavor h100, nvidia.com/gpu) serves both ns-a and ns-b" in str(error.value)
    assert "one base quota per namespace and resource" in str(error.value)
    # Another resource of the same flavor, or another flavor, is another base.
    parse_policy(
        minimal(
            namespaces=[
                {"name": "ns-a", "resources": shared},
                {"name": "ns-b", "resources": [{"name": MIG, "cluster_queue": QUEUE}]},
            ]
        )
    )
