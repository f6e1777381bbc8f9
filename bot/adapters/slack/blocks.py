"""Block Kit, built by small pure functions with ``slack_sdk.models`` (which enforce Slack's limits).

Nothing here calls Slack: each function turns the bot's values into blocks or a view, and the unit
tests check them on their own. Every piece of text that did not come from this module (a reason, an
amount as typed, a namespace, an error from another system) goes through ``mrkdwn.escape`` before
it enters a mrkdwn text object; mentions and dates are made here from ids and datetimes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    RadioButtonsElement,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from bot.adapters.slack import ids
from bot.adapters.slack.mrkdwn import escape, render
from bot.domain.commands import RequestDraft, clean_text, format_request_id
from bot.domain.durations import ALLOWED, format_duration
from bot.domain.lifecycle import GrantState, RequestKind, RequestState
from bot.domain.priority import NO_CLASS_LABEL, describe_mix, describe_warning
from bot.services.cards import RequestCard
from bot.services.pods import PodsInView
from bot.services.ports import Action, ActionKind, Report
from bot.services.queries import AuditLine, NamespaceStatus, PendingLine
from bot.services.requests import Confirmation
from bot.services.text import Channel, Moment, Quote, User, gpus, money, say

MAX_BLOCKS = 50
SECTION_LIMIT = 3000
FIELD_LIMIT = 2000
MAX_OPTIONS = 100


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mrkdwn(text: str) -> MarkdownTextObject:
    """A mrkdwn text object that Slack shows as sent: ``verbatim`` stops it from turning bare URLs,
    channel names and mentions a person typed into links (only the ``<...>`` made here are live)."""
    return MarkdownTextObject(text=text, verbatim=True)


def mention(user_id: str) -> str:
    return render(say(User(user_id)))


def when(moment: datetime) -> str:
    return render(say(Moment(moment)))


# --- the request message -------------------------------------------------------------------------


def request_message(card: RequestCard) -> list[Block]:
    """The message in the approvals channel: the whole story of one request, buttons while pending."""
    blocks: list[Block] = [
        HeaderBlock(text=truncate(clean_text(_title(card)), 150)),
        SectionBlock(text=_mrkdwn(truncate(_summary(card), SECTION_LIMIT))),
        SectionBlock(fields=[_mrkdwn(truncate(f, FIELD_LIMIT)) for f in _fields(card)]),
        SectionBlock(text=_mrkdwn(truncate("*Reason*\n" + _quote(card.reason), SECTION_LIMIT))),
        ContextBlock(elements=[_mrkdwn(truncate(_status_line(card), SECTION_LIMIT))]),
    ]
    if card.auto_note:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=truncate(card.auto_note, SECTION_LIMIT))]))
    warnings = pod_warnings(card.pods)
    if warnings:
        blocks.append(SectionBlock(text=_mrkdwn(truncate("\n".join(warnings), SECTION_LIMIT))))
    if card.shift is not None:
        if card.pods is not None:
            blocks.append(SectionBlock(text=_mrkdwn(truncate(source_pods_text(card.shift.namespace, card.pods), SECTION_LIMIT))))
        blocks.append(ContextBlock(elements=[_mrkdwn(truncate(shift_gradual_note(card), SECTION_LIMIT))]))
    if card.thread_in is not None:
        where = render(say(":link: The source team's copy: the thread and the outcome are in ", Channel(card.thread_in), "."))
        blocks.append(ContextBlock(elements=[_mrkdwn(where)]))
    if card.state == RequestState.PENDING:
        blocks.append(
            ActionsBlock(
                block_id=f"decide:{card.request_id}",
                elements=[
                    ButtonElement(
                        text="Approve", action_id=ids.ACTION_IDS[ActionKind.APPROVE], value=str(card.request_id), style="primary"
                    ),
                    # Deny opens a form asking why (deny_form), which is its confirmation too.
                    ButtonElement(
                        text="Deny", action_id=ids.ACTION_IDS[ActionKind.DENY], value=str(card.request_id), style="danger"
                    ),
                ],
            )
        )
    return blocks


def request_fallback_text(card: RequestCard) -> str:
    """The notification text (and what screen readers announce)."""
    return escape(f"{_title(card)}: {card.amount_text} GPUs for {card.namespace} ({card.state})")


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
            f"{mention(card.requester_id)} asks to move *{gpus(card.delta)}* from *{escape(card.shift.namespace)}* "
            f"({escape(card.shift.team_label)}) to *{escape(card.namespace)}* ({escape(card.team_label)}) {span}."
        )
    if card.kind == RequestKind.EXTENSION:
        return (
            f"{mention(card.requester_id)} asks to keep *{gpus(card.delta)}* in *{escape(card.namespace)}* "
            f"({escape(card.team_label)}) for *{format_duration(card.duration or timedelta())}* more."
        )
    span = "permanently" if card.permanent else f"for *{format_duration(card.duration or timedelta())}*"
    verb = "more" if card.delta > 0 else "fewer"
    return (
        f"{mention(card.requester_id)} asks for *{gpus(abs(card.delta))} {verb}* in *{escape(card.namespace)}* "
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
        fields.append(f"*Cost moved*\n{escape(money(card.cost, card.currency))} {escape(card.cost_basis or '')}".rstrip())
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
    fields = [f"*Quota when asked*\n{card.hard_before} hard / {used} used"]
    if card.kind == RequestKind.CHANGE:
        fields.append(f"*Change*\n{card.hard_before} → *{card.hard_after}* ({card.delta:+d})")
    if card.applied_from is not None and card.applied_to is not None:
        fields.append(f"*Applied*\n{card.applied_from} → *{card.applied_to}*")
    fields.append(f"*Duration*\n{_duration_text(card)}")
    if card.cost is not None:
        sign = "saves " if card.delta < 0 else ""
        fields.append(f"*Cost*\n{sign}{escape(money(card.cost, card.currency))} {escape(card.cost_basis or '')}".rstrip())
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
        return f":x: Failed: {escape(card.failure_reason or 'unknown reason')}"
    if state == RequestState.DENIED:
        return f":no_entry: Denied by {mention(card.denied_by or '?')}"
    if state == RequestState.CANCELLED:
        return ":wastebasket: Cancelled"
    return ":zzz: Expired: nobody decided in time"


def _quote(text: str) -> str:
    return render(say(Quote(text)))


# --- plain messages with buttons ---------------------------------------------------------------


def message_blocks(text: str, actions: Sequence[Action] = ()) -> list[Block]:
    """A message of rendered mrkdwn (``mrkdwn.render``) with buttons."""
    blocks: list[Block] = [SectionBlock(text=_mrkdwn(truncate(text, SECTION_LIMIT)))]
    if actions:
        blocks.append(
            ActionsBlock(
                elements=[
                    ButtonElement(
                        text=truncate(clean_text(a.label), 75), action_id=ids.ACTION_IDS[a.kind], value=a.value, style=a.style
                    )
                    for a in actions
                ]
            )
        )
    return blocks


def lines_to_blocks(lines: Iterable[str], *, header: str | None = None, max_blocks: int = MAX_BLOCKS) -> list[Block]:
    """Pack lines into sections of at most 3,000 characters and 50 blocks, ending with "and N more"."""
    blocks: list[Block] = [HeaderBlock(text=truncate(header, 150))] if header else []
    pending = list(lines)
    current: list[str] = []
    while pending:
        line = truncate(pending[0], SECTION_LIMIT)
        if current and len("\n".join([*current, line])) > SECTION_LIMIT:
            blocks.append(SectionBlock(text=_mrkdwn("\n".join(current))))
            current = []
            if len(blocks) == max_blocks - 1:
                break
        current.append(line)
        pending.pop(0)
    if current:
        blocks.append(SectionBlock(text=_mrkdwn("\n".join(current))))
    if pending:
        blocks.append(ContextBlock(elements=[_mrkdwn(f"… and {len(pending)} more")]))
    return blocks


def report_blocks(report: Report) -> list[Block]:
    """A report (digest) as blocks: header, summary, then each section's lines packed within the limits."""
    blocks: list[Block] = [
        HeaderBlock(text=truncate(report.title, 150)),
        SectionBlock(text=_mrkdwn(truncate(report.summary, SECTION_LIMIT))),
    ]
    for section in report.sections:
        lines = ([f"*{section.heading}*"] if section.heading else []) + list(section.lines)
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
        lines.append(f"*{escape(status.namespace)}* ({escape(status.team_label)}, quota `{escape(status.quota_name)}`): {quota}")
        if status.pods is not None:
            lines.append(f"    • {pods_text(status.pods)}")
            lines.extend("    " + warning for warning in pod_warnings(status.pods))
        for grant in status.grants:
            state = "ends" if grant.state == GrantState.ACTIVE else "ended, reverting since"
            lines.append(f"    • {format_request_id(grant.request_id)}: {grant.gpus:+d} GPUs, {state} {when(grant.ends_at)}")
        for pending in status.pending:
            lines.append("    • " + pending_line(pending))
        if not status.grants and not status.pending:
            lines.append("    • no active grants, no pending requests")
    return lines


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
        detail = f" — {escape(entry.detail)}" if entry.detail else ""
        lines.append(f"`{entry.at:%Y-%m-%d %H:%M}Z` {actor} *{escape(entry.action)}* {subject}{change}{detail}")
    return lines


