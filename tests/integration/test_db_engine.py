"""Engine options: SQLite in WAL mode with a busy timeout; connection pools sized to the work pool."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from bot.adapters.db.database import create_db_engine
from bot.executor import WORKERS


def test_sqlite_file_is_in_wal_mode_with_a_busy_timeout(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path}/bot.db")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA busy_timeout")).scalar() == 30000
    engine.dispose()


def test_pools_have_a_connection_for_every_work_thread(tmp_path: Path, postgres_url: str) -> None:
    for url in (f"sqlite:///{tmp_path}/bot.db", postgres_url):
        engine = create_db_engine(url)
        assert engine.pool.size() >= WORKERS + 2, url  # type: ignore[attr-defined]
        engine.dispose()
