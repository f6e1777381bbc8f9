"""``/gpu-quota``: one slash command with subcommands; ``ack()`` first, slow work after."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.adapters.slack import blocks, ids, modals
from bot.adapters.slack.events import SlashCommand
from bot.adapters.slack.mrkdwn import escape, render
from bot.adapters.slack.notifier import slack_call
from bot.domain.commands import (
    USAGE,
    AuditCommand,
    CancelCommand,
    CostCommand,
    ExtendCommand,
    HelpCommand,
    ListCommand,
    Malformed,
    ReleaseCommand,
    RequestCommand,
    RequestDraft,
    RetryCommand,
    ShiftCommand,
    StatusCommand,
    parse_command,
)
from bot.domain.durations import MAX_DURATION
from bot.errors import GpuQuotaError
from bot.executor import BUSY
from bot.services.ledger import cost_lines
from bot.services.text import Channel, Notice
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.executor import TrackingExecutor
    from bot.services.container import Services

log = logging.getLogger(__name__)

HELP = {
    "request": "Ask for GPUs: `+4` more, `-2` fewer or `8` in total; then either `for 3d` (90m, 12h, 3d or 2w, "
    f"at most {MAX_DURATION.days}d) or the word `permanent` (a new base quota; nothing else makes a change permanent). "
    "Examples: `/gpu-quota request ai-frontier-research +4 for 3d fine-tune on the new corpus`, "
    "`/gpu-quota request biz-model-serving +2 permanent new serving replica`",
    "shift": "Move GPUs from one namespace to another as one request: the source is lowered first, the target is raised "
    "by what the source gave up. Running pods keep running; the source's usage drains as jobs finish. "
    "Example: `/gpu-quota shift 3 from ai-frontier-research to biz-model-serving for 30d validated models need serving`. "
    "Without arguments it opens a form.",
    "status": "Quota (hard/used), active grants and pending requests of a namespace, or of your teams' namespaces.",
    "list": "Pending requests you made or may decide.",
    "cancel": "Withdraw your pending request.",
    "release": "End a grant early and give the GPUs back.",
    "extend": "Ask for more time on an active grant (needs approval like a new request).",
    "retry": "Admins: apply a failed request again.",
    "cost": "GPU-hours, cost, idle cost, budget and GPU models of your teams (or a team or namespace) this month "
    "or in YYYY-MM, from the cost ledger.",
    "audit": "The audit trail of a namespace or a request.",
    "help": "This help.",
}


def help_text(topic: str | None = None) -> str:
    if topic in HELP:
        return f"`/gpu-quota {USAGE[topic]}`\n{HELP[topic]}"
    lines = ["*gpu-quota-bot*: ask for GPU quota, approve it in the thread, and see what it costs."]
    lines += [f"• `/gpu-quota {USAGE[name]}`: {text}" for name, text in HELP.items()]
    return "\n".join(lines)


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    @app.command(ids.SLASH_COMMAND)
    def on_gpu_quota(ack: Ack, command: dict[str, Any], respond: Respond, client: WebClient) -> None:
        slash = SlashCommand.from_payload(command)
        parsed = parse_command(slash.text)
        if isinstance(parsed, Malformed):
            log.info("malformed command from %s: %r", slash.user_id, slash.text)
            ack(text=escape(parsed.message) + "\n" + "\n".join(f"`/gpu-quota {escape(u)}`" for u in parsed.usage))
            return
        if isinstance(parsed, HelpCommand):
            ack(text=help_text(parsed.topic))
            return
        work.hand_off(lambda: handle(services, slash, parsed, respond, client), ack=ack, busy_ack=lambda: ack(text=BUSY))


def handle(services: Services, slash: SlashCommand, parsed: Any, respond: Respond, client: WebClient) -> None:
    """Everything after the acknowledgement: may talk to Kubernetes and Slack."""
    user = slash.user_id
    if isinstance(parsed, RequestCommand) and not parsed.draft.complete:
        open_form(services, user, parsed.draft, client, respond, trigger_id=slash.trigger_id, channel_id=slash.channel_id)
        return
    if isinstance(parsed, ExtendCommand) and parsed.problems:
        refused = attempt(lambda: services.requests.check_extendable(parsed.request_id), user=user, what="extend")
        if refused is not None:
            say(respond, refused)
            return
        open_extend_form(client, respond, slash.trigger_id, parsed.request_id, problems=parsed.problems, reason=parsed.reason)
        return
    if isinstance(parsed, ShiftCommand):
        if parsed.draft is None:
            open_shift_form(client, respond, slash.trigger_id)
            return
        draft = parsed.draft
        say(
            respond, attempt(lambda: submitted_text(services.shifts.submit(requester=user, draft=draft)), user=user, what="shift")
        )
        return
    if isinstance(parsed, StatusCommand):
        answer = attempt(
            lambda: blocks.status_lines(services.queries.status(user=user, namespace=parsed.namespace)), user=user, what="status"
        )
        say(respond, answer, header="GPU quota status")
    elif isinstance(parsed, ListCommand):
        answer = attempt(
            lambda: [blocks.pending_line(p) for p in services.queries.pending_for(user=user)] or ["Nothing pending for you."],
            user=user,
            what="list",
        )
        say(respond, answer, header="Pending requests")
    elif isinstance(parsed, AuditCommand):
        answer = attempt(
            lambda: (
                blocks.audit_lines(services.queries.audit(user=user, namespace=parsed.namespace, request_id=parsed.request_id))
                or ["No entries yet."]
            ),
            user=user,
            what="audit",
        )
        say(respond, answer, header="Audit trail")
    elif isinstance(parsed, CostCommand):
        say(respond, attempt(lambda: _cost(services, user, parsed), user=user, what="cost"), header="GPU cost")
    elif isinstance(parsed, RequestCommand):
        say(
            respond,
            attempt(
                lambda: submitted_text(services.requests.submit(requester=user, draft=parsed.draft)), user=user, what="request"
            ),
        )
    elif isinstance(parsed, CancelCommand):
        say(respond, attempt(lambda: services.requests.cancel(user=user, request_id=parsed.request_id), user=user, what="cancel"))
    elif isinstance(parsed, ReleaseCommand):
        say(
            respond,
            attempt(lambda: services.requests.release(user=user, request_id=parsed.request_id), user=user, what="release"),
        )
    elif isinstance(parsed, RetryCommand):
        say(respond, attempt(lambda: services.requests.retry(user=user, request_id=parsed.request_id), user=user, what="retry"))
    elif isinstance(parsed, ExtendCommand):
        duration = parsed.duration
        assert duration is not None, "an extend command without a valid duration opens the form"
        say(
            respond,
            attempt(
                lambda: submitted_text(
                    services.requests.extend(
                        requester=user, request_id=parsed.request_id, duration=duration, reason=parsed.reason
                    )
                ),
                user=user,
                what="extend",
            ),
        )


def _cost(services: Services, user: str, parsed: CostCommand) -> list[str]:
    if services.costs is None:
        return ["Costs need Prometheus (PROMETHEUS_URL), which this bot is not connected to."]
    answers = services.costs.answer(user=user, target=parsed.target, month=parsed.month)
    return [text for answer in answers for text in cost_lines(answer, services.policy.pricing.currency)]


def submitted_text(submitted: Any) -> str:
    """What the requester sees right after submitting."""
    where = render(Notice((Channel(submitted.channel_id),)))
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
    if submitted.state == "applied":
        return f":white_check_mark: {submitted.display_id} was auto-approved and applied; details in {where}."
    if submitted.state == "failed":
        return f":x: {submitted.display_id} was auto-approved but could not be applied; the reason is in its thread in {where}."
    needed = submitted.approvals_required
    return f":inbox_tray: {submitted.display_id} submitted and posted in {where} for approval ({needed} approval{'s' if needed != 1 else ''} needed)."


def say(respond: Respond, answer: str | list[str], *, header: str | None = None) -> None:
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


def open_form(
    services: Services,
    user: str,
    draft: RequestDraft,
    client: WebClient,
    respond: Respond,
    *,
    trigger_id: str | None,
    channel_id: str | None,
) -> None:
    """The request form, prefilled with ``draft``, its namespace list limited to what ``user`` may request for."""
    namespaces = attempt(lambda: services.access.requestable_namespaces(user), user=user, what="request form")
    if isinstance(namespaces, str):
        say(respond, namespaces)
        return
    open_view(client, lambda text: say(respond, text), trigger_id, modals.request_form(draft, namespaces, channel_id=channel_id))


def open_shift_form(client: WebClient, respond: Respond, trigger_id: str | None, **prefill: Any) -> None:
    """The shift form, prefilled (a proposal's button names source, target and GPUs)."""
    open_view(
        client,
        lambda text: say(respond, text),
        trigger_id,
        modals.shift_form(**prefill),
        instead=f"Type the whole command instead: `/gpu-quota {USAGE['shift']}`",
    )


def open_extend_form(client: WebClient, respond: Respond, trigger_id: str | None, request_id: int, **prefill: Any) -> None:
    open_view(client, lambda text: say(respond, text), trigger_id, modals.extend_form(request_id, duration=None, **prefill))


def open_view(client: WebClient, answer: Callable[[str], None], trigger_id: str | None, view: Any, *, instead: str = "") -> None:
    """Open ``view``; when Slack refuses (an expired trigger), ``answer`` tells the person what to do instead."""
    instead = instead or f"Type the whole command instead: `/gpu-quota {USAGE['request']}`"
    try:
        slack_call("open the form", lambda: client.views_open(trigger_id=trigger_id, view=view))
    except GpuQuotaError as error:
        answer(f":warning: Could not open the form ({error}). {instead}")
