"""Alembic, driven from code: ``gpu-quota-bot db upgrade`` and the start-up schema check.

On PostgreSQL the upgrade holds an advisory lock, so several replicas (or init containers) starting
at once run the migrations one after the other instead of into each other.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import make_url, text

from bot.adapters.db.database import create_db_engine, normalize_database_url

MIGRATIONS = Path(__file__).parent / "migrations"
_LOCK_KEY = 0x67707571  # "gpuq"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", normalize_database_url(url).replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            postgres = connection.dialect.name == "postgresql"
            if postgres:
                connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _LOCK_KEY})
                connection.commit()
            try:
                config = alembic_config(url)
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                connection.commit()
            finally:
                if postgres:
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _LOCK_KEY})
                    connection.commit()
    finally:
        engine.dispose()


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head() or ""


def current_revision(url: str) -> str | None:
    """The schema's revision, or None for an empty database; reading never creates one (SQLite makes a
    missing file on connect, so a missing file is answered without connecting)."""
    parsed = make_url(normalize_database_url(url))
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).exists():
            return None
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
