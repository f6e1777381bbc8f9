"""The ledger per namespace x model x capacity type x pool (issue 25): each day keeps its price at each placement,
the sums in the database give what the rows give, budgets count every placement, the request card's price is
the average where the namespace ran over 7 days, and the days that could not be split are told."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.models import Base
from bot.clock import ManualClock
from bot.domain.capacity import ON_DEMAND, ON_DEMAND_PLACEMENT, SPOT, Placement, SplitState
from bot.domain.costs import add_lines
from bot.domain.policy import Policy, parse_policy
from bot.domain.prices import Basis, PlacementShare
from bot.sandbox.history import A100, H100
from bot.services.ledger import Ledger, export_rows
from bot.services.pricing import Pricer

DAYS = [date(2026, 11, d) for d in (1, 2, 3)]
NOW = datetime(2026, 11, 4, 9, tzinfo=timezone.utc)
POOL = "example.com/gpu-pool"


def policy(**pricing: object) -> Policy:
    return parse_policy(
        {
            "pricing": {"models": {A100: 2.0, H100: 4.0}, **pricing},
            "teams": {"research": {"channel": "C1", "namespaces": ["ns-a", "ns-b"], "approvers": {"users": ["U1"]}}},
        }
    )


PRICED = {"spot": {"models": {H100: 1.5}}, "pool_label": POOL, "pools": {"on-prem": {"default_per_gpu_hour": 0.5}}}


def row(
    day: date, namespace: str, model: str, hours: float, price: float, capacity: str = "on-demand", pool: str = ""
) -> dict[str, object]:
    return {
        "day": day,
        "namespace": namespace,
        "model": model,
        "team": "research",
        "cost_center": None,
        "allocated_hours": hours,
        "idle_hours": hours / 4,
        "observed_hours": hours,
        "util_hours": hours / 2,
        "price": price,
        "cost": hours * price,
        "idle_cost": hours / 4 * price,
        "capacity_type": capacity,
        "pool": pool,
    }


def filled(the_policy: Policy, splits: dict[date, str | None] | None = None) -> tuple[Ledger, Database]:
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    for day in DAYS:
        entries = [
            row(day, "ns-a", H100, 24.0, 1.5, "spot"),  # half on spot
            row(day, "ns-a", H100, 24.0, 4.0),  # half on-demand
            row(day, "ns-b", A100, 12.0, 0.5, "on-demand", "on-prem"),
            row(day, "ns-b", A100, 12.0, 2.0),
        ]
        split = (splits or {}).get(day, SplitState.SPLIT.value)
        database.run(
            lambda repo, day=day, entries=entries, split=split: repo.replace_ledger_day(
                day,
                status="recorded",
                recorded_at=NOW,
                ksm_spacing=300.0,
                dcgm_spacing=60.0,
                entries=entries,
                split=split,
            )
        )
    return Ledger(policy=the_policy, metrics=None, database=database, clock=ManualClock(NOW)), database


def test_the_sums_keep_each_placement_and_match_the_rows() -> None:
    ledger, _ = filled(policy(**PRICED))
    summary = ledger.summary(DAYS[0], DAYS[-1])
    days, _ = ledger.lines(DAYS[0], DAYS[-1])
    for namespace in ("ns-a", "ns-b"):
        one_by_one = add_lines([per_ns[namespace] for per_ns in days.values()])
        summed = summary.month[namespace]
        assert summed.cost == pytest.approx(one_by_one.cost)
        assert {p: pytest.approx((f.gpu.hours, f.cost)) for p, f in summed.placements().items()} == {
            p: (f.gpu.hours, f.cost) for p, f in one_by_one.placements().items()
        }
    a = summary.month["ns-a"].placements()
    assert (a[Placement(SPOT)].gpu.hours, a[Placement(SPOT)].cost) == (72.0, 108.0)
    assert (a[ON_DEMAND_PLACEMENT].gpu.hours, a[ON_DEMAND_PLACEMENT].cost) == (72.0, 288.0)
    b = summary.month["ns-b"].placements()
    assert b[Placement(ON_DEMAND, "on-prem")].cost == pytest.approx(18.0)
    assert summary.month["ns-a"].by_model == {H100: (144.0, 396.0)}  # the models' figures add every placement
    assert ledger.team_day_costs(DAYS[0], DAYS[-1])["research"] == pytest.approx({day: 36 + 96 + 6 + 24 for day in DAYS})


def test_the_export_adds_capacity_type_and_pool_after_the_columns_it_had() -> None:
    ledger, _ = filled(policy(**PRICED))
    rows = export_rows(ledger, DAYS[0], currency="USD")
    assert list(rows[0])[-4:] == ["resource", "cluster", "capacity_type", "pool"]
    assert {(r["namespace"], r["capacity_type"], r["pool"], r["price_per_gpu_hour"]) for r in rows} == {
        ("ns-a", "spot", "", 1.5),
        ("ns-a", "on-demand", "", 4.0),
        ("ns-b", "on-demand", "on-prem", 0.5),
        ("ns-b", "on-demand", "", 2.0),
    }


def test_the_cards_price_averages_where_the_namespace_ran_at_todays_prices() -> None:
    the_policy = policy(**PRICED)
    ledger, database = filled(the_policy)
    pricer = Pricer(policy=the_policy, database=database, cluster=None, clock=ManualClock(NOW))
    price = pricer.price("ns-a")
    assert price.basis == Basis.RAN_ON and price.models == (H100,)
    assert price.per_gpu_hour == pytest.approx((1.5 + 4.0) / 2)
    assert price.placements == (PlacementShare(ON_DEMAND_PLACEMENT, 0.5), PlacementShare(Placement(SPOT), 0.5))
    onprem = pricer.price("ns-b")
    assert onprem.per_gpu_hour == pytest.approx((0.5 + 2.0) / 2)
    assert onprem.placements[0].placement in {ON_DEMAND_PLACEMENT, Placement(ON_DEMAND, "on-prem")}
    # Today's prices: spot at the on-demand price once the policy no longer prices spot, and no shares then.
    plain = Pricer(policy=policy(), database=database, cluster=None, clock=ManualClock(NOW)).price("ns-a")
    assert plain.per_gpu_hour == pytest.approx(4.0) and plain.placements[0].share == 0.5


def test_days_that_could_not_be_split_are_told_only_when_prices_depend_on_the_node() -> None:
    splits = {DAYS[0]: None, DAYS[1]: SplitState.NO_CAPACITY_LABELS.value, DAYS[2]: SplitState.NO_CAPACITY_LABELS.value}
    ledger, database = filled(policy(**PRICED), splits)
    (fact,) = ledger.unsplit(DAYS[0], DAYS[-1])  # 1 Nov: recorded before the split was kept, not said
    assert (fact.state, fact.days, fact.cluster) == (SplitState.NO_CAPACITY_LABELS, tuple(DAYS[1:]), "")
    assert fact.flag.endswith(f"node.kubernetes.io/lifecycle,{POOL}]")
    plain = Ledger(policy=policy(), metrics=None, database=database, clock=ManualClock(NOW))
    assert plain.unsplit(DAYS[0], DAYS[-1]) == []


def test_recording_a_day_again_replaces_every_placement_of_it() -> None:
    ledger, database = filled(policy(**PRICED))
    database.run(
        lambda repo: repo.replace_ledger_day(
            DAYS[0],
            status="recorded",
            recorded_at=NOW + timedelta(hours=1),
            ksm_spacing=300.0,
            dcgm_spacing=60.0,
            entries=[row(DAYS[0], "ns-a", H100, 48.0, 4.0)],
        )
    )
    entries = ledger.entries(DAYS[0], DAYS[0])
    assert [(e.namespace, e.use.placement, e.use.cost) for e in entries] == [("ns-a", ON_DEMAND_PLACEMENT, 192.0)]
