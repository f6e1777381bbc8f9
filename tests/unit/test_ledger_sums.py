"""The digest and the budget check read the ledger summed in the database (issue 10): the sums must give
what adding the rows one by one gives, a namespace that moved team counts for its team of today, and a
team's chart keeps its dearest namespaces and stacks the rest as "others"."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.models import Base
from bot.clock import ManualClock
from bot.domain.costs import add_lines
from bot.domain.policy import Policy, parse_policy
from bot.sandbox.history import A100, H100
from bot.services.ledger import CHART_NAMESPACES, OTHERS, Ledger

DAYS = [date(2026, 11, d) for d in (1, 2, 3)]
NAMESPACES = [f"ns-{i:02d}" for i in range(12)]


def policy() -> Policy:
    return parse_policy(
        {
            "pricing": {"models": {A100: 2.0, H100: 4.0}},
            "teams": {
                "big": {"channel": "C1", "namespaces": NAMESPACES[:11], "approvers": {"users": ["U1"]}},
                "small": {"channel": "C2", "namespaces": [NAMESPACES[11]], "approvers": {"users": ["U1"]}},
            },
        }
    )


def row(day: date, namespace: str, team: str, model: str, hours: float, price: float) -> dict[str, object]:
    return {
        "day": day,
        "namespace": namespace,
        "model": model,
        "team": team,
        "cost_center": None,
        "allocated_hours": hours,
        "idle_hours": hours / 4,
        "observed_hours": hours,
        "util_hours": hours / 2,
        "price": price,
        "cost": hours * price,
        "idle_cost": hours / 4 * price,
    }


@pytest.fixture
def ledger() -> Ledger:
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    return filled_ledger(database)


def filled_ledger(database: Database) -> Ledger:
    """Three days of 13 namespaces (tests/integration/test_postgres_ledger.py fills PostgreSQL with it)."""
    recorded_at = datetime(2026, 11, 4, tzinfo=timezone.utc)
    for index, day in enumerate(DAYS):
        entries = [
            row(day, ns, "big", A100 if i % 2 else H100, 1.0 + i + index, 2.0 if i % 2 else 4.0)
            for i, ns in enumerate(NAMESPACES[:11])
        ]
        # ns-11 belonged to "big" on 1 Nov and moved to "small" since: it counts for "small" now.
        entries.append(row(day, NAMESPACES[11], "big" if index == 0 else "small", A100, 10.0, 2.0))
        entries.append(row(day, "stray", "analytics (not managed)", H100, 1.0, 4.0))
        database.run(
            lambda repo, day=day, entries=entries: repo.replace_ledger_day(
                day, status="recorded", recorded_at=recorded_at, ksm_spacing=300.0, dcgm_spacing=300.0, entries=entries
            )
        )
    return Ledger(policy=policy(), metrics=None, database=database, clock=ManualClock(recorded_at))


def test_the_sums_in_the_database_match_adding_the_rows(ledger: Ledger) -> None:
    summary = ledger.summary(DAYS[0], DAYS[-1])
    days, teams = ledger.lines(DAYS[0], DAYS[-1])  # the rows one by one
    for namespace in [*NAMESPACES, "stray"]:
        one_by_one = add_lines([per_ns[namespace] for per_ns in days.values()])
        summed = summary.month[namespace]
        assert summed.cost == pytest.approx(one_by_one.cost) and summed.gpu_hours == pytest.approx(one_by_one.gpu_hours)
        assert summed.idle_cost == pytest.approx(one_by_one.idle_cost)
        assert summed.utilisation == pytest.approx(one_by_one.utilisation)
        assert {m: pytest.approx(v) for m, v in summed.by_model.items()} == one_by_one.by_model
        assert summary.last_day[namespace].cost == pytest.approx(days[DAYS[-1]][namespace].cost)
    assert summary.teams == teams and summary.teams[NAMESPACES[11]] == "small"


def test_a_team_chart_keeps_its_dearest_namespaces_and_stacks_the_rest(ledger: Ledger) -> None:
    summary = ledger.summary(DAYS[0], DAYS[-1])
    days, _ = ledger.lines(DAYS[0], DAYS[-1])
    big = summary.team_daily["big"]
    for day in DAYS:
        parts = big[day]
        assert len(parts) == CHART_NAMESPACES + 1 and OTHERS in parts
        assert sum(parts.values()) == pytest.approx(sum(days[day][ns].cost for ns in NAMESPACES[:11]))
    dearest = sorted(NAMESPACES[:11], key=lambda ns: summary.month[ns].cost, reverse=True)[:CHART_NAMESPACES]
    assert set(big[DAYS[0]]) - {OTHERS} == set(dearest)


def test_budgets_count_a_moved_namespace_for_its_team_of_today(ledger: Ledger) -> None:
    costs = ledger.team_day_costs(DAYS[0], DAYS[-1])
    assert costs["small"] == pytest.approx({day: 20.0 for day in DAYS})  # 10 A100-hours x 2.00, 1 Nov included
    days, _ = ledger.lines(DAYS[0], DAYS[-1])
    assert costs["big"] == pytest.approx({day: sum(days[day][ns].cost for ns in NAMESPACES[:11]) for day in DAYS})
    assert costs["analytics (not managed)"] == pytest.approx({day: 4.0 for day in DAYS})
