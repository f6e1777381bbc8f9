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
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from bot.adapters.slack import ids, prices, reasons
from bot.adapters.slack.buttons import button_label
from bot.adapters.slack.mrkdwn import escape, render
from bot.adapters.slack.reports import Report
from bot.adapters.slack.resources import amount_of, resource_label
from bot.domain.commands import clean_text, format_request_id
from bot.domain.durations import format_duration
from bot.domain.lifecycle import GrantState, RequestKind, RequestState
from bot.domain.priority import NO_CLASS_LABEL, describe_mix, describe_warning
from bot.domain.resources import GPU
from bot.services.ports import Action, ActionKind
from bot.services.text import Channel, Moment, Quote, User, gpus, money, say
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
NO_TEXT = "(none)"


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
    text_object: dict[str, Any] = {"type": "mrkdwn", "text": truncate(text, limit) or NO_TEXT}
    if verbatim:
        text_object["verbatim"] = True
    return text_object


def plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(text, limit) or NO_TEXT, "emoji": True}


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


def request_message(card: RequestCard) -> list[Block]:
    """The message in the approvals channel: the whole story of one request, buttons while pending."""
    blocks: list[Block] = [
        header(clean_text(_title(card))),
        section(_summary(card)),
        fields(_fields(card)),
        section("*Reason*\n" + _quote(card.reason)),
        context(_status_line(card)),
    ]
    if card.auto_note:
        blocks.append(context(card.auto_note, verbatim=False))
    warnings = pod_warnings(card.pods)
    if warnings:
        blocks.append(section("\n".join(warnings)))
    if card.shift is not None:
        if card.pods is not None:
            blocks.append(section(source_pods_text(card.shift.namespace, card.pods)))
        blocks.append(context(shift_gradual_note(card)))
    if card.thread_in is not None:
        where = render(say(":link: The source team's copy: the thread and the outcome are in ", Channel(card.thread_in), "."))
        blocks.append(context(where))
    if card.state == RequestState.PENDING:
        request_id = str(card.request_id)
        blocks.append(
            actions(
                [
                    button("Approve", ids.ACTION_IDS[ActionKind.APPROVE], request_id, "primary"),
                    # Deny opens a form asking why (modals.deny_form), which is its confirmation too.
                    button("Deny", ids.ACTION_IDS[ActionKind.DENY], request_id, "danger"),
                ],
                block_id=f"decide:{card.request_id}",
            )
        )
    return blocks


def request_fallback_text(card: RequestCard) -> str:
    """The notification text (and what screen readers announce)."""
    what = "GPUs" if card.resource == GPU else resource_label(card.resource)
    return escape(f"{_title(card)}: {card.amount_text} {what} for {card.namespace} ({card.state})")


def _title(card: RequestCard) -> str:
    if card.shift is not None:
        return f"GPU shift {card.display_id}"
    if card.kind == RequestKind.EXTENSION:
        return f"Extension {card.display_id} of {format_request_id(card.extends_id or 0)}"
    return f"GPU quota request {card.display_id}"


def _summary(card: RequestCard) -> str:
    if card.shift is not None:
        span = "permanently" if card.permanent else f"for *{format_duration(card.duration or timedelta())}*"
        return (
            f"{mention(card.requester_id)} asks to move *{amount_of(card.delta, card.resource)}* from *{escape(card.shift.namespace)}* "
            f"({escape(card.shift.team_label)}) to *{escape(card.namespace)}* ({escape(card.team_label)}) {span}."
        )
    if card.kind == RequestKind.EXTENSION:
        return (
            f"{mention(card.requester_id)} asks to keep *{amount_of(card.delta, card.resource)}* in *{escape(card.namespace)}* "
            f"({escape(card.team_label)}) for *{format_duration(card.duration or timedelta())}* more."
        )
    span = "permanently" if card.permanent else f"for *{format_duration(card.duration or timedelta())}*"
    verb = "more" if card.delta > 0 else "fewer"
    return (
        f"{mention(card.requester_id)} asks for *{amount_of(abs(card.delta), card.resource)} {verb}* in *{escape(card.namespace)}* "
        f"({escape(card.team_label)}) {span}."
    )


