from datetime import date

from bot.adapters.chart import ChartWords, daily_cost_chart
from bot.adapters.slack.blocks import report_blocks
from bot.adapters.slack.reports import Report, ReportSection
from bot.services.ports import Action, ActionKind

PNG = b"\x89PNG\r\n\x1a\n"
WORDS = ChartWords(title="t", axis="cost per day (USD)", month="November 2026", pace="budget pace", others="others")


def test_chart_is_a_png() -> None:
    png = daily_cost_chart(daily={date(2026, 11, 1): {"a": 10.0, "b": 5.0}, date(2026, 11, 2): {"a": 7.0}}, pace=8.0, words=WORDS)
    assert png.startswith(PNG) and len(png) > 5000


def test_many_parts_are_grouped_and_the_chart_still_lays_out() -> None:
    import warnings

    from bot.adapters.chart import MAX_PARTS, OTHERS, _top_parts

    daily = {date(2026, 11, d): {f"namespace-{i:03d}": float(i) for i in range(150)} for d in range(1, 31)}
    grouped = _top_parts(daily)
    assert len(grouped[date(2026, 11, 1)]) == MAX_PARTS and OTHERS in grouped[date(2026, 11, 1)]
    assert sum(grouped[date(2026, 11, 1)].values()) == sum(daily[date(2026, 11, 1)].values())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "constrained_layout not applied": a legend too big for the figure
        assert daily_cost_chart(daily=daily, pace=100.0, words=WORDS).startswith(PNG)


def test_chart_of_an_empty_month_still_renders() -> None:
    assert daily_cost_chart(daily={}, pace=None, words=WORDS).startswith(PNG)


def test_huge_reports_stay_within_slack_limits() -> None:
    sections = [
        ReportSection(heading=f"Section {s}", lines=[f"namespace-{s}-{i}: " + "x" * 120 for i in range(300)]) for s in range(4)
    ]
    report = Report(title="T" * 400, summary="s" * 5000, sections=sections, actions=[Action(ActionKind.SNOOZE, "Snooze", "ns")])
    blocks = report_blocks(report)
    assert len(blocks) <= 50
    assert len(blocks[0]["text"]["text"]) <= 150
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section")
    assert any(b["type"] == "context" and "more" in b["elements"][0]["text"] for b in blocks)
    assert blocks[-1]["type"] == "actions"
