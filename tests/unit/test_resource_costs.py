"""Costs per resource (issue 20): each governed resource in its own hours at its own price, MIG slices never
added to GPUs, money added across all of them; the pure maths, the Prometheus rows' grouping and the words."""

from __future__ import annotations

import json
from datetime import date, timedelta
from fractions import Fraction

import pytest

from bot.adapters.prometheus import _usage_of, dcgm_resource, requests_selector
from bot.adapters.slack.prices import render_price
from bot.adapters.slack.replies import cost_lines
from bot.adapters.slack.reports import digest_report
from bot.adapters.slack.resource_words import hours_of, resource_label
from bot.domain import prices
from bot.domain.capacity import ON_DEMAND_PLACEMENT
from bot.domain.costs import NamespaceUsage, ResourceCost, add_lines, model_uses, price
from bot.domain.policy import PolicyError, Pricing, parse_policy
from bot.domain.prices import Basis, Price
from bot.domain.resources import GPU
from bot.services.ledger import CostAnswer
from bot.services.messages import IdleNudge, from_json, to_json
from bot.services.reports import TeamDigest
from tests.unit.test_jobs import make_jobs, policy_dict
from tests.unit.test_pricing import entry, pricer

A100, H100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
MIG3, MIG1 = "nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb"
PRICING = Pricing(default_per_gpu_hour=0.70, models={A100: 2.80, H100: 4.20}, resources={"amd.com/gpu": 2.0, MIG1: 0.5})


# --- the price of an hour of each resource -----------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "model", "expected"),
    [
        (GPU, A100, 2.80),  # whole GPUs: the model's price, as before
        (GPU, None, 0.70),
        (MIG3, A100, 2.80 * 3 / 7),  # not listed: the parent's price times the profile's compute fraction
        (MIG3, H100, 4.20 * 3 / 7),
        (MIG3, None, 0.70 * 3 / 7),  # parent model unknown: the default GPU price's share
        ("nvidia.com/mig-1g.10gb.me", A100, 2.80 / 7),
        (MIG1, A100, 0.5),  # listed: what the policy says, whatever the model
        ("amd.com/gpu", None, 2.0),
        ("gpu.intel.com/i915", None, 0.70),  # anything else: like a GPU of an unknown model
        ("nvidia.com/gpu.shared", A100, 2.80),
    ],
)
def test_an_hour_of_each_resource_has_its_price(resource: str, model: str | None, expected: float) -> None:
    assert PRICING.per_hour(resource, model) == pytest.approx(expected)


