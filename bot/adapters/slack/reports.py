"""The words of the daily cost digest (``bot.services.reports``): a team's report, the organisation's
summary and their charts' title, axis and legend, in the current language (``bot.adapters.i18n``).

The digest arrives as figures; here they become whole sentences with named placeholders (``fill``,
catalog entries, #24), money, numbers, days and months as the locale writes them, and a ``Report`` of
mrkdwn lines that ``blocks.report_blocks`` lays out (the notifier posts it, ``digest --print`` prints
it). The digest's day and month are the policy's ``schedules.timezone`` days the service reported on;
a moment (a grant's end, the budget's run-out) is a date token each reader sees in their own zone.
Every name in a line (a namespace, a GPU model, a team's label) is escaped by ``mrkdwn.render``; the
title is a header's plain text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import assert_never

from bot.adapters import i18n
from bot.adapters.chart import ChartWords, daily_cost_chart
from bot.adapters.i18n import format_day, format_money, format_month, format_number, format_share, tr
from bot.adapters.slack import capacity_words, mrkdwn
from bot.adapters.slack.resource_words import (
    day_ranges,
    gpu_hours_text,
    hours_and_cost,
    hours_of,
    resource_line,
    short_day,
)
from bot.adapters.slack.sentences import fill, fill_n
from bot.domain.commands import format_request_id
from bot.domain.costs import CostLine
from bot.domain.languages import Language
from bot.domain.resources import GPU
from bot.services.ledger import UNMANAGED
from bot.services.ports import Action
from bot.services.reports import ClusterCost, Digest, OrgDigest, TeamDigest
from bot.services.text import Moment, Notice, Part, Strong, Words

# Languages written without a space between one sentence and the next (their full stop is full-width).
_NO_SENTENCE_SPACE = frozenset({Language.ZH_CN})


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
    sections = [ReportSection(heading=tr("Per namespace"), lines=_namespace_lines(digest))]
    if digest.clusters:
        sections.append(ReportSection(heading=tr("Per cluster"), lines=_cluster_lines(digest.clusters, currency)))
    month = digest.month_total
    if month is not None and month.other_resources:
        sections.append(ReportSection(heading=tr("Per resource (month to date)"), lines=_resource_lines(month, currency)))
    if month is not None and (GPU in month.by_resource or not month.other_resources):
        sections.append(ReportSection(heading=tr("Per GPU model (month to date)"), lines=_model_lines(month, currency)))
        sections.append(
            ReportSection(heading=tr("Utilisation and idle GPUs (month to date)"), lines=[_usage_line(month, currency)])
        )
    if placed := [*capacity_words.placement_lines(month, currency), *capacity_words.split_unavailable_notes(digest.unsplit)]:
        sections.append(ReportSection(heading=tr("Spot and on-demand (month to date)"), lines=_rendered(placed)))
    if digest.expiring:
        lines = [
            fill_n(
                "{request}: {gpus} GPU in {namespace}, ends {at}",
                "{request}: {gpus} GPUs in {namespace}, ends {at}",
                abs(g.gpus),
                request=format_request_id(g.request_id),
                gpus=_signed(g.gpus),
                namespace=g.namespace,
                at=Moment(g.ends_at),
            )
            for g in digest.expiring
        ]
        sections.append(ReportSection(heading=tr("Grants ending in the next 24 h"), lines=_rendered(lines)))
    if digest.top:
        sections.append(
            ReportSection(heading=tr("Top consumers (month to date)"), lines=_rendered(_ranked(digest.top, currency)))
        )
    attachment = None
    if with_chart:
        words = ChartWords(
            title=tr("{team}: GPU cost per day", team=label),
            axis=_axis(currency),
            month=format_month(digest.day),
            pace=_pace(digest.pace, currency),
            others=tr("others"),
        )
        attachment = Attachment(
            f"gpu-cost-{digest.team.name}-{digest.day.isoformat()}.png",
            tr("{team} GPU cost, {month}", team=label, month=format_month(digest.day)),
            daily_cost_chart(daily=digest.daily, pace=digest.pace, words=words),
        )
    return Report(
        title=tr("GPU cost digest · {team} · {day}", team=label, day=format_day(digest.day)),
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
    missing = [*_missing_notes(digest.missing), *_missing_in_notes(digest.missing_in)]
    if not digest.budget:
        return _sentences(fill("Yesterday {yesterday}. Month to date {month}.", **values), *missing)
    spent = fill(
        "Yesterday {yesterday}. Month to date {month}, {percent} of the {budget} budget.",
        **values,
        percent=format_share(digest.spent / digest.budget),
        budget=format_money(digest.budget, currency),
    )
    forecast = {
        "forecast": format_money(digest.forecast, currency),
        "forecast_percent": format_share(digest.forecast / digest.budget),
    }
    if digest.over_since is not None:
        outlook = fill(
            "Month-end forecast at the current burn: {forecast} ({forecast_percent}) :rotating_light: over budget since {day}.",
            **forecast,
            day=short_day(digest.over_since),
        )
    elif digest.forecast > digest.budget and digest.exhausts_at is not None:
        outlook = fill(
            "Month-end forecast at the current burn: {forecast} ({forecast_percent}) :warning: the budget runs out around {at}.",
            **forecast,
            at=Moment(digest.exhausts_at),
        )
    else:
        outlook = fill("Month-end forecast at the current burn: {forecast} ({forecast_percent}).", **forecast)
    return _sentences(spent, outlook, *missing)


def _namespace_lines(digest: TeamDigest) -> list[str]:
    yesterday = {line.namespace: line for line in digest.yesterday}
    lines: list[Notice] = []
    for line in digest.month:
        day = yesterday.get(line.namespace)
        lines.append(
            fill(
                "{namespace}: yesterday {day} · month {month}",
                namespace=Strong(line.namespace),
                day=_line_use(day, digest.currency) if day else gpu_hours_text(0, digits=None),
                month=_line_use(line, digest.currency),
            )
        )
    return _rendered(lines) or [mrkdwn.render(fill("No GPU use recorded this month."))]


def _model_lines(month: CostLine, currency: str) -> list[str]:
    by_cost = sorted(month.by_model.items(), key=lambda item: item[1][1], reverse=True)
    return _rendered(
        [fill("{model}: {use}", model=model, use=hours_and_cost(hours, cost, currency)) for model, (hours, cost) in by_cost]
    )


def _resource_lines(month: CostLine, currency: str) -> list[str]:
    """Each resource's month beside the others (whole GPUs first): ``MIG 3g.40gb: 48 slice-hours, 96.00 USD``."""
    ordered = sorted(month.by_resource.items(), key=lambda item: (item[0] != GPU, item[0]))
    return _rendered([resource_line(resource, figures, currency) for resource, figures in ordered])


