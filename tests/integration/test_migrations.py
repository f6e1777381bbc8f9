"""Alembic migrations: they run on SQLite and PostgreSQL and produce exactly the models' schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from bot.adapters.db.database import create_db_engine
from bot.adapters.db.migrate import current_revision, head_revision, upgrade
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
