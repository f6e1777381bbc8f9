"""Concurrency on the machine's real PostgreSQL: racing approvals never double-apply or lose a decision."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from bot.adapters.slack.replies import reply_text
from bot.clock import ManualClock
from bot.domain.commands import parse_command
from bot.domain.lifecycle import RequestState, Verdict
from bot.domain.resources import GPU
from bot.errors import UserError
from bot.sandbox.session import Sandbox


@pytest.fixture
def pg_sandbox(postgres_url: str, clock: ManualClock) -> Iterator[Sandbox]:
    box = Sandbox(clock=clock, database_url=postgres_url).start()
    yield box
    box.stop()


def at_once(*calls: Callable[[], str]) -> list[str]:
    """Run the calls in threads released together; return what each said (or the refusal)."""
    barrier = threading.Barrier(len(calls))
    results: list[str] = [""] * len(calls)

    def run(index: int, call: Callable[[], str]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except UserError as error:
            results[index] = f"refused: {error}"

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def submit(box: Sandbox, text: str, user: str) -> int:
    return box.services.submissions.submit(requester=user, draft=parse_command(text).draft).request_id  # type: ignore[union-attr]


def decide(box: Sandbox, request_id: int, user: str) -> Callable[[], str]:
    return lambda: reply_text(box.services.decisions.decide(user=user, request_id=request_id, verdict=Verdict.APPROVE))


def audit(box: Sandbox, request_id: int) -> list[str]:
    return [e.action for e in box.database.run(lambda r: list(r.audit_trail(request_id=request_id, limit=100)))]


@pytest.mark.postgres
def test_two_approvers_racing_on_a_request_that_needs_one(pg_sandbox: Sandbox) -> None:
    for round_ in range(5):
        request_id = submit(pg_sandbox, f"request ai-frontier-research +2 for 1h round {round_}", "U0ALICE")
        outcomes = at_once(decide(pg_sandbox, request_id, "U0LEE"), decide(pg_sandbox, request_id, "U0DANA"))
        winners = [o for o in outcomes if o.startswith("You approved")]
        assert len(winners) == 1, outcomes
        assert any("already approved" in o for o in outcomes), outcomes
        assert audit(pg_sandbox, request_id).count("request_applied") == 1
        pg_sandbox.services.lifecycle.release(user="U0ALICE", request_id=request_id)
    assert pg_sandbox.kube.hard("ai-frontier-research", "compute-quota") == "4"


@pytest.mark.postgres
def test_two_approvers_racing_on_a_request_that_needs_both(pg_sandbox: Sandbox) -> None:
    rounds = 6
    for round_ in range(rounds):
        request_id = submit(pg_sandbox, f"request ai-frontier-research +1 permanent round {round_}", "U0PAT")
        outcomes = at_once(decide(pg_sandbox, request_id, "U0LEE"), decide(pg_sandbox, request_id, "U0DANA"))
        assert all(o.startswith("You approved") for o in outcomes), outcomes  # neither decision is lost
        row = pg_sandbox.database.run(lambda r, i=request_id: r.request(i))
        assert row.state == RequestState.APPLIED and len(row.approvals) == 2
        assert audit(pg_sandbox, request_id).count("request_applied") == 1
    assert pg_sandbox.kube.hard("ai-frontier-research", "compute-quota") == str(4 + rounds)


@pytest.mark.postgres
def test_concurrent_permanent_changes_to_one_namespace_both_count(pg_sandbox: Sandbox) -> None:
    first = submit(pg_sandbox, "request biz-model-serving +2 permanent launch A", "U0BOB")
    second = submit(pg_sandbox, "request biz-model-serving +2 permanent launch B", "U0BOB")
    at_once(decide(pg_sandbox, first, "U0MAYA"), decide(pg_sandbox, second, "U0PAT"))
    assert pg_sandbox.database.run(lambda r: r.namespace("biz-model-serving", GPU)).base_gpus == 20
    assert pg_sandbox.kube.hard("biz-model-serving", "compute-quota") == "20"


@pytest.mark.postgres
def test_concurrent_totals_for_one_namespace_are_each_rederived_against_the_quota_the_other_wrote(
    pg_sandbox: Sandbox,
) -> None:
    """Two "18 in total" approved at once: each approval is rechecked in the namespace's critical section,
    so the second finds the first's 18 and adds nothing (it used to add +2 again when both read 16 first)."""
    first = submit(pg_sandbox, "request biz-model-serving 18 permanent launch A", "U0BOB")
    second = submit(pg_sandbox, "request biz-model-serving 18 permanent launch B", "U0BOB")  # +2 each, asked against 16
    at_once(decide(pg_sandbox, first, "U0MAYA"), decide(pg_sandbox, second, "U0PAT"))
    assert pg_sandbox.database.run(lambda r: r.namespace("biz-model-serving", GPU)).base_gpus == 18
    assert pg_sandbox.kube.hard("biz-model-serving", "compute-quota") == "18"
    deltas = pg_sandbox.database.run(lambda r: sorted(r.request(i).delta for i in (first, second)))  # type: ignore[union-attr]
    assert deltas == [0, 2]


@pytest.mark.postgres
def test_the_advisory_lock_has_one_holder_and_is_lost_with_its_connection(postgres_url: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    from bot.leadership import PostgresAdvisoryLock

    first, second = PostgresAdvisoryLock(postgres_url), PostgresAdvisoryLock(postgres_url)
    try:
        assert first.acquire() and first.held()
        assert not second.acquire() and not second.held()
        conninfo = make_url(postgres_url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(conninfo, autocommit=True) as admin:  # the leader's connection dies
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gpu-quota-bot-leader'"
                " AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)"
            )
        assert not first.held()
        assert second.acquire() and second.held()
    finally:
        first.release()
        second.release()
