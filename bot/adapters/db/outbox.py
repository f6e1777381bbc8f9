"""The outbox table: what the bot means to say in Slack or by mail, recorded, claimed one head at a time, settled.

Entries of a stream are delivered in ``id`` order, so only a stream's oldest pending entry (its head)
can be claimed. A claim is a lease (``claimed_until``) taken by a guarded update that succeeds for
one replica only; on PostgreSQL the head is also locked ``FOR UPDATE SKIP LOCKED`` first, so a
replica that finds another one claiming moves on to the next stream instead of waiting for it.
A replica that dies mid-delivery leaves a lease that runs out; the entry is then delivered again,
so delivery is at least once in that case only (Slack has no idempotency key for chat.postMessage; a
mail's Message-ID is the same on every try, so a receiver can drop the second copy).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from sqlalchemy import and_, case, delete, func, or_, select, update
from sqlalchemy.engine import CursorResult

from bot.adapters.db.models import OUTBOX_DEAD, OUTBOX_MAIL, OUTBOX_PENDING, OUTBOX_SENT, OutboxEntry
from bot.adapters.db.repository import Repository
from bot.services.ports import Claimed, OutboxHealth

T = TypeVar("T")
# An entry's channel: mail for a mail's entry, Slack for every other kind (reply, direct, post, card).
CHANNELS = ("slack", "mail")
CHANNEL = case((OutboxEntry.kind == OUTBOX_MAIL, "mail"), else_="slack")


class RunsTransactions(Protocol):
    """What the store needs of ``Database``: its units of work, on this adapter's repository."""

    def run(self, work: Callable[[Repository], T], *, attempts: int = ...) -> T: ...


class OutboxStore:
    """Implements ``bot.services.ports.Outbox``."""

    def __init__(self, database: RunsTransactions) -> None:
        self._db = database

    def due_streams(self, now: datetime) -> list[str]:
        """Streams with a pending entry that may be tried now, oldest first."""

        def due(repo: Repository) -> list[str]:
            query = (
                select(OutboxEntry.stream)
                .where(OutboxEntry.state == OUTBOX_PENDING, or_(OutboxEntry.not_before.is_(None), OutboxEntry.not_before <= now))
                .group_by(OutboxEntry.stream)
                .order_by(func.min(OutboxEntry.id))
            )
            return list(repo.session.scalars(query))

        return self._db.run(due)

    def claim_head(self, stream: str, *, now: datetime, lease: timedelta) -> Claimed | None:
        """Lease the stream's head if it is due and nobody holds it; None otherwise."""

        def claim(repo: Repository) -> Claimed | None:
            session = repo.session
            head = session.scalar(
                select(func.min(OutboxEntry.id)).where(OutboxEntry.stream == stream, OutboxEntry.state == OUTBOX_PENDING)
            )
            if head is None:
                return None
            # Never SKIP LOCKED past the head: that would deliver the stream out of order.
            row = session.scalars(select(OutboxEntry).where(OutboxEntry.id == head).with_for_update(skip_locked=True)).first()
            if row is None or row.state != OUTBOX_PENDING or (row.not_before is not None and row.not_before > now):
                return None
            guarded = (
                update(OutboxEntry)
                .where(
                    OutboxEntry.id == head,
                    OutboxEntry.state == OUTBOX_PENDING,
                    or_(OutboxEntry.claimed_until.is_(None), OutboxEntry.claimed_until < now),
                )
                .values(claimed_until=now + lease)
                .execution_options(synchronize_session=False)
            )
            result = session.execute(guarded)
            assert isinstance(result, CursorResult)
            if result.rowcount != 1:
                return None
            return Claimed(
                row.id,
                row.stream,
                row.kind,
                row.request_id,
                row.target,
                row.notice,
                list(row.actions or []),
                row.attempts,
                row.created_at,
            )

        return self._db.run(claim)

    def sent(self, entry_id: int, *, now: datetime) -> None:
        self._settle(entry_id, state=OUTBOX_SENT, sent_at=now, claimed_until=None)

    def release(self, entry_id: int) -> None:
        """Give the claim back without counting an attempt (the entry cannot be delivered yet)."""
        self._settle(entry_id, claimed_until=None)

    def retry_later(self, entry_id: int, *, at: datetime, error: str, attempts: int) -> None:
        self._settle(entry_id, not_before=at, last_error=error, attempts=attempts, claimed_until=None)

    def dead(self, entry_id: int, *, error: str, attempts: int) -> None:
        self._settle(entry_id, state=OUTBOX_DEAD, last_error=error, attempts=attempts, claimed_until=None)

    def forget(self, *, sent_before: datetime, dead_before: datetime) -> int:
        """Delete sent entries settled before ``sent_before`` and dead ones recorded before
        ``dead_before``; how many went. Pending entries are never deleted."""

        def forget(repo: Repository) -> int:
            result = repo.session.execute(
                delete(OutboxEntry)
                .where(
                    or_(
                        and_(OutboxEntry.state == OUTBOX_SENT, OutboxEntry.sent_at < sent_before),
                        and_(OutboxEntry.state == OUTBOX_DEAD, OutboxEntry.created_at < dead_before),
                    )
                )
                .execution_options(synchronize_session=False)
            )
            assert isinstance(result, CursorResult)
            return result.rowcount

        return self._db.run(forget)

    def health(self) -> OutboxHealth:
        """Entries per state and when the oldest pending one was recorded, in all and per channel (metrics,
        alerts): two grouped reads, whatever the number of entries."""

        def read(repo: Repository) -> OutboxHealth:
            session = repo.session
            counts = session.execute(select(CHANNEL, OutboxEntry.state, func.count()).group_by(CHANNEL, OutboxEntry.state)).all()
            oldest: dict[str, datetime | None] = dict(
                session.execute(
                    select(CHANNEL, func.min(OutboxEntry.created_at)).where(OutboxEntry.state == OUTBOX_PENDING).group_by(CHANNEL)
                ).all()
            )
            channels = {
                channel: OutboxHealth(
                    counts={state: number for named, state, number in counts if named == channel},
                    oldest_pending_at=oldest.get(channel),
                )
                for channel in CHANNELS
            }
            total: dict[str, int] = {}
            for _, state, number in counts:
                total[state] = total.get(state, 0) + number
            waiting = [moment for moment in oldest.values() if moment is not None]
            return OutboxHealth(counts=total, oldest_pending_at=min(waiting, default=None), channels=channels)

        return self._db.run(read)

    def counts(self) -> dict[str, int]:
        """Entries per state (for tests, metrics and the operator)."""

        def count(repo: Repository) -> dict[str, int]:
            rows = repo.session.execute(select(OutboxEntry.state, func.count()).group_by(OutboxEntry.state))
            return {state: number for state, number in rows}

        return self._db.run(count)

    def _settle(self, entry_id: int, **values: Any) -> None:
        def settle(repo: Repository) -> None:
            repo.session.execute(
                update(OutboxEntry)
                .where(OutboxEntry.id == entry_id)
                .values(**values)
                .execution_options(synchronize_session=False)
            )

        self._db.run(settle)
