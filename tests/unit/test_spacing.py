"""The sample spacing from raw timestamps (``bot.adapters.prometheus.median_spacing``) and the selector
that reads them; the same through a real Prometheus: tests/integration/test_spacing.py."""

from __future__ import annotations

from bot.adapters.prometheus import median_spacing, raw_samples_selector


def every(step: float, start: float, count: int, *, jitter: float = 0.0) -> list[float]:
    return [start + i * step + (jitter if i % 2 else 0.0) for i in range(count)]


def test_the_spacing_is_the_median_difference_whatever_part_of_the_window_the_samples_cover() -> None:
    assert median_spacing([every(60, 82_800, 60)]) == 60.0  # one hour of a day, at its end
    assert median_spacing([every(15, 0, 40, jitter=0.2)]) == 15.0  # scrape jitter snaps to the interval


def test_a_gap_and_a_series_that_starts_late_do_not_change_the_spacing() -> None:
    gap = every(30, 0, 100) + every(30, 10_000, 100)
    assert median_spacing([gap, every(30, 50_000, 5)]) == 30.0


def test_series_with_too_few_samples_tell_nothing() -> None:
    assert median_spacing([every(60, 0, 3), every(60, 0, 3), []]) is None
    assert median_spacing([every(60, 0, 3), every(300, 0, 4)]) == 300.0  # only the series with 4 samples counts


def test_the_raw_selector_matches_each_series_label_by_label_literally() -> None:
    selector = raw_samples_selector(
        "DCGM_FI_DEV_GPU_UTIL", [{"modelName": 'A "100" (80GB)', "gpu": "0"}, {"modelName": "H100", "gpu": "1", "pod": "p"}], 3600
    )
    assert selector == (
        '{__name__="DCGM_FI_DEV_GPU_UTIL", gpu=~"0|1", modelName=~"A\\\\ \\"100\\"\\\\ \\\\(80GB\\\\)|H100", pod=~"|p"}[3600s]'
    )
