"""Time as a dependency: the services never call ``datetime.now`` themselves."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class ManualClock:
    """A clock that only moves when told to: for tests and the sandbox shell."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._now = start.astimezone(timezone.utc)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> datetime:
        with self._lock:
            self._now += delta
            return self._now


class ShiftedClock:
    """The wall clock plus an offset that only grows: the sandbox shell's ``time +3d``."""

    def __init__(self, base: Clock | None = None) -> None:
        self._base = base or SystemClock()
        self._offset = timedelta()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._base.now() + self._offset

    def advance(self, delta: timedelta) -> datetime:
        with self._lock:
            self._offset += delta
        return self.now()
