"""Proposal arithmetic: give what was never used, to namespaces the quota kept blocking or kept full."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.domain.proposals import (
    MAX_PROPOSALS,
    MIN_BLOCKED,
    MIN_SATURATION,
    NamespaceUse,
    Signal,
    propose,
    short,
    signals,
    spare,
)


def use(namespace: str, quota: int, peak: float, blocked: int = 0, saturation: float | None = None) -> NamespaceUse:
    return NamespaceUse(namespace, quota, peak, mean=peak / 2, busy=0.5, blocked=blocked, saturation=saturation)


def test_the_source_documents_shift() -> None:
    frontier, business = use("ai-frontier-research", 4, 2.0), use("biz-model-serving", 16, 16.0, blocked=17)
    [proposal] = propose([frontier, business])
    assert (proposal.source, proposal.target, proposal.gpus) == (frontier, business, 2)


def test_nothing_is_proposed_without_a_namespace_short_of_gpus() -> None:
    assert propose([use("a", 4, 1.0), use("b", 8, 8.0, blocked=MIN_BLOCKED - 1)]) == []


def test_a_peak_just_over_a_whole_gpu_is_rounded_up_and_float_noise_is_not() -> None:
    assert spare(use("a", 4, 2.0000000001)) == 2
    assert spare(use("a", 4, 2.5)) == 1
    assert spare(use("a", 4, 2.0, blocked=1)) == 0  # blocked once: it needed its quota


def test_sources_are_spread_over_targets_most_generous_first() -> None:
    proposals = propose([use("s1", 4, 3.0), use("s2", 8, 2.0), use("t1", 2, 2.0, blocked=5), use("t2", 2, 2.0, blocked=9)])
    assert [(p.source.namespace, p.target.namespace, p.gpus) for p in proposals] == [("s2", "t2", 6), ("s1", "t1", 1)]


def test_a_namespace_at_its_quota_most_of_the_window_takes_without_any_alert() -> None:
    frontier, business = use("ai-frontier-research", 4, 2.0), use("biz-model-serving", 16, 16.0, saturation=0.92)
    [proposal] = propose([frontier, business])
    assert (proposal.source, proposal.target, proposal.gpus) == (frontier, business, 2)
    assert signals(business) == (Signal.SATURATION,)


def test_a_namespace_at_its_quota_only_briefly_neither_takes_nor_gives() -> None:
    brief = use("vision-batch", 8, 8.0, saturation=0.04)
    assert not short(brief) and spare(brief) == 0
    assert propose([use("ai-frontier-research", 4, 2.0), brief]) == []
    assert short(use("b", 8, 8.0, saturation=MIN_SATURATION)) and not short(use("b", 8, 8.0, saturation=MIN_SATURATION - 0.01))


def test_a_quota_full_even_once_has_nothing_spare() -> None:
    """Used counts Pending pods too: a quota full at a moment when the running pods' peak was under it."""
    assert spare(use("a", 4, 2.0, saturation=0.001)) == 0
    assert spare(use("a", 4, 2.0, saturation=0.0)) == 2
    assert spare(use("a", 4, 2.0, saturation=None)) == 2  # Prometheus did not tell: the peak decides


def test_both_signals_are_named_and_either_alone_suffices() -> None:
    assert signals(use("b", 8, 8.0, blocked=MIN_BLOCKED, saturation=0.9)) == (Signal.ALERTS, Signal.SATURATION)
    assert signals(use("b", 8, 8.0, blocked=MIN_BLOCKED, saturation=0.1)) == (Signal.ALERTS,)
    assert signals(use("b", 8, 8.0, blocked=MIN_BLOCKED)) == (Signal.ALERTS,)
    assert signals(use("b", 8, 8.0, blocked=MIN_BLOCKED - 1, saturation=0.1)) == ()


def test_targets_most_blocked_first_then_longest_at_their_quota() -> None:
    proposals = propose(
        [use("s1", 4, 3.0), use("s2", 8, 2.0), use("t1", 2, 2.0, saturation=0.6), use("t2", 2, 2.0, saturation=0.9)]
    )
    assert [(p.source.namespace, p.target.namespace) for p in proposals] == [("s2", "t2"), ("s1", "t1")]
    alerted = propose([use("s1", 4, 3.0), use("t1", 2, 2.0, saturation=0.99), use("t2", 2, 2.0, blocked=4)])
    assert [p.target.namespace for p in alerted] == ["t2"]


namespaces = st.lists(
    st.builds(
        NamespaceUse,
        namespace=st.text("abcdef", min_size=1, max_size=4),
        quota=st.integers(0, 64),
        peak=st.floats(0, 80, allow_nan=False),
        mean=st.just(0.0),
        busy=st.none(),
        blocked=st.integers(0, 30),
        saturation=st.none() | st.floats(0, 1),
    ),
    max_size=12,
    unique_by=lambda u: u.namespace,
)


@given(namespaces)
def test_proposals_only_move_unused_gpus_to_blocked_namespaces(uses: list[NamespaceUse]) -> None:
    proposals = propose(uses)
    assert len(proposals) <= MAX_PROPOSALS
    assert len({p.source.namespace for p in proposals}) == len(proposals)  # a source gives once
    for proposal in proposals:
        assert proposal.gpus >= 1
        assert proposal.source.quota - proposal.gpus >= proposal.source.peak - 1e-6  # it keeps its peak
        assert proposal.source.blocked == 0 and not proposal.source.saturation  # never at its quota
        assert signals(proposal.target) and spare(proposal.target) == 0
        assert proposal.source.namespace != proposal.target.namespace
    sources = {p.source.namespace for p in proposals}
    assert not sources & {p.target.namespace for p in proposals}
