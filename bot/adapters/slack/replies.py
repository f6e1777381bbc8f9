"""What the person who acted reads: a use case's outcome (``bot.services.outcomes``) in words and mrkdwn.

Every value that came from outside the bot's own words (a namespace, the API server's reason) goes
through ``mrkdwn.escape``; nothing here decides anything.
"""

from __future__ import annotations

from typing import assert_never

from bot.adapters.slack import reasons
from bot.adapters.slack.mrkdwn import escape, render
from bot.adapters.slack.resource_words import hours_of, resource_line
from bot.services.ledger import CostAnswer, day_ranges
from bot.services.outcomes import Cancelled, Decided, Decision, Release, Released, Retried
from bot.services.text import gpus, money

Outcome = Decided | Cancelled | Released | Retried


def reply_text(outcome: Outcome) -> str:
    """The line shown to the person (ephemeral, in a form, or on the Home tab)."""
    match outcome:
        case Decided():
            return _decided(outcome)
        case Cancelled():
            return f"{outcome.display_id} is cancelled."
        case Released():
            return _released(outcome)
        case Retried():
            return f"{outcome.display_id} is {outcome.state}."
        case _:
            assert_never(outcome)


def _decided(decided: Decided) -> str:
    display = decided.display_id
    match decided.decision:
        case Decision.DENIED:
            return f"You denied {display}."
        case Decision.COMPLETED:
            return f"You approved {display}; it is {decided.state}."
        case Decision.REFUSED:
            reason = reasons.render(decided.failure_reason) if decided.failure_reason else ""
            return f"You approved {display}, but it cannot be applied: {reason}."
        case Decision.COUNTED:
            more = decided.approvals_required - decided.approvals
            return f"You approved {display} ({decided.approvals} of {decided.approvals_required}); it needs {more} more."
        case _:
            assert_never(decided.decision)


def _released(released: Released) -> str:
    display, namespace, source = released.display_id, escape(released.namespace), escape(released.source_namespace or "")
    match released.how:
        case Release.SOURCE_GIVEN_BACK:
            return f"{display}: {gpus(released.gpus)} given back to {source}."
        case Release.PENDING:
            return f"Released {display}; the quota could not be put back yet and the bot keeps retrying."
        case Release.SHIFT_RETURNED:
            return f"Released {display}: {namespace} gives the {gpus(released.gpus)} it was shifted back to {source}."
        case Release.RETURNED:
            return f"Released {display}: {gpus(released.gpus)} given back to {namespace}."
        case _:
            assert_never(released.how)


def cost_lines(answer: CostAnswer, currency: str) -> list[str]:
    """The answer of ``/gpu-quota cost`` as lines of mrkdwn."""
    through = f" (through {answer.recorded_through:%d %b})" if answer.recorded_through else ""
    head = f"*{answer.scope}* · {answer.month:%B %Y}{through}"
    if answer.line is None:
        lines = [f"{head}: nothing recorded."]
    else:
        line = answer.line
        budget = f" of {money(answer.budget, currency)} ({line.cost / answer.budget:.0%})" if answer.budget else ""
        utilisation = "n/a" if line.utilisation is None else f"{line.utilisation:.0%}"
        lines = [
            f"{head}: {escape(hours_of(line.by_resource, line.gpu_hours))} · {money(line.cost, currency)}{budget}",
            f"Idle (samples under the threshold): {line.idle_hours:,.1f} GPU-h · {money(line.idle_cost, currency)}"
            f" · average utilisation {utilisation}",
        ]
        lines += [
            f"{model}: {hours:,.1f} GPU-h · {money(cost, currency)}"
            for model, (hours, cost) in sorted(line.by_model.items(), key=lambda item: item[1][1], reverse=True)
        ]
        lines += [
            render(resource_line(resource, figures, currency)) for resource, figures in sorted(line.other_resources.items())
        ]
    if answer.missing:
        lines.append(f"No metrics for {day_ranges(answer.missing)}: not counted.")
    lines += [
        f"No metrics for {escape(cluster)} on {day_ranges(days)}: not counted."
        for cluster, days in sorted(answer.missing_in.items())
    ]
    return lines
