"""The domain's entities as the database adapter maps them: a request's version moves on every
``touch``, so the loser of two concurrent changes to one request fails and is run again."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy.orm.exc import StaleDataError

from bot.adapters.db.database import Database
from bot.adapters.db.models import Base
from bot.adapters.db.repository import Repository
from bot.domain.entities import Request
from bot.domain.lifecycle import RequestKind, RequestState, Verdict
from bot.domain.resources import GPU

NOW = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def database(tmp_path: Path) -> Database:
    db = Database.from_url(f"sqlite:///{tmp_path / 'bot.db'}")
    Base.metadata.create_all(db.engine)
    return db


def submitted(database: Database) -> Request:
    def add(repo: Repository) -> Request:
        request = repo.add_request(
            kind=RequestKind.CHANGE,
            state=RequestState.PENDING,
            namespace="ai-frontier-research",
            resource=GPU,
            team="frontier",
            requester_id="U0ALICE",
            amount_text="+2",
            delta=2,
            reason="a deadline",
            approvals_required=2,
            hard_before=4,
            channel_id="C0FRONTIER",
            created_at=NOW,
            decide_by=NOW,
            updated_at=NOW,
        )
        repo.session.flush()
        repo.request(request.id)  # its decisions loaded, as a decision reads them
        return request

    return database.run(add)


def approve(database: Database, request: Request, user: str) -> None:
    """Add ``user``'s approval to ``request`` as read earlier (perhaps before another unit of work changed it)."""
    with database.transaction() as repo:
        repo.session.add(request)
        repo.add_decision(request, user_id=user, verdict=Verdict.APPROVE, decided_at=NOW)
        request.touch(now=NOW)  # the time it already had: only its decisions change


def test_a_touched_request_moves_its_version_even_when_only_its_decisions_changed(database: Database) -> None:
    request = submitted(database)
    approve(database, request, "U0LEE")
    assert database.run(lambda repo: repo.request(request.id)).version == 2  # type: ignore[union-attr]


def test_the_second_of_two_approvals_read_at_the_same_version_loses_the_race(database: Database) -> None:
    first = submitted(database)
    second = database.run(lambda repo: repo.request(first.id))  # another replica's read
    approve(database, first, "U0LEE")
    with pytest.raises(StaleDataError):
        approve(database, second, "U0KIM")  # type: ignore[arg-type]
    assert [d.user_id for d in database.run(lambda repo: repo.request(first.id)).decisions] == ["U0LEE"]  # type: ignore[union-attr]
