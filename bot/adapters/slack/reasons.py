"""The words of a failure reason (``bot.domain.failure_reasons``): on the card, in the thread, in replies
and on the audit trail.

Each reason has one renderer, a whole sentence of the catalog in the reader's language (``fill``,
``fill_n`` for a count); a reason quoting another system (``AsSaid``: the API server's message, or a
reason an earlier version stored as text) is shown as said, as text, in every language. ``mrkdwn.render`` escapes every piece.
"""

from __future__ import annotations

from datetime import datetime
from functools import singledispatch

from bot.adapters.i18n import current, format_number, tr
from bot.adapters.slack import details, mrkdwn
from bot.adapters.slack.mrkdwn import utc_text
from bot.adapters.slack.resources import signed
from bot.adapters.slack.sentences import Value, fill, fill_n
from bot.domain import audit_details as d
from bot.domain import failure_reasons as f
from bot.domain.commands import format_request_id
from bot.domain.languages import Language
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
    return fill_n(
        "the quota is {count} GPU now, so it cannot go down by {decrease}",
        "the quota is {count} GPUs now, so it cannot go down by {decrease}",
        reason.before,
        decrease=format_number(reason.decrease),
    )


@notice.register
def _(reason: f.AboveLimit) -> Notice:
    delta = signed(reason.delta)
    return fill_n(
        "the quota is {before} GPU now and may be at most {max_gpus}; {before} {delta} = {after}",
        "the quota is {before} GPUs now and may be at most {max_gpus}; {before} {delta} = {after}",
        reason.before,
        before=format_number(reason.before),
        max_gpus=format_number(reason.max_gpus),
        delta=delta,
        after=format_number(reason.after),
    )


@notice.register
def _(reason: f.PermanentBelowZero) -> Notice:
    return fill_n(
        "the permanent quota is {count} GPU, so it cannot go down by {decrease}",
        "the permanent quota is {count} GPUs, so it cannot go down by {decrease}",
        reason.base,
        decrease=format_number(reason.decrease),
    )


@notice.register
def _(reason: f.GrantAlreadyEnded) -> Notice:
    return fill("the grant of {request} has already ended", request=format_request_id(reason.request_id))


@notice.register
def _(reason: f.SourceShort) -> Notice:
    values: dict[str, Value] = {"namespace": Code(reason.namespace), "wanted": format_number(reason.wanted)}
    if reason.own:
        return fill_n(
            "{namespace} has {count} GPU of its own quota now, so it cannot give {wanted}",
            "{namespace} has {count} GPUs of its own quota now, so it cannot give {wanted}",
            reason.gpus,
            **values,
        )
    return fill_n(
        "{namespace} has {count} GPU now, so it cannot give {wanted}",
        "{namespace} has {count} GPUs now, so it cannot give {wanted}",
        reason.gpus,
        **values,
    )


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


def _figure(value: int | None) -> str:
    return tr("none") if value is None else format_number(value)


@notice.register
def _(reason: f.SourceKeptLowered) -> Notice:
    return fill(
        "{cause}; the source side stays lowered ({before} -> {after})",
        cause=notice(reason.cause),
        before=_figure(reason.before),
        after=_figure(reason.after),
    )


@notice.register
def _(reason: f.ClusterNotAnswering) -> Notice:
    """English keeps the adapter's words for the cause; another language names the cluster and the time only
    (the cause, in the bot's English, is in the log)."""
    since = utc_text(datetime.fromisoformat(reason.since))
    if current() == Language.EN:
        if reason.cluster:
            return fill(
                "waiting for cluster {cluster}: {cause} (since {since})", cluster=reason.cluster, cause=reason.cause, since=since
            )
        return fill("waiting for the home cluster: {cause} (since {since})", cause=reason.cause, since=since)
    if reason.cluster:
        return fill("cluster {cluster} has not answered since {since}", cluster=reason.cluster, since=since)
    return fill("the home cluster has not answered since {since}", since=since)


@notice.register
def _(reason: f.QuotaKeptChanging) -> Notice:
    return fill_n(
        "the quota {quota} in {namespace} kept changing while the bot wrote it ({count} conflict in a row)",
        "the quota {quota} in {namespace} kept changing while the bot wrote it ({count} conflicts in a row)",
        reason.conflicts,
        quota=reason.quota_name,
        namespace=reason.namespace,
    )


@notice.register
def _(reason: f.ShiftLowersFirst) -> Notice:
    return fill(
        "{request} is lowering {namespace}, whose quota was cut by hand meanwhile; the shift goes first",
        request=format_request_id(reason.request_id),
        namespace=reason.namespace,
    )
