"""The words of a failure reason (``bot.domain.failure_reasons``): on the card, in the thread, in replies
and on the audit trail.

Each reason has one renderer, a sentence written whole (``words.fill``); a reason quoting another
system (``AsSaid``: the API server's message, or a reason an earlier version stored as text) is shown
as said, as text. ``mrkdwn.render`` escapes every piece.
"""

from __future__ import annotations

from functools import singledispatch

from bot.adapters.slack import details, mrkdwn
from bot.adapters.slack.sentences import Value, fill
from bot.domain import audit_details as d
from bot.domain import failure_reasons as f
from bot.domain.commands import format_request_id
from bot.services.text import Code, Notice, Words, plain


def render(reason: f.FailureReason) -> str:
    """The reason as mrkdwn."""
    return mrkdwn.render(notice(reason))


def plain_text(reason: f.FailureReason) -> str:
    """The reason as plain text, for an error's ``str``: logs and job results."""
    return plain(notice(reason))


def render_detail(detail: str) -> str:
    """An audit record's detail as mrkdwn: a reason or a typed detail (stored as JSON) in words, any other
    detail (an earlier version's, or a reason a person typed, even one that looks like JSON) as it was stored."""
    try:
        if detail.startswith(f.MARKER):
            return render(f.from_text(detail))
        if detail.startswith(d.MARKER):
            return mrkdwn.render(details.notice(d.from_text(detail)))
    except (ValueError, KeyError, TypeError):
        pass
    return mrkdwn.escape(detail)


@singledispatch
def notice(reason: object) -> Notice:
    """The typed parts of a reason (registered per reason class below)."""
    raise TypeError(f"no words for {type(reason).__name__}")


@notice.register
def _(reason: f.AsSaid) -> Notice:
    return Notice((Words(reason.text),))


@notice.register
def _(reason: f.QuotaTooLow) -> Notice:
    return fill(
        "the quota is {before} GPUs now, so it cannot go down by {decrease}", before=reason.before, decrease=reason.decrease
    )


@notice.register
def _(reason: f.AboveLimit) -> Notice:
    return fill(
        "the quota is {before} GPUs now and may be at most {max_gpus}; {before} {delta} = {after}",
        before=reason.before,
        max_gpus=reason.max_gpus,
        delta=f"{reason.delta:+d}",
        after=reason.after,
    )


@notice.register
def _(reason: f.PermanentBelowZero) -> Notice:
    return fill(
        "the permanent quota is {base} GPUs, so it cannot go down by {decrease}", base=reason.base, decrease=reason.decrease
    )


@notice.register
def _(reason: f.GrantAlreadyEnded) -> Notice:
    return fill("the grant of {request} has already ended", request=format_request_id(reason.request_id))


@notice.register
def _(reason: f.SourceShort) -> Notice:
    values: dict[str, Value] = {"namespace": Code(reason.namespace), "gpus": reason.gpus, "wanted": reason.wanted}
    if reason.own:
        return fill("{namespace} has {gpus} GPUs of its own quota now, so it cannot give {wanted}", **values)
    return fill("{namespace} has {gpus} GPUs now, so it cannot give {wanted}", **values)


@notice.register
def _(reason: f.SourceHasNone) -> Notice:
    return fill("{namespace} has no GPUs to give now", namespace=Code(reason.namespace))


@notice.register
def _(reason: f.RefusedWhenApproved) -> Notice:
    return fill("refused when approved: {problem}", problem=notice(reason.problem))


@notice.register
def _(reason: f.LegNotWritten) -> Notice:
    if reason.source:
        return fill(
            "the source side ({namespace}) could not be lowered: {cause}", namespace=reason.namespace, cause=notice(reason.cause)
        )
    return fill(
        "the target side ({namespace}) could not be raised: {cause}", namespace=reason.namespace, cause=notice(reason.cause)
    )


@notice.register
def _(reason: f.SourceKeptLowered) -> Notice:
    return fill(
        "{cause}; the source side stays lowered ({before} -> {after})",
        cause=notice(reason.cause),
        before=str(reason.before),
        after=str(reason.after),
    )


@notice.register
def _(reason: f.QuotaKeptChanging) -> Notice:
    return fill(
        "the quota {quota} in {namespace} kept changing while the bot wrote it ({conflicts} conflicts in a row)",
        quota=reason.quota_name,
        namespace=reason.namespace,
        conflicts=reason.conflicts,
    )


@notice.register
def _(reason: f.ShiftLowersFirst) -> Notice:
    return fill(
        "{request} is lowering {namespace}, whose quota was cut by hand meanwhile; the shift goes first",
        request=format_request_id(reason.request_id),
        namespace=reason.namespace,
    )
