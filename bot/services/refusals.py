"""Why the bot will not do what a person asked, as typed refusals.

A refusal names the reason and carries its values (a request id, a namespace or team as typed, a
team's label, user ids, numbers, the words of a failing system or of the policy's checks as plain
strings); it holds no word, emoji or markup. A use case raises it inside ``Refused`` (a
``UserError``); the Slack edge words it (``bot.adapters.slack.refusals``), where the language is
chosen. ``str(error)`` is that same wording as plain text (for logs and the CLIs) once the edge has
lent it (``Refused.worded_by``); before that, the refusal's repr.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from enum import Enum

from bot.domain.failure_reasons import FailureReason
from bot.domain.input_problems import InputProblem
from bot.domain.lifecycle import RequestState, Verdict
from bot.errors import KarmadaObjectMissing, KarmadaPart, KueueObjectMissing, KueuePart, UserError, WordedError


class Reading(Enum):
    """What the quota was read for when it could not be read (nothing was recorded or submitted)."""

    CONFIRMATION = "confirmation"
    REQUEST = "request"
    SHIFT = "shift"


class Refusal:
    """The base of every typed refusal (subclasses are frozen dataclasses)."""


class Refused(WordedError[Refusal], UserError):
    """A use case's refusal, worded at the edge."""

    @property
    def refusal(self) -> Refusal:
        return self.said


# --- requests: loading, pending, reasons --------------------------------------------------


@dataclass(frozen=True)
class NoSuchRequest(Refusal):
    request_id: int


@dataclass(frozen=True)
class AlreadyDecided(Refusal):
    """The request is no longer pending: its state now and who denied or approved it (user ids, the
    auto-approver's among them)."""

    request_id: int
    state: RequestState
    deciders: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReasonTooLong(Refusal):
    length: int
    limit: int


# --- decisions: who may decide, and once ----------------------------------------------------


@dataclass(frozen=True)
class OwnRequest(Refusal):
    request_id: int
    verdict: Verdict


@dataclass(frozen=True)
class DecidedBefore(Refusal):
    """The person already approved or denied the request (``verdict``)."""

    request_id: int
    verdict: Verdict


@dataclass(frozen=True)
class NotAnApprover(Refusal):
    """``team`` is the team's label (or its name, when the policy no longer has it)."""

    team: str
    request_id: int


@dataclass(frozen=True)
class TeamGone(Refusal):
    request_id: int


@dataclass(frozen=True)
class AdminsDecideShifts(Refusal):
    pass


@dataclass(frozen=True)
class NotAShiftApprover(Refusal):
    source_team: str  # labels
    target_team: str


@dataclass(frozen=True)
class ShiftNeedsApproverOf(Refusal):
    team: str  # the label of the team not yet covered


@dataclass(frozen=True)
class QuotaUnreadable(Refusal):
    """``problem``: the failing system's words (``str`` of the infrastructure error)."""

    namespace: str
    problem: str
    reading: Reading


# --- cancel, release, retry -------------------------------------------------------------------


@dataclass(frozen=True)
class NotYoursToCancel(Refusal):
    request_id: int


@dataclass(frozen=True)
class NotYoursToRelease(Refusal):
    request_id: int


@dataclass(frozen=True)
class NothingToGiveBack(Refusal):
    """A failed shift whose source was never lowered."""

    request_id: int


@dataclass(frozen=True)
class NoActiveGrant(Refusal):
    """``extending``: asked to extend it (else to release it)."""

    request_id: int
    extending: bool = False


@dataclass(frozen=True)
class GrantAlreadyEnded(Refusal):
    request_id: int


@dataclass(frozen=True)
class AdminsRetry(Refusal):
    pass


@dataclass(frozen=True)
class NotFailed(Refusal):
    request_id: int
    state: RequestState


@dataclass(frozen=True)
class NotRetried(Refusal):
    """``problem``: the policy check's reason (``bot.services.effects.source_problem``)."""

    problem: FailureReason


# --- submitting a request, an extension or a shift ------------------------------------------


@dataclass(frozen=True)
class Incomplete(Refusal):
    """``problems``: what the parser found missing (``RequestDraft.problems``); none: it names nothing."""

    problems: tuple[InputProblem, ...]


@dataclass(frozen=True)
class OverLimits(Refusal):
    """``problems``: the policy's limit checks' words (``bot.domain.quota``), at least one."""

    problems: tuple[str, ...]


@dataclass(frozen=True)
class GrantTooLong(Refusal):
    """An extension would take the whole grant past the team's longest."""

    team: str  # the label
    longest: timedelta
    request_id: int
    would_last: timedelta


