"""Acks never wait for work: signed Slack HTTP into the real Bolt app while the work is held up.

The Kubernetes API stand-in holds every request until the test opens a gate, so the work after an
ack (which reads the quota first) cannot finish; the acks must come back anyway, and when the work
pool is full the person is told the bot is busy instead of waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import event

from bot.adapters.slack import ids, modals
from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.executor import BUSY, WORKERS, TrackingExecutor
from bot.sandbox.httpserver import Incoming, Outgoing
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.session import Sandbox
from bot.sandbox.world import seed_cluster
from bot.services.ports import ActionKind
from tests.integration.conftest import START, serve

ALICE, LEE = "U0ALICE", "U0LEE"


class GatedKube(KubeApiStandIn):
    """The Kubernetes API stand-in, answering only while ``gate`` is open."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Semaphore(0)  # released once per request held at the gate
        self.seen: list[str] = []

    def _handle(self, incoming: Incoming) -> Outgoing:
        self.seen.append(f"{incoming.method} {incoming.path}")
        if not self.gate.is_set():
            self.waiting.release()
            self.gate.wait()
        return super()._handle(incoming)


class Bot:
    """The sandbox app behind waitress, with a gated cluster and a work pool of a chosen size."""

    def __init__(self, tmp_path: Path, executor: TrackingExecutor) -> None:
        self.kube = GatedKube().start()
        seed_cluster(self.kube)
        self.box = Sandbox(clock=ManualClock(START), kubeconfig=self.kube.write_kubeconfig(tmp_path / "kubeconfig"))
        self.box.executor = executor
        self.box.start()
        assert self.box.app is not None and self.box.side is not None
        self.side = self.box.side
        self.url, self._server = serve(WebApp(self.box.app))

    def post(self, body: str) -> requests.Response:
        """Post without waiting for the work: the answer is the acknowledgement alone."""
        return requests.post(f"{self.url}/slack/events", data=body.encode(), headers=self.side.sign(body), timeout=30)

    def command(self, text: str, user: str = ALICE) -> requests.Response:
        return self.post(self.side.slash_command(user_id=user, text=text))

    def responses(self) -> list[str]:
        return [r.text for r in self.box.slack.records if r.kind == "response"]

    def close(self) -> None:
        self.kube.gate.set()
        self._server.close()
        self.box.stop()
        self.kube.stop()


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[Bot]:
    bot = Bot(tmp_path, TrackingExecutor())
    yield bot
    bot.close()


@pytest.fixture
def small_bot(tmp_path: Path) -> Iterator[Bot]:
    """One worker and one waiting place: the third piece of work finds the pool full."""
    bot = Bot(tmp_path, TrackingExecutor(1, max_waiting=1))
    yield bot
    bot.close()


def test_acks_come_back_while_every_worker_is_held_up(bot: Bot) -> None:
    bot.kube.gate.clear()
    # More requests than workers, each stuck in its work: each ack still comes back, empty and at once.
    acks = [bot.command(f"request ai-frontier-research +1 for 1d job {n}") for n in range(WORKERS + 2)]
    assert [a.status_code for a in acks] == [200] * (WORKERS + 2)
    assert [a.text for a in acks] == [""] * (WORKERS + 2)
    for _ in range(WORKERS):
        assert bot.kube.waiting.acquire(timeout=30), "the work did not start"
    assert bot.responses() == []  # nothing was done yet: the acks did not wait for it
    assert not bot.box.executor.wait_idle(timeout=0)

    bot.kube.gate.set()
    assert bot.box.executor.wait_idle(timeout=60)
    submitted = [text for text in bot.responses() if "submitted" in text]
    assert len(submitted) == WORKERS + 2  # every request was done once the cluster answered
    assert len({text.split()[1] for text in submitted}) == WORKERS + 2  # GQ-1 ... GQ-10, none twice


def test_form_errors_and_help_stay_in_the_ack(bot: Bot) -> None:
    bot.kube.gate.clear()
    assert "gpu-quota-bot" in bot.command("help").text
    assert "I don't know `frobnicate`" in bot.command("frobnicate").text
    answer = bot.post(bot.side.view_submission(user_id=ALICE, view=extend_form(), values={"duration": "soon"})).json()
    assert answer["response_action"] == "errors" and set(answer["errors"]) == {"duration"}
    assert bot.box.executor.wait_idle(timeout=0)  # none of these needed any work after the ack


