"""The bot's forms (modals) as ``slack_sdk.models`` Views, which check Slack's limits as they serialise.

A form opens once per click or command that asks for one, and ``views.open`` is given the View
itself, so the SDK's models and their validation stay here: a form that breaks a limit fails where
it is built. Messages, which go out on every request and click, are plain dicts in ``blocks``.
Text that did not come from this module goes through ``mrkdwn.escape`` before it enters mrkdwn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta

from slack_sdk.models.blocks import (
    Block,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    RadioButtonsElement,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from bot.adapters.slack import ids, input_words, prices
from bot.adapters.slack.blocks import mention, truncate
from bot.adapters.slack.mrkdwn import escape
from bot.domain.commands import RequestDraft, clean_text, format_request_id
from bot.domain.durations import ALLOWED, format_duration
from bot.domain.resources import Resolved, resolve, short_name
from bot.services.outcomes import Confirmation
from bot.services.text import gpus, money
from bot.services.views import ResourceChoice

MAX_OPTIONS = 100  # a static_select's options
MAX_OPTION_TEXT = 75  # an option's text
MAX_OPTION_VALUE = 150  # an option's value


def _mrkdwn(text: str) -> MarkdownTextObject:
    """Shown as sent: ``verbatim`` keeps bare URLs and names a person typed from becoming links."""
    return MarkdownTextObject(text=text, verbatim=True)


def request_form(
    draft: RequestDraft, namespaces: Sequence[str], *, channel_id: str | None, resources: Sequence[ResourceChoice] = ()
) -> View:
    """The request modal, prefilled with what the typed command got right; ``resources``: the draft's namespace's
    governed resources with their quota today (a choice only when there are several)."""
    blocks: list[Block] = []
    if draft.problems:
        blocks.append(
            ContextBlock(
                elements=[_mrkdwn(truncate(":warning: " + "\n:warning: ".join(map(input_words.render, draft.problems)), 2000))]
            )
        )
    blocks.append(_namespace_input(draft.namespace, namespaces))
    if len(resources) > 1:
        blocks.append(_resource_input(draft, resources))
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
    cost += f"\n{prices.render_price(c.price)}"
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


def _resource_input(draft: RequestDraft, choices: Sequence[ResourceChoice]) -> InputBlock:
    """Which resource: a select showing each one's quota today, preselected when the typed word named one;
    a text field when Slack's select cannot hold them (more than 100, or a name too long for a value)."""
    named = resolve(draft.resource, tuple(choice.resource for choice in choices))
    selected = named.resource if isinstance(named, Resolved) else None
    where = f" in {draft.namespace}" if draft.namespace else ""
    if len(choices) <= MAX_OPTIONS and all(len(choice.resource) <= MAX_OPTION_VALUE for choice in choices):
        options = [
            Option(text=truncate(_choice_text(choice, choices), MAX_OPTION_TEXT), value=choice.resource) for choice in choices
        ]
        return InputBlock(
            block_id=ids.RESOURCE_BLOCK,
            label="Resource",
            hint=f"The quota{where} when this form opened.",
            element=StaticSelectElement(
                action_id=ids.INPUT_ACTION,
                placeholder="Choose a resource",
                options=options,
                initial_option=next((o for o in options if o.value == selected), None),
            ),
        )
    typed = selected or (clean_text(draft.resource) if draft.resource else None)
    return InputBlock(
        block_id=ids.RESOURCE_BLOCK,
        label="Resource",
        hint=truncate(f"Governed{where}: {', '.join(short_name(choice.resource) for choice in choices)}", 2000),
        element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=typed),
    )


def _choice_text(choice: ResourceChoice, choices: Sequence[ResourceChoice]) -> str:
    """``mig-3g.40gb: 2 of 4 in use``; the full name where two resources share a short one (nvidia.com/gpu, amd.com/gpu)."""
    short = short_name(choice.resource)
    shared = sum(short_name(other.resource) == short for other in choices) > 1
    name = choice.resource if shared else short
    if choice.hard is None:
        return f"{name}: quota not known"
    if choice.used is None:
        return f"{name}: quota {choice.hard}"
    return f"{name}: {choice.used} of {choice.hard} in use"


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
