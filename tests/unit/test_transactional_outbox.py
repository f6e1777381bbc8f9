"""A message decided with a state change is recorded in that change's transaction: a process that dies
right after the commit (SIGKILL, OOM, a node drain) leaves the message in the outbox, and the next
reconcile tick delivers it. Here the process "dies" by ``SystemExit`` raised right after the commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from bot.adapters.db.database import Database
from bot.domain.lifecycle import RequestState, Verdict
from bot.domain.resources import GPU
from bot.services.ports import QuotaRefusal, Repository
from tests.unit.conftest import World

T = TypeVar("T")
FRONTIER = "ai-frontier-research"


class DiesAfterCommit:
    """The service's database, except that the process dies right after the first transaction that
    leaves ``dead`` true has committed (before anything else the service would do next)."""

    def __init__(self, database: Database, dead: Callable[[Repository], bool]) -> None:
        self._database = database
        self._dead = dead

    def run(self, work: Callable[[Repository], T], *, attempts: int = 6) -> T:
        result = self._database.run(work, attempts=attempts)
        if self._database.run(self._dead):
            raise SystemExit("killed right after the commit")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._database, name)


def state_is(request_id: int, state: RequestState) -> Callable[[Repository], bool]:
    def check(repo: Repository) -> bool:
        row = repo.request(request_id)
        return row is not None and row.state == state

    return check


def restart(world: World) -> None:
    """The next process: its reconcile tick delivers what the outbox holds."""
    world.services.reconciler.tick()


def test_a_reclaim_closed_by_a_process_that_dies_at_once_is_still_announced(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.submit("request ai-frontier-research -3 permanent slow down frontier work")
    world.database.run(
        lambda repo: repo.start_reclaim(namespace=FRONTIER, resource=GPU, request_id=1, quota=1, used=4, at=world.clock.now())
    )
    world.cluster.add(FRONTIER, 1, used=1)
    world.advance(hours=5)
    monkeypatch.setattr(
        world.services.reclaims, "_db", DiesAfterCommit(world.database, lambda repo: repo.open_reclaim(FRONTIER, GPU) is None)
    )
    with pytest.raises(SystemExit):
        world.services.reclaims.check()
    assert not [text for text in world.replies() if "freed" in text]

    restart(world)
    assert [text for text in world.replies() if "freed" in text] == [
        ":white_check_mark: *3 GPUs freed over 5 h as jobs finished* in *ai-frontier-research*: "
        "usage is within the quota of 1 GPU now. No pod was evicted."
    ]
    monkeypatch.undo()
    assert world.services.reclaims.check().finished == []  # closed once: nothing said twice


def test_a_denial_by_a_process_that_dies_at_once_is_still_told(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.submit("request ai-frontier-research +4 for 3d fine-tune on the new corpus")
    monkeypatch.setattr(world.services.decisions, "_db", DiesAfterCommit(world.database, state_is(1, RequestState.DENIED)))
    with pytest.raises(SystemExit):
        world.services.decisions.decide(user="U0LEE", request_id=1, verdict=Verdict.DENY, reason="not this week")
    assert world.replies() == [] and world.dms("U0ALICE") == []

    restart(world)
    assert world.replies() == [":no_entry: Denied by <@U0LEE>. Reason: not this week"]
    assert world.dms("U0ALICE") == ["GQ-1 was denied by <@U0LEE>. Reason: not this week The thread has the discussion."]
    assert world.notifier.last_card().state == RequestState.DENIED


def test_an_apply_by_a_process_that_dies_at_once_is_still_told(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.submit("request ai-frontier-research +4 for 3d fine-tune on the new corpus")
    applier = world.services.decisions._applier  # the apply has transactions of its own
    monkeypatch.setattr(applier, "_db", DiesAfterCommit(world.database, state_is(1, RequestState.APPLIED)))
    with pytest.raises(SystemExit):
        world.services.decisions.decide(user="U0LEE", request_id=1, verdict=Verdict.APPROVE)
    assert world.cluster.hard(FRONTIER) == 8 and world.replies() == [] and world.dms("U0ALICE") == []

    restart(world)
    assert "Approved by <@U0LEE> — 1 of 1." in world.replies()[0]
    assert "4 GPUs → *8 GPUs*" in world.replies()[1]
    assert "now has 8 GPUs" in world.dms("U0ALICE")[0]
    assert world.notifier.last_card().state == RequestState.APPLIED


def dies_after_first_commit(database: Database, dead: Callable[[Repository], bool], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every transaction of the process (the outbox's own too) goes through ``run``: the process dies
    right after the first one that leaves ``dead`` true has committed."""
    run = database.run

    def run_then_maybe_die(work: Callable[[Repository], T], *, attempts: int = 6) -> T:
        result = run(work, attempts=attempts)
        if run(dead):
            monkeypatch.undo()  # the next process runs normally
            raise SystemExit("killed right after the commit")
        return result

    monkeypatch.setattr(database, "run", run_then_maybe_die)


def test_a_quota_alert_is_remembered_with_its_message_so_a_crash_neither_loses_nor_doubles_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = "requests.nvidia.com/gpu"
    message = f'pods "trainer-x" is forbidden: exceeded quota: compute-quota, requested: {gpu}=2, used: {gpu}=4, limited: {gpu}=4'
    world.cluster.refusals = [QuotaRefusal(FRONTIER, "Job", "trainer", "uid-trainer", GPU, message, 3, None)]
    dies_after_first_commit(world.database, lambda repo: bool(repo.outbox_streams_pending(["channel:C0FRONTIER"])), monkeypatch)
    with pytest.raises(SystemExit):
        world.services.blocked.check()

    world.services.blocked.check()  # the next process's run
    restart(world)
    alerts = [s.text for s in world.notifier.of("post") if s.target == "C0FRONTIER"]
    assert len(alerts) == 1 and "*Job trainer*" in alerts[0]
