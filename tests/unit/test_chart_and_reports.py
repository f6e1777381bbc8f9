import io
import logging
import warnings
from datetime import date

import pytest
from PIL import Image

from bot.adapters.chart import ChartWords, daily_cost_chart
from bot.adapters.i18n import speaking
from bot.adapters.slack import reports
from bot.adapters.slack.blocks import report_blocks
from bot.adapters.slack.reports import Report, ReportSection
from bot.domain.languages import Language
from bot.services.ports import Action, ActionKind
from bot.services.reports import TeamDigest
from tests.language_checks import catalog_misses

PNG = b"\x89PNG\r\n\x1a\n"
WORDS = ChartWords(title="t", axis="cost per day (USD)", month="November 2026", pace="budget pace", others="others")


def test_chart_is_a_png() -> None:
    png = daily_cost_chart(daily={date(2026, 11, 1): {"a": 10.0, "b": 5.0}, date(2026, 11, 2): {"a": 7.0}}, pace=8.0, words=WORDS)
    assert png.startswith(PNG) and len(png) > 5000


def test_many_parts_are_grouped_and_the_chart_still_lays_out() -> None:
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


# --- the chart's words in Chinese -------------------------------------------------------------------


def chinese_words(monkeypatch: pytest.MonkeyPatch, digest: TeamDigest) -> ChartWords:
    """The words the Chinese team report draws its chart with."""
    drawn: list[ChartWords] = []
    monkeypatch.setattr(reports, "daily_cost_chart", lambda *, daily, pace, words: drawn.append(words) or b"")
    with speaking(Language.ZH_CN), catalog_misses() as misses:
        reports.team_report(digest)
    assert misses == set()
    return drawn[0]


def many_namespaces() -> TeamDigest:
    from tests.unit.test_digest_languages import team_digest

    daily = {date(2026, 11, d): {f"ns-{i:02d}": float(i + d) for i in range(14)} for d in range(1, 13)}
    return team_digest(daily=daily)


def test_the_chinese_chart_has_chinese_words_and_every_glyph(monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.text import Text

    from bot.adapters.chart import CJK_FONTS, CJK_PACKAGE, cost_figure, installed_fonts

    assert any(font in CJK_FONTS for font in installed_fonts()), (
        f"no CJK font: install Debian's {CJK_PACKAGE} (scripts/test does)"
    )
    digest = many_namespaces()
    words = chinese_words(monkeypatch, digest)
    figure = cost_figure(daily=digest.daily, pace=digest.pace, words=words)
    axes = figure.axes[0]
    assert axes.get_title() == "Frontier research：每日 GPU 费用"
    assert (axes.get_ylabel(), axes.get_xlabel()) == ("每日费用（EUR）", "2026年11月")
    legend = axes.get_legend()
    assert legend is not None
    labels = [text.get_text() for text in legend.get_texts()]
    assert "其他" in labels and "预算进度（每天 33 EUR）" in labels and "ns-13" in labels
    chinese = [axes.title, axes.yaxis.label, axes.xaxis.label, *legend.get_texts()]
    assert all(isinstance(text, Text) and set(CJK_FONTS) & set(text.get_fontfamily()) for text in chinese)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s) ..." for a glyph it cannot draw
        figure.savefig(buffer, format="png")
    image = Image.open(io.BytesIO(buffer.getvalue()))
    image.verify()
    assert (image.format, image.size) == ("PNG", (900, 420))


def test_without_a_cjk_font_the_chart_is_drawn_and_one_warning_names_the_package(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.adapters import chart

    monkeypatch.setattr(chart, "_installed", (chart.LATIN_FONT,))
    monkeypatch.setattr(chart, "_warned", False)
    digest = many_namespaces()
    words = chinese_words(monkeypatch, digest)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="bot.adapters.chart"):
        warnings.simplefilter("ignore")  # the missing glyphs matplotlib warns of
        first = daily_cost_chart(daily=digest.daily, pace=digest.pace, words=words)
        second = daily_cost_chart(daily=digest.daily, pace=digest.pace, words=words)
    assert first.startswith(PNG) and second.startswith(PNG)
    warned = [record for record in caplog.records if record.name == "bot.adapters.chart"]
    assert len(warned) == 1 and "fonts-wqy-microhei" in warned[0].getMessage()


def test_an_english_chart_needs_no_cjk_font_and_says_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.adapters import chart

    monkeypatch.setattr(chart, "_installed", (chart.LATIN_FONT,))
    monkeypatch.setattr(chart, "_warned", False)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="bot.adapters.chart"):
        warnings.simplefilter("error")
        assert daily_cost_chart(daily={date(2026, 11, 1): {"a": 1.0}}, pace=2.0, words=WORDS).startswith(PNG)
    assert caplog.records == []
