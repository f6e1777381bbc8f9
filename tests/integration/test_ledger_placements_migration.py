"""Migration 0017 on SQLite and PostgreSQL: the ledger rows recorded before it are on-demand in no pool, a day may
then hold a namespace's spot and on-demand rows of one model side by side, and going back folds them into one row
without losing money (issue 25)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from bot.adapters.db.database import create_db_engine
from bot.adapters.db.migrate import alembic_config, upgrade
from tests.integration.test_migrations import schema_differences

ROW = (
    "INSERT INTO ledger_entries (day, namespace, model, resource, team, allocated_hours, idle_hours, observed_hours,"
    " util_hours, price, cost, idle_cost{extra}) VALUES ('2026-11-02', 'ns-a', 'H100', 'nvidia.com/gpu', 't', 24, 4,"
    " 24, 12, {price}, {cost}, {idle}{value})"
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/bot.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def execute(url: str, statement: str) -> list[tuple[object, ...]]:
    engine = create_db_engine(url)
    try:
        with engine.begin() as connection:
            result = connection.execute(text(statement))
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engine.dispose()


def insert(url: str, price: float, placement: tuple[str, str] | None = None) -> None:
    extra, value = (", capacity_type, pool", f", '{placement[0]}', '{placement[1]}'") if placement else ("", "")
    execute(url, ROW.format(extra=extra, value=value, price=price, cost=24 * price, idle=4 * price))


def test_rows_recorded_before_are_on_demand_and_spot_rows_stand_beside_them(url: str) -> None:
    upgrade(url, "0018")
    insert(url, 4.0)
    upgrade(url)
    assert schema_differences(url) == []
    assert execute(url, "SELECT capacity_type, pool, cost FROM ledger_entries") == [("on-demand", "", 96.0)]
    assert execute(url, "SELECT split FROM ledger_days") == []
    insert(url, 1.5, ("spot", ""))  # the same day, namespace, resource and model: another placement
    insert(url, 0.5, ("on-demand", "on-prem"))
    with pytest.raises(IntegrityError):
        insert(url, 1.5, ("spot", ""))  # but one row per placement
    command.downgrade(alembic_config(url), "0018")
    ((hours, cost, idle_cost, price),) = execute(url, "SELECT allocated_hours, cost, idle_cost, price FROM ledger_entries")
    assert (hours, cost, idle_cost) == (72.0, 24 * 6.0, 4 * 6.0) and price == pytest.approx(2.0)
    upgrade(url)
    assert schema_differences(url) == []
