"""Block Kit messages as plain dicts, built by small pure functions with Slack's limits applied here.

Messages go out on every request and click (the request card and its updates, replies, ephemeral
answers, reports), so they are dicts, not ``slack_sdk.models``: those validate on every
``to_dict()``, a cost paid per message. The constructors below (``header``, ``section``, ``fields``,
``context``, ``actions``, ``button``) cut every text to Slack's documented limits as they build;
the unit tests parse every message they make with ``slack_sdk``'s models and check it round-trips and
validates, so the limits are proven there instead. Forms are ``slack_sdk`` Views, in ``modals``.

Nothing here calls Slack. Every piece of text that did not come from this module (a reason, an
amount as typed, a namespace, an error from another system) goes through ``mrkdwn.escape`` before
it enters a mrkdwn text object; mentions and dates are made here from ids and datetimes.

Every sentence is a whole catalog entry in the reader's language (``bot.adapters.i18n``): plain text
with ``tr``, mrkdwn with ``sentences.fill`` (its values escaped at render) or, where a value is
already mrkdwn (an audit detail), ``tr`` with every value escaped before it goes in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from bot.adapters.i18n import N_, format_duration, format_gpus, format_money, gettext, tr
from bot.adapters.slack import approval_words, ids, pod_words, prices, reasons
from bot.adapters.slack.buttons import button_label
from bot.adapters.slack.lists import listed
from bot.adapters.slack.mrkdwn import escape, render
from bot.adapters.slack.reports import Report
from bot.adapters.slack.resources import amount_of, resource_label
from bot.adapters.slack.sentences import Value, fill, fill_n, join
from bot.domain.commands import clean_text, format_request_id
from bot.domain.lifecycle import GrantState, RequestKind, RequestState
from bot.domain.resources import GPU
from bot.services.ports import Action, ActionKind
from bot.services.text import Channel, Code, Moment, Notice, Quote, Strong, User, say
from bot.services.views import AuditLine, NamespaceStatus, PendingLine, PodsInView, QueueLine, RequestCard

Block = dict[str, Any]

# Slack's limits (Block Kit reference): blocks per message, characters per text, items per block.
MAX_BLOCKS = 50
HEADER_LIMIT = 150
SECTION_LIMIT = 3000
FIELD_LIMIT = 2000
MAX_FIELDS = 10
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS = 25
BUTTON_TEXT_LIMIT = 75
BUTTON_VALUE_LIMIT = 2000
ID_LIMIT = 255
# Slack refuses an empty text object (and slack_sdk drops empty strings): this stands in for none.
NO_TEXT = N_("(none)")


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mention(user_id: str) -> str:
    return render(say(User(user_id)))


def when(moment: datetime) -> str:
    return render(say(Moment(moment)))


# --- Block Kit, within its limits ----------------------------------------------------------------


def mrkdwn(text: str, limit: int = SECTION_LIMIT, *, verbatim: bool = True) -> dict[str, Any]:
    """A mrkdwn text object. ``verbatim`` (the default) makes Slack show it as sent: bare URLs, channel
    names and mentions a person typed stay text (only the ``<...>`` made here are live)."""
    text_object: dict[str, Any] = {"type": "mrkdwn", "text": truncate(text, limit) or gettext(NO_TEXT)}
    if verbatim:
        text_object["verbatim"] = True
    return text_object


def plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(text, limit) or gettext(NO_TEXT), "emoji": True}


def header(text: str) -> Block:
    return {"type": "header", "text": plain(text, HEADER_LIMIT)}


def section(text: str) -> Block:
    return {"type": "section", "text": mrkdwn(text)}


def fields(texts: Sequence[str]) -> Block:
    return {"type": "section", "fields": [mrkdwn(t, FIELD_LIMIT) for t in texts[:MAX_FIELDS]]}


def context(text: str, *, verbatim: bool = True) -> Block:
    return {"type": "context", "elements": [mrkdwn(text, verbatim=verbatim)]}


def button(label: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "button", "text": plain(label, BUTTON_TEXT_LIMIT), "action_id": action_id[:ID_LIMIT]}
    if value:  # optional in Slack, and never empty
        element["value"] = value[:BUTTON_VALUE_LIMIT]
    if style:
        element["style"] = style
    return element


def actions(elements: Sequence[dict[str, Any]], *, block_id: str | None = None) -> Block:
    block: Block = {"type": "actions", "elements": list(elements[:MAX_ACTIONS])}
    if block_id is not None:
        block["block_id"] = block_id[:ID_LIMIT]
    return block


def divider() -> Block:
    return {"type": "divider"}


# --- the request message -------------------------------------------------------------------------


def _field(heading: Notice, body: Notice) -> str:
    """A card field: its heading line, then its body (each a sentence of its own)."""
    return render(heading) + "\n" + render(body)


def request_message(card: RequestCard) -> list[Block]:
    """The message in the approvals channel: the whole story of one request, buttons while pending."""
    blocks: list[Block] = [
        header(clean_text(_title(card))),
        section(_summary(card)),
        fields(_fields(card)),
        section(_field(fill("*Reason*"), _quote(card.reason))),
        context(_status_line(card)),
    ]
    if card.auto_note:
        blocks.append(context(approval_words.card_text(card.auto_note), verbatim=False))
    warnings = pod_warnings(card.pods)
    if warnings:
        blocks.append(section("\n".join(warnings)))
    if card.shift is not None:
        if card.pods is not None:
            blocks.append(section(source_pods_text(card.shift.namespace, card.pods)))
        blocks.append(context(shift_gradual_note(card)))
    if card.thread_in is not None:
        where = render(
            fill(":link: The source team's copy: the thread and the outcome are in {channel}.", channel=Channel(card.thread_in))
        )
        blocks.append(context(where))
    if card.state == RequestState.PENDING:
        request_id = str(card.request_id)
        blocks.append(
            actions(
                [
                    button(tr("Approve"), ids.ACTION_IDS[ActionKind.APPROVE], request_id, "primary"),
                    # Deny opens a form asking why (modals.deny_form), which is its confirmation too.
                    button(tr("Deny"), ids.ACTION_IDS[ActionKind.DENY], request_id, "danger"),
                ],
                block_id=f"decide:{card.request_id}",
            )
        )
    return blocks


# Each state's name, as the notification text says it.
_STATE_NAMES = {
    RequestState.PENDING: N_("pending"),
    RequestState.APPROVED: N_("approved"),
    RequestState.APPLIED: N_("applied"),
    RequestState.FAILED: N_("failed"),
    RequestState.DENIED: N_("denied"),
    RequestState.CANCELLED: N_("cancelled"),
    RequestState.EXPIRED: N_("expired"),
}


def request_fallback_text(card: RequestCard) -> str:
    """The notification text (and what screen readers announce)."""
    values = {
        "title": _title(card),
        "amount": card.amount_text,
        "namespace": card.namespace,
        "state": gettext(_STATE_NAMES[card.state]),
    }
    if card.resource == GPU:
        return escape(tr("{title}: {amount} GPUs for {namespace} ({state})", **values))
    return escape(tr("{title}: {amount} {resource} for {namespace} ({state})", resource=resource_label(card.resource), **values))


def _title(card: RequestCard) -> str:
    if card.shift is not None:
        return tr("GPU shift {request}", request=card.display_id)
    if card.kind == RequestKind.EXTENSION:
        return tr("Extension {request} of {extended}", request=card.display_id, extended=format_request_id(card.extends_id or 0))
    return tr("GPU quota request {request}", request=card.display_id)


def _length(card: RequestCard) -> str:
    return format_duration(card.duration or timedelta())


def _summary(card: RequestCard) -> str:
    values: dict[str, Value] = {
        "requester": User(card.requester_id),
        "namespace": card.namespace,
        "team": card.team_label,
        "length": _length(card),
    }
    if card.shift is not None:
        values.update(amount=amount_of(card.delta, card.resource), source=card.shift.namespace, source_team=card.shift.team_label)
        if card.permanent:
            return render(
                fill(
                    "{requester} asks to move *{amount}* from *{source}* ({source_team}) to *{namespace}* ({team}) permanently.",
                    **values,
                )
            )
        return render(
            fill(
                "{requester} asks to move *{amount}* from *{source}* ({source_team}) to *{namespace}* ({team}) for *{length}*.",
                **values,
            )
        )
    if card.kind == RequestKind.EXTENSION:
        values["amount"] = amount_of(card.delta, card.resource)
        return render(fill("{requester} asks to keep *{amount}* in *{namespace}* ({team}) for *{length}* more.", **values))
    values["amount"] = amount_of(abs(card.delta), card.resource)
    if card.delta > 0:
        if card.permanent:
            return render(fill("{requester} asks for *{amount} more* in *{namespace}* ({team}) permanently.", **values))
        return render(fill("{requester} asks for *{amount} more* in *{namespace}* ({team}) for *{length}*.", **values))
    if card.permanent:
        return render(fill("{requester} asks for *{amount} fewer* in *{namespace}* ({team}) permanently.", **values))
    return render(fill("{requester} asks for *{amount} fewer* in *{namespace}* ({team}) for *{length}*.", **values))


def _shift_fields(card: RequestCard) -> list[str]:
    assert card.shift is not None
    source = card.shift
    target_from = card.applied_from if card.applied_from is not None else card.hard_before
    target_to = card.applied_to if card.applied_to is not None else card.hard_before + (source.before - source.after)
    if source.returned:
        from_heading = fill("*From {namespace} (given back)*", namespace=source.namespace)
    elif source.applied:
        from_heading = fill("*From {namespace} (applied)*", namespace=source.namespace)
    else:
        from_heading = fill("*From {namespace}*", namespace=source.namespace)
    if source.used is None:
        from_body = _change(source.before, source.after)
    else:
        from_body = fill(
            "{before} → *{after}* · {used} in use when asked", before=source.before, after=source.after, used=source.used
        )
    if card.applied_to is not None:
        to_heading = fill("*To {namespace} (applied)*", namespace=card.namespace)
    else:
        to_heading = fill("*To {namespace}*", namespace=card.namespace)
    fields = [
        _field(from_heading, from_body),
        _field(to_heading, _change(target_from, target_to)),
        _field(fill("*Duration*"), _duration_text(card)),
    ]
    if card.cost is not None:
        fields.append(_field(fill("*Cost moved*"), _cost_text(card, saves=False)))
    fields.append(_field(fill("*Approvals*"), _approvals_text(card)))
    order = fill(
        "{source} is lowered first; {namespace} is raised by what it gave up", source=source.namespace, namespace=card.namespace
    )
    fields.append(_field(fill("*Order*"), order))
    return fields


SOURCE_PODS_LISTED = 8
_BOT = "gpu-quota-bot"  # the approver and actor the bot records for itself (bot.services.requests.AUTO_APPROVER)
_BULLET = "• "  # a list item's mark (layout, not words)


def source_pods_text(source: str, pods: PodsInView) -> str:
    """What runs in a shift's source now, the pods that keep their GPUs: one line per pod, largest first."""
    lines = [render(fill("*Running in {namespace} now* ({pods})", namespace=source, pods=_pods_notice(pods)))]
    ordered = sorted(pods.pods, key=lambda pod: (-pod.gpus, pod.name))
    lines.extend(_BULLET + render(pod_words.pod_line(pod)) for pod in ordered[:SOURCE_PODS_LISTED])
    if len(ordered) > SOURCE_PODS_LISTED:
        hidden = len(ordered) - SOURCE_PODS_LISTED
        lines.append(_BULLET + render(fill_n("and {count} more pod", "and {count} more pods", hidden)))
    return "\n".join(lines)


