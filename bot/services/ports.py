"""The small interfaces the services need. Adapters implement them; unit tests use hand-written fakes.

Every method raises only the errors of ``bot.errors`` (adapters translate library exceptions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from bot.domain.quota import QuotaSnapshot
from bot.services.cards import RequestCard


class QuotaCluster(Protocol):
    def read_quota(self, namespace: str, name: str) -> QuotaSnapshot | None:
        """The quota, or None when the namespace has none. Raises NamespaceNotFound."""
        ...

    def write_quota(
        self, namespace: str, name: str, *, gpus: int, previous: QuotaSnapshot | None, dry_run: bool, applied_by: str
    ) -> QuotaSnapshot:
        """Create or patch the GPU quota, failing with QuotaConflict if it changed since ``previous``."""
        ...

    def allocatable_gpus(self) -> int:
        """The sum of ``nvidia.com/gpu`` allocatable over all nodes."""
        ...

    def gpu_quota_totals(self, quota_names: Mapping[str, str]) -> dict[str, int]:
        """``requests.nvidia.com/gpu`` hard of the given {namespace: quota name}, in one list call."""
        ...


class ActionKind(StrEnum):
    """Buttons, named by what they do; the Slack adapter maps them to action ids."""

    APPROVE = "approve"
    DENY = "deny"
    RETRY = "retry"
    EXTEND = "extend"
    RELEASE = "release"


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    label: str
    value: str
    style: str | None = None  # "primary" | "danger"


@dataclass(frozen=True)
class MessageRef:
    channel_id: str
    ts: str


class Notifier(Protocol):
    def post_request(self, card: RequestCard) -> MessageRef:
        """Post the request message (with its buttons while pending) in the team's channel."""
        ...

    def update_request(self, card: RequestCard) -> None:
        """Re-render the request message in place."""
        ...

    def reply(self, ref: MessageRef, text: str, *, actions: Sequence[Action] = ()) -> None:
        """Post in the request's thread."""
        ...

    def tell_user(self, user_id: str, text: str, *, actions: Sequence[Action] = ()) -> None:
        """A direct message from the bot."""
        ...

    def post(self, channel_id: str, text: str, *, actions: Sequence[Action] = ()) -> MessageRef:
        """A message in a channel, outside any request (admin notices, digests)."""
        ...


class Directory(Protocol):
    def usergroup_members(self, usergroup_id: str) -> frozenset[str]:
        """User ids in a Slack user group (cached by the adapter)."""
        ...
