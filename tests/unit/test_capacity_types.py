"""Where a GPU-hour ran (issue 25): each provider's capacity-type labels, unknown values, pools, kube-state-metrics'
label names, the price of a GPU-hour at each placement, and usage and cost lines split by placement."""

from __future__ import annotations

from fractions import Fraction

import pytest

from bot.domain import prices
from bot.domain.capacity import (
    CAPACITY_LABELS,
    ON_DEMAND,
    ON_DEMAND_PLACEMENT,
    SPOT,
    NodeReading,
    Placement,
    SplitState,
    allowlist_flag,
    ksm_label_name,
    node_label_facts,
    placement_of,
    read_node,
    split_state,
)
from bot.domain.costs import NamespaceUsage, add_lines, line_of, model_uses, placed_usage, price
from bot.domain.policy import PolicyError, parse_policy
from bot.domain.prices import Basis, PlacementShare, Price
from bot.domain.proposals import DAYS_PER_MONTH, spot_saving

A100, H100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
POOL = "example.com/gpu-pool"


# --- reading a node's labels --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "value", "capacity"),
    [
        ("karpenter.sh/capacity-type", "spot", SPOT),
        ("karpenter.sh/capacity-type", "on-demand", ON_DEMAND),
        ("karpenter.sh/capacity-type", "reserved", ON_DEMAND),
        ("eks.amazonaws.com/capacityType", "SPOT", SPOT),
        ("eks.amazonaws.com/capacityType", "ON_DEMAND", ON_DEMAND),
        ("eks.amazonaws.com/capacityType", "CAPACITY_BLOCK", ON_DEMAND),
        ("cloud.google.com/gke-spot", "true", SPOT),
        ("cloud.google.com/gke-preemptible", "true", SPOT),
        ("cloud.google.com/gke-spot", "false", ON_DEMAND),
        ("kubernetes.azure.com/scalesetpriority", "spot", SPOT),
        ("kubernetes.azure.com/scalesetpriority", "regular", ON_DEMAND),
        ("node.kubernetes.io/lifecycle", "spot", SPOT),
        ("node.kubernetes.io/lifecycle", "Ec2Spot", SPOT),
        ("node.kubernetes.io/lifecycle", "normal", ON_DEMAND),
    ],
)
def test_each_providers_label_says_how_the_node_is_bought(label: str, value: str, capacity: str) -> None:
    assert read_node({label: value}) == NodeReading(capacity=ON_DEMAND if capacity == ON_DEMAND else SPOT)


def test_a_value_no_provider_writes_is_unknown_and_priced_on_demand() -> None:
    reading = read_node({"node.kubernetes.io/lifecycle": "weird"})
    assert reading == NodeReading(None, (("node.kubernetes.io/lifecycle", "weird"),))
    assert placement_of(reading) == ON_DEMAND_PLACEMENT


def test_a_node_without_the_labels_is_on_demand_and_the_first_understood_label_decides() -> None:
    assert read_node({}) == NodeReading(None) and placement_of(read_node({})) == ON_DEMAND_PLACEMENT
    both = read_node({"karpenter.sh/capacity-type": "spot", "node.kubernetes.io/lifecycle": "normal", "x": "y"})
    assert both.capacity == SPOT and not both.unknown
    named = read_node({"karpenter.sh/capacity-type": "bogus", "eks.amazonaws.com/capacityType": "SPOT"})
    assert named.capacity == SPOT and named.unknown == (("karpenter.sh/capacity-type", "bogus"),)


def test_a_pool_the_policy_prices_wins_over_the_capacity_type_and_another_is_priced_by_it() -> None:
    spot_pool = read_node({POOL: "on-prem", "karpenter.sh/capacity-type": "spot"}, POOL)
    assert spot_pool.pool == "on-prem" and placement_of(spot_pool, ["on-prem"]) == Placement(SPOT, "on-prem")
    assert placement_of(read_node({POOL: "gpu-cloud"}, POOL), ["on-prem"]) == ON_DEMAND_PLACEMENT
    assert read_node({POOL: "on-prem"}).pool is None  # no pool label in the policy: no pool


def test_kube_state_metrics_names_the_labels_as_it_sanitises_them() -> None:
    assert ksm_label_name("karpenter.sh/capacity-type") == "label_karpenter_sh_capacity_type"
    assert ksm_label_name("eks.amazonaws.com/capacityType") == "label_eks_amazonaws_com_capacity_type"
    assert ksm_label_name("kubernetes.azure.com/scalesetpriority") == "label_kubernetes_azure_com_scalesetpriority"
    assert ksm_label_name("example.com/gpuPool") == "label_example_com_gpu_pool"
    flag = allowlist_flag(POOL)
    assert flag == "--metric-labels-allowlist=nodes=[" + ",".join([*CAPACITY_LABELS, POOL]) + "]"
    assert allowlist_flag().endswith("node.kubernetes.io/lifecycle]")


