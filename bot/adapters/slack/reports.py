"""The words of the daily cost digest (``bot.services.reports``): a team's report, the organisation's
summary and their charts' title, axis and legend.

The digest arrives as figures; here they become sentences with named placeholders (``fill``, the
form a message catalog takes, #24), money, dates and percentages, and a ``Report`` of mrkdwn lines
that ``blocks.report_blocks`` lays out (the notifier posts it, ``digest --print`` prints it). Every
name in a line (a namespace, a GPU model, a team's label) is escaped by ``mrkdwn.render``; the title
is a header's plain text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import assert_never

from bot.adapters.chart import ChartWords, daily_cost_chart
from bot.adapters.slack import mrkdwn
from bot.adapters.slack.resource_words import hours_of, resource_line
from bot.adapters.slack.sentences import fill, join
from bot.domain.commands import format_request_id
from bot.domain.costs import CostLine
from bot.domain.resources import GPU
from bot.services.ledger import day_ranges
from bot.services.ports import Action
from bot.services.reports import ClusterCost, Digest, OrgDigest, TeamDigest
from bot.services.text import Moment, Notice, Strong, Words, money


@dataclass(frozen=True)
class ReportSection:
    heading: str | None = None
    lines: Sequence[str] = ()  # mrkdwn
    fields: Sequence[tuple[str, str]] = ()


@dataclass(frozen=True)
class Attachment:
    filename: str
    title: str
    content: bytes


@dataclass(frozen=True)
class Report:
    """A worded report: a header, a summary, sections and an optional file (a digest and its chart)."""

    title: str
    summary: str  # mrkdwn
    sections: Sequence[ReportSection] = ()
    attachment: Attachment | None = None
    actions: Sequence[Action] = field(default_factory=tuple)


def digest_report(digest: Digest, *, with_chart: bool = True) -> Report:
    """The digest in words, with its chart drawn (``with_chart``) as the attachment."""
    match digest:
        case TeamDigest():
            return team_report(digest, with_chart=with_chart)
        case OrgDigest():
            return org_report(digest, with_chart=with_chart)
        case _:
            assert_never(digest)


# --- a team's report ---------------------------------------------------------------------------


def team_report(digest: TeamDigest, *, with_chart: bool = True) -> Report:
    label, currency = digest.team.label, digest.currency
    sections = [ReportSection(heading="Per namespace", lines=_namespace_lines(digest))]
    if digest.clusters:
        sections.append(ReportSection(heading="Per cluster", lines=_cluster_lines(digest.clusters, currency)))
    month = digest.month_total
    if month is not None and month.other_resources:
        sections.append(ReportSection(heading="Per resource (month to date)", lines=_resource_lines(month, currency)))
    if month is not None and (GPU in month.by_resource or not month.other_resources):
        sections.append(ReportSection(heading="Per GPU model (month to date)", lines=_model_lines(month, currency)))
        sections.append(ReportSection(heading="Utilisation and idle GPUs (month to date)", lines=[_usage_line(month, currency)]))
    if digest.expiring:
        lines = [
            fill(
                "{request}: {gpus} GPUs in {namespace}, ends {at}",
                request=format_request_id(g.request_id),
                gpus=f"{g.gpus:+d}",
                namespace=g.namespace,
                at=Moment(g.ends_at),
            )
            for g in digest.expiring
        ]
        sections.append(ReportSection(heading="Grants ending in the next 24 h", lines=_rendered(lines)))
    if digest.top:
        sections.append(ReportSection(heading="Top consumers (month to date)", lines=_rendered(_ranked(digest.top, currency))))
    attachment = None
    if with_chart:
        words = ChartWords(
            title="{team}: GPU cost per day".format(team=label),
            axis=_axis(currency),
            month=_month(digest.day),
            pace=_pace(digest.pace, currency),
            others="others",
        )
        attachment = Attachment(
            f"gpu-cost-{digest.team.name}-{digest.day.isoformat()}.png",
            "{team} GPU cost, {month}".format(team=label, month=_month(digest.day)),
            daily_cost_chart(daily=digest.daily, pace=digest.pace, words=words),
        )
    return Report(
        title="GPU cost digest · {team} · {day}".format(team=label, day=_long_day(digest.day)),
        summary=mrkdwn.render(_team_summary(digest)),
        sections=sections,
        attachment=attachment,
    )


def _team_summary(digest: TeamDigest) -> Notice:
    currency = digest.currency
    values = {
        "yesterday": Strong(_line_use(digest.yesterday_total, currency)),
        "month": Strong(_line_use(digest.month_total, currency, spent=digest.spent)),
    }
    missing = join(_missing_note(digest.missing), _missing_in_note(digest.missing_in))
    if not digest.budget:
        return join(fill("Yesterday {yesterday}. Month to date {month}.", **values), missing)
    budget = fill(
        "Yesterday {yesterday}. Month to date {month}, {percent} of the {budget} budget."
        " Month-end forecast at the current burn: {forecast} ({forecast_percent})",
        **values,
        percent=_percent(digest.spent / digest.budget),
        budget=money(digest.budget, currency),
        forecast=money(digest.forecast, currency),
        forecast_percent=_percent(digest.forecast / digest.budget),
    )
    outlook = Notice(())
    if digest.over_since is not None:
        outlook = fill(" :rotating_light: over budget since {day}", day=_short_day(digest.over_since))
    elif digest.forecast > digest.budget and digest.exhausts_at is not None:
        outlook = fill(" :warning: the budget runs out around {at}", at=Moment(digest.exhausts_at))
    return join(budget, outlook, Notice((Words("."),)), missing)


def _namespace_lines(digest: TeamDigest) -> list[str]:
    yesterday = {line.namespace: line for line in digest.yesterday}
    lines: list[Notice] = []
    for line in digest.month:
        day = yesterday.get(line.namespace)
        lines.append(
            fill(
                "{namespace}: yesterday {day} · month {month}",
                namespace=Strong(line.namespace),
                day=_line_use(day, digest.currency) if day else "0 GPU-h",
                month=_line_use(line, digest.currency),
            )
        )
    return _rendered(lines) or [mrkdwn.render(fill("No GPU use recorded this month."))]


def _model_lines(month: CostLine, currency: str) -> list[str]:
    by_cost = sorted(month.by_model.items(), key=lambda item: item[1][1], reverse=True)
    return _rendered([fill("{model}: {use}", model=model, use=_use(hours, cost, currency)) for model, (hours, cost) in by_cost])


def _resource_lines(month: CostLine, currency: str) -> list[str]:
    """Each resource's month beside the others (whole GPUs first): ``MIG 3g.40gb: 48 slice-hours, 96.00 USD``."""
    ordered = sorted(month.by_resource.items(), key=lambda item: (item[0] != GPU, item[0]))
    return _rendered([resource_line(resource, figures, currency) for resource, figures in ordered])