def _shift_fields(card: RequestCard) -> list[str]:
    assert card.shift is not None
    source = card.shift
    target_from = card.applied_from if card.applied_from is not None else card.hard_before
    target_to = card.applied_to if card.applied_to is not None else card.hard_before + (source.before - source.after)
    made = " (given back)" if source.returned else " (applied)" if source.applied else ""
    in_use = "" if source.used is None else f" · {source.used} in use when asked"
    fields = [
        f"*From {escape(source.namespace)}{made}*\n{source.before} → *{source.after}*{in_use}",
        f"*To {escape(card.namespace)}{' (applied)' if card.applied_to is not None else ''}*\n{target_from} → *{target_to}*",
        f"*Duration*\n{_duration_text(card)}",
    ]
    if card.cost is not None:
        basis = prices.render_basis(card.cost_basis, card.namespace)
        fields.append(f"*Cost moved*\n{escape(money(card.cost, card.currency))} {basis}".rstrip())
    approvers = ", ".join(mention(u) for u in card.approvals) or "none yet"
    fields.append(f"*Approvals*\n{len(card.approvals)} of {card.approvals_required}: {approvers}")
    fields.append(f"*Order*\n{escape(source.namespace)} is lowered first; {escape(card.namespace)} is raised by what it gave up")
    return fields


SOURCE_PODS_LISTED = 8


def source_pods_text(source: str, pods: PodsInView) -> str:
    """What runs in a shift's source now, the pods that keep their GPUs: one line per pod, largest first."""
    lines = [f"*Running in {escape(source)} now* ({pods_text(pods)})"]
    ordered = sorted(pods.pods, key=lambda pod: (-pod.gpus, pod.name))
    for pod in ordered[:SOURCE_PODS_LISTED]:
        since = f", since {when(pod.started_at)}" if pod.started_at is not None else ""
        what = escape(pod.priority_class or NO_CLASS_LABEL)
        lines.append(f"• `{escape(pod.name)}`: {gpus(pod.gpus)}, {what}, {escape(pod.phase.lower())}{since}")
    if len(ordered) > SOURCE_PODS_LISTED:
        lines.append(f"• and {len(ordered) - SOURCE_PODS_LISTED} more")
    return "\n".join(lines)


def shift_gradual_note(card: RequestCard) -> str:
    """What "gradual" means for a shift: nothing running is stopped."""
    assert card.shift is not None
    source = escape(card.shift.namespace)
    back = (
        ""
        if card.permanent
        else f" When the shift ends, {escape(card.namespace)} is lowered first, then {source} gets its GPUs back."
    )
    return (
        f":information_source: Gradual: pods running in {source} keep running; the bot never evicts them. New GPU pods"
        f" there are refused above the new quota, so its usage drains as jobs finish.{back}"
    )


def _fields(card: RequestCard) -> list[str]:
    if card.shift is not None:
        return _shift_fields(card)
    used = "?" if card.used_before is None else str(card.used_before)
    of = "" if card.resource == GPU else f" · {escape(resource_label(card.resource))}"
    fields = [f"*Quota when asked{of}*\n{card.hard_before} hard / {used} used"]
    if card.kind == RequestKind.CHANGE:
        fields.append(f"*Change*\n{card.hard_before} → *{card.hard_after}* ({card.delta:+d})")
    if card.applied_from is not None and card.applied_to is not None:
        fields.append(f"*Applied*\n{card.applied_from} → *{card.applied_to}*")
    fields.append(f"*Duration*\n{_duration_text(card)}")
    if card.cost is not None:
        sign = "saves " if card.delta < 0 else ""
        basis = prices.render_basis(card.cost_basis, card.namespace)
        fields.append(f"*Cost*\n{sign}{escape(money(card.cost, card.currency))} {basis}".rstrip())
    fields.append(f"*Cluster capacity*\n{_capacity_text(card)}")
    if card.pods is not None:
        fields.append(f"*GPU pods in {escape(card.namespace)} now*\n{pods_text(card.pods)}")
    approvers = ", ".join(mention(u) if u != "gpu-quota-bot" else "auto-approval" for u in card.approvals) or "none yet"
    fields.append(f"*Approvals*\n{len(card.approvals)} of {card.approvals_required}: {approvers}")
    return fields


def _duration_text(card: RequestCard) -> str:
    if card.permanent:
        return "permanent"
    length = format_duration(card.duration or timedelta())
    if card.grant_ends_at is None:
        return f"{length} from approval"
    if card.grant_state == GrantState.ENDED:
        return f"{length} (ended)"
    return f"{length}, until {when(card.grant_ends_at)}"


def _capacity_text(card: RequestCard) -> str:
    if card.capacity is None:
        return "unknown (the cluster could not be read)"
    text = f"{card.capacity.allocatable} allocatable · {card.capacity.committed_after} in managed quotas after"
    if card.capacity.oversubscribed:
        text += f"\n:warning: oversubscribed by {-card.capacity.headroom}"
    return text