def test_the_split_is_unavailable_without_node_labels_and_without_the_capacity_labels() -> None:
    assert split_state([]) == SplitState.NO_NODE_LABELS
    assert split_state([{}, {"kubernetes.io/os": "linux"}]) == SplitState.NO_CAPACITY_LABELS
    assert split_state([{}, {"cloud.google.com/gke-spot": "true"}]) == SplitState.SPLIT
    assert split_state([{POOL: "on-prem"}], POOL) == SplitState.SPLIT
    assert split_state([{"node.kubernetes.io/lifecycle": "weird"}]) == SplitState.SPLIT  # labelled, if oddly


def test_check_config_facts_name_each_unknown_value_and_unpriced_pool_once() -> None:
    nodes = [
        {"node.kubernetes.io/lifecycle": "weird"},
        {"node.kubernetes.io/lifecycle": "weird", POOL: "gpu-cloud"},
        {POOL: "gpu-cloud"},
        {POOL: "on-prem"},
    ]
    facts = node_label_facts(nodes, pool_label=POOL, priced_pools=["on-prem"])
    assert facts.unknown_values == (("node.kubernetes.io/lifecycle", "weird"),)
    assert facts.unpriced_pools == ("gpu-cloud",) and facts.state == SplitState.SPLIT


# --- prices at each placement ---------------------------------------------------------------------------------


def pricing(**extra: object):  # noqa: ANN201 (the policy's Pricing)
    raw = {"teams": {}, "pricing": {"default_per_gpu_hour": 1.0, "models": {A100: 2.0, H100: 4.0}, **extra}}
    return parse_policy(raw).pricing


def test_every_existing_key_prices_as_before_and_spot_defaults_to_on_demand() -> None:
    plain = pricing()
    assert plain.price_for(H100) == plain.price_for(H100, Placement(SPOT)) == 4.0
    assert plain.price_for("other", Placement(SPOT)) == 1.0 and not plain.by_node


def test_spot_and_pool_prices_fall_back_model_then_default_then_on_demand() -> None:
    priced = pricing(
        spot={"models": {H100: 1.5}, "default_per_gpu_hour": 0.8},
        pool_label=POOL,
        pools={"on-prem": {"models": {A100: 0.4}}, "lab": {"default_per_gpu_hour": 0.3}},
    )
    assert priced.by_node
    assert priced.price_for(H100, Placement(SPOT)) == 1.5
    assert priced.price_for(A100, Placement(SPOT)) == 0.8  # not listed on spot: spot's default
    assert priced.price_for(A100, Placement(ON_DEMAND, "on-prem")) == 0.4
    assert priced.price_for(H100, Placement(SPOT, "on-prem")) == 4.0  # the pool lists no H100 and no default
    assert priced.price_for(H100, Placement(ON_DEMAND, "lab")) == 0.3
    assert priced.per_hour("nvidia.com/mig-3g.40gb", H100, Placement(SPOT)) == pytest.approx(1.5 * 3 / 7)
    assert pricing(spot={"models": {H100: 1.5}}).price_for(A100, Placement(SPOT)) == 2.0  # its on-demand price


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"pools": {"on-prem": {}}}, "pricing.pools needs pricing.pool_label"),
        ({"pool_label": POOL}, "pricing.pools prices no pool"),
        ({"pool_label": "not a label!", "pools": {"x": {}}}, "is not a Kubernetes label key"),
        ({"pool_label": POOL, "pools": {"on prem": {}}}, "not Kubernetes label values: on prem"),
        ({"spot": {"models": {H100: -1}}}, "a price cannot be negative"),
        ({"spot": {"preemptible_priority_classes": ["Batch Low"]}}, "not PriorityClass names"),
    ],
)
def test_the_policy_refuses_pricing_it_cannot_apply(extra: dict[str, object], says: str) -> None:
    with pytest.raises(PolicyError, match=says):
        pricing(**extra)


# --- usage and lines by placement ---------------------------------------------------------------------------


def mixed_usage() -> NamespaceUsage:
    """24 H100-hours on spot, 24 on-demand; DCGM saw the spot ones only as H100, the on-demand ones as A100."""
    return placed_usage(
        {
            Placement(SPOT): NamespaceUsage(24.0, {H100: 24.0}, {H100: 2.0}, 12.0, util_model_hours={H100: 12.0}),
            ON_DEMAND_PLACEMENT: NamespaceUsage(24.0, {A100: 24.0}, {}, 6.0, util_model_hours={A100: 6.0}),
        }
    )


