"""The words of where GPU-hours ran (``bot.domain.capacity``): spot, on-demand and the pools the policy prices,
in the digest, ``/gpu-quota cost``, a price's basis, the proposals' spot savings, and the fact that a day could
not be split by node. English and Chinese (竞价实例 / 按需实例) from the catalogs; values typed by people or other
systems (a pool's name, a namespace, a kube-state-metrics flag) are shown as they are.

The services hand over typed values (``Placement``, ``CostLine.placements``, ``SplitUnavailable``,
``SpotSaving``); nothing here decides a figure.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.adapters.i18n import format_money, format_number, format_share, tr
from bot.adapters.slack.resource_words import day_ranges
from bot.adapters.slack.sentences import fill, fill_n, join
from bot.domain.capacity import SPOT, Placement, SplitState, SplitUnavailable
from bot.domain.costs import CostLine, PlacementCost
from bot.domain.prices import Price
from bot.domain.proposals import SpotSaving
from bot.services.messages import SpotSavings
from bot.services.text import Code, Notice, Strong

# A price's placement counts as the whole when this much of the hours ran there.
WHOLE = 0.995


def placement_name(placement: Placement) -> str:
    """How a placement is named: "spot", "on-demand", or its pool ("pool on-prem")."""
    if placement.pool:
        return tr("pool {pool}", pool=placement.pool)
    return tr("spot") if placement.capacity == SPOT else tr("on-demand")


def placement_line(placement: Placement, figures: PlacementCost, currency: str) -> Notice:
    """``Spot: 120.0 GPU-h · 150.00 USD`` (the money of every resource there, the hours of whole GPUs)."""
    hours, cost = format_number(figures.gpu.hours, digits=1), format_money(figures.cost, currency)
    if placement.pool:
        return fill("Pool {pool}: {hours} GPU-h · {cost}", pool=Strong(placement.pool), hours=hours, cost=cost)
    if placement.capacity == SPOT:
        return fill("Spot: {hours} GPU-h · {cost}", hours=hours, cost=cost)
    return fill("On-demand: {hours} GPU-h · {cost}", hours=hours, cost=cost)


def placement_lines(line: CostLine | None, currency: str) -> list[Notice]:
    """A line's figures per placement (on-demand, spot, then each pool), or none when all of it was on-demand."""
    if line is None or not line.split:
        return []
    return [placement_line(placement, figures, currency) for placement, figures in line.placements().items()]


def price_placement(price: Price) -> Notice | None:
    """Where the hours a price was averaged over ran, when not all on-demand: "on spot", "70% on spot", "in pool
    on-prem"; None when all of it was on-demand (or the price is not of hours run)."""
    if not price.placements:
        return None
    chosen = max((item for item in price.placements if not item.placement.on_demand), key=lambda item: item.share)
    where, share = chosen.placement, chosen.share
    if share >= WHOLE:
        if where.pool:
            return fill("in pool {pool}", pool=where.pool)
        return fill("on spot")
    if where.pool:
        return fill("{share} in pool {pool}", share=format_share(share), pool=where.pool)
    return fill("{share} on spot", share=format_share(share))


def priced_where(price_words: Notice, price: Price) -> Notice:
    """A price's words with where its hours ran after them: "at 2.10 USD/h, the ... price this namespace ran on
    (70% on spot)"; the words alone when all of it was on-demand."""
    where = price_placement(price)
    return price_words if where is None else fill("{price} ({where})", price=price_words, where=where)


def split_unavailable(fact: SplitUnavailable) -> Notice:
    """Why some days' GPU-hours are all priced on-demand: kube-state-metrics does not export the nodes' labels."""
    days, flag, metric = day_ranges(fact.days), Code(fact.flag), Code("kube_node_labels")
    if fact.state == SplitState.NO_NODE_LABELS:
        if fact.cluster:
            return fill(
                "Spot and on-demand not told apart in cluster {cluster} ({days}): Prometheus has no {metric}"
                " series, so every GPU-hour is priced on-demand. Enable kube-state-metrics' nodes metrics with {flag}.",
                cluster=fact.cluster,
                days=days,
                flag=flag,
                metric=metric,
            )
        return fill(
            "Spot and on-demand not told apart ({days}): Prometheus has no {metric} series, so every GPU-hour"
            " is priced on-demand. Enable kube-state-metrics' nodes metrics with {flag}.",
            days=days,
            flag=flag,
            metric=metric,
        )
    if fact.cluster:
        return fill(
            "Spot and on-demand not told apart in cluster {cluster} ({days}): {metric} carries no"
            " capacity-type label, so every GPU-hour is priced on-demand. Start kube-state-metrics with {flag}.",
            cluster=fact.cluster,
            days=days,
            flag=flag,
            metric=metric,
        )
    return fill(
        "Spot and on-demand not told apart ({days}): {metric} carries no capacity-type label, so every"
        " GPU-hour is priced on-demand. Start kube-state-metrics with {flag}.",
        days=days,
        flag=flag,
        metric=metric,
    )


def split_unavailable_notes(facts: Sequence[SplitUnavailable]) -> list[Notice]:
    return [split_unavailable(fact) for fact in facts]


def spot_saving(saving: SpotSaving, *, days: int, currency: str) -> Notice:
    """A proposals line: a namespace's preemptible work ran mostly on on-demand nodes, and what spot would save."""
    return fill_n(
        "\n• {namespace}: {share} of its {hours} GPU-h of preemptible work ran on on-demand nodes (last {count} day);"
        " on spot it would cost about {saving} less a month.",
        "\n• {namespace}: {share} of its {hours} GPU-h of preemptible work ran on on-demand nodes (last {count} days);"
        " on spot it would cost about {saving} less a month.",
        days,
        namespace=Strong(saving.namespace),
        share=format_share(saving.on_demand_share),
        hours=format_number(saving.preemptible_hours, digits=1),
        saving=format_money(saving.saving_per_month, currency),
    )


def spot_savings_notice(said: SpotSavings) -> Notice:
    """The proposals' spot line(s) for the admin channel: a heading, one line per namespace, and that nothing moves."""
    head = fill(":moneybag: Preemptible work on on-demand GPUs, which spot would make cheaper:")
    lines = [spot_saving(saving, days=said.window_days, currency=said.currency) for saving in said.savings]
    tail = fill("\nNothing changes unless the workloads move to spot nodes (a node selector or affinity on the capacity type).")
    return join(head, *lines, tail)