def shift_gradual_note(card: RequestCard) -> str:
    """What "gradual" means for a shift: nothing running is stopped."""
    assert card.shift is not None
    values: dict[str, Value] = {"source": card.shift.namespace, "namespace": card.namespace}
    if card.permanent:
        return render(
            fill(
                ":information_source: Gradual: pods running in {source} keep running; the bot never evicts them. New GPU pods"
                " there are refused above the new quota, so its usage drains as jobs finish.",
                **values,
            )
        )
    return render(
        fill(
            ":information_source: Gradual: pods running in {source} keep running; the bot never evicts them. New GPU pods"
            " there are refused above the new quota, so its usage drains as jobs finish. When the shift ends, {namespace}"
            " is lowered first, then {source} gets its GPUs back.",
            **values,
        )
    )


def _fields(card: RequestCard) -> list[str]:
    if card.shift is not None:
        return _shift_fields(card)
    used: Value = "?" if card.used_before is None else card.used_before
    if card.resource == GPU:
        quota_heading = fill("*Quota when asked*")
    else:
        quota_heading = fill("*Quota when asked · {resource}*", resource=resource_label(card.resource))
    fields = [_field(quota_heading, fill("{hard} hard / {used} used", hard=card.hard_before, used=used))]
    if card.kind == RequestKind.CHANGE:
        change = _change(card.hard_before, card.hard_after)
        fields.append(_field(fill("*Change*"), join(change, say(f" ({card.delta:+d})"))))
    if card.applied_from is not None and card.applied_to is not None:
        fields.append(_field(fill("*Applied*"), _change(card.applied_from, card.applied_to)))
    fields.append(_field(fill("*Duration*"), _duration_text(card)))
    if card.cost is not None:
        fields.append(_field(fill("*Cost*"), _cost_text(card, saves=card.delta < 0)))
    fields.append(_field(fill("*Cluster capacity*"), _capacity_text(card)))
    if card.pods is not None:
        fields.append(_field(fill("*GPU pods in {namespace} now*", namespace=card.namespace), _pods_notice(card.pods)))
    fields.append(_field(fill("*Approvals*"), _approvals_text(card)))
    return fields


