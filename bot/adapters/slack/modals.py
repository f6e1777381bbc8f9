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

from bot.adapters import i18n
from bot.adapters.i18n import format_gpus, format_money, tr
from bot.adapters.slack import ids, input_words, prices
from bot.adapters.slack.blocks import truncate
from bot.adapters.slack.lists import listed_text
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.sentences import Value, fill
from bot.domain.commands import RequestDraft, clean_text, format_request_id
from bot.domain.durations import MAX_DURATION, format_duration
from bot.domain.input_problems import InputProblem
from bot.domain.resources import Resolved, resolve, short_name
from bot.services.outcomes import Confirmation
from bot.services.text import Notice, User
from bot.services.views import ResourceChoice

MAX_OPTIONS = 100  # a static_select's options
MAX_OPTION_TEXT = 75  # an option's text
MAX_OPTION_VALUE = 150  # an option's value


def _mrkdwn(text: str) -> MarkdownTextObject:
    """Shown as sent: ``verbatim`` keeps bare URLs and names a person typed from becoming links."""
    return MarkdownTextObject(text=text, verbatim=True)


def _problems(problems: Sequence[InputProblem]) -> ContextBlock:
    """What was wrong with what was typed, one warning line each (worded and escaped by ``input_words``)."""
    lines = "\n".join(":warning: " + input_words.render(problem) for problem in problems)
    return ContextBlock(elements=[_mrkdwn(truncate(lines, 2000))])


def _longest() -> str:
    """The longest duration a person may type, as typed (``366d``: the form the parser reads)."""
    return format_duration(MAX_DURATION)


def _typed(duration: timedelta | None) -> str | None:
    """A duration prefilled in a field as a person types it (``3d``: the parser reads it back), not as words."""
    return format_duration(duration) if duration else None


def request_form(
    draft: RequestDraft, namespaces: Sequence[str], *, channel_id: str | None, resources: Sequence[ResourceChoice] = ()
) -> View:
    """The request modal, prefilled with what the typed command got right; ``resources``: the draft's namespace's
    governed resources with their quota today (a choice only when there are several)."""
    blocks: list[Block] = []
    if draft.problems:
        blocks.append(_problems(draft.problems))
    blocks.append(_namespace_input(draft.namespace, namespaces))
    if len(resources) > 1:
        blocks.append(_resource_input(draft, resources))
    blocks.append(
        InputBlock(
            block_id=ids.GPUS_BLOCK,
            label=tr("GPUs"),
            hint=tr("+4 for 4 more, -2 for 2 fewer, 8 for a total of 8"),
            element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=str(draft.amount) if draft.amount else None),
        )
    )
    blocks.append(_term_input(draft))
    blocks.append(
        InputBlock(
            block_id=ids.DURATION_BLOCK,
            label=tr("For how long"),
            hint=tr("Temporary only: use 90m, 12h, 3d or 2w, at most {longest}.", longest=_longest()),
            optional=True,
            element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=_typed(draft.duration)),
        )
    )
    blocks.append(_reason_input(draft.reason))
    return View(
        type="modal",
        callback_id=ids.REQUEST_FORM,
        title=tr("GPU quota request"),
        submit=tr("Submit"),
        close=tr("Cancel"),
        private_metadata=json.dumps({"channel": channel_id}),
        blocks=blocks,
    )


def _term_input(draft: RequestDraft) -> InputBlock:
    """Temporary or permanent: preselected only when the typed command said which, never by default."""
    options = [
        Option(text=tr("Temporary: for the duration below"), value=ids.TEMPORARY),
        Option(text=tr("Permanent: a new base quota"), value=ids.PERMANENT),
    ]
    chosen = ids.PERMANENT if draft.permanent else ids.TEMPORARY if draft.duration is not None else None
    return InputBlock(
        block_id=ids.TERM_BLOCK,
        label=tr("Temporary or permanent"),
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
        title=tr("Shift GPUs"),
        submit=tr("Submit"),
        close=tr("Cancel"),
        blocks=[
            text_input(ids.GPUS_BLOCK, tr("GPUs to move"), tr("A whole number, e.g. 3"), str(gpus_moved) if gpus_moved else None),
            text_input(
                ids.SOURCE_BLOCK, tr("From namespace"), tr("Lowered first; its running pods keep running"), source or None
            ),
            text_input(ids.TARGET_BLOCK, tr("To namespace"), tr("Raised by what the source gave up"), target or None),
            text_input(
                ids.DURATION_BLOCK,
                tr("For how long"),
                tr("use 90m, 12h, 3d or 2w, at most {longest}, or the word permanent", longest=_longest()),
                None,
            ),
            _reason_input(""),
        ],
    )


