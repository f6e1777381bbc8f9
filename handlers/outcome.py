"""How a listener turns what a service did (or refused) into words for the person.

User errors are shown as they are; infrastructure errors are shown with what to do; anything
unexpected is logged with its traceback and reported with a reference, never swallowed. An error's
sentence is text, not markup: it may quote what the person typed, so it is escaped for Slack
(``mrkdwn.escape``); a use case's typed refusal (``Refused``) is worded by ``slack.refusals``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TypeVar

from bot.adapters.slack import refusals
from bot.adapters.slack.mrkdwn import escape
from bot.errors import GpuQuotaError, LostRace, PermanentError, TemporaryError, UserError
from bot.services.refusals import Refused

log = logging.getLogger("handlers")
T = TypeVar("T")


def attempt(work: Callable[[], T], *, user: str, what: str) -> T | str:
    """Run ``work``; on failure return the sentence to show the person instead of its result."""
    try:
        return work()
    except UserError as error:
        log.info("refused %s for %s: %r", what, user, str(error))
        return f":no_entry_sign: {sentence(error)}"
    except TemporaryError as error:
        log.warning("%s for %s failed for now: %s", what, user, error)
        return f":warning: {sentence(error)}. Nothing was lost; please try again in a minute."
    except PermanentError as error:
        log.error("%s for %s failed: %s", what, user, error)
        return f":x: {sentence(error)}. A platform admin needs to look at this."
    except LostRace:
        log.warning("%s for %s kept losing races with other changes", what, user)
        return ":warning: Many changes arrived at once and yours could not be recorded; please try again."
    except Exception:
        reference = uuid.uuid4().hex[:8]
        log.exception("%s for %s crashed (reference %s)", what, user, reference)
        return f":x: Something went wrong on the bot's side (reference `{reference}`); the logs have the details."


def sentence(error: GpuQuotaError) -> str:
    """The error's words as mrkdwn in which nothing the person typed is live."""
    return refusals.render(error.refusal) if isinstance(error, Refused) else escape(str(error))