def _change(before: int, after: int) -> Notice:
    """``4 → *8*``: figures and an arrow, no words."""
    return say(f"{before} → ", Strong(str(after)))


def _cost_text(card: RequestCard, *, saves: bool) -> Notice:
    """``720.00 USD for the grant, at ...`` (``saves``: what a decrease saves)."""
    assert card.cost is not None
    cost = format_money(card.cost, card.currency)
    if card.cost_basis is None:
        return fill("saves {cost}", cost=cost) if saves else say(cost)
    basis = prices.basis_notice(card.cost_basis, card.namespace)
    if saves:
        return fill("saves {cost} {basis}", cost=cost, basis=basis)
    # Translators: a cost and what it is based on: "720.00 USD for the grant, at 2.50 USD/h, ...".
    return fill("{cost} {basis}", cost=cost, basis=basis)


def _approvals_text(card: RequestCard) -> Notice:
    values: dict[str, Value] = {"approved": len(card.approvals), "required": card.approvals_required}
    if not card.approvals:
        return fill("{approved} of {required}: none yet", **values)
    approvers = listed(fill("auto-approval") if user == _BOT else User(user) for user in card.approvals)
    return fill("{approved} of {required}: {approvers}", approvers=approvers, **values)


def _duration_text(card: RequestCard) -> Notice:
    if card.permanent:
        return fill("permanent")
    length = _length(card)
    if card.grant_ends_at is None:
        return fill("{length} from approval", length=length)
    if card.grant_state == GrantState.ENDED:
        return fill("{length} (ended)", length=length)
    return fill("{length}, until {moment}", length=length, moment=Moment(card.grant_ends_at))