def extend_form(request_id: int, *, duration: timedelta | None, reason: str = "", problems: Sequence[InputProblem] = ()) -> View:
    blocks: list[Block] = []
    if problems:
        blocks.append(_problems(problems))
    blocks.append(
        InputBlock(
            block_id=ids.DURATION_BLOCK,
            label=tr("Extend by"),
            hint=tr("e.g. 12h, 2d"),
            element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=_typed(duration)),
        )
    )
    blocks.append(_reason_input(reason, optional=True))
    return View(
        type="modal",
        callback_id=ids.EXTEND_FORM,
        title=truncate(tr("Extend {request}", request=format_request_id(request_id)), 24),
        submit=tr("Ask"),
        close=tr("Cancel"),
        private_metadata=json.dumps({"request_id": request_id}),
        blocks=blocks,
    )


def confirm_approval_form(confirmation: Confirmation) -> View:
    """The form an approver submits to approve a permanent or large change: the change as of now and its cost."""
    c = confirmation
    return View(
        type="modal",
        callback_id=ids.CONFIRM_APPROVAL_FORM,
        title=truncate(tr("Approve {request}", request=c.display_id), 24),
        submit=tr("Approve"),
        close=tr("Cancel"),
        private_metadata=json.dumps({"request_id": c.request_id}),
        blocks=[
            SectionBlock(text=MarkdownTextObject(text=render(_confirm_summary(c)))),
            SectionBlock(
                fields=[
                    MarkdownTextObject(text=render(fill("*Quota now → after*")) + f"\n{c.before} → *{c.after}* ({c.delta:+d})"),
                    MarkdownTextObject(text=render(fill("*Cost*")) + "\n" + _confirm_cost(c)),
                ]
            ),
            ContextBlock(elements=[MarkdownTextObject(text=render(_confirm_why(c)))]),
        ],
    )


def _confirm_summary(c: Confirmation) -> Notice:
    values: dict[str, Value] = {
        "requester": User(c.requester_id),
        "amount": format_gpus(abs(c.delta)),
        "namespace": c.namespace,
        "team": c.team_label,
        "length": i18n.format_duration(c.duration or timedelta()),
    }
    if c.delta > 0:
        if c.permanent:
            return fill("{requester} asks for *{amount} more* in *{namespace}* ({team}) permanently.", **values)
        return fill("{requester} asks for *{amount} more* in *{namespace}* ({team}) for *{length}*.", **values)
    if c.permanent:
        return fill("{requester} asks for *{amount} fewer* in *{namespace}* ({team}) permanently.", **values)
    return fill("{requester} asks for *{amount} fewer* in *{namespace}* ({team}) for *{length}*.", **values)


def _confirm_cost(c: Confirmation) -> str:
    """The monthly cost (what a decrease saves), the grant's, and the price they are based on: one line each."""
    monthly = format_money(c.monthly_cost, c.currency)
    lines = [fill("saves {cost} per month", cost=monthly) if c.delta < 0 else fill("{cost} per month", cost=monthly)]
    if c.grant_cost is not None:
        lines.append(fill("{cost} for the grant", cost=format_money(c.grant_cost, c.currency)))
    lines.append(prices.notice_of(c.price))
    return "\n".join(render(line) for line in lines)


def _confirm_why(c: Confirmation) -> Notice:
    values: dict[str, Value] = {"approvals": c.approvals, "required": c.approvals_required}
    if c.permanent:
        return fill(
            "This is a permanent change, so it is approved here rather than with one click ({approvals} of {required}"
            " approvals so far). Only *Approve* below records your decision; *Cancel* records nothing.",
            **values,
        )
    return fill(
        "This is a large change (more than {gpus}), so it is approved here rather than with one click ({approvals} of"
        " {required} approvals so far). Only *Approve* below records your decision; *Cancel* records nothing.",
        gpus=format_gpus(c.large_above or 0),
        **values,
    )


