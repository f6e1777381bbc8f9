"""What a failed read or write of a cluster tells people, as a typed reason (worded at the edge).

The bot's own errors carry English sentences meant for the log; what people are shown is typed here: a
cluster that stopped answering (itself, or behind a critical section not entered), a namespace the
cluster does not have. Anything else keeps its words (``AsSaid``): another system's message.
"""

from __future__ import annotations

from datetime import timezone

from bot.domain.failure_reasons import AsSaid, ClusterNotAnswering, FailureReason, NamespaceMissing
from bot.errors import ClusterUnavailable, NamespaceNotFound


def read_failure(error: BaseException) -> FailureReason:
    """Why a read (or a write's read) of a cluster failed."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ClusterUnavailable):
            return ClusterNotAnswering(cause.cluster, cause.since.astimezone(timezone.utc).isoformat(), cause.cause)
        if isinstance(cause, NamespaceNotFound) and cause.namespace:
            return NamespaceMissing(cause.namespace)
        cause = cause.__cause__
    return AsSaid(str(error))