def _capacity_text(card: RequestCard) -> Notice:
    capacity = card.capacity
    if capacity is None:
        return fill("unknown (the cluster could not be read)")
    text = fill(
        "{allocatable} allocatable · {committed} in managed quotas after",
        allocatable=capacity.allocatable,
        committed=capacity.committed_after,
    )
    if capacity.oversubscribed:
        return join(text, say("\n"), fill(":warning: oversubscribed by {count}", count=-capacity.headroom))
    return text


def _status_line(card: RequestCard) -> str:
    state = card.state
    if state == RequestState.PENDING:
        missing = card.approvals_required - len(card.approvals)
        return render(
            fill_n(
                ":hourglass_flowing_sand: Pending: needs {count} more approval · expires {moment}",
                ":hourglass_flowing_sand: Pending: needs {count} more approvals · expires {moment}",
                missing,
                moment=Moment(card.decide_by),
            )
        )
    if state == RequestState.APPROVED:
        return render(fill(":gear: Approved: applying to the cluster…"))
    if state == RequestState.APPLIED:
        return render(fill(_APPLIED[card.auto_approved, card.grant_state if card.grant_state in _GRANT_ENDINGS else None]))
    if state == RequestState.FAILED:
        if card.failure_reason is None:
            return render(fill(":x: Failed: unknown reason"))
        return render(fill(":x: Failed: {reason}", reason=reasons.notice(card.failure_reason)))
    if state == RequestState.DENIED:
        return render(fill(":no_entry: Denied by {user}", user=User(card.denied_by or "?")))
    if state == RequestState.CANCELLED:
        return render(fill(":wastebasket: Cancelled"))
    return render(fill(":zzz: Expired: nobody decided in time"))


