"""The words of the bot's mail: a budget warning and the monthly close, as a subject and a plain-text body,
and the labels of the chart attached to them, in the current language (``bot.adapters.i18n``: the mail
adapter speaks the team's language while it words a mail).

Every sentence is a catalog entry, whole, with named placeholders; names (a team's label, a namespace)
are shown as they are. Plain text: no markup, no emoji (a mail client shows them as typed).
"""

from __future__ import annotations

from datetime import date, tzinfo

from babel.lists import format_list

from bot.adapters.chart import ChartWords
from bot.adapters.i18n import (
    format_day,
    format_moment,
    format_money,
    format_month,
    format_number,
    format_share,
    locale,
    tr,
    tr_n,
)
from bot.services.mail_messages import BudgetWarningMail, MailMessage, MonthlyCloseMail


def subject(mail: MailMessage) -> str:
    """The mail's subject line."""
    if isinstance(mail, MonthlyCloseMail):
        return tr(
            "GPU cost of {team} for {month}: {spent} of {budget} ({share})",
            team=mail.team_label,
            month=format_month(mail.month),
            spent=format_money(mail.spent, mail.currency),
            budget=format_money(mail.budget, mail.currency),
            share=format_share(mail.spent / mail.budget),
        )
    warning = mail.warning
    values = {"team": warning.team_label, "month": format_month(mail.day), "share": format_share(warning.spent / warning.budget)}
    if warning.threshold is None:
        return tr("GPU budget: {team} is on course to overspend its budget for {month}", **values)
    if warning.threshold >= 100:
        return tr("GPU budget: {team} has used up its budget for {month} ({share})", **values)
    return tr("GPU budget: {team} has used {share} of its budget for {month}", **values)


def body(mail: MailMessage, *, zone: tzinfo) -> str:
    """The mail's plain text: paragraphs separated by blank lines, ending with why the reader gets it."""
    paragraphs = _close(mail) if isinstance(mail, MonthlyCloseMail) else _warning(mail, zone)
    paragraphs.append(
        tr(
            "You get this mail because the GPU quota policy lists this address for {team} (budget.mail).",
            team=mail.team_label if isinstance(mail, MonthlyCloseMail) else mail.warning.team_label,
        )
    )
    return "\n\n".join(paragraphs) + "\n"


def chart_words(mail: MailMessage) -> ChartWords:
    """The attached chart's title, axis and legend."""
    if isinstance(mail, MonthlyCloseMail):
        team, month, currency = mail.team_label, mail.month, mail.currency
    else:
        team, month, currency = mail.warning.team_label, mail.day, mail.warning.currency
    return ChartWords(
        title=tr("{team}: GPU cost of each day, {month}", team=team, month=format_month(month)),
        axis=tr("GPU cost ({currency})", currency=currency),
        month=format_month(month),
        pace=tr("Budget's daily pace ({pace})", pace=format_money(mail.pace, currency)),
        others=tr("Other namespaces"),
    )


def attachment_name(mail: MailMessage) -> str:
    """The chart's file name (no words: the same in every language)."""
    if isinstance(mail, MonthlyCloseMail):
        return f"gpu-cost-{mail.team}-{mail.month:%Y-%m}.png"
    return f"gpu-cost-{mail.team}-{mail.day.isoformat()}.png"


def _warning(mail: BudgetWarningMail, zone: tzinfo) -> list[str]:
    warning = mail.warning
    money = {
        "team": warning.team_label,
        "month": format_month(mail.day),
        "spent": format_money(warning.spent, warning.currency),
        "budget": format_money(warning.budget, warning.currency),
        "share": format_share(warning.spent / warning.budget),
    }
    if warning.threshold is None:
        head = tr(
            "{team} is on course to overspend its GPU budget for {month}: {spent} of {budget} spent so far ({share}).", **money
        )
    else:
        head = tr(
            "{team} has used {share} of its monthly GPU budget for {month}: {spent} of {budget} (warning threshold {threshold}).",
            threshold=format_share(warning.threshold / 100),
            **money,
        )
    lines = [
        head,
        tr(
            "Month-end forecast: {forecast}, {forecast_share} of the budget.",
            forecast=format_money(warning.forecast, warning.currency),
            forecast_share=format_share(warning.forecast / warning.budget),
        ),
    ]
    if warning.over_since is not None:
        lines.append(tr("It has been over budget since {day}.", day=format_day(warning.over_since)))
    elif warning.runs_out is not None:
        lines.append(tr("At the current burn the budget runs out around {moment}.", moment=format_moment(warning.runs_out, zone)))
    if warning.threshold is not None and warning.threshold >= 100:
        lines.append(tr("Until next month, each GPU quota increase for the team needs one more approval."))
    return [
        "\n".join(lines),
        tr(
            "The attached chart shows the GPU cost of each day this month against the budget's daily pace ({pace}).",
            pace=format_money(mail.pace, warning.currency),
        ),
        tr("The team's Slack channel got this warning too."),
    ]


def _close(mail: MonthlyCloseMail) -> list[str]:
    spent, budget = format_money(mail.spent, mail.currency), format_money(mail.budget, mail.currency)
    month = format_month(mail.month)
    figures = [
        tr(
            "Spent: {spent} of a monthly budget of {budget} ({share}).",
            spent=spent,
            budget=budget,
            share=format_share(mail.spent / mail.budget),
        )
    ]
    if mail.over_since is not None:
        figures.append(tr("The team went over its budget on {day}.", day=format_day(mail.over_since)))
    else:
        figures.append(tr("The team stayed within its budget."))
    figures.append(
        tr(
            "GPU-hours: {hours}, of which idle: {idle} (costing {idle_cost}).",
            hours=format_number(mail.gpu_hours, digits=1),
            idle=format_number(mail.idle_hours, digits=1),
            idle_cost=format_money(mail.idle_cost, mail.currency),
        )
    )
    if mail.missing:
        figures.append(
            tr_n(
                "No metrics were recorded for {days}: that day is not counted.",
                "No metrics were recorded for {days}: those days are not counted.",
                len(mail.missing),
                days=_days(mail.missing),
            )
        )
    paragraphs = [tr("The final GPU cost of {team} for {month}, from the bot's cost ledger.", team=mail.team_label, month=month)]
    paragraphs.append("\n".join(figures))
    if mail.namespaces:
        rows = [
            "  "
            + tr(
                "{namespace}: {cost} ({hours} GPU-h)",
                namespace=line.namespace,
                cost=format_money(line.cost, mail.currency),
                hours=format_number(line.gpu_hours, digits=1),
            )
            for line in mail.namespaces
        ]
        paragraphs.append("\n".join([tr("By namespace:"), *rows]))
    else:
        paragraphs.append(tr("No namespace of the team used GPUs this month."))
    paragraphs.append(
        tr(
            "The attached chart shows the GPU cost of each day of the month against the budget's daily pace ({pace}).",
            pace=format_money(mail.pace, mail.currency),
        )
    )
    return paragraphs


def _days(days: tuple[date, ...]) -> str:
    return format_list([format_day(day) for day in days], locale=locale())
