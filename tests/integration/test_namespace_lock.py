"""The one-writer-per-namespace lock on the machine's PostgreSQL: two databases objects (as two
replicas) contend for the same namespace; other namespaces are not held up."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from bot.adapters.db.database import Database, lock_key
from bot.errors import TemporaryError
from tests.integration.processes import wait_for


def waiting_for_advisory_locks(database: Database) -> int:
    with database.engine.connect() as connection:
        query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        return int(connection.execute(text(query)).scalar_one())


@pytest.mark.postgres
def test_a_second_replica_waits_for_the_namespace_and_only_for_it(postgres_url: str) -> None:
    first, second = Database.from_url(postgres_url), Database.from_url(postgres_url)
    order: list[str] = []
    release = threading.Event()

    def hold() -> None:
        with first.namespace_lock("ai-frontier-research"):
            order.append("first in")
            release.wait(timeout=30)
            order.append("first out")

    def contend() -> None:
        with second.namespace_lock("ai-frontier-research"):
            order.append("second in")

    holder = threading.Thread(target=hold)
    holder.start()
    wait_for(lambda: order == ["first in"], what="the first replica to hold the lock")
    contender = threading.Thread(target=contend)
    contender.start()
    wait_for(lambda: waiting_for_advisory_locks(first) == 1, what="the second replica to wait")
    with second.namespace_lock("biz-model-serving"):  # another namespace is free meanwhile
        order.append("other namespace")
    release.set()
    holder.join(timeout=30)
    contender.join(timeout=30)
    assert order == ["first in", "other namespace", "first out", "second in"]
    first.dispose()
    second.dispose()


def test_a_thread_waiting_for_a_namespace_gives_up_when_told_and_leaves_the_lock_free(database: Database) -> None:
    release, held = threading.Event(), threading.Event()

    def hold() -> None:
        with database.namespace_lock("ai-frontier-research"):
            held.set()
            release.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(timeout=10)
    asked: list[str] = []

    def still_answering() -> None:
        asked.append("asked")
        if len(asked) == 3:
            raise TemporaryError("waiting for cluster us-2: no answer for 1 s")

    with (
        pytest.raises(TemporaryError, match="no answer"),
        database.namespace_lock("ai-frontier-research", while_waiting=still_answering),
    ):
        pytest.fail("entered a held namespace")
    assert asked == ["asked"] * 3
    release.set()
    holder.join(timeout=30)
    with database.namespace_lock("ai-frontier-research", while_waiting=still_answering):  # free: nothing asked
        pass
    assert len(asked) == 3


def test_lock_keys_are_stable_and_distinct() -> None:
    assert lock_key("ai-frontier-research") == lock_key("ai-frontier-research")
    assert lock_key("ai-frontier-research") != lock_key("biz-model-serving")
    assert -(2**63) <= lock_key("x") < 2**63
