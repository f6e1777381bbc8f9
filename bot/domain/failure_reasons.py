"""Why a request could not be applied, as typed data: what was refused, with which numbers.

A reason names the check that refused the change and carries its values; it holds no word (the Slack
edge words it: ``bot.adapters.slack.reasons``). A reason that quotes another system (the Kubernetes
API's message, or an error of the bot's own said elsewhere) keeps those words as a plain string
(``AsSaid``). The request's ``failure_reason`` column stores a reason as JSON with a leading
``{"reason":`` (``to_text`` / ``from_text``); a reason stored as plain text by an earlier version is
read as ``AsSaid``, shown exactly as stored.

Each subclass is registered by its class name, the kind stored: a class is never renamed while rows
of it may exist (rename it in two releases, reading both names in between).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

MARKER = '{"reason":'


class FailureReason:
    """The base of every reason (subclasses are frozen dataclasses)."""

    kinds: ClassVar[dict[str, type[FailureReason]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        assert cls.__name__ not in FailureReason.kinds, f"two failure reasons named {cls.__name__}"
        FailureReason.kinds[cls.__name__] = cls


@dataclass(frozen=True)
class AsSaid(FailureReason):
    """Words said elsewhere: the API server's message, an error's text, or a reason an earlier version stored."""

    text: str


@dataclass(frozen=True)
class QuotaTooLow(FailureReason):
    """The quota is ``before`` now: it cannot go down by ``decrease``."""

    before: int
    decrease: int


@dataclass(frozen=True)
class AboveLimit(FailureReason):
    """The quota is ``before`` now; ``before + delta`` is above the namespace's ``max_gpus``."""

    before: int
    delta: int
    max_gpus: int

    @property
    def after(self) -> int:
        return self.before + self.delta


@dataclass(frozen=True)
class PermanentBelowZero(FailureReason):
    """A permanent decrease larger than the permanent quota (``base``): grants running are not the base."""

    base: int
    decrease: int


@dataclass(frozen=True)
class GrantAlreadyEnded(FailureReason):
    """An extension of a grant (that of request ``request_id``) that has ended meanwhile."""

    request_id: int


@dataclass(frozen=True)
class SourceShort(FailureReason):
    """A shift's source has ``gpus`` now (in the cluster, or of its own quota when ``own``), fewer than ``wanted``."""

    namespace: str
    gpus: int
    wanted: int
    own: bool


@dataclass(frozen=True)
class SourceHasNone(FailureReason):
    """A shift's source has no GPUs it could give now."""

    namespace: str


@dataclass(frozen=True)
class RefusedWhenApproved(FailureReason):
    """The last approval was refused against the quota as it was then."""

    problem: FailureReason


@dataclass(frozen=True)
class LegNotWritten(FailureReason):
    """A shift's side (the ``source``, lowered, or the target, raised) in ``namespace`` could not be written."""

    source: bool
    namespace: str
    cause: FailureReason


@dataclass(frozen=True)
class SourceKeptLowered(FailureReason):
    """The audit record of a shift that failed with its source side lowered (``before`` -> ``after``)."""

    cause: FailureReason
    before: int | None
    after: int | None


@dataclass(frozen=True)
class QuotaKeptChanging(FailureReason):
    """Someone outside the bot wrote the quota ``quota_name`` in ``namespace`` ``conflicts`` times in a row (409s)."""

    quota_name: str
    namespace: str
    conflicts: int


@dataclass(frozen=True)
class ShiftLowersFirst(FailureReason):
    """The shift ``request_id`` is lowering ``namespace``, whose quota was cut by hand meanwhile: it goes first."""

    request_id: int
    namespace: str


@dataclass(frozen=True)
class ClusterNotAnswering(FailureReason):
    """The cluster ``cluster`` (``""``: the home one) has not answered since ``since`` (ISO 8601, UTC);
    ``cause``: the last failure as the bot's adapter said it."""

    cluster: str
    since: str
    cause: str


def to_json(reason: FailureReason) -> dict[str, Any]:
    """The reason as ``{"reason": kind, field: value, ...}`` (nested reasons the same way)."""
    fields = {f.name: getattr(reason, f.name) for f in dataclasses.fields(reason)}  # type: ignore[arg-type]
    encoded = {name: to_json(value) if isinstance(value, FailureReason) else value for name, value in fields.items()}
    return {"reason": type(reason).__name__, **encoded}


def from_json(data: dict[str, Any] | str) -> FailureReason:
    """What ``to_json`` made, or a plain string (an entry written before reasons were typed)."""
    if isinstance(data, str):
        return AsSaid(data)
    kind = FailureReason.kinds[data["reason"]]
    hints = typing.get_type_hints(kind)
    values = {
        f.name: from_json(data[f.name]) if hints[f.name] is FailureReason else data[f.name]
        for f in dataclasses.fields(kind)  # type: ignore[arg-type]
    }
    return kind(**values)


def to_text(reason: FailureReason) -> str:
    """The text stored in a text column: JSON starting with ``{"reason":``."""
    return json.dumps(to_json(reason))


def from_text(text: str) -> FailureReason:
    """What ``to_text`` stored; any other text (an earlier version's reason) as said."""
    if text.startswith(MARKER):
        return from_json(json.loads(text))
    return AsSaid(text)
