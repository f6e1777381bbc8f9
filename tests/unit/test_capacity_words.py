"""The words of where GPU-hours ran (``bot.adapters.slack.capacity_words``), in English and Chinese from the same
fixtures: the digest's spot / on-demand / pool section and its split-unavailable facts, the cost answer, the card's
price, the proposals' spot savings and check-config's lines."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from slack_sdk.models.blocks import SectionBlock

from bot.adapters import i18n
from bot.adapters.db.database import Database
from bot.adapters.db.models import Base
from bot.adapters.slack import capacity_words, mrkdwn, reports, words
from bot.adapters.slack.blocks import report_blocks
from bot.adapters.slack.prices import render_price
from bot.adapters.slack.replies import cost_lines
from bot.bootstrap import SlackPorts, build_services
from bot.clock import ManualClock
from bot.domain.capacity import ON_DEMAND, ON_DEMAND_PLACEMENT, SPOT, Placement, SplitState, SplitUnavailable, allowlist_flag
from bot.domain.costs import ModelUse, line_of
from bot.domain.languages import Language
from bot.domain.policy import parse_policy
from bot.domain.prices import Basis, PlacementShare, Price
from bot.domain.proposals import SpotSaving
from bot.sandbox.history import History, HistoryMetrics, PodRun
from bot.services.ledger import CostAnswer
from bot.services.messages import SpotSavings, from_json, to_json
from tests.fakes import FakeCluster, FakeDirectory, FakeHomeTabs, FakeNotifier
from tests.language_checks import catalog_misses, foreign_words
from tests.unit.test_digest_words import team_digest

H100 = "NVIDIA H100 80GB HBM3"
POOL = "example.com/gpu-pool"
FLAG = allowlist_flag(POOL)
DAYS = (date(2026, 11, 3), date(2026, 11, 4))
LANGUAGES = [Language.EN, Language.ZH_CN]
HEADINGS = {"Spot and on-demand (month to date)", "竞价实例与按需实例（本月至今）"}


def split_line():  # noqa: ANN201 (a CostLine)
    uses = [
        ModelUse(H100, 72.0, 6.0, 72.0, 36.0, 1.5, 108.0, 9.0, capacity=SPOT),
        ModelUse(H100, 72.0, 0.0, 72.0, 36.0, 4.0, 288.0, 0.0),
        ModelUse(H100, 24.0, 0.0, 24.0, 12.0, 0.5, 12.0, 0.0, capacity=ON_DEMAND, pool="on-prem"),
    ]
    return line_of("a", "ops", uses)


FACTS = [
    SplitUnavailable(SplitState.NO_NODE_LABELS, DAYS, "", FLAG),
    SplitUnavailable(SplitState.NO_CAPACITY_LABELS, DAYS, "", FLAG),
    SplitUnavailable(SplitState.NO_NODE_LABELS, DAYS, "us-2", FLAG),
    SplitUnavailable(SplitState.NO_CAPACITY_LABELS, DAYS, "us-2", FLAG),
]
VALUES = [H100, "on-prem", "us-2", "ns-batch", FLAG, "kube_node_labels", "R&D <ops>", "R&amp;D &lt;ops&gt;"]


def chinese_is_clean(text: str) -> None:
    assert foreign_words(text, values=VALUES) == [], text


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_digest_shows_each_placement_and_why_some_days_are_not_split(language: Language) -> None:
    with i18n.speaking(language), catalog_misses() as misses:
        report = reports.digest_report(team_digest(month=[split_line()], top=[], unsplit=FACTS[:1]), with_chart=False)
        blocks = report_blocks(report)
    section = next(s for s in report.sections if s.heading in HEADINGS)
    text = "\n".join(section.lines)
    if language == Language.EN:
        assert section.heading == "Spot and on-demand (month to date)"
        assert section.lines[:3] == [
            "On-demand: 72.0 GPU-h · 288.00 EUR",
            "Spot: 72.0 GPU-h · 108.00 EUR",
            "Pool *on-prem*: 24.0 GPU-h · 12.00 EUR",
        ]
        assert section.lines[3] == (
            "Spot and on-demand not told apart (Nov 3\u2009–\u20094): Prometheus has no `kube_node_labels` series, so"
            f" every GPU-hour is priced on-demand. Enable kube-state-metrics' nodes metrics with `{FLAG}`."
        )
    else:
        assert section.heading == "竞价实例与按需实例（本月至今）"
        assert section.lines[0].startswith("按需实例：72.0 GPU 小时") and section.lines[1].startswith("竞价实例：")
        chinese_is_clean(text)
        assert not misses
    for block in blocks:
        if isinstance(block, SectionBlock):
            block.validate_json()  # within Block Kit's limits in either language


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_month_all_on_demand_has_no_such_section(language: Language) -> None:
    with i18n.speaking(language):
        report = reports.digest_report(team_digest(), with_chart=False)
    assert not any(s.heading in HEADINGS for s in report.sections)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_split_unavailable_fact_has_its_words(language: Language) -> None:
    with i18n.speaking(language), catalog_misses() as misses:
        said = [mrkdwn.render(capacity_words.split_unavailable(fact)) for fact in FACTS]
    assert len(set(said)) == 4 and all(f"`{FLAG}`" in text for text in said)
    assert all("us-2" in text for text in said[2:])
    if language == Language.ZH_CN:
        assert not misses
        for text in said:
            chinese_is_clean(text)
            assert "按需实例" in text


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_cost_answer_lists_the_placements_and_the_unsplit_days(language: Language) -> None:
    answer = CostAnswer("Research", date(2026, 11, 1), date(2026, 11, 20), split_line(), 5000.0, [], {}, FACTS[1:2])
    with i18n.speaking(language), catalog_misses() as misses:
        lines = cost_lines(answer, "USD")
    if language == Language.EN:
        assert "Spot: 72.0 GPU-h · 108.00 USD" in lines and "Pool *on-prem*: 24.0 GPU-h · 12.00 USD" in lines
        assert lines[-1].startswith("Spot and on-demand not told apart (Nov 3\u2009–\u20094): `kube_node_labels` carries no")
    else:
        assert "竞价实例：72.0 GPU 小时 · US$108.00" in lines
        assert not misses
        chinese_is_clean("\n".join(lines[-4:]))


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_price_says_where_its_hours_ran_when_not_all_on_demand(language: Language) -> None:
    mixed = Price(
        2.75,
        Basis.RAN_ON,
        (H100,),
        "USD",
        7,
        placements=(PlacementShare(Placement(SPOT), 0.5), PlacementShare(ON_DEMAND_PLACEMENT, 0.5)),
    )
    spot = Price(1.5, Basis.RAN_ON, (H100,), "USD", 7, placements=(PlacementShare(Placement(SPOT), 1.0),))
    pool = Price(0.5, Basis.RAN_ON, (H100,), "USD", 7, placements=(PlacementShare(Placement(ON_DEMAND, "on-prem"), 1.0),))
    plain = Price(4.0, Basis.RAN_ON, (H100,), "USD", 7)
    with i18n.speaking(language), catalog_misses() as misses:
        said = [render_price(price) for price in (mixed, spot, pool, plain)]
    if language == Language.EN:
        assert said == [
            f"at 2.75 USD/h, the {H100} price this namespace ran on (50% on spot)",
            f"at 1.50 USD/h, the {H100} price this namespace ran on (on spot)",
            f"at 0.50 USD/h, the {H100} price this namespace ran on (in pool on-prem)",
            f"at 4.00 USD/h, the {H100} price this namespace ran on",
        ]
    else:
        assert said[0].endswith("（50% 运行在竞价实例上）") and "（在资源池 on-prem 中）" in said[2]
        assert not misses
        for text in said:
            chinese_is_clean(text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_proposals_spot_savings_come_back_from_the_outbox_with_their_words(language: Language) -> None:
    message = SpotSavings(14, "USD", (SpotSaving("ns-batch", 168.0, 0.875, 1218.75),))
    assert from_json(to_json(message)) == message
    with i18n.speaking(language), catalog_misses() as misses:
        text = words.render(message)
    if language == Language.EN:
        assert text == (
            ":moneybag: Preemptible work on on-demand GPUs, which spot would make cheaper:\n• *ns-batch*: 88% of its"
            " 168.0 GPU-h of preemptible work ran on on-demand nodes (last 14 days); on spot it would cost about"
            " 1,218.75 USD less a month.\nNothing changes unless the workloads move to spot nodes (a node selector or"
            " affinity on the capacity type)."
        )
    else:
        assert "竞价实例" in text and "按需实例" in text and "US$1,218.75" in text
        assert not misses
        chinese_is_clean(text)


def test_placement_names_in_both_languages() -> None:
    names = [Placement(SPOT), ON_DEMAND_PLACEMENT, Placement(ON_DEMAND, "on-prem")]
    assert [capacity_words.placement_name(p) for p in names] == ["spot", "on-demand", "pool on-prem"]
    with i18n.speaking(Language.ZH_CN):
        assert [capacity_words.placement_name(p) for p in names] == ["竞价实例", "按需实例", "资源池 on-prem"]


# --- the weekly proposals post the spot line (the service over a History, the words above) -----------------


def test_the_weekly_proposals_post_the_spot_saving_of_preemptible_work_on_on_demand_nodes() -> None:
    utc = timezone.utc
    start, now = datetime(2026, 10, 20, tzinfo=utc), datetime(2026, 11, 16, 8, tzinfo=utc)
    history = History(
        step=timedelta(minutes=5),
        start=start,
        end=now,
        node_labels={"od": {"eks.amazonaws.com/capacityType": "ON_DEMAND"}, "sp": {"karpenter.sh/capacity-type": "spot"}},
        pods=[
            PodRun("ns-batch", "sweep", 2, "od", H100, start, now, 0.6, priority_class="batch-low"),  # 48 GPU-h a day
            PodRun("ns-batch", "tail", 1, "sp", H100, start, now, 0.6, priority_class="batch-low"),
            PodRun("ns-serve", "serve", 2, "od", H100, start, now, 0.6, priority_class="business-critical"),
        ],
    )
    raw = {
        "admin_channel": "C0ADMIN",
        "schedules": {"proposals": "0 8 * * 1"},
        "pricing": {"models": {H100: 4.0}, "spot": {"models": {H100: 1.5}, "preemptible_priority_classes": ["batch-low"]}},
        "teams": {
            "research": {"channel": "C1", "namespaces": ["ns-batch", "ns-serve"], "approvers": {"users": ["U0LEE"]}},
        },
    }
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    cluster = FakeCluster()
    cluster.add("ns-batch", 3)
    cluster.add("ns-serve", 2)
    notifier = FakeNotifier()
    services = build_services(
        policy=parse_policy(raw),
        database=database,
        cluster=cluster,
        slack=SlackPorts(notifier=notifier, directory=FakeDirectory(), home_tabs=FakeHomeTabs()),
        clock=ManualClock(now),
        metrics=HistoryMetrics(history),
    )
    assert services.proposals is not None
    run = services.proposals.run()
    (saving,) = run.spot  # ns-serve's work is not preemptible
    assert saving.namespace == "ns-batch" and saving.on_demand_share == pytest.approx(2 / 3)
    assert saving.preemptible_hours == pytest.approx(14 * 72.0)
    assert saving.saving_per_month == pytest.approx(48.0 * (4.0 - 1.5) * 365.25 / 12)
    (post,) = [s.text for s in notifier.of("post") if s.target == "C0ADMIN" and ":moneybag:" in s.text]
    assert "*ns-batch*: 67% of its 1,008.0 GPU-h of preemptible work ran on on-demand nodes (last 14 days)" in post
    assert "3,652.50 USD less a month" in post
