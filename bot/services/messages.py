"""What the bot says in Slack threads, direct messages and channel posts, as typed messages.

A message names what happened and carries its values (a request id, a namespace, user ids, GPU
numbers, moments, a person's reason as a plain string); it holds no word, emoji or markup. The
services make them; the outbox stores them as JSON (``to_json`` / ``from_json``: the class name and
the fields); the Slack edge words them at delivery (``bot.adapters.slack.words``), where the language
is chosen. Outbox entries recorded before typed messages hold a ``Notice`` (its parts as a JSON
list): they are still read and delivered as they are (``Said``).

Each subclass is registered by its class name, the kind stored in the outbox: a class is never
renamed while entries of it may wait (rename it in two releases, reading both names in between).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from enum import Enum
from fractions import Fraction
from types import UnionType
from typing import Any, ClassVar

from bot.domain import failure_reasons
from bot.domain.failure_reasons import FailureReason
from bot.domain.prices import BasisAsStored, Price
from bot.domain.priority import WaitCause
from bot.domain.proposals import SpotSaving
from bot.domain.resources import GPU
from bot.domain.stack_health import Check
from bot.services.text import Notice


class Message:
    """The base of every typed message (subclasses are frozen dataclasses)."""

    kinds: ClassVar[dict[str, type[Message]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        assert cls.__name__ not in Message.kinds, f"two messages named {cls.__name__}"
        Message.kinds[cls.__name__] = cls


# A price as a message carries it: typed, or an old entry's words for it.
PriceShown = Price | BasisAsStored
# What a thread reply, direct message or post carries: a typed message, or an old entry's notice.
Said = Message | Notice


def to_json(message: Message) -> dict[str, Any]:
    """The message as the outbox stores it: ``{"message": kind, "fields": {...}}``."""
    return {"message": type(message).__name__, "fields": _encode(message)}


def from_json(data: dict[str, Any] | list[dict[str, str]]) -> Said:
    """What ``to_json`` stored, or a notice's parts (an entry recorded before typed messages)."""
    if isinstance(data, list):
        return Notice.from_json(data)
    kind = Message.kinds[data["message"]]
    decoded = _decode(kind, data["fields"])
    assert isinstance(decoded, Message)
    return decoded


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, FailureReason):
        return failure_reasons.to_json(value)
    if isinstance(value, BasisAsStored):
        return value.text
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, tuple):
        return [_encode(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _decode(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    if hint == PriceShown:  # a string: an entry recorded before prices were typed
        return BasisAsStored(value) if isinstance(value, str) else _decode(Price, value)
    origin = typing.get_origin(hint)
    if origin in (UnionType, typing.Union):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _decode(inner, value)
    if origin is tuple:
        return tuple(_decode(typing.get_args(hint)[0], item) for item in value)
    if hint is datetime:
        return datetime.fromisoformat(value)
    if hint is date:
        return date.fromisoformat(value)
    if hint is timedelta:
        return timedelta(seconds=value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if hint is FailureReason:  # a plain string: an entry recorded before reasons were typed
        return failure_reasons.from_json(value)
    if hint is Fraction:
        return Fraction(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        # A field missing from an entry recorded before it existed takes its default.
        return hint(**{f.name: _decode(hints[f.name], value[f.name]) for f in dataclasses.fields(hint) if f.name in value})
    return value


# --- decisions, cancellations and retries (bot.services.decisions, bot.services.lifecycle) ---------


@dataclass(frozen=True)
class ApprovedBy(Message):
    """In the thread: one approval counted."""

    user_id: str
    approvals: int
    required: int


@dataclass(frozen=True)
class DeniedBy(Message):
    """In the thread; ``reason`` is the denier's words ("" when none was given)."""

    user_id: str
    reason: str


@dataclass(frozen=True)
class DeniedToRequester(Message):
    request_id: int
    user_id: str
    reason: str


@dataclass(frozen=True)
class CancelledBy(Message):
    user_id: str


@dataclass(frozen=True)
class CancelledToRequester(Message):
    request_id: int
    user_id: str


@dataclass(frozen=True)
class RetryBy(Message):
    user_id: str


# --- applying a change, and a grant's end (bot.services.changes) ---------------------------------


@dataclass(frozen=True)
class Applied(Message):
    """In the thread: the quota is written. ``ends_at``: a temporary grant's end; ``drift``: a hand edit
    adopted into the base; ``used``: GPUs in use when the quota was written (a note when above it)."""

    namespace: str
    quota_name: str
    before: int
    after: int
    ends_at: datetime | None
    drift: int
    used: int
    resource: str = GPU
    flavor: str | None = None  # the quota is a Kueue ClusterQueue's (``quota_name``): its nominalQuota of this flavor


@dataclass(frozen=True)
class AppliedToRequester(Message):
    request_id: int
    namespace: str
    after: int
    ends_at: datetime | None
    resource: str = GPU


@dataclass(frozen=True)
class ExtensionApplied(Message):
    """In the extension's thread: the grant it extends now ends at ``ends_at``."""

    extends_id: int
    ends_at: datetime


@dataclass(frozen=True)
class Extended(Message):
    """In the extended request's thread."""

    request_id: int  # the extension
    extends_id: int
    ends_at: datetime


@dataclass(frozen=True)
class ExtendedToRequester(Extended):
    pass


@dataclass(frozen=True)
class GrantNotPutBack(Message):
    """In the thread: the grant ended but the quota write failed (the bot retries); ``error``: why (the
    cluster's words kept as said)."""

    error: FailureReason


@dataclass(frozen=True)
class GrantEnded(Message):
    """In the thread: ``released_by`` None when it expired; ``before`` None when there was no quota."""

    namespace: str
    released_by: str | None
    before: int | None
    after: int
    used: int
    resource: str = GPU


@dataclass(frozen=True)
class GrantEndedToRequester(Message):
    request_id: int
    namespace: str
    released_by: str | None
    before: int | None
    after: int
    resource: str = GPU


# --- waiting for the cluster, and failures (bot.services.failures) -------------------------------


@dataclass(frozen=True)
class WaitingForCluster(Message):
    """In the thread, on the first temporary fault of an apply; ``reason``: why (the cluster's words kept as said)."""

    reason: FailureReason
    shift: bool


@dataclass(frozen=True)
class ApplyFailed(Message):
    """In the thread; ``reason``: why (the API server's words are kept in it as said)."""

    request_id: int
    reason: FailureReason


@dataclass(frozen=True)
class ApplyFailedToRequester(ApplyFailed):
    pass


@dataclass(frozen=True)
class ShiftFailed(Message):
    """In the thread and to the requester. ``source_applied``: the source side is lowered
    (``source_before`` -> ``source_after``) while the target side failed."""

    request_id: int
    reason: FailureReason
    namespace: str
    source_namespace: str
    source_before: int
    source_after: int
    source_applied: bool


# --- shifts (bot.services.shift_apply) -----------------------------------------------------------


@dataclass(frozen=True)
class ShiftApplied(Message):
    """In the thread: the source lowered, then the target raised; ``ends_at``: a temporary shift's end;
    ``source_used``: GPUs in use in the source when it was lowered (None: not read)."""

    source_namespace: str
    source_before: int
    source_after: int
    namespace: str
    before: int
    after: int
    ends_at: datetime | None
    source_used: int | None


@dataclass(frozen=True)
class ShiftAppliedToRequester(ShiftApplied):
    request_id: int


@dataclass(frozen=True)
class SourceNotRaised(Message):
    source_namespace: str
    error: FailureReason


@dataclass(frozen=True)
class SourceReturned(Message):
    source_namespace: str
    before: int | None
    after: int


# --- the reconcile job (bot.services.reconcile) --------------------------------------------------


@dataclass(frozen=True)
class QuotaEditedOutside(Message):
    """To the admin channel: a hand edit of the quota, adopted into the base."""

    namespace: str
    drift: int
    after: int


@dataclass(frozen=True)
class Expired(Message):
    """In the thread: nobody decided within ``timeout``."""

    request_id: int
    timeout: timedelta


@dataclass(frozen=True)
class ExpiredToRequester(Expired):
    pass


@dataclass(frozen=True)
class GrantEndsSoon(Message):
    """To the requester, with Extend and Release buttons."""

    request_id: int
    gpus: int
    namespace: str
    ends_at: datetime


# --- cards (bot.services.announce) ---------------------------------------------------------------


@dataclass(frozen=True)
class CopyNotPosted(Message):
    """In the thread: the shift's copy for the source team was refused; ``error`` as Slack said it."""

    channel_id: str
    error: str
    team_label: str | None


# --- the jobs' alerts: metrics, idle GPUs, reclaims, budgets -------------------------------------


@dataclass(frozen=True)
class MetricsUnavailable(Message):
    """To the admin channel, once per outage; ``cause`` as the metrics client said it."""

    since: datetime
    cause: str


@dataclass(frozen=True)
class BrokenCheck:
    """A check of the GPU stack found broken: which, in which cluster (a key's cluster part), about what."""

    check: Check
    cluster: str
    subjects: tuple[str, ...] = ()  # nodes, targets, namespaces, pods, classes, metrics


@dataclass(frozen=True)
class StackBroken(Message):
    """To the admin channel from the weekly doctor run: checks broken now that were not at the last run."""

    checks: tuple[BrokenCheck, ...]


@dataclass(frozen=True)
class MetricsBack(Message):
    since: datetime


@dataclass(frozen=True)
class IdleNudge(Message):
    """To the team's channel: GPUs held under the idle threshold for the window. ``price_basis``: the price
    of its GPUs (``bot.services.pricing``); an entry of an earlier version holds its words (``BasisAsStored``)."""

    namespace: str
    gpus: int
    threshold_percent: float
    window: timedelta
    highest: float  # the highest utilisation seen, 0..1
    idle_hours: float
    cost: float
    currency: str
    price_basis: PriceShown


@dataclass(frozen=True)
class NudgesSnoozed(Message):
    """What the person who pressed Snooze reads."""

    namespace: str
    until: datetime


@dataclass(frozen=True)
class ReclaimEnded(Message):
    """In the request's thread (or the team's channel): jobs finishing freed ``freed`` GPUs over ``span``."""

    namespace: str
    freed: int
    span: timedelta
    quota: int


@dataclass(frozen=True)
class BudgetAlert(Message):
    """To the team's channel, mentioning its owners. ``threshold``: the highest threshold crossed
    (None: the forecast alone); ``over_since`` / ``runs_out``: the outlook, when there is one."""

    team_label: str
    users: tuple[str, ...]
    usergroups: tuple[str, ...]
    spent: float
    budget: float
    forecast: float
    currency: str
    threshold: int | None
    over_since: date | None
    runs_out: datetime | None


# --- blocked workloads and shift proposals (bot.services.blocked, bot.services.proposals) --------


@dataclass(frozen=True)
class QuotaBlocked(Message):
    """To the team's channel: a workload the quota keeps from starting (``kind``/``name`` as its creator
    named it), with the figures of the API server's message when it had them (``requested`` None: none)."""

    namespace: str
    kind: str
    name: str
    count: int
    requested: int | None
    used: int
    limited: int
    resource: str = GPU  # the resource whose quota is full


@dataclass(frozen=True)
class WorkloadWaiting(Message):
    """To the team's channel: a Kueue Workload whose queue has no quota left for it (``QuotaReserved``
    False); ``more``: of ``resource`` it needs beyond what is free (None: Kueue said no figure), ``reason``
    Kueue's own words (the condition's message)."""

    namespace: str
    name: str
    queue: str
    resource: str
    more: int | None
    reason: str


@dataclass(frozen=True)
class WaitingPod:
    name: str
    gpus: int
    class_label: str
    cause: WaitCause
    resource: str = GPU  # what it waits for (``gpus`` of it)


@dataclass(frozen=True)
class SchedulingWait(Message):
    """To the team's channel: GPU pods waiting for the scheduler, not the quota; ``pods``: the first few of ``count``."""

    namespace: str
    count: int
    pods: tuple[WaitingPod, ...]


@dataclass(frozen=True)
class SpotSavings(Message):
    """To the admin channel, beside the proposals: namespaces whose preemptible work ran mostly on on-demand nodes
    over the last ``window_days``, with what spot would save per month (in ``currency``); a line, never an action."""

    window_days: int
    currency: str
    savings: tuple[SpotSaving, ...]


@dataclass(frozen=True)
class ShiftProposal(Message):
    """To the admin channel: proposal ``index`` of ``count`` over the last ``window_days``. ``blocked``:
    quota alerts of the target (None: not a signal); ``saturation``: the share of time at its quota
    (None: not a signal); ``saturation_read``: whether Prometheus was read for it."""

    index: int
    count: int
    window_days: int
    gpus: int
    source_namespace: str
    source_peak: float
    source_quota: int
    source_mean: float
    source_busy: float | None
    namespace: str
    blocked: int | None
    saturation: float | None
    saturation_read: bool
