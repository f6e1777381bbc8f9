import time

from bot.leadership import LeaderLoop, SoleReplica


class ScriptedLeadership:
    """Holds the leadership while ``holding`` says so; counts the attempts."""

    def __init__(self) -> None:
        self.available = True
        self.holding = False
        self.released = False

    def acquire(self) -> bool:
        if self.available:
            self.holding = True
        return self.holding

    def held(self) -> bool:
        return self.holding

    def release(self) -> None:
        self.released = True
        self.holding = False


def wait_until(condition, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_a_leader_that_loses_the_lock_stops_its_jobs_and_takes_them_up_again() -> None:
    leadership = ScriptedLeadership()
    events: list[str] = []
    loop = LeaderLoop(leadership, on_gained=lambda: events.append("gained"), on_lost=lambda: events.append("lost"), interval=0.02)
    loop.start()
    try:
        assert wait_until(lambda: events == ["gained"])
        leadership.available = False
        leadership.holding = False  # the database connection died: the lock is gone
        assert wait_until(lambda: events == ["gained", "lost"])
        assert not loop.leading
        leadership.available = True
        assert wait_until(lambda: events == ["gained", "lost", "gained"])
    finally:
        loop.stop()
    assert events[-1] == "lost" and leadership.released  # stopping gives the leadership up


def test_a_sole_replica_always_leads() -> None:
    sole = SoleReplica()
    assert sole.acquire() and sole.held()
