"""Slack messages as terminal text: what the shell shows of what the bot sent.

The messages' own words are the bot's (already in their reader's language); the few words this module
adds (where a message went, an image, a form without a title) are the shell's, in its language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

from bot.adapters.i18n import tr

EMOJI = {
    ":white_check_mark:": "✅",
    ":x:": "❌",
    ":warning:": "⚠️ ",
    ":no_entry:": "⛔",
    ":no_entry_sign:": "🚫",
    ":hourglass_flowing_sand:": "⏳",
    ":hourglass:": "⌛",
    ":+1:": "👍",
    ":zzz:": "💤",
    ":wastebasket:": "🗑 ",
    ":gear:": "⚙️ ",
    ":inbox_tray:": "📥",
    ":repeat:": "🔁",
    ":alarm_clock:": "⏰",
    ":bar_chart:": "📊",
    ":moneybag:": "💰",
    ":rotating_light:": "🚨",
    ":electric_plug:": "🔌",
    ":chart_with_upwards_trend:": "📈",
    ":information_source:": "ℹ️ ",
    ":link:": "🔗",
}
_DATE = re.compile(r"<!date\^\d+\^[^|>]*\|([^>]*)>")
_USER = re.compile(r"<@([A-Z0-9]+)>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|[^>]*)?>")
_EMOJI = re.compile(r":[a-z0-9_+-]+:")

# Called with a button (its dict) and returns the number the person types to press it.
ButtonNumberer = Callable[[dict[str, Any]], int]


def display_width(text: str) -> int:
    """The columns a terminal gives ``text``: a wide character (Chinese) takes two, a combining mark none."""
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1 for char in text
    )


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` terminal columns (as ``f"{text:<{width}}"`` for ASCII)."""
    return text + " " * max(0, width - display_width(text))


class TextRenderer:
    def __init__(self, *, users: dict[str, str], channels: dict[str, str]) -> None:
        self._users = users
        self._channels = channels

    def mrkdwn(self, text: str) -> str:
        text = _DATE.sub(lambda m: m.group(1), text)
        text = _USER.sub(lambda m: "@" + self._users.get(m.group(1), m.group(1)), text)
        text = _CHANNEL.sub(lambda m: "#" + self._channels.get(m.group(1), m.group(1)), text)
        text = _EMOJI.sub(lambda m: EMOJI.get(m.group(0), m.group(0)), text)
        # Slack shows the entities of escaped text as the characters they stand for (&amp; last).
        return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")

    def where(self, channel: str | None) -> str:
        if channel is None:
            return "?"
        if channel.startswith("D"):
            return tr("DM to @{name}", name=self._users.get(channel[1:], channel[1:]))
        return "#" + self._channels.get(channel, channel)

    def blocks(self, blocks: list[dict[str, Any]], number: ButtonNumberer) -> list[str]:
        lines: list[str] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "header":
                lines.append(f"▌ {block['text']['text']}")
            elif kind == "section":
                if block.get("text"):
                    lines.extend(self.mrkdwn(block["text"]["text"]).splitlines())
                for field in block.get("fields", []):
                    label, _, value = self.mrkdwn(field["text"]).partition("\n")
                    lines.append(f"  {label.strip('*')}: {value.replace(chr(10), ' / ')}")
            elif kind == "context":
                lines.extend("  " + self.mrkdwn(e.get("text", "")) for e in block.get("elements", []))
            elif kind == "actions":
                buttons = [f"[{number(e)}: {e['text']['text']}]" for e in block.get("elements", []) if e.get("type") == "button"]
                lines.append("  " + "  ".join(buttons))
            elif kind == "image":
                lines.append("  " + tr("[image: {description}]", description=block.get("alt_text", "")))
        return lines

    def form(self, view: dict[str, Any]) -> list[str]:
        title = view.get("title", {}).get("text") or tr("Form")
        lines = [f"▌ {title}"]
        for block in view.get("blocks", []):
            if block.get("type") == "input":
                lines.append(f"  • {block['label']['text']}")
            elif block.get("type") in ("section", "context"):
                lines.extend(self.blocks([block], lambda _: 0))
        return lines