def _usage_line(month: CostLine, currency: str) -> str:
    idle = hours_and_cost(month.idle_hours, month.idle_cost, currency)
    if month.utilisation is None:
        return mrkdwn.render(
            fill(
                "Average GPU utilisation n/a (no DCGM data). Idle allocated GPUs (under the idle threshold): {idle}",
                idle=idle,
            )
        )
    return mrkdwn.render(
        fill(
            "Average GPU utilisation {utilisation}. Idle allocated GPUs (under the idle threshold): {idle}",
            utilisation=format_share(month.utilisation),
            idle=idle,
        )
    )


# --- the organisation's summary ----------------------------------------------------------------


def org_report(digest: OrgDigest, *, with_chart: bool = True) -> Report:
    currency = digest.currency
    lines = [_team_line(team) for team in sorted(digest.teams, key=lambda t: t.spent, reverse=True)]
    lines += [
        fill("{team}: {cost}", team=team_name(label), cost=format_money(cost, currency))
        for label, cost in sorted(digest.others.items(), key=lambda item: item[1], reverse=True)
    ]
    top = [
        fill(
            "{rank}. {namespace} ({team}): {cost}",
            rank=format_number(rank),
            namespace=line.namespace,
            team=team_name(digest.team_labels.get(line.team, line.team)),
            cost=format_money(line.cost, currency),
        )
        for rank, line in enumerate(digest.top, 1)
    ]
    sections = [ReportSection(heading=tr("Per team (month to date)"), lines=_rendered(lines))]
    if digest.clusters:
        sections.append(ReportSection(heading=tr("Per cluster"), lines=_cluster_lines(digest.clusters, currency)))
    sections.append(ReportSection(heading=tr("Top namespaces (month to date)"), lines=_rendered(top)))
    if digest.unsplit:
        notes = capacity_words.split_unavailable_notes(digest.unsplit)
        sections.append(ReportSection(heading=tr("Spot and on-demand (month to date)"), lines=_rendered(notes)))
    attachment = None
    if with_chart:
        words = ChartWords(
            title=tr("GPU cost per day, by team"),
            axis=_axis(currency),
            month=format_month(digest.day),
            pace=_pace(digest.pace, currency),
            others=tr("others"),
        )
        attachment = Attachment(
            f"gpu-cost-org-{digest.day.isoformat()}.png",
            tr("GPU cost by team, {month}", month=format_month(digest.day)),
            daily_cost_chart(daily=digest.daily, pace=digest.pace, words=words),
        )
    return Report(
        title=tr("GPU cost summary · {day}", day=format_day(digest.day)),
        summary=mrkdwn.render(_org_summary(digest)),
        sections=sections,
        attachment=attachment,
    )


