"""Small text helpers for chat messages (Slack mrkdwn is the bot's lingua franca; the shell renders it)."""

from __future__ import annotations

from datetime import datetime, timezone


def mention(user_id: str) -> str:
    return f"<@{user_id}>"


def channel(channel_id: str) -> str:
    return f"<#{channel_id}>"


def when(moment: datetime) -> str:
    """A time each reader sees in their own time zone (Slack date token), with a UTC fallback."""
    utc = moment.astimezone(timezone.utc)
    fallback = utc.strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(utc.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


def gpus(count: int) -> str:
    return f"{count} GPU" if abs(count) == 1 else f"{count} GPUs"


def money(amount: float, currency: str) -> str:
    return f"{amount:,.2f} {currency}"
