"""Events API deliveries, each handled once.

Slack re-sends an event it believes was not acknowledged in time (``X-Slack-Retry-Num``, the same
``event_id``), over HTTP and over Socket Mode alike, possibly to another replica. A decision typed
in a thread must count once, so every event is claimed in the database before it is handled.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from bot.clock import Clock
from bot.services.ports import Transactions

log = logging.getLogger(__name__)
# Slack retries three times within about five minutes; keep the ids well past that.
REMEMBER_FOR = timedelta(hours=1)
MAX_EVENT_ID = 64  # slack_events.event_id is String(64)


class EventInbox:
    def __init__(self, *, database: Transactions, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    def first_delivery(self, event_id: str) -> bool:
        """True the first time ``event_id`` is seen; False for a re-sent delivery (then ignore it)."""
        now = self._clock.now()
        if len(event_id) > MAX_EVENT_ID:
            # Slack's ids are short ("Ev0123ABCD"); a longer one is kept by its digest, which fits the column.
            event_id = hashlib.sha256(event_id.encode()).hexdigest()

        def claim(repo) -> bool:  # type: ignore[no-untyped-def]
            repo.forget_events_before(now - REMEMBER_FOR)
            return repo.claim_event(event_id, at=now)

        first = self._db.run(claim)
        if not first:
            log.info("event %s was delivered again; handled already", event_id)
        return first
