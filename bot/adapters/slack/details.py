"""The words of an audit record's typed detail (``bot.domain.audit_details``), on the audit trail.

Each detail has one renderer, a sentence written whole (``fill``); ``mrkdwn.render`` escapes every piece.
"""

from __future__ import annotations

from datetime import timedelta
from functools import singledispatch

from bot.adapters.slack.sentences import fill
from bot.domain import audit_details as d
from bot.domain.reclaim import span_text
from bot.services.text import Notice, gpus


@singledispatch
def notice(detail: object) -> Notice:
    """The typed parts of a detail (registered per detail class below)."""
    raise TypeError(f"no words for {type(detail).__name__}")


@notice.register
def _(detail: d.ReclaimStarted) -> Notice:
    return fill(
        "{used} GPUs in use above the new quota of {quota}: running pods keep them until they finish",
        used=detail.used,
        quota=detail.quota,
    )


@notice.register
def _(detail: d.ReclaimCovered) -> Notice:
    return fill("the quota was raised to cover what is in use")


@notice.register
def _(detail: d.ReclaimGone) -> Notice:
    return fill("the quota or the namespace is gone")


@notice.register
def _(detail: d.ReclaimRaisedByHand) -> Notice:
    return fill("the quota was raised over usage by hand")


@notice.register
def _(detail: d.ReclaimFreed) -> Notice:
    return fill(
        "{freed} freed over {span} as jobs finished",
        freed=gpus(detail.freed),
        span=span_text(timedelta(minutes=detail.minutes)),
    )
