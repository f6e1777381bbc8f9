"""The work pool: no refusal below the documented limit, "expired" instead of late work, both counted."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from bot.executor import MAX_WAIT_SECONDS, WAITING, WORKERS, TrackingExecutor


def refused(interaction: str, reason: str) -> float:
    return REGISTRY.get_sample_value("gpu_quota_refused_total", {"interaction": interaction, "reason": reason}) or 0.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()


def test_a_burst_up_to_the_documented_limit_is_accepted_whole_and_only_the_next_one_is_refused(gate: threading.Event) -> None:
    pool = TrackingExecutor()  # the production sizes
    done: list[int] = []
    busy: list[int] = []
    before = refused("command", "busy")
    for n in range(WORKERS + WAITING):  # every worker held up, every waiting place taken
        pool.hand_off(
            lambda n=n: (gate.wait(), done.append(n)),
            ack=lambda: None,
            busy_ack=lambda n=n: busy.append(n),
            interaction="command",
        )
    assert busy == []
    assert not pool.hand_off(lambda: None, ack=lambda: None, busy_ack=lambda: busy.append(-1), interaction="command")
    assert busy == [-1] and refused("command", "busy") == before + 1
    gate.set()
    assert pool.wait_idle(timeout=60)
    assert sorted(done) == list(range(WORKERS + WAITING))  # each accepted piece done, once
    pool.shutdown()


def test_work_that_waited_past_the_response_urls_life_is_answered_expired_not_done(gate: threading.Event) -> None:
    clock = Clock()
    pool = TrackingExecutor(1, max_waiting=2, clock=clock)
    said: list[str] = []
    before = refused("click", "expired")
    pool.hand_off(gate.wait, ack=lambda: None, busy_ack=lambda: None)  # holds the only worker
    pool.hand_off(
        lambda: said.append("late work"),
        ack=lambda: None,
        busy_ack=lambda: None,
        expired=lambda: said.append("expired"),
        interaction="click",
    )
    clock.now += MAX_WAIT_SECONDS + 1
    pool.hand_off(
        lambda: said.append("fresh work"),
        ack=lambda: None,
        busy_ack=lambda: None,
        expired=lambda: said.append("?"),
        interaction="click",
    )
    gate.set()
    assert pool.wait_idle(timeout=10)
    assert said == ["expired", "fresh work"]
    assert refused("click", "expired") == before + 1
    pool.shutdown()


def test_work_without_a_deadline_is_done_however_long_it_waited(gate: threading.Event) -> None:
    clock = Clock()
    pool = TrackingExecutor(1, max_waiting=1, clock=clock)
    said: list[str] = []
    pool.hand_off(gate.wait, ack=lambda: None, busy_ack=lambda: None)
    pool.hand_off(lambda: said.append("event handled"), ack=lambda: None, busy_ack=lambda: None)  # an event: no response URL
    clock.now += 10 * MAX_WAIT_SECONDS
    gate.set()
    assert pool.wait_idle(timeout=10)
    assert said == ["event handled"]
    pool.shutdown()
