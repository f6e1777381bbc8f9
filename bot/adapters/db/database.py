"""The engine, transactions with retry on lost races, and the URL rules.

``Database.run(work)`` runs ``work(repository)`` in one transaction. When another transaction won
a race on the same row (version column -> StaleDataError; unique decision -> IntegrityError;
PostgreSQL serialization failure), the whole unit is run again from a fresh read, so the work
function must decide everything from what it reads inside the transaction.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import sessionmaker
from sqlalchemy.orm.exc import StaleDataError
from sqlalchemy.pool import StaticPool

from bot.adapters.db.repository import Repository
from bot.executor import WORKERS

log = logging.getLogger(__name__)
T = TypeVar("T")
_RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization failure, deadlock


def normalize_database_url(url: str) -> str:
    """Accept the usual ``postgres://``/``postgresql://`` forms and use the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


# Connections used at once: one per work thread, plus the scheduled jobs, /readyz and /metrics.
# Fewer would make work threads queue for a connection; more would only queue inside the database.
POOL_SIZE = WORKERS + 4
MAX_OVERFLOW = 4


def create_db_engine(url: str) -> Engine:
    url = normalize_database_url(url)
    if url.startswith("sqlite"):
        if url in ("sqlite://", "sqlite:///:memory:"):
            engine = create_engine(url, connect_args={"check_same_thread": False}, poolclass=StaticPool)
        else:
            engine = create_engine(
                url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW
            )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    # Wait for a writer instead of failing at once; WAL lets readers (status, list, /metrics) run
    # beside a writer instead of waiting for it. An in-memory database stays in "memory" mode.
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


class LostRace(Exception):
    """A transaction kept losing races; the caller reports a temporary failure."""


class Database:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @classmethod
    def from_url(cls, url: str) -> Database:
        return cls(create_db_engine(url))

    @contextmanager
    def transaction(self) -> Iterator[Repository]:
        """One transaction, committed on success and rolled back on any error."""
        with self._sessions.begin() as session:
            yield Repository(session)

    def run(self, work: Callable[[Repository], T], *, attempts: int = 6) -> T:
        """Run ``work`` in a transaction, again from scratch when it loses a race."""
        for attempt in range(1, attempts + 1):
            try:
                with self.transaction() as repository:
                    return work(repository)
            except (StaleDataError, IntegrityError, OperationalError) as error:
                if not _is_lost_race(error) or attempt == attempts:
                    if _is_lost_race(error):
                        raise LostRace(f"gave up after {attempts} lost races") from error
                    raise
                log.info("transaction lost a race (attempt %d): retrying", attempt, extra={"error": type(error).__name__})
                time.sleep(random.uniform(0.005, 0.05) * attempt)
        raise AssertionError("unreachable")

    def dispose(self) -> None:
        self.engine.dispose()


def _is_lost_race(error: Exception) -> bool:
    if isinstance(error, (StaleDataError, IntegrityError)):
        return True
    sqlstate = getattr(getattr(error, "orig", None), "sqlstate", None)
    return sqlstate in _RETRYABLE_SQLSTATES or "database is locked" in str(error)