def _org_summary(digest: OrgDigest) -> Notice:
    currency = digest.currency
    values = {"yesterday": format_money(digest.yesterday, currency), "spent": format_money(digest.spent, currency)}
    if digest.budgets:
        summary = fill(
            "Yesterday {yesterday} · month to date {spent} of {budgets} budgeted ({percent}).",
            **values,
            budgets=format_money(digest.budgets, currency),
            percent=format_share(digest.spent / digest.budgets),
        )
    else:
        summary = fill("Yesterday {yesterday} · month to date {spent}.", **values)
    return _sentences(summary, *_missing_notes(digest.missing), *_missing_in_notes(digest.missing_in))


def _team_line(team: TeamDigest) -> Notice:
    currency = team.currency
    values: dict[str, str | Strong] = {"team": Strong(team.team.label), "spent": format_money(team.spent, currency)}
    forecast = format_money(team.forecast, currency)
    if not team.budget:
        if team.spent:
            return fill("{team}: {spent} · forecast {forecast}", **values, forecast=forecast)
        return fill("{team}: {spent}", **values)
    values |= {"budget": format_money(team.budget, currency), "percent": format_share(team.spent / team.budget)}
    if team.spent:
        return fill("{team}: {spent} of {budget} ({percent}) · forecast {forecast}", **values, forecast=forecast)
    return fill("{team}: {spent} of {budget} ({percent})", **values)


def team_name(label: str) -> str:
    """A team's label; the ledger's team of a namespace outside the policy ("<label> (not managed)") said as such."""
    suffix = f" {UNMANAGED}"
    if label.endswith(suffix):
        return tr("{team} (not managed)", team=label.removesuffix(suffix))
    return label


# --- shared --------------------------------------------------------------------------------------


def _missing_notes(missing: list[date]) -> list[Notice]:
    """Days Prometheus no longer (or never) held: said, so a month-to-date without them is not taken as whole."""
    if not missing:
        return []
    return [fill("No metrics for {days}: those days are not counted.", days=day_ranges(missing))]


def _missing_in_notes(missing_in: dict[str, list[date]]) -> list[Notice]:
    """Days counted for some clusters and not for others (no metrics there, or not read yet): said per cluster."""
    return [
        fill("No metrics for {cluster} on {days}: not counted.", cluster=cluster, days=day_ranges(days))
        for cluster, days in sorted(missing_in.items())
    ]


def _sentences(*notices: Notice) -> Notice:
    """Whole sentences one after the other, spaced as the language spaces them."""
    gap: tuple[Part, ...] = () if i18n.current() in _NO_SENTENCE_SPACE else (Words(" "),)
    parts: list[Part] = []
    for index, notice in enumerate(notices):
        parts.extend((gap if index else ()) + notice.parts)
    return Notice(tuple(parts))


def _cluster_lines(clusters: Sequence[ClusterCost], currency: str) -> list[str]:
    """Each cluster's yesterday and month: ``us-2: yesterday 24.0 GPU-h · 72.00 USD · month ...``."""
    return _rendered(
        [
            fill(
                "{cluster}: yesterday {day} · month {month}",
                cluster=Strong(cost.cluster),
                day=_line_use(cost.yesterday, currency) if cost.yesterday else gpu_hours_text(0, digits=None),
                month=_line_use(cost.month, currency),
            )
            for cost in clusters
        ]
    )


def _ranked(lines: list[CostLine], currency: str) -> list[Notice]:
    return [
        fill(
            "{rank}. {namespace}: {cost}",
            rank=format_number(rank),
            namespace=line.namespace,
            cost=format_money(line.cost, currency),
        )
        for rank, line in enumerate(lines, 1)
    ]


def _rendered(notices: list[Notice]) -> list[str]:
    return [mrkdwn.render(notice) for notice in notices]


def _line_use(line: CostLine | None, currency: str, *, spent: float | None = None) -> str:
    """A line's hours, each resource in its unit, and what they all cost (``spent`` when given):
    ``24.0 GPU-h and 48.0 slice-h MIG 3g.40gb · 96.00 USD``."""
    if line is None:
        return hours_and_cost(0.0, spent or 0.0, currency)
    cost = line.cost if spent is None else spent
    return tr("{hours} · {cost}", hours=hours_of(line.by_resource, line.gpu_hours), cost=format_money(cost, currency))


def _signed(count: int) -> str:
    """A change of GPUs with its sign: ``+2``, ``-1``."""
    return ("+" if count > 0 else "") + format_number(count)


def _axis(currency: str) -> str:
    return tr("cost per day ({currency})", currency=currency)


def _pace(pace: float | None, currency: str) -> str:
    if pace is None:
        return ""
    return tr("budget pace ({pace} {currency}/day)", pace=format_number(pace, digits=0), currency=currency)
