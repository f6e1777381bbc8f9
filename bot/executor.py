"""The bounded pool that runs the work after an ``ack()``, able to say when all of it is done.

A listener runs in the thread that received the Slack request (Bolt's ``process_before_response``),
decides its acknowledgement there and hands the slow part (database, Kubernetes, Slack calls) to
this pool with ``hand_off``. So an ack never waits for another request's work: it costs the parsing
only. The pool is bounded (running plus waiting); when it is full the person is told at once that
the bot is busy, and nothing is queued, half-done or silently dropped.

Production uses ``shutdown(wait=True)`` to finish in-flight work on SIGTERM; the shell and the tests
use ``wait_idle`` to wait for the work that follows an ack before looking at what the bot did.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)

WORKERS = 8
# With the 8 running, 256 pieces of work accepted at once: about 10-30 s of backlog when Slack takes
# 150 ms a call, well past what a burst of people produces, short of a person waiting minutes.
WAITING = 248
BUSY = ":hourglass: The bot is busy right now and did nothing with this; please try again in a minute."


class TrackingExecutor(ThreadPoolExecutor):
    """A thread pool of ``max_workers`` that accepts at most ``max_workers + max_waiting`` tasks at once."""

    def __init__(self, max_workers: int = WORKERS, *, max_waiting: int = WAITING) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix="work")
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
    ) -> bool:
        """``ack()`` and queue ``work``; when the pool is full, ``busy_ack()`` (and ``busy_notice``) instead.

        The slot is taken before acknowledging, so the ack tells the truth about what will happen.
        Returns whether the work was accepted.
        """
        if not self._slots.acquire(blocking=False):
            log.warning("work pool full: answered busy")
            busy_ack()
            if busy_notice is not None:
                self._track(self._notices, busy_notice)
            return False
        try:
            ack()
            self._track(super(), self._release_after, work)
        except BaseException:
            self._slots.release()
            raise
        return True

    def _release_after(self, work: Callable[[], object]) -> None:
        try:
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
            future: Future[Any] = executor.submit(fn, *args, **kwargs)
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