def extend_form() -> dict[str, Any]:
    """The extend form as the bot opens it, as Slack sends it back (with its view id)."""
    return {**modals.extend_form(1, duration=None).to_dict(), "id": "V0EXTEND"}


def fill(bot: Bot) -> None:
    """Two status commands: one held at the gate in the only worker, one waiting behind it."""
    bot.kube.gate.clear()
    assert bot.command("status ai-frontier-research").text == ""
    assert bot.command("status ai-frontier-research").text == ""
    assert bot.kube.waiting.acquire(timeout=30)


def test_a_full_pool_answers_busy_to_a_command_and_loses_nothing_accepted(small_bot: Bot) -> None:
    fill(small_bot)
    busy = small_bot.command("request ai-frontier-research +1 for 1d one too many")
    assert busy.status_code == 200 and busy.text == BUSY  # the slash command's ack text is shown to the person

    small_bot.kube.gate.set()
    assert small_bot.box.executor.wait_idle(timeout=60)
    responses = small_bot.responses()
    assert len(responses) == 2 and all("ai-frontier-research" in text for text in responses)  # both statuses answered
    assert not [r for r in small_bot.box.slack.records if r.kind == "message"]  # the busy request was not submitted
    # Once there is room again, the same command goes through.
    assert small_bot.command("request ai-frontier-research +1 for 1d one too many").text == ""
    assert small_bot.box.executor.wait_idle(timeout=60)
    assert small_bot.responses()[-1].startswith(":inbox_tray: GQ-1 submitted")


def test_a_full_pool_answers_busy_to_a_click_and_a_form(small_bot: Bot) -> None:
    fill(small_bot)
    click = small_bot.side.block_action(
        user_id=LEE, action_id=ids.ACTION_IDS[ActionKind.APPROVE], value="1", channel_id="C0FRONTIER", message_ts="1.000001"
    )
    assert small_bot.post(click).status_code == 200
    form = small_bot.side.view_submission(user_id=ALICE, view=extend_form(), values={"duration": "1d"})
    answer = small_bot.post(form).json()
    # The form stays open with what the person typed, and says why.
    assert answer == {"response_action": "errors", "errors": {ids.REASON_BLOCK: BUSY}}

    small_bot.kube.gate.set()
    assert small_bot.box.executor.wait_idle(timeout=60)
    assert BUSY in small_bot.responses()  # the click's answer went through its response_url
    assert not [r for r in small_bot.box.slack.records if r.kind == "view_update"]  # the form was not worked on


def test_requests_do_not_list_the_whole_cluster_each(bot: Bot) -> None:
    for n in range(3):
        assert bot.command(f"request ai-frontier-research +1 for 1d job {n}").status_code == 200
        assert bot.box.executor.wait_idle(timeout=60)
    assert [r for r in bot.responses() if "submitted" in r] and len(bot.responses()) == 3
    # The capacity line comes from a cached view: nodes and quotas are listed once, not per request.
    assert bot.kube.seen.count("GET /api/v1/nodes") == 1
    assert bot.kube.seen.count("GET /api/v1/resourcequotas") == 1
    cards = [r.text for r in bot.box.slack.records if r.kind == "message" and r.channel == "C0FRONTIER"]
    assert len(cards) == 3


def test_a_submission_reads_no_request_row_again_however_many_grants_are_active(bot: Bot) -> None:
    """The card is rendered from the row the submission created, its ts written without reading it back,
    and the namespace's active grants are counted in one query (not one more read per grant)."""
    for n in range(3):
        bot.box.send(bot.side.slash_command(user_id=ALICE, text=f"request ai-frontier-research +1 for 1d job {n}"))
    for (channel, ts), message in list(bot.box.slack.messages.items()):
        buttons = [e for b in message.blocks if b.get("type") == "actions" for e in b["elements"]]
        for button in [e for e in buttons if e.get("action_id") == ids.ACTION_IDS[ActionKind.APPROVE]][:1]:
            bot.box.send(
                bot.side.block_action(
                    user_id=LEE, action_id=button["action_id"], value=button["value"], channel_id=channel, message_ts=ts
                )
            )
    assert sum("approved" in r and "applied" in r for r in bot.responses()) == 3  # three active grants

    # Within auto-approval's limits on its own (4h), so the namespace's auto-approved GPUs are counted.
    statements = statements_of_submitting(bot, "request ai-frontier-research +1 for 2h one more")
    assert "auto-approved and applied" in bot.responses()[-1]
    begins = [i for i, s in enumerate(statements) if s == "BEGIN IMMEDIATE"]
    submission = statements[: begins[2]]  # recording it, then where Slack put its card (the apply follows)
    assert any(s.startswith("INSERT INTO requests") for s in submission)
    assert any(s.startswith("UPDATE requests SET") and "message_ts" in s for s in submission)
    assert not [s for s in submission if s.startswith("SELECT") and "FROM requests WHERE requests.id =" in s]
    assert len([s for s in submission if "FROM grants" in s]) == 1


