"""The words of an audit record's typed detail (``bot.domain.audit_details``), on the audit trail.

Each detail has one renderer, a sentence written whole (``fill``); ``mrkdwn.render`` escapes every piece.
"""

from __future__ import annotations

from datetime import timedelta
from functools import singledispatch

from bot.adapters.slack import approval_words
from bot.adapters.slack.sentences import fill
from bot.domain import audit_details as d
from bot.domain.auto_notes import AutoApprovalNote
from bot.domain.commands import format_request_id
from bot.domain.reclaim import span_text
from bot.domain.resources import quota_key
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


@notice.register
def _(detail: d.HandEditAdopted) -> Notice:
    return fill("the quota was changed outside the bot by {drift} GPUs; adopted into the base", drift=f"{detail.drift:+d}")


@notice.register
def _(detail: d.QuotaWritten) -> Notice:
    before = "none" if detail.before is None else str(detail.before)
    return fill(
        "{quota}: {key} {before} -> {after}",
        quota=detail.quota_name,
        key=quota_key(detail.resource) if detail.flavor is None else f"nominalQuota of {detail.resource} ({detail.flavor})",
        before=before,
        after=detail.after,
    )


@notice.register
def _(detail: d.NamespaceFirstSeen) -> Notice:
    if detail.has_quota:
        return fill("first seen by the bot")
    return fill("first seen by the bot; no GPU quota in the cluster yet")


@notice.register
def _(detail: d.GrantEnding) -> Notice:
    return fill("{gpus} GPUs, due {due} UTC", gpus=f"{detail.gpus:+d}", due=f"{detail.due:%Y-%m-%d %H:%M}")


@notice.register
def _(detail: d.Extends) -> Notice:
    return fill("extends {request}", request=format_request_id(detail.request_id))


@notice.register
def _(detail: d.SourceGave) -> Notice:
    return fill("gave {gpus} GPUs to {target}", gpus=detail.gpus, target=detail.target)


@notice.register
def _(detail: d.SourceGivenBack) -> Notice:
    if detail.ended:
        return fill("the shift to {target} ended; {gpus} GPUs back", target=detail.target, gpus=detail.gpus)
    return fill("the shift to {target} failed; {gpus} GPUs back", target=detail.target, gpus=detail.gpus)


@notice.register
def _(detail: AutoApprovalNote) -> Notice:
    return approval_words.note_notice(detail)  # the card's words for the same verdict
