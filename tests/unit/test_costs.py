from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.costs import (
    FORECAST,
    UNKNOWN_MODEL,
    NamespaceUsage,
    add_lines,
    budget_pace,
    day_window,
    exhaustion,
    month_end_forecast,
    month_length,
    month_windows,
    over_budget_since,
    price,
    thresholds_to_send,
    today_so_far,
)
from bot.domain.policy import Pricing

BERLIN = ZoneInfo("Europe/Berlin")
PRICING = Pricing(default_per_gpu_hour=1.0, models={"A100": 2.0, "H100": 5.0})


def test_days_are_local_calendar_days_across_dst() -> None:
    assert day_window(date(2026, 10, 24), BERLIN).seconds == 24 * 3600
    assert day_window(date(2026, 10, 25), BERLIN).seconds == 25 * 3600  # clocks go back
    assert day_window(date(2026, 3, 29), BERLIN).seconds == 23 * 3600  # clocks go forward
    window = day_window(date(2026, 10, 25), BERLIN)
    assert window.start == datetime(2026, 10, 24, 22, tzinfo=timezone.utc)
    assert window.end == datetime(2026, 10, 25, 23, tzinfo=timezone.utc)


def test_month_windows_tile_the_month_without_gaps() -> None:
    windows = month_windows(date(2026, 10, 31), BERLIN)
    assert [w.day.day for w in windows] == list(range(1, 32))
    assert all(a.end == b.start for a, b in zip(windows, windows[1:], strict=False))
    assert month_length(date(2026, 10, 5), BERLIN) == timedelta(days=31, hours=1)
    assert month_length(date(2028, 2, 1), ZoneInfo("UTC")) == timedelta(days=29)


@given(
    st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 12, 31)),
    st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]),
)
def test_windows_of_a_month_always_add_up_to_its_length(day: date, zone_name: str) -> None:
    zone = ZoneInfo(zone_name)
    last = (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    windows = month_windows(last, zone)
    assert sum(w.seconds for w in windows) == month_length(day, zone).total_seconds()


def test_today_so_far_starts_at_local_midnight() -> None:
    now = datetime(2026, 11, 1, 10, 30, tzinfo=timezone.utc)
    window = today_so_far(now, BERLIN)
    assert (
        window.day == date(2026, 11, 1) and window.start == datetime(2026, 10, 31, 23, tzinfo=timezone.utc) and window.end == now
    )


def test_allocated_hours_are_priced_in_the_model_proportions_dcgm_saw() -> None:
    usage = NamespaceUsage(
        allocated_hours=30.0,
        model_hours={"A100": 10.0, "H100": 20.0},
        idle_model_hours={"H100": 4.0},
        util_hours=15.0,
        util_model_hours={"A100": 5.0, "H100": 10.0},
    )
    line = price("ns", "team", usage, PRICING)
    assert line.by_model == {"A100": (10.0, 20.0), "H100": (20.0, 100.0)}
    assert line.cost == 120.0 and line.gpu_hours == 30.0
    assert line.idle_hours == 4.0 and line.idle_cost == 20.0
    assert line.utilisation == 0.5


def test_without_dcgm_data_the_default_price_applies() -> None:
    line = price("ns", "team", NamespaceUsage(allocated_hours=10.0), PRICING)
    assert line.by_model == {UNKNOWN_MODEL: (10.0, 10.0)} and line.utilisation is None


def test_adding_days_weights_utilisation_by_gpu_hours() -> None:
    busy = price("ns", "t", NamespaceUsage(10.0, {"A100": 10.0}, {}, 9.0, {"A100": 9.0}), PRICING)
    quiet = price("ns", "t", NamespaceUsage(30.0, {"A100": 30.0}, {"A100": 30.0}, 0.0), PRICING)
    total = add_lines([busy, quiet])
    assert total.gpu_hours == 40.0 and total.cost == 80.0 and total.idle_hours == 30.0
    assert total.utilisation == pytest.approx(9.0 / 40.0)


def test_forecast_and_exhaustion() -> None:
    assert month_end_forecast(100.0, elapsed=timedelta(days=10), length=timedelta(days=30)) == pytest.approx(300.0)
    now = datetime(2026, 11, 11, tzinfo=timezone.utc)
    # 100 spent in 10 days: 10 a day; 150 left of 250 lasts 15 more days.
    end = datetime(2026, 12, 1, tzinfo=timezone.utc)
    assert exhaustion(100.0, 250.0, elapsed=timedelta(days=10), now=now, month_end=end) == now + timedelta(days=15)
    assert exhaustion(0.0, 250.0, elapsed=timedelta(days=10), now=now, month_end=end) is None
    # Already over: no run-out time (the message says since when instead).
    assert exhaustion(300.0, 250.0, elapsed=timedelta(days=10), now=now, month_end=end) is None
    # 100 of 300 lasts 20 more days: past the month's end, when a new budget starts.
    assert exhaustion(100.0, 300.0, elapsed=timedelta(days=10), now=now, month_end=end) is None


def test_over_budget_since_is_the_day_the_running_total_reached_the_budget() -> None:
    daily = {date(2026, 11, d): 40.0 for d in range(1, 11)}
    assert over_budget_since(daily, 200.0) == date(2026, 11, 5)
    assert over_budget_since(daily, 401.0) is None


@pytest.mark.parametrize(
    ("percent", "forecast", "sent", "expected"),
    [
        (10, 50, set(), []),
        (55, 90, set(), ["50"]),
        (55, 90, {"50"}, []),
        (85, 90, set(), ["50", "80"]),  # jumped past two: both settled, one message
        (85, 120, {"50", "80"}, [FORECAST]),  # heading over budget before reaching it
        (85, 120, {"50", "80", FORECAST}, []),
        (101, 120, {"50", "80", FORECAST}, ["100"]),
        (101, 120, {"50", "80", "100"}, []),  # no forecast warning once the budget is spent
    ],
)
def test_thresholds_fire_once(percent: float, forecast: float, sent: set[str], expected: list[str]) -> None:
    assert thresholds_to_send(percent=percent, forecast_percent=forecast, thresholds=(50, 80, 100), already_sent=sent) == expected


def test_budget_pace() -> None:
    assert budget_pace(3000.0, date(2026, 11, 5)) == 100.0


def test_a_month_is_read_in_runs_of_equal_length_days() -> None:
    from bot.adapters.prometheus import _runs_of_equal_length

    runs = _runs_of_equal_length(month_windows(date(2026, 10, 31), BERLIN))
    assert [(run[0].day.day, run[-1].day.day, run[0].seconds // 3600) for run in runs] == [
        (1, 7, 24),
        (8, 14, 24),
        (15, 21, 24),
        (22, 24, 24),
        (25, 25, 25),
        (26, 31, 24),
    ]
    partial = today_so_far(datetime(2026, 11, 3, 10, tzinfo=timezone.utc), BERLIN)
    runs = _runs_of_equal_length([*month_windows(date(2026, 11, 2), BERLIN), partial])
    assert [len(run) for run in runs] == [2, 1]
