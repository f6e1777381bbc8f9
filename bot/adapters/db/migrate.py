"""Alembic, driven from code: ``gpu-quota-bot db upgrade`` and the start-up schema check.

On PostgreSQL the upgrade holds an advisory lock, so several replicas (or init containers) starting
at once run the migrations one after the other instead of into each other.

Alembic (about 12 MiB of a running process) is imported only to migrate: ``upgrade_if_behind``, the
start-up check, compares the schema's revision with the head read from the migration files' own
``revision``/``down_revision`` lines, and asks Alembic only when they differ.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, make_url, text

from bot.adapters.db.database import create_db_engine, normalize_database_url

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
_LOCK_KEY = 0x67707571  # "gpuq"
_REVISION = re.compile(r'^(down_revision|revision)\s*(?::[^=]*)?=\s*(?:"([^"]*)"|None)\s*$', re.MULTILINE)


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", normalize_database_url(url).replace("%", "%%"))
    return config


def upgrade_if_behind(url: str) -> bool:
    """Migrate to head unless the schema is there already (then without importing Alembic); True if it migrated."""
    head = file_head()
    if head is not None and _stored_revision(url) == head:
        return False
    upgrade(url)
    return True


def file_head() -> str | None:
    """The head revision as the migration files name it: the one no other file names as its
    ``down_revision``; None unless there is exactly one (Alembic then decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        for name, value in _REVISION.findall(path.read_text()):
            (revisions if name == "revision" else parents).add(value)
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _stored_revision(url: str) -> str | None:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return None
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
            return rows[0] if len(rows) == 1 else None
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

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
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head() or ""


def current_revision(url: str) -> str | None:
    """The schema's revision, or None for an empty database; reading never creates one (SQLite makes a
    missing file on connect, so a missing file is answered without connecting)."""
    from alembic.runtime.migration import MigrationContext

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
