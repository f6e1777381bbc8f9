"""What an audit record says beyond its action and values, as typed data (``detail``).

A detail carries the numbers and names of what happened; it holds no word (the Slack edge words it:
``bot.adapters.slack.reasons.render_detail``). The audit ``detail`` column stores a detail as JSON with
a leading ``{"detail":`` (``to_text`` / ``from_text``); a failure reason is stored there the same way
(``bot.domain.failure_reasons``), and any other text (a detail an earlier version wrote, or a reason a
person typed) is shown exactly as stored.

Each subclass is registered by its class name, the kind stored: a class is never renamed while rows
of it may exist.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from bot.domain.resources import GPU

MARKER = '{"detail":'


class AuditDetail:
    """The base of every detail (subclasses are frozen dataclasses of plain values and datetimes)."""

    kinds: ClassVar[dict[str, type[AuditDetail]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        assert cls.__name__ not in AuditDetail.kinds, f"two audit details named {cls.__name__}"
        AuditDetail.kinds[cls.__name__] = cls


@dataclass(frozen=True)
class ReclaimStarted(AuditDetail):
    """``used`` GPUs run above the new quota of ``quota``: running pods keep them until they finish."""

    used: int
    quota: int


@dataclass(frozen=True)
class ReclaimCovered(AuditDetail):
    """A quota write raised the quota to cover what is in use."""


@dataclass(frozen=True)
class ReclaimGone(AuditDetail):
    """The quota or the namespace is gone."""


@dataclass(frozen=True)
class ReclaimRaisedByHand(AuditDetail):
    """Someone raised the quota over usage by hand."""


@dataclass(frozen=True)
class ReclaimFreed(AuditDetail):
    """``freed`` GPUs freed over ``minutes`` as jobs finished."""

    freed: int
    minutes: int


@dataclass(frozen=True)
class HandEditAdopted(AuditDetail):
    """Someone changed the quota outside the bot by ``drift`` GPUs; the bot adopted it into the base."""

    drift: int


@dataclass(frozen=True)
class QuotaWritten(AuditDetail):
    """The bot wrote the quota ``quota_name``'s GPUs from ``before`` (None: there was none) to ``after``."""

    quota_name: str
    before: int | None
    after: int
    resource: str = GPU  # entries written before resources were configurable are about whole GPUs
    flavor: str | None = None  # the quota is a Kueue ClusterQueue's (``quota_name``): its nominalQuota of this flavor


@dataclass(frozen=True)
class NamespaceFirstSeen(AuditDetail):
    """The bot saw the namespace for the first time (``has_quota`` False: with no GPU quota yet)."""

    has_quota: bool


@dataclass(frozen=True)
class GrantEnding(AuditDetail):
    """A grant of ``gpus`` (signed) ends; it was due at ``due``."""

    gpus: int
    due: datetime


@dataclass(frozen=True)
class Extends(AuditDetail):
    """A request that extends the grant of request ``request_id``."""

    request_id: int


@dataclass(frozen=True)
class SourceGave(AuditDetail):
    """A shift's source gave ``gpus`` GPUs to ``target``."""

    gpus: int
    target: str


@dataclass(frozen=True)
class SourceGivenBack(AuditDetail):
    """The shift to ``target`` ended (or failed, ``ended`` False): its source has its ``gpus`` back."""

    target: str
    ended: bool
    gpus: int


def to_text(detail: AuditDetail) -> str:
    """The text stored in the ``detail`` column: JSON starting with ``{"detail":``."""
    fields = {f.name: getattr(detail, f.name) for f in dataclasses.fields(detail)}  # type: ignore[arg-type]
    encoded = {name: value.isoformat() if isinstance(value, datetime) else value for name, value in fields.items()}
    return json.dumps({"detail": type(detail).__name__, **encoded})


def from_text(text: str) -> AuditDetail:
    """What ``to_text`` stored (a ``KeyError`` or ``ValueError`` for any other text)."""
    data = json.loads(text)
    kind = AuditDetail.kinds[data["detail"]]
    hints = typing.get_type_hints(kind)
    values = {f.name: data[f.name] for f in dataclasses.fields(kind) if f.name in data}  # type: ignore[arg-type]
    return kind(**{name: datetime.fromisoformat(v) if hints[name] is datetime else v for name, v in values.items()})