def _json(value: dict[str, Any]) -> str:
    return escape(json.dumps(value, sort_keys=True, ensure_ascii=False))


# --- forms -------------------------------------------------------------------------------------


def request_form(draft: RequestDraft, namespaces: Sequence[str], *, channel_id: str | None) -> View:
    """The request modal, prefilled with what the typed command got right."""
    blocks: list[Block] = []
    if draft.problems:
        blocks.append(
            ContextBlock(elements=[_mrkdwn(truncate(":warning: " + "\n:warning: ".join(map(escape, draft.problems)), 2000))])
        )
    blocks.append(_namespace_input(draft.namespace, namespaces))
    blocks.append(
        InputBlock(
            block_id=ids.GPUS_BLOCK,
            label="GPUs",
            hint="+4 for 4 more, -2 for 2 fewer, 8 for a total of 8",
            element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=str(draft.amount) if draft.amount else None),
        )
    )
    blocks.append(_term_input(draft))
    blocks.append(
        InputBlock(
            block_id=ids.DURATION_BLOCK,
            label="For how long",
            hint=f"Temporary only: {ALLOWED}.",
            optional=True,
            element=PlainTextInputElement(
                action_id=ids.INPUT_ACTION, initial_value=format_duration(draft.duration) if draft.duration else None
            ),
        )
    )
    blocks.append(_reason_input(draft.reason))
    return View(
        type="modal",
        callback_id=ids.REQUEST_FORM,
        title="GPU quota request",
        submit="Submit",
        close="Cancel",
        private_metadata=json.dumps({"channel": channel_id}),
        blocks=blocks,
    )


