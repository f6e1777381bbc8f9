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