_GRANT_ENDINGS = (GrantState.ENDED, GrantState.ENDING)
# An applied request's line: auto-approved or not, and whether its grant has ended (or is ending).
_APPLIED = {
    (False, None): N_(":white_check_mark: Applied"),
    (False, GrantState.ENDED): N_(":white_check_mark: Applied · the grant has ended and the quota is back"),
    (False, GrantState.ENDING): N_(":white_check_mark: Applied · the grant is over; putting the quota back"),
    (True, None): N_(":white_check_mark: Applied (auto-approved)"),
    (True, GrantState.ENDED): N_(":white_check_mark: Applied (auto-approved) · the grant has ended and the quota is back"),
    (True, GrantState.ENDING): N_(":white_check_mark: Applied (auto-approved) · the grant is over; putting the quota back"),
}


def _quote(text: str) -> Notice:
    """A person's words as a block quote (the words for none when nothing is left of them)."""
    if not escape(text).strip():
        return say(Quote(gettext(NO_TEXT)))
    return say(Quote(text))


# --- plain messages with buttons ---------------------------------------------------------------


def message_blocks(text: str, buttons: Sequence[Action] = ()) -> list[Block]:
    """A message of rendered mrkdwn (``mrkdwn.render``) with buttons."""
    blocks = [section(text)]
    if buttons:
        blocks.append(actions([button(button_label(a), ids.ACTION_IDS[a.kind], a.value, a.style) for a in buttons]))
    return blocks


def lines_to_blocks(lines: Iterable[str], *, title: str | None = None, max_blocks: int = MAX_BLOCKS) -> list[Block]:
    """Pack lines into sections of at most 3,000 characters and 50 blocks, ending with "and N more"."""
    blocks: list[Block] = [header(title)] if title else []
    pending = [truncate(line, SECTION_LIMIT) for line in lines]
    current: list[str] = []
    size = -1  # the length of "\n".join(current)
    taken = 0
    for line in pending:
        if current and size + 1 + len(line) > SECTION_LIMIT:
            blocks.append(section("\n".join(current)))
            current, size = [], -1
            if len(blocks) == max_blocks - 1:
                break
        current.append(line)
        size += 1 + len(line)
        taken += 1
    if current:
        blocks.append(section("\n".join(current)))
    if taken < len(pending):
        blocks.append(context(render(fill_n("… and {count} more", "… and {count} more", len(pending) - taken))))
    return blocks


