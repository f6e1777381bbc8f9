"""Proposed shifts from real use: quota a namespace never came near, towards namespaces the quota kept
blocking. Pure arithmetic; a proposal is only ever a suggestion (its button opens the shift form).

Two signals tell that the quota held a namespace back (``Signal``): the bot's own blocked-workload
alerts (at least ``MIN_BLOCKED`` over the window), and the quota's saturation that Prometheus holds
(kube-state-metrics' used equal to a non-zero hard at least ``MIN_SATURATION`` of the window): the second one
knows the window's days before the bot was installed or while it was down.

A namespace gives (is a source) when neither signal ever saw it at its quota (never blocked, never
used == hard) and its peak allocation over the window stayed under its quota: it gives what it never
used (quota - peak, rounded up to whole GPUs). A namespace takes (is a target) when a signal says it
was short. Sources are paired with targets round-robin, the most generous source with the most
blocked (then the longest at its quota) target first; at most ``MAX_PROPOSALS`` are made.

Spot in the strategy shift (``spot_saving``): a namespace whose GPU-hours of preemptible work (the PriorityClasses
``pricing.spot.preemptible_priority_classes`` names) ran mostly on on-demand nodes is named with what moving that
work to spot would save per month, at today's prices: a line for people to weigh, never an action.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.capacity import Placement

MIN_BLOCKED = 3  # fewer blocked workloads over the window is noise, not a shortage
MIN_SATURATION = 0.5  # at its quota half the window or more: the quota, not a burst, set the pace
MAX_PROPOSALS = 5  # a short list an admin reads in one go
_EPSILON = 1e-6  # a peak of 2.0000001 GPUs (float sums) is 2
MOSTLY = 0.5  # "mostly on-demand": more than half of the preemptible work's GPU-hours
DAYS_PER_MONTH = 365.25 / 12  # a month of savings: the average month
MIN_SAVING = 0.01  # less a month is no saving worth a line


class Signal(StrEnum):
    """What showed a namespace short of quota."""

    ALERTS = "alerts"  # the bot's own blocked-workload alerts
    SATURATION = "saturation"  # Prometheus: the quota's used reached its hard


@dataclass(frozen=True)
class NamespaceUse:
    """What one namespace had and used over the window."""

    namespace: str
    quota: int
    peak: float  # the most GPUs its running pods requested at once
    mean: float  # GPUs allocated on average
    busy: float | None  # utilisation (0..1) of the GPUs it held; None when the metrics saw none
    blocked: int  # workloads the quota kept from starting
    saturation: float | None = None  # share (0..1) of the window at its quota; None when Prometheus did not tell


@dataclass(frozen=True)
class Proposal:
    source: NamespaceUse
    target: NamespaceUse
    gpus: int


def signals(use: NamespaceUse) -> tuple[Signal, ...]:
    """The signals that say the quota held the namespace back over the window (none: it was not short)."""
    found = []
    if use.blocked >= MIN_BLOCKED:
        found.append(Signal.ALERTS)
    if use.saturation is not None and use.saturation >= MIN_SATURATION:
        found.append(Signal.SATURATION)
    return tuple(found)


def spare(use: NamespaceUse) -> int:
    """Whole GPUs of the quota the namespace never used at its peak (0 when it was ever at its quota)."""
    if use.blocked > 0 or (use.saturation or 0.0) > 0:
        return 0
    return max(0, use.quota - math.ceil(use.peak - _EPSILON))


def short(use: NamespaceUse) -> bool:
    """A signal says the quota held the namespace back (so it has nothing spare either)."""
    return bool(signals(use))


def propose(uses: Iterable[NamespaceUse]) -> list[Proposal]:
    """The proposed shifts, most spare GPUs first."""
    uses = list(uses)
    sources = sorted((u for u in uses if spare(u) > 0), key=lambda u: (-spare(u), u.namespace))
    targets = sorted((u for u in uses if short(u)), key=lambda u: (-u.blocked, -(u.saturation or 0.0), u.namespace))
    if not targets:
        return []
    return [Proposal(source, targets[i % len(targets)], spare(source)) for i, source in enumerate(sources)][:MAX_PROPOSALS]


@dataclass(frozen=True)
class SpotSaving:
    """A namespace whose preemptible work ran mostly on on-demand nodes over the window: its GPU-hours of that work,
    the share of them on on-demand nodes (unknown nodes included), and what spot would save per month."""

    namespace: str
    preemptible_hours: float
    on_demand_share: float
    saving_per_month: float


def spot_saving(
    namespace: str, *, hours: float, shares: Mapping[Placement, float], gap_per_hour: float, window_days: int
) -> SpotSaving | None:
    """The saving of moving a namespace's preemptible work to spot: ``hours`` its whole-GPU hours over the window,
    ``shares`` the share of them that were preemptible work at each placement, ``gap_per_hour`` what a GPU-hour
    costs on-demand more than on spot (its models, today's prices). None when that work was not mostly on-demand or
    spot would not save anything."""
    preemptible = sum(shares.values())
    if hours <= 0 or preemptible <= 0 or gap_per_hour <= 0 or window_days <= 0:
        return None
    on_demand = sum(share for placement, share in shares.items() if placement.on_demand) / preemptible
    if on_demand <= MOSTLY:
        return None
    work = hours * preemptible
    saving = work * on_demand * gap_per_hour / window_days * DAYS_PER_MONTH
    return SpotSaving(namespace, work, on_demand, saving) if saving >= MIN_SAVING else None
