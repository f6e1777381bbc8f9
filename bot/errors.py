"""The error taxonomy every layer speaks.

- ``UserError``: the person asked for something we will not do; the message is shown to them as is.
- ``PermanentError``: infrastructure said no in a way retrying will not fix (403, 422, a missing
  channel); reported where the request lives, never retried automatically.
- ``TemporaryError``: infrastructure may say yes later (timeouts, 5xx, 409, rate limits); retried
  with backoff, then reported.

Messages of all three are safe to show to people: they never contain secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any, ClassVar, Generic, TypeVar

T = TypeVar("T")


class GpuQuotaError(Exception):
    """Base class of the bot's own errors; ``str(error)`` is a sentence fit for a person."""


class WordedError(GpuQuotaError, Generic[T]):
    """An error carrying typed data for a person (a refusal, a failure reason), worded at the Slack edge.
    Its ``str`` (logs, job results, the CLIs) is that wording in plain text once the edge has lent it to
    the subclass (``worded_by``, by the bootstrap); before that, the data's repr."""

    _words: ClassVar[Callable[[Any], str]] = repr

    def __init__(self, said: T) -> None:
        super().__init__(said)
        self.said = said

    def __str__(self) -> str:
        return type(self)._words(self.said)

    @classmethod
    def worded_by(cls, words: Callable[[Any], str]) -> None:
        cls._words = words


class UserError(GpuQuotaError):
    """Bad input or a request the policy refuses."""


class PermanentError(GpuQuotaError):
    """An infrastructure failure that retrying will not fix."""


class Forbidden(PermanentError):
    """The cluster's RBAC does not let the bot do this (HTTP 401/403); ``permission`` names what to grant, as
    ``kubectl auth can-i`` takes it: ``list daemonsets.apps`` or ``get configmaps/cluster-autoscaler-status -n kube-system``."""

    def __init__(self, message: str, *, permission: str) -> None:
        super().__init__(message)
        self.permission = permission


class TemporaryError(GpuQuotaError):
    """An infrastructure failure that may pass; ``delay`` hints how long to wait (seconds)."""

    def __init__(self, message: str, *, delay: float = 1.0) -> None:
        super().__init__(message)
        self.delay = delay


class Unreachable(TemporaryError):
    """The service did not answer at all: the connection was refused, reset or timed out (a server that answers
    5xx is not this: it answered)."""


class ClusterUnavailable(TemporaryError):
    """A cluster (``""``: the home one) has not answered since ``since``; ``cause``: the last failure's words."""

    def __init__(self, cluster: str, since: datetime, cause: str, *, delay: float) -> None:
        name = f"cluster {cluster}" if cluster else "the home cluster"
        super().__init__(f"waiting for {name}: {cause} (since {since:%Y-%m-%d %H:%M} UTC)", delay=delay)
        self.cluster = cluster
        self.since = since
        self.cause = cause


class PartialMetrics(TemporaryError):
    """The metrics of some clusters could not be read: ``unavailable`` says why (a sentence naming the cluster),
    by the namespace key's cluster part; ``figures`` is what the call returns, from the clusters that answered
    (none of the others' namespaces in it: unknown, not zero)."""

    def __init__(self, figures: Any, unavailable: Mapping[str, str]) -> None:
        super().__init__("; ".join(sorted(set(unavailable.values()))), delay=30)
        self.figures = figures
        self.unavailable = dict(unavailable)


class RateLimited(TemporaryError):
    """The service asked to be called again only after ``delay`` seconds (HTTP 429 with Retry-After):
    waited exactly that long, never more by a backoff of ours."""


class NamespaceNotFound(UserError):
    """The namespace does not exist in the cluster."""


class QuotaConflict(TemporaryError):
    """Someone changed the ResourceQuota between our read and our write (HTTP 409)."""


class KueuePart(Enum):
    """What a Kueue ClusterQueue target needs that the cluster lacks."""

    KUEUE = "kueue"  # kueue.x-k8s.io is not served (Kueue is not installed), or in no version the bot speaks
    CLUSTER_QUEUE = "clusterqueue"
    FLAVOR = "flavor"  # the ClusterQueue has no such flavor
    RESOURCE = "resource"  # the flavor does not cover the resource


class KueueObjectMissing(PermanentError):
    """The Kueue objects a ClusterQueue target names are not all there (``missing`` says which); nothing was
    written. ``present`` is what the cluster has instead: the versions of kueue.x-k8s.io it serves, the
    queue's flavors, or the resources the flavor covers. People's words are made at the Slack edge from
    these fields; ``str`` is a plain line for logs."""

    def __init__(
        self, missing: KueuePart, *, cluster_queue: str, flavor: str, resource: str, present: tuple[str, ...] = ()
    ) -> None:
        self.missing = missing
        self.cluster_queue = cluster_queue
        self.flavor = flavor
        self.resource = resource
        self.present = present
        instead = f" (present: {', '.join(present) or 'none'})"
        said = {
            KueuePart.KUEUE: f"Kueue is not installed or serves no version the bot speaks (kueue.x-k8s.io{instead})",
            KueuePart.CLUSTER_QUEUE: f"the ClusterQueue {cluster_queue} does not exist",
            KueuePart.FLAVOR: f"the ClusterQueue {cluster_queue} has no flavor {flavor}{instead}",
            KueuePart.RESOURCE: f"the flavor {flavor} of the ClusterQueue {cluster_queue} does not cover {resource}{instead}",
        }
        super().__init__(said[missing])


class KarmadaPart(Enum):
    """What a FederatedResourceQuota target needs that the Karmada plane lacks."""

    KARMADA = "karmada"  # policy.karmada.io/v1alpha1 is not served: no Karmada on that API server
    FEDERATED_QUOTA = "federatedresourcequota"
    MEMBER = "member"  # the FederatedResourceQuota assigns nothing to the member cluster (no staticAssignments entry)
    RESOURCE = "resource"  # the member's assignment does not limit the resource


class KarmadaObjectMissing(PermanentError):
    """The Karmada objects a FederatedResourceQuota target names are not all there (``missing`` says which);
    nothing was written. ``namespace`` is the FederatedResourceQuota's on the plane, ``member`` the member
    cluster as Karmada names it, ``resource`` the governed one; ``present`` is what the plane has instead: the
    versions of policy.karmada.io it serves, the members assigned, or the keys the member's assignment
    limits. People's words are made at the Slack edge from these fields; ``str`` is a plain line for logs."""

    def __init__(
        self,
        missing: KarmadaPart,
        *,
        namespace: str,
        federated_quota: str,
        member: str,
        resource: str,
        present: tuple[str, ...] = (),
    ) -> None:
        self.missing = missing
        self.namespace = namespace
        self.federated_quota = federated_quota
        self.member = member
        self.resource = resource
        self.present = present
        instead = f" (present: {', '.join(present) or 'none'})"
        quota = f"the FederatedResourceQuota {namespace}/{federated_quota}"
        said = {
            KarmadaPart.KARMADA: f"Karmada is not installed on the plane or serves no version the bot speaks (policy.karmada.io{instead})",
            KarmadaPart.FEDERATED_QUOTA: f"{quota} does not exist",
            KarmadaPart.MEMBER: f"{quota} assigns nothing to the member cluster {member}{instead}",
            KarmadaPart.RESOURCE: f"{quota} does not limit {resource} in the member cluster {member}{instead}",
        }
        super().__init__(said[missing])


class LostRace(Exception):
    """A transaction kept losing races with other changes to the same rows; the caller reports a
    temporary failure (nothing was recorded)."""