@dataclass(frozen=True)
class ShiftNotExtendable(Refusal):
    request_id: int
    source_namespace: str


@dataclass(frozen=True)
class NotManaged(Refusal):
    """``namespace`` as typed; ``managed``: the namespaces to choose from, when the answer lists them;
    ``submitting``: said while submitting a shift (nothing was submitted)."""

    namespace: str
    managed: tuple[str, ...] | None = None
    submitting: bool = False


@dataclass(frozen=True)
class QueueMissing(Refusal):
    """The Kueue objects that hold ``namespace``'s quota of ``resource`` are not all there: ``missing``
    says which (Kueue itself, the ClusterQueue, its flavor, the resource in it), ``present`` what is
    instead. A setup problem for the platform team, not a moment's fault."""

    namespace: str
    resource: str
    missing: KueuePart
    cluster_queue: str
    flavor: str
    present: tuple[str, ...]
    reading: Reading

    @classmethod
    def of(cls, namespace: str, error: KueueObjectMissing, reading: Reading) -> QueueMissing:
        return cls(namespace, error.resource, error.missing, error.cluster_queue, error.flavor, error.present, reading)


@dataclass(frozen=True)
class FederationMissing(Refusal):
    """The Karmada objects that hold ``namespace``'s quota of ``resource`` are not all there: ``missing`` says
    which (Karmada, the FederatedResourceQuota, the member's assignment, the resource in it)."""

    namespace: str
    resource: str
    missing: KarmadaPart
    federated_quota: str
    member: str
    present: tuple[str, ...]

    @classmethod
    def of(cls, namespace: str, error: KarmadaObjectMissing) -> FederationMissing:
        return cls(namespace, error.resource, error.missing, error.federated_quota, error.member, error.present)


@dataclass(frozen=True)
class NoSharedResource(Refusal):
    """A shift moves one resource both namespaces govern: these two share none."""

    source: str
    target: str


@dataclass(frozen=True)
class ResourceUnclear(Refusal):
    """The request does not say which of ``governed`` it changes: ``word`` (as typed; empty: none) names
    none of them, or several (``candidates``)."""

    namespace: str
    word: str
    candidates: tuple[str, ...]
    governed: tuple[str, ...]


@dataclass(frozen=True)
class AmbiguousNamespace(Refusal):
    """``typed`` (a bare name) is a managed namespace in several clusters: ``candidates``, their keys."""

    typed: str
    candidates: tuple[str, ...]


@dataclass(frozen=True)
class NotAMember(Refusal):
    team: str  # the label
    namespace: str


@dataclass(frozen=True)
class NotAShiftMember(Refusal):
    source_team: str  # labels
    target_team: str


@dataclass(frozen=True)
class NoSuchNamespace(Refusal):
    """Not in the cluster; ``reading`` says what was being submitted."""

    namespace: str
    reading: Reading


@dataclass(frozen=True)
class SameNamespace(Refusal):
    namespace: str


@dataclass(frozen=True)
class SourceTooSmall(Refusal):
    namespace: str
    hard: int
    gpus: int


# --- status, audit, costs, nudges -----------------------------------------------------------


class Asked(Enum):
    """What a person outside every team asked for without naming its scope."""

    STATUS = "status"
    COST = "cost"


@dataclass(frozen=True)
class InNoTeam(Refusal):
    asked: Asked


@dataclass(frozen=True)
class NotYoursToAudit(Refusal):
    pass


@dataclass(frozen=True)
class NotATeamOrNamespace(Refusal):
    target: str  # as typed


@dataclass(frozen=True)
class NotYoursToSee(Refusal):
    team: str  # the label


@dataclass(frozen=True)
class NotYoursToDiagnose(Refusal):
    """``why`` about a namespace of a team the person is not in (nothing was read of it)."""

    team: str  # the label
    namespace: str


@dataclass(frozen=True)
class MonthNotBegun(Refusal):
    month: date  # its first day


@dataclass(frozen=True)
class NotYoursToSnooze(Refusal):
    team: str  # the label
    namespace: str


# --- the digest command -----------------------------------------------------------------------


@dataclass(frozen=True)
class DayNotOver(Refusal):
    """A digest asked for a day not over yet in the policy's time zone."""

    day: date
    today: date


@dataclass(frozen=True)
class NoMetricsFor(Refusal):
    """The metrics hold nothing for these days: there is nothing true to report."""

    days: tuple[date, ...]
