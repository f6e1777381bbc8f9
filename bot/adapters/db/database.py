"""The engine, transactions with retry on lost races, the per-namespace writer lock, and the URL rules.

``Database.run(work)`` runs ``work(repository)`` in one transaction. When another transaction won
a race on the same row (version column -> StaleDataError; unique decision -> IntegrityError;
PostgreSQL serialization failure), the whole unit is run again from a fresh read, so the work
function must decide everything from what it reads inside the transaction.

``Database.namespace_lock(name)`` makes one writer per namespace across every process sharing the
database: a PostgreSQL transaction-level advisory lock keyed by the namespace, held by a transaction
on its own connection for as long as the block runs (a process that dies loses it with its
connection). SQLite serves one process, so there it is a process-local lock; every SQLite
transaction begins with ``BEGIN IMMEDIATE``, which takes SQLite's write lock when it starts (waiting
up to the busy timeout) instead of failing half-way when another connection wrote since its read.
The transactions of one process queue for that lock in the process (``Database.transaction``):
SQLite's busy handler polls with sleeps growing to 100 ms, so a transaction that waited there could
begin long after the one before it ended; the busy timeout is left for other processes (the CLI).
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import sessionmaker
from sqlalchemy.orm.exc import StaleDataError
from sqlalchemy.pool import StaticPool

from bot.adapters.db.outbox import OutboxStore
from bot.adapters.db.repository import Repository
from bot.errors import LostRace
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
# A namespace writer holds a second connection for its lock (PostgreSQL advisory lock) while it works.
MAX_OVERFLOW = WORKERS

LOCK_CHECK_SECONDS = 0.1  # how often a thread waiting for a namespace's lock asks whether to go on waiting


SQLITE_CACHE_KIB = 256


def create_db_engine(url: str) -> Engine:
    url = normalize_database_url(url)
    if url.startswith("sqlite"):
        in_memory = url in ("sqlite://", "sqlite:///:memory:")
        pool: dict[str, object] = (
            {"poolclass": StaticPool} if in_memory else {"pool_size": POOL_SIZE, "max_overflow": MAX_OVERFLOW}
        )
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **pool)
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW)


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # The driver's own transaction handling never issues BEGIN before a SELECT and cannot say
    # IMMEDIATE: turn it off and let _sqlite_begin issue it (SQLAlchemy's documented recipe).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    # Wait for a writer instead of failing at once; WAL lets readers (status, list, /metrics) run
    # beside a writer instead of waiting for it. An in-memory database stays in "memory" mode.
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer; no-op in memory
    # Each pooled connection keeps its own page cache (2 MiB by default, a pool of up to 20): the
    # operating system caches the file anyway, so a small one keeps the process lean as the file grows.
    cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    # Writes are short and never wait on the network here, so serialising them costs little and
    # spares the lost races a deferred transaction meets when another connection wrote after its read.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


class Database:
    """Implements ``bot.services.ports.Transactions``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._local_locks: dict[str, threading.Lock] = {}
        self._local_locks_guard = threading.Lock()
        # SQLite: one transaction of this process at a time (reentrant: a nested one waits in SQLite, as before).
        self._sqlite_writer = threading.RLock() if engine.dialect.name == "sqlite" else None

    @classmethod
    def from_url(cls, url: str) -> Database:
        return cls(create_db_engine(url))

    @contextmanager
    def transaction(self) -> Iterator[Repository]:
        """One transaction, committed on success and rolled back on any error."""
        with self._one_writer(), self._sessions.begin() as session:
            yield Repository(session)

    def _one_writer(self) -> AbstractContextManager[object]:
        return self._sqlite_writer if self._sqlite_writer is not None else nullcontext()

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

    @contextmanager
    def namespace_lock(self, namespace: str, *, while_waiting: Callable[[], object] | None = None) -> Iterator[None]:
        """Be the only writer of ``namespace`` (across processes on PostgreSQL) while the block runs.
        ``while_waiting`` is called when another thread of this process holds it, and again every
        ``LOCK_CHECK_SECONDS`` while it does; what it raises ends the wait (the block does not run)."""
        # Threads of this process queue here first, so waiting never holds a pooled connection.
        local = self._local_lock(namespace)
        waiting = not local.acquire(blocking=False)
        while waiting:
            if while_waiting is not None:
                while_waiting()
            waiting = not local.acquire(timeout=LOCK_CHECK_SECONDS)
        try:
            if self.engine.dialect.name != "postgresql":
                yield
                return
            with self.engine.connect() as connection, connection.begin():
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key(namespace)})
                yield
        finally:
            local.release()

    def _local_lock(self, namespace: str) -> threading.Lock:
        with self._local_locks_guard:
            return self._local_locks.setdefault(namespace, threading.Lock())

    def outbox(self) -> OutboxStore:
        """The Slack outbox kept in this database."""
        return OutboxStore(self)

    def dispose(self) -> None:
        self.engine.dispose()


def lock_key(namespace: str) -> int:
    """A stable signed 64-bit advisory-lock key for a namespace (the same in every replica)."""
    digest = hashlib.blake2b(f"gpu-quota-bot/namespace/{namespace}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _is_lost_race(error: Exception) -> bool:
    if isinstance(error, (StaleDataError, IntegrityError)):
        return True
    sqlstate = getattr(getattr(error, "orig", None), "sqlstate", None)
    return sqlstate in _RETRYABLE_SQLSTATES or "database is locked" in str(error)
