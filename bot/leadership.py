"""Which replica runs the scheduled jobs: exactly one at a time.

Slash commands and clicks may land on any replica (the database arbitrates them); the jobs run on
the leader only. Several replicas share one database, which must then be PostgreSQL, so the
leader is whoever holds a PostgreSQL session-level advisory lock on its own connection. We chose
this over a Kubernetes Lease because it needs no extra RBAC, is released by the server the moment
the leader's connection dies (a killed pod loses it at once), and keeps the same authority that
already arbitrates every request. Server-side TCP keepalives bound how long a leader cut off from
the database keeps the lock (about 25 s); the leader checks its connection every few seconds and
pauses its jobs as soon as it cannot prove it still holds the lock. The jobs themselves are also
idempotent (claims with unique keys, version columns), so even a brief overlap posts nothing twice.

With SQLite there is one replica, and it is always the leader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.engine import make_url

from bot.observability import LEADER

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)
LOCK_KEY = 0x67707162  # "gpqb"


class Leadership(Protocol):
    def acquire(self) -> bool:
        """Try to become the leader without waiting; True if this replica holds it now."""
        ...

    def held(self) -> bool:
        """True while this replica can prove it still holds the leadership."""
        ...

    def release(self) -> None: ...


class SoleReplica:
    """SQLite: a single replica, always the leader."""

    def acquire(self) -> bool:
        return True

    def held(self) -> bool:
        return True

    def release(self) -> None:
        pass


class PostgresAdvisoryLock:
    def __init__(self, database_url: str, *, key: int = LOCK_KEY, timeout: float = 5.0) -> None:
        import psycopg  # PostgreSQL only: a SQLite bot never loads the driver (about 9 MiB)

        self._pg = psycopg
        self._conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._key = key
        self._timeout = timeout
        self._connection: psycopg.Connection | None = None

    def acquire(self) -> bool:
        try:
            connection = self._connect()
            return bool(connection.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()[0])  # type: ignore[index]
        except self._pg.Error as error:
            log.warning("cannot try for leadership: %s", type(error).__name__)
            self._drop()
            return False

    def held(self) -> bool:
        if self._connection is None:
            return False
        try:
            row = self._connection.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
                " AND granted AND objid = (%s::bigint & 4294967295)::oid",
                (self._key,),
            ).fetchone()
            return bool(row and row[0])
        except self._pg.Error as error:
            log.warning("lost the database connection that holds the leadership: %s", type(error).__name__)
            self._drop()
            return False

    def release(self) -> None:
        if self._connection is not None:
            try:
                self._connection.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
            except self._pg.Error:
                pass
            self._drop()

    def _connect(self) -> psycopg.Connection:
        if self._connection is None or self._connection.closed:
            self._connection = self._pg.connect(
                self._conninfo,
                autocommit=True,
                connect_timeout=int(self._timeout),
                keepalives=1,
                keepalives_idle=5,
                keepalives_interval=2,
                keepalives_count=3,
                options="-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
                f" -c statement_timeout={int(self._timeout * 1000)}",
                application_name="gpu-quota-bot-leader",
            )
        return self._connection

    def _drop(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except self._pg.Error:
                pass
        self._connection = None


def leadership_for(database_url: str) -> Leadership:
    return PostgresAdvisoryLock(database_url) if make_url(database_url).get_backend_name() == "postgresql" else SoleReplica()


class LeaderLoop:
    """Every ``interval`` seconds: a follower tries to lead; a leader checks it still does.

    ``on_gained`` starts the jobs, ``on_lost`` pauses them; both run on this loop's thread.
    """

    def __init__(
        self, leadership: Leadership, *, on_gained: Callable[[], None], on_lost: Callable[[], None], interval: float = 2.0
    ) -> None:
        self._leadership = leadership
        self._on_gained = on_gained
        self._on_lost = on_lost
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leadership", daemon=True)
        self.leading = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop competing and give the leadership up (the jobs are paused first)."""
        self._stopping.set()
        self._thread.join(timeout=self._interval * 5)
        if self.leading:
            self._step_down()
        self._leadership.release()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._tick()
            except Exception:
                log.exception("leadership check failed")
            self._stopping.wait(self._interval)

    def _tick(self) -> None:
        if self.leading and not self._leadership.held():
            log.warning("leadership lost: pausing the scheduled jobs")
            self._step_down()
        elif not self.leading and self._leadership.acquire():
            log.info("became the leader: running the scheduled jobs")
            self.leading = True
            LEADER.set(1)
            self._on_gained()

    def _step_down(self) -> None:
        self.leading = False
        LEADER.set(0)
        self._on_lost()