def _usage_line(month: CostLine, currency: str) -> str:
    return mrkdwn.render(
        fill(
            "Average GPU utilisation {utilisation}. Idle allocated GPUs (under the idle threshold): {idle}",
            utilisation="n/a (no DCGM data)" if month.utilisation is None else _percent(month.utilisation),
            idle=_use(month.idle_hours, month.idle_cost, currency),
        )
    )


# --- the organisation's summary ----------------------------------------------------------------


def org_report(digest: OrgDigest, *, with_chart: bool = True) -> Report:
    currency = digest.currency
    lines = [_team_line(team) for team in sorted(digest.teams, key=lambda t: t.spent, reverse=True)]
    lines += [
        fill("{team}: {cost}", team=label, cost=money(cost, currency))
        for label, cost in sorted(digest.others.items(), key=lambda item: item[1], reverse=True)
    ]
    top = [
        fill(
            "{rank}. {namespace} ({team}): {cost}",
            rank=rank,
            namespace=line.namespace,
            team=digest.team_labels.get(line.team, line.team),
            cost=money(line.cost, currency),
        )
        for rank, line in enumerate(digest.top, 1)
    ]
    sections = [ReportSection(heading="Per team (month to date)", lines=_rendered(lines))]
    if digest.clusters:
        sections.append(ReportSection(heading="Per cluster", lines=_cluster_lines(digest.clusters, currency)))
    sections.append(ReportSection(heading="Top namespaces (month to date)", lines=_rendered(top)))
    attachment = None
    if with_chart:
        words = ChartWords(
            title="GPU cost per day, by team",
            axis=_axis(currency),
            month=_month(digest.day),
            pace=_pace(digest.pace, currency),
            others="others",
        )
        attachment = Attachment(
            f"gpu-cost-org-{digest.day.isoformat()}.png",
            "GPU cost by team, {month}".format(month=_month(digest.day)),
            daily_cost_chart(daily=digest.daily, pace=digest.pace, words=words),
        )
    return Report(
        title="GPU cost summary · {day}".format(day=_long_day(digest.day)),
        summary=mrkdwn.render(_org_summary(digest)),
        sections=sections,
        attachment=attachment,
    )


