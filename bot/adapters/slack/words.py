"""The words of every typed message (``bot.services.messages``), in the reader's language.

Each message has one renderer here, registered on ``notice``: whole sentences of the catalog with
named placeholders (``fill``, ``fill_n`` for a count; ``bot.adapters.i18n``), figures in the language's
formats, several sentences of one message one after the other as the language writes them. Renderers
make a ``Notice`` of typed parts; ``mrkdwn.render`` escapes every piece of text in it, so a person's
words (a reason, an API server's message) stay inert here too. An old outbox entry's notice
(recorded before typed messages) is delivered as it was stored.
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import singledispatch

from babel.dates import format_date, format_skeleton
from babel.numbers import format_percent

from bot.adapters.i18n import N_, current, format_money, format_number, format_share, gettext, locale, tr
from bot.adapters.slack import capacity_words, doctor_words, mrkdwn, prices, reasons
from bot.adapters.slack.details import span_words
from bot.adapters.slack.resources import amount_of, gpus_of, resource_label, signed
from bot.adapters.slack.sentences import Value, fill, fill_n, join
from bot.domain.commands import format_request_id
from bot.domain.languages import Language
from bot.domain.priority import NO_CLASS_LABEL, WaitCause
from bot.domain.resources import GPU, quota_key
from bot.services import messages as m
from bot.services.text import Channel, Code, Moment, Notice, Part, Strong, User, UserGroup, Words


def render(said: m.Said) -> str:
    """The message (or an old entry's notice) as mrkdwn."""
    return mrkdwn.render(notice(said))


@singledispatch
def notice(said: object) -> Notice:
    """The typed parts of a message (registered per message class below and in ``words_*``)."""
    raise TypeError(f"no words for {type(said).__name__}")


@notice.register
def _(said: Notice) -> Notice:
    return said  # an entry recorded before typed messages: its parts as they were stored


# How a language puts one sentence after another: a space in English, nothing in Chinese.
_SENTENCE_GAP = {Language.ZH_CN: ""}


def _then(*sentences: Notice | None) -> Notice:
    """Sentences one after the other (None: left out), as the current language writes them."""
    gap = Notice((Words(_SENTENCE_GAP.get(current(), " ")),))
    present = [n for n in sentences if n is not None and n.parts]
    return join(*[piece for index, n in enumerate(present) for piece in ((gap, n) if index else (n,))])


def _line(*notices: Notice | None) -> Notice:
    """Notices on lines of their own (None: left out)."""
    present = [n for n in notices if n is not None]
    newline = Notice((Words("\n"),))
    return join(*[piece for index, n in enumerate(present) for piece in ((newline, n) if index else (n,))])


def _weekday(day: date) -> str:
    """A day with its weekday: ``Wed 11 Nov`` as the bot always wrote it, ``11月11日周三``."""
    if current() == Language.EN:
        return format_date(day, "EEE dd MMM", locale=locale())
    return format_skeleton("MMMEd", day, locale=locale())


def _points(percent: float) -> str:
    """A percentage given in points, its decimals kept (``2.5%``, ``10%``)."""
    return format_percent(percent / 100, format="#,##0.##%", locale=locale())


# --- decisions, cancellations and retries -------------------------------------------------


@notice.register
def _(said: m.ApprovedBy) -> Notice:
    return fill(
        ":+1: Approved by {user} — {approvals} of {required}.",
        user=User(said.user_id),
        approvals=format_number(said.approvals),
        required=format_number(said.required),
    )


@notice.register
def _(said: m.DeniedBy) -> Notice:
    if said.reason:
        return fill(":no_entry: Denied by {user}. Reason: {reason}", user=User(said.user_id), reason=said.reason)
    return fill(":no_entry: Denied by {user}.", user=User(said.user_id))


@notice.register
def _(said: m.DeniedToRequester) -> Notice:
    values: dict[str, Value] = {"request": format_request_id(said.request_id), "user": User(said.user_id)}
    if said.reason:
        return fill(
            "{request} was denied by {user}. Reason: {reason} The thread has the discussion.", reason=said.reason, **values
        )
    return fill("{request} was denied by {user}. The thread has the discussion.", **values)


@notice.register
def _(said: m.CancelledBy) -> Notice:
    return fill(":wastebasket: Cancelled by {user}.", user=User(said.user_id))


@notice.register
def _(said: m.CancelledToRequester) -> Notice:
    return fill("{request} was cancelled by {user}.", request=format_request_id(said.request_id), user=User(said.user_id))


@notice.register
def _(said: m.RetryBy) -> Notice:
    return fill(":repeat: Retry by {user}.", user=User(said.user_id))


# --- applying a change, and a grant's end -------------------------------------------------


def _below_usage(*, new_hard: int, used: int, queued: bool = False, namespace: str | None = None) -> Notice | None:
    """What happens when a quota drops under what is already in use (the source document's reclaim);
    ``queued``: the quota is a Kueue ClusterQueue's, which holds new workloads back instead of refusing pods;
    ``namespace``: the namespace named first (a shift's source)."""
    if new_hard >= used:
        return None
    quota = format_number(new_hard)
    if queued:
        return fill_n(
            "{count} is reserved by admitted workloads, above the new quota of {new_hard}. They keep running;"
            " Kueue admits no new workload that would take the reservation above {new_hard}: a gradual reclaim"
            " as jobs finish, not a hard cut.",
            "{count} are reserved by admitted workloads, above the new quota of {new_hard}. They keep running;"
            " Kueue admits no new workload that would take the reservation above {new_hard}: a gradual reclaim"
            " as jobs finish, not a hard cut.",
            used,
            new_hard=quota,
        )
    if namespace is not None:
        return fill_n(
            "{namespace}: {count} GPU is in use, above the new quota of {new_hard}. Running pods keep running;"
            " new pods asking for GPUs are refused with `exceeded quota` while they would take usage above"
            " {new_hard}: a gradual reclaim as jobs finish, not a hard cut.",
            "{namespace}: {count} GPUs are in use, above the new quota of {new_hard}. Running pods keep running;"
            " new pods asking for GPUs are refused with `exceeded quota` while they would take usage above"
            " {new_hard}: a gradual reclaim as jobs finish, not a hard cut.",
            used,
            namespace=namespace,
            new_hard=quota,
        )
    return fill_n(
        "{count} GPU is in use, above the new quota of {new_hard}. Running pods keep running;"
        " new pods asking for GPUs are refused with `exceeded quota` while they would take usage above"
        " {new_hard}: a gradual reclaim as jobs finish, not a hard cut.",
        "{count} GPUs are in use, above the new quota of {new_hard}. Running pods keep running;"
        " new pods asking for GPUs are refused with `exceeded quota` while they would take usage above"
        " {new_hard}: a gradual reclaim as jobs finish, not a hard cut.",
        used,
        new_hard=quota,
    )


@notice.register
def _(said: m.Applied) -> Notice:
    values: dict[str, Value] = {
        "namespace": Strong(said.namespace),
        "quota": said.quota_name,
        "before": amount_of(said.before, said.resource),
        "after": Strong(amount_of(said.after, said.resource)),
    }
    if said.flavor is None:
        key = Code(quota_key(said.resource))
        head = fill(":white_check_mark: Applied: {key} in {namespace} ({quota}) {before} → {after}.", key=key, **values)
    else:
        head = fill(
            ":white_check_mark: Applied: `nominalQuota` of {resource} ({flavor}) in {namespace} ({quota}) {before} → {after}.",
            resource=Code(said.resource),
            flavor=Code(said.flavor),
            **values,
        )
    ends = None
    if said.ends_at is not None:
        ends = fill("The grant ends {at}; the quota then goes back automatically.", at=Moment(said.ends_at))
    drift = None
    if said.drift:
        drift = fill_n(
            ":warning: Someone had changed this quota outside the bot by {drift} GPU (e.g. {command})."
            " The bot adopted that change into the base instead of overwriting it.",
            ":warning: Someone had changed this quota outside the bot by {drift} GPUs (e.g. {command})."
            " The bot adopted that change into the base instead of overwriting it.",
            abs(said.drift),
            drift=signed(said.drift),
            command=Code("kubectl edit"),
        )
    return _line(head, ends, drift, _below_usage(new_hard=said.after, used=said.used, queued=said.flavor is not None))


@notice.register
def _(said: m.AppliedToRequester) -> Notice:
    values: dict[str, Value] = {
        "request": format_request_id(said.request_id),
        "namespace": Strong(said.namespace),
        "gpus": amount_of(said.after, said.resource),
    }
    if said.ends_at is not None:
        return fill("{request} is applied: {namespace} now has {gpus} until {at}.", at=Moment(said.ends_at), **values)
    return fill("{request} is applied: {namespace} now has {gpus}.", **values)


@notice.register
def _(said: m.ExtensionApplied) -> Notice:
    return fill(
        ":white_check_mark: Applied: {extended} now ends {at}.",
        extended=format_request_id(said.extends_id),
        at=Moment(said.ends_at),
    )


@notice.register
def _(said: m.Extended) -> Notice:
    return fill(
        "Extended by {request}: {extended} now ends {at}.",
        request=format_request_id(said.request_id),
        extended=format_request_id(said.extends_id),
        at=Moment(said.ends_at),
    )


@notice.register
def _(said: m.ExtendedToRequester) -> Notice:
    return fill(
        "{request} is applied: {extended} now ends {at}.",
        request=format_request_id(said.request_id),
        extended=format_request_id(said.extends_id),
        at=Moment(said.ends_at),
    )


@notice.register
def _(said: m.GrantNotPutBack) -> Notice:
    return fill(
        ":warning: The grant is over but the quota could not be put back yet: {error}. The bot keeps retrying.",
        error=reasons.notice(said.error),
    )


def _grant_figures(namespace: str, before: int | None, after: int, resource: str) -> dict[str, Value]:
    """The values of "*ns* 4 GPUs → *2 GPUs*" (``before`` None: there was no quota)."""
    return {
        "namespace": Strong(namespace),
        "before": tr("no quota") if before is None else amount_of(before, resource),
        "after": Strong(amount_of(after, resource)),
    }


@notice.register
def _(said: m.GrantEnded) -> Notice:
    values = _grant_figures(said.namespace, said.before, said.after, said.resource)
    if said.released_by is None:
        summary = fill(":hourglass: The grant expired: {namespace} {before} → {after}.", **values)
    else:
        summary = fill(
            ":hourglass: The grant released by {user}: {namespace} {before} → {after}.", user=User(said.released_by), **values
        )
    return _line(summary, _below_usage(new_hard=said.after, used=said.used))


@notice.register
def _(said: m.GrantEndedToRequester) -> Notice:
    values = _grant_figures(said.namespace, said.before, said.after, said.resource)
    values["request"] = format_request_id(said.request_id)
    if said.released_by is None:
        return fill("{request}: grant expired: {namespace} {before} → {after}.", **values)
    return fill("{request}: grant released by {user}: {namespace} {before} → {after}.", user=User(said.released_by), **values)


# --- waiting for the cluster, and failures ------------------------------------------------


@notice.register
def _(said: m.WaitingForCluster) -> Notice:
    if said.shift:
        return fill(
            ":hourglass_flowing_sand: Approved; waiting for the cluster: {reason}. The bot keeps trying.",
            reason=reasons.notice(said.reason),
        )
    return fill(
        ":hourglass_flowing_sand: Approved; waiting for the cluster: {reason}."
        " The bot keeps trying and says here when it is applied; nothing needs to be done.",
        reason=reasons.notice(said.reason),
    )


@notice.register
def _(said: m.ApplyFailed) -> Notice:
    return fill(
        ":x: Could not apply {request}: {reason}\n"
        "The request is marked failed and nothing of it is counted; an admin can retry once the cause is fixed.",
        request=format_request_id(said.request_id),
        reason=reasons.notice(said.reason),
    )


@notice.register
def _(said: m.ApplyFailedToRequester) -> Notice:
    request = format_request_id(said.request_id)
    return fill("{request} could not be applied: {reason}", request=request, reason=reasons.notice(said.reason))


@notice.register
def _(said: m.ShiftFailed) -> Notice:
    request = format_request_id(said.request_id)
    if not said.source_applied:
        return fill(
            ":x: Could not apply {request}: {reason}.\nNothing was changed; an admin can retry.",
            request=request,
            reason=reasons.notice(said.reason),
        )
    return fill(
        ":x: {request}: the source side is applied ({source} {before} → {after}) but {reason}.\n"
        "The source stays lowered. An admin's Retry re-applies only the target side ({namespace});"
        " Give back returns the GPUs to the source instead.",
        request=request,
        source=Strong(said.source_namespace),
        before=gpus_of(said.source_before),
        after=gpus_of(said.source_after),
        reason=reasons.notice(said.reason),
        namespace=said.namespace,
    )


# --- shifts -------------------------------------------------------------------------------


def _shift_figures(said: m.ShiftApplied) -> dict[str, Value]:
    return {
        "source": Strong(said.source_namespace),
        "source_before": gpus_of(said.source_before),
        "source_after": Strong(gpus_of(said.source_after)),
        "given": gpus_of(said.source_before - said.source_after),
        "namespace": Strong(said.namespace),
        "before": gpus_of(said.before),
        "after": Strong(gpus_of(said.after)),
    }


def _shift_follows(said: m.ShiftApplied, head: Notice) -> Notice:
    """The head, then when the shift ends and the source's reclaim (when it is under its usage now)."""
    ends = None
    if said.ends_at is not None:
        ends = fill(
            "The shift ends {at}; then {namespace} goes down first and {source} gets its GPUs back.",
            at=Moment(said.ends_at),
            namespace=said.namespace,
            source=said.source_namespace,
        )
    note = None
    if said.source_used is not None:
        note = _below_usage(new_hard=said.source_after, used=said.source_used, namespace=said.source_namespace)
    return _line(head, ends, note)


@notice.register
def _(said: m.ShiftApplied) -> Notice:
    head = fill(
        ":white_check_mark: Shift applied, source first: {source} {source_before} → {source_after} (gave up {given}),"
        " then {namespace} {before} → {after}.",
        **_shift_figures(said),
    )
    return _shift_follows(said, head)


@notice.register
def _(said: m.ShiftAppliedToRequester) -> Notice:
    head = fill(
        "{request} is applied: {source} {source_before} → {source_after} (gave up {given}), then {namespace} {before} → {after}.",
        request=format_request_id(said.request_id),
        **_shift_figures(said),
    )
    return _shift_follows(said, head)


@notice.register
def _(said: m.SourceNotRaised) -> Notice:
    return fill(
        ":warning: The shift is over but {source} could not be raised yet: {error}",
        source=Strong(said.source_namespace),
        error=reasons.notice(said.error),
    )


@notice.register
def _(said: m.SourceReturned) -> Notice:
    return fill(
        ":hourglass: GPUs back to the source: {source} {before} → {after}.",
        source=Strong(said.source_namespace),
        before=tr("no quota") if said.before is None else gpus_of(said.before),
        after=Strong(gpus_of(said.after)),
    )


# --- the reconcile job --------------------------------------------------------------------


@notice.register
def _(said: m.QuotaEditedOutside) -> Notice:
    command = Code("/gpu-quota audit " + said.namespace)
    return fill_n(
        ":warning: The GPU quota of {namespace} was changed outside the bot by {drift} GPU (now {gpus})."
        " The bot adopted the change; see {command}.",
        ":warning: The GPU quota of {namespace} was changed outside the bot by {drift} GPUs (now {gpus})."
        " The bot adopted the change; see {command}.",
        abs(said.drift),
        namespace=Strong(said.namespace),
        drift=signed(said.drift),
        gpus=gpus_of(said.after),
        command=command,
    )


def _hours(duration: timedelta) -> str:
    """A timeout in hours: ``36h`` (``36 小时``)."""
    return tr("{count}h", count=format_number(duration.total_seconds() / 3600))


@notice.register
def _(said: m.Expired) -> Notice:
    return fill(
        ":zzz: {request} expired: nobody decided within {hours}.",
        request=format_request_id(said.request_id),
        hours=_hours(said.timeout),
    )


@notice.register
def _(said: m.ExpiredToRequester) -> Notice:
    return fill(
        "{request} expired: nobody decided within {hours}. Ask again if you still need the GPUs.",
        request=format_request_id(said.request_id),
        hours=_hours(said.timeout),
    )


@notice.register
def _(said: m.GrantEndsSoon) -> Notice:
    return fill(
        ":alarm_clock: {request}: your {gpus} in {namespace} go back {at}.",
        request=format_request_id(said.request_id),
        gpus=gpus_of(said.gpus),
        namespace=Strong(said.namespace),
        at=Moment(said.ends_at),
    )


# --- cards --------------------------------------------------------------------------------


@notice.register
def _(said: m.CopyNotPosted) -> Notice:
    if said.team_label:
        return fill(
            ":warning: The copy of this card could not be posted in {channel} ({error});"
            " approvers of {team} do not see it there: send them this thread.",
            channel=Channel(said.channel_id),
            error=said.error,
            team=said.team_label,
        )
    return fill(
        ":warning: The copy of this card could not be posted in {channel} ({error});"
        " approvers of the source team do not see it there: send them this thread.",
        channel=Channel(said.channel_id),
        error=said.error,
    )


# --- the jobs' alerts: metrics, idle GPUs, reclaims, budgets ------------------------------


@notice.register
def _(said: m.MetricsUnavailable) -> Notice:
    return fill(
        ":warning: GPU metrics unavailable since {since}: {cause}."
        " The bot keeps serving requests; digests catch up when Prometheus answers again.",
        since=Moment(said.since),
        cause=said.cause,
    )


@notice.register
def _(said: m.MetricsBack) -> Notice:
    return fill(":white_check_mark: GPU metrics are back (unavailable since {since}).", since=Moment(said.since))


@notice.register
def _(said: m.StackBroken) -> Notice:
    return doctor_words.stack_broken_notice(said)


@notice.register
def _(said: m.IdleNudge) -> Notice:
    values: dict[str, Value] = {
        "namespace": Strong(said.namespace),
        "gpus": gpus_of(said.gpus),
        "threshold": _points(said.threshold_percent),
        "window": format_number(said.window.total_seconds() / 3600),
        "highest": format_share(said.highest),
        "idle_hours": format_number(said.idle_hours, digits=0),
        "cost": format_money(said.cost, said.currency),
        "price_basis": prices.notice_of(said.price_basis),
    }
    return fill(
        ":electric_plug: {namespace} holds {gpus} whose utilisation stayed under {threshold} for the last {window} h"
        " (highest {highest}): about {idle_hours} idle GPU-hours, {cost} ({price_basis})."
        " Release what you do not use so others can have it.",
        **values,
    )


@notice.register
def _(said: m.NudgesSnoozed) -> Notice:
    return fill(
        "Idle-GPU nudges for {namespace} are snoozed until {until}.", namespace=Code(said.namespace), until=Moment(said.until)
    )


@notice.register
def _(said: m.ReclaimEnded) -> Notice:
    return fill(
        ":white_check_mark: *{freed} freed over {span} as jobs finished* in {namespace}:"
        " usage is within the quota of {quota} now. No pod was evicted.",
        freed=gpus_of(said.freed),
        span=span_words(said.span),
        namespace=Strong(said.namespace),
        quota=gpus_of(said.quota),
    )


def _mentions(users: tuple[str, ...], usergroups: tuple[str, ...]) -> Notice:
    """The people to tell, as mentions made from their ids (users, then user groups), space-separated."""
    mentions: list[Part] = [User(u) for u in sorted(users)]
    mentions += [UserGroup(g) for g in sorted(usergroups)]
    return Notice(tuple(part for index, p in enumerate(mentions) for part in ((Words(" "), p) if index else (p,))))


def _outlook(said: m.BudgetAlert) -> Notice | None:
    """Over budget since a day, or the run-out time when it falls within this month, or nothing."""
    if said.over_since is not None:
        return fill("It has been over budget since {day}.", day=_weekday(said.over_since))
    if said.runs_out is not None:
        return fill("At the current burn it runs out around {at}.", at=Moment(said.runs_out))
    return None


@notice.register
def _(said: m.BudgetAlert) -> Notice:
    values: dict[str, Value] = {
        "owners": _mentions(said.users, said.usergroups),
        "team": Strong(said.team_label),
        "spent": format_money(said.spent, said.currency),
        "budget": format_money(said.budget, said.currency),
        "percent": format_share(said.spent / said.budget),
        "forecast": format_money(said.forecast, said.currency),
        "forecast_percent": format_share(said.forecast / said.budget),
    }
    if said.threshold is None:
        head = fill(
            ":chart_with_upwards_trend: {owners} {team} is on course to overspend its GPU budget this month:"
            " {spent} of {budget} so far ({percent}), month-end forecast {forecast} ({forecast_percent}).",
            **values,
        )
        return _then(head, _outlook(said))
    values["threshold"] = format_share(said.threshold / 100)
    if said.threshold < 100:
        head = fill(
            ":moneybag: {owners} {team} has used {percent} of its monthly GPU budget ({spent} of {budget};"
            " threshold {threshold}). Month-end forecast {forecast} ({forecast_percent}).",
            **values,
        )
        return _then(head, _outlook(said))
    head = fill(
        ":rotating_light: {owners} {team} has used {percent} of its monthly GPU budget ({spent} of {budget};"
        " threshold {threshold}). Month-end forecast {forecast} ({forecast_percent}).",
        **values,
    )
    return _then(head, _outlook(said), fill("New increases need one more approval until next month."))


# --- blocked workloads and shift proposals ------------------------------------------------


@notice.register
def _(said: m.QuotaBlocked) -> Notice:
    # Workload names come from whoever created them: parts, escaped by mrkdwn.
    workload = Strong(said.kind + " " + said.name)
    values: dict[str, Value] = {
        "workload": workload,
        "namespace": Strong(said.namespace),
        "resource": resource_label(said.resource),
        "error": Code("exceeded quota"),
    }
    if said.requested is None:
        return fill_n(
            ":no_entry: {workload} in {namespace} cannot start pods: the {resource} quota is full ({error}, {count} time)."
            " Ask for more, or wait for running jobs to finish.",
            ":no_entry: {workload} in {namespace} cannot start pods: the {resource} quota is full ({error}, {count} times)."
            " Ask for more, or wait for running jobs to finish.",
            said.count,
            **values,
        )
    return fill_n(
        ":no_entry: {workload} in {namespace} cannot start pods: the {resource} quota is full ({error}, {count} time)."
        " It asks for {requested} while {used} of {limited} are in use. Ask for more, or wait for running jobs to finish.",
        ":no_entry: {workload} in {namespace} cannot start pods: the {resource} quota is full ({error}, {count} times)."
        " It asks for {requested} while {used} of {limited} are in use. Ask for more, or wait for running jobs to finish.",
        said.count,
        requested=amount_of(said.requested, said.resource),
        used=format_number(said.used),
        limited=format_number(said.limited),
        **values,
    )


@notice.register
def _(said: m.WorkloadWaiting) -> Notice:
    # The workload's and queue's names and Kueue's message come from the cluster: parts, escaped by mrkdwn.
    values: dict[str, Value] = {
        "workload": Strong(said.name),
        "namespace": Strong(said.namespace),
        "queue": Code(said.queue),
        "reason": Code(said.reason),
    }
    if said.more is None:
        return fill(
            ":hourglass_flowing_sand: The Kueue workload {workload} in {namespace} waits for quota in its queue {queue}:"
            " not enough {resource} quota ({reason}). Ask for more, or wait for running jobs to finish.",
            resource=resource_label(said.resource),
            **values,
        )
    return fill(
        ":hourglass_flowing_sand: The Kueue workload {workload} in {namespace} waits for quota in its queue {queue}:"
        " it needs {more} more ({reason}). Ask for more, or wait for running jobs to finish.",
        more=amount_of(said.more, said.resource),
        **values,
    )


_CAUSES = {  # catalog ids, translated where they are shown
    WaitCause.PREEMPTING: N_("lower-priority pods are being preempted to make room for it"),
    WaitCause.NO_VICTIMS: N_("no free GPU, and no lower-priority pod to preempt"),
    WaitCause.NEVER_PREEMPTS: N_("no free GPU, and its priority class never preempts (preemptionPolicy: Never)"),
    WaitCause.NO_CAPACITY: N_("no free GPU on any node"),
}


@notice.register
def _(said: m.SchedulingWait) -> Notice:
    error = Code("Insufficient " + (said.pods[0].resource if said.pods else GPU))  # the scheduler's own words
    head = fill_n(
        ":hourglass_flowing_sand: {count} GPU pod in {namespace} waits for the scheduler, not the quota ({error}):",
        ":hourglass_flowing_sand: {count} GPU pods in {namespace} wait for the scheduler, not the quota ({error}):",
        said.count,
        namespace=Strong(said.namespace),
        error=error,
    )
    bullet = Notice((Words("\n• "),))
    lines: list[Notice] = []
    for pod in said.pods:
        values: dict[str, Value] = {
            "pod": Strong(pod.name),
            "gpus": amount_of(pod.gpus, pod.resource),
            "cause": gettext(_CAUSES[pod.cause]),
        }
        if pod.class_label == NO_CLASS_LABEL:  # no priority class: the cluster's default priority
            line = fill("{pod} ({gpus}, default): {cause}", **values)
        else:
            line = fill("{pod} ({gpus}, {priority}): {cause}", priority=pod.class_label, **values)
        lines += [bullet, line]
    if said.count > len(said.pods):
        lines += [bullet, fill("and {more} more", more=format_number(said.count - len(said.pods)))]
    advice = fill(
        "More quota would not help: the pods start when GPUs free up or pods of lower priority are preempted."
        " Ask the platform admins about capacity or priority classes."
    )
    return join(head, *lines, Notice((Words("\n"),)), advice)


@notice.register
def _(said: m.SpotSavings) -> Notice:
    return capacity_words.spot_savings_notice(said)


def _usage_and_shortage(said: m.ShiftProposal) -> Notice:
    """How the source used its GPUs and what showed the target short, each figure with its signal (one
    sentence of each pair of cases); says when Prometheus was not read."""
    values: dict[str, Value] = {
        "source": said.source_namespace,
        "peak": format_number(said.source_peak),
        "quota": gpus_of(said.source_quota),
        "mean": format_number(said.source_mean, digits=1),
        "target": said.namespace,
    }
    if said.saturation is not None:
        # "40 %" as a value: a "% o" in a sentence would read as a %-format to gettext's tools.
        values["saturation"] = tr("{percent} %", percent=format_number(round(said.saturation * 100)))
    if said.source_busy is None:
        return _unmeasured_source(said, values)
    values["busy"] = format_number(round(said.source_busy * 100))
    if said.saturation is not None and said.blocked is not None:
        return fill_n(
            "{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy; {target} was blocked by quota"
            " {count} time (the bot's alerts) and at its quota {saturation} of the time (Prometheus).",
            "{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy; {target} was blocked by quota"
            " {count} times (the bot's alerts) and at its quota {saturation} of the time (Prometheus).",
            said.blocked,
            **values,
        )
    if said.saturation is not None:
        return fill(
            "{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy;"
            " {target} was at its quota {saturation} of the time (Prometheus).",
            **values,
        )
    if said.blocked is None:
        return fill("{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy.", **values)
    if said.saturation_read:
        return fill_n(
            "{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy;"
            " {target} was blocked by quota {count} time (the bot's alerts).",
            "{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy;"
            " {target} was blocked by quota {count} times (the bot's alerts).",
            said.blocked,
            **values,
        )
    return fill_n(
        "{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy;"
        " {target} was blocked by quota {count} time (the bot's alerts; Prometheus was not read).",
        "{source} used at most {peak} of {quota} ({mean} on average), {busy} % busy;"
        " {target} was blocked by quota {count} times (the bot's alerts; Prometheus was not read).",
        said.blocked,
        **values,
    )


def _unmeasured_source(said: m.ShiftProposal, values: dict[str, Value]) -> Notice:
    """``_usage_and_shortage`` when the source's utilisation was not measured."""
    if said.saturation is not None and said.blocked is not None:
        return fill_n(
            "{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured; {target} was blocked"
            " by quota {count} time (the bot's alerts) and at its quota {saturation} of the time (Prometheus).",
            "{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured; {target} was blocked"
            " by quota {count} times (the bot's alerts) and at its quota {saturation} of the time (Prometheus).",
            said.blocked,
            **values,
        )
    if said.saturation is not None:
        return fill(
            "{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured;"
            " {target} was at its quota {saturation} of the time (Prometheus).",
            **values,
        )
    if said.blocked is None:
        return fill("{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured.", **values)
    if said.saturation_read:
        return fill_n(
            "{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured;"
            " {target} was blocked by quota {count} time (the bot's alerts).",
            "{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured;"
            " {target} was blocked by quota {count} times (the bot's alerts).",
            said.blocked,
            **values,
        )
    return fill_n(
        "{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured;"
        " {target} was blocked by quota {count} time (the bot's alerts; Prometheus was not read).",
        "{source} used at most {peak} of {quota} ({mean} on average), utilisation not measured;"
        " {target} was blocked by quota {count} times (the bot's alerts; Prometheus was not read).",
        said.blocked,
        **values,
    )


@notice.register
def _(said: m.ShiftProposal) -> Notice:
    head = fill_n(
        ":bulb: Proposal {index} of {total} (last {count} day): shift {gpus} from {source} to {target}.",
        ":bulb: Proposal {index} of {total} (last {count} days): shift {gpus} from {source} to {target}.",
        said.window_days,
        index=format_number(said.index),
        total=format_number(said.count),
        gpus=Strong(gpus_of(said.gpus)),
        source=Strong(said.source_namespace),
        target=Strong(said.namespace),
    )
    unchanged = fill("Nothing changes unless a shift is requested and approved.")
    return _then(head, _usage_and_shortage(said), unchanged)
