"""``/gpu-quota``: one slash command with subcommands; ``ack()`` first, slow work after.

Every answer is in the reader's language: the help (a table of catalog ids, translated where shown),
the answer to a command that could not be understood (``input_words``), and the headers and
sentences of the answers given after the acknowledgement. Commands and keywords stay as typed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, assert_never

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.adapters.i18n import N_, format_duration, tr
from bot.adapters.slack import blocks, doctor_words, ids, input_words, why_words
from bot.adapters.slack.events import SlashCommand
from bot.adapters.slack.mrkdwn import escape, render
from bot.adapters.slack.replies import cost_lines, reply_text
from bot.adapters.slack.sentences import fill
from bot.domain.commands import (
    COMMANDS,
    AuditCommand,
    CancelCommand,
    CostCommand,
    DoctorCommand,
    ExtendCommand,
    HelpCommand,
    ListCommand,
    Malformed,
    ReleaseCommand,
    RequestCommand,
    RetryCommand,
    ShiftCommand,
    StatusCommand,
    WhyCommand,
    parse_command,
)
from bot.domain.durations import MAX_DURATION
from bot.services.why import PickAPod
from handlers.outcome import attempt, busy, expired
from handlers.replies import open_extend_form, open_request_form, open_shift_form, open_view, reply_privately, submitted_text

if TYPE_CHECKING:
    from bot.executor import TrackingExecutor
    from bot.services.container import Services

log = logging.getLogger(__name__)

# What each command does (catalog ids, translated where shown; ``{longest}``: the longest duration).
HELP = {
    "request": N_(
        "Ask for GPUs: `+4` more, `-2` fewer or `8` in total; then either `for 3d` (90m, 12h, 3d or 2w, "
        "at most {longest}) or the word `permanent` (a new base quota; nothing else makes a change permanent). "
        "Examples: `/gpu-quota request ai-frontier-research +4 for 3d fine-tune on the new corpus`, "
        "`/gpu-quota request biz-model-serving +2 permanent new serving replica`. "
        "Where a namespace governs several resources (MIG profiles, say), name one after the amount: "
        "`/gpu-quota request ai-frontier-research +2 mig-3g.40gb for 1d eval sweep`; without it, a form asks which."
    ),
    "shift": N_(
        "Move GPUs from one namespace to another as one request: the source is lowered first, the target is raised "
        "by what the source gave up. Running pods keep running; the source's usage drains as jobs finish. "
        "Example: `/gpu-quota shift 3 from ai-frontier-research to biz-model-serving for 30d validated models need serving` "
        "(name a resource before `for` to move something else than whole GPUs: "
        "`... to biz-model-serving mig-3g.40gb for 30d ...`). Without arguments it opens a form."
    ),
    "status": N_("Quota (hard/used), active grants and pending requests of a namespace, or of your teams' namespaces."),
    "list": N_("Pending requests you made or may decide."),
    "cancel": N_("Withdraw your pending request."),
    "release": N_("End a grant early and give the GPUs back."),
    "extend": N_("Ask for more time on an active grant (needs approval like a new request)."),
    "retry": N_("Admins: apply a failed request again."),
    "cost": N_(
        "GPU-hours, cost, idle cost, budget and GPU models of your teams (or a team or namespace) this month "
        "or in YYYY-MM, from the cost ledger."
    ),
    "audit": N_("The audit trail of a namespace or a request."),
    "doctor": N_(
        "Admins: the GPU stack's checklist (device plugin, GPU nodes, MIG, exporters, quotas), each with its evidence and fix."
    ),
    "why": N_(
        "Why a GPU pod (or a Job, Deployment or Kueue Workload) is pending: each cause with its evidence and fix. "
        "Without a pod name, a form lists the namespace's pending GPU pods. Reads only."
    ),
    "help": N_("This help."),
}


def _help_of(command: str) -> str:
    """What ``command`` does, in the current language (plain text: escaped where it is shown)."""
    return tr(HELP[command], longest=format_duration(MAX_DURATION))


def help_text(topic: str | None = None) -> str:
    """The help (mrkdwn): every command's usage and what it does, or one command's."""
    if topic in HELP:
        return render(input_words.usage_line(topic)) + "\n" + escape(_help_of(topic))
    lines = [tr("*gpu-quota-bot*: ask for GPU quota, approve it in the thread, and see what it costs.")]
    lines += [render(fill("• {usage}: {help}", usage=input_words.usage_line(name), help=_help_of(name))) for name in COMMANDS]
    return "\n".join(lines)


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    @app.command(ids.SLASH_COMMAND)
    def on_gpu_quota(ack: Ack, command: dict[str, Any], respond: Respond, client: WebClient) -> None:
        slash = SlashCommand.from_payload(command)
        parsed = parse_command(slash.text)
        if isinstance(parsed, Malformed):
            log.info("malformed command from %s: %r", slash.user_id, slash.text)
            ack(text=input_words.malformed_text(parsed))
            return
        if isinstance(parsed, HelpCommand):
            ack(text=help_text(parsed.topic))
            return
        deferred: Deferred = parsed
        work.hand_off(
            lambda: handle(services, slash, deferred, respond, client),
            ack=ack,
            busy_ack=lambda: ack(text=busy()),
            expired=lambda: reply_privately(respond, expired()),
            interaction="command",
        )


# The commands answered after the acknowledgement (help and malformed text are answered in it).
Deferred = (
    RequestCommand
    | ShiftCommand
    | StatusCommand
    | ListCommand
    | CancelCommand
    | ReleaseCommand
    | ExtendCommand
    | RetryCommand
    | AuditCommand
    | CostCommand
    | DoctorCommand
    | WhyCommand
)


def handle(services: Services, slash: SlashCommand, parsed: Deferred, respond: Respond, client: WebClient) -> None:
    """Everything after the acknowledgement: may talk to Kubernetes and Slack."""
    user = slash.user_id

    def reply(work: Callable[[], str | list[str]], what: str, *, header: str | None = None) -> None:
        reply_privately(respond, attempt(work, user=user, what=what), header=header)

    match parsed:
        case RequestCommand(draft=draft) if not draft.complete or services.submissions.needs_resource(draft):
            open_request_form(services, user, draft, client, respond, trigger_id=slash.trigger_id, channel_id=slash.channel_id)
        case RequestCommand(draft=draft):
            reply(lambda: submitted_text(services.submissions.submit(requester=user, draft=draft)), "request")
        case ExtendCommand(request_id=request_id, problems=problems, reason=reason) if problems:
            refused = attempt(lambda: services.submissions.check_extendable(request_id), user=user, what="extend")
            if refused is not None:
                reply_privately(respond, refused)
                return
            open_extend_form(client, respond, slash.trigger_id, request_id, problems=problems, reason=reason)
        case ExtendCommand(request_id=request_id, duration=duration, reason=reason):
            assert duration is not None, "an extend command without a valid duration opens the form"
            reply(
                lambda: submitted_text(
                    services.submissions.extend(requester=user, request_id=request_id, duration=duration, reason=reason)
                ),
                "extend",
            )
        case ShiftCommand(draft=None):
            open_shift_form(client, respond, slash.trigger_id)
        case ShiftCommand(draft=shift):
            assert shift is not None, "a shift without a draft opens the form (the case above)"
            reply(lambda: submitted_text(services.shifts.submit(requester=user, draft=shift)), "shift")
        case StatusCommand(namespace=namespace):
            reply(
                lambda: blocks.status_lines(services.queries.status(user=user, namespace=namespace)),
                "status",
                header=tr("GPU quota status"),
            )
        case ListCommand():
            reply(
                lambda: (
                    [blocks.pending_line(p) for p in services.queries.pending_for(user=user)] or [tr("Nothing pending for you.")]
                ),
                "list",
                header=tr("Pending requests"),
            )
        case AuditCommand(namespace=audited, request_id=audited_request):
            reply(
                lambda: (
                    blocks.audit_lines(services.queries.audit(user=user, namespace=audited, request_id=audited_request))
                    or [tr("No entries yet.")]
                ),
                "audit",
                header=tr("Audit trail"),
            )
        case CostCommand():
            reply(lambda: _cost(services, user, parsed), "cost", header=tr("GPU cost"))
        case DoctorCommand(cluster=cluster):
            reply(lambda: _doctor(services, user, cluster), "doctor", header=tr("GPU stack checkup"))
        case CancelCommand(request_id=request_id):
            reply(lambda: reply_text(services.lifecycle.cancel(user=user, request_id=request_id)), "cancel")
        case ReleaseCommand(request_id=request_id):
            reply(lambda: reply_text(services.lifecycle.release(user=user, request_id=request_id)), "release")
        case RetryCommand(request_id=request_id):
            reply(lambda: reply_text(services.lifecycle.retry(user=user, request_id=request_id)), "retry")
        case WhyCommand():
            _why(services, slash, parsed, respond, client)
        case _:
            assert_never(parsed)


def _cost(services: Services, user: str, parsed: CostCommand) -> list[str]:
    if services.costs is None:
        return [tr("Costs need Prometheus (PROMETHEUS_URL), which this bot is not connected to.")]
    answers = services.costs.answer(user=user, target=parsed.target, month=parsed.month)
    return [text for answer in answers for text in cost_lines(answer, services.policy.pricing.currency)]


def _doctor(services: Services, user: str, cluster: str | None) -> list[str]:
    if services.doctor is None:
        return [tr("The checklist is not wired in this bot.")]
    names = {part: services.policy.cluster_label(part) for part in services.policy.cluster_names()}
    return doctor_words.slack_lines(services.doctor.for_admin(user=user, cluster=cluster), names)


def _why(services: Services, slash: SlashCommand, parsed: WhyCommand, respond: Respond, client: WebClient) -> None:
    """The answer, or the form to pick a pending pod (its list as text when the form cannot open)."""
    why = services.why
    if why is None:
        reply_privately(respond, tr("This bot is not set up to answer `why`."))
        return
    outcome = attempt(
        lambda: why.answer(user=slash.user_id, target=parsed.target, name=parsed.name), user=slash.user_id, what="why"
    )
    if isinstance(outcome, str):
        reply_privately(respond, outcome)
        return
    if isinstance(outcome, PickAPod) and outcome.pods:
        answer = why_words.why_text(outcome)
        open_view(
            client, lambda text: reply_privately(respond, text), slash.trigger_id, why_words.pick_form(outcome), instead=answer
        )
        return
    response = respond(
        text=blocks.truncate(why_words.why_text(outcome), 3000),
        blocks=why_words.why_blocks(outcome),
        response_type="ephemeral",
        replace_original=False,
    )
    if response.status_code != 200:
        log.error("Slack refused the why answer (HTTP %s)", response.status_code)