def request_reads_before_deciding(statements: list[str]) -> list[str]:
    """The reads of a request by id ahead of the transaction that records the decision."""
    deciding = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO decisions"))
    before = statements[: max(i for i, s in enumerate(statements[:deciding]) if s == "BEGIN IMMEDIATE")]
    return [s for s in before if s.startswith("SELECT") and "FROM requests WHERE requests.id =" in s]


def statements_of_submitting(bot: Bot, text: str) -> list[str]:
    """The SQL statements the bot runs while Alice submits ``text`` (whitespace collapsed)."""
    return statements_of(bot, bot.side.slash_command(user_id=ALICE, text=text))


def statements_of(bot: Bot, body: str) -> list[str]:
    """The SQL statements the bot runs while it handles ``body`` (whitespace collapsed)."""
    statements: list[str] = []

    def seen(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(" ".join(statement.split()))

    assert bot.box.database is not None
    event.listen(bot.box.database.engine, "before_cursor_execute", seen)
    try:
        bot.box.send(body)
    finally:
        event.remove(bot.box.database.engine, "before_cursor_execute", seen)
    return statements


def test_a_submission_takes_two_transactions_its_price_and_budget_read_with_the_insert(bot: Bot) -> None:
    """One transaction decides and records the request (price, budget, auto-approval figures, the insert),
    one more stores where Slack put its message: no separate transaction per figure."""
    statements = statements_of_submitting(bot, "request ai-frontier-research +1 for 1d a job")
    assert "submitted" in bot.responses()[-1]
    begins = [i for i, s in enumerate(statements) if s == "BEGIN IMMEDIATE"]
    assert len(begins) == 2, statements
    first = statements[begins[0] : begins[1]]
    insert = next(i for i, s in enumerate(first) if s.startswith("INSERT INTO requests"))
    assert any("FROM ledger_entries" in s for s in first[:insert])  # the price
    assert any("FROM team_spend" in s for s in first[:insert])  # the budget
    assert any(s.startswith("UPDATE requests SET") and "message_ts" in s for s in statements[begins[1] :])


def test_an_approve_click_reads_its_request_once_before_the_transaction_that_decides(bot: Bot) -> None:
    """The click's checks (may Lee decide, does it need the confirmation form) and the decision share one
    read of the request ahead of the deciding transaction, which reads it again under its lock."""
    bot.box.send(bot.side.slash_command(user_id=ALICE, text="request ai-frontier-research +1 for 1d a job"))
    (channel, ts), message = next(iter(bot.box.slack.messages.items()))
    buttons = [e for b in message.blocks if b.get("type") == "actions" for e in b["elements"]]
    approve = next(e for e in buttons if e.get("action_id") == ids.ACTION_IDS[ActionKind.APPROVE])
    click = bot.side.block_action(
        user_id=LEE, action_id=approve["action_id"], value=approve["value"], channel_id=channel, message_ts=ts
    )
    statements = statements_of(bot, click)
    assert bot.responses()[-1] == "You approved GQ-1; it is applied."
    assert len(request_reads_before_deciding(statements)) == 1, statements


def test_a_typed_approve_reads_its_request_once_before_the_transaction_that_decides(bot: Bot) -> None:
    """``approve`` typed in the request's thread is checked and decided as the button is: one read."""
    bot.box.send(bot.side.slash_command(user_id=ALICE, text="request ai-frontier-research +1 for 1d a job"))
    (channel, ts), _ = next(iter(bot.box.slack.messages.items()))
    typed = bot.side.event(bot.side.thread_reply(user_id=LEE, channel_id=channel, thread_ts=ts, text="approve"))
    statements = statements_of(bot, typed)
    assert len(request_reads_before_deciding(statements)) == 1, statements
    assert any("Approved by" in r.text for r in bot.box.slack.thread(channel, ts))
