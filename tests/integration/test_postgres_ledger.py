"""The ledger's sums in the database (GROUP BY, DISTINCT, the moved-namespace correction) on PostgreSQL,
after the migrations: the SQLite tests of tests/unit/test_ledger_sums.py, collected here again with a
``ledger`` on PostgreSQL."""

from __future__ import annotations

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.services.ledger import Ledger
from tests.unit.test_ledger_sums import (  # noqa: F401  (collected here, against the fixture below)
    filled_ledger,
    test_a_team_chart_keeps_its_dearest_namespaces_and_stacks_the_rest,
    test_budgets_count_a_moved_namespace_for_its_team_of_today,
    test_the_sums_in_the_database_match_adding_the_rows,
)

pytestmark = pytest.mark.postgres


@pytest.fixture
def ledger(postgres_url: str) -> Ledger:
    upgrade(postgres_url)
    return filled_ledger(Database.from_url(postgres_url))
