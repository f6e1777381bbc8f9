"""How a listener turns what a service did (or refused) into words for the person, in their language.

User errors are shown as they are; infrastructure errors are shown with what to do; anything
unexpected is logged with its traceback and reported with a reference, never swallowed. A use case's
typed refusal (``Refused``) is worded by ``slack.refusals``, a failure reason by ``slack.reasons``
(both in the reader's language); any other error's own message comes from an adapter (an API's
words, in English) and is shown as a quoted detail inside a translated sentence, escaped for Slack:
it may quote what the person typed. The answers when the work pool is full or a piece of work
waited too long (``bot.executor``) are here too.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TypeVar

from bot.adapters.i18n import gettext
from bot.adapters.slack import reasons, refusals
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.sentences import fill
from bot.errors import GpuQuotaError, LostRace, PermanentError, TemporaryError, UserError
from bot.executor import BUSY, EXPIRED
from bot.services.quota_sync import ReasonedError
from bot.services.refusals import Refused
from bot.services.text import Notice, Words

log = logging.getLogger("handlers")
T = TypeVar("T")


def busy() -> str:
    """The answer when the work pool is full: nothing was done (mrkdwn and plain text alike)."""
    return gettext(BUSY)


def expired() -> str:
    """The answer to work that waited past ``bot.executor.MAX_WAIT_SECONDS``: it was not done."""
    return gettext(EXPIRED)


def attempt(work: Callable[[], T], *, user: str, what: str) -> T | str:
    """Run ``work``; on failure return the sentence to show the person instead of its result."""
    try:
        return work()
    except UserError as error:
        log.info("refused %s for %s: %r", what, user, str(error))
        if (worded := said(error)) is not None:
            return render(Notice((Words(":no_entry_sign: "), *worded.parts)))  # the sentence is whole: only the emoji before it
        return render(fill(":no_entry_sign: {detail}", detail=str(error)))
    except TemporaryError as error:
        log.warning("%s for %s failed for now: %s", what, user, error)
        if (worded := said(error)) is not None:
            return render(fill(":warning: {problem}. Nothing was lost; please try again in a minute.", problem=worded))
        return render(fill(":warning: {detail}. Nothing was lost; please try again in a minute.", detail=str(error)))
    except PermanentError as error:
        log.error("%s for %s failed: %s", what, user, error)
        if (worded := said(error)) is not None:
            return render(fill(":x: {problem}. A platform admin needs to look at this.", problem=worded))
        return render(fill(":x: {detail}. A platform admin needs to look at this.", detail=str(error)))
    except LostRace:
        log.warning("%s for %s kept losing races with other changes", what, user)
        return render(fill(":warning: Many changes arrived at once and yours could not be recorded; please try again."))
    except Exception:
        reference = uuid.uuid4().hex[:8]
        log.exception("%s for %s crashed (reference %s)", what, user, reference)
        return render(
            fill(
                ":x: Something went wrong on the bot's side (reference `{reference}`); the logs have the details.",
                reference=reference,
            )
        )


def said(error: GpuQuotaError) -> Notice | None:
    """The error's words made at the edge, in the reader's language (a refusal, a failure reason); None for
    an error whose only words are its own message (an adapter's, in English: shown as a detail)."""
    if isinstance(error, Refused):
        return refusals.notice(error.refusal)
    if isinstance(error, ReasonedError):
        return reasons.notice(error.said)
    return None
