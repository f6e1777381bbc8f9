"""Migration 0013 on SQLite and PostgreSQL: the ledger rows recorded before it are whole GPUs, and a day may
then hold whole A100s and MIG slices of A100s of one namespace side by side (issue 20)."""

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
    "INSERT INTO ledger_entries (day, namespace, model, team, allocated_hours, idle_hours, observed_hours, util_hours,"
    " price, cost, idle_cost{extra}) VALUES ('2026-11-02', 'ns-a', 'A100', 't', 24, 0, 24, 12, 2, 48, 0{value})"
)
MIG = "nvidia.com/mig-3g.40gb"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/bot.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def rows(url: str) -> list[tuple[str, str, float]]:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            found = connection.execute(text("SELECT resource, model, cost FROM ledger_entries ORDER BY resource"))
            return [(resource, model, float(cost)) for resource, model, cost in found]
    finally:
        engine.dispose()


def insert(url: str, resource: str | None) -> None:
    statement = ROW.format(extra=", resource" if resource else "", value=f", '{resource}'" if resource else "")
    engine = create_db_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def test_rows_recorded_before_are_whole_gpus_and_mig_rows_stand_beside_them(url: str) -> None:
    upgrade(url, "0011")
    insert(url, None)
    upgrade(url)
    assert rows(url) == [("nvidia.com/gpu", "A100", 48.0)]
    assert schema_differences(url) == []
    insert(url, MIG)  # the same day, namespace and model: another resource
    with pytest.raises(IntegrityError):
        insert(url, MIG)  # but one row per day x namespace x resource x model
    assert rows(url) == [("nvidia.com/gpu", "A100", 48.0), (MIG, "A100", 48.0)]


def test_downgrading_keeps_the_whole_gpu_rows(url: str) -> None:
    upgrade(url)
    insert(url, "nvidia.com/gpu")
    insert(url, MIG)
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            config = alembic_config(url)
            config.attributes["connection"] = connection
            command.downgrade(config, "0011")
            connection.commit()
            kept = connection.execute(text("SELECT model, cost FROM ledger_entries")).all()
    finally:
        engine.dispose()
    assert [(model, float(cost)) for model, cost in kept] == [("A100", 48.0)]
