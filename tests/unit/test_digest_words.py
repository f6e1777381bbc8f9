"""The digest is figures until the edge words it (``bot.adapters.slack.reports``): the same sentences as
before (days and months as the locale writes them), every name escaped in the lines, the chart's title,
axis and legend made there too. Both languages: tests/unit/test_digest_languages.py."""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

import pytest

from bot.adapters.chart import ChartWords
from bot.adapters.slack import reports
from bot.domain.costs import CostLine
from bot.domain.policy import parse_policy
from bot.services.reports import ExpiringGrant, OrgDigest, TeamDigest
from tests.unit.test_jobs import make_jobs, policy_dict

A100 = "NVIDIA A100-SXM4-80GB"
DAY = date(2026, 11, 12)
ENDS = datetime(2026, 11, 13, 8, 30, tzinfo=timezone.utc)
OPS = {"display_name": "R&D <ops>", "channel": "C0OPS", "namespaces": ["a", "b"], "approvers": {"users": ["U0LEE"]}}
TEAM = parse_policy({"teams": {"ops": OPS | {"budget": {"monthly": 1000}}}}).teams["ops"]


def line(namespace: str, hours: float, cost: float) -> CostLine:
    return CostLine(namespace, "ops", hours, cost, {A100: (hours, cost)}, 0.5, hours / 10, cost / 10, hours)


def team_digest(**changes: Any) -> TeamDigest:
    month = [line("a", 432.0, 864.0), line("b", 10.0, 20.0)]
    values: dict[str, Any] = {
        "team": TEAM,
        "day": DAY,
        "currency": "EUR",
        "yesterday": month[:1],
        "month": month,
        "top": month,
        "daily": {date(2026, 11, 1): {"a": 96.0, "b": 2.0}},
        "pace": 1000 / 30,
        "spent": 1100.0,
        "forecast": 2500.0,
        "exhausts_at": None,
        "over_since": date(2026, 11, 11),
        "missing": [date(2026, 11, 3), date(2026, 11, 4), date(2026, 11, 5), date(2026, 11, 9)],
        "expiring": [ExpiringGrant(7, "b", 2, ENDS)],
    }
    return TeamDigest(**(values | changes))


@pytest.fixture
def charts(monkeypatch: pytest.MonkeyPatch) -> list[ChartWords]:
    """The words each chart was drawn with (no PNG drawn)."""
    drawn: list[ChartWords] = []

    def chart(*, daily: object, pace: float | None, words: ChartWords) -> bytes:
        drawn.append(words)
        return b"PNG"

    monkeypatch.setattr(reports, "daily_cost_chart", chart)
    return drawn


def test_an_over_budget_team_with_missing_days_reads_as_before(charts: list[ChartWords]) -> None:
    report = reports.digest_report(team_digest())
    assert report.title == "GPU cost digest · R&D <ops> · Nov 12, 2026"  # a header is plain text
    assert report.summary == (
        "Yesterday *432.0 GPU-h · 864.00 EUR*. Month to date *442.0 GPU-h · 1,100.00 EUR*, 110% of the 1,000.00 EUR budget."
        " Month-end forecast at the current burn: 2,500.00 EUR (250%) :rotating_light: over budget since Nov 11."
        " No metrics for Nov 3\u2009–\u20095 and Nov 9: those days are not counted."
    )
    sections = {s.heading: list(s.lines) for s in report.sections}
    assert sections["Per namespace"] == [
        "*a*: yesterday 432.0 GPU-h · 864.00 EUR · month 432.0 GPU-h · 864.00 EUR",
        "*b*: yesterday 0 GPU-h · month 10.0 GPU-h · 20.00 EUR",
    ]
    assert sections["Grants ending in the next 24 h"] == [
        "GQ-7: +2 GPUs in b, ends <!date^1794558600^{date_short_pretty} at {time}|2026-11-13 08:30 UTC>"
    ]
    assert sections["Top consumers (month to date)"] == ["1. a: 864.00 EUR", "2. b: 20.00 EUR"]
    assert report.attachment is not None and report.attachment.title == "R&D <ops> GPU cost, November 2026"
    assert charts == [
        ChartWords(
            title="R&D <ops>: GPU cost per day",
            axis="cost per day (EUR)",
            month="November 2026",
            pace="budget pace (33 EUR/day)",
            others="others",
        )
    ]


def test_a_run_out_inside_the_month_is_a_moment_and_no_budget_says_no_budget(charts: list[ChartWords]) -> None:
    runs_out = reports.digest_report(team_digest(over_since=None, exhausts_at=ENDS, missing=[]), with_chart=False)
    assert runs_out.summary.endswith(
        "(250%) :warning: the budget runs out around <!date^1794558600^{date_short_pretty} at {time}|2026-11-13 08:30 UTC>."
    )
    unbudgeted = parse_policy({"teams": {"ops": OPS}}).teams["ops"]
    quiet = reports.digest_report(
        team_digest(team=unbudgeted, month=[], yesterday=[], top=[], pace=None, spent=0.0, missing=[], expiring=[])
    )
    assert quiet.summary == "Yesterday *0.0 GPU-h · 0.00 EUR*. Month to date *0.0 GPU-h · 0.00 EUR*."
    assert [list(s.lines) for s in quiet.sections] == [["No GPU use recorded this month."]]
    assert charts[-1].pace == ""


def test_the_organisation_summary_names_each_team_and_the_unmanaged(charts: list[ChartWords]) -> None:
    team = team_digest()
    org = OrgDigest(
        day=DAY,
        currency="EUR",
        teams=[team],
        others={"analytics (not managed)": 12.5},
        yesterday=123.45,
        missing=[],
        top=team.month,
        team_labels={"ops": "R&D <ops>"},
        daily={date(2026, 11, 1): {"R&D <ops>": 98.0}},
        pace=1000 / 30,
    )
    report = reports.digest_report(org)
    assert report.summary == "Yesterday 123.45 EUR · month to date 1,112.50 EUR of 1,000.00 EUR budgeted (111%)."
    assert [list(s.lines) for s in report.sections] == [
        [
            "*R&amp;D &lt;ops&gt;*: 1,100.00 EUR of 1,000.00 EUR (110%) · forecast 2,500.00 EUR",
            "analytics (not managed): 12.50 EUR",
        ],
        ["1. a (R&amp;D &lt;ops&gt;): 864.00 EUR", "2. b (R&amp;D &lt;ops&gt;): 20.00 EUR"],
    ]
    assert charts[-1].title == "GPU cost per day, by team"


def test_a_team_label_is_escaped_in_the_posted_digest() -> None:
    """Slack reads ``& < >`` in mrkdwn as markup: a label written "R&D <ops>" must reach it as entities."""
    jobs = make_jobs(policy_dict(display_name="R&D <ops>"))
    jobs.services.digest.publish(date(2026, 11, 9))
    posted = [s.report for s in jobs.notifier.of("report") if s.report is not None]
    summary = next(r for r in posted if r.title.startswith("GPU cost summary"))
    assert summary.sections[0].lines[-1].startswith("*R&amp;D &lt;ops&gt;*: ")
    assert summary.sections[1].lines[1].startswith("2. ai-frontier-research (R&amp;D &lt;ops&gt;): ")
