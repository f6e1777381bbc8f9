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
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

MIN_BLOCKED = 3  # fewer blocked workloads over the window is noise, not a shortage
MIN_SATURATION = 0.5  # at its quota half the window or more: the quota, not a burst, set the pace
MAX_PROPOSALS = 5  # a short list an admin reads in one go
_EPSILON = 1e-6  # a peak of 2.0000001 GPUs (float sums) is 2


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
