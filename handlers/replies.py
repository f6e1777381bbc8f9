"""What every listener answers with: an ephemeral reply, a form opened, what a submission became.

Shared by the command, button and form listeners, so that no listener module imports another.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Respond
from slack_sdk import WebClient

from bot.adapters.slack import blocks, modals
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.notifier import slack_call
from bot.domain.commands import USAGE, RequestDraft
from bot.errors import GpuQuotaError
from bot.services.text import Channel, Notice
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
    """What the requester sees right after submitting."""
    where = render(Notice((Channel(submitted.channel_id),)))
    # What happened to the quota comes first: an auto-approval is applied even while its card waits for Slack.
    if submitted.state == "applied":
        return f":white_check_mark: {submitted.display_id} was auto-approved and applied; details in {where}."
    if submitted.state == "failed":
        return f":x: {submitted.display_id} was auto-approved but could not be applied; the reason is in its thread in {where}."
    if submitted.post_waits:
        return (
            f":hourglass_flowing_sand: {submitted.display_id} is saved; Slack asked the bot to slow down, so its card "
            f"appears in {where} in a moment."
        )
    if submitted.post_error:
        return (
            f":warning: {submitted.display_id} is saved, but Slack would not post it in {where}: {submitted.post_error}. "
            "The bot will keep trying; tell a platform admin if this persists."
        )
    needed = submitted.approvals_required
    return f":inbox_tray: {submitted.display_id} submitted and posted in {where} for approval ({needed} approval{'s' if needed != 1 else ''} needed)."


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
        instead=f"Type the whole command instead: `/gpu-quota {USAGE['shift']}`",
    )


def open_extend_form(client: WebClient, respond: Respond, trigger_id: str | None, request_id: int, **prefill: Any) -> None:
    open_view(
        client, lambda text: reply_privately(respond, text), trigger_id, modals.extend_form(request_id, duration=None, **prefill)
    )


def open_view(client: WebClient, answer: Callable[[str], None], trigger_id: str | None, view: Any, *, instead: str = "") -> None:
    """Open ``view``; when Slack refuses (an expired trigger), ``answer`` tells the person what to do instead."""
    instead = instead or f"Type the whole command instead: `/gpu-quota {USAGE['request']}`"
    try:
        slack_call("open the form", lambda: client.views_open(trigger_id=trigger_id, view=view))
    except GpuQuotaError as error:
        answer(f":warning: Could not open the form ({error}). {instead}")
