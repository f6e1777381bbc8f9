"""The words of every typed refusal (``bot.services.refusals``): whole English sentences.

Each refusal has one renderer here, registered on ``notice``, written like the messages of
``words`` (``fill``: a sentence with named placeholders, the form a catalog takes). What a person
typed (a namespace, a team name) is a text value, escaped by ``mrkdwn.render``. The bootstrap lends
``plain_text`` to ``Refused``, so ``str(error)`` (logs, form errors, the CLIs) says the same words.
"""

from __future__ import annotations

from functools import singledispatch

from bot.adapters.slack import mrkdwn
from bot.adapters.slack.words import fill
from bot.domain.commands import format_request_id
from bot.domain.lifecycle import RequestState, Verdict
from bot.services import refusals as r
from bot.services.requests import AUTO_APPROVER
from bot.services.text import Notice, Part, User, Words, plain


def render(refusal: r.Refusal) -> str:
    """The refusal as mrkdwn (without the emoji the reply puts before it)."""
    return mrkdwn.render(notice(refusal))


def plain_text(refusal: r.Refusal) -> str:
    """The refusal as plain text, for ``str(error)``: logs, form errors, the CLIs."""
    return plain(notice(refusal))


@singledispatch
def notice(refusal: object) -> Notice:
    """The typed parts of a refusal (registered per refusal class below)."""
    raise TypeError(f"no words for {type(refusal).__name__}")


def _people(user_ids: tuple[str, ...]) -> Notice:
    """``@a, @b``; the auto-approver is named, not mentioned."""
    parts: list[Part] = []
    for index, user_id in enumerate(user_ids):
        parts += [Words(", ")] if index else []
        parts.append(Words("auto-approval") if user_id == AUTO_APPROVER else User(user_id))
    return Notice(tuple(parts))


# --- requests: loading, pending, reasons --------------------------------------------------


@notice.register
def _(refusal: r.NoSuchRequest) -> Notice:
    return fill("{request} does not exist.", request=format_request_id(refusal.request_id))


@notice.register
def _(refusal: r.AlreadyDecided) -> Notice:
    request, people = format_request_id(refusal.request_id), _people(refusal.deciders)
    if refusal.state == RequestState.DENIED:
        return fill("{request} was already denied by {people}.", request=request, people=people)
    if refusal.state in (RequestState.APPROVED, RequestState.APPLIED, RequestState.FAILED):
        return fill(
            "{request} was already approved by {people} (now {state}).", request=request, people=people, state=refusal.state.value
        )
    return fill("{request} is already {state}.", request=request, state=refusal.state.value)


@notice.register
def _(refusal: r.ReasonTooLong) -> Notice:
    return fill(
        "The reason is {length} characters long; say it in at most {limit}.",
        length=f"{refusal.length:,}",
        limit=f"{refusal.limit:,}",
    )


# --- decisions: who may decide, and once ----------------------------------------------------


@notice.register
def _(refusal: r.OwnRequest) -> Notice:
    values = {"verdict": refusal.verdict.value, "request": format_request_id(refusal.request_id)}
    if refusal.verdict == Verdict.DENY:
        return fill("You cannot {verdict} your own request {request}; `cancel` it instead if you no longer need it.", **values)
    return fill("You cannot {verdict} your own request {request}.", **values)


@notice.register
def _(refusal: r.DecidedBefore) -> Notice:
    request = format_request_id(refusal.request_id)
    if refusal.verdict == Verdict.DENY:
        return fill("You already denied {request}.", request=request)
    return fill("You already approved {request}.", request=request)


@notice.register
def _(refusal: r.NotAnApprover) -> Notice:
    return fill(
        "You are not an approver for {team}, so you cannot decide {request}.",
        team=refusal.team,
        request=format_request_id(refusal.request_id),
    )


@notice.register
def _(refusal: r.TeamGone) -> Notice:
    return fill(
        "{request} names a team the policy no longer has; an admin can cancel it.", request=format_request_id(refusal.request_id)
    )


@notice.register
def _(refusal: r.AdminsDecideShifts) -> Notice:
    return fill("Only admins decide shifts (policy `shifts.approval: admin`).")


@notice.register
def _(refusal: r.NotAShiftApprover) -> Notice:
    return fill(
        "You are not an approver of {source} or {target}, so you cannot decide this shift.",
        source=refusal.source_team,
        target=refusal.target_team,
    )


@notice.register
def _(refusal: r.ShiftNeedsApproverOf) -> Notice:
    return fill("This shift already has an approval for your team; it needs one from an approver of {team}.", team=refusal.team)


_UNREADABLE = {
    r.Reading.CONFIRMATION: "Could not read the quota of `{namespace}` to show the change ({problem}). Nothing was recorded; try again.",
    r.Reading.REQUEST: "Could not read the quota of `{namespace}` from the cluster ({problem}). Nothing was submitted; try again.",
    r.Reading.SHIFT: "Could not read the quota of `{namespace}` ({problem}). Nothing was submitted; try again.",
}


@notice.register
def _(refusal: r.QuotaUnreadable) -> Notice:
    return fill(_UNREADABLE[refusal.reading], namespace=refusal.namespace, problem=refusal.problem)