def report_blocks(report: Report) -> list[Block]:
    """A report (digest) as blocks: header, summary, then each section's lines packed within the limits."""
    blocks: list[Block] = [header(report.title), section(report.summary)]
    for part in report.sections:
        lines = ([f"*{part.heading}*"] if part.heading else []) + list(part.lines)
        room = MAX_BLOCKS - len(blocks) - (1 if report.actions else 0)
        if room < 2:
            break
        blocks.extend(lines_to_blocks(lines, max_blocks=room))
    if report.actions:
        blocks.extend(message_blocks("", report.actions)[1:])
    return blocks[:MAX_BLOCKS]


# --- ephemeral answers -------------------------------------------------------------------------

_ITEM = "    • "  # a line under a namespace's line (layout, not words)


def status_lines(statuses: Sequence[NamespaceStatus]) -> list[str]:
    lines = []
    for status in statuses:
        values: dict[str, Value] = {
            "namespace": status.namespace,
            "team": status.team_label,
            "quota": Code(status.quota_name),
            "state": _quota_state(status),
        }
        if status.resource == GPU:
            lines.append(render(fill("*{namespace}* ({team}, quota {quota}): {state}", **values)))
        else:
            lines.append(
                render(
                    fill(
                        "*{namespace}* · {resource} ({team}, quota {quota}): {state}",
                        resource=resource_label(status.resource),
                        **values,
                    )
                )
            )
        if status.queue is not None:
            lines.append(_ITEM + queue_text(status.queue))
        if status.pods is not None:
            lines.append(_ITEM + pods_text(status.pods))
            lines.extend("    " + warning for warning in pod_warnings(status.pods))
        for grant in status.grants:
            grant_values: dict[str, Value] = {
                "request": format_request_id(grant.request_id),
                "amount": ("+" if grant.gpus >= 0 else "") + amount_of(grant.gpus, status.resource),
                "moment": Moment(grant.ends_at),
            }
            if grant.state == GrantState.ACTIVE:
                lines.append(_ITEM + render(fill("{request}: {amount}, ends {moment}", **grant_values)))
            else:
                lines.append(_ITEM + render(fill("{request}: {amount}, ended, reverting since {moment}", **grant_values)))
        for pending in status.pending:
            lines.append(_ITEM + pending_line(pending))
        if not status.grants and not status.pending:
            lines.append(_ITEM + render(fill("no active grants, no pending requests")))
    return lines


def _quota_state(status: NamespaceStatus) -> Notice:
    if status.error:
        return fill("quota unreadable: {error}", error=status.error)
    if status.hard is None:
        return fill("no GPU quota in the cluster (unlimited)")
    values: dict[str, Value] = {"hard": status.hard, "used": "?" if status.used is None else status.used}
    if not status.over_quota:
        return fill("*{hard}* hard / {used} used", **values)
    if status.reclaiming_since is None:
        return fill("*{hard}* hard / {used} used, over quota by {over}", over=status.over_quota, **values)
    return fill(
        "*{hard}* hard / {used} used, over quota by {over}, reclaiming since {moment}",
        over=status.over_quota,
        moment=Moment(status.reclaiming_since),
        **values,
    )


