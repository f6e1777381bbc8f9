"""What is wrong with what a person typed (a command, a form field, a duration), as typed values.

The parsers (``bot.domain.commands``, ``bot.domain.durations``) hold no words: they name the problem
and carry what was typed (as typed: it is shown as it is, never translated); the Slack edge words it
(``bot.adapters.slack.input_words``) in the reader's language. A parser that cannot go on raises
``ParseError`` with its problem; ``str(error)`` is the edge's wording in plain text once the edge has
lent it (``ParseError.worded_by``, by the bootstrap), before that the problem's repr.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar


class InputProblem:
    """The base of every typed input problem (subclasses are frozen dataclasses)."""


class ParseError(ValueError):
    """A parser's refusal of what was typed; ``problem`` says why."""

    _words: ClassVar[Callable[[Any], str]] = repr

    def __init__(self, problem: InputProblem) -> None:
        super().__init__(problem)
        self.problem = problem

    def __str__(self) -> str:
        return type(self)._words(self.problem)

    @classmethod
    def worded_by(cls, words: Callable[[Any], str]) -> None:
        cls._words = words


# --- durations -------------------------------------------------------------------------------------


class DurationFault(Enum):
    NOT_A_DURATION = "not a duration"
    ZERO = "zero"
    TOO_LONG = "too long"  # past ``durations.MAX_DURATION``


@dataclass(frozen=True)
class BadDuration(InputProblem):
    """``typed``: the words as typed, whitespace collapsed (the edge shortens a long paste)."""

    typed: str
    fault: DurationFault


# --- the parts of a request or a shift (each also one of a draft's problems) --------------------


@dataclass(frozen=True)
class NotAGpuCount(InputProblem):
    """Not ``+4``, ``-2`` or ``8``."""

    typed: str


@dataclass(frozen=True)
class ChangesNothing(InputProblem):
    """``+0`` or ``-0``."""

    typed: str


@dataclass(frozen=True)
class NotAGpuNumber(InputProblem):
    """A shift's GPUs: not a whole number above 0."""

    typed: str


@dataclass(frozen=True)
class NotANamespaceName(InputProblem):
    typed: str


@dataclass(frozen=True)
class NotAResourceName(InputProblem):
    typed: str


@dataclass(frozen=True)
class NoTerm(InputProblem):
    """Neither ``for <duration>`` nor ``permanent``; ``example`` is the duration the answer shows (``3d``)."""

    example: str


@dataclass(frozen=True)
class ForWithoutDuration(InputProblem):
    """``for`` at the end of the words."""


@dataclass(frozen=True)
class PermanentAfterFor(InputProblem):
    """``for permanent``."""


@dataclass(frozen=True)
class TwoTerms(InputProblem):
    """Both a duration and ``permanent``. ``duration``: the duration as typed, when the words name it;
    ``permanent_first``: ``permanent`` came first (``permanent for 3d``)."""

    duration: str | None = None
    permanent_first: bool = False


@dataclass(frozen=True)
class ShiftSyntax(InputProblem):
    """Not ``<N> from <source> to <target> ...``."""


@dataclass(frozen=True)
class SameSourceAndTarget(InputProblem):
    namespace: str


@dataclass(frozen=True)
class NoReason(InputProblem):
    """A shift with nothing after its duration."""


@dataclass(frozen=True)
class ExtensionHowLong(InputProblem):
    """``extend <request id>`` without a duration."""


# --- whole commands --------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotSubmitted(InputProblem):
    """A ``request`` or ``shift`` refused as typed (nothing submitted): ``problem`` says why."""

    problem: InputProblem


@dataclass(frozen=True)
class UnknownCommand(InputProblem):
    """``typed``: the first word; ``suggestion``: the command it is close to, if any."""

    typed: str
    suggestion: str | None = None


@dataclass(frozen=True)
class NoSuchHelpTopic(InputProblem):
    """``help <typed>`` for a command that does not exist (the usage of every command follows)."""

    typed: str
    suggestion: str | None = None


@dataclass(frozen=True)
class NeedsOneRequestId(InputProblem):
    """``cancel``, ``release``, ``retry`` without exactly one request id; ``extend`` without one."""

    command: str
    only_one: bool = True


@dataclass(frozen=True)
class TakesNoArguments(InputProblem):
    command: str


@dataclass(frozen=True)
class AuditNeedsATarget(InputProblem):
    pass


@dataclass(frozen=True)
class DoctorTakesACluster(InputProblem):
    pass


@dataclass(frozen=True)
class WhyNeedsAPod(InputProblem):
    pass


@dataclass(frozen=True)
class NotAWhyTarget(InputProblem):
    """Not a namespace nor ``<namespace>/<name>``."""

    typed: str


@dataclass(frozen=True)
class NotAnObjectName(InputProblem):
    """Not the name of a pod, Job, Deployment or Workload."""

    typed: str


@dataclass(frozen=True)
class NotAMonth(InputProblem):
    """A ``YYYY-MM`` word that is no month, or a second month."""

    typed: str


@dataclass(frozen=True)
class NotACostTarget(InputProblem):
    """A word of ``cost`` that is neither a team, a namespace nor a month."""

    typed: str
