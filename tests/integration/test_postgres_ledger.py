"""The ledger's sums in the database (GROUP BY, DISTINCT, the moved-namespace correction) on PostgreSQL,
after the migrations, with the same checks as on SQLite (tests/unit/test_ledger_sums.py)."""

from __future__ import annotations

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from tests.unit import test_ledger_sums as sums


@pytest.mark.postgres
def test_the_ledger_sums_on_postgresql(postgres_url: str) -> None:
    upgrade(postgres_url)
    ledger = sums.filled_ledger(Database.from_url(postgres_url))
    sums.test_the_sums_in_the_database_match_adding_the_rows(ledger)
    sums.test_a_team_chart_keeps_its_dearest_namespaces_and_stacks_the_rest(ledger)
    sums.test_budgets_count_a_moved_namespace_for_its_team_of_today(ledger)
