"""Proposal arithmetic: give what was never used, to namespaces the quota kept blocking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.domain.proposals import MAX_PROPOSALS, MIN_BLOCKED, NamespaceUse, propose, spare


def use(namespace: str, quota: int, peak: float, blocked: int = 0) -> NamespaceUse:
    return NamespaceUse(namespace, quota, peak, mean=peak / 2, busy=0.5, blocked=blocked)


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


namespaces = st.lists(
    st.builds(
        NamespaceUse,
        namespace=st.text("abcdef", min_size=1, max_size=4),
        quota=st.integers(0, 64),
        peak=st.floats(0, 80, allow_nan=False),
        mean=st.just(0.0),
        busy=st.none(),
        blocked=st.integers(0, 30),
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
        assert proposal.source.blocked == 0
        assert proposal.target.blocked >= MIN_BLOCKED and spare(proposal.target) == 0
        assert proposal.source.namespace != proposal.target.namespace
    sources = {p.source.namespace for p in proposals}
    assert not sources & {p.target.namespace for p in proposals}