def _term_input(draft: RequestDraft) -> InputBlock:
    """Temporary or permanent: preselected only when the typed command said which, never by default."""
    options = [
        Option(text="Temporary: for the duration below", value=ids.TEMPORARY),
        Option(text="Permanent: a new base quota", value=ids.PERMANENT),
    ]
    chosen = ids.PERMANENT if draft.permanent else ids.TEMPORARY if draft.duration is not None else None
    return InputBlock(
        block_id=ids.TERM_BLOCK,
        label="Temporary or permanent",
        element=RadioButtonsElement(
            action_id=ids.INPUT_ACTION,
            options=options,
            initial_option=next((o for o in options if o.value == chosen), None),
        ),
    )


def shift_form(*, source: str = "", target: str = "", gpus_moved: int | None = None) -> View:
    """The shift modal: GPUs, from, to, how long (a duration or ``permanent``), reason."""

    def text_input(block_id: str, label: str, hint: str, value: str | None) -> InputBlock:
        return InputBlock(
            block_id=block_id,
            label=label,
            hint=hint,
            element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=value),
        )

    return View(
        type="modal",
        callback_id=ids.SHIFT_FORM,
        title="Shift GPUs",
        submit="Submit",
        close="Cancel",
        blocks=[
            text_input(ids.GPUS_BLOCK, "GPUs to move", "A whole number, e.g. 3", str(gpus_moved) if gpus_moved else None),
            text_input(ids.SOURCE_BLOCK, "From namespace", "Lowered first; its running pods keep running", source or None),
            text_input(ids.TARGET_BLOCK, "To namespace", "Raised by what the source gave up", target or None),
            text_input(ids.DURATION_BLOCK, "For how long", f"{ALLOWED}, or the word permanent", None),
            _reason_input(""),
        ],
    )


