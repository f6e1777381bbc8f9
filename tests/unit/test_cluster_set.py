"""ClusterSet: each call goes to the cluster its namespace key names, and a cluster that stops answering
delays only itself (fails fast while down, never holds more than its share of threads)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

import pytest

from bot.adapters.clusters import ClusterDown, ClusterSet
from bot.domain.quota import QuotaSnapshot
from bot.errors import QuotaConflict, TemporaryError, Unreachable
from bot.services.ports import QuotaRefusal

AT = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


class FakeKube:
    """One cluster's Kubernetes client: quotas by bare name; ``fail`` makes every call raise it."""

    def __init__(self, quotas: dict[str, int]) -> None:
        self.quotas = quotas
        self.calls = 0
        self.fail: Exception | None = None
        self.hold: threading.Event | None = None  # calls wait for it (a hanging cluster)

    def read_quota(self, namespace: str, name: str, resource: str, *, max_age: float = 0.0) -> QuotaSnapshot:
        self.calls += 1
        if self.hold is not None:
            self.hold.wait(5)
        if self.fail is not None:
            raise self.fail
        return QuotaSnapshot(namespace, name, self.quotas[namespace], 0, None, "1", None)

    def quota_refusals(self) -> list[QuotaRefusal]:
        if self.fail is not None:
            raise self.fail
        return [
            QuotaRefusal(namespace, "Job", "train", "u", "nvidia.com/gpu", "exceeded quota", 1, None) for namespace in self.quotas
        ]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cluster_set(home: FakeKube, remote: FakeKube, clock: Clock, *, in_flight: int = 4, slow_after: float = 1.0) -> ClusterSet:
    return ClusterSet(
        {"": (home, None), "us-2": (remote, None)},  # type: ignore[dict-item]
        retry_after=10.0,
        in_flight=in_flight,
        slow_after=slow_after,
        monotonic=clock,
        now=lambda: AT,
    )


def test_a_key_reaches_its_cluster_with_the_bare_name_and_comes_back_keyed() -> None:
    home, remote = FakeKube({"research": 4}), FakeKube({"research": 2})
    clusters = cluster_set(home, remote, Clock())
    assert clusters.read_quota("research", "q", "nvidia.com/gpu").hard == 4
    remote_quota = clusters.read_quota("us-2/research", "q", "nvidia.com/gpu")
    assert (remote_quota.namespace, remote_quota.hard) == ("us-2/research", 2)


def test_a_cluster_that_fails_is_down_fails_fast_and_is_tried_again_later() -> None:
    home, remote, clock = FakeKube({"research": 4}), FakeKube({"research": 2}), Clock()
    clusters = cluster_set(home, remote, clock)
    remote.fail = Unreachable("connection refused")
    with pytest.raises(TemporaryError):
        clusters.read_quota("us-2/research", "q", "nvidia.com/gpu")
    with pytest.raises(ClusterDown) as down:
        clusters.read_quota("us-2/research", "q", "nvidia.com/gpu")
    assert remote.calls == 1 and "waiting for cluster us-2: connection refused" in str(down.value)  # not called again
    assert clusters.read_quota("research", "q", "nvidia.com/gpu").hard == 4  # the home cluster goes on
    assert [(s.cluster, s.up, s.since) for s in clusters.states()] == [("", True, None), ("us-2", False, AT)]

    with pytest.raises(ClusterDown):
        clusters.check_answering("us-2/research")
    assert remote.calls == 1  # asked nothing

    remote.fail = None
    clock.now += 10  # due for another try
    clusters.check_answering("us-2/research")  # a call would be let through
    assert remote.calls == 1 and not clusters.states()[1].up  # and the try is still there to take
    assert clusters.read_quota("us-2/research", "q", "nvidia.com/gpu").hard == 2
    assert all(state.up for state in clusters.states())


@pytest.mark.parametrize("answer", [QuotaConflict("the object has been modified"), TemporaryError("the API server answered 503")])
def test_an_answer_even_an_error_is_not_a_cluster_down(answer: Exception) -> None:
    home, remote = FakeKube({"research": 4}), FakeKube({"research": 2})
    clusters = cluster_set(home, remote, Clock())
    remote.fail = answer
    for _ in range(2):  # tried again at once, not held back
        with pytest.raises(type(answer)):
            clusters.read_quota("us-2/research", "q", "nvidia.com/gpu")
    assert remote.calls == 2 and all(state.up for state in clusters.states())


def test_a_hanging_cluster_holds_at_most_its_share_of_threads() -> None:
    home, remote = FakeKube({"research": 4}), FakeKube({"research": 2})
    clusters = cluster_set(home, remote, Clock(), in_flight=1, slow_after=0.05)
    remote.hold = threading.Event()
    hanging = threading.Thread(target=lambda: clusters.read_quota("us-2/research", "q", "nvidia.com/gpu"))
    hanging.start()
    while remote.calls == 0:
        pass
    time.sleep(0.1)  # past slow_after: us-2 hangs
    with pytest.raises(TemporaryError, match="too many calls in flight"):
        clusters.read_quota("us-2/research", "q", "nvidia.com/gpu")  # refused at once, not queued behind the hang
    with pytest.raises(ClusterDown, match="waiting for cluster us-2: no answer for 0 s"):
        clusters.check_answering("us-2/research")  # for whoever waits to call it
    assert clusters.read_quota("research", "q", "nvidia.com/gpu").hard == 4
    clusters.check_answering("research")  # the home cluster answers
    remote.hold.set()
    hanging.join()
    clusters.check_answering("us-2/research")  # it answered


def test_a_call_waits_for_a_slot_of_a_cluster_that_answers() -> None:
    home, remote = FakeKube({"research": 4}), FakeKube({"research": 2})
    clusters = cluster_set(home, remote, Clock(), in_flight=1)
    remote.hold = threading.Event()
    first = threading.Thread(target=lambda: clusters.read_quota("us-2/research", "q", "nvidia.com/gpu"))
    first.start()
    while remote.calls == 0:
        pass
    threading.Timer(0.05, remote.hold.set).start()  # the call in flight answers
    assert clusters.read_quota("us-2/research", "q", "nvidia.com/gpu").hard == 2  # queued for its slot, not refused
    first.join()
    assert all(state.up for state in clusters.states())


def test_what_spans_the_clusters_leaves_out_one_that_fails() -> None:
    home, remote = FakeKube({"research": 4}), FakeKube({"research": 2})
    clusters = cluster_set(home, remote, Clock())
    assert [r.namespace for r in clusters.quota_refusals()] == ["research", "us-2/research"]
    remote.fail = Unreachable("timed out")
    assert [r.namespace for r in clusters.quota_refusals()] == ["research"]