def _namespace_input(selected: str | None, namespaces: Sequence[str]) -> InputBlock:
    if 0 < len(namespaces) <= MAX_OPTIONS:
        options = [Option(text=ns, value=ns) for ns in namespaces]
        initial = next((o for o in options if o.value == selected), None)
        element = StaticSelectElement(
            action_id=ids.INPUT_ACTION, placeholder=tr("Choose a namespace"), options=options, initial_option=initial
        )
        return InputBlock(block_id=ids.NAMESPACE_BLOCK, label=tr("Namespace"), element=element)
    return InputBlock(
        block_id=ids.NAMESPACE_BLOCK,
        label=tr("Namespace"),
        element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=clean_text(selected) if selected else None),
    )


def _resource_input(draft: RequestDraft, choices: Sequence[ResourceChoice]) -> InputBlock:
    """Which resource: a select showing each one's quota today, preselected when the typed word named one;
    a text field when Slack's select cannot hold them (more than 100, or a name too long for a value)."""
    named = resolve(draft.resource, tuple(choice.resource for choice in choices))
    selected = named.resource if isinstance(named, Resolved) else None
    if len(choices) <= MAX_OPTIONS and all(len(choice.resource) <= MAX_OPTION_VALUE for choice in choices):
        options = [
            Option(text=truncate(_choice_text(choice, choices), MAX_OPTION_TEXT), value=choice.resource) for choice in choices
        ]
        return InputBlock(
            block_id=ids.RESOURCE_BLOCK,
            label=tr("Resource"),
            hint=(
                tr("The quota in {namespace} when this form opened.", namespace=draft.namespace)
                if draft.namespace
                else tr("The quota when this form opened.")
            ),
            element=StaticSelectElement(
                action_id=ids.INPUT_ACTION,
                placeholder=tr("Choose a resource"),
                options=options,
                initial_option=next((o for o in options if o.value == selected), None),
            ),
        )
    typed = selected or (clean_text(draft.resource) if draft.resource else None)
    return InputBlock(
        block_id=ids.RESOURCE_BLOCK,
        label=tr("Resource"),
        hint=truncate(_governed(draft.namespace, [short_name(choice.resource) for choice in choices]), 2000),
        element=PlainTextInputElement(action_id=ids.INPUT_ACTION, initial_value=typed),
    )


def _choice_text(choice: ResourceChoice, choices: Sequence[ResourceChoice]) -> str:
    """``mig-3g.40gb: 2 of 4 in use``; the full name where two resources share a short one (nvidia.com/gpu, amd.com/gpu)."""
    short = short_name(choice.resource)
    shared = sum(short_name(other.resource) == short for other in choices) > 1
    name = choice.resource if shared else short
    if choice.hard is None:
        return tr("{resource}: quota not known", resource=name)
    if choice.used is None:
        return tr("{resource}: quota {hard}", resource=name, hard=choice.hard)
    return tr("{resource}: {used} of {hard} in use", resource=name, used=choice.used, hard=choice.hard)


def _governed(namespace: str | None, names: Sequence[str]) -> str:
    if namespace:
        return tr("Governed in {namespace}: {resources}", namespace=namespace, resources=listed_text(names))
    return tr("Governed: {resources}", resources=listed_text(names))


def _reason_input(reason: str, *, optional: bool = False) -> InputBlock:
    return InputBlock(
        block_id=ids.REASON_BLOCK,
        label=tr("Reason"),
        optional=optional,
        hint=tr("Approvers read this; the audit trail keeps it."),
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
        title=truncate(tr("Deny {request}", request=display), 24),
        submit=tr("Deny"),
        close=tr("Keep it"),
        private_metadata=json.dumps({"request_id": request_id}),
        blocks=[
            InputBlock(
                block_id=ids.REASON_BLOCK,
                label=tr("Why?"),
                hint=tr("Posted in the request's thread and sent to the requester."),
                element=PlainTextInputElement(action_id=ids.INPUT_ACTION, multiline=True, max_length=500),
            )
        ],
    )
