"""The words of every typed refusal (``bot.services.refusals``): whole English sentences.

Each refusal has one renderer here, registered on ``notice``, written like the messages of
``words`` (``fill``: a sentence with named placeholders, the form a catalog takes). What a person
typed (a namespace, a team name) is a text value, escaped by ``mrkdwn.render``. The bootstrap lends
``plain_text`` to ``Refused``, so ``str(error)`` (logs, form errors, the CLIs) says the same words.
"""

from __future__ import annotations

from functools import singledispatch

from bot.adapters.slack import mrkdwn, reasons
from bot.adapters.slack.sentences import fill, join
from bot.domain.commands import format_request_id
from bot.domain.durations import format_duration
from bot.domain.lifecycle import RequestState, Verdict
from bot.domain.resources import short_name
from bot.errors import KarmadaPart, KueuePart
from bot.services import refusals as r
from bot.services.requests import AUTO_APPROVER
from bot.services.text import Notice, Part, User, Words, gpus, plain


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


# --- cancel, release, retry -------------------------------------------------------------------


@notice.register
def _(refusal: r.NotYoursToCancel) -> Notice:
    return fill("Only the requester or an admin can cancel {request}.", request=format_request_id(refusal.request_id))


@notice.register
def _(refusal: r.NotYoursToRelease) -> Notice:
    return fill(
        "Only the requester, an approver of the team or an admin can release {request}.",
        request=format_request_id(refusal.request_id),
    )


@notice.register
def _(refusal: r.NothingToGiveBack) -> Notice:
    return fill("{request} has nothing to give back: its source was not lowered.", request=format_request_id(refusal.request_id))


@notice.register
def _(refusal: r.NoActiveGrant) -> Notice:
    request = format_request_id(refusal.request_id)
    if refusal.extending:
        return fill("{request} has no active grant to extend.", request=request)
    return fill("{request} has no active grant to release.", request=request)


@notice.register
def _(refusal: r.GrantAlreadyEnded) -> Notice:
    return fill("The grant of {request} has already ended.", request=format_request_id(refusal.request_id))


@notice.register
def _(refusal: r.AdminsRetry) -> Notice:
    return fill("Only admins can retry a failed request.")


@notice.register
def _(refusal: r.NotFailed) -> Notice:
    return fill(
        "{request} is {state}, not failed: nothing to retry.",
        request=format_request_id(refusal.request_id),
        state=refusal.state.value,
    )


@notice.register
def _(refusal: r.NotRetried) -> Notice:
    return fill("Not retried: {problem}.", problem=reasons.notice(refusal.problem))


# --- submitting a request, an extension or a shift ------------------------------------------


@notice.register
def _(refusal: r.Incomplete) -> Notice:
    problems = "; ".join(refusal.problems) or "namespace, GPUs and a reason are needed"
    return fill("The request is incomplete: {problems}", problems=problems)


@notice.register
def _(refusal: r.OverLimits) -> Notice:
    return fill("Not submitted: {problems}.", problems="; ".join(refusal.problems))


@notice.register
def _(refusal: r.GrantTooLong) -> Notice:
    return fill(
        "Not submitted: {team} may borrow GPUs for at most {longest} per grant, extensions included;"
        " {request} would then last {would_last}.",
        team=refusal.team,
        longest=format_duration(refusal.longest),
        request=format_request_id(refusal.request_id),
        would_last=format_duration(refusal.would_last),
    )


@notice.register
def _(refusal: r.ShiftNotExtendable) -> Notice:
    return fill(
        "{request} is a shift: its GPUs come from {source}, so to keep them longer, request a new shift"
        " when this one ends (both teams approve it).",
        request=format_request_id(refusal.request_id),
        source=refusal.source_namespace,
    )


@notice.register
def _(refusal: r.NotManaged) -> Notice:
    values = {"namespace": refusal.namespace, "managed": ", ".join(refusal.managed or ())}
    if refusal.managed is None:
        return fill("`{namespace}` is not managed by gpu-quota-bot.", **values)
    if refusal.submitting:
        return fill("Not submitted: `{namespace}` is not managed by gpu-quota-bot. Managed namespaces: {managed}.", **values)
    return fill("`{namespace}` is not managed by gpu-quota-bot. Managed namespaces: {managed}.", **values)


_QUEUE_PARTS = {
    KueuePart.KUEUE: "Kueue is not installed in the cluster (kueue.x-k8s.io serves {present})",
    KueuePart.CLUSTER_QUEUE: "the ClusterQueue `{queue}` does not exist",
    KueuePart.FLAVOR: "the ClusterQueue `{queue}` has no flavor `{flavor}` (it has {present})",
    KueuePart.RESOURCE: "the flavor `{flavor}` of the ClusterQueue `{queue}` has no quota of {resource} (it lists {present})",
}


@notice.register
def _(refusal: r.QueueMissing) -> Notice:
    values = {
        "namespace": refusal.namespace,
        "resource": refusal.resource,
        "queue": refusal.cluster_queue,
        "flavor": refusal.flavor,
        "present": ", ".join(refusal.present) or "none",
    }
    what = fill(_QUEUE_PARTS[refusal.missing], **values)
    return join(
        fill("Not submitted: the policy keeps {resource} of `{namespace}` in Kueue, but ", **values),
        what,
        fill(". A platform admin needs to fix the policy or the queue (`gpu-quota-bot check-config` names it)."),
    )


