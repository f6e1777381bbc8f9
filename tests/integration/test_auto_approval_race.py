"""Auto-approval's cumulative cap holds when requests arrive at the same moment (real PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.domain.commands import parse_command
from bot.domain.lifecycle import RequestState
from bot.sandbox.session import Sandbox
from tests.integration.test_postgres import at_once, pg_sandbox  # noqa: F401  (the fixture)


def submitter(box: Sandbox, text: str) -> Callable[[], str]:
    draft = parse_command(text).draft  # type: ignore[union-attr]
    return lambda: str(box.services.submissions.submit(requester="U0ALICE", draft=draft).state)


@pytest.mark.postgres
def test_simultaneous_auto_approvable_requests_stay_within_max_gpus(pg_sandbox: Sandbox) -> None:  # noqa: F811
    """The sandbox's frontier team auto-approves at most 1 GPU active (auto_approve.max_gpus: 1)."""
    four_at_once(pg_sandbox)


def test_the_cap_holds_on_sqlite_too(sandbox: Sandbox) -> None:
    """SQLite (a file, the default single-replica database) serialises the decision with its write lock."""
    four_at_once(sandbox)


def four_at_once(box: Sandbox) -> None:
    for round_ in range(4):
        outcomes = at_once(*(submitter(box, f"request ai-frontier-research +1 for 2h round {round_}") for _ in range(4)))
        assert sorted(outcomes) == ["applied", "pending", "pending", "pending"], outcomes
        assert box.kube is not None and box.kube.hard("ai-frontier-research", "compute-quota") == "5"
        everything = box.database.run(lambda r: list(r.requests_in([RequestState.APPLIED, RequestState.PENDING])))
        rows = [row for row in everything if row.reason == f"round {round_}"]
        auto = [row for row in rows if row.auto_approved]
        assert len(auto) == 1, [(row.id, row.state) for row in rows]
        box.services.lifecycle.release(user="U0ALICE", request_id=auto[0].id)
        for row in rows:
            if row.state == RequestState.PENDING:
                box.services.lifecycle.cancel(user="U0ALICE", request_id=row.id)
    assert box.kube.hard("ai-frontier-research", "compute-quota") == "4"
