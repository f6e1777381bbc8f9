"""Quota arithmetic: base + active grants = desired, and how to read what a human changed.

The bot owns one number per namespace and governed resource (a ``QuotaScope``): for a ResourceQuota,
``requests.<resource>`` (only the ``requests.`` form is enforced for extended resources; where the
quota also carries ``limits.<resource>`` the bot keeps it equal so ``kubectl describe quota`` does not
mislead), for a Kueue ClusterQueue a flavor's ``nominalQuota``. Each write also stamps an annotation
with the value written: a ``hard`` that differs from the stamp was changed by someone else
(``kubectl edit``), and that difference is adopted into the base instead of being overwritten.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from bot.domain.failure_reasons import AboveLimit, FailureReason, QuotaTooLow
from bot.domain.resources import GPU

ANNOTATION_PREFIX = "gpu-quota-bot.io/"
APPLIED_ANNOTATION = "gpu-quota-bot.io/applied-gpus"  # whole GPUs' stamp: the name every release before resources wrote
APPLIED_BY_ANNOTATION = "gpu-quota-bot.io/applied-by"
_ANNOTATION_NAME_LIMIT = 63  # the part after the prefix
_HASH_DIGITS = 10  # of the hash that keeps a shortened name unique


@dataclass(frozen=True)
class QuotaScope:
    """What one base quota counts: a governed resource of a managed namespace. Its critical section,
    grants and hand-edit adoption are its own."""

    namespace: str
    resource: str = GPU


def stamp_annotations(resource: str, *, qualifier: str = "") -> tuple[str, str]:
    """The annotations (applied value, applied by) a write of ``resource`` stamps on the object.

    Whole GPUs keep the names every release before resources wrote (``applied-gpus``, ``applied-by``),
    so a quota written by one of them is still recognised; any other resource (and a ``qualifier`` such
    as a ClusterQueue's flavor) gets its own pair, ``applied.<qualifier>.<resource>``, the vendor's ``/``
    as ``_``. A name part longer than an annotation's 63 characters keeps its start and ends with a hash
    of the qualifier and resource, the same in both keys, so they still pair up.
    """
    if resource == GPU and not qualifier:
        return APPLIED_ANNOTATION, APPLIED_BY_ANNOTATION
    suffix = ".".join(part for part in (qualifier, resource.replace("/", "_")) if part)
    room = _ANNOTATION_NAME_LIMIT - len("applied-by.")
    if len(suffix) > room:
        digest = hashlib.sha256(f"{qualifier}/{resource}".encode()).hexdigest()[:_HASH_DIGITS]
        suffix = f"{suffix[: room - _HASH_DIGITS - 1]}-{digest}"
    return f"{ANNOTATION_PREFIX}applied.{suffix}", f"{ANNOTATION_PREFIX}applied-by.{suffix}"


@dataclass(frozen=True)
class QuotaSnapshot:
    """What the cluster says about one resource of a namespace's quota at one ``resourceVersion``."""

    namespace: str
    name: str
    hard: int
    used: int
    limits: int | None  # spec.hard limits.<resource>, when the quota carries it
    resource_version: str
    bot_applied: int | None  # the value of the resource's stamp annotation, when present
    # False: the object exists but does not count this resource (no requests.<resource> key: no limit on
    # it); ``hard`` is then 0 and means nothing, and the bot's first write adds the key.
    counted: bool = True


@dataclass(frozen=True)
class Stamp:
    """A write of a quota target: the GPUs the bot sets, and who they are applied by (a request id or
    "reconcile"); the target records both on the object (for the ResourceQuota, two annotations)."""

    gpus: int
    applied_by: str


@dataclass(frozen=True)
class Observation:
    """The base after comparing the cluster with what the bot last wrote."""

    base: int
    last_seen: int | None
    drift: int  # GPUs someone else added (+) or removed (-) since the bot's last write, as adopted
    short: int = 0  # GPUs the edit took beyond the base (which stops at zero): what a decrease in the base cannot give


def observe(
    snapshot: QuotaSnapshot | None,
    *,
    base: int | None,
    last_seen: int | None,
    seen_version: str | None,
    active_grants: int,
    default_quota: int,
) -> Observation:
    """Fold the cluster's current quota into the bot's base.

    ``base``/``last_seen`` are what the database holds (None: never recorded), ``seen_version`` the
    resourceVersion it last accounted for (its first sight of the quota, or the bot's last write);
    ``active_grants`` is the sum of the namespace's active temporary grants. A hand edit is the
    difference between ``hard`` and the value the bot itself last wrote (the stamp annotation; the
    stored ``last_seen`` for a quota the bot never wrote), so the bot's own writes are never taken
    for one. The caller records the result together with its next write (never before it), so an
    edit is adopted exactly once. The base never goes below zero.
    """
    if base is None:
        if snapshot is None or not snapshot.counted:
            return Observation(base=default_quota, last_seen=None, drift=0)
        return Observation(base=max(0, snapshot.hard - active_grants), last_seen=snapshot.hard, drift=0)
    if snapshot is not None and not snapshot.counted:
        return Observation(base=base, last_seen=last_seen, drift=0)  # the key was removed: put back, not adopted
    if snapshot is None or snapshot.resource_version == seen_version or snapshot.bot_applied == snapshot.hard:
        # Missing quota (recreated on the next write), or nothing changed since the bot last looked or wrote.
        return Observation(base=base, last_seen=snapshot.hard if snapshot else last_seen, drift=0)
    expected = snapshot.bot_applied if snapshot.bot_applied is not None else last_seen
    if expected is None:
        expected = desired_gpus(base, active_grants)
    edited = base + snapshot.hard - expected
    adopted = max(0, edited)
    return Observation(base=adopted, last_seen=snapshot.hard, drift=adopted - base, short=adopted - edited)


def desired_gpus(base: int, active_grants: int) -> int:
    """The quota the bot wants: base plus active grants, never below zero (a temporary decrease
    larger than the base cannot take the quota negative)."""
    return max(0, base + active_grants)


def change_problem(*, before: int, delta: int, max_gpus: int) -> FailureReason | None:
    """Why moving a quota of ``before`` by ``delta`` breaks the namespace's limits now (None: it doesn't).

    Checked again when the change is made: the quota may have moved since the request was asked.
    """
    after = before + delta
    if after < 0:
        return QuotaTooLow(before, -delta)
    if delta > 0 and after > max_gpus:
        return AboveLimit(before, delta, max_gpus)
    return None


def in_sync(snapshot: QuotaSnapshot | None, desired: int) -> bool:
    """True when the cluster already holds exactly what the bot would write."""
    return (
        snapshot is not None
        and snapshot.counted
        and snapshot.hard == desired
        and snapshot.bot_applied == desired
        and snapshot.limits in (None, desired)
    )


@dataclass(frozen=True)
class CapacityImpact:
    """Allocatable GPUs of the nodes against the sum of all managed quotas after a change."""

    allocatable: int
    committed_after: int

    @property
    def headroom(self) -> int:
        return self.allocatable - self.committed_after

    @property
    def oversubscribed(self) -> bool:
        return self.committed_after > self.allocatable


HOURS_PER_MONTH = 730  # 365 * 24 / 12: the usual cloud billing month


def change_cost(*, gpus: int, duration: timedelta | None, price_per_gpu_hour: float) -> float:
    """Cost of a change: GPUs x hours x price for a grant, per month for a permanent change."""
    if duration is None:
        return abs(gpus) * HOURS_PER_MONTH * price_per_gpu_hour
    hours = duration.total_seconds() / 3600
    return abs(gpus) * hours * price_per_gpu_hour