_FEDERATION_PARTS = {
    KarmadaPart.KARMADA: "the Karmada plane does not serve FederatedResourceQuotas (policy.karmada.io serves {present})",
    KarmadaPart.FEDERATED_QUOTA: "the FederatedResourceQuota `{quota}` does not exist on the Karmada plane",
    KarmadaPart.MEMBER: "the FederatedResourceQuota `{quota}` has no assignment for member `{member}` (it has {present})",
    KarmadaPart.RESOURCE: "the assignment of member `{member}` in `{quota}` has no {resource} (it lists {present})",
}


@notice.register
def _(refusal: r.FederationMissing) -> Notice:
    values = {
        "namespace": refusal.namespace,
        "resource": refusal.resource,
        "quota": refusal.federated_quota,
        "member": refusal.member,
        "present": ", ".join(refusal.present) or "none",
    }
    return join(
        fill("Not submitted: the policy keeps {resource} of `{namespace}` in Karmada, but ", **values),
        fill(_FEDERATION_PARTS[refusal.missing], **values),
        fill(". A platform admin needs to fix the policy or the quota (`gpu-quota-bot check-config` names it)."),
    )


@notice.register
def _(refusal: r.NoSharedResource) -> Notice:
    return fill(
        "Not submitted: `{source}` and `{target}` govern no resource in common; a shift moves one resource both govern.",
        source=refusal.source,
        target=refusal.target,
    )


@notice.register
def _(refusal: r.ResourceUnclear) -> Notice:
    values = {
        "namespace": refusal.namespace,
        "word": refusal.word,
        "candidates": ", ".join(short_name(c) for c in refusal.candidates),
        "governed": ", ".join(short_name(g) for g in refusal.governed),
    }
    if not refusal.word:
        return fill("Not submitted: `{namespace}` governs several resources; say which: {governed}.", **values)
    if refusal.candidates:
        return fill("Not submitted: `{word}` could be {candidates}; say which.", **values)
    return fill("Not submitted: `{namespace}` does not govern `{word}`. It governs: {governed}.", **values)


@notice.register
def _(refusal: r.AmbiguousNamespace) -> Notice:
    return fill(
        "`{typed}` is a namespace in several clusters; name one: {candidates}.",
        typed=refusal.typed,
        candidates=", ".join(refusal.candidates),
    )


@notice.register
def _(refusal: r.NotAMember) -> Notice:
    return fill("Only members of {team} may request GPUs for `{namespace}`.", team=refusal.team, namespace=refusal.namespace)


@notice.register
def _(refusal: r.NotAShiftMember) -> Notice:
    return fill(
        "Only members of {source} or {target} (or an admin) may shift their GPUs.",
        source=refusal.source_team,
        target=refusal.target_team,
    )


@notice.register
def _(refusal: r.NoSuchNamespace) -> Notice:
    if refusal.reading == r.Reading.SHIFT:
        return fill("Not submitted: the namespace `{namespace}` does not exist in the cluster.", namespace=refusal.namespace)
    return fill("The namespace `{namespace}` does not exist in the cluster. Nothing was submitted.", namespace=refusal.namespace)


@notice.register
def _(refusal: r.SameNamespace) -> Notice:
    return fill("Not submitted: the source and the target are both `{namespace}`.", namespace=refusal.namespace)


@notice.register
def _(refusal: r.SourceTooSmall) -> Notice:
    return fill(
        "Not submitted: `{namespace}` has {hard}, so it cannot give {gpus}.",
        namespace=refusal.namespace,
        hard=gpus(refusal.hard),
        gpus=refusal.gpus,
    )


# --- status, audit, costs, nudges -----------------------------------------------------------


@notice.register
def _(refusal: r.InNoTeam) -> Notice:
    if refusal.asked == r.Asked.COST:
        return fill("You are not in any team of the policy; name one: `/gpu-quota cost <team|namespace> [YYYY-MM]`.")
    return fill("You are not in any team of the policy; name a namespace: `/gpu-quota status <namespace>`.")


@notice.register
def _(refusal: r.NotYoursToAudit) -> Notice:
    return fill("Only the team, its approvers and admins can read this audit trail.")


@notice.register
def _(refusal: r.NotATeamOrNamespace) -> Notice:
    return fill("`{target}` is neither a team nor a namespace of the policy.", target=refusal.target)


@notice.register
def _(refusal: r.NotYoursToSee) -> Notice:
    return fill("Only the people of {team} and admins can see its costs.", team=refusal.team)


@notice.register
def _(refusal: r.NotYoursToDiagnose) -> Notice:
    return fill(
        "Only the people of {team} and admins can ask why pods of `{namespace}` are pending.",
        team=refusal.team,
        namespace=refusal.namespace,
    )


@notice.register
def _(refusal: r.MonthNotBegun) -> Notice:
    return fill("{month} has not begun.", month=f"{refusal.month:%B %Y}")


@notice.register
def _(refusal: r.NotYoursToSnooze) -> Notice:
    return fill("Only {team} can snooze nudges about `{namespace}`.", team=refusal.team, namespace=refusal.namespace)


@notice.register
def _(refusal: r.DayNotOver) -> Notice:
    return fill(
        "Digests are only for finished days: {day} is not over yet (today is {today}).",
        day=f"{refusal.day:%a %d %b %Y}",
        today=refusal.today.isoformat(),
    )


@notice.register
def _(refusal: r.NoMetricsFor) -> Notice:
    parts: list[Part] = []
    for day in refusal.days:
        if parts:
            parts.append(Words("; "))
        parts += fill("no metrics for {day}: Prometheus holds no data for that day.", day=f"{day:%a %d %b %Y}").parts
    return Notice(tuple(parts))
