import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.lifecycle import (
    REQUEST_TRANSITIONS,
    GrantState,
    InvalidTransition,
    RequestState,
    check_grant_transition,
    check_request_transition,
)

ALLOWED = [
    (RequestState.PENDING, RequestState.APPROVED),
    (RequestState.PENDING, RequestState.DENIED),
    (RequestState.PENDING, RequestState.CANCELLED),
    (RequestState.PENDING, RequestState.EXPIRED),
    (RequestState.APPROVED, RequestState.APPLIED),
    (RequestState.APPROVED, RequestState.FAILED),
    (RequestState.FAILED, RequestState.APPROVED),
]


@pytest.mark.parametrize(("current", "target"), ALLOWED)
def test_allowed_transitions(current: RequestState, target: RequestState) -> None:
    check_request_transition(current, target)


@pytest.mark.parametrize(
    ("current", "target"),
    [(c, t) for c in RequestState for t in RequestState if (c, t) not in ALLOWED],
)
def test_every_other_transition_is_refused(current: RequestState, target: RequestState) -> None:
    with pytest.raises(InvalidTransition):
        check_request_transition(current, target)


def test_final_states_have_no_way_out() -> None:
    final = {state for state, targets in REQUEST_TRANSITIONS.items() if not targets}
    assert final == {RequestState.APPLIED, RequestState.DENIED, RequestState.CANCELLED, RequestState.EXPIRED}
    assert REQUEST_TRANSITIONS[RequestState.FAILED] == {RequestState.APPROVED}  # an admin can retry


@given(st.lists(st.sampled_from(list(RequestState)), max_size=12))
def test_a_request_is_applied_at_most_once_along_any_path(targets: list[RequestState]) -> None:
    state, applied = RequestState.PENDING, 0
    for target in targets:
        try:
            check_request_transition(state, target)
        except InvalidTransition:
            continue
        state = target
        applied += target == RequestState.APPLIED
    assert applied <= 1


def test_grants_only_move_forward() -> None:
    check_grant_transition(GrantState.ACTIVE, GrantState.ENDING)
    check_grant_transition(GrantState.ENDING, GrantState.ENDED)
    for current, target in [
        (GrantState.ENDED, GrantState.ACTIVE),
        (GrantState.ACTIVE, GrantState.ENDED),
        (GrantState.ENDING, GrantState.ACTIVE),
    ]:
        with pytest.raises(InvalidTransition):
            check_grant_transition(current, target)