def extend_form(request_id: int, *, duration: timedelta | None, reason: str = "", problems: Sequence[str] = ()) -> View:
    blocks: list[Block] = []
    if problems:
        blocks.append(ContextBlock(elements=[_mrkdwn(truncate(":warning: " + "\n:warning: ".join(map(escape, problems)), 2000))]))
    blocks.append(
        InputBlock(
            block_id=ids.DURATION_BLOCK,
            label="Extend by",
            hint="e.g. 12h, 2d",
            element=PlainTextInputElement(
                action_id=ids.INPUT_ACTION, initial_value=format_duration(duration) if duration else None
            ),
        )
    )
    blocks.append(_reason_input(reason, optional=True))
    return View(
        type="modal",
        callback_id=ids.EXTEND_FORM,
        title=truncate(f"Extend {format_request_id(request_id)}", 24),
        submit="Ask",
        close="Cancel",
        private_metadata=json.dumps({"request_id": request_id}),
        blocks=blocks,
    )


def confirm_approval_form(confirmation: Confirmation) -> View:
    """The form an approver submits to approve a permanent or large change: the change as of now and its cost."""
    c = confirmation
    span = "permanently" if c.permanent else f"for *{format_duration(c.duration or timedelta())}*"
    verb = "more" if c.delta > 0 else "fewer"
    cost = f"{'saves ' if c.delta < 0 else ''}{money(c.monthly_cost, c.currency)} per month"
    if c.grant_cost is not None:
        cost += f"\n{money(c.grant_cost, c.currency)} for the grant"
    cost += f"\n{escape(c.price_basis)}"
    why = "a permanent change" if c.permanent else f"a large change (more than {gpus(c.large_above or 0)})"
    decided = f"{c.approvals} of {c.approvals_required} approvals so far"
    return View(
        type="modal",
        callback_id=ids.CONFIRM_APPROVAL_FORM,
        title=truncate(f"Approve {c.display_id}", 24),
        submit="Approve",
        close="Cancel",
        private_metadata=json.dumps({"request_id": c.request_id}),
        blocks=[
            SectionBlock(
                text=MarkdownTextObject(
                    text=f"{mention(c.requester_id)} asks for *{gpus(abs(c.delta))} {verb}* in *{c.namespace}* ({c.team_label}) {span}."
                )
            ),
            SectionBlock(
                fields=[
                    MarkdownTextObject(text=f"*Quota now → after*\n{c.before} → *{c.after}* ({c.delta:+d})"),
                    MarkdownTextObject(text=f"*Cost*\n{cost}"),
                ]
            ),
            ContextBlock(
                elements=[
                    MarkdownTextObject(
                        text=f"This is {why}, so it is approved here rather than with one click ({decided}). "
                        "Only *Approve* below records your decision; *Cancel* records nothing."
                    )
                ]
            ),
        ],
    )


def _namespace_input(selected: str | None, namespaces: Sequence[str]) -> InputBlock:
    if 0 < len(namespaces) <= MAX_OPTIONS:
        options = [Option(text=ns, value=ns) for ns in namespaces]
        initial = next((o for o in options if o.value == selected), None)
        element = StaticSelectElement(
            action_id=ids.INPUT_ACTION, placeholder="Choose a namespace", options=options, initial_option=initial
        )
        return InputBlock(block_id=ids.NAMESPACE_BLOCK, label="Namespace", element=element)
    return InputBlock(
        block_id=ids.NAMESPACE_BLOCK,
        label="Namespace",
        element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=clean_text(selected) if selected else None),
    )


def _reason_input(reason: str, *, optional: bool = False) -> InputBlock:
    return InputBlock(
        block_id=ids.REASON_BLOCK,
        label="Reason",
        optional=optional,
        hint="Approvers read this; the audit trail keeps it.",
        element=PlainTextInputElement(
            action_id=ids.INPUT_ACTION, multiline=True, max_length=2000, initial_value=clean_text(reason) or None
        ),
    )


def to_dicts(blocks: Sequence[Block]) -> list[dict]:  # type: ignore[type-arg]
    """Serialise (and so validate) blocks for the Web API."""
    return [block.to_dict() for block in blocks]


def deny_form(request_id: int) -> View:
    """Deny with a reason: posted in the request's thread and sent to the requester."""
    display = format_request_id(request_id)
    return View(
        type="modal",
        callback_id=ids.DENY_FORM,
        title=truncate(f"Deny {display}", 24),
        submit="Deny",
        close="Keep it",
        private_metadata=json.dumps({"request_id": request_id}),
        blocks=[
            InputBlock(
                block_id=ids.REASON_BLOCK,
                label="Why?",
                hint="Posted in the request's thread and sent to the requester.",
                element=PlainTextInputElement(action_id=ids.INPUT_ACTION, multiline=True, max_length=500),
            )
        ],
    )
