"""The digest, its chart's words, the ``cost`` answer and the replies to a person's action, in English and in
Chinese from the same fixtures: in Chinese every sentence comes from the catalog, no English word is left
but the names shown as they are, and the longer text still fits Slack's Block Kit limits."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, datetime, timezone
from typing import Any

import pytest

from bot.adapters import i18n
from bot.adapters.chart import ChartWords
from bot.adapters.i18n import speaking
from bot.adapters.slack import reports
from bot.adapters.slack.blocks import report_blocks
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.replies import Outcome, cost_lines, reply_text
from bot.adapters.slack.reports import Report
from bot.adapters.slack.resource_words import day_ranges, hours_of, resource_label, resource_line
from bot.domain.costs import CostLine, NamespaceUsage, ResourceCost, add_lines, price
from bot.domain.failure_reasons import AsSaid
from bot.domain.languages import Language
from bot.domain.lifecycle import RequestState
from bot.domain.policy import Pricing, parse_policy
from bot.domain.resources import GPU
from bot.ledger_cli import _month, _recorded_lines
from bot.services.ledger import CostAnswer, Recorded
from bot.services.outcomes import Cancelled, Decided, Decision, Release, Released, Retried
from bot.services.reports import ClusterCost, Digest, ExpiringGrant, OrgDigest, TeamDigest
from tests.language_checks import catalog_misses, foreign_words
from tests.unit.test_blocks import assert_valid_message

A100, H100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
MIG3 = "nvidia.com/mig-3g.40gb"
FRONTIER, SERVING, REMOTE = "ai-frontier-research", "biz-model-serving", "us-2/ml-us"
DAY = date(2026, 11, 12)
ENDS = datetime(2026, 11, 13, 8, 30, tzinfo=timezone.utc)
RUNS_OUT = datetime(2026, 11, 24, 6, 0, tzinfo=timezone.utc)
PRICING = Pricing(models={A100: 2.0, H100: 4.0}, resources={MIG3: 1.5})
TEAM_LABEL, OTHER_LABEL, UNMANAGED_LABEL = "Frontier research", "Business", "analytics"
API_SAYS = "admission webhook quota-guard denied the request"
# What the texts show as it is: names, ids, models, clusters, the API server's words.
NAMES = [FRONTIER, SERVING, REMOTE, "ml-us", A100, H100, TEAM_LABEL, OTHER_LABEL, UNMANAGED_LABEL, "eu-1", "us-2", API_SAYS]

POLICY = parse_policy(
    {
        "teams": {
            "frontier": {
                "display_name": TEAM_LABEL,
                "channel": "C0FRONTIER",
                "namespaces": [FRONTIER, SERVING],
                "approvers": {"users": ["U0LEE"]},
                "budget": {"monthly": 1000},
            },
            "business": {
                "display_name": OTHER_LABEL,
                "channel": "C0BIZ",
                "namespaces": ["biz-other"],
                "approvers": {"users": ["U0MAYA"]},
            },
        }
    }
)


@pytest.fixture(params=[Language.EN, Language.ZH_CN], ids=["en", "zh-CN"])
def language(request: pytest.FixtureRequest) -> Iterator[Language]:
    with speaking(request.param):
        yield request.param


@pytest.fixture
def charts(monkeypatch: pytest.MonkeyPatch) -> list[ChartWords]:
    """The words each chart was drawn with (the drawing is tests/unit/test_chart_and_reports.py's)."""
    drawn: list[ChartWords] = []

    def chart(*, daily: object, pace: float | None, words: ChartWords) -> bytes:
        drawn.append(words)
        return b"\x89PNG"

    monkeypatch.setattr(reports, "daily_cost_chart", chart)
    return drawn


# --- fixtures: figures as the services give them -------------------------------------------------------


def mixed(namespace: str, gpu_hours: float, slice_hours: float, *, observed: float = 12.0) -> CostLine:
    """Whole A100s, and slices of 3g.40gb on A100s (a tenth of them idle)."""
    mig = NamespaceUsage(slice_hours, {A100: slice_hours}, {A100: slice_hours / 10}, 6.0, util_model_hours={A100: 6.0})
    usage = NamespaceUsage(
        gpu_hours,
        {A100: gpu_hours},
        {A100: gpu_hours / 8},
        observed,
        util_model_hours={A100: observed * 0.4} if observed else {},
        other_resources={MIG3: mig},
    )
    return price(namespace, "frontier", usage, PRICING)


def whole(namespace: str, hours: float, model: str = H100) -> CostLine:
    usage = NamespaceUsage(hours, {model: hours}, {model: hours / 2}, hours, util_model_hours={model: hours * 0.05})
    return price(namespace, "frontier", usage, PRICING)


def team_digest(**changes: Any) -> TeamDigest:
    """Over its budget, with slices, idle GPUs, two clusters, days without metrics and a grant ending."""
    month = [mixed(FRONTIER, 432.0, 96.0), whole(SERVING, 40.0), whole(REMOTE, 24.0)]
    yesterday = [mixed(FRONTIER, 48.0, 12.0), whole(REMOTE, 1.0)]
    home = add_lines(month[:2])
    values: dict[str, Any] = {
        "team": POLICY.teams["frontier"],
        "day": DAY,
        "currency": "EUR",
        "yesterday": yesterday,
        "month": month,
        "top": month,
        "daily": {date(2026, 11, d): {FRONTIER: 96.0, SERVING: 10.0, REMOTE: 4.0} for d in range(1, 13)},
        "pace": 1000 / 30,
        "spent": sum(line.cost for line in month),
        "forecast": 2600.0,
        "exhausts_at": None,
        "over_since": date(2026, 11, 11),
        "missing": [date(2026, 11, 3), date(2026, 11, 4), date(2026, 11, 5), date(2026, 11, 9)],
        "expiring": [ExpiringGrant(7, SERVING, 2, ENDS), ExpiringGrant(8, FRONTIER, 1, ENDS)],
        "clusters": [ClusterCost("eu-1", add_lines(yesterday[:1]), home), ClusterCost("us-2", None, month[2])],
        "missing_in": {"us-2": [date(2026, 11, 1), date(2026, 11, 2)]},
    }
    return TeamDigest(**(values | changes))


def org_digest(*teams: TeamDigest, **changes: Any) -> OrgDigest:
    values: dict[str, Any] = {
        "day": DAY,
        "currency": "EUR",
        "teams": list(teams),
        "others": {f"{UNMANAGED_LABEL} (not managed)": 12.5},
        "yesterday": 423.45,
        "missing": [date(2026, 11, 9)],
        "top": teams[0].month,
        "team_labels": {"frontier": TEAM_LABEL, "business": OTHER_LABEL},
        "daily": {date(2026, 11, d): {TEAM_LABEL: 110.0, OTHER_LABEL: 5.0} for d in range(1, 13)},
        "pace": 1000 / 30,
        "clusters": teams[0].clusters,
        "missing_in": teams[0].missing_in,
    }
    return OrgDigest(**(values | changes))


UNBUDGETED = POLICY.teams["business"]
DIGESTS: dict[str, Digest] = {
    "over budget": team_digest(),
    "runs out": team_digest(over_since=None, exhausts_at=RUNS_OUT),
    "within budget": team_digest(over_since=None, forecast=900.0, missing=[], missing_in={}),
    "no budget": team_digest(team=UNBUDGETED, pace=None, over_since=None, clusters=[], missing_in={}),
    "no DCGM data": team_digest(month=[replace(whole(SERVING, 40.0), utilisation=None)], top=[], expiring=[]),
    "slices only": team_digest(
        month=[replace(mixed(FRONTIER, 0.0, 96.0), by_resource={MIG3: ResourceCost(96.0, 144.0, 9.6, 14.4, 96.0, 48.0)})],
        yesterday=[],
        top=[],
    ),
    "nothing this month": team_digest(
        team=UNBUDGETED,
        month=[],
        yesterday=[],
        top=[],
        daily={},
        pace=None,
        spent=0.0,
        forecast=0.0,
        over_since=None,
        missing=[],
        expiring=[],
        clusters=[],
        missing_in={},
    ),  # fmt: skip
    "organisation": org_digest(team_digest(), team_digest(team=UNBUDGETED, spent=0.0, pace=None)),
    "organisation without budgets": org_digest(team_digest(team=UNBUDGETED, pace=None), pace=None, missing=[], missing_in={}),
}


def answer(**changes: Any) -> CostAnswer:
    line = add_lines([mixed(FRONTIER, 432.0, 96.0), whole(SERVING, 40.0)])
    values: dict[str, Any] = {
        "scope": TEAM_LABEL,
        "month": date(2026, 11, 1),
        "recorded_through": date(2026, 11, 11),
        "line": line,
        "budget": 1000.0,
        "missing": [date(2026, 11, 3), date(2026, 11, 4)],
        "missing_in": {"us-2": [date(2026, 11, 1)]},
    }
    return CostAnswer(**(values | changes))


ANSWERS = {
    "with budget, slices and missing days": answer(),
    "no budget, no DCGM data": answer(
        budget=None, line=replace(whole(SERVING, 40.0), utilisation=None), missing=[], missing_in={}
    ),
    "a namespace, month under way": answer(scope=FRONTIER, recorded_through=None, budget=None),
    "nothing recorded": answer(line=None, missing=[], missing_in={}),
    "nothing recorded yet": answer(line=None, recorded_through=None, missing=[], missing_in={}),
}

OUTCOMES: dict[str, Outcome] = {
    **{f"approved, {s.value}": Decided(1, Decision.COMPLETED, s, 1, 1) for s in RequestState},
    **{f"retried, {s.value}": Retried(2, s) for s in RequestState},
    "denied": Decided(3, Decision.DENIED, RequestState.DENIED, 0, 1),
    "refused": Decided(4, Decision.REFUSED, RequestState.FAILED, 1, 1, AsSaid(API_SAYS)),
    "refused, no reason": Decided(4, Decision.REFUSED, RequestState.FAILED, 1, 1),
    "counted": Decided(5, Decision.COUNTED, RequestState.PENDING, 1, 3),
    "cancelled": Cancelled(6),
    **{f"released, {how.value}": Released(7, how, 3, SERVING, FRONTIER) for how in Release},
    "released one GPU": Released(8, Release.RETURNED, 1, SERVING),
}


def report_text(report: Report, words: list[ChartWords]) -> str:
    lines = [report.title, report.summary]
    for section in report.sections:
        lines += [section.heading or "", *section.lines]
    if report.attachment is not None:
        lines.append(report.attachment.title)
    for chart in words:
        lines += [chart.title, chart.axis, chart.month, chart.pace, chart.others]
    return "\n".join(lines)


def assert_all_chinese(text: str, language: Language, misses: set[tuple[Language, str]]) -> None:
    if language == Language.ZH_CN:
        assert misses == set()
        assert foreign_words(text, values=NAMES) == [], text


# --- the digest ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(DIGESTS))
def test_every_digest_reads_whole_in_each_language_and_fits_block_kit(
    case: str, language: Language, charts: list[ChartWords]
) -> None:
    with catalog_misses() as misses:
        report = reports.digest_report(DIGESTS[case])
        blocks = report_blocks(report)
    assert_all_chinese(report_text(report, charts), language, misses)
    assert_valid_message(blocks)
    assert blocks[0]["text"]["text"] == report.title and blocks[1]["text"]["text"] == report.summary  # not cut
    shown = "\n".join(block["text"]["text"] for block in blocks if block["type"] == "section")
    assert all(line in shown for section in report.sections for line in section.lines)
    assert len(charts) == 1 and charts[0].others


def test_the_same_digest_in_chinese_says_each_figure_the_chinese_way(charts: list[ChartWords]) -> None:
    english = reports.digest_report(DIGESTS["over budget"])
    with speaking(Language.ZH_CN):
        chinese = reports.digest_report(DIGESTS["over budget"])
    assert english.title == "GPU cost digest · Frontier research · Nov 12, 2026"
    assert chinese.title == "GPU 费用日报 · Frontier research · 2026年11月12日"
    assert english.summary.startswith("Yesterday *49.0 GPU-h and 12.0 slice-h MIG 3g.40gb · ")
    assert chinese.summary.startswith("昨日 *49.0 GPU 小时和 MIG 3g.40gb 12.0 切片小时，€")
    assert "over budget since Nov 11." in english.summary and "自 11月11日 起超出预算。" in chinese.summary
    assert "No metrics for Nov 3\u2009–\u20095 and Nov 9: those days are not counted." in english.summary
    assert "11月3日至5日和 11月9日 没有指标数据：这些天未计入。" in chinese.summary
    assert "No metrics for us-2 on Nov 1\u2009–\u20092: not counted." in english.summary
    assert "us-2 在 11月1日至2日 没有指标数据：未计入。" in chinese.summary
    assert "。 " not in chinese.summary and ". No metrics" in english.summary  # Chinese sentences follow unspaced
    assert "€2,600.00" in chinese.summary and "2,600.00 EUR" in english.summary
    sections = {s.heading: list(s.lines) for s in chinese.sections}
    assert list(sections) == [
        "按命名空间",
        "按集群",
        "按资源（本月至今）",
        "按 GPU 型号（本月至今）",
        "利用率与空闲 GPU（本月至今）",
        "未来 24 小时内到期的配额授权",
        "费用最高（本月至今）",
    ]
    assert sections["按资源（本月至今）"][1] == "MIG 3g.40gb：96 切片小时，€144.00（空闲 9.6 切片小时，€14.40）"
    assert sections["按集群"][1] == "*us-2*：昨日 0 GPU 小时 · 本月 24.0 GPU 小时，€96.00"
    assert sections["未来 24 小时内到期的配额授权"][0].startswith(f"GQ-7：{SERVING} 中的 +2 块 GPU，<!date^")
    english_sections = {s.heading: list(s.lines) for s in english.sections}
    assert english_sections["Grants ending in the next 24 h"][1].startswith(f"GQ-8: +1 GPU in {FRONTIER}, ends <!date^")
    assert charts[0] == ChartWords(
        title="Frontier research: GPU cost per day",
        axis="cost per day (EUR)",
        month="November 2026",
        pace="budget pace (33 EUR/day)",
        others="others",
    )
    assert charts[1] == ChartWords(
        title="Frontier research：每日 GPU 费用",
        axis="每日费用（EUR）",
        month="2026年11月",
        pace="预算进度（每天 33 EUR）",
        others="其他",
    )


def test_the_organisation_summary_says_the_unmanaged_teams_in_the_readers_language(charts: list[ChartWords]) -> None:
    digest = DIGESTS["organisation"]
    english = reports.digest_report(digest)
    with speaking(Language.ZH_CN):
        chinese = reports.digest_report(digest)
    assert "analytics (not managed): 12.50 EUR" in english.sections[0].lines
    assert "analytics（未纳入管理）：€12.50" in chinese.sections[0].lines
    assert chinese.title == "GPU 费用汇总 · 2026年11月12日"
    assert chinese.summary.startswith("昨日 €423.45 · 本月至今 €1,276.50，预算合计 €1,000.00（128%）。11月9日 没有指标数据")
    assert english.summary.startswith("Yesterday 423.45 EUR · month to date 1,276.50 EUR of 1,000.00 EUR budgeted (128%). No")
    assert charts[1].title == "各团队每日 GPU 费用"


# --- the cost answer and the replies ---------------------------------------------------------------------


@pytest.mark.parametrize("case", list(ANSWERS))
def test_every_cost_answer_reads_whole_in_each_language(case: str, language: Language) -> None:
    with catalog_misses() as misses:
        lines = cost_lines(ANSWERS[case], "EUR")
    assert_all_chinese("\n".join(lines), language, misses)
    assert all(len(line) <= 3000 for line in lines)


def test_the_cost_answer_in_both_languages() -> None:
    english = cost_lines(answer(), "EUR")
    with speaking(Language.ZH_CN):
        chinese = cost_lines(answer(), "EUR")
    assert english == [
        "*Frontier research* · November 2026 (through Nov 11): 472.0 GPU-h and 96.0 slice-h MIG 3g.40gb"
        " · 1,168.00 EUR of 1,000.00 EUR (117%)",
        "Idle (samples under the threshold): 74.0 GPU-h · 188.00 EUR · average utilisation 1%",
        f"{A100}: 432.0 GPU-h · 864.00 EUR",
        f"{H100}: 40.0 GPU-h · 160.00 EUR",
        "MIG 3g.40gb: 96 slice-hours, 144.00 EUR (idle 9.6 slice-hours, 14.40 EUR)",
        "No metrics for Nov 3\u2009–\u20094: not counted.",
        "No metrics for us-2 on Nov 1: not counted.",
    ]
    assert chinese == [
        "*Frontier research* · 2026年11月（截至 11月11日）：472.0 GPU 小时和 MIG 3g.40gb 96.0 切片小时，€1,168.00，"
        "预算 €1,000.00（117%）",
        "空闲（低于阈值的采样）：74.0 GPU 小时，€188.00 · 平均利用率 1%",
        f"{A100}：432.0 GPU 小时，€864.00",
        f"{H100}：40.0 GPU 小时，€160.00",
        "MIG 3g.40gb：96 切片小时，€144.00（空闲 9.6 切片小时，€14.40）",
        "11月3日至4日 没有指标数据：未计入。",
        "us-2 在 11月1日 没有指标数据：未计入。",
    ]
    with speaking(Language.ZH_CN):
        assert cost_lines(answer(line=None, missing=[], missing_in={}), "EUR") == [
            "*Frontier research* · 2026年11月（截至 11月11日）：没有记录。"
        ]
    assert cost_lines(answer(scope="R&D <ops>", line=None, missing=[], missing_in={}), "EUR") == [
        "*R&amp;D &lt;ops&gt;* · November 2026 (through Nov 11): nothing recorded."  # a label is escaped
    ]


@pytest.mark.parametrize("case", list(OUTCOMES))
def test_every_reply_reads_whole_in_each_language(case: str, language: Language) -> None:
    with catalog_misses() as misses:
        text = reply_text(OUTCOMES[case])
    assert_all_chinese(text, language, misses)
    assert text.startswith(("You", "Released", "GQ-")) if language == Language.EN else not text.startswith("You")


def test_replies_in_both_languages() -> None:
    released = Released(7, Release.SHIFT_RETURNED, 3, "<serving>", FRONTIER)
    counted = Decided(5, Decision.COUNTED, RequestState.PENDING, 1, 3)
    assert reply_text(released) == f"Released GQ-7: &lt;serving&gt; gives the 3 GPUs it was shifted back to {FRONTIER}."
    assert reply_text(counted) == "You approved GQ-5 (1 of 3); it needs 2 more."
    assert reply_text(Retried(2, RequestState.APPLIED)) == "GQ-2 is applied."
    with speaking(Language.ZH_CN):
        assert reply_text(released) == f"已释放 GQ-7：&lt;serving&gt; 把调入的 3 块 GPU 归还给 {FRONTIER}。"
        assert reply_text(counted) == "你已批准 GQ-5（1/3）；还需要 2 人批准。"
        assert reply_text(Retried(2, RequestState.APPLIED)) == "GQ-2 已应用。"


# --- the shared words ------------------------------------------------------------------------------------


def test_days_hours_and_resources_in_both_languages() -> None:
    days = [date(2026, 11, d) for d in (3, 4, 5, 6, 7, 8, 9, 12)] + [date(2026, 10, 31), date(2026, 11, 1)]
    line = {GPU: ResourceCost(24.0), MIG3: ResourceCost(48.0), "amd.com/gpu": ResourceCost(3.0)}
    assert day_ranges(days) == "Oct 31\u2009–\u2009Nov 1, Nov 3\u2009–\u20099, and Nov 12"
    assert hours_of(line, 24.0) == "24.0 GPU-h, 3.0 h amd.com/gpu, and 48.0 slice-h MIG 3g.40gb"
    assert resource_label(GPU) == "Whole GPUs"
    with speaking(Language.ZH_CN), catalog_misses() as misses:
        assert day_ranges(days) == "10月31日至11月1日、11月3日至9日和 11月12日"
        assert day_ranges([date(2026, 12, 30), date(2026, 12, 31), date(2027, 1, 1)]) == "12月30日至1月1日"
        assert hours_of(line, 24.0) == "24.0 GPU 小时、amd.com/gpu 3.0 小时和 MIG 3g.40gb 48.0 切片小时"
        assert resource_label(GPU) == "整卡 GPU"
    assert misses == set()
    assert day_ranges([]) == ""


def test_one_hour_is_singular_in_english() -> None:
    assert render(resource_line(MIG3, ResourceCost(1.0, 1.5), "USD")) == "MIG 3g.40gb: 1 slice-hour, 1.50 USD"
    assert render(resource_line(GPU, ResourceCost(1.04, 2.0), "USD")) == "Whole GPUs: 1 GPU-hour, 2.00 USD"
    assert render(resource_line(GPU, ResourceCost(1.5, 3.0), "USD")) == "Whole GPUs: 1.5 GPU-hours, 3.00 USD"
    assert i18n.current() == Language.EN


# --- the command line ------------------------------------------------------------------------------------


def test_what_a_backfill_recorded_reads_whole_in_each_language(language: Language) -> None:
    policy = parse_policy({"clusters": {"eu-1": {"home": True}, "us-2": {"context": "us-2-admin"}}, "teams": {}})
    done = Recorded(
        recorded=[date(2026, 11, d) for d in range(1, 20)],
        no_data=[date(2026, 11, 10)],
        missing={"us-2": [date(2026, 11, 1), date(2026, 11, 2)]},
    )
    with catalog_misses() as misses:
        lines = _recorded_lines(done, date(2026, 11, 1), date(2026, 11, 20), policy)
        one = _recorded_lines(Recorded([date(2026, 11, 1)], []), date(2026, 11, 1), date(2026, 11, 1), policy)
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            _month("2026-13")
    assert_all_chinese("\n".join([*lines, *one, str(refused.value)]), language, misses)
    if language == Language.EN:
        assert lines == [
            "recorded 19 days from Nov 1, 2026 to Nov 20, 2026; no metrics for Nov 10",
            "no metrics for us-2 on Nov 1\u2009–\u20092",
        ]
        assert one == ["recorded 1 day from Nov 1, 2026 to Nov 1, 2026"]
    else:
        assert lines == [
            "已记录 2026年11月1日 至 2026年11月20日 的 19 天；11月10日 没有指标数据",
            "us-2 在 11月1日至2日 没有指标数据",
        ]
        assert str(refused.value) == "'2026-13' 不是月份：请使用 YYYY-MM"
