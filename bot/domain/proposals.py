"""Proposed shifts from real use: quota a namespace never came near, towards namespaces the quota kept
blocking. Pure arithmetic; a proposal is only ever a suggestion (its button opens the shift form).

A namespace gives (is a source) when it was never blocked by the quota and its peak allocation over
the window stayed under its quota: it gives what it never used (quota - peak, rounded up to whole
GPUs). A namespace takes (is a target) when the quota blocked its workloads at least
``MIN_BLOCKED`` times and it has nothing spare. Sources are paired with targets round-robin, the
most generous source with the most blocked target first; at most ``MAX_PROPOSALS`` are made.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

MIN_BLOCKED = 3  # fewer blocked workloads over the window is noise, not a shortage
MAX_PROPOSALS = 5  # a short list an admin reads in one go
_EPSILON = 1e-6  # a peak of 2.0000001 GPUs (float sums) is 2


@dataclass(frozen=True)
class NamespaceUse:
    """What one namespace had and used over the window."""

    namespace: str
    quota: int
    peak: float  # the most GPUs its running pods requested at once
    mean: float  # GPUs allocated on average
    busy: float | None  # utilisation (0..1) of the GPUs it held; None when the metrics saw none
    blocked: int  # workloads the quota kept from starting


@dataclass(frozen=True)
class Proposal:
    source: NamespaceUse
    target: NamespaceUse
    gpus: int


def spare(use: NamespaceUse) -> int:
    """Whole GPUs of the quota the namespace never used at its peak (0 when the quota blocked it)."""
    if use.blocked > 0:
        return 0
    return max(0, use.quota - math.ceil(use.peak - _EPSILON))


def short(use: NamespaceUse) -> bool:
    """The quota kept blocking the namespace's workloads, and it has nothing spare."""
    return use.blocked >= MIN_BLOCKED and spare(use) == 0


def propose(uses: Iterable[NamespaceUse]) -> list[Proposal]:
    """The proposed shifts, most spare GPUs first."""
    uses = list(uses)
    sources = sorted((u for u in uses if spare(u) > 0), key=lambda u: (-spare(u), u.namespace))
    targets = sorted((u for u in uses if short(u)), key=lambda u: (-u.blocked, u.namespace))
    if not targets:
        return []
    return [Proposal(source, targets[i % len(targets)], spare(source)) for i, source in enumerate(sources)][:MAX_PROPOSALS]
