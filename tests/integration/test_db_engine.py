"""Engine options: SQLite in WAL mode with a busy timeout; connection pools sized to the work pool."""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import event, text

from bot.adapters.db.database import Database, create_db_engine
from bot.adapters.db.repository import Repository
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


def test_sqlite_transactions_of_one_process_queue_in_the_process_not_in_sqlite(tmp_path: Path) -> None:
    """SQLite's busy handler polls with growing sleeps (up to 100 ms): a transaction waiting for another
    one of the same process waits in the process and begins once that one has ended."""
    database = Database.from_url(f"sqlite:///{tmp_path}/bot.db")
    with database.engine.connect(), database.engine.connect():
        pass  # two pooled connections, set up (their PRAGMAs) before anything holds the write lock
    begun: list[str] = []

    def note_begin(_connection: object, _cursor: object, statement: str, *_args: object) -> None:
        if statement.startswith("BEGIN"):  # noted as SQLite is asked, before it answers
            begun.append(threading.current_thread().name)

    event.listen(database.engine, "before_cursor_execute", note_begin)
    inside, release = threading.Event(), threading.Event()

    def hold(repo: Repository) -> None:
        repo.session.execute(text("SELECT 1"))
        inside.set()
        release.wait(10)

    first = threading.Thread(target=database.run, args=(hold,), name="first")
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=database.run, args=(lambda repo: repo.session.execute(text("SELECT 1")),), name="second")
    second.start()
    second.join(0.3)  # time to begin, were it to begin now

    assert begun == ["first"]
    release.set()
    first.join(10)
    second.join(10)
    assert begun == ["first", "second"]
    database.dispose()
