"""Alembic migrations: they run on SQLite and PostgreSQL and produce exactly the models' schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from bot.adapters.db.database import create_db_engine
from bot.adapters.db.migrate import current_revision, file_head, head_revision, upgrade, upgrade_if_behind
from bot.adapters.db.models import Base


def schema_differences(url: str) -> list:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            return compare_metadata(MigrationContext.configure(connection), Base.metadata)
    finally:
        engine.dispose()


def test_sqlite_upgrade_matches_the_models(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    assert current_revision(url) is None
    upgrade(url)
    assert current_revision(url) == head_revision()
    assert schema_differences(url) == []
    upgrade(url)  # running it again is harmless
    assert current_revision(url) == head_revision()


@pytest.mark.postgres
def test_postgres_upgrade_matches_the_models(postgres_url: str) -> None:
    upgrade(postgres_url)
    assert current_revision(postgres_url) == head_revision()
    assert schema_differences(postgres_url) == []


def test_the_start_up_check_reads_the_head_alembic_reads(tmp_path: Path) -> None:
    """``upgrade_if_behind`` skips Alembic when the files' head is stored: both must name the same head."""
    assert file_head() == head_revision()
    url = f"sqlite:///{tmp_path}/bot.db"
    assert upgrade_if_behind(url) is True  # empty
    assert upgrade_if_behind(url) is False  # at head: nothing to do
    behind = f"sqlite:///{tmp_path}/behind.db"
    upgrade(behind, "0003")
    assert upgrade_if_behind(behind) is True  # behind: migrated
    assert current_revision(behind) == head_revision()
    assert schema_differences(behind) == []


def upgrade_keeps_the_first_schemas_data(url: str) -> None:
    upgrade(url, "0001")
    engine = create_db_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO requests (kind, state, namespace, team, requester_id, amount_text, delta, reason,"
                    " approvals_required, auto_approved, hard_before, channel_id, created_at, decide_by, updated_at, version)"
                    " VALUES ('change', 'pending', 'ns-a', 't', 'U1', '+1', 1, 'r', 1, false, 4, 'C1',"
                    " '2026-11-01 00:00:00', '2026-11-02 00:00:00', '2026-11-01 00:00:00', 1)"
                )
            )
        upgrade(url)
        assert current_revision(url) == head_revision()
        with engine.connect() as connection:
            assert connection.execute(text("SELECT namespace, state FROM requests")).all() == [("ns-a", "pending")]
            assert connection.execute(text("SELECT count(*) FROM digest_runs")).scalar() == 0
    finally:
        engine.dispose()
    assert schema_differences(url) == []


def test_sqlite_upgrade_from_the_first_schema(tmp_path: Path) -> None:
    upgrade_keeps_the_first_schemas_data(f"sqlite:///{tmp_path}/bot.db")


@pytest.mark.postgres
def test_postgres_upgrade_from_the_first_schema(postgres_url: str) -> None:
    upgrade_keeps_the_first_schemas_data(postgres_url)


@pytest.mark.postgres
def test_concurrent_upgrades_wait_for_each_other(postgres_url: str) -> None:
    import threading

    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            upgrade(postgres_url)
        except BaseException as error:  # noqa: BLE001 - collected for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=migrate) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and current_revision(postgres_url) == head_revision()
