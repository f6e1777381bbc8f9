"""The bounded pool that runs the work after an ``ack()``, able to say when all of it is done.

A listener runs in the thread that received the Slack request (Bolt's ``process_before_response``),
decides its acknowledgement there and hands the slow part (database, Kubernetes, Slack calls) to
this pool with ``hand_off``. So an ack never waits for another request's work: it costs the parsing
only. The work is mostly waiting on sockets (Slack, the database, Kubernetes), so the pool has many
threads; what waits for one is bounded by memory and by the response URL's life, not by the threads
(``WAITING``). Past that limit the person is told at once that the bot is busy, and nothing is
queued, half-done or silently dropped. A piece of work that waited longer than ``MAX_WAIT`` (its
response URL lives 30 minutes) is answered "expired" instead of being done late. Both are counted
in ``gpu_quota_refused_total{interaction, reason}``.

Production uses ``shutdown(wait=True)`` to finish in-flight work on SIGTERM; the shell and the tests
use ``wait_idle`` to wait for the work that follows an ack before looking at what the bot did.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from bot.adapters.i18n import N_
from bot.observability import REFUSED

log = logging.getLogger(__name__)

# Threads that wait on sockets are cheap (a `request` with Slack at 150 ms holds one for ~0.3 s, of
# which ~3 ms is CPU): 32 serve ~100 commands a second then. The database pool has one per thread.
WORKERS = 32
# Accepted beside the running ones: a burst of 2,000 people at once. Each waiting command holds its
# payload and closures (about 5 KiB: 10 MiB in all) and drains in well under a minute with Slack at
# 150 ms (docs/performance.md), far inside the response URL's 30 minutes. A bot this far behind is
# stalled (Slack or the database down): queuing more would only answer "expired" later.
WAITING = 2_000
# The response URL lives 30 minutes: work that waited longer than this is answered "expired" while
# the URL still takes the answer, instead of being done when nobody expects it.
MAX_WAIT_SECONDS = 25 * 60
# The answers to the person (catalog ids: the listeners show them translated, ``handlers.outcome.busy``).
BUSY = N_(":hourglass: The bot is busy right now and did nothing with this; please try again in a minute.")
EXPIRED = N_(
    ":hourglass: This waited more than 25 minutes behind other work and was not done (Slack lets the bot answer "
    "for 30 minutes only); please try again."
)


class TrackingExecutor(ThreadPoolExecutor):
    """A thread pool of ``max_workers`` that accepts at most ``max_workers + max_waiting`` tasks at once."""

    def __init__(
        self,
        max_workers: int = WORKERS,
        *,
        max_waiting: int = WAITING,
        max_wait: float = MAX_WAIT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix="work")
        self._max_wait = max_wait
        self._clock = clock
        self._in_flight = 0
        self._idle = threading.Condition()
        self._slots = threading.BoundedSemaphore(max_workers + max_waiting)
        # Busy notices that need a Slack call (clicks have no ack text) run here, not in the request
        # thread (the ack would wait for Slack) nor in the full pool.
        self._notices = ThreadPoolExecutor(max_workers=1, thread_name_prefix="busy-notice")

    def hand_off(
        self,
        work: Callable[[], object],
        *,
        ack: Callable[[], object],
        busy_ack: Callable[[], object],
        busy_notice: Callable[[], object] | None = None,
        expired: Callable[[], object] | None = None,
        interaction: str = "event",
    ) -> bool:
        """``ack()`` and queue ``work``; when the pool is full, ``busy_ack()`` (and ``busy_notice``) instead.

        The slot is taken before acknowledging, so the ack tells the truth about what will happen.
        ``expired``: what to do instead of ``work`` once it waited past ``MAX_WAIT_SECONDS`` (None: the
        work has no deadline). ``interaction`` (command, click, form, event) labels what was refused.
        Returns whether the work was accepted.
        """
        if not self._slots.acquire(blocking=False):
            log.warning("work pool full: answered busy (%s)", interaction)
            REFUSED.labels(interaction=interaction, reason="busy").inc()
            busy_ack()
            if busy_notice is not None:
                self._track(self._notices, busy_notice)
            return False
        try:
            ack()
            self._track(super(), self._release_after, work, expired, interaction, self._clock())
        except BaseException:
            self._slots.release()
            raise
        return True

    def _release_after(
        self, work: Callable[[], object], expired: Callable[[], object] | None, interaction: str, accepted: float
    ) -> None:
        try:
            waited = self._clock() - accepted
            if expired is not None and waited > self._max_wait:
                log.warning("%s waited %.0f s for a worker: answered expired, not done", interaction, waited)
                REFUSED.labels(interaction=interaction, reason="expired").inc()
                expired()
            else:
                work()
        except Exception:
            # Listeners report their own failures to the person; this is the last line of defence.
            log.exception("work after an ack crashed")
        finally:
            self._slots.release()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Unbounded submission (Bolt's own use, jobs); tracked by ``wait_idle`` like the rest."""
        return self._track(super(), fn, *args, **kwargs)

    def _track(self, executor: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._idle:
            self._in_flight += 1
        try:
            # The work runs in the context it was handed off in: the language of the person who asked.
            future: Future[Any] = executor.submit(contextvars.copy_context().run, fn, *args, **kwargs)
        except BaseException:
            self._done(None)
            raise
        future.add_done_callback(self._done)
        return future

    def _done(self, _future: Future[Any] | None) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is running or waiting; False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._notices.shutdown(wait=wait, cancel_futures=cancel_futures)
        super().shutdown(wait=wait, cancel_futures=cancel_futures)
