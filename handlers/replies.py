"""What every listener answers with: an ephemeral reply, a form opened, what a submission became.

Shared by the command, button and form listeners, so that no listener module imports another. The
words are whole catalog sentences in the reader's language; Slack's own error text is quoted as a
detail, as it said it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Respond
from slack_sdk import WebClient

from bot.adapters.slack import blocks, input_words, modals
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.notifier import slack_call
from bot.adapters.slack.sentences import fill, fill_n
from bot.domain.commands import RequestDraft
from bot.domain.input_problems import InputProblem
from bot.errors import GpuQuotaError
from bot.services.text import Channel
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.services.container import Services

log = logging.getLogger(__name__)


def reply_privately(respond: Respond, answer: str | list[str], *, header: str | None = None) -> None:
    """An ephemeral answer to the person, packed to fit Block Kit limits."""
    lines = [answer] if isinstance(answer, str) else answer
    text = "\n".join(lines)
    response = respond(
        text=blocks.truncate(text, 3000),
        blocks=blocks.lines_to_blocks(lines, title=header),
        response_type="ephemeral",
        replace_original=False,
    )
    if response.status_code != 200:
        log.error("Slack refused the response (HTTP %s)", response.status_code)


def submitted_text(submitted: Any) -> str:
    """What the requester sees right after submitting (mrkdwn)."""
    values = {"request": submitted.display_id, "channel": Channel(submitted.channel_id)}
    # What happened to the quota comes first: an auto-approval is applied even while its card waits for Slack.
    if submitted.state == "applied":
        said = fill(":white_check_mark: {request} was auto-approved and applied; details in {channel}.", **values)
    elif submitted.state == "failed":
        said = fill(
            ":x: {request} was auto-approved but could not be applied; the reason is in its thread in {channel}.", **values
        )
    elif submitted.post_waits:
        said = fill(
            ":hourglass_flowing_sand: {request} is saved; Slack asked the bot to slow down, so its card appears in {channel}"
            " in a moment.",
            **values,
        )
    elif submitted.post_error:
        said = fill(
            ":warning: {request} is saved, but Slack would not post it in {channel}: {detail}. The bot will keep trying;"
            " tell a platform admin if this persists.",
            detail=str(submitted.post_error),
            **values,
        )
    else:
        said = fill_n(
            ":inbox_tray: {request} submitted and posted in {channel} for approval ({count} approval needed).",
            ":inbox_tray: {request} submitted and posted in {channel} for approval ({count} approvals needed).",
            submitted.approvals_required,
            **values,
        )
    return render(said)


def open_request_form(
    services: Services,
    user: str,
    draft: RequestDraft,
    client: WebClient,
    respond: Respond,
    *,
    trigger_id: str | None,
    channel_id: str | None,
) -> None:
    """The request form, prefilled with ``draft``, its namespace list limited to what ``user`` may request for
    and, when the draft's namespace governs several resources, a choice of them with their quota today."""
    namespaces = attempt(lambda: services.access.requestable_namespaces(user), user=user, what="request form")
    if isinstance(namespaces, str):
        reply_privately(respond, namespaces)
        return
    resources = services.submissions.resource_choices(draft.namespace) if draft.namespace in namespaces else ()
    open_view(
        client,
        lambda text: reply_privately(respond, text),
        trigger_id,
        modals.request_form(draft, namespaces, channel_id=channel_id, resources=resources),
    )


def open_shift_form(client: WebClient, respond: Respond, trigger_id: str | None, **prefill: Any) -> None:
    """The shift form, prefilled (a proposal's button names source, target and GPUs)."""
    open_view(
        client,
        lambda text: reply_privately(respond, text),
        trigger_id,
        modals.shift_form(**prefill),
        instead=type_instead("shift"),
    )


def open_extend_form(
    client: WebClient,
    respond: Respond,
    trigger_id: str | None,
    request_id: int,
    *,
    problems: tuple[InputProblem, ...] = (),
    **prefill: Any,
) -> None:
    """The extend form; ``problems``: what was wrong with a typed ``extend`` (shown above its fields)."""
    open_view(
        client,
        lambda text: reply_privately(respond, text),
        trigger_id,
        modals.extend_form(request_id, duration=None, problems=problems, **prefill),
    )


def type_instead(command: str) -> str:
    """What to do when the form of ``command`` could not open (mrkdwn): type it whole."""
    return render(fill("Type the whole command instead: {usage}", usage=input_words.usage_line(command)))


def open_view(client: WebClient, answer: Callable[[str], None], trigger_id: str | None, view: Any, *, instead: str = "") -> None:
    """Open ``view``; when Slack refuses (an expired trigger), ``answer`` tells the person what to do instead
    (``instead``: mrkdwn, a sentence or more; by default, to type the whole ``request``)."""
    instead = instead or type_instead("request")
    try:
        slack_call("open the form", lambda: client.views_open(trigger_id=trigger_id, view=view))
    except GpuQuotaError as error:
        # ``instead`` is mrkdwn already (a sentence or a whole answer): it follows on a line of its own.
        answer(render(fill(":warning: Could not open the form ({detail}).", detail=str(error))) + "\n" + instead)
