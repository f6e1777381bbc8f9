from datetime import timedelta

from hypothesis import assume, given
from hypothesis import strategies as st

from bot.domain.failure_reasons import AboveLimit, QuotaTooLow
from bot.domain.quota import (
    CapacityImpact,
    QuotaSnapshot,
    change_cost,
    change_problem,
    desired_gpus,
    in_sync,
    observe,
)


def snap(hard: int, *, bot: int | None = None, limits: int | None = None, used: int = 0) -> QuotaSnapshot:
    return QuotaSnapshot("ns", "compute-quota", hard, used, limits, "1", bot)


def test_first_sight_adopts_the_cluster_value_as_base() -> None:
    seen = observe(snap(4), base=None, last_seen=None, seen_version=None, active_grants=0, default_quota=0)
    assert (seen.base, seen.last_seen, seen.drift) == (4, 4, 0)


def test_first_sight_without_a_quota_uses_the_default() -> None:
    seen = observe(None, base=None, last_seen=None, seen_version=None, active_grants=0, default_quota=2)
    assert (seen.base, seen.last_seen) == (2, None)


def test_the_bots_own_write_is_not_drift_even_if_the_database_missed_it() -> None:
    # The patch went through but the process died before recording it: the annotation proves it was the bot.
    seen = observe(snap(8, bot=8), base=8, last_seen=4, seen_version=None, active_grants=0, default_quota=0)
    assert (seen.drift, seen.base, seen.last_seen) == (0, 8, 8)


def test_a_hand_edit_is_adopted_into_the_base() -> None:
    # Base 4 with a +4 grant: the bot wrote 8; someone ran kubectl edit and set 6.
    seen = observe(snap(6, bot=8), base=4, last_seen=8, seen_version=None, active_grants=4, default_quota=0)
    assert seen.drift == -2 and seen.base == 2
    assert desired_gpus(seen.base, 4) == 6  # the person's number stands while the grant runs
    assert desired_gpus(seen.base, 0) == 2  # and the grant still goes back when it ends


def test_a_deleted_quota_is_recreated_without_adopting_anything() -> None:
    seen = observe(None, base=4, last_seen=8, seen_version=None, active_grants=4, default_quota=0)
    assert (seen.drift, seen.base) == (0, 4)


def test_desired_never_goes_below_zero() -> None:
    assert desired_gpus(-3, 1) == 0


@given(base=st.integers(0, 64), grants=st.integers(0, 64), edited=st.integers(0, 128), later_grants=st.integers(0, 64))
def test_adopting_a_hand_edit_keeps_the_persons_number_and_later_grant_changes_apply_on_top(
    base: int, grants: int, edited: int, later_grants: int
) -> None:
    assume(edited >= grants)  # below the running grants the base would go negative: see the next test
    applied = desired_gpus(base, grants)
    seen = observe(
        snap(edited, bot=applied), base=base, last_seen=applied, seen_version=None, active_grants=grants, default_quota=0
    )
    assert desired_gpus(seen.base, grants) == edited
    assert desired_gpus(seen.base, later_grants) == max(0, edited + later_grants - grants)
    # Observing the version recorded with the adoption again finds nothing new.
    again = observe(
        snap(edited, bot=applied),
        base=seen.base,
        last_seen=seen.last_seen,
        seen_version="1",
        active_grants=grants,
        default_quota=0,
    )
    assert again.drift == 0 and again.base == seen.base


def test_the_base_never_goes_negative() -> None:
    # Base 2 with a +4 grant (the bot wrote 6); a person sets 1: the base drops to 0, not to -3.
    seen = observe(snap(1, bot=6), base=2, last_seen=6, seen_version=None, active_grants=4, default_quota=0)
    assert (seen.base, seen.drift) == (0, -2)  # the drift recorded is what was adopted
    assert desired_gpus(seen.base, 4) == 4


def test_the_stamp_not_the_stored_value_measures_a_hand_edit() -> None:
    # The database last saw 10 (another writer's write it did not record yet); the stamp says the bot wrote 12.
    seen = observe(snap(12, bot=12), base=10, last_seen=10, seen_version="0", active_grants=2, default_quota=0)
    assert seen.drift == 0
    seen = observe(snap(15, bot=12), base=10, last_seen=10, seen_version="0", active_grants=2, default_quota=0)
    assert (seen.drift, seen.base) == (3, 13)


def test_a_version_already_accounted_for_is_not_adopted_again() -> None:
    seen = observe(snap(15, bot=12), base=13, last_seen=15, seen_version="1", active_grants=2, default_quota=0)
    assert (seen.drift, seen.base) == (0, 13)


def test_change_problem_checks_the_limit_against_the_quota_now() -> None:
    assert change_problem(before=4, delta=12, max_gpus=16) is None
    assert change_problem(before=5, delta=12, max_gpus=16) == AboveLimit(before=5, delta=12, max_gpus=16)
    assert change_problem(before=20, delta=-2, max_gpus=16) is None  # a decrease is fine above the limit
    assert change_problem(before=1, delta=-2, max_gpus=16) == QuotaTooLow(before=1, decrease=2)


def test_in_sync_needs_value_stamp_and_equal_limits() -> None:
    assert in_sync(snap(8, bot=8, limits=8), 8)
    assert in_sync(snap(8, bot=8), 8)
    assert not in_sync(snap(8, bot=None), 8)
    assert not in_sync(snap(8, bot=8, limits=4), 8)
    assert not in_sync(snap(8, bot=8), 9)
    assert not in_sync(None, 0)


def test_capacity() -> None:
    assert CapacityImpact(24, 28).oversubscribed and CapacityImpact(24, 28).headroom == -4
    assert not CapacityImpact(24, 24).oversubscribed


def test_costs() -> None:
    assert change_cost(gpus=4, duration=timedelta(days=3), price_per_gpu_hour=2.5) == 720.0
    assert change_cost(gpus=-3, duration=None, price_per_gpu_hour=1.0) == 2190.0


def test_a_quota_without_the_resources_key_is_no_limit_not_zero() -> None:
    """A ResourceQuota that does not list requests.<resource> puts no limit on it: the first sight takes the
    policy's default, never 0 (which would refuse every new pod of that resource)."""
    uncounted = QuotaSnapshot("ns", "compute-quota", 0, 0, None, "1", None, counted=False)
    seen = observe(uncounted, base=None, last_seen=None, seen_version=None, active_grants=0, default_quota=2)
    assert (seen.base, seen.drift) == (2, 0)
    assert not in_sync(uncounted, 0)  # the key is written, even when the desired value is 0


def test_a_key_removed_by_hand_is_put_back_not_adopted_as_zero() -> None:
    uncounted = QuotaSnapshot("ns", "compute-quota", 0, 0, None, "2", None, counted=False)
    seen = observe(uncounted, base=4, last_seen=4, seen_version="1", active_grants=0, default_quota=0)
    assert (seen.base, seen.drift) == (4, 0)
