"""The words of every typed refusal (``bot.services.refusals``): whole sentences, in the reader's language.

Each refusal has one renderer here, registered on ``notice``, written like the messages of
``words`` (``fill``: a whole sentence with named placeholders, a catalog entry; a sentence per state
or per missing part rather than a word slotted in). What a person typed (a namespace, a team name)
is a text value shown as it is, escaped by ``mrkdwn.render``. The bootstrap lends ``plain_text`` to
``Refused``, so ``str(error)`` (logs, form errors, the CLIs) says the same words.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from functools import singledispatch

from babel.dates import format_skeleton

from bot.adapters import i18n
from bot.adapters.i18n import N_, format_duration, format_gpus, format_month, format_number, gettext, tr
from bot.adapters.slack import input_words, mrkdwn, reasons
from bot.adapters.slack.sentences import fill
from bot.domain.commands import format_request_id
from bot.domain.languages import Language
from bot.domain.lifecycle import RequestState, Verdict
from bot.domain.resources import short_name
from bot.errors import KarmadaPart, KueuePart
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


def _listed(items: Sequence[Part | Notice]) -> Notice:
    """Items one after the other as the language lists them: ``a, b`` in English, ``a、b`` in Chinese
    (the separator of the middle of a list in the locale's data, CLDR)."""
    separator = Words(i18n.locale().list_patterns["standard"]["middle"].format("", ""))
    parts: list[Part] = []
    for index, item in enumerate(items):
        parts += [separator] if index else []
        parts += item.parts if isinstance(item, Notice) else (item,)
    return Notice(tuple(parts))


def _names(names: Sequence[str]) -> Notice:
    """Names (namespaces, flavors, versions) as a list, each shown as it is; ``none`` when there are none."""
    return _listed([Words(name) for name in names]) if names else fill("none")


def _clauses(clauses: Sequence[Notice]) -> Notice:
    """Clauses one after the other (the problems of a request)."""
    # Translators: what separates two problems in a list of them ("... is not a namespace name; say how long: ...").
    separator = Words(gettext("; "))
    parts: list[Part] = []
    for index, clause in enumerate(clauses):
        parts += [separator] if index else []
        parts += clause.parts
    return Notice(tuple(parts))


def _day(day: date) -> str:
    """A day with its weekday: ``Tue 10 Nov 2026`` in English (as the digest's command lines always said it)."""
    if i18n.current() == Language.EN:
        return f"{day:%a %d %b %Y}"
    return format_skeleton("yMMMEd", day, locale=i18n.locale())


def _people(user_ids: tuple[str, ...]) -> Notice:
    """``@a, @b``; the auto-approver is named, not mentioned."""
    return _listed([Words(tr("auto-approval")) if user_id == AUTO_APPROVER else User(user_id) for user_id in user_ids])


# --- requests: loading, pending, reasons --------------------------------------------------


@notice.register
def _(refusal: r.NoSuchRequest) -> Notice:
    return fill("{request} does not exist.", request=format_request_id(refusal.request_id))


_DECIDED = {
    RequestState.DENIED: N_("{request} was already denied by {people}."),
    RequestState.APPROVED: N_("{request} was already approved by {people} (now approved)."),
    RequestState.APPLIED: N_("{request} was already approved by {people} (now applied)."),
    RequestState.FAILED: N_("{request} was already approved by {people} (now failed)."),
    RequestState.PENDING: N_("{request} is already pending."),
    RequestState.CANCELLED: N_("{request} is already cancelled."),
    RequestState.EXPIRED: N_("{request} is already expired."),
}


@notice.register
def _(refusal: r.AlreadyDecided) -> Notice:
    return fill(_DECIDED[refusal.state], request=format_request_id(refusal.request_id), people=_people(refusal.deciders))


@notice.register
def _(refusal: r.ReasonTooLong) -> Notice:
    return fill(
        "The reason is {length} characters long; say it in at most {limit}.",
        length=format_number(refusal.length),
        limit=format_number(refusal.limit),
    )


# --- decisions: who may decide, and once ----------------------------------------------------


@notice.register
def _(refusal: r.OwnRequest) -> Notice:
    request = format_request_id(refusal.request_id)
    if refusal.verdict == Verdict.DENY:
        return fill("You cannot deny your own request {request}; `cancel` it instead if you no longer need it.", request=request)
    return fill("You cannot approve your own request {request}.", request=request)


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
    r.Reading.CONFIRMATION: N_(
        "Could not read the quota of `{namespace}` to show the change ({problem}). Nothing was recorded; try again."
    ),
    r.Reading.REQUEST: N_(
        "Could not read the quota of `{namespace}` from the cluster ({problem}). Nothing was submitted; try again."
    ),
    r.Reading.SHIFT: N_("Could not read the quota of `{namespace}` ({problem}). Nothing was submitted; try again."),
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


_NOT_FAILED = {
    RequestState.PENDING: N_("{request} is pending, not failed: nothing to retry."),
    RequestState.APPROVED: N_("{request} is approved, not failed: nothing to retry."),
    RequestState.APPLIED: N_("{request} is applied, not failed: nothing to retry."),
    RequestState.DENIED: N_("{request} is denied, not failed: nothing to retry."),
    RequestState.CANCELLED: N_("{request} is cancelled, not failed: nothing to retry."),
    RequestState.EXPIRED: N_("{request} is expired, not failed: nothing to retry."),
}


@notice.register
def _(refusal: r.NotFailed) -> Notice:
    return fill(_NOT_FAILED[refusal.state], request=format_request_id(refusal.request_id))


@notice.register
def _(refusal: r.NotRetried) -> Notice:
    return fill("Not retried: {problem}.", problem=reasons.notice(refusal.problem))


# --- submitting a request, an extension or a shift ------------------------------------------


@notice.register
def _(refusal: r.Incomplete) -> Notice:
    if not refusal.problems:
        return fill("The request is incomplete: namespace, GPUs and a reason are needed")
    return fill("The request is incomplete: {problems}", problems=_clauses([input_words.notice(p) for p in refusal.problems]))


@notice.register
def _(refusal: r.OverLimits) -> Notice:
    # The policy's checks still word their problems themselves (``bot.domain.policy.limit_problems``).
    return fill("Not submitted: {problems}.", problems=_clauses([Notice((Words(p),)) for p in refusal.problems]))


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
    values: dict[str, str | Notice] = {"namespace": refusal.namespace, "managed": _names(refusal.managed or ())}
    if refusal.managed is None:
        return fill("`{namespace}` is not managed by gpu-quota-bot.", **values)
    if refusal.submitting:
        return fill("Not submitted: `{namespace}` is not managed by gpu-quota-bot. Managed namespaces: {managed}.", **values)
    return fill("`{namespace}` is not managed by gpu-quota-bot. Managed namespaces: {managed}.", **values)


_QUEUE_PARTS = {
    KueuePart.KUEUE: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Kueue, but Kueue is not installed in the cluster"
        " (kueue.x-k8s.io serves {present}). A platform admin needs to fix the policy or the queue"
        " (`gpu-quota-bot check-config` names it)."
    ),
    KueuePart.CLUSTER_QUEUE: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Kueue, but the ClusterQueue `{queue}` does not exist."
        " A platform admin needs to fix the policy or the queue (`gpu-quota-bot check-config` names it)."
    ),
    KueuePart.FLAVOR: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Kueue, but the ClusterQueue `{queue}` has no flavor"
        " `{flavor}` (it has {present}). A platform admin needs to fix the policy or the queue"
        " (`gpu-quota-bot check-config` names it)."
    ),
    KueuePart.RESOURCE: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Kueue, but the flavor `{flavor}` of the ClusterQueue"
        " `{queue}` has no quota of {resource} (it lists {present}). A platform admin needs to fix the policy or the queue"
        " (`gpu-quota-bot check-config` names it)."
    ),
}


