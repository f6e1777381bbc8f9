"""The once-only claims of digests and budget warnings: insert ... on conflict do nothing, on both databases."""

from __future__ import annotations

from datetime import UTC, date, datetime

from bot.adapters.db.database import Database

AT = datetime(2026, 11, 30, 8, tzinfo=UTC)


def test_a_digest_is_claimed_once_until_it_is_released(database: Database) -> None:
    day = date(2026, 11, 29)
    assert database.run(lambda repo: repo.claim_digest("ml", day, at=AT)) is True
    assert database.run(lambda repo: repo.claim_digest("ml", day, at=AT)) is False
    assert database.run(lambda repo: repo.claim_digest("*", day, at=AT)) is True  # another scope
    database.run(lambda repo: repo.release_digest("ml", day))
    assert database.run(lambda repo: repo.claim_digest("ml", day, at=AT)) is True
    database.run(lambda repo: repo.mark_digest_posted("ml", day, at=AT))
    assert database.run(lambda repo: repo.digest_days_posted("ml", first=day, last=day)) == {day}


def test_budget_warnings_are_claimed_all_or_none(database: Database) -> None:
    claim = lambda keys: database.run(lambda repo: repo.claim_budget_alerts("ml", "2026-11", keys, percent=85.0, at=AT))  # noqa: E731
    assert claim(["50", "80"]) is True
    assert claim(["80", "100"]) is False  # 80 was sent: 100 is not recorded either
    assert database.run(lambda repo: repo.budget_alerts_sent("ml", "2026-11")) == {"50", "80"}
    database.run(lambda repo: repo.forget_budget_alerts("ml", "2026-11", ["80"]))
    assert claim(["80", "100"]) is True
    assert database.run(lambda repo: repo.budget_alerts_sent("ml", "2026-11")) == {"50", "80", "100"}
