"""The thread pool Bolt runs listeners on, able to say when all submitted work is done.

Production uses it to finish in-flight work on SIGTERM; the shell and the tests use it to wait for
the work that follows an ``ack()`` before looking at what the bot did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class TrackingExecutor(ThreadPoolExecutor):
    def __init__(self, max_workers: int = 8) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix="listener")
        self._in_flight = 0
        self._idle = threading.Condition()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._idle:
            self._in_flight += 1
        try:
            future = super().submit(fn, *args, **kwargs)
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
        """Block until nothing is running; False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)