@notice.register
def _(refusal: r.QueueMissing) -> Notice:
    return fill(
        _QUEUE_PARTS[refusal.missing],
        namespace=refusal.namespace,
        resource=refusal.resource,
        queue=refusal.cluster_queue,
        flavor=refusal.flavor,
        present=_names(refusal.present),
    )


_FEDERATION_PARTS = {
    KarmadaPart.KARMADA: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Karmada, but the Karmada plane does not serve"
        " FederatedResourceQuotas (policy.karmada.io serves {present}). A platform admin needs to fix the policy or the"
        " quota (`gpu-quota-bot check-config` names it)."
    ),
    KarmadaPart.FEDERATED_QUOTA: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Karmada, but the FederatedResourceQuota `{quota}`"
        " does not exist on the Karmada plane. A platform admin needs to fix the policy or the quota"
        " (`gpu-quota-bot check-config` names it)."
    ),
    KarmadaPart.MEMBER: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Karmada, but the FederatedResourceQuota `{quota}`"
        " has no assignment for member `{member}` (it has {present}). A platform admin needs to fix the policy or the"
        " quota (`gpu-quota-bot check-config` names it)."
    ),
    KarmadaPart.RESOURCE: N_(
        "Not submitted: the policy keeps {resource} of `{namespace}` in Karmada, but the assignment of member `{member}`"
        " in `{quota}` has no {resource} (it lists {present}). A platform admin needs to fix the policy or the quota"
        " (`gpu-quota-bot check-config` names it)."
    ),
}


@notice.register
def _(refusal: r.FederationMissing) -> Notice:
    return fill(
        _FEDERATION_PARTS[refusal.missing],
        namespace=refusal.namespace,
        resource=refusal.resource,
        quota=refusal.federated_quota,
        member=refusal.member,
        present=_names(refusal.present),
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
    values: dict[str, str | Notice] = {
        "namespace": refusal.namespace,
        "word": refusal.word,
        "candidates": _names([short_name(c) for c in refusal.candidates]),
        "governed": _names([short_name(g) for g in refusal.governed]),
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
        candidates=_names(refusal.candidates),
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
        hard=format_gpus(refusal.hard),
        gpus=format_number(refusal.gpus),
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
    return fill("{month} has not begun.", month=format_month(refusal.month))


@notice.register
def _(refusal: r.NotYoursToSnooze) -> Notice:
    return fill("Only {team} can snooze nudges about `{namespace}`.", team=refusal.team, namespace=refusal.namespace)


@notice.register
def _(refusal: r.DayNotOver) -> Notice:
    return fill(
        "Digests are only for finished days: {day} is not over yet (today is {today}).",
        day=_day(refusal.day),
        today=refusal.today.isoformat(),
    )


@notice.register
def _(refusal: r.NoMetricsFor) -> Notice:
    return _clauses([fill("no metrics for {day}: Prometheus holds no data for that day.", day=_day(day)) for day in refusal.days])
