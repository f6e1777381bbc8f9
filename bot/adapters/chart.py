"""The digest chart: daily cost this month, stacked, with the budget pace line. PNG bytes via matplotlib.

Its words (title, axis, legend) come with the call, made in the reader's language where the report is
worded (``bot.adapters.slack.reports``); the chart only draws. Uses the object-oriented ``Figure`` API
(no pyplot, no global state), so it is safe in threads and needs no display. matplotlib (and numpy
with it, about 50 MiB) is imported when the first chart is drawn, not at start-up: most processes
never draw one.

Every text is drawn with a list of fonts, Latin first, then fonts with Chinese glyphs (matplotlib
takes each glyph from the first font that has it), so a Chinese title and a Latin namespace both
render. The image installs Debian's ``fonts-wqy-microhei``; without any such font the chart is drawn
anyway, its Chinese words as empty boxes, and one warning says which package to install.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)

LATIN_FONT = "DejaVu Sans"  # matplotlib's own font: always there
# Fonts with CJK glyphs, by preference: Debian's fonts-wqy-microhei (what the image installs), Noto, Source Han.
CJK_FONTS = ("WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN")
CJK_PACKAGE = "fonts-wqy-microhei"
# Font files of CJK_FONTS, by a part of their name: looked for when matplotlib's cached font list predates them.
_CJK_FILES = ("wqy-microhei", "notosanscjk", "notosanssc", "sourcehansans")


@dataclass(frozen=True)
class ChartWords:
    title: str
    axis: str  # the cost axis
    month: str  # under the days
    pace: str  # the legend of the budget pace line
    others: str  # the legend of the parts stacked as one (``OTHERS``)


def daily_cost_chart(*, daily: Mapping[date, Mapping[str, float]], pace: float | None, words: ChartWords) -> bytes:
    """The chart of ``cost_figure`` as PNG bytes."""
    buffer = io.BytesIO()
    cost_figure(daily=daily, pace=pace, words=words).savefig(buffer, format="png")
    return buffer.getvalue()


def cost_figure(*, daily: Mapping[date, Mapping[str, float]], pace: float | None, words: ChartWords) -> Figure:
    """Stacked bars: one per day, one colour per part (namespace or team); a dashed line at ``pace``.

    The ``MAX_PARTS - 1`` largest parts get their own colour; the rest are stacked as one ``OTHERS``.
    """
    from matplotlib.figure import Figure

    daily = _top_parts(daily)
    days = sorted(daily)
    parts = sorted({part for values in daily.values() for part in values}, key=lambda p: (p == OTHERS, p))
    fonts = fonts_for([words.title, words.axis, words.month, words.pace, words.others, *parts])
    figure = Figure(figsize=(9, 4.2), dpi=100, layout="constrained")
    axes = figure.subplots()
    bottoms = [0.0] * len(days)
    labels = [day.strftime("%d") for day in days]
    for part in parts:
        heights = [daily[day].get(part, 0.0) for day in days]
        axes.bar(labels, heights, bottom=bottoms, label=words.others if part == OTHERS else part, width=0.8)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    if pace is not None:
        axes.axhline(pace, color="#c0392b", linestyle="--", linewidth=1.5, label=words.pace)
    axes.set_title(words.title, fontfamily=fonts)
    axes.set_ylabel(words.axis, fontfamily=fonts)
    axes.set_xlabel(words.month if days else "", fontfamily=fonts)
    axes.grid(axis="y", alpha=0.3)
    if parts or pace is not None:
        axes.legend(loc="upper left", ncols=2, prop={"family": fonts, "size": "small"})
    return figure


MAX_PARTS = 10
OTHERS = "others"  # the key of the parts stacked as one (the ledger's too): shown as ``ChartWords.others``


def _top_parts(daily: Mapping[date, Mapping[str, float]]) -> dict[date, dict[str, float]]:
    totals: dict[str, float] = {}
    for values in daily.values():
        for part, value in values.items():
            totals[part] = totals.get(part, 0.0) + value
    if len(totals) <= MAX_PARTS:
        return {day: dict(values) for day, values in daily.items()}
    kept = set(sorted(totals, key=lambda part: totals[part], reverse=True)[: MAX_PARTS - 1])
    grouped: dict[date, dict[str, float]] = {}
    for day, values in daily.items():
        grouped[day] = {part: value for part, value in values.items() if part in kept}
        grouped[day][OTHERS] = sum(value for part, value in values.items() if part not in kept)
    return grouped


# --- fonts ---------------------------------------------------------------------------------------

_fonts_lock = threading.Lock()
_installed: tuple[str, ...] | None = None
_warned = False


def fonts_for(texts: Sequence[str]) -> list[str]:
    """The font families to draw ``texts`` with: the Latin font, then each installed CJK font. When a text
    needs CJK glyphs and no such font is installed, one warning (per process) names the package."""
    global _warned
    fonts = installed_fonts()
    if not any(font in CJK_FONTS for font in fonts) and any(_needs_cjk(text) for text in texts):
        with _fonts_lock:
            warn, _warned = not _warned, True
        if warn:
            log.warning(
                "no font with Chinese glyphs is installed: the chart's Chinese words are drawn as empty boxes"
                " (on Debian or Ubuntu: apt-get install %s)",
                CJK_PACKAGE,
            )
    return list(fonts)


def installed_fonts() -> tuple[str, ...]:
    """``LATIN_FONT`` and the ``CJK_FONTS`` matplotlib can use, in that order (looked up once)."""
    global _installed
    with _fonts_lock:
        if _installed is None:
            _installed = _look_up_fonts()
        return _installed


def _look_up_fonts() -> tuple[str, ...]:
    from matplotlib import font_manager

    manager = font_manager.fontManager
    if not {font.name for font in manager.ttflist} & set(CJK_FONTS):
        # matplotlib lists the system's fonts once, in its cache: a font installed after that is added here.
        for path in font_manager.findSystemFonts():
            if any(part in path.lower().replace(" ", "") for part in _CJK_FILES):
                try:
                    manager.addfont(path)
                except (OSError, RuntimeError, ValueError) as error:
                    log.debug("font %s not usable: %s", path, error)
    names = {font.name for font in manager.ttflist}
    return (LATIN_FONT, *(font for font in CJK_FONTS if font in names))


def _needs_cjk(text: str) -> bool:
    """Whether ``text`` has a character of the CJK scripts or their punctuation."""
    return any("\u2e80" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af" or "\uff00" <= char <= "\uffef" for char in text)
