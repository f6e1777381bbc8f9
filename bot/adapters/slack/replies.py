"""What the person who acted reads: a use case's outcome (``bot.services.outcomes``) and the ledger's
``cost`` answer in words and mrkdwn, in the current language (``bot.adapters.i18n``).

Each outcome is one whole sentence (``fill``, a catalog entry); every value that came from outside the
bot's own words (a namespace, a team's label, the API server's reason) is escaped by ``mrkdwn.render``;
nothing here decides anything.
"""

from __future__ import annotations

from typing import assert_never

from bot.adapters.i18n import format_gpus, format_money, format_month, format_number, format_share
from bot.adapters.slack import capacity_words, reasons
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.resource_words import day_ranges, hours_and_cost, hours_of, resource_line, short_day
from bot.adapters.slack.sentences import fill
from bot.domain.lifecycle import RequestState
from bot.services.ledger import CostAnswer
from bot.services.outcomes import Cancelled, Decided, Decision, Release, Released, Retried
from bot.services.text import Notice, Strong

Outcome = Decided | Cancelled | Released | Retried


def reply_text(outcome: Outcome) -> str:
    """The line shown to the person (ephemeral, in a form, or on the Home tab)."""
    match outcome:
        case Decided():
            return render(_decided(outcome))
        case Cancelled():
            return render(_is(outcome.display_id, RequestState.CANCELLED))
        case Released():
            return render(_released(outcome))
        case Retried():
            return render(_is(outcome.display_id, outcome.state))
        case _:
            assert_never(outcome)


def _decided(decided: Decided) -> Notice:
    request = decided.display_id
    match decided.decision:
        case Decision.DENIED:
            return fill("You denied {request}.", request=request)
        case Decision.COMPLETED:
            return _approved(request, decided.state)
        case Decision.REFUSED:
            if decided.failure_reason is None:
                return fill("You approved {request}, but it cannot be applied.", request=request)
            return fill(
                "You approved {request}, but it cannot be applied: {reason}.",
                request=request,
                reason=reasons.notice(decided.failure_reason),
            )
        case Decision.COUNTED:
            return fill(
                "You approved {request} ({approvals} of {required}); it needs {more} more.",
                request=request,
                approvals=format_number(decided.approvals),
                required=format_number(decided.approvals_required),
                more=format_number(decided.approvals_required - decided.approvals),
            )
        case _:
            assert_never(decided.decision)


def _is(request: str, state: RequestState) -> Notice:
    """``GQ-1 is applied.``: where a request stands after the person's action."""
    match state:
        case RequestState.PENDING:
            return fill("{request} is pending.", request=request)
        case RequestState.APPROVED:
            return fill("{request} is approved.", request=request)
        case RequestState.APPLIED:
            return fill("{request} is applied.", request=request)
        case RequestState.FAILED:
            return fill("{request} is failed.", request=request)
        case RequestState.DENIED:
            return fill("{request} is denied.", request=request)
        case RequestState.CANCELLED:
            return fill("{request} is cancelled.", request=request)
        case RequestState.EXPIRED:
            return fill("{request} is expired.", request=request)
        case _:
            assert_never(state)


def _approved(request: str, state: RequestState) -> Notice:
    """The last approval, and what the apply that followed left the request in."""
    match state:
        case RequestState.PENDING:
            return fill("You approved {request}; it is pending.", request=request)
        case RequestState.APPROVED:
            return fill("You approved {request}; it is approved.", request=request)
        case RequestState.APPLIED:
            return fill("You approved {request}; it is applied.", request=request)
        case RequestState.FAILED:
            return fill("You approved {request}; it is failed.", request=request)
        case RequestState.DENIED:
            return fill("You approved {request}; it is denied.", request=request)
        case RequestState.CANCELLED:
            return fill("You approved {request}; it is cancelled.", request=request)
        case RequestState.EXPIRED:
            return fill("You approved {request}; it is expired.", request=request)
        case _:
            assert_never(state)


def _released(released: Released) -> Notice:
    values = {
        "request": released.display_id,
        "gpus": format_gpus(released.gpus),
        "namespace": released.namespace,
        "source": released.source_namespace or "",
    }
    match released.how:
        case Release.SOURCE_GIVEN_BACK:
            return fill("{request}: {gpus} given back to {source}.", **values)
        case Release.PENDING:
            return fill("Released {request}; the quota could not be put back yet and the bot keeps retrying.", **values)
        case Release.SHIFT_RETURNED:
            return fill("Released {request}: {namespace} gives the {gpus} it was shifted back to {source}.", **values)
        case Release.RETURNED:
            return fill("Released {request}: {gpus} given back to {namespace}.", **values)
        case _:
            assert_never(released.how)


# --- /gpu-quota cost ---------------------------------------------------------------------------


def cost_lines(answer: CostAnswer, currency: str) -> list[str]:
    """The answer of ``/gpu-quota cost`` as lines of mrkdwn."""
    lines = [_cost_head(answer, currency)]
    line = answer.line
    if line is not None:
        idle = hours_and_cost(line.idle_hours, line.idle_cost, currency)
        if line.utilisation is None:
            lines.append(fill("Idle (samples under the threshold): {idle} · average utilisation n/a", idle=idle))
        else:
            lines.append(
                fill(
                    "Idle (samples under the threshold): {idle} · average utilisation {utilisation}",
                    idle=idle,
                    utilisation=format_share(line.utilisation),
                )
            )
        lines += [
            fill("{model}: {use}", model=model, use=hours_and_cost(hours, cost, currency))
            for model, (hours, cost) in sorted(line.by_model.items(), key=lambda item: item[1][1], reverse=True)
        ]
        lines += [resource_line(resource, figures, currency) for resource, figures in sorted(line.other_resources.items())]
        lines += capacity_words.placement_lines(line, currency)
    lines += capacity_words.split_unavailable_notes(answer.unsplit)
    if answer.missing:
        lines.append(fill("No metrics for {days}: not counted.", days=day_ranges(answer.missing)))
    lines += [
        fill("No metrics for {cluster} on {days}: not counted.", cluster=cluster, days=day_ranges(days))
        for cluster, days in sorted(answer.missing_in.items())
    ]
    return [render(notice) for notice in lines]


def _cost_head(answer: CostAnswer, currency: str) -> Notice:
    """``*Research* · November 2026 (through Nov 2): 24.0 GPU-h · 48.00 USD of 1,000.00 USD (5%)``."""
    values: dict[str, str | Strong] = {"scope": Strong(answer.scope), "month": format_month(answer.month)}
    through = answer.recorded_through
    if through is not None:
        values["through"] = short_day(through)
    line = answer.line
    if line is None:
        if through is None:
            return fill("{scope} · {month}: nothing recorded.", **values)
        return fill("{scope} · {month} (through {through}): nothing recorded.", **values)
    values |= {"hours": hours_of(line.by_resource, line.gpu_hours), "cost": format_money(line.cost, currency)}
    if not answer.budget:
        if through is None:
            return fill("{scope} · {month}: {hours} · {cost}", **values)
        return fill("{scope} · {month} (through {through}): {hours} · {cost}", **values)
    values |= {"budget": format_money(answer.budget, currency), "percent": format_share(line.cost / answer.budget)}
    if through is None:
        return fill("{scope} · {month}: {hours} · {cost} of {budget} ({percent})", **values)
    return fill("{scope} · {month} (through {through}): {hours} · {cost} of {budget} ({percent})", **values)