def test_only_a_mig_profile_without_a_price_is_priced_as_a_share_of_its_gpu() -> None:
    assert PRICING.derived_fraction(MIG3) == Fraction(3, 7)
    assert PRICING.derived_fraction(MIG1) is None  # listed
    assert PRICING.derived_fraction(GPU) is None and PRICING.derived_fraction("amd.com/gpu") is None


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ({"mig-3g.40gb": 1.0}, "not extended resource names"),
        ({GPU: 3.0}, "priced per GPU model"),
        ({MIG3: -1.0}, "cannot be negative"),
    ],
)
def test_a_wrong_resource_price_is_refused_naming_it(prices: dict[str, float], message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_policy({"pricing": {"resources": prices}})


# --- usage priced per resource --------------------------------------------------------------------


def mixed_usage() -> NamespaceUsage:
    """24 whole A100-hours, and 48 slice-hours of 3g.40gb on A100s (10 of them idle)."""
    mig = NamespaceUsage(48.0, {A100: 48.0}, {A100: 10.0}, 12.0, util_model_hours={A100: 12.0})
    return NamespaceUsage(24.0, {A100: 24.0}, {}, 18.0, util_model_hours={A100: 18.0}, other_resources={MIG3: mig})


def test_slices_are_priced_apart_and_never_counted_as_gpus() -> None:
    line = price("ns", "team", mixed_usage(), PRICING)
    assert line.gpu_hours == 24.0 and line.by_model == {A100: (24.0, pytest.approx(67.2))}
    assert line.utilisation == pytest.approx(0.75) and line.idle_hours == 0.0  # whole GPUs' own figures
    assert line.by_resource[MIG3] == ResourceCost(48.0, pytest.approx(57.6), 10.0, pytest.approx(12.0), 48.0, 12.0)
    assert line.cost == pytest.approx(67.2 + 57.6)  # money of every resource: the team's spend
    assert set(line.other_resources) == {MIG3}


def test_the_ledger_rows_are_per_resource_and_give_the_same_line() -> None:
    uses = model_uses(mixed_usage(), PRICING)
    assert [(u.resource, u.model, u.allocated_hours, round(u.price, 4)) for u in uses] == [
        (GPU, A100, 24.0, 2.8),
        (MIG3, A100, 48.0, 1.2),
    ]
    two_days = add_lines([price("ns", "t", mixed_usage(), PRICING)] * 2)
    assert two_days.by_resource[MIG3].hours == 96.0 and two_days.gpu_hours == 48.0


def test_a_namespace_with_slices_only_has_no_whole_gpu_part() -> None:
    usage = NamespaceUsage(other_resources={MIG3: NamespaceUsage(7.0, {H100: 7.0})})
    assert usage.held and list(usage.by_resource()) == [MIG3]
    line = price("ns", "t", usage, PRICING)
    assert line.gpu_hours == 0.0 and line.by_model == {} and list(line.by_resource) == [MIG3]
    assert not NamespaceUsage(0.0, {A100: 3.0}).held  # DCGM saw a GPU, no running pod requested it


# --- what Prometheus answers, grouped ----------------------------------------------------------------


def test_kube_state_metrics_is_asked_for_the_governed_resources_exactly() -> None:
    assert requests_selector([GPU]) == 'kube_pod_container_resource_requests{resource="nvidia_com_gpu", unit="integer", node!=""}'
    assert 'resource=~"nvidia_com_gpu|nvidia_com_mig_3g_40gb"' in requests_selector([MIG3, GPU])


def test_a_dcgm_series_counts_for_its_mig_profile_or_whole_gpus() -> None:
    assert dcgm_resource({"GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "2"}) == MIG3
    assert dcgm_resource({"GPU_I_PROFILE": "1g.10gb+me"}) == "nvidia.com/mig-1g.10gb.me"
    assert dcgm_resource({"GPU_I_PROFILE": ""}) == GPU and dcgm_resource({}) == GPU
    assert dcgm_resource({"GPU_I_PROFILE": "<<<NULL>>>"}) is None


def test_rows_of_several_resources_make_one_usage_per_namespace() -> None:
    here = ON_DEMAND_PLACEMENT
    rows = [  # (namespace key, labels, resource, hours, where it ran)
        ("ns", {"namespace": "ns", "modelName": A100, "measure": "hours"}, GPU, 24.0, here),
        ("ns", {"namespace": "ns", "modelName": A100, "GPU_I_PROFILE": "3g.40gb", "measure": "hours"}, MIG3, 48.0, here),
        ("ns", {"namespace": "ns", "modelName": A100, "GPU_I_PROFILE": "3g.40gb", "measure": "idle_hours"}, MIG3, 10.0, here),
        ("mig-only", {"namespace": "mig-only", "modelName": H100, "measure": "hours"}, MIG3, 5.0, here),
    ]
    usage = _usage_of({("ns", GPU, here): 24.0, ("ns", MIG3, here): 48.0, ("mig-only", MIG3, here): 5.0}, rows)
    assert usage["ns"].allocated_hours == 24.0 and usage["ns"].model_hours == {A100: 24.0}
    assert usage["ns"].other_resources[MIG3].allocated_hours == 48.0
    assert usage["ns"].other_resources[MIG3].idle_model_hours == {A100: 10.0}
    assert usage["mig-only"].allocated_hours == 0.0 and usage["mig-only"].other_resources[MIG3].model_hours == {H100: 5.0}


# --- the words ---------------------------------------------------------------------------------------


def team_digest(lines: list) -> TeamDigest:  # type: ignore[type-arg]
    team = parse_policy({"teams": {"ops": {"channel": "C1", "namespaces": ["ns"], "approvers": {"users": ["U1"]}}}}).teams["ops"]
    return TeamDigest(
        team, date(2026, 11, 2), "USD", lines, lines, [], {}, None, sum(x.cost for x in lines), 0.0, None, None, [], []
    )


def test_the_digest_shows_each_resource_beside_whole_gpus() -> None:
    pricing = Pricing(models={A100: 2.0}, resources={MIG3: 2.0})
    report = digest_report(team_digest([price("ns", "ops", mixed_usage(), pricing)]), with_chart=False)
    sections = {s.heading: list(s.lines) for s in report.sections}
    assert sections["Per resource (month to date)"] == [
        "Whole GPUs: 24 GPU-hours, 48.00 USD",
        "MIG 3g.40gb: 48 slice-hours, 96.00 USD (idle 10 slice-hours, 20.00 USD)",
    ]
    assert sections["Per GPU model (month to date)"] == [f"{A100}: 24.0 GPU-h · 48.00 USD"]  # whole GPUs only
    assert sections["Per namespace"] == [
        "*ns*: yesterday 24.0 GPU-h and 48.0 slice-h MIG 3g.40gb · 144.00 USD"
        " · month 24.0 GPU-h and 48.0 slice-h MIG 3g.40gb · 144.00 USD"
    ]


def test_a_digest_of_whole_gpus_only_reads_as_before() -> None:
    usage = NamespaceUsage(24.0, {A100: 24.0}, {}, 12.0, util_model_hours={A100: 12.0})
    report = digest_report(team_digest([price("ns", "ops", usage, Pricing(models={A100: 2.0}))]), with_chart=False)
    assert [s.heading for s in report.sections] == [
        "Per namespace",
        "Per GPU model (month to date)",
        "Utilisation and idle GPUs (month to date)",
    ]
    assert report.summary == "Yesterday *24.0 GPU-h · 48.00 USD*. Month to date *24.0 GPU-h · 48.00 USD*."


def test_the_cost_command_lists_the_other_resources() -> None:
    line = price("research", "research", mixed_usage(), Pricing(models={A100: 2.0}, resources={MIG3: 2.0}))
    answer = CostAnswer("Research", date(2026, 11, 1), date(2026, 11, 2), line, None, [])
    lines = cost_lines(answer, "USD")
    assert lines[0] == "*Research* · November 2026 (through Nov 2): 24.0 GPU-h and 48.0 slice-h MIG 3g.40gb · 144.00 USD"
    assert lines[-1] == "MIG 3g.40gb: 48 slice-hours, 96.00 USD (idle 10 slice-hours, 20.00 USD)"


def test_resources_are_named_as_people_know_them() -> None:
    assert [resource_label(r) for r in (GPU, MIG3, "nvidia.com/mig-1g.10gb.me", "amd.com/gpu")] == [
        "Whole GPUs",
        "MIG 3g.40gb",
        "MIG 1g.10gb+me",
        "amd.com/gpu",
    ]
    assert hours_of({"amd.com/gpu": ResourceCost(hours=3.0)}, 0.0) == "3.0 h amd.com/gpu"


# --- the price a request's card shows ------------------------------------------------------------------


def test_a_mig_price_says_it_is_a_share_of_its_gpus_price() -> None:
    ran_on = Price(1.2, Basis.RAN_ON, (A100,), "USD", 7, share=Fraction(3, 7))
    assert render_price(ran_on) == f"at 1.20 USD/h, 3/7 of the {A100} price this namespace ran on"
    assert (
        render_price(Price(0.3, Basis.DEFAULT, (), "USD", 7, share=Fraction(3, 7))) == "at 0.30 USD/h, 3/7 of the default price"
    )
    assert render_price(Price(1.1, Basis.LISTED, (), "USD", 7)) == "at 1.10 USD/h, the price the policy lists for it"


def test_a_stored_basis_keeps_its_share_and_one_stored_before_has_none() -> None:
    basis = prices.CostBasis(grant=True, price=Price(1.2, Basis.RAN_ON, (A100,), "USD", 7, share=Fraction(3, 7)))
    assert prices.from_text(prices.to_text(basis)) == basis
    before = '{"cost_basis":"CostBasis","grant":true,"named":false,"rate":2.0,"basis":"ran_on","models":["A"],"unnamed":0,"currency":"USD","days":7}'
    stored = prices.from_text(before)
    assert isinstance(stored, prices.CostBasis) and stored.price.share is None


def test_an_idle_nudge_queued_before_mig_pricing_is_read_as_it_was() -> None:
    nudge = IdleNudge("ns", 2, 5.0, timedelta(hours=6), 0.01, 12.0, 24.0, "USD", Price(2.0, Basis.DEFAULT, (), "USD", 7))
    stored = to_json(nudge)
    del stored["fields"]["price_basis"]["share"]  # what the outbox held before the field existed
    assert from_json(json.loads(json.dumps(stored))) == nudge
    with_share = IdleNudge(
        "ns", 2, 5.0, timedelta(hours=6), 0.01, 12.0, 24.0, "USD", Price(0.9, Basis.DEFAULT, (), "USD", 7, share=Fraction(3, 7))
    )
    assert from_json(json.loads(json.dumps(to_json(with_share)))) == with_share


def test_the_pricer_prices_a_mig_request_by_the_slices_the_namespace_ran_on() -> None:
    raw = policy_dict()
    raw["pricing"]["resources"] = {MIG1: 0.5}
    jobs = make_jobs(raw)
    yesterday = jobs.clock.now().date() - timedelta(days=1)
    mig_row = entry(yesterday, "ai-frontier-research", H100, 70.0) | {"resource": MIG3}
    gpu_row = entry(yesterday, "ai-frontier-research", A100, 10.0)
    jobs.database.run(
        lambda repo: repo.replace_ledger_day(
            yesterday,
            status="recorded",
            recorded_at=jobs.clock.now(),
            ksm_spacing=None,
            dcgm_spacing=None,
            entries=[mig_row, gpu_row],
        )
    )
    mig = pricer(jobs).price("ai-frontier-research", MIG3)
    h100 = raw["pricing"]["models"][H100]
    assert (mig.basis, mig.models, mig.share) == (Basis.RAN_ON, (H100,), Fraction(3, 7))
    assert mig.per_gpu_hour == pytest.approx(h100 * 3 / 7)  # the slices ran on H100s, not the A100s of the whole GPUs
    assert pricer(jobs).price("ai-frontier-research").models == (A100,)  # whole GPUs: the slices are not counted
    assert pricer(jobs).price("ai-frontier-research", MIG1).basis == Basis.LISTED
    assert pricer(jobs).price("ai-frontier-research", "nvidia.com/mig-2g.20gb").share == Fraction(2, 7)