def test_each_placement_is_priced_with_its_own_models_at_its_price() -> None:
    policy = pricing(spot={"models": {H100: 1.5}})
    usage = mixed_usage()
    assert usage.allocated_hours == 48.0 and usage.model_hours == {H100: 24.0, A100: 24.0}
    uses = model_uses(usage, policy)
    assert [(u.placement, u.model, u.allocated_hours, u.price, u.cost) for u in uses] == [
        (ON_DEMAND_PLACEMENT, A100, 24.0, 2.0, 48.0),
        (Placement(SPOT), H100, 24.0, 1.5, 36.0),
    ]
    line = line_of("ns", "t", uses)
    assert line.cost == 84.0 and line.split
    spots = line.placements()
    assert list(spots) == [ON_DEMAND_PLACEMENT, Placement(SPOT)]
    assert (spots[Placement(SPOT)].gpu.hours, spots[Placement(SPOT)].gpu.idle_hours, spots[Placement(SPOT)].cost) == (
        24.0,
        2.0,
        36.0,
    )
    month = add_lines([line, price("ns", "t", usage, policy)])
    assert month.placements()[Placement(SPOT)].cost == 72.0 and month.gpu_hours == 96.0


def test_a_usage_without_a_split_is_on_demand_as_it_always_was() -> None:
    usage = NamespaceUsage(10.0, {A100: 10.0})
    assert placed_usage({ON_DEMAND_PLACEMENT: usage}) == usage  # nothing kept: no split
    line = price("ns", "t", usage, pricing(spot={"models": {A100: 0.1}}))
    assert line.cost == 20.0 and not line.split and list(line.placements()) == [ON_DEMAND_PLACEMENT]


def test_a_placement_dcgm_did_not_see_takes_the_models_of_the_whole_resource() -> None:
    usage = placed_usage({Placement(SPOT): NamespaceUsage(10.0), ON_DEMAND_PLACEMENT: NamespaceUsage(10.0, {H100: 10.0})})
    uses = model_uses(usage, pricing(spot={"models": {H100: 1.0}}))
    assert [(u.placement.capacity, u.model, u.cost) for u in uses] == [(ON_DEMAND, H100, 40.0), (SPOT, H100, 10.0)]


# --- a price's placements, stored with the request ------------------------------------------------------------


def test_a_price_keeps_where_its_hours_ran_and_an_older_basis_reads_without() -> None:
    shares = (PlacementShare(Placement(SPOT), 0.7), PlacementShare(ON_DEMAND_PLACEMENT, 0.3))
    basis = prices.CostBasis(False, Price(2.1, Basis.RAN_ON, (H100,), "USD", 7, placements=shares))
    stored = prices.from_text(prices.to_text(basis))
    assert stored == prices.CostBasis(False, Price(2.1, Basis.RAN_ON, (H100,), "USD", 7, placements=shares[:1]))
    # The longest basis still fits requests.cost_basis (400): three long models, a share, a long pool.
    longest = Price(
        12345.678,
        Basis.RAN_ON,
        tuple("M" * 80 + str(i) for i in range(3)),
        "USD",
        7,
        unnamed=12,
        share=Fraction(3, 7),
        placements=(PlacementShare(Placement(SPOT, "p" * 63), 0.123456),),
    )
    assert len(prices.to_text(prices.CostBasis(True, longest, named=True))) <= 400
    older = prices.to_text(prices.CostBasis(True, Price(4.0, Basis.RAN_ON, (H100,), "USD", 7)))
    assert "placements" not in older and prices.from_text(older).price.placements == ()  # type: ignore[union-attr]


# --- spot in the strategy shift -------------------------------------------------------------------------------


def test_mostly_on_demand_preemptible_work_is_named_with_its_monthly_saving() -> None:
    saving = spot_saving(
        "ns", hours=280.0, shares={ON_DEMAND_PLACEMENT: 0.4, Placement(SPOT): 0.1}, gap_per_hour=2.5, window_days=14
    )
    assert saving is not None and saving.preemptible_hours == pytest.approx(140.0)
    assert saving.on_demand_share == pytest.approx(0.8)
    assert saving.saving_per_month == pytest.approx(140.0 * 0.8 * 2.5 / 14 * DAYS_PER_MONTH)


@pytest.mark.parametrize(
    ("shares", "gap"),
    [
        ({ON_DEMAND_PLACEMENT: 0.2, Placement(SPOT): 0.3}, 2.5),  # mostly on spot already
        ({ON_DEMAND_PLACEMENT: 0.5}, 0.0),  # spot costs the same: nothing to save
        ({}, 2.5),  # no preemptible work
    ],
)
def test_no_saving_is_named_when_spot_would_not_save(shares: dict[Placement, float], gap: float) -> None:
    assert spot_saving("ns", hours=280.0, shares=shares, gap_per_hour=gap, window_days=14) is None
