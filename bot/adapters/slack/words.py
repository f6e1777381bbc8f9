"""The words of every typed message (``bot.services.messages``): English sentences, emoji and markup.

Each message has one renderer here, registered on ``notice``: a sentence written whole, with named
placeholders (``fill``), the form a message catalog takes (#24: a second language is a catalog of
the same sentences). Renderers make a ``Notice`` of typed parts; ``mrkdwn.render`` escapes every
piece of text in it, so a person's words (a reason, an API server's message) stay inert here too.
An old outbox entry's notice (recorded before typed messages) is delivered as it was stored.
"""

from __future__ import annotations

from datetime import timedelta
from functools import singledispatch

from bot.adapters.slack import capacity_words, doctor_words, mrkdwn, prices, reasons
from bot.adapters.slack.resources import amount_of, resource_label
from bot.adapters.slack.sentences import Value, fill, join
from bot.domain.commands import format_request_id
from bot.domain.priority import WaitCause
from bot.domain.resources import GPU, quota_key
from bot.services import messages as m
from bot.services.text import Channel, Code, Moment, Notice, Part, Strong, User, UserGroup, Words, gpus, money


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


# --- decisions, cancellations and retries -------------------------------------------------


@notice.register
def _(said: m.ApprovedBy) -> Notice:
    return fill(
        ":+1: Approved by {user} — {approvals} of {required}.",
        user=User(said.user_id),
        approvals=said.approvals,
        required=said.required,
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


def _below_usage(*, new_hard: int, used: int, queued: bool = False) -> Notice | None:
    """What happens when a quota drops under what is already in use (the source document's reclaim);
    ``queued``: the quota is a Kueue ClusterQueue's, which holds new workloads back instead of refusing pods."""
    if new_hard >= used:
        return None
    if queued:
        return fill(
            "{used} are reserved by admitted workloads, above the new quota of {new_hard}. They keep running;"
            " Kueue admits no new workload that would take the reservation above {new_hard}: a gradual reclaim"
            " as jobs finish, not a hard cut.",
            used=used,
            new_hard=new_hard,
        )
    return fill(
        "{used} GPUs are in use, above the new quota of {new_hard}. Running pods keep running;"
        " new pods asking for GPUs are refused with `exceeded quota` while they would take usage above"
        " {new_hard}: a gradual reclaim as jobs finish, not a hard cut.",
        used=used,
        new_hard=new_hard,
    )


def _line(*notices: Notice | None) -> Notice:
    """Notices on lines of their own (None: left out)."""
    present = [n for n in notices if n is not None]
    newline = Notice((Words("\n"),))
    return join(*[piece for index, n in enumerate(present) for piece in ((newline, n) if index else (n,))])


@notice.register
def _(said: m.Applied) -> Notice:
    head = fill(
        ":white_check_mark: Applied: {resource} in {namespace} ({quota}) {before} → {after}.",
        resource=Code(quota_key(said.resource) if said.flavor is None else f"nominalQuota of {said.resource} ({said.flavor})"),
        namespace=Strong(said.namespace),
        quota=said.quota_name,
        before=amount_of(said.before, said.resource),
        after=Strong(amount_of(said.after, said.resource)),
    )
    ends = None
    if said.ends_at is not None:
        ends = fill("The grant ends {at}; the quota then goes back automatically.", at=Moment(said.ends_at))
    drift = None
    if said.drift:
        drift = fill(
            ":warning: Someone had changed this quota outside the bot by {drift} GPUs (e.g. {command})."
            " The bot adopted that change into the base instead of overwriting it.",
            drift=f"{said.drift:+d}",
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


def _grant_ended(namespace: str, released_by: str | None, before: int | None, after: int, resource: str) -> Notice:
    """ "grant expired: *ns* 4 GPUs → *2 GPUs*." (or "released by @someone")."""
    values: dict[str, Value] = {
        "namespace": Strong(namespace),
        "before": "no quota" if before is None else amount_of(before, resource),
        "after": Strong(amount_of(after, resource)),
    }
    if released_by is None:
        return fill("grant expired: {namespace} {before} → {after}.", **values)
    return fill("grant released by {user}: {namespace} {before} → {after}.", user=User(released_by), **values)


@notice.register
def _(said: m.GrantEnded) -> Notice:
    summary = _grant_ended(said.namespace, said.released_by, said.before, said.after, said.resource)
    return _line(join(fill(":hourglass: The "), summary), _below_usage(new_hard=said.after, used=said.used))


@notice.register
def _(said: m.GrantEndedToRequester) -> Notice:
    summary = _grant_ended(said.namespace, said.released_by, said.before, said.after, said.resource)
    return join(fill("{request}: ", request=format_request_id(said.request_id)), summary)


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
        before=gpus(said.source_before),
        after=gpus(said.source_after),
        reason=reasons.notice(said.reason),
        namespace=said.namespace,
    )


# --- shifts -------------------------------------------------------------------------------


def _shift_applied(said: m.ShiftApplied, *, to_requester: int | None = None) -> Notice:
    """ "Shift applied, source first: ..." without its emoji (to the requester of ``to_requester``: "GQ-n is
    applied: ..."), and the lines that follow."""
    head = fill(
        ("{request} is applied: " if to_requester is not None else "Shift applied, source first: ")
        + "{source} {source_before} → {source_after} (gave up {given}), then {namespace} {before} → {after}.",
        request=format_request_id(to_requester) if to_requester is not None else "",
        source=Strong(said.source_namespace),
        source_before=gpus(said.source_before),
        source_after=Strong(gpus(said.source_after)),
        given=gpus(said.source_before - said.source_after),
        namespace=Strong(said.namespace),
        before=gpus(said.before),
        after=Strong(gpus(said.after)),
    )
    ends = None
    if said.ends_at is not None:
        ends = fill(
            "The shift ends {at}; then {namespace} goes down first and {source} gets its GPUs back.",
            at=Moment(said.ends_at),
            namespace=said.namespace,
            source=said.source_namespace,
        )
    note = None if said.source_used is None else _below_usage(new_hard=said.source_after, used=said.source_used)
    return _line(head, ends, None if note is None else join(fill("{source}: ", source=said.source_namespace), note))


@notice.register
def _(said: m.ShiftApplied) -> Notice:
    return join(fill(":white_check_mark: "), _shift_applied(said))


@notice.register
def _(said: m.ShiftAppliedToRequester) -> Notice:
    return _shift_applied(said, to_requester=said.request_id)


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
        before="no quota" if said.before is None else gpus(said.before),
        after=Strong(gpus(said.after)),
    )