def _status_line(card: RequestCard) -> str:
    state = card.state
    if state == RequestState.PENDING:
        missing = card.approvals_required - len(card.approvals)
        return f":hourglass_flowing_sand: Pending: needs {missing} more approval{'s' if missing != 1 else ''} · expires {when(card.decide_by)}"
    if state == RequestState.APPROVED:
        return ":gear: Approved: applying to the cluster…"
    if state == RequestState.APPLIED:
        auto = " (auto-approved)" if card.auto_approved else ""
        if card.grant_state == GrantState.ENDED:
            return f":white_check_mark: Applied{auto} · the grant has ended and the quota is back"
        if card.grant_state == GrantState.ENDING:
            return f":white_check_mark: Applied{auto} · the grant is over; putting the quota back"
        return f":white_check_mark: Applied{auto}"
    if state == RequestState.FAILED:
        return f":x: Failed: {reasons.render(card.failure_reason) if card.failure_reason else 'unknown reason'}"
    if state == RequestState.DENIED:
        return f":no_entry: Denied by {mention(card.denied_by or '?')}"
    if state == RequestState.CANCELLED:
        return ":wastebasket: Cancelled"
    return ":zzz: Expired: nobody decided in time"


def _quote(text: str) -> str:
    return render(say(Quote(text)))


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
        blocks.append(context(f"… and {len(pending) - taken} more"))
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


def status_lines(statuses: Sequence[NamespaceStatus]) -> list[str]:
    lines = []
    for status in statuses:
        if status.error:
            quota = f"quota unreadable: {escape(status.error)}"
        elif status.hard is None:
            quota = "no GPU quota in the cluster (unlimited)"
        else:
            quota = f"*{status.hard}* hard / {status.used} used"
            if status.over_quota:
                quota += f", over quota by {status.over_quota}"
                if status.reclaiming_since is not None:
                    quota += f", reclaiming since {when(status.reclaiming_since)}"
        of = "" if status.resource == GPU else f" · {escape(resource_label(status.resource))}"
        lines.append(
            f"*{escape(status.namespace)}*{of} ({escape(status.team_label)}, quota `{escape(status.quota_name)}`): {quota}"
        )
        if status.queue is not None:
            lines.append(f"    • {queue_text(status.queue)}")
        if status.pods is not None:
            lines.append(f"    • {pods_text(status.pods)}")
            lines.extend("    " + warning for warning in pod_warnings(status.pods))
        for grant in status.grants:
            state = "ends" if grant.state == GrantState.ACTIVE else "ended, reverting since"
            amount = amount_of(grant.gpus, status.resource).removeprefix(str(grant.gpus))
            lines.append(f"    • {format_request_id(grant.request_id)}: {grant.gpus:+d}{amount}, {state} {when(grant.ends_at)}")
        for pending in status.pending:
            lines.append("    • " + pending_line(pending))
        if not status.grants and not status.pending:
            lines.append("    • no active grants, no pending requests")
    return lines


def queue_text(queue: QueueLine) -> str:
    """A ClusterQueue's line in status: its flavor, what admitted workloads use, the queue, the cohort."""
    pending = f"{queue.pending_workloads} workload{'s' if queue.pending_workloads != 1 else ''} pending in the queue"
    text = f"Kueue flavor `{escape(queue.flavor)}`: {queue.in_use} in use by admitted workloads, {pending}"
    if queue.cohort is not None:
        limit = "no borrowing limit" if queue.borrowing_limit is None else f"borrowing limit {queue.borrowing_limit}"
        text += f"; cohort `{escape(queue.cohort)}`: {queue.borrowed} borrowed, {limit}"
    return text


def pods_text(pods: PodsInView) -> str:
    if pods.error is not None:
        return f"GPU pods unreadable: {escape(pods.error)}"
    return escape(describe_mix(pods.mix))


def pod_warnings(pods: PodsInView | None) -> list[str]:
    """Running GPU pods of a class borrowed GPUs are not meant for, one warning line each."""
    if pods is None:
        return []
    return [f":warning: {escape(describe_warning(w, pods.allowed))}" for w in pods.warnings]


def pending_line(pending: PendingLine) -> str:
    span = "permanent" if pending.duration is None else f"for {format_duration(pending.duration)}"
    what = f"{escape(pending.amount_text)} GPUs in {escape(pending.namespace)}"
    if pending.source_namespace is not None:
        what = f"shift of {pending.delta} GPUs from {escape(pending.source_namespace)} to {escape(pending.namespace)}"
    return (
        f"{format_request_id(pending.request_id)} pending: {what} {span}"
        f" by {mention(pending.requester_id)} ({pending.approvals} of {pending.approvals_required} approvals,"
        f" expires {when(pending.decide_by)})"
    )


def audit_lines(entries: Sequence[AuditLine]) -> list[str]:
    lines = []
    for entry in entries:
        actor = "bot" if entry.actor == "gpu-quota-bot" else mention(entry.actor)
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
