"""The words of an audit record's typed detail (``bot.domain.audit_details``), on the audit trail.

Each detail has one renderer, a whole sentence of the catalog in the reader's language (``fill``,
``fill_n`` for a count); ``mrkdwn.render`` escapes every piece. ``span_words`` says how long a
reclaim took, here and in the thread's message (``words``).
"""

from __future__ import annotations

from datetime import timedelta
from functools import singledispatch

from bot.adapters.i18n import format_number, tr, tr_n
from bot.adapters.slack import approval_words
from bot.adapters.slack.mrkdwn import utc_text
from bot.adapters.slack.resources import gpus_of, signed
from bot.adapters.slack.sentences import fill, fill_n
from bot.domain import audit_details as d
from bot.domain.auto_notes import AutoApprovalNote
from bot.domain.commands import format_request_id
from bot.domain.resources import quota_key
from bot.services.text import Notice


def span_words(span: timedelta) -> str:
    """A reclaim's length as people say it: "2 days 4 h", "5 h 10 min", "12 min", "under a minute"
    ("2 天 4 小时", "5 小时 10 分钟", "12 分钟", "不到一分钟")."""
    minutes = int(span.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days and hours:
        return tr_n("{count} day {hours} h", "{count} days {hours} h", days, hours=format_number(hours))
    if days:
        return tr_n("{count} day", "{count} days", days)
    if hours and minutes:
        return tr("{hours} h {minutes} min", hours=format_number(hours), minutes=format_number(minutes))
    if hours:
        return tr("{hours} h", hours=format_number(hours))
    if minutes:
        return tr("{minutes} min", minutes=format_number(minutes))
    return tr("under a minute")


@singledispatch
def notice(detail: object) -> Notice:
    """The typed parts of a detail (registered per detail class below)."""
    raise TypeError(f"no words for {type(detail).__name__}")


@notice.register
def _(detail: d.ReclaimStarted) -> Notice:
    return fill_n(
        "{count} GPU in use above the new quota of {quota}: running pods keep it until they finish",
        "{count} GPUs in use above the new quota of {quota}: running pods keep them until they finish",
        detail.used,
        quota=format_number(detail.quota),
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
    span = span_words(timedelta(minutes=detail.minutes))
    return fill("{freed} freed over {span} as jobs finished", freed=gpus_of(detail.freed), span=span)


@notice.register
def _(detail: d.HandEditAdopted) -> Notice:
    return fill_n(
        "the quota was changed outside the bot by {drift} GPU; adopted into the base",
        "the quota was changed outside the bot by {drift} GPUs; adopted into the base",
        abs(detail.drift),
        drift=signed(detail.drift),
    )


@notice.register
def _(detail: d.QuotaWritten) -> Notice:
    before = tr("none") if detail.before is None else format_number(detail.before)
    after = format_number(detail.after)
    if detail.flavor is None:
        key = quota_key(detail.resource)
        return fill("{quota}: {key} {before} -> {after}", quota=detail.quota_name, key=key, before=before, after=after)
    return fill(
        "{quota}: nominalQuota of {resource} ({flavor}) {before} -> {after}",
        quota=detail.quota_name,
        resource=detail.resource,
        flavor=detail.flavor,
        before=before,
        after=after,
    )


@notice.register
def _(detail: d.NamespaceFirstSeen) -> Notice:
    if detail.has_quota:
        return fill("first seen by the bot")
    return fill("first seen by the bot; no GPU quota in the cluster yet")


@notice.register
def _(detail: d.GrantEnding) -> Notice:
    return fill_n(
        "{gpus} GPU, due {due}",
        "{gpus} GPUs, due {due}",
        abs(detail.gpus),
        gpus=signed(detail.gpus),
        due=utc_text(detail.due),
    )


@notice.register
def _(detail: d.Extends) -> Notice:
    return fill("extends {request}", request=format_request_id(detail.request_id))


@notice.register
def _(detail: d.SourceGave) -> Notice:
    return fill_n("gave {count} GPU to {target}", "gave {count} GPUs to {target}", detail.gpus, target=detail.target)


@notice.register
def _(detail: d.SourceGivenBack) -> Notice:
    if detail.ended:
        return fill_n(
            "the shift to {target} ended; {count} GPU back",
            "the shift to {target} ended; {count} GPUs back",
            detail.gpus,
            target=detail.target,
        )
    return fill_n(
        "the shift to {target} failed; {count} GPU back",
        "the shift to {target} failed; {count} GPUs back",
        detail.gpus,
        target=detail.target,
    )


@notice.register
def _(detail: AutoApprovalNote) -> Notice:
    return approval_words.note_notice(detail)  # the card's words for the same verdict