def queue_text(queue: QueueLine) -> str:
    """A ClusterQueue's line in status: its flavor, what admitted workloads use, the queue, the cohort."""
    values: dict[str, Value] = {"flavor": Code(queue.flavor), "in_use": queue.in_use}
    count = queue.pending_workloads
    if queue.cohort is None:
        return render(
            fill_n(
                "Kueue flavor {flavor}: {in_use} in use by admitted workloads, {count} workload pending in the queue",
                "Kueue flavor {flavor}: {in_use} in use by admitted workloads, {count} workloads pending in the queue",
                count,
                **values,
            )
        )
    values.update(cohort=Code(queue.cohort), borrowed=queue.borrowed)
    if queue.borrowing_limit is None:
        return render(
            fill_n(
                "Kueue flavor {flavor}: {in_use} in use by admitted workloads, {count} workload pending in the queue;"
                " cohort {cohort}: {borrowed} borrowed, no borrowing limit",
                "Kueue flavor {flavor}: {in_use} in use by admitted workloads, {count} workloads pending in the queue;"
                " cohort {cohort}: {borrowed} borrowed, no borrowing limit",
                count,
                **values,
            )
        )
    return render(
        fill_n(
            "Kueue flavor {flavor}: {in_use} in use by admitted workloads, {count} workload pending in the queue;"
            " cohort {cohort}: {borrowed} borrowed, borrowing limit {limit}",
            "Kueue flavor {flavor}: {in_use} in use by admitted workloads, {count} workloads pending in the queue;"
            " cohort {cohort}: {borrowed} borrowed, borrowing limit {limit}",
            count,
            limit=queue.borrowing_limit,
            **values,
        )
    )


def _pods_notice(pods: PodsInView) -> Notice:
    if pods.error is not None:
        return fill("GPU pods unreadable: {error}", error=pods.error)
    return pod_words.mix_notice(pods.mix)


def pods_text(pods: PodsInView) -> str:
    return render(_pods_notice(pods))


def pod_warnings(pods: PodsInView | None) -> list[str]:
    """Running GPU pods of a class borrowed GPUs are not meant for, one warning line each."""
    if pods is None:
        return []
    return [render(pod_words.warning_notice(w, pods.allowed)) for w in pods.warnings]


def pending_line(pending: PendingLine) -> str:
    values: dict[str, Value] = {
        "request": format_request_id(pending.request_id),
        "namespace": pending.namespace,
        "user": User(pending.requester_id),
        "approvals": pending.approvals,
        "required": pending.approvals_required,
        "moment": Moment(pending.decide_by),
    }
    if pending.source_namespace is not None:
        values.update(gpus=format_gpus(pending.delta), source=pending.source_namespace)
        if pending.duration is None:
            return render(
                fill(
                    "{request} pending: shift of {gpus} from {source} to {namespace} permanent"
                    " by {user} ({approvals} of {required} approvals, expires {moment})",
                    **values,
                )
            )
        return render(
            fill(
                "{request} pending: shift of {gpus} from {source} to {namespace} for {length}"
                " by {user} ({approvals} of {required} approvals, expires {moment})",
                length=format_duration(pending.duration),
                **values,
            )
        )
    values["amount"] = pending.amount_text
    if pending.duration is None:
        return render(
            fill(
                "{request} pending: {amount} GPUs in {namespace} permanent by {user} ({approvals} of {required} approvals, expires {moment})",
                **values,
            )
        )
    return render(
        fill(
            "{request} pending: {amount} GPUs in {namespace} for {length} by {user} ({approvals} of {required} approvals, expires {moment})",
            length=format_duration(pending.duration),
            **values,
        )
    )


def audit_lines(entries: Sequence[AuditLine]) -> list[str]:
    """One line per audit record: when (UTC), who, the action (its key) and its subject, the values, the detail
    (``reasons.render_detail``: a typed detail in words, anything else as stored)."""
    lines = []
    for entry in entries:
        actor = tr("bot") if entry.actor == _BOT else mention(entry.actor)
        subject = format_request_id(entry.request_id) if entry.request_id else escape(entry.namespace or "")
        change = ""
        if entry.before and entry.after:
            change = f" {_json(entry.before)} → {_json(entry.after)}"
        elif entry.after:
            change = f" {_json(entry.after)}"
        detail = f" — {reasons.render_detail(entry.detail)}" if entry.detail else ""
        lines.append(f"`{entry.at:%Y-%m-%d %H:%M}Z` {actor} *{escape(entry.action)}* {subject}{change}{detail}")
    return lines


def _json(value: dict[str, Any]) -> str:
    return escape(json.dumps(value, sort_keys=True, ensure_ascii=False))