def _org_summary(digest: OrgDigest) -> Notice:
    currency = digest.currency
    summary = fill(
        "Yesterday {yesterday} · month to date {spent}",
        yesterday=money(digest.yesterday, currency),
        spent=money(digest.spent, currency),
    )
    if digest.budgets:
        summary = join(
            summary,
            fill(
                " of {budgets} budgeted ({percent})",
                budgets=money(digest.budgets, currency),
                percent=_percent(digest.spent / digest.budgets),
            ),
        )
    return join(summary, _missing_note(digest.missing), _missing_in_note(digest.missing_in))


def _team_line(team: TeamDigest) -> Notice:
    currency = team.currency
    forecast = fill(" · forecast {forecast}", forecast=money(team.forecast, currency)) if team.spent else Notice(())
    if not team.budget:
        return join(fill("{team}: {spent}", team=Strong(team.team.label), spent=money(team.spent, currency)), forecast)
    spent = fill(
        "{team}: {spent} of {budget} ({percent})",
        team=Strong(team.team.label),
        spent=money(team.spent, currency),
        budget=money(team.budget, currency),
        percent=_percent(team.spent / team.budget),
    )
    return join(spent, forecast)


# --- shared --------------------------------------------------------------------------------------


def _missing_note(missing: list[date]) -> Notice:
    """Days Prometheus no longer (or never) held: said, so a month-to-date without them is not taken as whole."""
    if not missing:
        return Notice(())
    return fill(" No metrics for {days}: those days are not counted.", days=day_ranges(missing))


def _missing_in_note(missing_in: dict[str, list[date]]) -> Notice:
    """Days counted for some clusters and not for others (no metrics there, or not read yet): said per cluster."""
    return join(
        *(
            fill(" No metrics for {cluster} on {days}: not counted.", cluster=cluster, days=day_ranges(days))
            for cluster, days in sorted(missing_in.items())
        )
    )


def _cluster_lines(clusters: Sequence[ClusterCost], currency: str) -> list[str]:
    """Each cluster's yesterday and month: ``us-2: yesterday 24.0 GPU-h · 72.00 USD · month ...``."""
    return _rendered(
        [
            fill(
                "{cluster}: yesterday {day} · month {month}",
                cluster=Strong(cost.cluster),
                day=_line_use(cost.yesterday, currency) if cost.yesterday else "0 GPU-h",
                month=_line_use(cost.month, currency),
            )
            for cost in clusters
        ]
    )


def _ranked(lines: list[CostLine], currency: str) -> list[Notice]:
    return [
        fill("{rank}. {namespace}: {cost}", rank=rank, namespace=line.namespace, cost=money(line.cost, currency))
        for rank, line in enumerate(lines, 1)
    ]


def _rendered(notices: list[Notice]) -> list[str]:
    return [mrkdwn.render(notice) for notice in notices]


def _use(hours: float, cost: float, currency: str) -> str:
    return "{hours} GPU-h · {cost}".format(hours=f"{hours:,.1f}", cost=money(cost, currency))


def _line_use(line: CostLine | None, currency: str, *, spent: float | None = None) -> str:
    """A line's hours, each resource in its unit, and what they all cost (``spent`` when given):
    ``24.0 GPU-h, 48.0 slice-h MIG 3g.40gb · 96.00 USD``."""
    if line is None:
        return _use(0.0, spent or 0.0, currency)
    cost = line.cost if spent is None else spent
    return "{hours} · {cost}".format(hours=hours_of(line.by_resource, line.gpu_hours), cost=money(cost, currency))


def _percent(ratio: float) -> str:
    return f"{ratio:.0%}"


def _axis(currency: str) -> str:
    return "cost per day ({currency})".format(currency=currency)


def _pace(pace: float | None, currency: str) -> str:
    return "" if pace is None else "budget pace ({pace} {currency}/day)".format(pace=f"{pace:,.0f}", currency=currency)


def _long_day(day: date) -> str:
    return f"{day:%a %d %b %Y}"


def _short_day(day: date) -> str:
    return f"{day:%a %d %b}"


def _month(day: date) -> str:
    return f"{day:%B %Y}"
