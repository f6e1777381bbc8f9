"""Migration 0018: the outbox holds whole mail addresses (its stream and target widened), on SQLite and
PostgreSQL; going back drops the mail entries (the version before could not send them) and keeps the rest."""

from __future__ import annotations

from datetime import datetime, timezone

from alembic import command
from sqlalchemy import text

from bot.adapters.db.database import create_db_engine
from bot.adapters.db.migrate import alembic_config, current_revision, upgrade

# The longest address budget.mail takes: a local part of 64 and a domain filling the rest of 254.
LONGEST = "a" * 64 + "@" + ".".join(["b" * 63, "c" * 63, "d" * 58]) + ".io"
AT = datetime(2026, 11, 10, tzinfo=timezone.utc).replace(tzinfo=None)


def add(url: str, *, stream: str, kind: str, target: str) -> None:
    engine = create_db_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO outbox (stream, kind, target, actions, state, attempts, last_error, created_at)"
                    " VALUES (:stream, :kind, :target, '[]', 'pending', 0, '', :at)"
                ),
                {"stream": stream, "kind": kind, "target": target, "at": AT},
            )
    finally:
        engine.dispose()


def kinds(url: str) -> list[str]:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text("SELECT kind FROM outbox ORDER BY id")).scalars())
    finally:
        engine.dispose()


def test_the_outbox_takes_the_longest_address_and_going_back_drops_only_mail(database_url: str) -> None:
    assert len(LONGEST) == 254
    upgrade(database_url)
    add(database_url, stream=f"mail:{LONGEST}", kind="mail", target=LONGEST)
    add(database_url, stream="dm:U0LEE", kind="direct", target="U0LEE")
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT target FROM outbox WHERE kind = 'mail'")).scalar_one() == LONGEST
    finally:
        engine.dispose()
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            config = alembic_config(database_url)
            config.attributes["connection"] = connection
            command.downgrade(config, "0016")
            connection.commit()
    finally:
        engine.dispose()
    assert current_revision(database_url) == "0016" and kinds(database_url) == ["direct"]
    upgrade(database_url)
    assert kinds(database_url) == ["direct"]