# --- the reconcile job --------------------------------------------------------------------


@notice.register
def _(said: m.QuotaEditedOutside) -> Notice:
    return fill(
        ":warning: The GPU quota of {namespace} was changed outside the bot by {drift} GPUs (now {gpus})."
        " The bot adopted the change; see {command}.",
        namespace=Strong(said.namespace),
        drift=f"{said.drift:+d}",
        gpus=gpus(said.after),
        command=Code(f"/gpu-quota audit {said.namespace}"),
    )


def _hours(duration: timedelta) -> str:
    return f"{duration.total_seconds() / 3600:g}h"


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
        gpus=gpus(said.gpus),
        namespace=Strong(said.namespace),
        at=Moment(said.ends_at),
    )


# --- cards --------------------------------------------------------------------------------


@notice.register
def _(said: m.CopyNotPosted) -> Notice:
    return fill(
        ":warning: The copy of this card could not be posted in {channel} ({error});"
        " approvers of {team} do not see it there: send them this thread.",
        channel=Channel(said.channel_id),
        error=said.error,
        team=said.team_label or "the source team",
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
    return fill(
        ":electric_plug: {namespace} holds {gpus} whose utilisation stayed under {threshold}% for the last {window} h"
        " (highest {highest}): about {idle_hours} idle GPU-hours, {cost} ({price_basis})."
        " Release what you do not use so others can have it.",
        namespace=Strong(said.namespace),
        gpus=gpus(said.gpus),
        threshold=f"{said.threshold_percent:g}",
        window=f"{said.window.total_seconds() / 3600:g}",
        highest=f"{said.highest:.0%}",
        idle_hours=f"{said.idle_hours:,.0f}",
        cost=money(said.cost, said.currency),
        price_basis=prices.notice_of(said.price_basis),
    )


@notice.register
def _(said: m.NudgesSnoozed) -> Notice:
    return fill(
        "Idle-GPU nudges for {namespace} are snoozed until {until}.", namespace=Code(said.namespace), until=Moment(said.until)
    )


@notice.register
def _(said: m.ReclaimEnded) -> Notice:
    return fill(
        ":white_check_mark: {freed} in {namespace}: usage is within the quota of {quota} now. No pod was evicted.",
        freed=Strong(f"{gpus(said.freed)} freed over {_span(said.span)} as jobs finished"),
        namespace=Strong(said.namespace),
        quota=gpus(said.quota),
    )


def _span(span: timedelta) -> str:
    """A reclaim's length as people say it: "2 days 4 h", "5 h 10 min", "12 min", "under a minute"."""
    minutes = int(span.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return ("1 day" if days == 1 else f"{days} days") + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    return f"{minutes} min" if minutes else "under a minute"


def _mentions(users: tuple[str, ...], usergroups: tuple[str, ...]) -> Notice:
    """The people to tell, as mentions made from their ids (users, then user groups), space-separated."""
    mentions: list[Part] = [User(u) for u in sorted(users)]
    mentions += [UserGroup(g) for g in sorted(usergroups)]
    return Notice(tuple(part for index, p in enumerate(mentions) for part in ((Words(" "), p) if index else (p,))))


def _outlook(said: m.BudgetAlert) -> Notice:
    """Over budget since a day, or the run-out time when it falls within this month, or nothing."""
    if said.over_since is not None:
        return fill(" It has been over budget since {day}.", day=f"{said.over_since:%a %d %b}")
    if said.runs_out is not None:
        return fill(" At the current burn it runs out around {at}.", at=Moment(said.runs_out))
    return Notice(())


@notice.register
def _(said: m.BudgetAlert) -> Notice:
    percent, forecast_percent = 100 * said.spent / said.budget, 100 * said.forecast / said.budget
    values: dict[str, Value] = {
        "team": Strong(said.team_label),
        "spent": f"{money(said.spent, said.currency)} of {money(said.budget, said.currency)}",
        "percent": f"{percent:.0f}",
        "forecast": f"{money(said.forecast, said.currency)} ({forecast_percent:.0f}%)",
    }
    owners = _mentions(said.users, said.usergroups)
    if said.threshold is None:
        head = fill(
            " {team} is on course to overspend its GPU budget this month: {spent} so far ({percent}%),"
            " month-end forecast {forecast}.",
            **values,
        )
        return join(fill(":chart_with_upwards_trend: "), owners, head, _outlook(said))
    icon = fill(":rotating_light: " if said.threshold >= 100 else ":moneybag: ")
    head = fill(
        " {team} has used {percent}% of its monthly GPU budget ({spent}; threshold {threshold}%). Month-end forecast {forecast}.",
        threshold=said.threshold,
        **values,
    )
    over = fill(" New increases need one more approval until next month.") if said.threshold >= 100 else Notice(())
    return join(icon, owners, head, _outlook(said), over)


# --- blocked workloads and shift proposals ------------------------------------------------


def _times(count: int) -> str:
    return f"{count} time{'s' if count != 1 else ''}"


@notice.register
def _(said: m.QuotaBlocked) -> Notice:
    # Workload names come from whoever created them: parts, escaped by mrkdwn.
    values: dict[str, Value] = {
        "workload": Strong(f"{said.kind} {said.name}"),
        "namespace": Strong(said.namespace),
        "error": Code("exceeded quota"),
        "times": _times(said.count),
    }
    head = "{namespace} cannot start pods: the {resource} quota is full ({error}, {times})."
    advice = " Ask for more, or wait for running jobs to finish."
    values["resource"] = resource_label(said.resource)
    if said.requested is None:
        return fill(":no_entry: {workload} in " + head + advice, **values)
    return fill(
        ":no_entry: {workload} in " + head + " It asks for {requested} while {used} of {limited} are in use." + advice,
        requested=amount_of(said.requested, said.resource),
        used=said.used,
        limited=said.limited,
        **values,
    )


@notice.register
def _(said: m.WorkloadWaiting) -> Notice:
    # The workload's and queue's names and Kueue's message come from the cluster: parts, escaped by mrkdwn.
    values: dict[str, Value] = {
        "workload": Strong(said.name),
        "namespace": Strong(said.namespace),
        "queue": Code(said.queue),
        "resource": resource_label(said.resource),
        "reason": Code(said.reason),
    }
    head = ":hourglass_flowing_sand: The Kueue workload {workload} in {namespace} waits for quota in its queue {queue}"
    if said.more is None:
        return fill(
            head + ": not enough {resource} quota ({reason}). Ask for more, or wait for running jobs to finish.", **values
        )
    return fill(
        head + ": it needs {more} more ({reason}). Ask for more, or wait for running jobs to finish.",
        more=amount_of(said.more, said.resource),
        **values,
    )


_CAUSES = {
    WaitCause.PREEMPTING: "lower-priority pods are being preempted to make room for it",
    WaitCause.NO_VICTIMS: "no free GPU, and no lower-priority pod to preempt",
    WaitCause.NEVER_PREEMPTS: "no free GPU, and its priority class never preempts (preemptionPolicy: Never)",
    WaitCause.NO_CAPACITY: "no free GPU on any node",
}


@notice.register
def _(said: m.SchedulingWait) -> Notice:
    many = said.count != 1
    head = fill(
        ":hourglass_flowing_sand: {count} GPU pod{s} in {namespace} {wait} for the scheduler, not the quota ({error}):",
        count=said.count,
        s="s" if many else "",
        namespace=Strong(said.namespace),
        wait="wait" if many else "waits",
        error=Code("Insufficient " + (said.pods[0].resource if said.pods else GPU)),
    )
    lines = [
        fill(
            "\n• {pod} ({gpus}, {priority}): {cause}",
            pod=Strong(pod.name),
            gpus=amount_of(pod.gpus, pod.resource),
            priority=pod.class_label,
            cause=_CAUSES[pod.cause],
        )
        for pod in said.pods
    ]
    if said.count > len(said.pods):
        lines.append(fill("\n• and {more} more", more=said.count - len(said.pods)))
    advice = fill(
        "\nMore quota would not help: the pods start when GPUs free up or pods of lower priority are preempted. "
        "Ask the platform admins about capacity or priority classes."
    )
    return join(head, *lines, advice)


@notice.register
def _(said: m.SpotSavings) -> Notice:
    return capacity_words.spot_savings_notice(said)


def _shortage(said: m.ShiftProposal) -> str:
    """What showed the target short, each figure with its signal; says when Prometheus was not read."""
    shown = []
    if said.blocked is not None:
        unread = "" if said.saturation_read else "; Prometheus was not read"
        shown.append(f"blocked by quota {_times(said.blocked)} (the bot's alerts{unread})")
    if said.saturation is not None:
        shown.append(f"at its quota {said.saturation * 100:.0f} % of the time (Prometheus)")
    return " and ".join(shown)


@notice.register
def _(said: m.ShiftProposal) -> Notice:
    busy = f"{said.source_busy * 100:.0f} % busy" if said.source_busy is not None else "utilisation not measured"
    return fill(
        ":bulb: Proposal {index} of {count} (last {days} days): shift {gpus} from {source} to {target}."
        " {source_name} used at most {peak} of {quota} ({mean} on average), {busy};"
        " {target_name} was {shortage}. Nothing changes unless a shift is requested and approved.",
        index=said.index,
        count=said.count,
        days=said.window_days,
        gpus=Strong(gpus(said.gpus)),
        source=Strong(said.source_namespace),
        target=Strong(said.namespace),
        source_name=said.source_namespace,
        peak=f"{said.source_peak:g}",
        quota=gpus(said.source_quota),
        mean=f"{said.source_mean:.1f}",
        busy=busy,
        target_name=said.namespace,
        shortage=_shortage(said),
    )
